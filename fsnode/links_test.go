package fsnode

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOneInodeLinkCountOne: a command listed in several directories has
// one inode number there, and a link count of 1, as the mount's README and
// docs/mount.md say; neither calls it a hard link.
func TestOneInodeLinkCountOne(t *testing.T) {
	var fx brokertest.Fixture
	for _, f := range brokertest.Fixtures(t) {
		if f.Name == "tx" {
			fx = f
		}
	}
	_, mnt := mountStore(t, fx.StoreDir, Options{Logger: quietOpts(t).Logger})
	xid := "XID:[4660,globalId=67747269642d636f6d6d6974,branchId=62712d31]"
	names := []string{
		"by-file/db-4.log/0000003526-KAHA_ADD_MESSAGE_COMMAND.json",
		// acked inside the prepared transaction: held back from pending/
		"by-destination/queue/Q.XA/in-doubt/0000000001-ID:vm-35087-1795990416081-6:2:1:1:1.json",
		"by-transaction/" + xid + "/0000000004-0000003526-KAHA_ADD_MESSAGE_COMMAND.json",
		"by-transaction/XID:[4660,globalId=67747269642d7072657061726564,branchId=62712d34]/in-doubt/0000000001-ID:vm-35087-1795990416081-6:2:1:1:1.json",
	}
	var first syscall.Stat_t
	for i, n := range names {
		var st syscall.Stat_t
		require.NoError(t, syscall.Stat(filepath.Join(mnt, n), &st), n)
		if i == 0 {
			first = st
		}
		assert.Equal(t, first.Ino, st.Ino, "%s: one inode number", n)
		assert.Equal(t, uint64(1), uint64(st.Nlink), "%s: link count", n)
	}
	readme, err := os.ReadFile(filepath.Join(mnt, "README"))
	require.NoError(t, err)
	assert.Contains(t, string(readme), "Its link count is 1")
	docs, err := os.ReadFile(filepath.Join("..", "docs", "mount.md"))
	require.NoError(t, err)
	assert.Contains(t, string(docs), "Its link count is 1")
	for name, text := range map[string]string{"the mount's README": string(readme), "docs/mount.md": string(docs)} {
		assert.NotContains(t, strings.ToLower(text), "hard link", name)
	}
}
