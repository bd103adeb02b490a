package compact

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/replaycache"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCompactWithCache: a compaction analysed through the analysis cache
// moves what one without it moves, also when the store changed after the
// cache was written (a stale cache never drives a compaction).
func TestCompactWithCache(t *testing.T) {
	for _, fx := range brokertest.Fixtures(t) {
		t.Run(fx.Name, func(t *testing.T) {
			cdir := t.TempDir()
			var logged []string
			cache := &replaycache.Options{Dir: cdir, Logf: func(f string, a ...any) { logged = append(logged, f) }}
			opts := Options{MaxFileLength: int64(maxLen(fx)), Now: fixedNow, DryRun: true, Cache: cache}

			dir := brokertest.AgedCopy(t, fx.StoreDir)
			want, err := Compact(dir, Options{MaxFileLength: int64(maxLen(fx)), Now: fixedNow, DryRun: true})
			require.NoError(t, err)
			first, err := Compact(dir, opts) // writes the cache
			require.NoError(t, err)
			assert.Equal(t, want.Moved, first.Moved)
			assert.Equal(t, Analysis{Cache: "off", BytesRead: want.Before.Bytes}, want.Analysis)
			assert.Equal(t, Analysis{Cache: "miss", Reason: "no cache file", BytesRead: want.Before.Bytes}, first.Analysis)
			files, err := filepath.Glob(filepath.Join(cdir, "*.kcache"))
			require.NoError(t, err)
			require.Len(t, files, 1)
			written, err := os.Stat(files[0])
			require.NoError(t, err)
			second, err := Compact(dir, opts) // from the cache: a hit does not rewrite it
			require.NoError(t, err)
			assert.Equal(t, want.Moved, second.Moved)
			assert.Equal(t, Analysis{Cache: "hit"}, second.Analysis)
			again, err := os.Stat(files[0])
			require.NoError(t, err)
			assert.Equal(t, written.ModTime(), again.ModTime())

			// drop the first data file behind the cache's back: the
			// cache is not used, the result is that of the store as it is
			st, err := codec.OpenStore(dir)
			require.NoError(t, err)
			require.NoError(t, os.Remove(st.Files[0].Path))
			other := brokertest.AgedCopy(t, fx.StoreDir)
			require.NoError(t, os.Remove(filepath.Join(other, st.Files[0].Name)))
			opts.Force, opts.DryRun = true, false
			got, err := Compact(dir, opts)
			plain := opts
			plain.Cache = nil
			ref, rerr := Compact(other, plain)
			if rerr != nil {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "miss", got.Analysis.Cache, "a store changed behind the cache's back is read in full")
			assert.True(t, got.Verified)
			assert.Equal(t, ref.Moved, got.Moved)
			assert.Equal(t, ref.After, got.After)
			assert.Empty(t, logged)
		})
	}
}
