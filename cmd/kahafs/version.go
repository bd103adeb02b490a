package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// versionText is what `kahafs --version` prints: the module version, the
// version control revision the binary was built from (and whether the
// work tree had uncommitted changes), when it was committed, and the Go
// release that built it. info is runtime/debug.ReadBuildInfo's.
func versionText(info *debug.BuildInfo, ok bool) string {
	if !ok || info == nil {
		return "kahafs (no build information: not built with module support)\n"
	}
	var b strings.Builder
	v := info.Main.Version
	if v == "" {
		v = "(devel)"
	}
	fmt.Fprintf(&b, "kahafs %s\n", v)
	set := map[string]string{}
	for _, s := range info.Settings {
		set[s.Key] = s.Value
	}
	if rev := set["vcs.revision"]; rev != "" {
		fmt.Fprintf(&b, "revision: %s", rev)
		if set["vcs.modified"] == "true" {
			b.WriteString(" (modified: built from a work tree with uncommitted changes)")
		}
		b.WriteString("\n")
		if t := set["vcs.time"]; t != "" {
			fmt.Fprintf(&b, "committed: %s\n", t)
		}
	} else {
		b.WriteString("revision: unknown (built without version control information: from a copy without .git, a git worktree, or with -buildvcs=false; README.md's install command builds with -buildvcs=true)\n")
	}
	goos, goarch := set["GOOS"], set["GOARCH"]
	if goos == "" {
		goos, goarch = runtime.GOOS, runtime.GOARCH
	}
	fmt.Fprintf(&b, "go: %s %s/%s\n", info.GoVersion, goos, goarch)
	return b.String()
}

// buildVersion is the text of this binary's --version.
func buildVersion() string { return versionText(debug.ReadBuildInfo()) }

// newGenManCmd writes the manual pages of kahafs and of each command
// (section 1) into a directory.
func newGenManCmd(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "gen-man DIR",
		Short: "Write the manual pages (kahafs.1, kahafs-holders.1, …) into DIR",
		Args:  withUsage(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			first, _, _ := strings.Cut(root.Version, "\n")
			header := &doc.GenManHeader{Title: "KAHAFS", Section: "1", Source: first, Manual: "kahafs manual"}
			if err := doc.GenManTree(root, header, dir); err != nil {
				return fmt.Errorf("manual pages in %s: %w", dir, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "manual pages written to %s (man -l %s/kahafs.1)\n", dir, dir)
			return nil
		},
	}
}
