package fsnode

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/internal/need"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// treeModes walks the mounted tree and returns, for every path, its file
// type and permission bits, checking on the way that every node belongs
// to uid:gid.
func treeModes(t *testing.T, mnt string, uid, gid uint32) map[string]fs.FileMode {
	t.Helper()
	out := map[string]fs.FileMode{}
	err := filepath.WalkDir(mnt, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st := info.Sys().(*syscall.Stat_t)
		assert.Equal(t, uid, st.Uid, "owner of %s", p)
		assert.Equal(t, gid, st.Gid, "group of %s", p)
		rel, _ := filepath.Rel(mnt, p)
		out[rel] = info.Mode() & (fs.ModeType | fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
		return nil
	})
	require.NoError(t, err)
	return out
}

// TestModes: every directory of the tree is dr-xr-xr-x and every file
// -r--r--r--, owned by the mounting user, with or without AllowOther; a
// --rw mount adds `control`, -rw------- and nothing else changes.
func TestModes(t *testing.T) {
	dir, _ := synthStore(t, 1024)
	uid, gid := uint32(os.Getuid()), uint32(os.Getgid())
	var first map[string]fs.FileMode
	for _, c := range []struct {
		name  string
		allow bool
		rw    bool
	}{{"default", false, false}, {"allow-other", true, false}, {"rw", false, true}, {"rw+allow-other", true, true}} {
		t.Run(c.name, func(t *testing.T) {
			opts := quietOpts(t)
			opts.AllowOther = c.allow
			if c.rw {
				opts.Control = func([]string, func(string)) (string, bool, error) { return "", false, nil }
			}
			_, mnt := mountStore(t, dir, opts)
			modes := treeModes(t, mnt, uid, gid)
			dirs, files := 0, 0
			for p, m := range modes {
				switch {
				case p == nameControl:
					assert.Equal(t, fs.FileMode(0o600), m, p)
				case m.IsDir():
					assert.Equal(t, fs.ModeDir|0o555, m, p)
					dirs++
				default:
					assert.Equal(t, fs.FileMode(0o444), m, p)
					files++
				}
			}
			assert.Greater(t, dirs, 10)
			assert.Greater(t, files, 50)
			_, hasControl := modes[nameControl]
			assert.Equal(t, c.rw, hasControl)
			delete(modes, nameControl)
			if first == nil {
				first = modes
			} else {
				assert.Equal(t, first, modes, "the same modes as the default mount")
			}
		})
	}
}

// asUser runs a command as uid:gid 65534 (nobody) and returns its
// combined output and error.
func asUser(name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestOtherUsers complements TestAccess: with AllowOther another user can
// do what the modes say (read files, list directories) and nothing more
// (writes fail with EROFS); the control file of a --rw mount (mode 0600)
// is the mounting user's alone, even with AllowOther: another user can
// neither start a command nor read it.
func TestOtherUsers(t *testing.T) {
	need.Root(t, "run a process as another user")
	dir, _ := synthStore(t, 1024)
	before := storeState(t, dir)
	var runs atomic.Int32
	opts := quietOpts(t)
	opts.AllowOther = true
	opts.Control = func([]string, func(string)) (string, bool, error) {
		runs.Add(1)
		return "ran", false, nil
	}
	_, mnt := mountStore(t, dir, opts)
	for p := filepath.Dir(mnt); p != os.TempDir() && p != "/"; p = filepath.Dir(p) {
		require.NoError(t, os.Chmod(p, 0o755))
	}

	out, err := asUser("/bin/cat", filepath.Join(mnt, "README"))
	assert.NoError(t, err, out)
	assert.Contains(t, out, "escap")
	out, err = asUser("/bin/ls", filepath.Join(mnt, "by-file", "db-1.log"))
	assert.NoError(t, err, out)
	assert.Contains(t, out, "0000000028-KAHA_TRACE_COMMAND.json")
	// refused by the kernel's permission check (default_permissions: the
	// modes have no write bit) or the read-only mount
	out, err = asUser("/bin/sh", "-c", "echo x > "+filepath.Join(mnt, "README"))
	assert.Error(t, err)
	assert.Regexp(t, "Read-only file system|Permission denied", out)
	out, err = asUser("/bin/mkdir", filepath.Join(mnt, "by-file", "x"))
	assert.Error(t, err)
	assert.Regexp(t, "Read-only file system|Permission denied", out)

	control := filepath.Join(mnt, nameControl)
	out, err = asUser("/bin/sh", "-c", "echo compact > "+control)
	assert.Error(t, err)
	assert.Contains(t, out, "Permission denied")
	out, err = asUser("/bin/cat", control)
	assert.Error(t, err)
	assert.Contains(t, out, "Permission denied")
	out, err = asUser("/usr/bin/truncate", "-s", "0", control)
	assert.Error(t, err, out)
	assert.Zero(t, runs.Load(), "another user started a control command")

	// The mounting user can.
	require.NoError(t, os.WriteFile(control, []byte("compact --dry-run\n"), 0))
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(control)
		return err == nil && strings.Contains(string(b), "status: done")
	}, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, int32(1), runs.Load())
	assert.Equal(t, before, storeState(t, dir))
}

// storeFDs checks that every descriptor of this process open on a file
// under dir is open read-only, and returns how many there are.
func storeFDs(t testing.TB, dir string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	n := 0
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err != nil || !strings.HasPrefix(target, dir+"/") {
			continue // closed meanwhile, or not the store's
		}
		info, err := os.ReadFile(filepath.Join("/proc/self/fdinfo", e.Name()))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		require.NoError(t, err)
		for _, line := range strings.Split(string(info), "\n") {
			if v, ok := strings.CutPrefix(line, "flags:"); ok {
				flags, err := strconv.ParseUint(strings.TrimSpace(v), 8, 64)
				require.NoError(t, err, line)
				assert.Equal(t, uint64(syscall.O_RDONLY), flags&syscall.O_ACCMODE, "%s is open for writing (flags %o)", target, flags)
				n++
			}
		}
	}
	return n
}

// TestStorePermissions: the tree carries the owner, group and read bits
// of the store's own files, and the kernel enforces them: a store whose
// directory is 0700 and files 0600, mounted with AllowOther, is refused
// to another user (nobody) through the tree, message bodies, by-message-id/
// and the control file included, while its owner reads it; a store
// readable by all is readable by all through the tree.
func TestStorePermissions(t *testing.T) {
	need.Root(t, "run a process as another user")
	for _, c := range []struct {
		name            string
		dirMode, fMode  os.FileMode
		uid, gid        int
		wantDir, wantFi fs.FileMode
		nobodyReads     bool
	}{
		{"private", 0o700, 0o600, 0, 0, fs.ModeDir | 0o500, 0o400, false},
		{"group", 0o750, 0o640, 4321, 4322, fs.ModeDir | 0o550, 0o440, false},
		{"public", 0o755, 0o644, 4321, 4322, fs.ModeDir | 0o555, 0o444, true},
		{"files-public-dir-private", 0o700, 0o644, 0, 0, fs.ModeDir | 0o500, 0o400, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := brokertest.CopyStore(t, brokertest.Named(t, "queues").StoreDir)
			ents, err := os.ReadDir(dir)
			require.NoError(t, err)
			for _, e := range ents {
				p := filepath.Join(dir, e.Name())
				require.NoError(t, os.Chmod(p, c.fMode))
				require.NoError(t, os.Chown(p, c.uid, c.gid))
			}
			require.NoError(t, os.Chmod(dir, c.dirMode|os.ModeDir))
			require.NoError(t, os.Chown(dir, c.uid, c.gid))
			// the store's parent lets everyone through: only the store's
			// own modes decide
			require.NoError(t, os.Chmod(filepath.Dir(dir), 0o755))

			opts := quietOpts(t)
			opts.AllowOther = true
			opts.Control = func([]string, func(string)) (string, bool, error) { return "", false, nil }
			_, mnt := mountStore(t, dir, opts)
			for p := filepath.Dir(mnt); p != os.TempDir() && p != "/"; p = filepath.Dir(p) {
				require.NoError(t, os.Chmod(p, 0o755))
			}
			// root (the owner here, or root anyway) sees the tree
			modes := treeModes(t, mnt, uint32(c.uid), uint32(c.gid))
			bodies := []string{}
			for p, m := range modes {
				switch {
				case p == nameControl:
					assert.Equal(t, fs.FileMode(0o600), m, p)
				case m.IsDir():
					assert.Equal(t, c.wantDir, m, p)
				case m&fs.ModeSymlink != 0: // acks-for/, acked-by/
					assert.Equal(t, fs.ModeSymlink|0o777, m, p)
				default:
					assert.Equal(t, c.wantFi, m, p)
					if strings.HasSuffix(p, ".body") {
						bodies = append(bodies, p)
					}
				}
			}
			require.NotEmpty(t, bodies)
			var body string
			var b []byte
			for _, p := range bodies {
				got, err := os.ReadFile(filepath.Join(mnt, p))
				require.NoError(t, err)
				if len(got) > len(b) {
					body, b = filepath.Join(mnt, p), got
				}
			}
			require.NotEmpty(t, b, "a body with bytes")

			for _, args := range [][]string{
				{"/bin/cat", body},
				{"/bin/cat", filepath.Join(mnt, "README")},
				{"/bin/ls", filepath.Join(mnt, "by-message-id")},
				{"/bin/ls", mnt},
			} {
				out, err := asUser(args[0], args[1:]...)
				if c.nobodyReads {
					assert.NoError(t, err, "%v: %s", args, out)
				} else {
					assert.Error(t, err, "%v: %s", args, out)
					assert.Contains(t, out, "Permission denied", args)
				}
			}
			out, err := asUser("/bin/cat", filepath.Join(mnt, nameControl))
			assert.Error(t, err, out)
			assert.Contains(t, out, "Permission denied")
			if c.nobodyReads {
				out, err := asUser("/bin/cat", body)
				assert.NoError(t, err, out)
				assert.Equal(t, string(b), out)
			}
		})
	}
}
