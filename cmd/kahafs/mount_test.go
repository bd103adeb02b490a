package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/fsnode"
	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/internal/need"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func requireFUSE(t *testing.T) {
	t.Helper()
	need.FUSE(t, fsnode.CheckFUSE())
}

// buildKahafs builds the command into a temporary directory.
func buildKahafs(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "kahafs")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

func mounted(t *testing.T, dir string) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == dir {
			return true
		}
	}
	return false
}

// TestMountLifecycle runs `kahafs mount` as a process: it says "ready",
// serves the tree, re-reads the store on SIGHUP, unmounts on SIGTERM.
func TestMountLifecycle(t *testing.T) {
	requireFUSE(t)
	fx := brokertest.Named(t, "tx")
	store := brokertest.CopyStore(t, fx.StoreDir)
	mnt := filepath.Join(t.TempDir(), "mnt")
	require.NoError(t, os.Mkdir(mnt, 0o755))
	bin := buildKahafs(t)

	cmd := exec.Command(bin, "mount", "--max-file-length", "16384", store, mnt)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	exited := false
	t.Cleanup(func() {
		if !exited {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			_ = exec.Command("fusermount3", "-u", "-z", mnt).Run()
		}
	})
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	waitFor := func(prefix string) string {
		t.Helper()
		deadline := time.After(60 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				require.True(t, ok, "kahafs exited before printing %q", prefix)
				t.Logf("kahafs: %s", l)
				if strings.HasPrefix(l, prefix) {
					return l
				}
			case <-deadline:
				t.Fatalf("no %q from kahafs within 60s", prefix)
			}
		}
	}
	ready := waitFor("ready")
	assert.Contains(t, ready, mnt)
	assert.True(t, mounted(t, mnt))

	var sum struct {
		Snapshot uint64 `json:"snapshot"`
		Files    int    `json:"files"`
	}
	b, err := os.ReadFile(filepath.Join(mnt, "summary.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &sum))
	assert.Equal(t, uint64(1), sum.Snapshot)
	ents, err := os.ReadDir(filepath.Join(mnt, "by-transaction"))
	require.NoError(t, err)
	assert.NotEmpty(t, ents)

	// A new data file, then SIGHUP: the tree shows it.
	next := appendTraceFile(t, store)
	require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
	waitFor("refreshed: snapshot 2")
	_, err = os.Stat(filepath.Join(mnt, "by-file", codec.DataFileName(next), "0000000028-KAHA_TRACE_COMMAND.json"))
	assert.NoError(t, err)

	// Writes fail through the command's mount too.
	err = os.WriteFile(filepath.Join(mnt, "README"), []byte("x"), 0o644)
	assert.ErrorIs(t, err, syscall.EROFS)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	waitFor("unmounted")
	require.NoError(t, cmd.Wait())
	exited = true
	assert.False(t, mounted(t, mnt), "unmounted on SIGTERM")
}

func TestMountErrors(t *testing.T) {
	requireFUSE(t)
	fx := brokertest.Named(t, "queues")
	mnt := t.TempDir()

	_, stderr, code := runCLI(t, "mount", fx.StoreDir, filepath.Join(mnt, "missing"))
	assert.Equal(t, exitError, code)
	assert.Contains(t, stderr, "does not exist")

	_, stderr, code = runCLI(t, "mount", t.TempDir(), mnt)
	assert.Equal(t, exitError, code)
	assert.Contains(t, stderr, "not a KahaDB store")

	_, stderr, code = runCLI(t, "mount", filepath.Join(t.TempDir(), "nostore"), mnt)
	assert.Equal(t, exitError, code)
	assert.Contains(t, stderr, "no such file or directory")

	_, stderr, code = runCLI(t, "mount", fx.StoreDir)
	assert.Equal(t, exitError, code)
	assert.Contains(t, stderr, "accepts 2 arg")

	// Not empty: the mount would hide what is there.
	full := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(full, "notes.txt"), []byte("x"), 0o644))
	_, stderr, code = runCLI(t, "mount", fx.StoreDir, full)
	assert.Equal(t, exitError, code)
	assert.Contains(t, stderr, "mountpoint "+full+" is not empty (notes.txt): the mount would hide its contents; use an empty directory, or --nonempty")
	assert.NoError(t, checkEmpty(mnt), "an empty directory is fine")

	// Busy: something is mounted there already.
	fsys, err := fsnode.Open(fx.StoreDir, fsnode.Options{})
	require.NoError(t, err)
	require.NoError(t, fsys.Mount(mnt))
	defer func() { assert.NoError(t, fsys.Unmount()) }()
	_, stderr, code = runCLI(t, "mount", fx.StoreDir, mnt)
	assert.Equal(t, exitError, code)
	assert.Contains(t, stderr, "busy")
}

// TestMountAgreesWithHolders: pinned, free and every holders file of the
// mount say what `kahafs holders --json` says; each holders.json is that
// file's element of the "files" array.
func TestMountAgreesWithHolders(t *testing.T) {
	requireFUSE(t)
	c, _, err := newRootCmd().Find([]string{"holders"})
	require.NoError(t, err)
	require.Equal(t, "holders", c.Name(), "the holders command is registered")
	for _, fx := range brokertest.Fixtures(t) {
		t.Run(fx.Name, func(t *testing.T) {
			mfl := strconv.Itoa(fx.Expected.MaxFileLength)
			out, stderr, code := runCLI(t, "holders", "--json", "--max-file-length", mfl, fx.StoreDir)
			require.NotEqual(t, exitError, code, stderr)
			var doc struct {
				Files []json.RawMessage `json:"files"`
				GC    []int32           `json:"gcCandidates"`
			}
			require.NoError(t, json.Unmarshal([]byte(out), &doc))

			var opts fsnode.Options
			opts.MaxFileLength = int64(fx.Expected.MaxFileLength)
			fsys, err := fsnode.Open(fx.StoreDir, opts)
			require.NoError(t, err)
			mnt := t.TempDir()
			require.NoError(t, fsys.Mount(mnt))
			defer func() { assert.NoError(t, fsys.Unmount()) }()

			var pinned, free string
			for _, raw := range doc.Files {
				var f struct {
					Name   string `json:"name"`
					Pinned bool   `json:"pinned"`
				}
				require.NoError(t, json.Unmarshal(raw, &f))
				if f.Pinned {
					pinned += f.Name + "\n"
				} else {
					free += f.Name + "\n"
				}
				h, err := os.ReadFile(filepath.Join(mnt, "by-file", f.Name, "holders"))
				require.NoError(t, err)
				first, _, _ := strings.Cut(string(h), "\n")
				assert.Equal(t, f.Pinned, first == "pinned", "%s: %q", f.Name, first)
				b, err := os.ReadFile(filepath.Join(mnt, "by-file", f.Name, "holders.json"))
				require.NoError(t, err)
				assert.JSONEq(t, string(raw), string(b), f.Name)
			}
			var gc string
			for _, id := range doc.GC {
				gc += codec.DataFileName(id) + "\n"
			}
			p, err := os.ReadFile(filepath.Join(mnt, "pinned"))
			require.NoError(t, err)
			fr, err := os.ReadFile(filepath.Join(mnt, "free"))
			require.NoError(t, err)
			assert.Equal(t, pinned, string(p))
			assert.Equal(t, free, string(fr))
			assert.Equal(t, gc, string(fr), "free = gcCandidates")
		})
	}
}
