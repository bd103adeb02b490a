package replaycache

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// loadSide is LoadSide of the store in dir with the cache in cdir, the
// length given.
func loadSideOf(t *testing.T, dir, cdir string, s setup) ([]byte, string, bool) {
	t.Helper()
	st, err := codec.OpenStore(dir)
	require.NoError(t, err)
	data, m, why, ok := LoadSide(st, s.opts(st), s.maxFile, codec.ReadOptions{}, Options{Dir: cdir}, "test-v1")
	if ok {
		assert.Equal(t, s.maxFile, m.Value)
	}
	return data, why, ok
}

// TestSideFile: a side file is saved with a cache file, read back while
// the cache would be hit, stale once a data file changes, not saved
// without a cache file, and pruned with its cache file.
func TestSideFile(t *testing.T) {
	dir := brokertest.AgedCopy(t, brokertest.Named(t, "queues").StoreDir)
	cdir := t.TempDir()
	s := setup{maxFile: 16384}
	st, err := codec.OpenStore(dir)
	require.NoError(t, err)

	_, why, ok := loadSideOf(t, dir, cdir, s)
	assert.False(t, ok)
	assert.Equal(t, "no side file", why)

	res := load(t, dir, cdir, s, nil)
	m := MaxFileLength{Value: s.maxFile, Source: FromFlag}
	assert.False(t, SaveSide(res, m, "bad.kind", []byte("x")), "a kind with a dot")
	require.True(t, SaveSide(res, m, "test-v1", []byte("answer")))
	data, why, ok := loadSideOf(t, dir, cdir, s)
	require.True(t, ok, why)
	assert.Equal(t, "answer", string(data))

	// another length: another cache file, no side file
	_, _, ok = loadSideOf(t, dir, cdir, setup{maxFile: 32768})
	assert.False(t, ok)

	// the cache off: nothing to go with
	off := load(t, dir, "", s, nil)
	assert.False(t, SaveSide(off, m, "test-v1", []byte("x")))

	// a data file changed: stale, whatever the side file says
	require.NoError(t, os.Chtimes(st.Files[0].Path, past.Add(1), past.Add(1)))
	_, why, ok = loadSideOf(t, dir, cdir, s)
	assert.False(t, ok)
	assert.Equal(t, st.Files[0].Name+" changed", why)

	// a hit rewrites nothing; a miss rewrites the cache file: the old
	// side file is stale until saved again
	res = load(t, dir, cdir, s, nil)
	require.Equal(t, Miss, res.Outcome)
	_, why, ok = loadSideOf(t, dir, cdir, s)
	assert.False(t, ok)
	assert.Equal(t, "cache file changed", why)
	require.True(t, SaveSide(res, m, "test-v1", []byte("again")))
	data, _, ok = loadSideOf(t, dir, cdir, s)
	require.True(t, ok)
	assert.Equal(t, "again", string(data))

	// pruned with its cache file
	sides, err := filepath.Glob(filepath.Join(cdir, "*.test-v1.kside"))
	require.NoError(t, err)
	require.Len(t, sides, 1)
	require.NoError(t, os.Remove(res.CacheFile))
	pruneSides(cdir)
	_, err = os.Stat(sides[0])
	assert.True(t, os.IsNotExist(err), "side file of a removed cache file kept")
}
