package compact

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/internal/faults"
	"github.com/kahafs/kahafs/internal/need"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCompactFailingRename: a rename that fails before the exchange leaves
// the original in place and nothing else; one that fails after it leaves
// the compacted store in place, the original next to it, and a rerun
// finishes the job.
func TestCompactFailingRename(t *testing.T) {
	fx := brokertest.Fixtures(t)[0]
	_, og, err := load(fx.StoreDir, maxLen(fx))
	require.NoError(t, err)
	want := stateOf(og)
	boom := errors.New("injected rename failure")

	dir := brokertest.CopyStore(t, fx.StoreDir)
	orig := hashDir(t, dir)
	_, err = Compact(dir, Options{MaxFileLength: int64(maxLen(fx)), Now: fixedNow, fault: func(p string) error {
		if p == "exchange" {
			return boom
		}
		return nil
	}})
	require.ErrorIs(t, err, boom)
	assert.Equal(t, orig, hashDir(t, dir), "original untouched")
	ents, _ := os.ReadDir(filepath.Dir(dir))
	assert.Len(t, ents, 1, "the new store was removed")

	dir = brokertest.CopyStore(t, fx.StoreDir)
	_, err = Compact(dir, Options{MaxFileLength: int64(maxLen(fx)), Now: fixedNow, fault: func(p string) error {
		if p == "backup" {
			return boom
		}
		return nil
	}})
	require.ErrorIs(t, err, boom)
	assert.Contains(t, err.Error(), "rerun compact")
	assert.True(t, originalKept(t, filepath.Dir(dir), orig))
	_, g, err := load(dir, maxLen(fx))
	require.NoError(t, err)
	assert.Equal(t, want, stateOf(g))
	rep, err := Compact(dir, Options{MaxFileLength: int64(maxLen(fx)), Now: func() time.Time { return fixedNow().Add(time.Hour) }})
	require.NoError(t, err)
	assert.Contains(t, rep.Resumed, "finished an interrupted swap")
	_, err = os.Stat(dir + ".backup-20261129T120000Z")
	require.NoError(t, err, "the first run's backup name is used")
	assert.Equal(t, orig, hashDir(t, dir+".backup-20261129T120000Z"))
}

// TestCompactFailingSync: an fsync of the new journal that fails (it runs
// while the journal is verified) stops the compaction before the swap:
// the original stays in place and the new store is removed.
func TestCompactFailingSync(t *testing.T) {
	fx := brokertest.Fixtures(t)[0]
	dir := brokertest.CopyStore(t, fx.StoreDir)
	orig := hashDir(t, dir)
	boom := errors.New("injected fsync failure")
	var exchanged bool
	_, err := Compact(dir, Options{MaxFileLength: int64(maxLen(fx)), Now: fixedNow,
		crash: func(p string) { exchanged = exchanged || p == "exchanged" },
		fault: func(p string) error {
			if p == "sync" {
				return boom
			}
			return nil
		}})
	require.ErrorIs(t, err, boom)
	assert.Contains(t, err.Error(), "fsync")
	assert.False(t, exchanged, "no swap")
	assert.Equal(t, orig, hashDir(t, dir), "original untouched")
	ents, _ := os.ReadDir(filepath.Dir(dir))
	assert.Len(t, ents, 1, "the new store was removed")
}

// TestCompactENOSPC runs compaction on a store in a tmpfs too small for the
// new journal: the original stays intact and the error says why.
func TestCompactENOSPC(t *testing.T) {
	need.Root(t, "mount a small tmpfs")
	fx := brokertest.Fixtures(t)[0]
	src := brokertest.CopyStore(t, fx.StoreDir)
	var size int64
	ents, err := os.ReadDir(src)
	require.NoError(t, err)
	for _, e := range ents {
		info, err := e.Info()
		require.NoError(t, err)
		size += (info.Size() + 4095) / 4096 * 4096
	}
	mnt := t.TempDir()
	// Room for the original and a few pages: not for the new journal.
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+strconv.FormatInt(size+2*4096, 10), "tmpfs", mnt).CombinedOutput()
	if err != nil {
		need.Skip(t, "ENOSPC test cannot mount a tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", mnt).Run() })
	dir := filepath.Join(mnt, "store")
	require.NoError(t, faults.CopyDir(dir, src))
	orig := hashDir(t, dir)
	_, err = Compact(dir, Options{MaxFileLength: int64(maxLen(fx)), Now: fixedNow})
	require.Error(t, err)
	assert.True(t, errors.Is(err, syscall.ENOSPC), "error says the disk is full: %v", err)
	assert.Equal(t, orig, hashDir(t, dir))
	left, _ := os.ReadDir(mnt)
	assert.Len(t, left, 1, "nothing left next to the store")
}
