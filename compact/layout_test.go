package compact

import (
	"path/filepath"
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
