package store

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/refgraph"
	"github.com/kahafs/kahafs/replaycache"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOpenDefaults: the zero Options analyse the store as a broker
// restarted on it, the length read off the store, the cache off; the
// graph is the one refgraph.Load builds from the same replay options.
func TestOpenDefaults(t *testing.T) {
	fx := brokertest.Named(t, "tx")
	a, err := Open(fx.StoreDir, Options{})
	require.NoError(t, err)
	assert.Equal(t, KindKahaDB, a.Layout.Kind)
	assert.Empty(t, a.Children)
	assert.Equal(t, fx.StoreDir, a.Journal().Dir)
	assert.Equal(t, replaycache.Off, a.Cache)
	assert.Empty(t, a.CacheReason)
	assert.Len(t, a.Files, len(a.Journal().Files))
	assert.NotZero(t, a.MaxFileLength.Value)
	assert.NotEqual(t, replaycache.FromFlag, a.MaxFileLength.Source)
	assert.NotZero(t, a.OpenWireVersion)

	ro := ReplayOptions(a.Layout, Options{MaxFileLength: a.MaxFileLength.Value})
	g, err := refgraph.Load(a.Journal(), ro, codec.ReadOptions{})
	require.NoError(t, err)
	assert.Equal(t, g.GCCandidates(), a.Graph.GCCandidates())

	given, err := Open(fx.StoreDir, Options{MaxFileLength: a.MaxFileLength.Value})
	require.NoError(t, err)
	assert.Equal(t, replaycache.FromFlag, given.MaxFileLength.Source)
	assert.Equal(t, a.Graph.GCCandidates(), given.Graph.GCCandidates())
}

// TestOpenCache: with a cache the second analysis of an unchanged store
// reads nothing.
func TestOpenCache(t *testing.T) {
	fx := brokertest.Named(t, "tx")
	dir := brokertest.AgedCopy(t, fx.StoreDir)
	cache := &replaycache.Options{Dir: t.TempDir()}
	first, err := Open(dir, Options{Cache: cache})
	require.NoError(t, err)
	assert.Equal(t, replaycache.Miss, first.Cache)
	assert.True(t, first.CacheSaved)
	second, err := Open(dir, Options{Cache: cache})
	require.NoError(t, err)
	require.Equal(t, replaycache.Hit, second.Cache, second.CacheReason)
	assert.Zero(t, second.BytesRead)
	assert.Equal(t, first.Graph.GCCandidates(), second.Graph.GCCandidates())
}

// TestLocateNotAStore: a directory with a store further below than a
// layout has it (<brokerName>/KahaDB) is not a store; the error says so
// and names the store below it.
func TestLocateNotAStore(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "broker"), 0o755))
	require.NoError(t, os.Rename(brokertest.CopyStore(t, brokertest.Named(t, "tx").StoreDir), filepath.Join(root, "broker", "KahaDB")))
	_, err := Open(root, Options{})
	require.ErrorIs(t, err, codec.ErrNotStore)
	assert.Contains(t, err.Error(), filepath.Join(root, "broker", "KahaDB"))

	_, err = Locate(t.TempDir())
	require.ErrorIs(t, err, codec.ErrNotStore)
}
