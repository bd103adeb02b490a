package main

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kahafs/kahafs/fsnode"
	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/internal/need"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTreeCLI: ls, cat and find on the tx fixture, with their mistakes
// (a path or a message id the tree does not have, a file listed as a
// directory, a directory read as a file): what they print and their exit
// status.
func TestTreeCLI(t *testing.T) {
	store := brokertest.Named(t, "tx").StoreDir
	const q = "by-destination/queue/Q.XA"
	const id = "ID:vm-35087-1795990416081-6:2:1:1:1"
	var all strings.Builder
	for _, args := range [][]string{
		{"ls", store},
		{"ls", store, "by-destination/queue"},
		{"ls", "-l", store, q},
		{"ls", store, q + "/in-doubt"},
		{"ls", "-l", store, "/by-file/db-4.log/../db-1.log/holders"},
		{"cat", store, "pinned", "by-file/db-1.log/holders"},
		{"cat", store, q + "/in-doubt/0000000001-" + id + ".body"},
		{"ls", "-l", store, "by-file/db-3.log/acks-for"},
		{"ls", "-l", store, "by-file/db-3.log/acks-for/db-2.log"},
		{"ls", store, "by-file/db-1.log/acked-by"},
		{"cat", store, "by-file/db-3.log/acks-for/db-2.log/acked-by/db-3.log/holders"},
		{"cat", store, "by-file/db-3.log/acks-for/db-2.log"},
		{"find", store, "--message-id", id},
		{"find", store, "--message-id", "ID:vm-35087-1795990416081-8:1:1:7:1", "--scan"},
		{"ls", store, "by-file/db-9.log"},
		{"ls", store, "pinned/x"},
		{"cat", store, q + "/pending/0000000009-" + id + ".json"},
		{"cat", store, "by-file"},
		{"find", store, "--message-id", "ID:no-such-message"},
		{"find", store, "--message-id", "ID:no-such-message", "--scan"},
		{"find", store},
		{"cat", store},
		{"ls"},
	} {
		out, stderr, code := runCLI(t, args...)
		all.WriteString("$ kahafs " + strings.Join(args, " ") + "\n" + out)
		if stderr != "" {
			all.WriteString("stderr: " + stderr + "\n")
		}
		all.WriteString("exit " + itoa(int32(code)) + "\n")
	}
	golden(t, "tree-cli", all.String(), store, "STORE")
}

// TestTreeCLIAgreesWithMount: what ls and cat print is what the mount
// lists and serves, for a sample of directories and all their files (the
// whole tree is compared in package fsnode, through the API ls and cat
// use). README and summary.json say when the store was read, which
// differs between two readings: they are left out.
func TestTreeCLIAgreesWithMount(t *testing.T) {
	requireFUSE(t)
	for _, name := range []string{"tx", "topics", "messages"} {
		t.Run(name, func(t *testing.T) {
			fx := brokertest.Named(t, name)
			mfl := itoa(int32(fx.Expected.MaxFileLength))
			var opts fsnode.Options
			opts.MaxFileLength = int64(fx.Expected.MaxFileLength)
			fsys, err := fsnode.Open(fx.StoreDir, opts)
			require.NoError(t, err)
			mnt := t.TempDir()
			require.NoError(t, fsys.Mount(mnt))
			defer func() { assert.NoError(t, fsys.Unmount()) }()

			dirs := []string{"", "by-file", "by-destination", "by-transaction"}
			for _, top := range []string{"by-file", "by-transaction"} {
				if ns := readDirOrder(t, filepath.Join(mnt, top)); len(ns) > 0 {
					dirs = append(dirs, path.Join(top, ns[0]))
				}
			}
			for _, typ := range []string{"queue", "topic"} {
				for _, d := range readDirOrder(t, filepath.Join(mnt, "by-destination", typ)) {
					dirs = append(dirs, path.Join("by-destination", typ, d), path.Join("by-destination", typ, d, "pending"))
				}
			}
			files := cliAgreesWithMount(t, mnt, []string{"--max-file-length", mfl, fx.StoreDir}, dirs)
			t.Logf("%d directories listed, %d files read alike", len(dirs), files)
			assert.Greater(t, files, 20)
		})
	}
}

// readDirOrder lists dir in the order the kernel gives (os.ReadDir
// sorts).
func readDirOrder(t *testing.T, dir string) []string {
	t.Helper()
	d, err := os.Open(dir)
	require.NoError(t, err)
	defer d.Close()
	names, err := d.Readdirnames(-1)
	require.NoError(t, err)
	return names
}

// TestMountWithoutDevFuseHint: a user who may not open /dev/fuse (the
// issue's case: fusermount3 fails with "failed to open /dev/fuse:
// Permission denied" and go-fuse reports only its exit code) is told what
// the mount needs and that ls, cat and find answer without it, and they
// do, as that user. Where /dev/fuse is open to everyone (Debian's 0666),
// the user runs in a mount namespace of its own in which /dev/fuse is a
// file only root may open: the rest of the machine is not touched.
func TestMountWithoutDevFuseHint(t *testing.T) {
	requireFUSE(t)
	need.Root(t, "run kahafs as another user")
	for _, tool := range []string{"unshare", "setpriv"} {
		if _, err := exec.LookPath(tool); err != nil {
			need.Skip(t, "%s (util-linux) is not in PATH: %v", tool, err)
		}
	}
	dir := t.TempDir()
	hidden := filepath.Join(t.TempDir(), "fuse")
	require.NoError(t, os.WriteFile(hidden, nil, 0o600))
	bin := filepath.Join(dir, "kahafs")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	store := filepath.Join(dir, "store")
	require.NoError(t, exec.Command("cp", "-r", brokertest.Named(t, "tx").StoreDir, store).Run())
	mnt := filepath.Join(dir, "mnt")
	require.NoError(t, os.Mkdir(mnt, 0o755))
	require.NoError(t, os.Chown(mnt, 65534, 65534))
	require.NoError(t, exec.Command("chmod", "-R", "a+rX", dir).Run())
	for p := dir; p != os.TempDir() && p != "/"; p = filepath.Dir(p) {
		require.NoError(t, os.Chmod(p, 0o755))
	}
	asNobody := func(args ...string) (string, error) {
		const script = `mount --bind "$0" /dev/fuse && exec setpriv --reuid 65534 --regid 65534 --clear-groups -- "$@"`
		cmd := exec.Command("unshare", append([]string{"--mount", "--propagation", "private", "sh", "-c", script, hidden, bin}, args...)...)
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	got, err := asNobody("mount", "--no-cache", store, mnt)
	require.Error(t, err, got)
	t.Logf("mount as nobody:\n%s", got)
	assert.False(t, mounted(t, mnt))
	assert.Contains(t, got, "FUSE is not available: ")
	assert.Contains(t, got, "hint: the mount needs /dev/fuse")
	assert.Contains(t, got, `"kahafs ls STORE [PATH]"`)

	got, err = asNobody("cat", "--no-cache", store, "pinned")
	require.NoError(t, err, got)
	assert.Equal(t, "db-1.log\ndb-2.log\ndb-3.log\ndb-4.log\n", got)
}

// TestTreeFlagsAreMounts: ls, cat and find take the flags that say how
// mount reads the store, each as mount declares it (name, default, help),
// so that they show the tree a mount with the same flags serves.
func TestTreeFlagsAreMounts(t *testing.T) {
	root := newRootCmd()
	find := func(name string) *cobra.Command {
		c, _, err := root.Find([]string{name})
		require.NoError(t, err)
		return c
	}
	mount := find("mount").Flags()
	reading := []string{"max-file-length", "running", "no-index", "no-verify", "cache-dir", "no-cache"}
	for _, name := range []string{"ls", "cat", "find"} {
		fl := find(name).Flags()
		for _, r := range reading {
			assert.NotNil(t, fl.Lookup(r), "%s --%s", name, r)
		}
		fl.VisitAll(func(f *pflag.Flag) {
			switch f.Name {
			case "long", "message-id", "scan", "help":
				return
			}
			m := mount.Lookup(f.Name)
			require.NotNil(t, m, "%s --%s: mount has no such flag", name, f.Name)
			assert.Equal(t, m.Usage, f.Usage, "%s --%s", name, f.Name)
			assert.Equal(t, m.DefValue, f.DefValue, "%s --%s", name, f.Name)
		})
	}
}

// cliAgreesWithMount checks that kahafs ls and cat (with args: flags and
// the store) list each of dirs as the mount at mnt does and serve its
// files byte for byte, and returns how many files it compared. README and
// summary.json say when the store was read, which differs between two
// readings: they are left out.
func cliAgreesWithMount(t *testing.T, mnt string, args []string, dirs []string) int {
	t.Helper()
	files := 0
	for _, dir := range dirs {
		names := readDirOrder(t, filepath.Join(mnt, dir))
		out, stderr, code := runCLI(t, append(append([]string{"ls"}, args...), dir)...)
		require.Equal(t, exitOK, code, stderr)
		var listing strings.Builder
		for _, n := range names {
			listing.WriteString(n + "\n")
		}
		assert.Equal(t, listing.String(), out, "ls %q", dir)

		cat := append([]string{"cat"}, args...)
		var want []byte
		for _, n := range names {
			p := path.Join(dir, n)
			info, err := os.Stat(filepath.Join(mnt, p))
			require.NoError(t, err)
			if info.IsDir() || n == "README" || n == "summary.json" {
				continue
			}
			b, err := os.ReadFile(filepath.Join(mnt, p))
			require.NoError(t, err)
			want = append(want, b...)
			cat = append(cat, p)
			files++
		}
		if len(cat) == 1+len(args) {
			continue
		}
		out, stderr, code = runCLI(t, cat...)
		require.Equal(t, exitOK, code, stderr)
		require.Equal(t, string(want), out, "cat of the files of %q", dir)
	}
	return files
}
