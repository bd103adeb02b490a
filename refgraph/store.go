package refgraph

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/kahafs/kahafs/codec"
)

// StoreOptions returns the replay options for st as a broker restarted on
// it sees it: its data files and, when useIndex and db.data is there, the
// index metadata. An index that cannot be read is passed to note (may be
// nil) and left out: a broker rebuilds such an index from the whole
// journal, which is what a nil Options.Index means. The reading itself is
// codec's; the replay stays free of I/O.
func StoreOptions(st *codec.Store, useIndex bool, note func(error)) Options {
	opts := Options{Files: st.Files, Compactions: codec.CompactionHeads(st.Files), ReadForwarded: forwardedReader(st)}
	if !st.HasIndex || !useIndex {
		return opts
	}
	meta, err := codec.ReadIndexMetadata(st.Dir)
	switch {
	case err == nil:
		opts.Index = meta
	case errors.Is(err, fs.ErrNotExist):
	default:
		if note != nil {
			note(err)
		}
	}
	return opts
}

// Load reads every data file of st with codec.ReadStore and replays it.
func Load(st *codec.Store, opts Options, read codec.ReadOptions) (*Graph, error) {
	b := NewBuilder(opts)
	if err := codec.ReadStore(st, read, 0, b); err != nil {
		return nil, err
	}
	return b.Build()
}

// forwardedReader reads the forwarded records of st's compaction files.
func forwardedReader(st *codec.Store) func(int32, func(codec.Record, *codec.Command) error) error {
	return func(file int32, fn func(codec.Record, *codec.Command) error) error {
		fi, ok := st.File(file)
		if !ok {
			return fmt.Errorf("%s is not in %s", codec.DataFileName(file), st.Dir)
		}
		return codec.ReadForwarded(fi, fn)
	}
}
