package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/kahafs/kahafs/holders"
	"github.com/kahafs/kahafs/store"
	"github.com/spf13/cobra"
)

type holdersFlags struct {
	json     bool
	dot      bool
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
A file kept by its acks ("acks") has "acksFor" (the ids of the files its
acks are for) and "chainStart" (the ids of the kept files its ack chains
start at: kept by something else than acks).

With --dot the output is the ack chain as a Graphviz digraph (dot -Tsvg):
a node per data file (name, length, pinned or free, the kinds of its
holders), an edge A -> B when acks in A are for messages in B (the broker
keeps A as long as it keeps B; solid when both are kept), the files that
start a chain in bold red. A layout of several stores gives a cluster per
store.

The analysis is kept in a cache outside the store (--cache-dir, default
$KAHAFS_CACHE_DIR or the user cache directory): a second run on an unchanged
store reads no journal, one on a store that grew reads only what was
appended. stderr says how the cache was used; --no-cache reads everything.

A broker's job scheduler store (the scheduler/ directory of a broker with
schedulerSupport="true": scheduleDB.data, db-N.log) has its own model: the
jobs' add and last reschedule records and the removes of jobs whose adds
still exist keep its files. Its report names the jobs that keep each file;
--json adds every job (destination, schedule, next run, message). A
scheduler journal that an earlier cleanup deleted files of is refused: its
index remembers what a replay of the files left cannot know.`,
		Args: withUsage(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.profile.around(cmd, func() error { return runHolders(cmd, args[0], f) })
		},
	}
	cmd.Flags().BoolVar(&f.json, "json", false, "print JSON")
	cmd.Flags().BoolVar(&f.dot, "dot", false, "print the ack chain as a Graphviz digraph")
	cmd.MarkFlagsMutuallyExclusive("json", "dot")
	f.analysis.add(cmd, replayFlags)
	f.profile.add(cmd)
	return cmd
}

// analyse analyses the store at dir as the flags say (store.Open), with a
// progress bar on w. How the cache was used, index problems (the broker
// then rebuilds its index by replaying the whole journal, and so does the
// replay) and what the store says against the journalMaxFileLength are
// reported on w.
func analyse(l *store.Layout, w io.Writer, f analysisFlags) (*store.Analysis, error) {
	bar := newProgressBar(w)
	opts := f.options(bar)
	opts.Progress = bar.reading
	a, err := store.Analyse(l, opts)
	bar.finish()
	if err != nil {
		return nil, err
	}
	for _, s := range storesOf(a) {
		if s.Graph == nil {
			continue
		}
		pw := w
		if a.Layout.Multi() {
			pw = &prefixWriter{w: w, prefix: safe(s.Layout.Rel) + ": "}
		}
		if line := cacheLine(s); line != "" {
			fmt.Fprintln(pw, line)
		}
		warnMaxFileLength(pw, s.MaxFileLength)
	}
	return a, nil
}

// storesOf are the analyses of the stores of a: a itself when it is one
// store, else its children.
func storesOf(a *store.Analysis) []*store.Analysis {
	if a.Layout.Multi() {
		return a.Children
	}
	return []*store.Analysis{a}
}

// prefixWriter writes each Write (one line, from Fprintln) with a prefix:
// what a command says of one store of a layout of several.
type prefixWriter struct {
	w      io.Writer
	prefix string
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	if _, err := io.WriteString(p.w, p.prefix); err != nil {
		return 0, err
	}
	return p.w.Write(b)
}

// storeHeading is the line that starts what a command prints of one store
// of a layout: "== queue://ORDERS.> (mKahaDB/queue#3a#2f#2fORDERS.#3e,
// kahadb)".
func storeHeading(l *store.Layout) string {
	return safe(fmt.Sprintf("== %s (%s, %s)", l.Title(), l.Rel, l.KindName()))
}

func runHolders(cmd *cobra.Command, dir string, f holdersFlags) error {
	pid, live := f.analysis.checkLive(cmd, dir)
	if live != "" && f.json {
		fmt.Fprintln(cmd.ErrOrStderr(), live)
	}
	l, err := store.Locate(dir)
	if err != nil {
		return err
	}
	if l.Kind == store.KindScheduler {
		// its own model, without the refusal's scan of the journal first
		return runSchedulerHolders(cmd, l, f)
	}
	a, err := analyse(l, cmd.ErrOrStderr(), f.analysis)
	if errors.Is(err, store.ErrSchedulerStore) && !f.dot {
		// scheduler commands in a journal without scheduleDB.data
		return runSchedulerHolders(cmd, l, f)
	}
	if err != nil {
		return err
	}
	if a.Layout.Multi() {
		return runLayoutHolders(cmd, a, f)
	}
	g := a.Graph
	out := bufio.NewWriter(cmd.OutOrStdout())
	doc := holders.Document(a.Journal().Dir, g, a.MaxFileLength)
	doc.BrokerPID, doc.Running = pid, f.analysis.running
	if f.json {
		err = doc.WriteJSON(out)
	} else if f.dot {
		err = doc.WriteDot(out)
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

// runSchedulerHolders is holders on a job scheduler store (package
// scheduler): its own model, its own report.
func runSchedulerHolders(cmd *cobra.Command, l *store.Layout, f holdersFlags) error {
	if f.dot {
		return fmt.Errorf("%s: a job scheduler store has no acks: --dot draws a KahaDB store's ack chain", l.Dir())
	}
	r, err := store.AnalyseScheduler(l, f.analysis.options(cmd.ErrOrStderr()))
	if err != nil {
		return err
	}
	out := bufio.NewWriter(cmd.OutOrStdout())
	if f.json {
		err = r.WriteJSON(out)
	} else {
		for _, line := range append(r.Header(), r.Table()...) {
			io.WriteString(out, safe(line)+"\n")
		}
	}
	if ferr := out.Flush(); err == nil {
		err = ferr
	}
	return err
}

// runLayoutHolders prints the holders of each store of a layout of several:
// as JSON {"stores":[{"name":…,"kind":…, the single-store document…}]},
// else each store's lines under a heading. An unmodelled store is said not
// analysed, with no prediction.
func runLayoutHolders(cmd *cobra.Command, a *store.Analysis, f holdersFlags) error {
	out := bufio.NewWriter(cmd.OutOrStdout())
	doc := holders.LayoutDoc{Stores: []holders.StoreDoc{}}
	for i, s := range a.Children {
		l := s.Layout
		sd := holders.StoreDoc{Name: l.Name, Kind: l.KindName(), Filter: l.Filter, NotAnalysed: s.NotAnalysed}
		sr := s.Scheduler
		switch {
		case s.Graph != nil:
			d := holders.Document(l.Dir(), s.Graph, s.MaxFileLength)
			sd.Doc = &d
		case sr != nil:
			// the scheduler's own model, shaped as holders of it alone
			var b bytes.Buffer
			if err := sr.WriteJSON(&b); err != nil {
				return err
			}
			sd.Scheduler = b.Bytes()
		}
		doc.Stores = append(doc.Stores, sd)
		if f.json || f.dot {
			continue
		}
		if i > 0 {
			fmt.Fprintln(out)
		}
		fmt.Fprintln(out, storeHeading(l))
		if sr != nil {
			for _, line := range append(sr.Header(), sr.Table()...) {
				fmt.Fprintln(out, safe(line))
			}
			continue
		}
		if sd.Doc == nil {
			fmt.Fprintln(out, safe(s.NotAnalysed))
			continue
		}
		fmt.Fprintln(out, maxFileLengthLine(s.MaxFileLength))
		writeHoldersText(out, *sd.Doc)
	}
	var err error
	if f.json {
		err = doc.WriteJSON(out)
	} else if f.dot {
		err = doc.WriteDot(out)
	}
	if ferr := out.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		return err
	}
	return reportStores(cmd.ErrOrStderr(), a)
}

// reportStores writes the warnings and the damage of a's stores to errw
// (each line led by the store's directory on a layout of several) and
// returns errDamaged when a store has damage.
func reportStores(errw io.Writer, a *store.Analysis) error {
	damaged := false
	for _, s := range storesOf(a) {
		if s.Graph == nil {
			continue
		}
		pw := errw
		if a.Layout.Multi() {
			pw = &prefixWriter{w: errw, prefix: safe(s.Layout.Rel) + ": "}
		}
		for _, w := range s.Graph.Warnings() {
			fmt.Fprintln(pw, "warning:", w)
		}
		if s.Graph.Damaged() {
			damaged = true
		}
		for _, file := range s.Graph.Files() {
			if reportDamage(pw, file.Damage) {
				damaged = true
			}
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
	for _, line := range doc.IndexDeletedLines() {
		io.WriteString(w, "warning: "+safe(line)+"\n")
	}
}
