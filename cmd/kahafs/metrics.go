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
	output   string
	labels   []string
	analysis analysisFlags
	profile  profileFlags
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

With the analysis cache (see holders), a run on an unchanged store reads
no journal: cheap enough to run every minute. Damage is a metric
(kahafs_damage_found), not an error: the exit status is 0 when the
metrics were written.`,
		Args: withUsage(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.profile.around(cmd, func() error { return runMetrics(cmd, args[0], f) })
		},
	}
	cmd.Flags().StringVarP(&f.output, "output", "o", "", "write the metrics to FILE atomically (default stdout)")
	cmd.Flags().StringArrayVar(&f.labels, "label", nil, "add the label NAME=VALUE to every metric (repeatable)")
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
	snap, err := metrics.Load(l, aopts, func(r metrics.StoreRun) { runs = append(runs, r) })
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
