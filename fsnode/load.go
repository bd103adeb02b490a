package fsnode

import (
	"time"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/store"
)

// load reads the store in dir into a snapshot: the analysis of package
// store (the replay graph, and per data file what reading it found and
// its commands by type). With Options.Cache the analysis comes from the
// cache where the store has not changed since (replaycache), else every
// data file is framed, verified and decoded.
func load(dir string, gen uint64, m *mountState, opts Options) (*Snapshot, error) {
	l, err := store.Locate(dir)
	if err != nil {
		return nil, err
	}
	if l.Multi() {
		return loadLayout(l, gen, m, opts)
	}
	return loadOneStore(l, gen, m, opts)
}

// loadOneStore reads the one store of l into a snapshot.
func loadOneStore(l *store.Layout, gen uint64, m *mountState, opts Options) (*Snapshot, error) {
	dir := l.Dir()
	a, err := store.Analyse(l, storeOptions(dir, m, opts))
	if err != nil {
		return nil, err
	}
	st := a.Journal()
	s := &Snapshot{
		Gen:         gen,
		Store:       st,
		Read:        time.Now(),
		opts:        codec.ReadOptions{SkipChecksums: opts.SkipChecksums},
		m:           m,
		graph:       a.Graph,
		analysis:    a,
		cache:       a.Cache,
		mfl:         a.MaxFileLength,
		wireVersion: a.OpenWireVersion,
	}
	for i, fi := range st.Files {
		r := &a.Files[i]
		f := &dataFile{snap: s, info: fi, sum: r.Summary, byType: r.Counts, count: r.Commands()}
		s.files = append(s.files, f)
		s.commands += f.count
		s.bytes += f.sum.Size
		s.alloc += f.sum.Allocated
	}
	return s, nil
}

// storeOptions are the analysis options of the mount: those of `kahafs
// holders` (Options.Options), and in addition every finished transaction
// is kept (the tree lists them all). Problems with the index and the
// cache are logged unless the options say otherwise.
func storeOptions(dir string, m *mountState, opts Options) store.Options {
	so := opts.Options
	so.KeepCompleted = -1
	if so.IndexProblem == nil {
		so.IndexProblem = func(err error) {
			m.logf("%s: index not used: %v", dir, err)
		}
	}
	if so.Cache != nil && so.Cache.Logf == nil {
		co := *so.Cache
		co.Logf = m.logf
		so.Cache = &co
	}
	return so
}
