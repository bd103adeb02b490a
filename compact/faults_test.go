package compact

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/internal/faults"
	"github.com/kahafs/kahafs/internal/need"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
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

// smallFS mounts a tmpfs of size bytes (root only; CI runs as root).
func smallFS(t *testing.T, size int64) string {
	t.Helper()
	need.Root(t, "mount a small tmpfs")
	mnt := t.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+strconv.FormatInt(size, 10), "tmpfs", mnt).CombinedOutput()
	if err != nil {
		need.Skip(t, "cannot mount a tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", mnt).Run() })
	return mnt
}

// fill takes all but leave bytes of the free space of the file system of
// dir (a file "filler" in dir).
func fill(t *testing.T, dir string, leave int64) {
	t.Helper()
	free, err := freeSpace(dir)
	require.NoError(t, err)
	f, err := os.Create(filepath.Join(dir, "filler"))
	require.NoError(t, err)
	defer f.Close()
	if n := free - leave; n > 0 {
		require.NoError(t, unix.Fallocate(int(f.Fd()), 0, 0, n))
	}
}

// storeSize is the disk space the files of a store take, in 4 KiB pages.
func storeSize(t *testing.T, dir string) int64 {
	var size int64
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range ents {
		info, err := e.Info()
		require.NoError(t, err)
		size += (info.Size() + 4095) / 4096 * 4096
	}
	return size
}

// TestCompactRefusedWithoutSpace: on a file system with less free space
// than the new store needs, the compaction is refused before it writes,
// with both figures and the options; the dry run shows the same figures.
func TestCompactRefusedWithoutSpace(t *testing.T) {
	fx := brokertest.Named(t, "queues")
	src := brokertest.CopyStore(t, fx.StoreDir)
	mnt := smallFS(t, storeSize(t, src)+64*4096)
	dir := filepath.Join(mnt, "store")
	require.NoError(t, faults.CopyDir(dir, src))
	fill(t, mnt, 40*1024)
	orig := hashDir(t, dir)
	dry, err := Compact(dir, Options{DryRun: true, Now: fixedNow})
	require.NoError(t, err)
	require.NotNil(t, dry.Space)
	assert.Greater(t, dry.Space.Needed, dry.Space.Free, "the dry run says it does not fit")
	assert.True(t, dry.Space.Exact)
	assert.Equal(t, dry.After.Bytes, dry.Space.Journal, "the journal at its preallocated length")
	assert.Equal(t, int64(3*16384), dry.Space.Journal, "three files of journalMaxFileLength")

	_, err = Compact(dir, Options{Now: fixedNow})
	require.ErrorIs(t, err, ErrNoSpace)
	msg := err.Error()
	assert.Contains(t, msg, "the compacted store needs "+strconv.FormatInt(dry.Space.Needed, 10)+" bytes on the file system of "+mnt)
	free, ferr := freeSpace(mnt)
	require.NoError(t, ferr)
	assert.Contains(t, msg, strconv.FormatInt(free, 10)+" bytes are free there")
	assert.Contains(t, msg, strconv.FormatInt(dry.Space.Needed-free, 10)+" bytes missing")
	assert.Contains(t, msg, "--to DIR")
	assert.Equal(t, orig, hashDir(t, dir))
	left, _ := os.ReadDir(mnt)
	assert.Len(t, left, 2, "nothing next to the store but the filler")
}

// TestCompactENOSPC: a file system that fills up after the space check
// (another writer), at each phase that writes: the marker, the journal,
// the files copied over. The original stays intact, what was written is
// removed, and the error says once that the disk is full, with the
// figures. Likewise into --to.
func TestCompactENOSPC(t *testing.T) {
	fx := brokertest.Named(t, "queues")
	src := brokertest.CopyStore(t, fx.StoreDir)
	for _, c := range []struct {
		name  string
		leave int64
		to    bool
	}{{"marker", 0, false}, {"journal", 8192, false}, {"journal-late", 24 * 1024, false}, {"to-journal", 4096, true}} {
		t.Run(c.name, func(t *testing.T) {
			mnt := smallFS(t, storeSize(t, src)+512*4096)
			dir := filepath.Join(mnt, "store")
			require.NoError(t, faults.CopyDir(dir, src))
			orig := hashDir(t, dir)
			to := ""
			if c.to {
				to = filepath.Join(mnt, "new")
			}
			_, err := Compact(dir, Options{Now: fixedNow, To: to, crash: func(p string) {
				if p == "checked" {
					fill(t, mnt, c.leave)
				}
			}})
			require.Error(t, err)
			assert.True(t, errors.Is(err, syscall.ENOSPC), "error says the disk is full: %v", err)
			msg := err.Error()
			assert.Equal(t, 1, strings.Count(msg, "no space left on device"), msg)
			assert.Equal(t, 1, strings.Count(msg, mnt+"/"), "the file named once: %s", msg)
			assert.Regexp(t, `the compacted store needed \d+ bytes on the file system of `, msg)
			assert.Regexp(t, `(\d+ bytes were missing|filled up while it wrote)`, msg)
			assert.Equal(t, orig, hashDir(t, dir))
			left, _ := os.ReadDir(mnt)
			names := []string{}
			for _, e := range left {
				names = append(names, e.Name())
			}
			assert.ElementsMatch(t, []string{"store", "filler"}, names, "nothing left next to the store")
		})
	}
}

// TestCompactToOtherFileSystem: the store's file system (a small tmpfs)
// has no room for the compacted store, so the compaction is refused
// there; --to a directory on another file system writes it, verified,
// leaving the original as it was; a real broker started on the result
// holds what it held on the original; the report says how to put it in
// place and what that frees.
func TestCompactToOtherFileSystem(t *testing.T) {
	brokertest.Require(t)
	fx := brokertest.Named(t, "topics")
	src := brokertest.CopyStore(t, fx.StoreDir)
	want := brokertest.Inspect(t, brokertest.CopyStore(t, fx.StoreDir), maxLen(fx))
	mnt := smallFS(t, storeSize(t, src)+64*4096)
	dir := filepath.Join(mnt, "store")
	require.NoError(t, faults.CopyDir(dir, src))
	fill(t, mnt, 16*1024)
	orig := hashDir(t, dir)
	mfl := int64(maxLen(fx))
	_, err := Compact(dir, Options{MaxFileLength: mfl, Now: fixedNow})
	require.ErrorIs(t, err, ErrNoSpace)

	to := filepath.Join(t.TempDir(), "compacted")
	require.False(t, sameDevice(mnt, filepath.Dir(to)), "another file system")
	rep, err := Compact(dir, Options{MaxFileLength: mfl, Now: fixedNow, To: to})
	require.NoError(t, err)
	assert.True(t, rep.Verified)
	assert.Equal(t, to, rep.To)
	assert.Empty(t, rep.Backup)
	assert.Equal(t, orig, hashDir(t, dir), "the original is as it was")
	require.NotNil(t, rep.Space)
	assert.Equal(t, filepath.Dir(to), rep.Space.Target)
	assert.Contains(t, rep.Space.Reclaim, "cp "+to+"/db-*.log "+dir+"/")
	assert.Positive(t, rep.Space.Frees)
	assert.Equal(t, storeUsage(dir)-diskUsage(to), rep.Space.Frees)
	_, err = os.Stat(filepath.Join(to, markerName))
	assert.ErrorIs(t, err, os.ErrNotExist, "no marker: nothing to finish")
	brokerAgrees(t, fx, want, to)

	// --to an existing directory that is not empty is refused
	_, err = Compact(dir, Options{MaxFileLength: mfl, Now: fixedNow, To: to})
	assert.ErrorContains(t, err, "is not empty")
	// in place on a roomy file system: the space line names the backup
	dir2 := brokertest.CopyStore(t, fx.StoreDir)
	rep, err = Compact(dir2, Options{MaxFileLength: mfl, Now: fixedNow})
	require.NoError(t, err)
	assert.Equal(t, diskUsage(rep.Backup), rep.Space.Frees)
	assert.Contains(t, rep.Space.Reclaim, "rm -r "+rep.Backup)
}

// TestCompactENOSPCFaults: "no space left on device" from the fsync of
// the new journal or while copying the store's other files (as some file
// systems report a full disk late) is said once with the figures, and
// leaves the original and nothing else, in place and with --to.
func TestCompactENOSPCFaults(t *testing.T) {
	fx := brokertest.Named(t, "queues")
	for _, point := range []string{"sync", "extras"} {
		for _, to := range []bool{false, true} {
			t.Run(point+"/to="+strconv.FormatBool(to), func(t *testing.T) {
				dir := brokertest.CopyStore(t, fx.StoreDir)
				orig := hashDir(t, dir)
				var target string
				if to {
					target = filepath.Join(t.TempDir(), "new")
				}
				_, err := Compact(dir, Options{Now: fixedNow, To: target, fault: func(p string) error {
					if p == point {
						return &os.PathError{Op: "write", Path: filepath.Join(dir, "x"), Err: syscall.ENOSPC}
					}
					return nil
				}})
				require.ErrorIs(t, err, syscall.ENOSPC)
				msg := err.Error()
				assert.Equal(t, 1, strings.Count(msg, "no space left on device"), msg)
				assert.Regexp(t, `the compacted store needed \d+ bytes on the file system of `, msg)
				assert.Equal(t, orig, hashDir(t, dir))
				ents, _ := os.ReadDir(filepath.Dir(dir))
				assert.Len(t, ents, 1, "nothing next to the store")
				if to {
					_, err := os.Stat(target)
					assert.ErrorIs(t, err, os.ErrNotExist, "--to's directory removed")
				}
			})
		}
	}
}
