package fsnode

import (
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/internal/need"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStatfs: df on the mount shows the store's data files as used and
// the room left on the file system under the store as available, so that
// a mount is not "100 % full" to disk monitoring.
func TestStatfs(t *testing.T) {
	var fx brokertest.Fixture
	for _, f := range brokertest.Fixtures(t) {
		if f.Name == "tx" {
			fx = f
		}
	}
	dir := brokertest.CopyStore(t, fx.StoreDir)
	_, mnt := mountStore(t, dir, Options{Logger: quietOpts(t).Logger})

	st, err := codec.OpenStore(dir)
	require.NoError(t, err)
	var alloc int64
	for _, f := range st.Files {
		var s syscall.Stat_t
		require.NoError(t, syscall.Stat(f.Path, &s))
		alloc += s.Blocks * 512
	}
	var m, under syscall.Statfs_t
	require.NoError(t, syscall.Statfs(mnt, &m))
	require.NoError(t, syscall.Statfs(dir, &under))
	assert.Equal(t, int64(4096), m.Bsize)
	assert.Equal(t, uint64((alloc+4095)/4096), m.Blocks-m.Bfree, "used: the store's data files on disk")
	assert.Positive(t, m.Bavail, "available: the room under the store")
	underAvail := under.Bavail * uint64(under.Frsize) / 4096
	assert.InDelta(t, float64(underAvail), float64(m.Bavail), float64(underAvail)/100+256, "available is the store's file system's")
	assert.Less(t, m.Blocks-m.Bfree, m.Blocks, "not 100 % used")
	assert.Positive(t, m.Ffree)
	assert.Greater(t, m.Files, m.Ffree)

	df, err := exec.LookPath("df")
	if err != nil {
		need.Skip(t, "df (coreutils) is not in PATH: %v", err)
	}
	out, err := exec.Command(df, "-P", mnt).Output()
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Len(t, lines, 2, string(out))
	f := strings.Fields(lines[1])
	require.GreaterOrEqual(t, len(f), 6, lines[1])
	pct, err := strconv.Atoi(strings.TrimSuffix(f[4], "%"))
	require.NoError(t, err, lines[1])
	underOut, err := exec.Command(df, "-P", dir).Output()
	require.NoError(t, err)
	t.Logf("df on the mount: %s; on the store's file system: %s", lines[1], strings.Split(strings.TrimSpace(string(underOut)), "\n")[1])
	assert.Less(t, pct, 100, "df: %s", lines[1])
}
