package fsnode

import (
	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/refgraph"
)

// graphOptions are the replay options of the mount, the way `kahafs
// holders` sets them (cmd/kahafs loadGraph): the store's file list, the
// index metadata when db.data is there, the same options; in addition
// every finished transaction is kept (the tree lists them all). The
// journalMaxFileLength is settled by replaycache.LoadMaxFileLength.
func graphOptions(st *codec.Store, m *mountState, opts Options) refgraph.Options {
	ro := refgraph.StoreOptions(st, !opts.NoIndex, func(err error) {
		m.logf("%s: index not used: %v", st.Dir, err)
	})
	ro.KeepCompleted, ro.MaxFileLength, ro.Running = -1, opts.MaxFileLength, opts.Running
	return ro
}
