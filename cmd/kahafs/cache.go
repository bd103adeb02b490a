package main

import (
	"fmt"
	"io"

	"github.com/kahafs/kahafs/replaycache"
	"github.com/spf13/cobra"
)

// cacheFlags are the analysis-cache flags of holders, mount and compact.
type cacheFlags struct {
	dir string
	off bool
}

func (c *cacheFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&c.dir, "cache-dir", "", "directory of the analysis cache (default $"+replaycache.EnvDir+", else the user cache directory's kahafs/)")
	cmd.Flags().BoolVar(&c.off, "no-cache", false, "read the whole store; neither use nor write the analysis cache")
}

// options are the cache options; problems with the cache are logged on w.
func (c *cacheFlags) options(w io.Writer) replaycache.Options {
	return replaycache.Options{Dir: c.dir, Disable: c.off, Logf: func(format string, args ...any) {
		fmt.Fprintf(w, format+"\n", args...)
	}}
}

// cacheLine says in a few words how a reading used the cache ("" when the
// cache was off).
func cacheLine(res *replaycache.Result) string {
	switch res.Outcome {
	case replaycache.Hit:
		return "cache: hit (no journal bytes read)"
	case replaycache.Tail:
		return fmt.Sprintf("cache: tail (read %s appended since the cache was written)", progressSize(res.BytesRead))
	case replaycache.Miss:
		s := "cache: miss (" + res.Reason + ")"
		if res.Saved {
			s += "; saved"
		}
		return s
	}
	return ""
}
