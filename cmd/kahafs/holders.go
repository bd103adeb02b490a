package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"strings"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/refgraph"
	"github.com/kahafs/kahafs/replaycache"
	"github.com/spf13/cobra"
)

type holdersFlags struct {
	json          bool
	maxFileLength maxFileLengthFlag
	running       bool
	noIndex       bool
	noVerify      bool
	cache         cacheFlags
	profile       profileFlags
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
is running on it now. The prediction depends on the broker's
journalMaxFileLength: --max-file-length gives it; without it, it is read
off the store (exactly when the data files are preallocated, the default,
else the least length the files allow), and the first line of the output
says which length was used and why. A --max-file-length that the files
contradict is warned about.

With --json the output is one JSON document:
  {"maxFileLength":{"value":16384,"source":"preallocated",…},
   "files":[{"id":7,"name":"db-7.log","pinned":true,"reasons":[{"kind":…}]}…],
   "gcCandidates":[…]}
"pinned" is false exactly for the ids in gcCandidates.

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
	addMaxFileLengthFlag(cmd, &f.maxFileLength)
	cmd.Flags().BoolVar(&f.running, "running", false, "predict the next cleanup of a broker running on the store")
	cmd.Flags().BoolVar(&f.noIndex, "no-index", false, "ignore db.data (as a broker does whose index was deleted)")
	cmd.Flags().BoolVar(&f.noVerify, "no-verify", false, "do not verify batch checksums")
	f.cache.add(cmd)
	f.profile.add(cmd)
	return cmd
}

// loadGraph replays a store into a graph, with its index metadata unless
// told not to. Index problems are reported on w: the broker then rebuilds
// its index by replaying the whole journal, and so does the replay.
func loadGraph(dir string, w io.Writer, f holdersFlags) (*codec.Store, *refgraph.Graph, replaycache.MaxFileLength, error) {
	st, err := codec.OpenStore(dir)
	if err != nil {
		return nil, nil, replaycache.MaxFileLength{}, err
	}
	opts := refgraph.StoreOptions(st, !f.noIndex, func(err error) {
		fmt.Fprintf(w, "note: %v; a broker rebuilds such an index from the whole journal, and so does this replay\n", err)
	})
	opts.Running = f.running
	bar := newProgressBar(w)
	co := f.cache.options(bar)
	co.Progress = bar.reading
	res, mfl, err := replaycache.LoadMaxFileLength(st, opts, int64(f.maxFileLength), codec.ReadOptions{SkipChecksums: f.noVerify}, co)
	bar.finish()
	if err != nil {
		return nil, nil, mfl, err
	}
	if line := cacheLine(res); line != "" {
		fmt.Fprintln(w, line)
	}
	warnMaxFileLength(w, mfl)
	return st, res.Graph, mfl, nil
}

func runHolders(cmd *cobra.Command, dir string, f holdersFlags) error {
	st, g, mfl, err := loadGraph(dir, cmd.ErrOrStderr(), f)
	if err != nil {
		return err
	}
	out := bufio.NewWriter(cmd.OutOrStdout())
	if f.json {
		err = writeHoldersJSON(out, st, g, mfl)
	} else {
		fmt.Fprintln(out, maxFileLengthLine(mfl))
		writeHoldersText(out, g)
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

// holdersFile is one element of the JSON "files" array.
type holdersFile struct {
	ID       int32             `json:"id"`
	Name     string            `json:"name"`
	Pinned   bool              `json:"pinned"`
	Commands int               `json:"commands"`
	Reasons  []refgraph.Reason `json:"reasons"`
	Notes    []refgraph.Reason `json:"notes,omitempty"`
}

type holdersDoc struct {
	Store string `json:"store"`
	// MaxFileLength is the journalMaxFileLength the prediction assumed.
	MaxFileLength replaycache.MaxFileLength `json:"maxFileLength"`
	Files         []holdersFile             `json:"files"`
	GCCandidates  []int32                   `json:"gcCandidates"`
	LastUpdate    string                    `json:"lastUpdate,omitempty"`
	Warnings      []string                  `json:"warnings,omitempty"`
}

func holdersJSON(st *codec.Store, g *refgraph.Graph, mfl replaycache.MaxFileLength) holdersDoc {
	doc := holdersDoc{Store: st.Dir, MaxFileLength: mfl, Files: []holdersFile{}, GCCandidates: append([]int32{}, g.GCCandidates()...),
		Warnings: g.Warnings()}
	if s := g.Summary(); s.HasCleanupLastUpdate {
		doc.LastUpdate = s.CleanupLastUpdate.String()
	}
	for _, f := range g.Files() {
		hf := holdersFile{ID: f.ID, Name: f.Name, Pinned: f.Pinned, Commands: f.Commands,
			Reasons: f.Reasons, Notes: f.Notes}
		if hf.Reasons == nil {
			hf.Reasons = []refgraph.Reason{}
		}
		doc.Files = append(doc.Files, hf)
	}
	return doc
}

func writeHoldersJSON(w io.Writer, st *codec.Store, g *refgraph.Graph, mfl replaycache.MaxFileLength) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(holdersJSON(st, g, mfl))
}

// writeHoldersText prints one line per data file.
func writeHoldersText(w io.Writer, g *refgraph.Graph) {
	width := 0
	for _, f := range g.Files() {
		width = max(width, len(f.Name))
	}
	for _, f := range g.Files() {
		var sb strings.Builder
		fmt.Fprintf(&sb, "%-*s ", width, f.Name)
		if f.Pinned {
			sb.WriteString("pinned: ")
			for i, r := range f.Reasons {
				if i > 0 {
					sb.WriteString("; ")
				}
				sb.WriteString(r.Text)
			}
		} else {
			sb.WriteString("free: the broker deletes it at its next cleanup")
		}
		for _, n := range f.Notes {
			sb.WriteString(" (note: ")
			sb.WriteString(n.Text)
			sb.WriteString(")")
		}
		io.WriteString(w, safe(sb.String())+"\n")
	}
}
