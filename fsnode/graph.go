package fsnode

import (
	"errors"
	"io/fs"

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
	ro := refgraph.Options{Files: st.Files, KeepCompleted: -1, MaxFileLength: opts.MaxFileLength, Running: opts.Running}
	if st.HasIndex && !opts.NoIndex {
		meta, err := codec.ReadIndexMetadata(st.Dir)
		switch {
		case err == nil:
			ro.Index = meta
		case errors.Is(err, fs.ErrNotExist):
		default:
			// A broker with a broken index replays the whole journal,
			// which is what a nil Index means.
			m.logf("%s: index not used: %v", st.Dir, err)
		}
	}
	return &graphBuilder{refgraph.NewBuilder(ro)}
}

func (g *graphBuilder) finish() (*refgraph.Graph, error) { return g.Build() }
