package fsnode

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestByMessageID: on every fixture, for every message the store holds,
// by-message-id/ID (looked up through the kernel) holds the paths
// FindMessage gives, each of which exists, and the message's record and
// body as by-file/ serves them; by-message-id/ lists only its README, and
// an id no path shows is not there.
func TestByMessageID(t *testing.T) {
	checked := 0
	for _, fx := range brokertest.Fixtures(t) {
		t.Run(fx.Name, func(t *testing.T) {
			opts := quietOpts(t)
			opts.MaxFileLength = int64(fx.Expected.MaxFileLength)
			fsys, mnt := mountStore(t, fx.StoreDir, opts)
			s := fsys.Snapshot()
			top := filepath.Join(mnt, nameByMessageID)
			names, err := os.ReadDir(top)
			require.NoError(t, err)
			require.Len(t, names, 1)
			assert.Equal(t, nameReadme, names[0].Name())
			_, err = os.Stat(filepath.Join(top, "ID:kahafs-no-such-message:1:1:1:1"))
			assert.True(t, errors.Is(err, fs.ErrNotExist), "%v", err)
			for _, d := range s.graph.Destinations() {
				for i := range d.Messages {
					m := &d.Messages[i]
					if m.Unreadable {
						continue
					}
					id := m.ID()
					want, err := s.FindMessage(id, FindOptions{})
					require.NoError(t, err)
					dir := filepath.Join(top, EscapeName(id))
					got, err := os.ReadFile(filepath.Join(dir, nameMessagePaths))
					require.NoError(t, err, id)
					assert.Equal(t, strings.Join(want, "\n")+"\n", string(got), id)
					for _, p := range want {
						_, err := os.Stat(filepath.Join(mnt, p))
						assert.NoError(t, err, "%s: %s", id, p)
					}
					rec, err := os.ReadFile(filepath.Join(dir, nameMessageJSON))
					require.NoError(t, err, id)
					byFile, err := s.ReadFile(pathOfCommand(t, s, want, m.Loc.Offset))
					require.NoError(t, err, id)
					assert.Equal(t, string(byFile), string(rec), id)
					checked++
				}
			}
		})
	}
	assert.Greater(t, checked, 100)
	t.Logf("%d messages found by id through the mount", checked)
}

// pathOfCommand is the by-file/ path among paths of the command at offset.
func pathOfCommand(t *testing.T, s *Snapshot, paths []string, offset int32) string {
	t.Helper()
	for _, p := range paths {
		if loc, ok := locOfPath(p); ok && loc == offset && strings.HasSuffix(p, suffixJSON) {
			return p
		}
	}
	t.Fatalf("no by-file path at offset %d in %v", offset, paths)
	return ""
}

func locOfPath(p string) (int32, bool) {
	parts := strings.Split(p, "/")
	if len(parts) != 3 || parts[0] != nameByFile {
		return 0, false
	}
	off, _, ok := strings.Cut(parts[2], "-")
	if !ok {
		return 0, false
	}
	var o int32
	for _, c := range off {
		if c < '0' || c > '9' {
			return 0, false
		}
		o = o*10 + int32(c-'0')
	}
	return o, true
}

// TestMountIndexesAhead: a mounted snapshot makes its index of messages by
// id without waiting for a lookup, and a refreshed one too; the tree
// without FUSE makes it at its first lookup only.
func TestMountIndexesAhead(t *testing.T) {
	fx := brokertest.Fixtures(t)[0]
	opts := quietOpts(t)
	opts.MaxFileLength = int64(fx.Expected.MaxFileLength)
	unmounted, err := Open(fx.StoreDir, opts)
	require.NoError(t, err)
	fsys, _ := mountStore(t, fx.StoreDir, opts)
	require.Eventually(t, func() bool { return fsys.Snapshot().ids.made.Load() }, 30*time.Second, 5*time.Millisecond,
		"the mounted snapshot's index of messages by id was not made ahead")
	before := fsys.Snapshot()
	refreshed, err := fsys.Refresh(true)
	require.NoError(t, err)
	require.True(t, refreshed)
	require.NotSame(t, before, fsys.Snapshot())
	require.Eventually(t, func() bool { return fsys.Snapshot().ids.made.Load() }, 30*time.Second, 5*time.Millisecond,
		"the refreshed snapshot's index was not made ahead")

	s := unmounted.Snapshot()
	assert.False(t, s.ids.made.Load(), "the tree without FUSE made its index before a lookup")
	_, _ = s.FindMessage("ID:kahafs-no-such-message:1:1:1:1", FindOptions{})
	assert.True(t, s.ids.made.Load())
}
