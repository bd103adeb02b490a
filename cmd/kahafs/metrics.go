package main

import (
	"bufio"
	"fmt"
	"strings"

	"github.com/kahafs/kahafs/metrics"
	"github.com/kahafs/kahafs/store"
	"github.com/spf13/cobra"
)

type metricsFlags struct {
	output     string
	compaction bool
	labels     []string
	analysis   analysisFlags
	profile    profileFlags
}

func newMetricsCmd() *cobra.Command {
	var f metricsFlags
	cmd := &cobra.Command{
		Use:   "metrics STORE",
		Short: "Write the store's numbers as Prometheus metrics (text format)",
		Long: `metrics analyses the store as holders does and writes its numbers in the
Prometheus text exposition format: the journal's files and bytes, what the
next cleanup keeps (pinned, in total, per kind of holder and per
destination) and frees, pending messages per destination and durable
subscription with the JMS timestamp of the first one (its age in PromQL:
time() - kahafs_destination_first_pending_message_timestamp_seconds),
prepared transactions and damage found.

--output FILE writes the file atomically (a temporary file in its
directory, synced and renamed), for node_exporter's textfile collector
(--collector.textfile.directory; the file's name must end in .prom).
Without it the metrics go to stdout.

--label NAME=VALUE (repeatable) adds a label to every metric, e.g.
--label store=broker-1 to tell a fleet of brokers apart. On an mKahaDB
root or a broker's data directory each store's metrics carry the label
store_dir, its directory relative to STORE.

--compaction adds kahafs_compaction_reclaimable_bytes, what an offline
compaction (kahafs compact) would give back: the data files' length now
minus that of the compacted journal, laid out exactly as compact --dry-run
does (negative where the compacted journal, preallocated whole files, is
longer). Working it out reads every record the compaction copies: on a
store of 2 GB with 800 k pending messages about half the time of reading
the whole journal, and each time the store changed (a running broker's
store changes every minute). It is worked out only with the analysis a
compaction makes (no --running, --no-index, --no-verify), and absent
where a compaction refuses the store (damage, a txStore).

With the analysis cache (see holders), a run on an unchanged store reads
no journal and analyses nothing: the metrics are kept next to the cached
analysis (a side file, valid exactly where the cache would be hit) and
only rendered again, with the --label values and the data files' disk
space of the run. Cheap enough to run every minute; a store that changed
is analysed again (reading only what was appended to it) and the
compaction's figure worked out again. Damage is a metric
(kahafs_damage_found), not an error: the exit status is 0 when the
metrics were written.`,
		Args: withUsage(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.profile.around(cmd, func() error { return runMetrics(cmd, args[0], f) })
		},
	}
	cmd.Flags().StringVarP(&f.output, "output", "o", "", "write the metrics to FILE atomically (default stdout)")
	cmd.Flags().StringArrayVar(&f.labels, "label", nil, "add the label NAME=VALUE to every metric (repeatable)")
	cmd.Flags().BoolVar(&f.compaction, "compaction", false, "also work out what an offline compaction frees (kahafs_compaction_reclaimable_bytes): reads the records a compaction copies")
	f.analysis.add(cmd, replayFlags)
	f.profile.add(cmd)
	return cmd
}

// parseLabels reads --label NAME=VALUE flags.
func parseLabels(cmd *cobra.Command, flags []string) (map[string]string, error) {
	labels := map[string]string{}
	for _, s := range flags {
		name, value, ok := strings.Cut(s, "=")
		if !ok {
			return nil, &usageError{cmd: cmd, err: fmt.Errorf("--label %q: want NAME=VALUE", s)}
		}
		if err := metrics.CheckLabel(name); err != nil {
			return nil, &usageError{cmd: cmd, err: fmt.Errorf("--label: %w", err)}
		}
		if _, dup := labels[name]; dup {
			return nil, &usageError{cmd: cmd, err: fmt.Errorf("--label %s given twice", name)}
		}
		labels[name] = value
	}
	return labels, nil
}

func runMetrics(cmd *cobra.Command, dir string, f metricsFlags) error {
	labels, err := parseLabels(cmd, f.labels)
	if err != nil {
		return err
	}
	f.analysis.checkLive(cmd, dir)
	l, err := store.Locate(dir)
	if err != nil {
		return err
	}
	w := cmd.ErrOrStderr()
	bar := newProgressBar(w)
	aopts := f.analysis.options(bar)
	aopts.Progress = bar.reading
	var runs []metrics.StoreRun
	snap, err := metrics.Load(l, metrics.LoadOptions{Analysis: aopts, Compaction: f.compaction,
		Done: func(r metrics.StoreRun) { runs = append(runs, r) }})
	bar.finish()
	if err != nil {
		return err
	}
	for _, r := range runs {
		if r.Analysis != nil && r.Analysis.Graph == nil {
			continue
		}
		pw := w
		if l.Multi() {
			pw = &prefixWriter{w: w, prefix: safe(r.Layout.Rel) + ": "}
		}
		if r.Cached {
			fmt.Fprintln(pw, "cache: hit (no journal bytes read; the metrics kept with the analysis)")
		} else if line := cacheLine(r.Analysis); line != "" {
			fmt.Fprintln(pw, line)
		}
		warnMaxFileLength(pw, r.MaxFileLength)
	}
	opts := metrics.Options{Labels: labels}
	if f.output != "" {
		return snap.WriteFile(f.output, opts)
	}
	out := bufio.NewWriter(cmd.OutOrStdout())
	if err := snap.Write(out, opts); err != nil {
		return err
	}
	return out.Flush()
}
