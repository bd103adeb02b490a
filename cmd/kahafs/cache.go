package main

import (
	"fmt"
	"io"

	"github.com/kahafs/kahafs/replaycache"
	"github.com/kahafs/kahafs/store"
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

// options are the cache options, nil with --no-cache (store.Options.Cache);
// problems with the cache are reported on w (cacheWarnings).
func (c *cacheFlags) options(w io.Writer) *replaycache.Options {
	if c.off {
		return nil
	}
	return &replaycache.Options{Dir: c.dir, Logf: cacheWarnings(w)}
}

// cacheWarnings reports a problem with the analysis cache (one that never
// fails a command: the store is read instead) as one line on w, the same
// from every command: "warning: cache: not saved: …".
func cacheWarnings(w io.Writer) func(format string, args ...any) {
	return func(format string, args ...any) {
		fmt.Fprintf(w, "warning: "+format+"\n", args...)
	}
}

// cacheLine says in a few words how an analysis used the cache ("" when
// the cache was off).
func cacheLine(a *store.Analysis) string {
	switch a.Cache {
	case replaycache.Hit:
		return "cache: hit (no journal bytes read)"
	case replaycache.Tail:
		return fmt.Sprintf("cache: tail (read %s appended since the cache was written)", progressSize(a.BytesRead))
	case replaycache.Miss:
		s := "cache: miss (" + a.CacheReason + ")"
		if a.CacheSaved {
			s += "; saved"
		}
		return s
	}
	return ""
}
