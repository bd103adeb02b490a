package main

import (
	"fmt"
	"io"

	"github.com/kahafs/kahafs/store"
	"github.com/spf13/cobra"
)

// analysisFlags say how a command analyses its store (store.Options):
// holders and mount take them all, compact the journalMaxFileLength and
// the cache (a compaction analyses the store as a broker restarted on it,
// verifying every batch). They are declared here and nowhere else.
type analysisFlags struct {
	maxFileLength maxFileLengthFlag
	running       bool
	noIndex       bool
	noVerify      bool
	cache         cacheFlags
}

// replayFlags: add declares --running, --no-index and --no-verify too.
const replayFlags = true

// add declares the flags on cmd: --max-file-length and the cache flags,
// and with replay the replay's mode flags.
func (a *analysisFlags) add(cmd *cobra.Command, replay bool) {
	addMaxFileLengthFlag(cmd, &a.maxFileLength)
	if replay {
		cmd.Flags().BoolVar(&a.running, "running", false, "predict the next cleanup of a broker running on the store")
		cmd.Flags().BoolVar(&a.noIndex, "no-index", false, "ignore db.data (as a broker does whose index was deleted)")
		cmd.Flags().BoolVar(&a.noVerify, "no-verify", false, "do not verify batch checksums")
	}
	a.cache.add(cmd)
}

// options are the analysis options the flags say. Problems with the
// index and the cache are reported on w, the same from every command.
func (a *analysisFlags) options(w io.Writer) store.Options {
	return store.Options{
		MaxFileLength: int64(a.maxFileLength),
		Running:       a.running,
		NoIndex:       a.noIndex,
		SkipChecksums: a.noVerify,
		Cache:         a.cache.options(w),
		IndexProblem: func(err error) {
			fmt.Fprintf(w, "note: %v; a broker rebuilds such an index from the whole journal, and so does this replay\n", err)
		},
	}
}
