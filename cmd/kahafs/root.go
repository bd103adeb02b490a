package main

import (
	"fmt"
	"io"

	"github.com/kahafs/kahafs/codec"
	"github.com/spf13/cobra"
)

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "kahafs",
		Short: "Explain and browse ActiveMQ KahaDB stores",
		Long: `kahafs reads an ActiveMQ KahaDB store directory (db-N.log, db.data, lock)
and tells what is in its journal and why its data files are kept.

Exit status: 0 clean, 1 error, 2 the store has damage (reported on stderr);
kahafs grep's are grep's: 0 a file matched, 1 none did, 2 trouble.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       buildVersion(),
	}
	root.SetVersionTemplate("{{.Version}}")
	root.SetFlagErrorFunc(flagUsageError)
	root.AddCommand(newDumpCmd(), newStatsCmd(), newCompactCmd(), newMountCmd(), newHoldersCmd())
	root.AddCommand(newLsCmd(), newCatCmd(), newFindCmd(), newGrepCmd(), newMetricsCmd(), newPlanCmd())
	root.AddCommand(newGenManCmd(root))
	return root
}

// reportDamage prints damage to w, one line each, and reports whether any of
// it is more than a torn tail.
func reportDamage(w io.Writer, damage []*codec.CorruptionError) bool {
	bad := false
	for _, d := range damage {
		kind := "damage"
		if codec.IsTail(d) {
			kind = "note: torn tail (unfinished write; the broker ignores it)"
		} else {
			bad = true
		}
		fmt.Fprintf(w, "%s: %v\n", kind, d)
	}
	return bad
}
