package main

import (
	"io"
	"log"

	"github.com/kahafs/kahafs/fsnode"
	"github.com/kahafs/kahafs/replaycache"
	"github.com/spf13/cobra"
)

// treeFlags say how ls, cat and find read a store into the tree: the
// flags of mount, meaning what they mean there (fsnode.Options), so that
// the three show the tree a mount with the same flags serves. (mount
// declares its own alike; branch house gathers them in analysisFlags,
// which replaces this type when it is merged.)
type treeFlags struct {
	maxFileLength maxFileLengthFlag
	running       bool
	noIndex       bool
	noVerify      bool
	cache         cacheFlags
}

func (f *treeFlags) add(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.noVerify, "no-verify", false, "do not verify batch checksums")
	addMaxFileLengthFlag(cmd, &f.maxFileLength)
	cmd.Flags().BoolVar(&f.running, "running", false, "pinned/free: the next cleanup of a broker running on the store (as for holders)")
	cmd.Flags().BoolVar(&f.noIndex, "no-index", false, "ignore db.data, as a broker whose index was deleted (as for holders)")
	f.cache.add(cmd)
}

// options are the fsnode options these flags set, as runMount sets them;
// logger and the progress bar are the command's.
func (f *treeFlags) options(logger *log.Logger, bar *progressBar) fsnode.Options {
	return fsnode.Options{
		SkipChecksums: f.noVerify,
		MaxFileLength: int64(f.maxFileLength),
		Running:       f.running,
		NoIndex:       f.noIndex,
		Logger:        logger,
		Progress:      bar.reading,
		Cache:         f.cacheOptions(bar),
	}
}

// cacheOptions are the analysis cache's (nil with --no-cache); its
// problems are reported on w as every command reports them.
func (f *treeFlags) cacheOptions(w io.Writer) *replaycache.Options {
	if f.cache.off {
		return nil
	}
	o := f.cache.options(w)
	return &o
}

// openTree reads the store into the snapshot a mount of it would serve
// (fsnode.Open, the mount's own reading), reporting on the command's
// stderr what the mount reports.
func openTree(cmd *cobra.Command, store string, f treeFlags) (*fsnode.Snapshot, error) {
	stderr := cmd.ErrOrStderr()
	bar := newProgressBar(stderr)
	fsys, err := fsnode.Open(store, f.options(log.New(bar, "kahafs: ", 0), bar))
	bar.finish()
	if err != nil {
		return nil, err
	}
	s := fsys.Snapshot()
	warnMaxFileLength(stderr, s.MaxFileLength())
	return s, nil
}
