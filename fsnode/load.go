package fsnode

import (
	"time"

	"github.com/kahafs/kahafs/codec"
)

// load reads the store in dir once: every data file is framed, verified
// and decoded by codec.ReadStore, the commands feed both the per-file
// counts and the replay graph.
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
	v := &buildVisitor{progress: opts.Progress}
	for _, fi := range st.Files {
		s.files = append(s.files, &dataFile{snap: s, info: fi})
		v.total += fi.Size
	}
	v.files = s.files
	gb := newGraphBuilder(st, m, opts)
	v.next = gb
	if err := codec.ReadStore(st, s.opts, 0, v); err != nil {
		return nil, err
	}
	if s.graph, err = gb.finish(); err != nil {
		return nil, err
	}
	for _, f := range s.files {
		s.commands += f.count
		s.bytes += f.sum.Size
	}
	return s, nil
}
