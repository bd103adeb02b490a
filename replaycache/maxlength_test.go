package replaycache

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/refgraph"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func fixtureDir(t *testing.T, name string) string {
	t.Helper()
	for _, fx := range brokertest.Fixtures(t) {
		if fx.Name == name {
			return fx.StoreDir
		}
	}
	t.Fatalf("no fixture %q", name)
	return ""
}

func loadMFL(t *testing.T, dir string, given int64, co Options) (*Result, MaxFileLength) {
	t.Helper()
	st, err := codec.OpenStore(dir)
	require.NoError(t, err)
	res, m, err := LoadMaxFileLength(st, refgraph.StoreOptions(st, true, nil), given, codec.ReadOptions{}, co)
	require.NoError(t, err)
	return res, m
}

// TestLoadMaxFileLength: given, the length is used and checked against
// the store; not given, it is read off the store: exactly from
// preallocated files, as a lower bound from grown ones, the default from
// a store that does not tell.
func TestLoadMaxFileLength(t *testing.T) {
	off := Options{Disable: true}
	queues, tx := fixtureDir(t, "queues"), fixtureDir(t, "tx")

	_, m := loadMFL(t, queues, 0, off)
	assert.Equal(t, MaxFileLength{Value: 16384, Source: FromPreallocation, Exact: true,
		Text: "read off the store: db-2.log … db-10.log (9 files) are preallocated to 16384 bytes"}, m)
	_, m = loadMFL(t, queues, 16384, off)
	assert.Equal(t, MaxFileLength{Value: 16384, Source: FromFlag, Exact: true, Text: "given (--max-file-length)"}, m)
	_, m = loadMFL(t, queues, 32<<20, off)
	assert.Equal(t, int64(32<<20), m.Value)
	assert.False(t, m.Exact)
	assert.Equal(t, "--max-file-length 33554432 disagrees with the store: db-2.log … db-10.log (9 files) are preallocated to 16384 bytes, the journalMaxFileLength of the broker that wrote them; using 33554432 as given (leave the flag out to use the store's)", m.Warning)

	_, m = loadMFL(t, tx, 0, off)
	assert.Equal(t, int64(16290-27), m.Value)
	assert.Equal(t, FromLowerBound, m.Source)
	assert.False(t, m.Exact)
	assert.Contains(t, m.Text, "at least this")
	_, m = loadMFL(t, tx, 16384, off)
	assert.Empty(t, m.Warning, "16384 is consistent with the store")
	_, m = loadMFL(t, tx, 8192, off)
	assert.Contains(t, m.Warning, "--max-file-length 8192 is less than the store allows: the files are not preallocated and the data of db-3.log ends at 16290")

	// one file that grew: nothing to read off it
	one := brokertest.CopyStore(t, tx)
	for _, n := range []string{"db-2.log", "db-3.log", "db-4.log"} {
		require.NoError(t, os.Remove(filepath.Join(one, n)))
	}
	_, m = loadMFL(t, one, 0, Options{Disable: true})
	assert.Equal(t, int64(codec.DefaultMaxFileLength), m.Value)
	assert.Equal(t, FromDefault, m.Source)
}

// TestLoadMaxFileLengthAgain: when the file system's sizes mislead the
// guess, the store is analysed again with what its reading shows, and the
// graph is the one of that length.
func TestLoadMaxFileLengthAgain(t *testing.T) {
	dir := brokertest.CopyStore(t, fixtureDir(t, "tx"))
	st, err := codec.OpenStore(dir)
	require.NoError(t, err)
	var journal int64
	for _, f := range st.Files {
		journal += f.Size
	}
	// db-2.log gets zeros after its data up to 20000 bytes (as a broker
	// preallocating with zeros leaves it): the sizes say "grown, at least
	// 20000-32", the reading "preallocated to 20000".
	require.NoError(t, os.Truncate(filepath.Join(dir, "db-2.log"), 20000))
	res, m := loadMFL(t, dir, 0, Options{Disable: true})
	assert.Equal(t, int64(20000), m.Value)
	assert.Equal(t, FromPreallocation, m.Source)
	assert.Equal(t, 2*(journal+20000-st.Files[1].Size), res.BytesRead, "read twice")

	st2, err := codec.OpenStore(dir)
	require.NoError(t, err)
	o := refgraph.StoreOptions(st2, true, nil)
	o.MaxFileLength = 20000
	want, err := Load(st2, o, codec.ReadOptions{}, Options{Disable: true})
	require.NoError(t, err)
	assert.Equal(t, want.Graph.GCCandidates(), res.Graph.GCCandidates())
	assert.Equal(t, want.Graph.Summary(), res.Graph.Summary())

	// through the cache: the second analysis is a hit too
	brokertest.Age(t, dir)
	cdir := t.TempDir()
	loadMFL(t, dir, 0, Options{Dir: cdir})
	res, m = loadMFL(t, dir, 0, Options{Dir: cdir})
	assert.Equal(t, int64(20000), m.Value)
	assert.Equal(t, Hit, res.Outcome)
	assert.Zero(t, res.BytesRead)
}
