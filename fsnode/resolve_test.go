package fsnode

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// openFixture reads a fixture's store as the CLI does (no mount).
func openFixture(t *testing.T, fx brokertest.Fixture) *Snapshot {
	t.Helper()
	opts := quietOpts(t)
	opts.MaxFileLength = int64(fx.Expected.MaxFileLength)
	fsys, err := Open(fx.StoreDir, opts)
	require.NoError(t, err)
	return fsys.Snapshot()
}

// TestTreeWithoutFUSE mounts every real-broker fixture and walks the whole
// tree through the kernel and through the FUSE-free API of the same
// snapshot: every directory lists the same names in the same order (the
// kernel's readdir order, unsorted), each with the same kind and inode
// number, and every file holds the same bytes, of the size stat gives.
func TestTreeWithoutFUSE(t *testing.T) {
	start := time.Now()
	total := 0
	for _, fx := range brokertest.Fixtures(t) {
		t.Run(fx.Name, func(t *testing.T) {
			opts := quietOpts(t)
			opts.MaxFileLength = int64(fx.Expected.MaxFileLength)
			fsys, mnt := mountStore(t, fx.StoreDir, opts)
			dirs, files := compareTree(t, mnt, fsys.Snapshot(), "")
			assert.Greater(t, files, 20)
			total += files
			t.Logf("%d directories, %d files agree", dirs, files)
		})
	}
	t.Logf("%d files compared in %s", total, time.Since(start).Round(time.Millisecond))
}

// compareTree compares the directory p of the mount at mnt with s, and
// everything below it.
func compareTree(t *testing.T, mnt string, s *Snapshot, p string) (dirs, files int) {
	t.Helper()
	d, err := os.Open(filepath.Join(mnt, p))
	require.NoError(t, err)
	mounted, err := d.Readdirnames(-1) // directory order
	require.NoError(t, d.Close())
	require.NoError(t, err)
	ents, err := s.ReadDir(p)
	require.NoError(t, err, p)
	listed := []string{}
	for _, e := range ents {
		listed = append(listed, e.Name)
	}
	require.Equal(t, mounted, listed, "listing of %q", p)
	dirs++
	for _, e := range ents {
		q := path.Join(p, e.Name)
		info, err := os.Lstat(filepath.Join(mnt, q))
		require.NoError(t, err)
		require.Equal(t, info.IsDir(), e.Dir, q)
		require.Equal(t, info.Sys().(*syscall.Stat_t).Ino, e.Ino, "inode of %s", q)
		st, err := s.Stat(q)
		require.NoError(t, err)
		require.Equal(t, e, st, q)
		if e.Link != "" { // acks-for/, acked-by/
			target, err := os.Readlink(filepath.Join(mnt, q))
			require.NoError(t, err)
			require.Equal(t, target, e.Link, q)
			require.Equal(t, int64(len(target)), info.Size(), "size of %s", q)
			files++
			continue
		}
		if e.Dir {
			d, f := compareTree(t, mnt, s, q)
			dirs, files = dirs+d, files+f
			continue
		}
		want, err := os.ReadFile(filepath.Join(mnt, q))
		require.NoError(t, err)
		got, err := s.ReadFile(q)
		require.NoError(t, err)
		if !bytes.Equal(want, got) {
			require.Equal(t, string(want), string(got), "content of %s", q)
		}
		require.Equal(t, info.Size(), int64(len(got)), "size of %s", q)
		files++
	}
	return dirs, files
}

// TestResolveErrors: paths that are not in the tree say which name is
// missing in which directory; a file is not listed, a directory not read.
func TestResolveErrors(t *testing.T) {
	s := openFixture(t, brokertest.Named(t, "tx"))
	for _, p := range []string{"", ".", "/", "by-file/..", "/by-file/../"} {
		ents, err := s.ReadDir(p)
		require.NoError(t, err, p)
		assert.Equal(t, Entry{Name: "README", Ino: inoReadme}, ents[0], p)
	}
	st, err := s.Stat("/by-file//db-1.log/")
	require.NoError(t, err)
	assert.Equal(t, Entry{Name: "db-1.log", Dir: true, Ino: inoAt(kindDataDir, 1, 0)}, st)

	for _, c := range []struct{ path, err string }{
		{"nope", `ls nope: no such file or directory (the top of the tree has no "nope")`},
		{"by-file/db-99.log", `ls by-file/db-99.log: no such file or directory (by-file has no "db-99.log")`},
		{"by-file/db-1.log/0000000029-KAHA_TRACE_COMMAND.json", `(by-file/db-1.log has no "0000000029-KAHA_TRACE_COMMAND.json")`},
		// The right offset, the wrong type; a body of a command without one.
		{"by-file/db-1.log/0000000028-KAHA_ADD_MESSAGE_COMMAND.json", `has no "0000000028-KAHA_ADD_MESSAGE_COMMAND.json"`},
		{"by-file/db-1.log/0000000028-KAHA_TRACE_COMMAND.body", `has no "0000000028-KAHA_TRACE_COMMAND.body"`},
		{"by-destination/queue/Q.XA/pending/0000000001-ID:wrong.json", `pending has no`},
		{"by-destination/queue/Q.XA/pending/0000000009-ID:vm-35087-1795990416081-6:2:1:1:2.json", `pending has no`},
		{"README/x", `ls README/x: not a directory (README is a file)`},
	} {
		_, err := s.ReadDir(c.path)
		require.Error(t, err, c.path)
		assert.ErrorContains(t, err, c.err, c.path)
		assert.True(t, errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR), "%s: %v", c.path, err)
		_, err = s.ReadFile(c.path)
		assert.Error(t, err, c.path)
		_, err = s.Stat(c.path)
		assert.Error(t, err, c.path)
	}
	_, err = s.ReadDir("README")
	assert.ErrorIs(t, err, syscall.ENOTDIR)
	_, err = s.ReadFile("by-file")
	assert.ErrorIs(t, err, syscall.EISDIR)
	assert.EqualError(t, err, "cat by-file: is a directory")
	b, err := s.ReadFile("by-transaction/XID:[4660,globalId=67747269642d7072657061726564,branchId=62712d34]/state")
	require.NoError(t, err)
	assert.Equal(t, "prepared\n", string(b))
}

// TestFindMessageExample: the message of the README's example, added in a
// committed XA transaction and acked by a prepared one.
func TestFindMessageExample(t *testing.T) {
	s := openFixture(t, brokertest.Named(t, "tx"))
	const id = "ID:vm-35087-1795990416081-6:2:1:1:1"
	got, err := s.FindMessage(id, FindOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{
		"by-file/db-4.log/0000003526-KAHA_ADD_MESSAGE_COMMAND.json",
		"by-file/db-4.log/0000003526-KAHA_ADD_MESSAGE_COMMAND.body",
		"by-file/db-4.log/0000007670-KAHA_REMOVE_MESSAGE_COMMAND.json",
		"by-destination/queue/Q.XA/in-doubt/0000000001-ID:vm-35087-1795990416081-6:2:1:1:1.json",
		"by-destination/queue/Q.XA/in-doubt/0000000001-ID:vm-35087-1795990416081-6:2:1:1:1.body",
		"by-transaction/XID:[4660,globalId=67747269642d636f6d6d6974,branchId=62712d31]/0000000004-0000003526-KAHA_ADD_MESSAGE_COMMAND.json",
		"by-transaction/XID:[4660,globalId=67747269642d636f6d6d6974,branchId=62712d31]/0000000004-0000003526-KAHA_ADD_MESSAGE_COMMAND.body",
		"by-transaction/XID:[4660,globalId=67747269642d7072657061726564,branchId=62712d34]/0000000004-0000007670-KAHA_REMOVE_MESSAGE_COMMAND.json",
		"by-transaction/XID:[4660,globalId=67747269642d7072657061726564,branchId=62712d34]/in-doubt/0000000001-ID:vm-35087-1795990416081-6:2:1:1:1.json",
		"by-transaction/XID:[4660,globalId=67747269642d7072657061726564,branchId=62712d34]/in-doubt/0000000001-ID:vm-35087-1795990416081-6:2:1:1:1.body",
	}, got)
	_, err = s.FindMessage("ID:no-such-message", FindOptions{Scan: true})
	assert.ErrorIs(t, err, ErrNoMessage)
	assert.ErrorContains(t, err, "ID:no-such-message")
}

// TestFindMessageEveryPath: for every message id the tree shows, in every
// fixture, FindMessage with Scan returns exactly the files whose JSON
// names the message (a command's or a listed message's) and their .body
// files, as a walk that reads every file of the tree finds them; without
// Scan, a part of that with every listing (by-destination/, in-doubt/)
// in it.
func TestFindMessageEveryPath(t *testing.T) {
	for _, fx := range brokertest.Fixtures(t) {
		t.Run(fx.Name, func(t *testing.T) {
			s := openFixture(t, fx)
			want := map[string][]string{} // message id → paths
			var walk func(p string)
			walk = func(p string) {
				ents, err := s.ReadDir(p)
				require.NoError(t, err)
				for _, e := range ents {
					q := path.Join(p, e.Name)
					if e.Dir {
						walk(q)
						continue
					}
					if !strings.HasSuffix(q, suffixJSON) || e.Name == nameInfo || e.Name == nameStats || e.Name == nameHoldersJSON || q == nameSummary {
						continue
					}
					b, err := s.ReadFile(q)
					require.NoError(t, err)
					var cmd struct {
						ID string `json:"messageId"`
					}
					require.NoError(t, json.Unmarshal(b, &cmd), q)
					if cmd.ID == "" {
						continue
					}
					want[cmd.ID] = append(want[cmd.ID], q)
					if body := strings.TrimSuffix(q, suffixJSON) + suffixBody; statOK(s, body) {
						want[cmd.ID] = append(want[cmd.ID], body)
					}
				}
			}
			walk("")
			require.NotEmpty(t, want)
			for id, paths := range want {
				got, err := s.FindMessage(id, FindOptions{Scan: true})
				require.NoError(t, err, id)
				assert.ElementsMatch(t, paths, got, id)
				quick, err := s.FindMessage(id, FindOptions{})
				if err != nil {
					require.ErrorIs(t, err, ErrNoMessage)
				}
				assert.Subset(t, got, quick, id)
				for _, p := range got {
					if strings.HasPrefix(p, nameByDestination+"/") || strings.Contains(p, "/"+nameInDoubt+"/") {
						assert.Contains(t, quick, p, "%s: listings are found without a scan", id)
					}
				}
			}
			t.Logf("%d message ids", len(want))
		})
	}
}

func statOK(s *Snapshot, p string) bool {
	_, err := s.Stat(p)
	return err == nil
}

// BenchmarkFindMessage: find in a synthetic store of 200,000 commands,
// from the replay's indexes (no file rendered) and with a scan of the
// journal.
func BenchmarkFindMessage(b *testing.B) {
	dir := loadStore(b, 200000)
	fsys, err := Open(dir, Options{Logger: quietOpts(b).Logger})
	require.NoError(b, err)
	s := fsys.Snapshot()
	var id string
	for _, d := range s.Graph().Destinations() {
		if len(d.Messages) > 0 {
			id = d.Messages[len(d.Messages)/2].ID()
		}
	}
	require.NotEmpty(b, id)
	for _, scan := range []bool{false, true} {
		b.Run(map[bool]string{false: "indexes", true: "scan"}[scan], func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				paths, err := s.FindMessage(id, FindOptions{Scan: scan})
				require.NoError(b, err)
				require.NotEmpty(b, paths)
			}
		})
	}
}

// BenchmarkFindMessageStore: FindMessage on the store in
// $KAHAFS_FIND_STORE (skipped without it; e.g. the bench's 2.5 GB
// big-pending store): "first" is a lookup in a new snapshot (what
// builds lazily is built), "next" one more lookup of another id.
func BenchmarkFindMessageStore(b *testing.B) {
	dir := os.Getenv("KAHAFS_FIND_STORE")
	if dir == "" {
		b.Skip("KAHAFS_FIND_STORE not set")
	}
	var ids []string
	open := func() *Snapshot {
		fsys, err := Open(dir, Options{Logger: quietOpts(b).Logger})
		require.NoError(b, err)
		return fsys.Snapshot()
	}
	s := open()
	for _, d := range s.Graph().Destinations() {
		for _, k := range []int{0, len(d.Messages) / 2, len(d.Messages) - 1} {
			if k >= 0 && k < len(d.Messages) {
				ids = append(ids, d.Messages[k].ID())
			}
		}
	}
	require.NotEmpty(b, ids)
	b.Run("first", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			s := open()
			b.StartTimer()
			_, err := s.FindMessage(ids[i%len(ids)], FindOptions{})
			require.NoError(b, err)
		}
	})
	b.Run("next", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			_, err := s.FindMessage(ids[i%len(ids)], FindOptions{})
			require.NoError(b, err)
		}
	})
}
