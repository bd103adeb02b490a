package compact

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCompactRefusesRunningMKahaDB: a real mKahaDB broker locks only
// mKahaDB/lock (its stores run without a lock of their own): a
// compaction of one of its stores, dry run or not, is refused while it
// runs, and nothing is changed.
func TestCompactRefusesRunningMKahaDB(t *testing.T) {
	fx := brokertest.LayoutFixtures(t)[0]
	data := brokertest.CopyTree(t, fx.DataDir)
	child := filepath.Join(data, "mKahaDB", "queue#3a#2f#2fORDERS.#3e")
	require.Equal(t, filepath.Join(data, "mKahaDB"), store.MKahaDBRoot(child))
	pid, release := brokertest.HoldLayout(t, data, fx.Expected.Mode)
	defer release()
	holder, err := LockHolder(child)
	require.NoError(t, err)
	assert.Zero(t, holder, "the broker does not lock the store's own lock file")
	before := hashDir(t, child)
	for _, dry := range []bool{true, false} {
		_, err := Compact(child, Options{DryRun: dry, MaxFileLength: int64(fx.Expected.MaxFileLength)})
		var le *LockedError
		require.ErrorAs(t, err, &le, "dry run %v", dry)
		assert.Equal(t, int32(pid), le.PID)
		assert.Contains(t, err.Error(), "is a store of the mKahaDB "+filepath.Join(data, "mKahaDB"))
	}
	after := hashDir(t, child)
	delete(before, "lock")
	delete(after, "lock")
	assert.Equal(t, before, after)
}

// TestCompactRefusesTxStore: an mKahaDB's transaction store is not
// compacted; a store of an mKahaDB is, as a store alone.
func TestCompactRefusesTxStore(t *testing.T) {
	fx := brokertest.LayoutFixtures(t)[0]
	data := brokertest.CopyTree(t, fx.DataDir)
	_, err := Compact(filepath.Join(data, "mKahaDB", "txStore"), Options{DryRun: true})
	require.ErrorIs(t, err, ErrNotCompactable)
	rep, err := Compact(filepath.Join(data, "mKahaDB", "queue#3a#2f#2fORDERS.#3e"), Options{DryRun: true, MaxFileLength: int64(fx.Expected.MaxFileLength)})
	require.NoError(t, err)
	assert.True(t, rep.DryRun)
}

// TestCompactMKahaDBStore: a store of an mKahaDB (one per destination) is
// compacted with its original kept outside the mKahaDB directory, where a
// broker with a per-destination filter would take it for a store of its
// own (every directory named queue#… or topic#); a real broker restarted
// on the directory then deletes what holders predicts for each store and
// recovers the same prepared transaction.
func TestCompactMKahaDBStore(t *testing.T) {
	brokertest.Require(t)
	var fx brokertest.LayoutFixture
	for _, f := range brokertest.LayoutFixtures(t) {
		if f.Expected.Mode == "perdest" {
			fx = f
		}
	}
	require.NotEmpty(t, fx.Name)
	data := brokertest.CopyTree(t, fx.DataDir)
	root := filepath.Join(data, "mKahaDB")
	child := filepath.Join(root, "queue#3a#2f#2fOTHER")
	before, err := store.Locate(root)
	require.NoError(t, err)
	rep, err := Compact(child, Options{MaxFileLength: int64(fx.Expected.MaxFileLength)})
	require.NoError(t, err)
	assert.True(t, rep.Verified)
	assert.True(t, strings.HasPrefix(rep.Backup, root+".backup-"), "backup beside the mKahaDB root: %s", rep.Backup)
	assert.Equal(t, "queue#3a#2f#2fOTHER", filepath.Base(rep.Backup))
	after, err := store.Locate(root)
	require.NoError(t, err)
	require.Len(t, after.Children, len(before.Children), "no new store in the mKahaDB directory")

	_, err = Compact(filepath.Join(root, "queue#3a#2f#2fPER.A"), Options{BackupDir: filepath.Join(root, "queue#3a#2f#2fPER.A.old")})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "per-destination filter")

	in := brokertest.InspectLayout(t, brokertest.CopyTree(t, data), fx.Expected.Mode)
	assert.Equal(t, fx.Expected.Inspect.Prepared, in.Prepared)
	a, err := store.Open(data, store.Options{MaxFileLength: int64(fx.Expected.MaxFileLength)})
	require.NoError(t, err)
	for _, c := range a.Children {
		if c.Graph == nil {
			continue
		}
		want := in.Stores[c.Layout.Rel].Deleted
		got := c.Graph.GCCandidates()
		if len(want) == 0 {
			assert.Empty(t, got, c.Layout.Rel)
		} else {
			assert.Equal(t, want, got, c.Layout.Rel)
		}
	}
}

// TestCompactLayout: a broker data directory compacted store by store:
// every KahaDB store compacted and verified, the txStore and the
// scheduler skipped, the originals beside the mKahaDB directory; a real
// broker restarted on the result recovers the same prepared transaction
// and deletes, store by store, what holders predicts.
func TestCompactLayout(t *testing.T) {
	brokertest.Require(t)
	fx := brokertest.LayoutFixtures(t)[0]
	data := brokertest.CopyTree(t, fx.DataDir)
	opts := Options{MaxFileLength: int64(fx.Expected.MaxFileLength)}
	dry, err := CompactLayout(data, Options{DryRun: true, MaxFileLength: opts.MaxFileLength})
	require.NoError(t, err)
	rep, err := CompactLayout(data, opts)
	require.NoError(t, err)
	require.Len(t, rep.Stores, len(dry.Stores))
	compacted := 0
	for i, s := range rep.Stores {
		assert.Equal(t, dry.Stores[i].Skipped, s.Skipped)
		switch s.Kind {
		case "txstore", "scheduler":
			assert.NotEmpty(t, s.Skipped, s.Dir)
			assert.Nil(t, s.Report)
			continue
		}
		require.NotNil(t, s.Report, s.Dir)
		assert.True(t, s.Verified, s.Dir)
		assert.Equal(t, dry.Stores[i].After, s.After, s.Dir)
		assert.True(t, strings.HasPrefix(s.Backup, filepath.Join(data, "mKahaDB")+".backup-"), s.Backup)
		compacted++
	}
	assert.Equal(t, 3, compacted)

	in := brokertest.InspectLayout(t, brokertest.CopyTree(t, data), fx.Expected.Mode)
	assert.Equal(t, fx.Expected.Inspect.Prepared, in.Prepared)
	a, err := store.Open(data, store.Options{MaxFileLength: int64(fx.Expected.MaxFileLength)})
	require.NoError(t, err)
	for _, c := range a.Children {
		if c.Graph == nil {
			continue
		}
		want := in.Stores[c.Layout.Rel].Deleted
		if got := c.Graph.GCCandidates(); len(want) == 0 {
			assert.Empty(t, got, c.Layout.Rel)
		} else {
			assert.Equal(t, want, got, c.Layout.Rel)
		}
	}
}
