package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/kahafs/kahafs/plan"
	"github.com/kahafs/kahafs/store"
	"github.com/spf13/cobra"
)

type planFlags struct {
	json     bool
	analysis analysisFlags
	profile  profileFlags
}

func newPlanCmd() *cobra.Command {
	var f planFlags
	cmd := &cobra.Command{
		Use:   "plan STORE",
		Short: "Rank what an admin can do to free data files, by what each frees at the next cleanup",
		Long: `plan answers the question after holders: what do I do, and what will it give
back? It lists the actions an admin can take on the store's holders — purge a
queue (one for every queue), delete a durable subscription (one for every
subscription with something pending), commit or roll back a prepared XA
transaction, wait for the broker's own ack compaction, compact offline — and
for each the data files the broker's next cleanup deletes because of it,
beyond those it deletes anyway, with their disk space. The files are not
estimated: the cleanup emulation of holders is run again with that holder
resolved and the records the action writes first (a purge of N messages
appends N acks) appended before it. Only the sizes of those records are
estimates, from the records a 5.17.2 broker writes. An action that frees
nothing says what else keeps the files its holder keeps. The last line is
the combination that frees the most with the least written: from all of
them together, each left out (the one writing most first) when the others
give back as much without it, the emulation run again each time. A topic has no purge: the broker keeps a
topic's messages only for its durable subscriptions (it stores none for a
topic without one, and deleting the last one removes the topic's messages),
so deleting its subscriptions is what frees it.

With --json:
  {"freedAnyway":{"files":[6],"bytes":16384},
   "actions":[{"action":"purge","target":{"destination":"queue://ActiveMQ.DLQ"},
               "frees":{"files":[2,3],"bytes":32768},
               "writes":{"bytes":4555,"records":20,"estimate":true},…},…],
   "combined":{"method":"greedy","actions":[0,1,…],"frees":{…},"writes":{…}},
   "pinned":{"files":[…],"bytes":…}}
sorted by bytes freed. Targets: purge {"destination"}, delete-subscription
{"destination","clientId","subscriptionName"}, commit and rollback
{"transaction"}. On an mKahaDB root or a broker data directory the answer
is per store: {"stores":[{"name":…,"kind":…,"actions":[…]}]} (a purge frees
files of the store that holds the destination).

The analysis flags are those of holders (--max-file-length, --running,
--no-index, the cache).`,
		Args: withUsage(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.profile.around(cmd, func() error { return runPlan(cmd, args[0], f) })
		},
	}
	cmd.Flags().BoolVar(&f.json, "json", false, "print JSON")
	f.analysis.add(cmd, replayFlags)
	f.profile.add(cmd)
	return cmd
}

func runPlan(cmd *cobra.Command, dir string, f planFlags) error {
	_, live := f.analysis.checkLive(cmd, dir)
	if live != "" && f.json {
		fmt.Fprintln(cmd.ErrOrStderr(), live)
	}
	l, err := store.Locate(dir)
	if err != nil {
		return err
	}
	if l.Kind == store.KindScheduler {
		return errors.New(dir + ": a job scheduler store: its files are kept by scheduled jobs, which no plan action removes (kahafs holders names them)")
	}
	a, err := analyse(l, cmd.ErrOrStderr(), f.analysis)
	if err != nil {
		return err
	}
	p, err := plan.Of(a)
	if err != nil {
		return err
	}
	out := bufio.NewWriter(cmd.OutOrStdout())
	switch doc := p.(type) {
	case plan.Doc:
		if f.json {
			err = doc.WriteJSON(out)
		} else {
			if live != "" {
				fmt.Fprintln(out, live)
			}
			fmt.Fprintln(out, maxFileLengthLine(a.MaxFileLength))
			err = doc.WriteText(out, safe)
		}
	case plan.LayoutDoc:
		if f.json {
			err = doc.WriteJSON(out)
		} else {
			err = writeLayoutPlan(out, a, doc)
		}
	}
	if ferr := out.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		return err
	}
	// warnings and damage as holders reports them
	return reportStores(cmd.ErrOrStderr(), a)
}

func writeLayoutPlan(w io.Writer, a *store.Analysis, doc plan.LayoutDoc) error {
	for i, s := range doc.Stores {
		c := a.Children[i]
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintln(w, storeHeading(c.Layout))
		if s.Doc == nil {
			fmt.Fprintln(w, safe(s.NotAnalysed))
			continue
		}
		fmt.Fprintln(w, maxFileLengthLine(c.MaxFileLength))
		if err := s.Doc.WriteText(w, safe); err != nil {
			return err
		}
	}
	if lines := doc.TransactionsText(); len(lines) > 0 {
		fmt.Fprintln(w)
		for _, l := range lines {
			fmt.Fprintln(w, safe(l))
		}
	}
	return nil
}
