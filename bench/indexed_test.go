package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestIndexedByTheBroker: the bench has a real broker index a small
// generated store (brokerkit Inspect on a copy): the copy holds the
// broker's db.data and the data files its cleanup kept, the broker
// recovered what the generator left pending, the generated store is left
// as it was, and a second run takes the index from the cache. An index of
// another generator version or store is not taken.
func TestIndexedByTheBroker(t *testing.T) {
	brokertest.Require(t)
	root, err := repoRoot()
	require.NoError(t, err)
	cache := t.TempDir()
	cfg := smallConfig
	var log bytes.Buffer
	cs, err := ensureStore(root, cache, cfg, false, &log)
	require.NoError(t, err)
	is, err := ensureIndexed(root, cache, cs, "", false, &log)
	require.NoError(t, err, log.String())
	info := is.info
	t.Log(info.describe())
	assert.Equal(t, filepath.Join(cache, indexKey(cfg), "store"), is.store)

	st, err := os.Stat(filepath.Join(is.store, "db.data"))
	require.NoError(t, err, "the broker wrote an index")
	assert.Equal(t, st.Size(), info.IndexBytes)
	assert.Positive(t, info.IndexBytes)
	assert.Positive(t, info.Seconds)
	assert.Equal(t, "-Xmx1g", info.JavaOpts)
	assert.Equal(t, "same", info.Queues)
	assert.Equal(t, "same", info.Subscriptions)
	assert.Equal(t, "same", info.Prepared)
	assert.FileExists(t, filepath.Join(is.dir, "inspect.json"))

	l, err := store.Locate(is.store)
	require.NoError(t, err)
	assert.Len(t, l.Journal.Files, info.FilesAfter)
	assert.Equal(t, cs.man.Files, info.FilesAfter+len(info.Deleted), "every generated file is kept or deleted by the cleanup")
	for _, id := range info.Deleted {
		assert.NoFileExists(t, filepath.Join(is.store, codec.DataFileName(id)))
		assert.FileExists(t, filepath.Join(cs.store, codec.DataFileName(id)), "the generated store is not touched")
	}
	_, err = os.Stat(filepath.Join(cs.store, "db.data"))
	assert.True(t, os.IsNotExist(err), "the generated store has no index")

	log.Reset()
	again, err := ensureIndexed(root, cache, cs, "", false, &log)
	require.NoError(t, err)
	assert.Contains(t, log.String(), "using cached broker index")
	assert.Equal(t, info.Made, again.info.Made)
	assert.Equal(t, info.Deleted, again.info.Deleted)

	other := *cs.man
	other.Version = genVersion + 1
	assert.False(t, info.matches(&other), "another generator version")
	other = *cs.man
	other.Records++
	assert.False(t, info.matches(&other), "another store")
	assert.True(t, info.matches(cs.man))
}

func TestAutoJavaOpts(t *testing.T) {
	assert.Equal(t, "-Xmx1g", autoJavaOpts(256<<20))
	assert.Equal(t, "-Xmx3g", autoJavaOpts(2_499_893_334))
	assert.Equal(t, "-Xmx16g", autoJavaOpts(40e9))
}

func TestComparePaths(t *testing.T) {
	k := paths([]byte("b/2\na/1\n"), "")
	g := paths([]byte("/mnt/a/1\n/mnt/b/2\n"), "/mnt/")
	assert.Equal(t, "the same 2 paths as grep -r over the mount", comparePaths(k, g))
	g = paths([]byte("/mnt/a/1\n/mnt/c/3\n"), "/mnt/")
	assert.Equal(t, "PATHS DIFFER: kahafs grep 2, grep -r 2; 1 only in kahafs grep (first: b/2), 1 only in grep -r (first: c/3)", comparePaths(k, g))
}

// TestCPUTicks: a process that spins has CPU time, and it grows.
func TestCPUTicks(t *testing.T) {
	a := cpuTicks(os.Getpid())
	require.GreaterOrEqual(t, a, int64(0))
	grew := false
	for end := time.Now().Add(10 * time.Second); !grew && time.Now().Before(end); {
		grew = cpuTicks(os.Getpid()) > a
	}
	assert.True(t, grew, "no CPU time counted in 10 s of spinning")
	assert.Equal(t, int64(-1), cpuTicks(-1))
}
