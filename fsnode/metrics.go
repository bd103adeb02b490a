package fsnode

import (
	"bytes"
	"strings"
	"sync"

	"github.com/kahafs/kahafs/metrics"
	"github.com/kahafs/kahafs/store"
)

// The file metrics at the top of the tree: what `kahafs metrics STORE`
// prints for the same analysis (package metrics: the Prometheus text
// format; on a layout every store's, labelled store_dir), rendered when
// it is looked up or read.

const nameMetrics = "metrics"

// inoMetrics numbers the metrics file (hashed: the static numbers are a
// list other files of the top are added to).
var inoMetrics = inoPath(nameMetrics)

// metricsEntry is the metrics file of the top of the tree.
func (s *Snapshot) metricsEntry() entry {
	return textOf(nameMetrics, inoMetrics, s.renderMetrics)
}

// renderedOnce is a file rendered once per snapshot and kept: the
// metrics stat the data files (their disk space) when made, which a
// running broker changes, and a file's content never changes within a
// snapshot.
type renderedOnce struct {
	once sync.Once
	b    []byte
}

// renderMetrics never fails: the listing of the top looks the file up,
// and a failure would fail the listing. What kahafs metrics would refuse
// with an error is a comment saying so (the text format's "#").
func (s *Snapshot) renderMetrics() ([]byte, error) {
	s.met.once.Do(func() {
		var b bytes.Buffer
		if err := metrics.Write(&b, s.storeAnalysis(), metrics.Options{}); err != nil {
			s.met.b = []byte("# kahafs: no metrics: " + strings.ReplaceAll(err.Error(), "\n", " ") + "\n")
			return
		}
		s.met.b = b.Bytes()
	})
	return s.met.b, nil
}

// storeAnalysis is the analysis the snapshot was made from: a store's
// own, or for a layout of several the analysis store.Analyse makes of
// it (its stores' in order; a job scheduler store's model, or why a store
// was not analysed).
func (s *Snapshot) storeAnalysis() *store.Analysis {
	if s.layout == nil {
		return s.analysis
	}
	a := &store.Analysis{Layout: s.layout.l}
	for _, ls := range s.layout.stores {
		var c *store.Analysis
		switch {
		case ls.snap != nil:
			c = ls.snap.analysis
		case ls.sched != nil:
			c = &store.Analysis{Layout: ls.l, Scheduler: ls.sched}
		default:
			c = &store.Analysis{Layout: ls.l, NotAnalysed: ls.why}
		}
		a.Children = append(a.Children, c)
	}
	return a
}
