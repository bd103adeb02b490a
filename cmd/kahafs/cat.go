package main

import (
	"bufio"

	"github.com/spf13/cobra"
)

func newCatCmd() *cobra.Command {
	var f treeFlags
	cmd := &cobra.Command{
		Use:   "cat STORE PATH...",
		Short: "Print files of the tree mount serves, without FUSE",
		Long: `cat prints the files PATH... of the tree that "kahafs mount STORE" serves,
one after the other, byte for byte what reading them below a mountpoint
gives, without mounting anything: no FUSE, no root. PATH is written as
below a mountpoint, e.g. by-file/db-2.log/holders or
by-destination/queue/ORDERS/pending/0000000001-ID:…json (see kahafs ls).

The store is read as mount reads it, with the same flags and the same
analysis cache.`,
		Args: withUsage(cobra.MinimumNArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := openTree(cmd, args[0], f)
			if err != nil {
				return err
			}
			w := bufio.NewWriter(cmd.OutOrStdout())
			defer w.Flush()
			for _, p := range args[1:] {
				b, err := s.ReadFile(p)
				if err != nil {
					return err
				}
				if _, err := w.Write(b); err != nil {
					return err
				}
			}
			return nil
		},
	}
	f.add(cmd)
	return cmd
}
