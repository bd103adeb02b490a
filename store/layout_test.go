package store

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDecodeFilterName: the names 5.17.2's nameFromDestinationFilter gives
// (printed by the broker's own code) decode to their filters.
func TestDecodeFilterName(t *testing.T) {
	for name, want := range map[string]string{
		"queue#3a#2f#2fORDERS.#3e":    "queue://ORDERS.>",
		"topic#3a#2f#2fEVENTS.#3e":    "topic://EVENTS.>",
		"#210":                        "!0", // AnyDestination: the catch-all
		"queue#3a#2f#2fA#20B":         "queue://A B",
		"queue#3a#2f#2f#e9#4e2d#21x":  "queue://é中!x",
		"queue#3a#2f#2f#09":           "queue://\t",
		"queue#3a#2f#2fa#b#7ec":       "queue://a#b~c",
		"A#2ctopic#3a#2f#2fB":         "A,topic://B",
		"temp-queue#3a#2f#2fx":        "temp-queue://x",
		"queue#3a#2f#2f#d83d#de00":    "queue://\U0001F600",
		"txStore":                     "txStore",
		"queue#3a#2f#2fPER.A":         "queue://PER.A",
		"trailing#":                   "trailing#",
		"queue#3a#2f#2fx#4":           "queue://x#4",
		"CDEFGHIJKLMNOPQRSTUVWXYZab-": "CDEFGHIJKLMNOPQRSTUVWXYZab-",
	} {
		assert.Equal(t, want, DecodeFilterName(name), name)
	}
}

// TestLocateLayouts: a broker's data directory and an mKahaDB root are
// layouts of several stores; each child located alone is one store.
func TestLocateLayouts(t *testing.T) {
	fx := brokertest.LayoutFixtures(t)[0]
	require.Equal(t, "filtered", fx.Expected.Mode)
	data, err := Locate(fx.DataDir)
	require.NoError(t, err)
	assert.Equal(t, KindDataDir, data.Kind)
	assert.True(t, data.Multi())
	var rels, titles, kinds []string
	for _, c := range data.Children {
		rels = append(rels, c.Rel)
		titles = append(titles, c.Title())
		kinds = append(kinds, c.KindName())
		assert.False(t, c.Multi())
		assert.Equal(t, filepath.Join(fx.DataDir, c.Rel), c.Dir())
		assert.Equal(t, filepath.Base(c.Rel), c.Name)
	}
	assert.Equal(t, []string{"mKahaDB/#210", "mKahaDB/queue#3a#2f#2fORDERS.#3e", "mKahaDB/topic#3a#2f#2fEVENTS.#3e", "mKahaDB/txStore", "scheduler"}, rels)
	assert.Equal(t, []string{"catch-all", "queue://ORDERS.>", "topic://EVENTS.>", "txStore", "scheduler"}, titles)
	assert.Equal(t, []string{"kahadb", "kahadb", "kahadb", "txstore", "scheduler"}, kinds)
	assert.False(t, data.Children[4].Analysable(), "the KahaDB replay does not read the scheduler's store")
	assert.Equal(t, KindScheduler, data.Children[4].Kind)
	require.NotNil(t, data.Children[4].Journal, "the scheduler's own model reads its journal")

	root, err := Locate(filepath.Join(fx.DataDir, "mKahaDB"))
	require.NoError(t, err)
	assert.Equal(t, KindMKahaDB, root.Kind)
	require.Len(t, root.Children, 4)
	assert.Equal(t, "#210", root.Children[0].Rel)

	for _, c := range root.Children {
		one, err := Locate(c.Dir())
		require.NoError(t, err)
		assert.Equal(t, c.Kind, one.Kind, "alone, a store of an mKahaDB is of its kind")
		assert.Equal(t, c.Name, one.Name)
		assert.Equal(t, c.Filter, one.Filter)
		assert.Empty(t, one.Children)
	}

	err = data.SingleError("compaction")
	require.ErrorIs(t, err, ErrLayout)
	assert.Contains(t, err.Error(), filepath.Join(fx.DataDir, "mKahaDB", "txStore"))
	assert.NotContains(t, err.Error(), filepath.Join(fx.DataDir, "scheduler"))
	assert.NoError(t, root.Children[0].SingleError("compaction"))

	// A data directory with a plain kahadb/ store.
	dir := t.TempDir()
	require.NoError(t, os.Rename(brokertest.CopyStore(t, brokertest.Named(t, "tx").StoreDir), filepath.Join(dir, "kahadb")))
	plain, err := Locate(dir)
	require.NoError(t, err)
	assert.Equal(t, KindDataDir, plain.Kind)
	require.Len(t, plain.Children, 1)
	assert.Equal(t, "kahadb", plain.Children[0].Title())
}

// TestAnalyseLayout: each store of a layout is analysed as it is alone; the
// scheduler store is not analysed.
func TestAnalyseLayout(t *testing.T) {
	fx := brokertest.LayoutFixtures(t)[0]
	a, err := Open(fx.DataDir, Options{MaxFileLength: int64(fx.Expected.MaxFileLength)})
	require.NoError(t, err)
	assert.Nil(t, a.Graph)
	require.Len(t, a.Children, 5)
	for _, c := range a.Children {
		if !c.Layout.Analysable() {
			assert.Nil(t, c.Graph)
			require.Equal(t, KindScheduler, c.Layout.Kind)
			require.NotNil(t, c.Scheduler, c.NotAnalysed)
			assert.Empty(t, c.NotAnalysed)
			want := fx.Expected.Inspect.Stores[c.Layout.Rel].Deleted
			got := c.Scheduler.Prediction.Deleted
			if len(want) == 0 {
				assert.Empty(t, got, "the scheduler store's cleanup")
			} else {
				assert.Equal(t, want, got, "the scheduler store's cleanup")
			}
			continue
		}
		alone, err := Open(c.Layout.Dir(), Options{MaxFileLength: int64(fx.Expected.MaxFileLength)})
		require.NoError(t, err)
		assert.Equal(t, alone.Graph.GCCandidates(), c.Graph.GCCandidates(), c.Layout.Rel)
		want := fx.Expected.Inspect.Stores[c.Layout.Rel].Deleted
		if len(want) == 0 {
			assert.Empty(t, c.Graph.GCCandidates(), c.Layout.Rel)
		} else {
			assert.Equal(t, want, c.Graph.GCCandidates(), c.Layout.Rel)
		}
	}
}
