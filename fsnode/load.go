package fsnode

import (
	"time"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/kahaindex"
	"github.com/kahafs/kahafs/replaycache"
)

// load reads the store in dir into a snapshot: the replay graph, and per
// data file what reading it found and its commands by type. With
// Options.Cache the analysis comes from the cache where the store has not
// changed since (replaycache), else every data file is framed, verified
// and decoded.
func load(dir string, gen uint64, m *mountState, opts Options) (*Snapshot, error) {
	st, err := codec.OpenStore(dir)
	if err != nil {
		return nil, err
	}
	s := &Snapshot{
		Gen:   gen,
		Store: st,
		Read:  time.Now(),
		opts:  codec.ReadOptions{SkipChecksums: opts.SkipChecksums},
		m:     m,
	}
	co := replaycache.Options{Disable: true}
	if opts.Cache != nil {
		co = *opts.Cache
	}
	if co.Logf == nil {
		co.Logf = m.logf
	}
	if co.Progress == nil {
		co.Progress = opts.Progress
	}
	gopts := graphOptions(st, m, opts)
	if gopts.Index != nil {
		s.wireVersion = gopts.Index.MessageOpenWireVersion()
	} else {
		s.wireVersion = kahaindex.StoreOpenWireVersion(st.Dir) // --no-index: the version is still the index's
	}
	res, mfl, err := replaycache.LoadMaxFileLength(st, gopts, opts.MaxFileLength, s.opts, co)
	if err != nil {
		return nil, err
	}
	s.graph = res.Graph
	s.cache = res.Outcome
	s.mfl = mfl
	for i, fi := range st.Files {
		r := &res.Files[i]
		f := &dataFile{snap: s, info: fi, sum: r.Summary, byType: r.Counts, count: r.Commands()}
		s.files = append(s.files, f)
		s.commands += f.count
		s.bytes += f.sum.Size
		s.alloc += f.sum.Allocated
	}
	return s, nil
}
