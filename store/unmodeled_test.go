package store

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/replaycache"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// schedulerFixture is the job scheduler store a real broker wrote
// (brokerkit SchedulerGen, testdata/scheduler/jobs).
func schedulerFixture(t *testing.T) string {
	return filepath.Join(brokertest.RepoRoot(), "testdata", "scheduler", "jobs", "store")
}

// firstScheduled is the first record of a job scheduler command in the
// journal of dir, read with the codec.
func firstScheduled(t *testing.T, dir string) (string, int64) {
	st, err := codec.OpenStore(dir)
	require.NoError(t, err)
	for _, fi := range st.Files {
		df, err := codec.OpenDataFile(fi.Path, fi.ID)
		require.NoError(t, err)
		r := codec.NewReader(df, codec.ReadOptions{})
		for {
			rec, err := r.Next()
			if err == io.EOF {
				break
			}
			require.NoError(t, err)
			if schedulerCommand(codec.EntryType(rec.Payload()[0])) {
				df.Close()
				return fi.Path, int64(rec.Loc.Offset)
			}
		}
		df.Close()
	}
	t.Fatalf("%s: no scheduler command", dir)
	return "", 0
}

// TestSchedulerStoreRefused: a real broker's job scheduler store is
// recognised (Kind, by its scheduleDB.data) and Open refuses it, naming
// the first scheduler command and the command types; without its index
// it is refused for its commands alone.
func TestSchedulerStoreRefused(t *testing.T) {
	dir := schedulerFixture(t)
	l, err := Locate(dir)
	require.NoError(t, err)
	assert.Equal(t, KindScheduler, l.Kind)
	assert.Equal(t, "scheduler", l.Kind.String())

	file, off := firstScheduled(t, dir)
	names := []string{"KAHA_ADD_SCHEDULED_JOB_COMMAND", "KAHA_RESCHEDULE_JOB_COMMAND",
		"KAHA_REMOVE_SCHEDULED_JOB_COMMAND", "KAHA_REMOVE_SCHEDULED_JOBS_COMMAND"}
	check := func(t *testing.T, dir string, a *Analysis, err error) {
		require.Error(t, err)
		assert.Nil(t, a, "no analysis, no prediction")
		assert.ErrorIs(t, err, ErrSchedulerStore)
		assert.ErrorIs(t, err, ErrUnmodeled)
		var ue *UnmodeledError
		require.ErrorAs(t, err, &ue)
		assert.Equal(t, filepath.Join(dir, filepath.Base(file)), ue.File)
		assert.Equal(t, off, ue.Offset)
		assert.Equal(t, names, ue.Names)
		assert.Contains(t, err.Error(), "job scheduler store")
		assert.Contains(t, err.Error(), filepath.Base(file)+": offset ")
		assert.Contains(t, err.Error(), "no cleanup prediction")
	}
	a, err := Open(dir, Options{})
	check(t, dir, a, err)

	// without scheduleDB.data: a KahaDB store to Locate, refused for its
	// commands after the replay (and on a cache hit too)
	cp := brokertest.CopyStore(t, dir)
	for _, f := range []string{"scheduleDB.data", "scheduleDB.redo", "scheduleDB.free"} {
		require.NoError(t, os.Remove(filepath.Join(cp, f)))
	}
	l, err = Locate(cp)
	require.NoError(t, err)
	assert.Equal(t, KindKahaDB, l.Kind)
	a, err = Open(cp, Options{})
	check(t, cp, a, err)
	cacheDir := t.TempDir()
	for i := 0; i < 2; i++ {
		a, err = Open(cp, Options{Cache: &replaycache.Options{Dir: cacheDir}})
		check(t, cp, a, err)
	}
}

// TestKahaDBStoresModeled: no bundled KahaDB fixture is refused.
func TestKahaDBStoresModeled(t *testing.T) {
	for _, fx := range brokertest.Fixtures(t) {
		l, err := Locate(fx.StoreDir)
		require.NoError(t, err)
		assert.Equal(t, KindKahaDB, l.Kind, fx.Name)
		assert.NoError(t, CheckModeled(l, codec.ReadOptions{}, func(int) bool { return true }), fx.Name)
	}
}
