package fsnode

import (
	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/refgraph"
)

// graphBuilder feeds the replay graph while the store is read.
type graphBuilder struct {
	*refgraph.Builder
}

// newGraphBuilder prepares the replay the way `kahafs holders` does
// (cmd/kahafs loadGraph): the store's file list, the index metadata when
// db.data is there, the same options; in addition every finished
// transaction is kept (the tree lists them all).
func newGraphBuilder(st *codec.Store, m *mountState, opts Options) *graphBuilder {
	ro := refgraph.StoreOptions(st, !opts.NoIndex, func(err error) {
		m.logf("%s: index not used: %v", st.Dir, err)
	})
	ro.KeepCompleted, ro.MaxFileLength, ro.Running = -1, opts.MaxFileLength, opts.Running
	return &graphBuilder{refgraph.NewBuilder(ro)}
}

func (g *graphBuilder) finish() (*refgraph.Graph, error) { return g.Build() }
