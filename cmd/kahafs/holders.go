package main

import (
	"bufio"
	"fmt"
	"io"
	"log"

	"github.com/kahafs/kahafs/holders"
	"github.com/kahafs/kahafs/store"
	"github.com/spf13/cobra"
)

type holdersFlags struct {
	json     bool
	analysis analysisFlags
	profile  profileFlags
}

func newHoldersCmd() *cobra.Command {
	var f holdersFlags
	cmd := &cobra.Command{
		Use:   "holders STORE",
		Short: "Explain why every data file is kept, and which files the next cleanup deletes",
		Long: `holders replays the journal the way ActiveMQ 5.17 does and prints, for every
data file (db-N.log), whether the broker's next cleanup deletes it ("free") or
keeps it ("pinned"), naming what holds it: pending messages of a destination,
a durable subscription, a transaction in progress, acks that refer to kept
files, the broker's write position.

The prediction is the first cleanup of a broker started on the store as it is
(index included); with --running, the next periodic cleanup of a broker that
is running on it now. When a process (a running broker) holds the store's
lock, the first line says so with its pid and the prediction is that
broker's next periodic cleanup unless --running=false is given. The
prediction depends on the broker's
journalMaxFileLength: --max-file-length gives it; without it, it is read
off the store (exactly when the data files are preallocated, the default,
else the least length the files allow), and the first line of the output
says which length was used and why. A --max-file-length that the files
contradict is warned about.

With --json the output is one JSON document:
  {"maxFileLength":{"value":16384,"source":"preallocated",…},
   "files":[{"id":7,"name":"db-7.log","pinned":true,"bytes":16384,"allocated":8192,
             "reasons":[{"kind":…}]}…],
   "gcCandidates":[…],
   "totals":{"all":{"files":…,"bytes":…,"allocated":…},"pinned":{…},"free":{…},
             "nextCleanupFrees":…}}
"pinned" is false exactly for the ids in gcCandidates. "bytes" is a file's
length, "allocated" the disk space it takes (less for a preallocated, sparse
file); nextCleanupFrees is the disk space the next cleanup gives back. The
text output gives each file's length after its name and ends with the totals.

The analysis is kept in a cache outside the store (--cache-dir, default
$KAHAFS_CACHE_DIR or the user cache directory): a second run on an unchanged
store reads no journal, one on a store that grew reads only what was
appended. stderr says how the cache was used; --no-cache reads everything.`,
		Args: withUsage(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			stop, err := f.profile.start()
			if err != nil {
				return err
			}
			defer stop(log.New(cmd.ErrOrStderr(), "kahafs: ", 0))
			return runHolders(cmd, args[0], f)
		},
	}
	cmd.Flags().BoolVar(&f.json, "json", false, "print JSON")
	f.analysis.add(cmd, replayFlags)
	f.profile.add(cmd)
	return cmd
}

// analyse analyses the store at dir as the flags say (store.Open), with a
// progress bar on w. How the cache was used, index problems (the broker
// then rebuilds its index by replaying the whole journal, and so does the
// replay) and what the store says against the journalMaxFileLength are
// reported on w.
func analyse(dir string, w io.Writer, f analysisFlags) (*store.Analysis, error) {
	bar := newProgressBar(w)
	opts := f.options(bar)
	opts.Progress = bar.reading
	a, err := store.Open(dir, opts)
	bar.finish()
	if err != nil {
		return nil, err
	}
	if line := cacheLine(a); line != "" {
		fmt.Fprintln(w, line)
	}
	warnMaxFileLength(w, a.MaxFileLength)
	return a, nil
}

func runHolders(cmd *cobra.Command, dir string, f holdersFlags) error {
	pid, live := f.analysis.checkLive(cmd, dir)
	if live != "" && f.json {
		fmt.Fprintln(cmd.ErrOrStderr(), live)
	}
	a, err := analyse(dir, cmd.ErrOrStderr(), f.analysis)
	if err != nil {
		return err
	}
	g := a.Graph
	out := bufio.NewWriter(cmd.OutOrStdout())
	doc := holders.Document(a.Journal().Dir, g, a.MaxFileLength)
	doc.BrokerPID, doc.Running = pid, f.analysis.running
	if f.json {
		err = doc.WriteJSON(out)
	} else {
		if live != "" {
			fmt.Fprintln(out, live)
		}
		fmt.Fprintln(out, maxFileLengthLine(a.MaxFileLength))
		writeHoldersText(out, doc)
	}
	if ferr := out.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		return err
	}
	for _, w := range g.Warnings() {
		fmt.Fprintln(cmd.ErrOrStderr(), "warning:", w)
	}
	damaged := g.Damaged()
	for _, file := range g.Files() {
		if reportDamage(cmd.ErrOrStderr(), file.Damage) {
			damaged = true
		}
	}
	if damaged {
		return errDamaged
	}
	return nil
}

// writeHoldersText prints one line per data file (holders.Doc.Table),
// escaped for a terminal.
func writeHoldersText(w io.Writer, doc holders.Doc) {
	for _, line := range doc.Table() {
		io.WriteString(w, safe(line)+"\n")
	}
	for _, line := range doc.TotalsLines() {
		io.WriteString(w, safe(line)+"\n")
	}
}
