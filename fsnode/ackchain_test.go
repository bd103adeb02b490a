package fsnode

import (
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// linkNames lists the symbolic links of dir through the kernel, in its
// order, checking that each leads to ../../NAME, its data file's
// directory.
func linkNames(t *testing.T, dir string) []string {
	t.Helper()
	d, err := os.Open(dir)
	require.NoError(t, err)
	ents, err := d.ReadDir(-1) // unsorted: the listing's order
	require.NoError(t, d.Close())
	require.NoError(t, err)
	names := []string{}
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		require.True(t, e.Type()&os.ModeSymlink != 0, "%s is a symbolic link", p)
		target, err := os.Readlink(p)
		require.NoError(t, err)
		assert.Equal(t, "../../"+e.Name(), target, p)
		info, err := os.Stat(p) // followed: a data file's directory
		require.NoError(t, err)
		assert.True(t, info.IsDir(), p)
		holders, err := os.ReadFile(filepath.Join(p, nameHolders))
		require.NoError(t, err)
		direct, err := os.ReadFile(filepath.Join(dir, "..", "..", e.Name(), nameHolders))
		require.NoError(t, err)
		assert.Equal(t, direct, holders, "%s/holders through the link", p)
		names = append(names, e.Name())
	}
	return names
}

func dataFileNames(ids []int32) []string {
	out := []string{}
	for _, id := range ids {
		out = append(out, codec.DataFileName(id))
	}
	return out
}

// TestAckChainTree: through the kernel, every data file's acks-for/ links
// to the files its acks are for and acked-by/ to the files holding acks
// for its messages, as the replay graph says, and a file kept by its acks
// names its chain starts in holders and holders.json.
func TestAckChainTree(t *testing.T) {
	links := 0
	for _, fx := range brokertest.Fixtures(t) {
		t.Run(fx.Name, func(t *testing.T) {
			opts := quietOpts(t)
			opts.MaxFileLength = int64(fx.Expected.MaxFileLength)
			fsys, mnt := mountStore(t, fx.StoreDir, opts)
			g := fsys.Snapshot().graph
			for _, f := range g.Files() {
				fdir := filepath.Join(mnt, nameByFile, f.Name)
				assert.Equal(t, dataFileNames(f.AcksFor), linkNames(t, filepath.Join(fdir, nameAcksFor)), "%s/acks-for", f.Name)
				assert.Equal(t, dataFileNames(f.AckedBy), linkNames(t, filepath.Join(fdir, nameAckedBy)), "%s/acked-by", f.Name)
				links += len(f.AcksFor)
				holders := readString(t, filepath.Join(fdir, nameHolders))
				hj := readString(t, filepath.Join(fdir, nameHoldersJSON))
				if len(f.ChainStart) == 0 {
					assert.NotContains(t, holders, "chain-start:")
					assert.NotContains(t, hj, `"chainStart"`)
					continue
				}
				assert.Contains(t, holders, "\nchain-start: "+strings.Join(dataFileNames(f.ChainStart), ", ")+" ")
				assert.Contains(t, hj, `"chainStart"`)
			}
		})
	}
	assert.NotZero(t, links, "the fixtures have ack edges")
}

// TestAckChainWithoutFUSE: a path through an ack link resolves as the
// kernel resolves it (to the linked file's directory); the link itself
// is stated as a link; cat of it is the directory's EISDIR.
func TestAckChainWithoutFUSE(t *testing.T) {
	s := openFixture(t, brokertest.Named(t, "topics"))
	edges := 0
	for _, f := range s.graph.Files() {
		for _, b := range f.AcksFor {
			edges++
			bn := codec.DataFileName(b)
			link := path.Join(nameByFile, f.Name, nameAcksFor, bn)
			st, err := s.Stat(link)
			require.NoError(t, err)
			assert.Equal(t, Entry{Name: bn, Ino: st.Ino, Link: "../../" + bn}, st)
			via, err := s.ReadDir(link)
			require.NoError(t, err)
			direct, err := s.ReadDir(path.Join(nameByFile, bn))
			require.NoError(t, err)
			assert.Equal(t, direct, via, "ls %s", link)
			hv, err := s.ReadFile(path.Join(link, nameHolders))
			require.NoError(t, err)
			hd, err := s.ReadFile(path.Join(nameByFile, bn, nameHolders))
			require.NoError(t, err)
			assert.Equal(t, hd, hv)
			_, err = s.ReadFile(link)
			assert.ErrorIs(t, err, syscall.EISDIR)
			back, err := s.Stat(path.Join(link, nameAckedBy, f.Name))
			require.NoError(t, err, "%s acked by %s", bn, f.Name)
			assert.Equal(t, "../../"+f.Name, back.Link)
		}
	}
	assert.NotZero(t, edges)
	_, err := s.ReadDir(path.Join(nameByFile, "db-4.log", nameAcksFor, "db-99.log"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}
