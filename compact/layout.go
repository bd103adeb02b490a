package compact

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/kahafs/kahafs/store"
)

// LayoutReport is the compaction of a layout of several stores (an mKahaDB
// root, a broker's data directory: package store), store by store.
type LayoutReport struct {
	Layout string        `json:"layout"`
	Stores []StoreReport `json:"stores"`
}

// StoreReport is what the compaction of a layout did with one store: its
// directory's name as on disk, its kind and path relative to the layout,
// and its Report, or why it was skipped.
type StoreReport struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"`
	Dir     string `json:"dir"`
	Skipped string `json:"skipped,omitempty"`
	*Report
}

// CompactLayout compacts each KahaDB store of the layout at dir in turn,
// each exactly as Compact compacts it alone (its lock, and for a store of
// an mKahaDB the root's; its backup; its verification). The txStore and
// the stores kahafs does not model are skipped, said why. With
// Options.BackupDir, the original of each store goes to BackupDir/REL
// (REL: its path relative to dir); else where Compact puts it, all with
// one timestamp. The first failure stops the compaction: the report lists
// the stores done before it, and the error names the store.
func CompactLayout(dir string, opts Options) (*LayoutReport, error) {
	l, err := store.Locate(dir)
	if err != nil {
		return nil, err
	}
	if !l.Multi() {
		return nil, fmt.Errorf("%s is one store, not a layout of several: compact it alone", dir)
	}
	if opts.Now == nil {
		now := time.Now()
		opts.Now = func() time.Time { return now }
	}
	rep := &LayoutReport{Layout: l.Dir(), Stores: []StoreReport{}}
	for _, c := range l.Children {
		sr := StoreReport{Name: c.Name, Kind: c.KindName(), Dir: c.Rel}
		switch {
		case c.Kind == store.KindScheduler:
			sr.Skipped = "a job scheduler store is not compacted (its files stay as they are)"
		case !c.Analysable():
			sr.Skipped = c.NotAnalysedText()
		case c.Kind == store.KindTxStore:
			sr.Skipped = "the transaction store of an mKahaDB is not compacted"
		default:
			o := opts
			if opts.BackupDir != "" {
				o.BackupDir = filepath.Join(opts.BackupDir, c.Rel)
				if !opts.DryRun {
					if err := os.MkdirAll(filepath.Dir(o.BackupDir), 0o755); err != nil {
						return rep, fmt.Errorf("%s: backup directory: %w", c.Rel, err)
					}
				}
			}
			r, err := Compact(c.Dir(), o)
			if err != nil {
				return rep, fmt.Errorf("%s: %w (the stores before it are compacted)", c.Rel, err)
			}
			sr.Report = r
		}
		rep.Stores = append(rep.Stores, sr)
	}
	return rep, nil
}
