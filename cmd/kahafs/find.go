package main

import (
	"bufio"
	"errors"
	"fmt"

	"github.com/kahafs/kahafs/fsnode"
	"github.com/spf13/cobra"
)

type findFlags struct {
	treeFlags
	messageID string
	scan      bool
}

func newFindCmd() *cobra.Command {
	var f findFlags
	cmd := &cobra.Command{
		Use:   "find STORE --message-id ID",
		Short: "Print every path of the tree that shows a message, without FUSE",
		Long: `find prints every path of the tree that "kahafs mount STORE" serves where
the message with the JMS message id ID appears, one a line, in tree order:

  by-file/db-N.log/OFFSET-TYPE.json (and .body)  its ADD or latest UPDATE,
                                                 the adds and acks of
                                                 transactions in progress
  by-destination/…/pending/, in-doubt/, and the pending/ and in-doubt/ of
  topic subscriptions                            where it is listed
  by-transaction/ID/…                            its commands in
                                                 transactions, and the
                                                 in-doubt/ of prepared ones

It answers from the replay's indexes without rendering any file. With
--scan it also reads every command of the journal (as a first mount does),
to name every command that names the message: acks of a message still held
by other subscriptions, earlier updates, and messages no longer held at all.

A message that no path shows is an error (exit status 1).`,
		Args: withUsage(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.messageID == "" {
				return &usageError{cmd: cmd, err: errors.New("--message-id is required")}
			}
			s, err := openTree(cmd, args[0], f.treeFlags)
			if err != nil {
				return err
			}
			paths, err := s.FindMessage(f.messageID, fsnode.FindOptions{Scan: f.scan})
			if err != nil {
				if errors.Is(err, fsnode.ErrNoMessage) && !f.scan {
					return fmt.Errorf("%w (--scan reads every command of the journal, also of messages no longer held)", err)
				}
				return err
			}
			w := bufio.NewWriter(cmd.OutOrStdout())
			defer w.Flush()
			for _, p := range paths {
				fmt.Fprintln(w, p)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&f.messageID, "message-id", "", "the JMS message id (ID:…) to look for")
	cmd.Flags().BoolVar(&f.scan, "scan", false, "also read every command of the journal (acks, updates, messages no longer held)")
	f.treeFlags.add(cmd)
	return cmd
}
