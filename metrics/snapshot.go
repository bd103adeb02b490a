package metrics

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"sort"

	"github.com/kahafs/kahafs/compact"
	"github.com/kahafs/kahafs/internal/binenc"
	"github.com/kahafs/kahafs/replaycache"
	"github.com/kahafs/kahafs/store"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// SideKind names the analysis cache's side file (replaycache.SaveSide)
// that keeps a store's Snapshot: bump its version whenever what a
// snapshot holds or how a metric is computed changes, so that no side
// file of an older kahafs is rendered.
// v2: a durable subscription's pending messages include what the store
// hands past its first batch (refgraph's storeBatches).
const SideKind = "metrics-v2"

// Snapshot is the metrics of a store, or of each store of a layout, as
// numbers before rendering: what an analysis gives, without the constant
// labels of Options (given at each run) and with the disk space of data
// files left to render time (stat'ed then, as holders does). It is what
// the analysis cache's side file keeps (Load), so that a run on an
// unchanged store renders without analysing anything.
type Snapshot struct {
	multi  bool
	stores []*storeSnap
}

// storeSnap is the metrics of one store.
type storeSnap struct {
	// rel is the store_dir label (the store's directory relative to the
	// layout's root) in a layout of several.
	rel string
	// dir is the store's directory: where its data files are stat'ed
	// (not kept in a side file: the layout's).
	dir     string
	files   []snapFile
	samples []sample
	// compaction: whether the compaction's figure was worked out
	// (compact.Reclaimable; its sample is absent where a compaction
	// refuses the store).
	compaction bool
}

// nameCompaction is the metric of what an offline compaction frees.
const nameCompaction = "kahafs_compaction_reclaimable_bytes"

// addCompaction works out what an offline compaction of the analysed
// store a frees (compact.Reclaimable: a dry run's layout of the
// compacted journal, reading the records it copies), when a was analysed
// as the compaction analyses (opts the defaults: the index used, the
// restarted broker's view, checksums verified).
func (c *storeSnap) addCompaction(a *store.Analysis, opts store.Options) error {
	c.compaction = true
	if opts.Running || opts.NoIndex || opts.SkipChecksums || opts.KeepCompleted != 0 {
		return nil
	}
	before, after, ok, err := compact.Reclaimable(a)
	if err != nil || !ok {
		return err
	}
	c.gauge(nameCompaction, nil, float64(before.Bytes-after.Bytes))
	return nil
}

// withoutCompaction drops the compaction's sample.
func (c *storeSnap) withoutCompaction() {
	out := c.samples[:0]
	for _, m := range c.samples {
		if m.name != nameCompaction {
			out = append(out, m)
		}
	}
	c.samples, c.compaction = out, false
}

// snapFile is a data file: what its allocated bytes are stat'ed by.
type snapFile struct {
	name   string
	size   int64
	pinned bool
}

// allocKind: a sample whose value is the disk space of some of the
// store's data files, stat'ed when rendered.
type allocKind uint8

const (
	allocNone allocKind = iota
	allocAll
	allocPinned
	allocFree
	allocKinds
)

type sample struct {
	name string
	// labels are name, value pairs sorted by name (values as they are:
	// LabelValue is applied when rendered).
	labels []string
	value  float64
	alloc  allocKind
}

func (c *storeSnap) gauge(name string, labels prometheus.Labels, v float64) {
	if _, ok := help[name]; !ok {
		panic("metrics: no help for " + name)
	}
	names := make([]string, 0, len(labels))
	for k := range labels {
		names = append(names, k)
	}
	sort.Strings(names)
	lv := make([]string, 0, 2*len(names))
	for _, k := range names {
		lv = append(lv, k, labels[k])
	}
	c.samples = append(c.samples, sample{name: name, labels: lv, value: v})
}

func (c *storeSnap) allocGauge(name string, k allocKind) {
	c.gauge(name, nil, 0)
	c.samples[len(c.samples)-1].alloc = k
}

// allocated is the disk space of the data files of kind k, stat'ed now.
func (c *storeSnap) allocated(k allocKind) int64 {
	var n int64
	for _, f := range c.files {
		if k == allocAll || (k == allocPinned) == f.pinned {
			n += allocated(filepath.Join(c.dir, f.name), f.size)
		}
	}
	return n
}

// Take is the snapshot of the analysed store a (each store of a layout
// of several).
func Take(a *store.Analysis) (*Snapshot, error) {
	s := &Snapshot{multi: a.Layout.Multi()}
	for _, c := range storesOf(a) {
		cs, err := takeStore(c)
		if err != nil {
			return nil, err
		}
		s.stores = append(s.stores, cs)
	}
	return s, nil
}

func takeStore(a *store.Analysis) (*storeSnap, error) {
	c := &storeSnap{rel: a.Layout.Rel, dir: a.Layout.Dir()}
	if err := c.add(a); err != nil {
		return nil, err
	}
	return c, nil
}

// storesOf are the stores of a: a itself, or its children.
func storesOf(a *store.Analysis) []*store.Analysis {
	if a.Layout.Multi() {
		return a.Children
	}
	return []*store.Analysis{a}
}

// Gather is the snapshot's metrics with opts' constant labels, the
// allocated bytes stat'ed now: a fresh registry of the client library's
// GaugeVecs.
func (s *Snapshot) Gather(opts Options) ([]*dto.MetricFamily, error) {
	for k := range opts.Labels {
		if err := CheckLabel(k); err != nil {
			return nil, err
		}
	}
	set := &set{reg: prometheus.NewPedanticRegistry(), vecs: map[string]*prometheus.GaugeVec{}, cl: opts.Labels, multi: s.multi}
	for _, c := range s.stores {
		set.dir = c.rel
		var alloc [allocKinds]int64
		var have [allocKinds]bool
		for _, m := range c.samples {
			v := m.value
			if m.alloc != allocNone {
				if !have[m.alloc] {
					alloc[m.alloc], have[m.alloc] = c.allocated(m.alloc), true
				}
				v = float64(alloc[m.alloc])
			}
			var labels prometheus.Labels
			if len(m.labels) > 0 {
				labels = make(prometheus.Labels, len(m.labels)/2)
				for i := 0; i+1 < len(m.labels); i += 2 {
					labels[m.labels[i]] = m.labels[i+1]
				}
			}
			set.gauge(m.name, labels, v)
		}
	}
	return set.reg.Gather()
}

// Write writes the snapshot's metrics in the Prometheus text format.
func (s *Snapshot) Write(w io.Writer, opts Options) error {
	mfs, err := s.Gather(opts)
	if err != nil {
		return err
	}
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return err
		}
	}
	return nil
}

// WriteFile writes the snapshot's metrics to path atomically (as
// WriteFile does).
func (s *Snapshot) WriteFile(path string, opts Options) error {
	var b bytes.Buffer
	if err := s.Write(&b, opts); err != nil {
		return err
	}
	return writeFileAtomic(path, b.Bytes())
}

// encode is one store's snapshot as its side file keeps it.
func (c *storeSnap) encode() []byte {
	var w binenc.Writer
	w.Bool(c.compaction)
	w.Uvarint(uint64(len(c.files)))
	for _, f := range c.files {
		w.String(f.name)
		w.Varint(f.size)
		w.Bool(f.pinned)
	}
	w.Uvarint(uint64(len(c.samples)))
	for _, m := range c.samples {
		w.String(m.name)
		w.Uvarint(uint64(len(m.labels)))
		for _, l := range m.labels {
			w.String(l)
		}
		w.Uvarint(math.Float64bits(m.value))
		w.Byte(byte(m.alloc))
	}
	return w.B
}

// decodeStore decodes a side file's snapshot of one store.
func decodeStore(b []byte) (*storeSnap, error) {
	r := binenc.NewReader(b)
	c := &storeSnap{compaction: r.Bool()}
	n := r.Count(3)
	for i := 0; i < n && r.Err() == nil; i++ {
		c.files = append(c.files, snapFile{name: r.String(), size: r.Varint(), pinned: r.Bool()})
	}
	n = r.Count(4)
	names := map[string]string{} // label names by metric: the same for each of its samples
	for i := 0; i < n && r.Err() == nil; i++ {
		m := sample{name: r.String()}
		nl := r.Count(1)
		if nl%2 != 0 {
			r.Fail("odd number of label strings")
		}
		for j := 0; j < nl && r.Err() == nil; j++ {
			m.labels = append(m.labels, r.String())
		}
		m.value = math.Float64frombits(r.Uvarint())
		m.alloc = allocKind(r.Byte())
		if r.Err() == nil {
			if _, ok := help[m.name]; !ok {
				r.Fail("unknown metric %q", m.name)
			} else if m.alloc >= allocKinds {
				r.Fail("unknown allocation kind %d", m.alloc)
			} else if err := checkLabels(m, names); err != nil {
				r.Fail("%v", err)
			}
		}
		c.samples = append(c.samples, m)
	}
	if r.Err() == nil && r.Len() != 0 {
		r.Fail("%d bytes after the snapshot", r.Len())
	}
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("metrics: side file: %w", err)
	}
	return c, nil
}

// StoreRun says how the metrics of one store were had (Load).
type StoreRun struct {
	Layout *store.Layout
	// Analysis is the store's analysis; nil when the metrics came from
	// the side file of its analysis cache (Cached).
	Analysis *store.Analysis
	// Cached: the snapshot came from the analysis cache's side file
	// (the cache would have been hit: nothing analysed).
	Cached bool
	// MaxFileLength is the journalMaxFileLength the analysis assumed
	// (with Cached, the one it assumed when the side file was saved).
	MaxFileLength replaycache.MaxFileLength
	// SideSaved: the side file was (re)written.
	SideSaved bool
	// SideReason says why the side file was not used (empty when it was).
	SideReason string
}

// LoadOptions say how Load analyses a store it cannot answer from a side
// file.
type LoadOptions struct {
	// Analysis are the analysis options (store.Analyse); with Cache nil
	// every store is analysed and no side file read or written.
	Analysis store.Options
	// Compaction adds kahafs_compaction_reclaimable_bytes: what an
	// offline compaction frees, worked out exactly as a dry run does
	// (compact.Reclaimable: it reads the records the compaction copies,
	// about half the cost of an analysis that reads the whole journal).
	// Only with the analysis options a compaction uses (the defaults).
	Compaction bool
	// Done, when set, is told how each store was had, in order.
	Done func(StoreRun)
}

// Load is the snapshot of the store of l (of each store of a layout of
// several). A store whose analysis cache would be hit (nothing changed
// since; store.LoadSide) is answered from the side file kept with it,
// without analysing it; any other (a tail, a miss, the cache off, a side
// file without the compaction's figure asked for) is analysed
// (store.Analyse) and, with the cache on, its side file saved.
func Load(l *store.Layout, o LoadOptions) (*Snapshot, error) {
	s := &Snapshot{multi: l.Multi()}
	stores := []*store.Layout{l}
	if l.Multi() {
		stores = l.Children
	}
	for _, c := range stores {
		cs, run, err := loadStore(c, o)
		if err != nil {
			return nil, err
		}
		s.stores = append(s.stores, cs)
		if o.Done != nil {
			o.Done(run)
		}
	}
	return s, nil
}

func loadStore(l *store.Layout, o LoadOptions) (*storeSnap, StoreRun, error) {
	run := StoreRun{Layout: l}
	data, mfl, why, ok := store.LoadSide(l, o.Analysis, SideKind)
	if ok {
		c, err := decodeStore(data)
		switch {
		case err != nil:
			why = err.Error()
		case o.Compaction && !c.compaction:
			why = "side file without the compaction's figure"
		default:
			if !o.Compaction {
				c.withoutCompaction()
			}
			c.rel, c.dir = l.Rel, l.Dir()
			run.Cached, run.MaxFileLength = true, mfl
			return c, run, nil
		}
	}
	run.SideReason = why
	a, err := store.Analyse(l, o.Analysis)
	if err != nil {
		return nil, run, err
	}
	c, err := takeStore(a)
	if err != nil {
		return nil, run, err
	}
	if o.Compaction && a.Graph != nil {
		if err := c.addCompaction(a, o.Analysis); err != nil {
			return nil, run, err
		}
	}
	run.Analysis, run.MaxFileLength = a, a.MaxFileLength
	if a.Graph != nil {
		run.SideSaved = store.SaveSide(a, SideKind, c.encode())
	}
	return c, run, nil
}

// checkLabels checks that a decoded sample's label names are the metrics'
// own, sorted, and those of the other samples of its metric (names): the
// client library panics on anything else.
func checkLabels(m sample, names map[string]string) error {
	var key string
	for i := 0; i+1 < len(m.labels); i += 2 {
		k := m.labels[i]
		switch {
		case k != labelKind && k != labelDestination && k != labelSubscription:
			return fmt.Errorf("metric %s: label %q", m.name, k)
		case i > 0 && m.labels[i-2] >= k:
			return fmt.Errorf("metric %s: labels out of order", m.name)
		}
		key += k + ","
	}
	if prev, ok := names[m.name]; ok && prev != key {
		return fmt.Errorf("metric %s: labels %q and %q", m.name, prev, key)
	}
	names[m.name] = key
	return nil
}
