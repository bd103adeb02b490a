// Package metrics is what `kahafs metrics` writes: an analysed store's
// numbers (journal, pinned and free bytes, pending messages, prepared
// transactions, damage) as Prometheus metrics in the text exposition
// format, for node_exporter's textfile collector. The numbers are those of
// package holders and the replay graph; the metrics are the Prometheus
// client library's own (a fresh registry of GaugeVecs, encoded by expfmt).
//
// An analysis is first taken into a Snapshot (snapshot.go): every
// sample's name, labels and value, with what changes from run to run left
// out (the --label values, the data files' disk space, stat'ed when
// rendered). Load keeps a store's snapshot next to its analysis cache file
// (replaycache.SaveSide) and, on a store whose cache would be hit, renders
// it without analysing anything: what makes `kahafs metrics` cheap enough
// for every minute on a store with a million pending messages.
package metrics

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/holders"
	"github.com/kahafs/kahafs/openwire"
	"github.com/kahafs/kahafs/refgraph"
	"github.com/kahafs/kahafs/scheduler"
	"github.com/kahafs/kahafs/store"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Label names the metrics use themselves: an admin's Options.Labels may
// not take them.
const (
	// LabelStoreDir names the store of a layout of several (an mKahaDB
	// root, a broker's data directory): its directory relative to the
	// layout's root ("mKahaDB/queue#3a#2f#2fORDERS", "kahadb"). A single
	// store's metrics have no such label.
	LabelStoreDir     = "store_dir"
	labelKind         = "kind"
	labelDestination  = "destination"
	labelSubscription = "subscription"
)

// Options say what to add to every metric.
type Options struct {
	// Labels are constant labels on every metric (`--label store=NAME`):
	// what tells a fleet of brokers apart.
	Labels map[string]string
}

var labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// CheckLabel says whether name may be an admin's constant label.
func CheckLabel(name string) error {
	switch {
	case !labelName.MatchString(name) || len(name) >= 2 && name[:2] == "__":
		return fmt.Errorf("label name %q: want letters, digits and _, not starting with a digit or __", name)
	case name == LabelStoreDir || name == labelKind || name == labelDestination || name == labelSubscription:
		return fmt.Errorf("label name %q is one kahafs metrics use themselves", name)
	}
	return nil
}

// set is the metrics of one gathering.
type set struct {
	reg *prometheus.Registry
	// vecs by name, made on first use with the label names given then
	vecs map[string]*prometheus.GaugeVec
	help map[string]string
	cl   prometheus.Labels
	// dir: the store_dir label value of the store being added ("" for a
	// single store: no label)
	multi bool
	dir   string
}

// help says what each metric is (and so which metrics there are).
var help = map[string]string{
	"kahafs_store_analysed":                                       "1 if kahafs analysed the store (a KahaDB journal it models), 0 if it did not (its files get no prediction)",
	"kahafs_journal_files":                                        "Data files (db-N.log) of the store's journal",
	"kahafs_journal_bytes":                                        "Length of the store's data files",
	"kahafs_journal_allocated_bytes":                              "Disk space the store's data files take (less than their length when preallocated sparse)",
	"kahafs_pinned_files":                                         "Data files the broker's next cleanup keeps",
	"kahafs_pinned_bytes":                                         "Length of the data files the broker's next cleanup keeps",
	"kahafs_pinned_allocated_bytes":                               "Disk space of the data files the broker's next cleanup keeps",
	"kahafs_next_cleanup_free_files":                              "Data files the broker's next cleanup deletes",
	"kahafs_next_cleanup_free_bytes":                              "Disk space the broker's next cleanup gives back (the deleted files' allocated bytes)",
	"kahafs_holder_pinned_files":                                  "Data files a kind of holder keeps, by kind and destination (a file kept by several holders counts under each)",
	"kahafs_holder_pinned_bytes":                                  "Length of the data files a kind of holder keeps, by kind and destination (a file kept by several holders counts under each)",
	"kahafs_destination_pinned_files":                             "Data files kept by a destination's pending messages or durable subscriptions (a file kept by several destinations counts under each)",
	"kahafs_destination_pinned_bytes":                             "Length of the data files kept by a destination's pending messages or durable subscriptions (a file kept by several destinations counts under each)",
	"kahafs_destination_pending_messages":                         "Messages a restarted broker delivers from a queue; for a topic, the messages still needed by a durable subscription",
	"kahafs_destination_first_pending_message_timestamp_seconds":  "JMS timestamp of the destination's first pending message in delivery order (time() minus it: its age)",
	"kahafs_subscription_pending_messages":                        "Messages a restarted broker delivers to a durable subscription",
	"kahafs_subscription_first_pending_message_timestamp_seconds": "JMS timestamp of the durable subscription's first pending message in delivery order (time() minus it: its age)",
	"kahafs_prepared_transactions":                                "Prepared (XA) transactions in the store, waiting for their outcome",
	"kahafs_damaged_files":                                        "Data files in which reading found damage (a torn tail, an unfinished last write the broker ignores, is not damage)",
	"kahafs_damage_found":                                         "1 if reading the store found damage, else 0",
	"kahafs_compaction_reclaimable_bytes":                         "Length of the data files an offline compaction (kahafs compact) would give back: their length now minus that of the compacted journal, laid out as the compaction writes it (kahafs compact --dry-run's journals before and after; negative where the compacted journal, preallocated whole files, is longer); absent where a compaction refuses the store (damage, an mKahaDB's txStore)",
	"kahafs_scheduled_jobs":                                       "Jobs a job scheduler store holds (scheduled messages, delayed, repeating or cron)",
}

func (s *set) gauge(name string, labels prometheus.Labels, v float64) {
	names := make([]string, 0, len(labels)+1)
	if s.multi {
		names = append(names, LabelStoreDir)
	}
	for k := range labels {
		names = append(names, k)
	}
	sort.Strings(names)
	vec, ok := s.vecs[name]
	if !ok {
		h, known := help[name]
		if !known {
			panic("metrics: no help for " + name)
		}
		vec = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: h, ConstLabels: s.cl}, names)
		s.reg.MustRegister(vec)
		s.vecs[name] = vec
	}
	lv := prometheus.Labels{}
	for k, x := range labels {
		lv[k] = LabelValue(x)
	}
	if s.multi {
		lv[LabelStoreDir] = LabelValue(s.dir)
	}
	vec.With(lv).Set(v)
}

// LabelValue is v as a label value: Prometheus takes UTF-8 only (the
// client library panics on anything else), and a destination name or a
// subscription key from a client may hold any bytes. A value that is not
// UTF-8 has each byte that is not part of a UTF-8 character, and each
// "%", written %XX (upper-case hex); valid UTF-8 is kept as it is.
func LabelValue(v string) string {
	if utf8.ValidString(v) {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); {
		r, n := utf8.DecodeRuneInString(v[i:])
		if (r == utf8.RuneError && n == 1) || r == '%' {
			fmt.Fprintf(&b, "%%%02X", v[i])
		} else {
			b.WriteString(v[i : i+n])
		}
		i += n
	}
	return b.String()
}

// Gather is the metrics of the analysed store a (each store of a layout
// of several, labelled store_dir).
func Gather(a *store.Analysis, opts Options) ([]*dto.MetricFamily, error) {
	snap, err := Take(a)
	if err != nil {
		return nil, err
	}
	return snap.Gather(opts)
}

// addScheduler adds the metrics of a job scheduler store (its own model:
// package scheduler): its files, pinned and free, and its jobs.
func (c *storeSnap) addScheduler(r *scheduler.Report) {
	c.dir = r.Store.Dir
	c.gauge("kahafs_store_analysed", nil, 1)
	var all, pinned, free int
	var allB, pinnedB int64
	for _, f := range r.Prediction.Files {
		all++
		allB += f.Size
		if f.Pinned {
			pinned++
			pinnedB += f.Size
		} else {
			free++
		}
		c.files = append(c.files, snapFile{name: f.Name, size: f.Size, pinned: f.Pinned})
	}
	c.gauge("kahafs_journal_files", nil, float64(all))
	c.gauge("kahafs_journal_bytes", nil, float64(allB))
	c.gauge("kahafs_pinned_files", nil, float64(pinned))
	c.gauge("kahafs_pinned_bytes", nil, float64(pinnedB))
	c.gauge("kahafs_next_cleanup_free_files", nil, float64(free))
	c.allocGauge("kahafs_next_cleanup_free_bytes", allocFree)
	c.gauge("kahafs_scheduled_jobs", nil, float64(len(r.Model.Jobs())))
}

// allocated is the disk space of the file at p (size when it cannot be
// stat'ed), as package holders takes it.
func allocated(p string, size int64) int64 {
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		return size
	}
	return st.Blocks * 512
}

// add adds the metrics of one store.
func (c *storeSnap) add(a *store.Analysis) error {
	g := a.Graph
	if r := a.Scheduler; r != nil {
		c.addScheduler(r)
		return nil
	}
	if g == nil {
		c.gauge("kahafs_store_analysed", nil, 0)
		return nil
	}
	c.gauge("kahafs_store_analysed", nil, 1)
	c.dir = a.Layout.Dir()
	// holders.Document's totals, the allocated bytes left to render time
	// (a file's disk space is stat'ed then, as Document does)
	doc := holders.Document(a.Layout.Dir(), g, a.MaxFileLength)
	t := doc.Totals
	for _, f := range doc.Files {
		c.files = append(c.files, snapFile{name: f.Name, size: f.Bytes, pinned: f.Pinned})
	}
	c.gauge("kahafs_journal_files", nil, float64(t.All.Files))
	c.gauge("kahafs_journal_bytes", nil, float64(t.All.Bytes))
	c.allocGauge("kahafs_journal_allocated_bytes", allocAll)
	c.gauge("kahafs_pinned_files", nil, float64(t.Pinned.Files))
	c.gauge("kahafs_pinned_bytes", nil, float64(t.Pinned.Bytes))
	c.allocGauge("kahafs_pinned_allocated_bytes", allocPinned)
	c.gauge("kahafs_next_cleanup_free_files", nil, float64(t.Free.Files))
	c.allocGauge("kahafs_next_cleanup_free_bytes", allocFree)

	type holder struct{ kind, dest string }
	type size struct {
		files int
		bytes int64
	}
	byHolder := map[holder]*size{}
	byDest := map[string]*size{}
	for _, d := range g.Destinations() {
		byDest[d.String()] = &size{}
	}
	for _, f := range doc.Files {
		if !f.Pinned {
			continue
		}
		seenH, seenD := map[holder]bool{}, map[string]bool{}
		for _, r := range f.Reasons {
			h := holder{string(r.Kind), r.Destination}
			if !seenH[h] {
				seenH[h] = true
				if byHolder[h] == nil {
					byHolder[h] = &size{}
				}
				byHolder[h].files++
				byHolder[h].bytes += f.Bytes
			}
			if r.Destination == "" || seenD[r.Destination] {
				continue
			}
			if r.Kind != refgraph.KindPendingMessages && r.Kind != refgraph.KindSubscription {
				continue
			}
			seenD[r.Destination] = true
			if byDest[r.Destination] == nil {
				byDest[r.Destination] = &size{}
			}
			byDest[r.Destination].files++
			byDest[r.Destination].bytes += f.Bytes
		}
	}
	for h, sz := range byHolder {
		l := prometheus.Labels{labelKind: h.kind, labelDestination: h.dest}
		c.gauge("kahafs_holder_pinned_files", l, float64(sz.files))
		c.gauge("kahafs_holder_pinned_bytes", l, float64(sz.bytes))
	}
	for d, sz := range byDest {
		l := prometheus.Labels{labelDestination: d}
		c.gauge("kahafs_destination_pinned_files", l, float64(sz.files))
		c.gauge("kahafs_destination_pinned_bytes", l, float64(sz.bytes))
	}

	j := a.Journal()
	for _, d := range g.Destinations() {
		l := prometheus.Labels{labelDestination: d.String()}
		var first *refgraph.Message
		n := 0
		if d.IsTopic() {
			n = len(d.Messages)
			if n > 0 {
				first = &d.Messages[0]
			}
		} else {
			n = d.NumPending()
			if n > 0 {
				first = d.PendingAt(0)
			}
		}
		c.gauge("kahafs_destination_pending_messages", l, float64(n))
		if ts, ok := timestamp(j, first); ok {
			c.gauge("kahafs_destination_first_pending_message_timestamp_seconds", l, ts)
		}
		for _, sub := range d.Subscriptions {
			sl := prometheus.Labels{labelDestination: d.String(), labelSubscription: sub.Key}
			c.gauge("kahafs_subscription_pending_messages", sl, float64(sub.NumPending()))
			if sub.NumPending() > 0 {
				if ts, ok := timestamp(j, sub.PendingAt(0)); ok {
					c.gauge("kahafs_subscription_first_pending_message_timestamp_seconds", sl, ts)
				}
			}
		}
	}
	c.gauge("kahafs_prepared_transactions", nil, float64(len(g.PreparedTransactions())))
	damaged := 0
	for _, f := range g.Files() {
		for _, d := range f.Damage {
			if !codec.IsTail(d) {
				damaged++
				break
			}
		}
	}
	c.gauge("kahafs_damaged_files", nil, float64(damaged))
	found := 0.0
	if damaged > 0 || g.Damaged() {
		found = 1
	}
	c.gauge("kahafs_damage_found", nil, found)
	return nil
}

// timestamp is the JMS timestamp of m in seconds, read from its record
// (one pread); false when there is none (m nil, unreadable, not set).
func timestamp(j *codec.Store, m *refgraph.Message) (float64, bool) {
	if m == nil || m.Unreadable || j == nil {
		return 0, false
	}
	fi, ok := j.File(m.Loc.File)
	if !ok {
		return 0, false
	}
	var c codec.Command
	if _, err := codec.ReadRecordAt(fi, m.Loc, &c); err != nil || len(c.Message) == 0 {
		return 0, false
	}
	var ms openwire.MessageSummary
	if err := openwire.ParseMessageSummary(c.Message, &ms); err != nil || ms.Timestamp <= 0 {
		return 0, false
	}
	return float64(ms.Timestamp) / 1000, true
}

// Write writes the metrics of a in the Prometheus text format.
func Write(w io.Writer, a *store.Analysis, opts Options) error {
	snap, err := Take(a)
	if err != nil {
		return err
	}
	return snap.Write(w, opts)
}

// WriteFile writes the metrics of a to path atomically: a temporary file
// in the same directory, synced, renamed over path (the textfile
// collector never reads half a file), the directory synced.
func WriteFile(path string, a *store.Analysis, opts Options) error {
	snap, err := Take(a)
	if err != nil {
		return err
	}
	return snap.WriteFile(path, opts)
}

// writeFileAtomic writes b to path atomically (WriteFile).
func writeFileAtomic(path string, b []byte) error {
	dir := filepath.Dir(path)
	// node_exporter's textfile collector reads *.prom only: the
	// temporary name ends otherwise.
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("metrics: writing %s: %w", tmp.Name(), err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("metrics: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("metrics: syncing %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
