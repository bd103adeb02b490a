package kahaindex

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func schedulerDirs(t testing.TB) []string {
	d, err := filepath.Glob(filepath.Join(brokertest.RepoRoot(), "testdata", "scheduler", "*", "store"))
	require.NoError(t, err)
	require.NotEmpty(t, d)
	return d
}

// TestReadScheduler: the job scheduler indexes real brokers wrote read
// whole (every job in a file of the store, reference counts positive);
// a KahaDB index is not one (ErrSchedulerToken), a missing one is fresh.
func TestReadScheduler(t *testing.T) {
	for _, dir := range schedulerDirs(t) {
		ix, fresh, err := ReadScheduler(dir)
		require.NoError(t, err, dir)
		require.False(t, fresh)
		assert.Equal(t, int32(1), ix.Version)
		require.NotNil(t, ix.LastUpdate)
		require.Len(t, ix.Schedulers, 1)
		assert.Equal(t, "JMS", ix.Schedulers[0].Name)
		n := 0
		for i, tm := range ix.Schedulers[0].Times {
			for _, j := range ix.Schedulers[0].Jobs[i] {
				n++
				assert.Equal(t, tm, j.NextTime)
				_, err := os.Stat(filepath.Join(dir, "db-"+strconv.Itoa(int(j.Location.File))+".log"))
				assert.NoError(t, err, j.ID)
				assert.Positive(t, ix.JournalRC[j.Location.File], j.ID)
			}
		}
		assert.Positive(t, n, dir)
		for f, v := range ix.JournalRC {
			assert.Positive(t, v, f)
		}
	}
	fx := brokertest.Named(t, "tx")
	data, err := os.ReadFile(filepath.Join(fx.StoreDir, "db.data"))
	require.NoError(t, err)
	_, _, err = ParseScheduler(data, nil, nil)
	assert.True(t, errors.Is(err, ErrSchedulerToken), "%v", err)
	_, fresh, err := ReadScheduler(t.TempDir())
	assert.NoError(t, err)
	assert.True(t, fresh)
}

// FuzzReadScheduler: any scheduleDB.data, .redo and .free read without
// panic, hang or unbounded allocation.
func FuzzReadScheduler(f *testing.F) {
	for _, dir := range schedulerDirs(f) {
		data, _ := os.ReadFile(filepath.Join(dir, "scheduleDB.data"))
		redo, _ := os.ReadFile(filepath.Join(dir, "scheduleDB.redo"))
		free, _ := os.ReadFile(filepath.Join(dir, "scheduleDB.free"))
		f.Add(data, redo, free)
	}
	f.Fuzz(func(t *testing.T, data, redo, free []byte) {
		ix, fresh, err := ParseScheduler(data, redo, free)
		if err != nil || fresh {
			return
		}
		for _, s := range ix.Schedulers {
			if len(s.Times) != len(s.Jobs) {
				t.Fatalf("scheduler %s: %d times, %d lists", s.Name, len(s.Times), len(s.Jobs))
			}
		}
	})
}

// TestReadSchedulerDamaged: the fixtures' indexes with bytes overwritten
// all over and cut at every page read without panic: an error, or a
// whole index.
func TestReadSchedulerDamaged(t *testing.T) {
	for _, dir := range schedulerDirs(t) {
		data, err := os.ReadFile(filepath.Join(dir, "scheduleDB.data"))
		require.NoError(t, err)
		redo, _ := os.ReadFile(filepath.Join(dir, "scheduleDB.redo"))
		for off := 0; off < len(data); off += 97 {
			for _, v := range []byte{0x00, 0x7f, 0xff} {
				b := append([]byte(nil), data...)
				b[off] = v
				ix, fresh, err := ParseScheduler(b, redo, nil)
				if err == nil && !fresh {
					require.NotNil(t, ix)
				}
			}
		}
		for n := 0; n < len(data); n += 1024 {
			_, _, _ = ParseScheduler(data[:n], redo, nil)
		}
	}
}
