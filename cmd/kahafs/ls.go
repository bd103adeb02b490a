package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"syscall"

	"github.com/kahafs/kahafs/fsnode"
	"github.com/spf13/cobra"
)

type lsFlags struct {
	treeFlags
	long bool
}

func newLsCmd() *cobra.Command {
	var f lsFlags
	cmd := &cobra.Command{
		Use:   "ls STORE [PATH]",
		Short: "List a directory of the tree mount serves, without FUSE",
		Long: `ls lists the directory PATH (default: the top) of the tree that
"kahafs mount STORE" serves, one name a line in the order the mount lists
them, without mounting anything: no FUSE, no root. PATH is written as below
a mountpoint, e.g. by-destination/queue/ORDERS/pending. A file is listed by
its name, as ls does.

With -l each line is the mode, the size in bytes and the name, as the mount
shows them (a size is that of the rendered content, so -l renders every
file it lists); a symbolic link (by-file/db-N.log/acks-for/ and acked-by/)
also its target ("db-3.log -> ../../db-3.log"). A PATH through a link is
followed, as below a mountpoint.

The store is read as mount reads it, with the same flags and the same
analysis cache; what ls, cat and find print is what the mount serves, byte
for byte.`,
		Args: withUsage(cobra.RangeArgs(1, 2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			p := ""
			if len(args) == 2 {
				p = args[1]
			}
			return runLs(cmd, args[0], p, f)
		},
	}
	cmd.Flags().BoolVarP(&f.long, "long", "l", false, "mode, size and name of each entry")
	f.treeFlags.add(cmd)
	return cmd
}

func runLs(cmd *cobra.Command, store, p string, f lsFlags) error {
	s, err := openTree(cmd, store, f.treeFlags)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(cmd.OutOrStdout())
	defer w.Flush()
	dir := fsnode.CleanPath(p)
	if f.long && dir != "" {
		// a symbolic link named as PATH: its own line, as ls -l
		if e, err := s.Stat(dir); err == nil && e.Link != "" {
			return lsLine(w, s, dir, e, true)
		}
	}
	err = s.ListDir(dir, func(e fsnode.Entry) error {
		return lsLine(w, s, path.Join(dir, e.Name), e, f.long)
	})
	// A file (PATH itself, not a name above it): its own line, as ls.
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) && pe.Err == syscall.ENOTDIR {
		e, serr := s.Stat(dir)
		if serr != nil {
			return serr
		}
		return lsLine(w, s, dir, e, f.long)
	}
	return err
}

// lsLine writes the line of the entry e at path p. Names are the tree's,
// escaped already (fsnode.EscapeName: no control or format characters):
// printed as the mount lists them.
func lsLine(w io.Writer, s *fsnode.Snapshot, p string, e fsnode.Entry, long bool) error {
	if !long {
		_, err := fmt.Fprintln(w, e.Name)
		return err
	}
	mode, size := "dr-xr-xr-x", 0
	if e.Link != "" {
		// a symbolic link (acks-for/, acked-by/): as ls -l shows one
		_, err := fmt.Fprintf(w, "%s %10d %s -> %s\n", "lrwxrwxrwx", len(e.Link), e.Name, e.Link)
		return err
	}
	if !e.Dir {
		b, err := s.ReadFile(p)
		if err != nil {
			return err
		}
		mode, size = "-r--r--r--", len(b)
	}
	_, err := fmt.Fprintf(w, "%s %10d %s\n", mode, size, e.Name)
	return err
}
