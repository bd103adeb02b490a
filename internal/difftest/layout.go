package difftest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/compact"
	"github.com/kahafs/kahafs/store"
)

// Layout seeds: the differential test on the multi-store layouts of a
// broker data directory (issue 26). brokerkit's LayoutWorkload runs a
// seeded workload on a real broker with an mKahaDB store (LayoutMKahaDB:
// filtered stores, the catch-all or one store per destination, txStore,
// local and XA transactions spanning stores, some left prepared at the
// stop or kill) or with a KahaDB store and a job scheduler store
// (LayoutScheduler: delayed, repeating and cron jobs, some fired, some
// removed, the broker stopped or killed with jobs pending). Its view
// (LayoutWorkload view) restarts a broker on a copy and reports, per store
// directory, what its first cleanup deleted (the scheduler's too: the
// scheduler store opened standalone, as SchedulerCleanup), what each
// queue and durable subscription recovers, the prepared transactions
// across stores and the scheduled jobs. kahafs analyses the data directory
// as `kahafs holders --json` does (store.Open: one analysis per store, the
// scheduler by its own model) and is compared store by store; then
// compact.CompactLayout compacts a copy and the broker's view of the
// result must recover what it recovers from the original.

// Layout kinds (brokerkit LayoutWorkload --kind).
const (
	LayoutMKahaDB   = "mkahadb"
	LayoutScheduler = "scheduler"
)

// Layout finding kinds.
const (
	KindLayoutCleanup    Kind = "layout: cleanup of a store"
	KindLayoutStores     Kind = "layout: stores listed"
	KindLayoutQueue      Kind = "layout: queue pending"
	KindLayoutSub        Kind = "layout: subscription pending"
	KindLayoutPrepared   Kind = "layout: prepared across stores"
	KindLayoutJobs       Kind = "layout: scheduled jobs"
	KindLayoutCompaction Kind = "layout: compaction round trip"
)

// ViewLayout is the view of a layout seed's comparisons with the broker.
const ViewLayout = "layout"

// layoutMaxFileLength is every store's journalMaxFileLength in
// LayoutWorkload (the scheduler's too: holders takes one length).
const layoutMaxFileLength = 16384

// A kept layout seed (KeepLayout) holds:
//
//	layout-workload/  LayoutWorkload's output: workload.json, data/ (the broker's
//	                  data directory), logs/
//	oracle/           view.json (+ view.log): the broker on the original;
//	                  compacted-H.json (+ .log): on kahafs's compaction of it
//	compacted/data    the data directory kahafs compacted
//	kahafs.json       kahafs's answer (LayoutAnswer)
//	findings.json, report.txt
const (
	keptLayoutWorkload = "layout-workload"
	keptLayoutAnswer   = "kahafs.json"
)

// LayoutWorkload is what the comparison uses of LayoutWorkload's
// workload.json.
type LayoutWorkload struct {
	Seed   int64  `json:"seed"`
	Kind   string `json:"kind"`
	Ops    int    `json:"ops"`
	Config struct {
		Mode          string `json:"mode"` // filtered, perdest, kahadb
		End           string `json:"end"`  // stop, kill
		CleanupOnStop bool   `json:"cleanupOnStop"`
	} `json:"config"`
	Prepared []string          `json:"prepared"`
	Errors   []string          `json:"errors"`
	Steps    []json.RawMessage `json:"steps"`
	Seconds  float64           `json:"seconds"`
}

// LayoutView is what LayoutWorkload view reported of a data directory.
type LayoutView struct {
	Kind   string `json:"kind"`
	Mode   string `json:"mode"`
	Stores map[string]struct {
		FilesBefore []int32 `json:"filesBefore"`
		FilesAfter  []int32 `json:"filesAfter"`
		Deleted     []int32 `json:"deleted"`
	} `json:"stores"`
	Queues        map[string]LayoutPending `json:"queues"`
	Subscriptions map[string]LayoutPending `json:"subscriptions"`
	Prepared      []string                 `json:"prepared"`
	PreparedOps   map[string]LayoutTxOps   `json:"preparedOps"`
	Jobs          []LayoutJob              `json:"jobs"`
	CleanupLines  []string                 `json:"cleanupLines"`
}

// LayoutPending is what a queue or a durable subscription recovers.
type LayoutPending struct {
	Count   int64    `json:"count"`
	Pending []string `json:"pending"`
}

// LayoutTxOps are a prepared transaction's operations in every store.
type LayoutTxOps struct {
	Adds []string `json:"adds"`
	Acks []string `json:"acks"`
}

// LayoutJob is a scheduled job (the broker's Job getters; NextTime as it
// formats it, local time).
type LayoutJob struct {
	JobID    string `json:"jobId"`
	Delay    int64  `json:"delay"`
	Period   int64  `json:"period"`
	Repeat   int32  `json:"repeat"`
	Cron     string `json:"cron"`
	NextTime string `json:"nextTime"`
}

// LayoutAnswer is kahafs's answer for a layout: per store directory
// (relative to the data directory) the files its cleanup deletes, and what
// is pending.
type LayoutAnswer struct {
	Cleanup       map[string][]int32       `json:"cleanup"`
	Queues        map[string]LayoutPending `json:"queues"`
	Subscriptions map[string]LayoutPending `json:"subscriptions"`
	Prepared      map[string]LayoutTxOps   `json:"prepared"`
	// PreparedStores: XID -> the store directories holding its operations
	PreparedStores map[string][]string `json:"preparedStores"`
	Jobs           []LayoutJob         `json:"jobs"`
}

// LayoutResult is the outcome of one layout seed.
type LayoutResult struct {
	Kind     string
	Seed     int64
	Dir      string // the seed's work directory (Dir/layout-workload, Dir/oracle)
	Workload *LayoutWorkload
	Findings []Finding
	Notes    []string
	Timings  []Timing
	Err      error
	// Compacted is kahafs's compaction of the data directory ("" if none).
	Compacted string
	Kahafs    *LayoutAnswer
}

// Unexplained counts the findings that fail the seed.
func (r *LayoutResult) Unexplained() int {
	n := 0
	for _, f := range r.Findings {
		if f.Explained == "" {
			n++
		}
	}
	return n
}

// LayoutConfig says where layout seeds run.
type LayoutConfig struct {
	Repo string
	// Work is scratch space (each seed in a directory of its own).
	Work string
	Ops  int
	// ReplayDir: a kept layout seed; no broker runs.
	ReplayDir string
	// Fault perturbs kahafs's cleanup (tests of the comparison).
	Fault func(rel string, deletes []int32) []int32
}

// RunLayoutSeed runs one layout seed: the workload, the broker's view,
// kahafs, the comparison and the compaction round trip.
func RunLayoutSeed(ctx context.Context, c LayoutConfig, kind string, seed int64) *LayoutResult {
	r := &LayoutResult{Kind: kind, Seed: seed}
	fail := func(err error) *LayoutResult {
		r.Err = fmt.Errorf("layout %s seed %d: %w", kind, seed, err)
		return r
	}
	if c.ReplayDir != "" {
		r.Dir = c.ReplayDir
	} else {
		if err := os.MkdirAll(c.Work, 0o755); err != nil {
			return fail(err)
		}
		d, err := os.MkdirTemp(c.Work, fmt.Sprintf("layout-%s-seed-%d-", kind, seed))
		if err != nil {
			return fail(err)
		}
		r.Dir = d
	}
	wdir := filepath.Join(r.Dir, keptLayoutWorkload)
	odir := filepath.Join(r.Dir, keptOracle)
	step := func(phase string, f func() error) error {
		t0 := time.Now()
		err := f()
		r.Timings = append(r.Timings, Timing{Phase: phase, Seconds: time.Since(t0).Seconds()})
		return err
	}
	// the workload
	if err := step("workload", func() error {
		if c.ReplayDir == "" {
			if _, err := runTool(ctx, c.Repo, workloadTimeout, "LayoutWorkload", "run", wdir, "--seed",
				strconv.FormatInt(seed, 10), "--kind", kind, "--ops", strconv.Itoa(c.Ops)); err != nil {
				return err
			}
		}
		var w LayoutWorkload
		if err := readJSON(filepath.Join(wdir, "workload.json"), &w); err != nil {
			return err
		}
		if len(w.Errors) > 0 {
			return fmt.Errorf("workload failed: %s", strings.Join(w.Errors, "; "))
		}
		r.Workload = &w
		return nil
	}); err != nil {
		return fail(err)
	}
	w := r.Workload
	data := filepath.Join(wdir, "data")
	// the broker's view (twice at most)
	var view *LayoutView
	if err := step("broker view", func() error {
		var err error
		view, err = c.layoutView(ctx, data, filepath.Join(odir, "view.json"), w)
		if err != nil && c.ReplayDir == "" {
			r.Notes = append(r.Notes, "BROKER RETRY: view failed once, run again: "+brokerError(err))
			view, err = c.layoutView(ctx, data, filepath.Join(odir, "view.json"), w)
		}
		return err
	}); err != nil {
		return fail(fmt.Errorf("broker view: %w", err))
	}
	// kahafs
	if err := step("kahafs", func() error {
		a, err := AnalyseLayout(data)
		if err != nil {
			return err
		}
		if c.Fault != nil {
			for _, rel := range sortedKeys(a.Cleanup) {
				a.Cleanup[rel] = c.Fault(rel, a.Cleanup[rel])
			}
		}
		r.Kahafs = a
		r.Findings = append(r.Findings, CompareLayout(a, view)...)
		return nil
	}); err != nil {
		return fail(fmt.Errorf("kahafs: %w", err))
	}
	// the compaction round trip
	_ = step("compaction", func() error {
		cv, cdir, err := c.compactedLayoutView(ctx, r, data, odir, w)
		r.Compacted = cdir
		switch {
		case err != nil && errors.Is(err, errReplay):
			r.Notes = append(r.Notes, "REPLAY: kahafs's compaction writes other journals than the kept run's: not compared ("+err.Error()+")")
		case err != nil:
			r.Findings = append(r.Findings, Finding{Kind: KindLayoutCompaction, View: ViewCompaction,
				Kahafs: "compaction or its broker view failed", Broker: "-", Detail: strings.Split(err.Error(), "\n")})
		default:
			r.Findings = append(r.Findings, compareLayoutViews(view, cv)...)
		}
		return nil
	})
	return r
}

// layoutView runs LayoutWorkload view on a copy of the data directory
// (out is kept; in a replay it is read, never made).
func (c LayoutConfig) layoutView(ctx context.Context, data, out string, w *LayoutWorkload) (*LayoutView, error) {
	var v LayoutView
	if err := readJSON(out, &v); err == nil {
		return &v, nil
	}
	if c.ReplayDir != "" {
		return nil, fmt.Errorf("%s: %w", out, errReplay)
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return nil, err
	}
	scratch, err := os.MkdirTemp(c.Work, "view-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(scratch)
	cp := filepath.Join(scratch, "data")
	if err := CopyTree(cp, data); err != nil {
		return nil, err
	}
	log := strings.TrimSuffix(out, ".json") + ".log"
	if _, err := runTool(ctx, c.Repo, viewTimeout, "LayoutWorkload", "view", cp, out+".tmp", "--kind", w.Kind,
		"--mode", w.Config.Mode, "--log", log); err != nil {
		return nil, err
	}
	if err := readJSON(out+".tmp", &v); err != nil {
		return nil, err
	}
	return &v, publish(out+".tmp", out)
}

// compactedLayoutView compacts a copy of the data directory with
// compact.CompactLayout (every compacted store verified) and returns the
// broker's view of it, kept as oracle/compacted-H.json (H: the compacted
// journals' hash).
func (c LayoutConfig) compactedLayoutView(ctx context.Context, r *LayoutResult, data, odir string, w *LayoutWorkload) (*LayoutView, string, error) {
	base := r.Dir
	if c.ReplayDir != "" {
		base = c.Work
	}
	d, err := os.MkdirTemp(base, "compact-")
	if err != nil {
		return nil, "", err
	}
	cdir := filepath.Join(d, "data")
	if err := CopyTree(cdir, data); err != nil {
		return nil, "", err
	}
	rep, err := compact.CompactLayout(cdir, compact.Options{MaxFileLength: layoutMaxFileLength, Now: compactionNow,
		BackupDir: filepath.Join(d, "backup")})
	if err != nil {
		return nil, cdir, err
	}
	var hashes []string
	for _, s := range rep.Stores {
		if s.Report == nil {
			continue
		}
		if !s.Verified {
			return nil, cdir, fmt.Errorf("compaction of %s: not verified", s.Dir)
		}
		h, err := journalHash(filepath.Join(cdir, s.Dir))
		if err != nil {
			return nil, cdir, err
		}
		hashes = append(hashes, s.Dir+"="+h)
	}
	sum := sha256.Sum256([]byte(strings.Join(hashes, "\n")))
	out := filepath.Join(odir, "compacted-"+hex.EncodeToString(sum[:])[:16]+".json")
	v, err := c.layoutView(ctx, cdir, out, w)
	return v, cdir, err
}

// AnalyseLayout is kahafs's answer on a broker data directory: the
// analysis `kahafs holders --json` makes of it (store.Open with the
// layout's journalMaxFileLength; the scheduler by its own model).
func AnalyseLayout(data string) (*LayoutAnswer, error) {
	a, err := store.Open(data, store.Options{MaxFileLength: layoutMaxFileLength, KeepCompleted: -1})
	if err != nil {
		return nil, err
	}
	if len(a.Children) == 0 {
		return nil, fmt.Errorf("%s: not a layout of several stores", data)
	}
	ans := &LayoutAnswer{Cleanup: map[string][]int32{}, Queues: map[string]LayoutPending{},
		Subscriptions: map[string]LayoutPending{}, Prepared: map[string]LayoutTxOps{},
		PreparedStores: map[string][]string{}, Jobs: []LayoutJob{}}
	for _, c := range a.Children {
		rel := c.Layout.Rel
		switch {
		case c.Scheduler != nil:
			ans.Cleanup[rel] = append([]int32{}, c.Scheduler.Prediction.Deleted...)
			for _, j := range c.Scheduler.Model.Jobs() {
				if j.Scheduler != "JMS" {
					continue
				}
				ans.Jobs = append(ans.Jobs, LayoutJob{JobID: j.ID, Delay: j.Delay, Period: j.Period, Repeat: j.Repeat,
					Cron: j.Cron, NextTime: time.UnixMilli(j.NextTime).Local().Format("2006-01-02 15:04:05")})
			}
		case c.Graph != nil:
			g := c.Graph
			ans.Cleanup[rel] = append([]int32{}, g.GCCandidates()...)
			for _, d := range g.Destinations() {
				if d.Type == codec.Queue {
					p := LayoutPending{Count: d.Stats.Count, Pending: []string{}}
					for _, m := range d.Pending() {
						p.Pending = append(p.Pending, m.ID())
					}
					ans.Queues[d.Name] = p
				}
			}
			for _, s := range g.Subscriptions() {
				p := LayoutPending{Count: s.Count, Pending: []string{}}
				for _, m := range s.Pending() {
					p.Pending = append(p.Pending, m.ID())
				}
				ans.Subscriptions[subKey(s)] = p
			}
			for _, t := range g.PreparedTransactions() {
				ops := ans.Prepared[t.ID]
				for _, op := range t.Ops {
					if op.Add {
						ops.Adds = append(ops.Adds, op.MessageID)
					} else {
						ops.Acks = append(ops.Acks, op.MessageID)
					}
				}
				ans.Prepared[t.ID] = ops
				ans.PreparedStores[t.ID] = append(ans.PreparedStores[t.ID], rel)
			}
		default:
			return nil, fmt.Errorf("%s: store %s not analysed: %s", data, rel, c.NotAnalysed)
		}
	}
	for id, ops := range ans.Prepared {
		ans.Prepared[id] = LayoutTxOps{Adds: sortedUnique(ops.Adds), Acks: sortedUnique(ops.Acks)}
	}
	sort.Slice(ans.Jobs, func(i, j int) bool { return ans.Jobs[i].JobID < ans.Jobs[j].JobID })
	return ans, nil
}

func sortedUnique(s []string) []string {
	out := []string{}
	seen := map[string]bool{}
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	sort.Strings(out)
	return out
}

func int32sText(s []int32) string {
	if len(s) == 0 {
		return "[]"
	}
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = strconv.Itoa(int(v))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// CompareLayout compares kahafs's answer a on a data directory with the
// broker's view v of it.
func CompareLayout(a *LayoutAnswer, v *LayoutView) []Finding {
	var fs []Finding
	add := func(f Finding) {
		f.View = ViewLayout
		fs = append(fs, f)
	}
	// cleanup, store by store
	var kx, bx []string
	for rel := range a.Cleanup {
		kx = append(kx, rel)
	}
	for rel := range v.Stores {
		bx = append(bx, rel)
	}
	sort.Strings(kx)
	sort.Strings(bx)
	if !equalStrings(kx, bx) {
		add(Finding{Kind: KindLayoutStores, Kahafs: strings.Join(kx, ", "), Broker: strings.Join(bx, ", ")})
	}
	for _, rel := range bx {
		got, ok := a.Cleanup[rel]
		if !ok {
			continue
		}
		want := v.Stores[rel].Deleted
		if int32sText(got) != int32sText(want) {
			add(Finding{Kind: KindLayoutCleanup, Where: rel,
				Kahafs: "the first cleanup deletes " + int32sText(got),
				Broker: "the first cleanup deleted " + int32sText(want),
				Detail: append([]string{"files before: " + int32sText(v.Stores[rel].FilesBefore)}, prefixed("broker cleanup line: ", v.CleanupLines)...)})
		}
	}
	fs = append(fs, comparePending(KindLayoutQueue, "queue://", a.Queues, v.Queues, "kahafs", "broker")...)
	fs = append(fs, comparePending(KindLayoutSub, "", a.Subscriptions, v.Subscriptions, "kahafs", "broker")...)
	for i := range fs {
		fs[i].View = ViewLayout
	}
	// prepared transactions across stores
	bp := map[string]LayoutTxOps{}
	for _, x := range v.Prepared {
		bp[x] = v.PreparedOps[x]
	}
	fs = append(fs, comparePrepared(a.Prepared, bp, a.PreparedStores, ViewLayout)...)
	// jobs
	fs = append(fs, compareJobs(a.Jobs, v.Jobs, ViewLayout)...)
	return fs
}

func prefixed(p string, s []string) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = p + x
	}
	return out
}

// comparePending compares what queues or subscriptions hold, in order.
func comparePending(kind Kind, prefix string, a, b map[string]LayoutPending, an, bn string) []Finding {
	var fs []Finding
	names := map[string]bool{}
	for n := range a {
		names[n] = true
	}
	for n := range b {
		names[n] = true
	}
	for _, n := range sortedKeys(names) {
		ka, oka := a[n]
		kb, okb := b[n]
		switch {
		case !oka && len(kb.Pending) == 0, !okb && len(ka.Pending) == 0:
			// listed by one side only, with nothing in it
		case !oka || !okb:
			fs = append(fs, Finding{Kind: kind, Where: prefix + n,
				Kahafs: fmt.Sprintf("%s: listed %v, %d pending", an, oka, len(ka.Pending)),
				Broker: fmt.Sprintf("%s: listed %v, %d pending", bn, okb, len(kb.Pending))})
		case !equalStrings(ka.Pending, kb.Pending):
			d := []string{an + " only: " + abbrev(minus(ka.Pending, kb.Pending)), bn + " only: " + abbrev(minus(kb.Pending, ka.Pending))}
			if equalStrings(sortedCopy(ka.Pending), sortedCopy(kb.Pending)) {
				d = []string{"the same messages in another order", an + ": " + abbrev(ka.Pending), bn + ": " + abbrev(kb.Pending)}
			}
			fs = append(fs, Finding{Kind: kind, Where: prefix + n,
				Kahafs: fmt.Sprintf("%s: %d pending", an, len(ka.Pending)),
				Broker: fmt.Sprintf("%s: %d pending", bn, len(kb.Pending)), Detail: d})
		}
	}
	return fs
}

func minus(a, b []string) []string {
	in := map[string]bool{}
	for _, x := range b {
		in[x] = true
	}
	out := []string{}
	for _, x := range a {
		if !in[x] {
			out = append(out, x)
		}
	}
	return out
}

// comparePrepared compares prepared transactions and their operations
// (over every store) by XID.
func comparePrepared(a, b map[string]LayoutTxOps, stores map[string][]string, view string) []Finding {
	var fs []Finding
	ka, kb := sortedKeys(a), sortedKeys(b)
	if !equalStrings(ka, kb) {
		fs = append(fs, Finding{Kind: KindLayoutPrepared, View: view,
			Kahafs: fmt.Sprintf("%d prepared: %s", len(ka), strings.Join(ka, ", ")),
			Broker: fmt.Sprintf("%d prepared: %s", len(kb), strings.Join(kb, ", "))})
	}
	for _, x := range ka {
		o, ok := b[x]
		if !ok {
			continue
		}
		p := a[x]
		if !equalStrings(sortedUnique(p.Adds), sortedUnique(o.Adds)) || !equalStrings(sortedUnique(p.Acks), sortedUnique(o.Acks)) {
			fs = append(fs, Finding{Kind: KindLayoutPrepared, View: view, Where: x,
				Kahafs: fmt.Sprintf("adds %d, acks %d (stores %s)", len(p.Adds), len(p.Acks), strings.Join(stores[x], ", ")),
				Broker: fmt.Sprintf("adds %d, acks %d", len(o.Adds), len(o.Acks)),
				Detail: []string{"adds: kahafs only " + abbrev(minus(p.Adds, o.Adds)) + ", broker only " + abbrev(minus(o.Adds, p.Adds)),
					"acks: kahafs only " + abbrev(minus(p.Acks, o.Acks)) + ", broker only " + abbrev(minus(o.Acks, p.Acks))}})
		}
	}
	return fs
}

// compareJobs compares scheduled jobs by id, with their schedules.
func compareJobs(a, b []LayoutJob, view string) []Finding {
	byID := func(js []LayoutJob) map[string]LayoutJob {
		m := map[string]LayoutJob{}
		for _, j := range js {
			m[j.JobID] = j
		}
		return m
	}
	ma, mb := byID(a), byID(b)
	ka, kb := sortedKeys(ma), sortedKeys(mb)
	var fs []Finding
	if !equalStrings(ka, kb) {
		fs = append(fs, Finding{Kind: KindLayoutJobs, View: view,
			Kahafs: fmt.Sprintf("%d jobs", len(ka)), Broker: fmt.Sprintf("%d jobs", len(kb)),
			Detail: []string{"kahafs only: " + abbrev(minus(ka, kb)), "broker only: " + abbrev(minus(kb, ka))}})
	}
	for _, id := range ka {
		o, ok := mb[id]
		if ok && o != ma[id] {
			fs = append(fs, Finding{Kind: KindLayoutJobs, View: view, Where: id,
				Kahafs: fmt.Sprintf("%+v", ma[id]), Broker: fmt.Sprintf("%+v", o)})
		}
	}
	return fs
}

// compareLayoutViews compares the broker's view of the compacted data
// directory c with its view of the original o: what is pending, prepared
// and scheduled (not the cleanup).
func compareLayoutViews(o, c *LayoutView) []Finding {
	var fs []Finding
	for _, f := range comparePending(KindLayoutCompaction, "queue://", c.Queues, o.Queues, "compacted", "original") {
		fs = append(fs, f)
	}
	fs = append(fs, comparePending(KindLayoutCompaction, "", c.Subscriptions, o.Subscriptions, "compacted", "original")...)
	op, cp := map[string]LayoutTxOps{}, map[string]LayoutTxOps{}
	for _, x := range o.Prepared {
		op[x] = o.PreparedOps[x]
	}
	for _, x := range c.Prepared {
		cp[x] = c.PreparedOps[x]
	}
	for _, f := range comparePrepared(cp, op, nil, ViewCompaction) {
		f.Kind = KindLayoutCompaction
		f.Kahafs = "compacted: " + f.Kahafs
		f.Broker = "original: " + f.Broker
		fs = append(fs, f)
	}
	for _, f := range compareJobs(c.Jobs, o.Jobs, ViewCompaction) {
		f.Kind = KindLayoutCompaction
		f.Kahafs = "compacted: " + f.Kahafs
		f.Broker = "original: " + f.Broker
		fs = append(fs, f)
	}
	for i := range fs {
		fs[i].View = ViewCompaction
	}
	return fs
}

// LayoutReport is a layout seed's readable report.
func LayoutReport(r *LayoutResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "=== layout %s seed %d ===\n", r.Kind, r.Seed)
	if w := r.Workload; w != nil {
		fmt.Fprintf(&b, "workload: %d operations, mode %s, end %s, cleanupOnStop %v, left prepared %d, %.1f s\n",
			len(w.Steps), w.Config.Mode, w.Config.End, w.Config.CleanupOnStop, len(w.Prepared), w.Seconds)
	}
	if a := r.Kahafs; a != nil {
		for _, rel := range sortedKeys(a.Cleanup) {
			fmt.Fprintf(&b, "store %s: kahafs's first cleanup deletes %s\n", rel, int32sText(a.Cleanup[rel]))
		}
		fmt.Fprintf(&b, "queues %d, subscriptions %d, prepared %d, jobs %d\n", len(a.Queues), len(a.Subscriptions), len(a.Prepared), len(a.Jobs))
	}
	var ts []string
	for _, t := range r.Timings {
		ts = append(ts, fmt.Sprintf("%s %.1fs", t.Phase, t.Seconds))
	}
	fmt.Fprintf(&b, "timings: %s\n", strings.Join(ts, ", "))
	if r.Err != nil {
		fmt.Fprintf(&b, "COULD NOT COMPARE: %v\n", r.Err)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	if len(r.Findings) == 0 && r.Err == nil {
		b.WriteString("kahafs agrees with the broker\n")
	}
	for _, f := range r.Findings {
		where := f.Where
		if where == "" {
			where = "-"
		}
		fmt.Fprintf(&b, "FINDING [%s] %s %s\n  kahafs: %s\n  broker: %s\n", f.Kind, f.View, where, f.Kahafs, f.Broker)
		for _, d := range f.Detail {
			fmt.Fprintf(&b, "    %s\n", d)
		}
		if f.Explained != "" {
			fmt.Fprintf(&b, "  explained: %s\n", f.Explained)
		}
	}
	return b.String()
}

// KeepLayout copies everything about a layout seed under root and returns
// where (see keptLayoutWorkload).
func KeepLayout(root string, r *LayoutResult, report string) (string, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	dst, err := os.MkdirTemp(root, fmt.Sprintf("layout-%s-seed-%d-%s-", r.Kind, r.Seed, time.Now().UTC().Format("20060102T150405Z")))
	if err != nil {
		return "", err
	}
	var errs []error
	for _, sub := range []string{keptLayoutWorkload, keptOracle} {
		if src := filepath.Join(r.Dir, sub); exists(src) {
			errs = append(errs, copyKept(filepath.Join(dst, sub), src))
		}
	}
	if r.Compacted != "" && exists(r.Compacted) {
		errs = append(errs, copyKept(filepath.Join(dst, keptCompacted, "data"), r.Compacted))
	}
	if r.Kahafs != nil {
		raw, err := json.MarshalIndent(r.Kahafs, "", "  ")
		if err == nil {
			err = os.WriteFile(filepath.Join(dst, keptLayoutAnswer), raw, 0o644)
		}
		errs = append(errs, err)
	}
	raw, err := json.MarshalIndent(struct {
		Kind     string    `json:"kind"`
		Seed     int64     `json:"seed"`
		Findings []Finding `json:"findings"`
		Err      string    `json:"error,omitempty"`
	}{r.Kind, r.Seed, r.Findings, errString(r.Err)}, "", "  ")
	if err == nil {
		err = os.WriteFile(filepath.Join(dst, keptFindings), raw, 0o644)
	}
	errs = append(errs, err, os.WriteFile(filepath.Join(dst, keptReport), []byte(report), 0o644))
	if err := errors.Join(errs...); err != nil {
		return dst, fmt.Errorf("keep layout seed %d in %s: %w", r.Seed, dst, err)
	}
	return dst, nil
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// IsKeptLayout reports whether dir is a kept layout seed.
func IsKeptLayout(dir string) bool {
	return exists(filepath.Join(dir, keptLayoutWorkload, "workload.json"))
}

// ReplayLayout compares kahafs again with the broker answers kept in dir
// (KeepLayout), without a broker; work is scratch space.
func ReplayLayout(ctx context.Context, dir, work string, fault func(string, []int32) []int32) *LayoutResult {
	var w LayoutWorkload
	if err := readJSON(filepath.Join(dir, keptLayoutWorkload, "workload.json"), &w); err != nil {
		return &LayoutResult{Dir: dir, Err: fmt.Errorf("replay %s: %w", dir, err)}
	}
	return RunLayoutSeed(ctx, LayoutConfig{ReplayDir: dir, Work: work, Fault: fault}, w.Kind, w.Seed)
}
