package main

import (
	"fmt"
	"log"

	"github.com/kahafs/kahafs/fsnode"
	"github.com/spf13/cobra"
)

// treeFlags say how ls, cat and find read a store into the tree: mount's
// analysis flags (analysisFlags), meaning what they mean there, so that
// the three show the tree a mount with the same flags serves.
type treeFlags struct {
	analysis analysisFlags
}

func (f *treeFlags) add(cmd *cobra.Command) { f.analysis.add(cmd, replayFlags) }

// openTree reads the store into the snapshot a mount of it would serve
// (fsnode.Open, the mount's own reading), reporting on the command's
// stderr what the mount reports.
func openTree(cmd *cobra.Command, store string, f treeFlags) (*fsnode.Snapshot, error) {
	stderr := cmd.ErrOrStderr()
	if _, live := f.analysis.checkLive(cmd, store); live != "" {
		fmt.Fprintln(stderr, live)
	}
	bar := newProgressBar(stderr)
	fsys, err := fsnode.Open(store, treeOptions(f.analysis, log.New(bar, "kahafs: ", 0), bar))
	bar.finish()
	if err != nil {
		return nil, err
	}
	s := fsys.Snapshot()
	warnMaxFileLength(stderr, s.MaxFileLength())
	return s, nil
}
