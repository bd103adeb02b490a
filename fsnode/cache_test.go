package fsnode

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/replaycache"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOpenFromCache: with Options.Cache a second Open of an unchanged
// store takes its snapshot from the cache, and the tree (through the
// kernel) is the one of a full reading; the store is not written.
func TestOpenFromCache(t *testing.T) {
	for _, fx := range brokertest.Fixtures(t) {
		t.Run(fx.Name, func(t *testing.T) {
			store := brokertest.AgedCopy(t, fx.StoreDir)
			before := storeState(t, store)
			opts := quietOpts(t)
			opts.MaxFileLength = int64(fx.Expected.MaxFileLength)
			_, plainMnt := mountStore(t, store, opts)
			want := treeFiles(t, plainMnt)

			opts.Cache = &replaycache.Options{Dir: t.TempDir()}
			first, err := Open(store, opts)
			require.NoError(t, err)
			assert.Equal(t, replaycache.Miss, first.Snapshot().Cache())
			fsys, mnt := mountStore(t, store, opts)
			assert.Equal(t, replaycache.Hit, fsys.Snapshot().Cache())
			assert.Equal(t, first.Snapshot().Commands(), fsys.Snapshot().Commands())
			assert.Equal(t, want, treeFiles(t, mnt))
			assert.Equal(t, before, storeState(t, store))
		})
	}
}

// treeFiles reads the per-file parts of a mounted tree that do not depend
// on the time of the reading.
func treeFiles(t *testing.T, mnt string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range []string{"pinned", "free"} {
		b, err := os.ReadFile(filepath.Join(mnt, p))
		require.NoError(t, err)
		out[p] = string(b)
	}
	// by-file: every command; by-transaction: every transaction (made
	// from the cache only when listed)
	var dirs []string
	for _, top := range []string{"by-file", "by-transaction"} {
		ents, err := os.ReadDir(filepath.Join(mnt, top))
		require.NoError(t, err)
		for _, e := range ents {
			dirs = append(dirs, filepath.Join(top, e.Name()))
		}
	}
	for _, name := range dirs {
		dir := filepath.Join(mnt, name)
		cmds, err := os.ReadDir(dir)
		require.NoError(t, err)
		for _, c := range cmds {
			if c.IsDir() { // a prepared transaction's in-doubt/
				out[name+"/"+c.Name()+"/"] = strings.Join(names(t, filepath.Join(dir, c.Name())), "\n")
				continue
			}
			b, err := os.ReadFile(filepath.Join(dir, c.Name()))
			require.NoError(t, err)
			out[name+"/"+c.Name()] = string(b)
		}
	}
	return out
}
