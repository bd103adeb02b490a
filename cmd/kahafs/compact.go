package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log"

	"github.com/kahafs/kahafs/compact"
	"github.com/kahafs/kahafs/holders"
	"github.com/kahafs/kahafs/store"
	"github.com/spf13/cobra"
)

type compactFlags struct {
	dryRun       bool
	backup       string
	to           string
	analysis     analysisFlags
	json         bool
	force        bool
	noRedelivery bool
	profile      profileFlags
}

func newCompactCmd() *cobra.Command {
	var f compactFlags
	cmd := &cobra.Command{
		Use:   "compact STORE",
		Short: "Rewrite the live data of a stopped broker's store into fresh journal files",
		Long: `compact moves what a broker still needs from STORE — durable subscriptions,
pending messages (queue order and priorities kept), the acks that carve out each
subscription's pending set, prepared XA transactions — into fresh db-N.log files,
verifies that they replay to the same live state, swaps them in atomically and
keeps the original store as a backup. The index (db.data, db.redo) is not carried
over: the broker rebuilds it from the new journal at its next start.

The broker must be stopped: a store whose lock is held is refused, and kahafs
holds the lock while it works so that no broker starts mid-way. --dry-run
needs only read access and reads a running broker's store too (the report
names the broker's process).

Before writing, the space the new store needs (its journal files at their
preallocated length, journalMaxFileLength each, as the broker creates them;
the index the broker rebuilds, estimated as the original's db.data; the other
files) is compared with the free space of the file system it goes to: a
compaction that does not fit is refused with both figures. --to DIR writes it
to another file system instead and leaves STORE as it is. The report ends with
what to delete to get the space back, and how many bytes that frees.

Given a layout of several stores (a broker's data directory, an mKahaDB
directory), each KahaDB store is compacted in turn, as it would be alone;
the txStore and the job scheduler's store are skipped, said why.

STORE is analysed through the analysis cache, as by holders (--cache-dir,
--no-cache); a cache is used only when every data file has exactly the
identity it had, and the compacted journal is always verified by a full replay.`,
		Args: withUsage(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			bar := newProgressBar(cmd.ErrOrStderr())
			ao := f.analysis.options(bar)
			stopProfiles, err := f.profile.start()
			if err != nil {
				return err
			}
			opts := compact.Options{DryRun: f.dryRun, BackupDir: f.backup, To: f.to,
				MaxFileLength: ao.MaxFileLength, Force: f.force, NoRedelivery: f.noRedelivery, Cache: ao.Cache,
				Bytes: func(phase string, done, total int64) { bar.update(compactPhase(phase), done, total) }}
			if l, err := store.Locate(args[0]); err == nil && l.Multi() {
				lr, err := compact.CompactLayout(args[0], opts)
				bar.finish()
				stopProfiles(log.New(cmd.ErrOrStderr(), "kahafs: ", 0))
				if lr != nil {
					if werr := writeLayoutCompactReport(cmd, lr, f.json); err == nil {
						err = werr
					}
				}
				return err
			}
			rep, err := compact.Compact(args[0], opts)
			bar.finish()
			stopProfiles(log.New(cmd.ErrOrStderr(), "kahafs: ", 0))
			if err != nil {
				return err
			}
			warnMaxFileLength(cmd.ErrOrStderr(), rep.MaxFileLength)
			if f.json {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			writeCompactReport(cmd.OutOrStdout(), rep)
			return nil
		},
	}
	cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, "report what would be moved and written, writing nothing (needs only read access)")
	cmd.Flags().StringVar(&f.backup, "backup", "", "where to keep the original store (default STORE.backup-<time>, same file system)")
	cmd.Flags().StringVar(&f.to, "to", "", "write the compacted, verified store into this new or empty directory, on any file system, and leave STORE as it is (no swap; the report says how to put the result in place)")
	f.analysis.add(cmd, !replayFlags)
	cmd.Flags().BoolVar(&f.json, "json", false, "print the report as JSON")
	cmd.Flags().BoolVar(&f.force, "force", false, "compact a damaged store, dropping what the damage hides")
	cmd.Flags().BoolVar(&f.noRedelivery, "no-redelivery", false, "do not carry over a broker quirk: a durable subscription whose acks were processed out of order is handed acknowledged messages again (see the report's quirks)")
	f.profile.add(cmd)
	return cmd
}

// writeLayoutCompactReport prints the compaction of a layout store by
// store: as JSON {"layout":…,"stores":[{"name","kind","dir", the store's
// report…}]}, else each store's report under a heading.
func writeLayoutCompactReport(cmd *cobra.Command, lr *compact.LayoutReport, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		return enc.Encode(lr)
	}
	writeLayoutCompactText(cmd.OutOrStdout(), cmd.ErrOrStderr(), lr)
	return nil
}

// writeLayoutCompactText prints each store's report under a heading on w,
// the warnings about its journalMaxFileLength on warn.
func writeLayoutCompactText(w, warn io.Writer, lr *compact.LayoutReport) {
	for i, s := range lr.Stores {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintln(w, safe(fmt.Sprintf("== %s (%s)", s.Dir, s.Kind)))
		if s.Report == nil {
			fmt.Fprintln(w, safe("skipped: "+s.Skipped))
			continue
		}
		warnMaxFileLength(&prefixWriter{w: warn, prefix: safe(s.Dir) + ": "}, s.MaxFileLength)
		writeCompactReport(w, s.Report)
	}
}

// compactPhase labels the progress bar of a compaction's phase.
func compactPhase(phase string) string {
	switch phase {
	case "analyse":
		return "reading store"
	case "layout":
		return "laying out"
	case "write":
		return "writing"
	case "verify":
		return "verifying"
	}
	return phase
}

func writeCompactReport(w io.Writer, r *compact.Report) {
	title := "COMPACTION"
	if r.DryRun {
		title = "COMPACTION (dry run: nothing written)"
	}
	fmt.Fprintf(w, "%s of %s\n", title, r.Store)
	if r.BrokerPID != 0 {
		fmt.Fprintf(w, "- Broker running: process %d holds the store's lock; this dry run read the store as it is now (it changes while the broker runs); a compaction refuses the store until the broker is stopped.\n", r.BrokerPID)
	}
	if r.Resumed != "" {
		fmt.Fprintf(w, "- Interrupted run: %s.\n", r.Resumed)
	}
	fmt.Fprintf(w, "- Journals before: %d (%s).\n", r.Before.Files, sizeText(r.Before.Bytes))
	if m := r.MaxFileLength; m.Value > 0 {
		fmt.Fprintf(w, "- journalMaxFileLength: %d, %s.\n", m.Value, m.Text)
	}
	switch a := r.Analysis; a.Cache {
	case "hit":
		fmt.Fprintln(w, "- Analysis: from the analysis cache (no journal bytes read).")
	case "tail":
		fmt.Fprintf(w, "- Analysis: from the analysis cache and %s appended since.\n", sizeText(a.BytesRead))
	case "miss":
		fmt.Fprintf(w, "- Analysis: read the whole journal (cache: %s).\n", a.Reason)
	case "off":
		fmt.Fprintln(w, "- Analysis: read the whole journal.")
	}
	fmt.Fprintf(w, "- Journals after: %d (%s).\n", r.After.Files, sizeText(r.After.Bytes))
	m := r.Moved
	fmt.Fprintf(w, "- Subscriptions moved: %d.\n- Messages moved: %d.\n- Acks written: %d.\n", m.Subscriptions, m.Messages, m.Acks)
	fmt.Fprintf(w, "- Prepared transactions moved: %d (%d records).\n", m.Transactions, m.TransactionRecords)
	if m.EmptyDestinations > 0 {
		fmt.Fprintf(w, "- Empty destinations kept: %d.\n", m.EmptyDestinations)
	}
	if m.Placeholders > 0 {
		fmt.Fprintf(w, "- Placeholders written (and removed again): %d, keeping the subscriptions' counts and positions.\n", m.Placeholders)
	}
	if m.RemovedDestinations > 0 {
		fmt.Fprintf(w, "- Destinations removed again after the prepared transactions that add to them: %d (as in the original, where they were removed after those adds).\n", m.RemovedDestinations)
	}
	for _, q := range r.Quirks {
		fmt.Fprintf(w, "- QUIRK: %s\n", q)
	}
	for _, d := range r.Dropped {
		fmt.Fprintf(w, "- DROPPED (damage): %s\n", d)
	}
	for _, p := range r.Phases {
		fmt.Fprintf(w, "- %s took %.3f s.\n", p.Name, p.Seconds)
	}
	if r.RecordsPerSecond > 0 {
		fmt.Fprintf(w, "- Write speed: %.0f records/s.\n", r.RecordsPerSecond)
	}
	if r.Verified {
		fmt.Fprintln(w, "- Verified: the new journal replays to the same pending messages, subscriptions and prepared transactions.")
	}
	if r.Backup != "" {
		fmt.Fprintf(w, "- Original kept at: %s\n", r.Backup)
	}
	if r.To != "" && !r.DryRun {
		fmt.Fprintf(w, "- Compacted store written to: %s (the original is as it was).\n", r.To)
	}
	if s := r.Space; s != nil {
		kind := "at most "
		if s.Exact {
			kind = ""
		}
		need := fmt.Sprintf("%s: journal %s%s (files at their preallocated length), index the broker rebuilds ~%s, other %s", sizeText(s.Needed), kind, sizeText(s.Journal), sizeText(s.Index), sizeText(s.Other))
		fits := "fits"
		if s.Needed > s.Free {
			fits = fmt.Sprintf("DOES NOT FIT: %s missing (free space there, or --to DIR on another file system)", sizeText(s.Needed-s.Free))
		}
		fmt.Fprintf(w, "- Space: the new store needs %s; %s free on the file system of %s: %s.\n", need, sizeText(s.Free), s.Target, fits)
		if s.Reclaim != "" {
			fmt.Fprintf(w, "- To get the space back: %s. That frees %s.\n", s.Reclaim, sizeText(s.Frees))
		}
	}
	fmt.Fprintf(w, "- Total: %.3f s.\n", r.Seconds)
}

// sizeText is n bytes as the compaction report says them: "512 B",
// "1.50 KiB (1536)".
func sizeText(n int64) string {
	if n < 1024 {
		return holders.SizeText(n)
	}
	return fmt.Sprintf("%s (%d)", holders.SizeTextPrec(n, 2), n)
}
