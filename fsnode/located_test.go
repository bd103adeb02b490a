package fsnode

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/brokertest"
)

// TestLocatedMatchesIndex: a record found from itself (located: its
// header and the batches' control records) is the entry the file's index
// has for it, size, type and batch, for every record of every fixture's
// clean files; in a file read with damage nothing is found so (the index
// decides); a location that is not a record's is not found.
func TestLocatedMatchesIndex(t *testing.T) {
	found, damaged := 0, 0
	for _, fx := range brokertest.Fixtures(t) {
		t.Run(fx.Name, func(t *testing.T) {
			s := openFixture(t, fx)
			for _, f := range s.files {
				idx, err := f.index()
				require.NoError(t, err)
				for _, e := range idx {
					loc := e.loc(f.info.ID)
					got, ok := f.located(loc)
					if !f.sum.Clean() {
						assert.False(t, ok, "%s: found in a file read with damage", loc)
						continue
					}
					require.True(t, ok, "%s not found from the record", loc)
					require.Equal(t, e, got, "%s", loc)
					found++
					for _, bad := range []codec.Location{
						{File: loc.File, Offset: loc.Offset, Size: loc.Size + 1},
						{File: loc.File, Offset: loc.Offset + 1, Size: loc.Size},
						{File: loc.File, Offset: loc.Offset, Size: 0},
					} {
						_, ok := f.located(bad)
						assert.False(t, ok, "%s found at a location that is not the record's", bad)
					}
				}
			}
			for _, d := range s.graph.Destinations() {
				for _, m := range d.Messages {
					if f := s.file(m.Loc.File); f != nil && f.sum.Clean() {
						_, ok := f.located(m.Loc)
						assert.True(t, ok, "held message at %s", m.Loc)
					}
				}
			}
		})
	}
	assert.Greater(t, found, 1000)

	// a copy of a fixture with a byte changed inside a batch: the file is
	// read with damage, and its records are found through the index only
	fx := brokertest.Fixtures(t)[0]
	for _, f := range brokertest.Fixtures(t) {
		if f.Name == "queues" {
			fx = f
		}
	}
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(fx.StoreDir)))
	s := openFixture(t, fx)
	f := s.files[0]
	idx, err := f.index()
	require.NoError(t, err)
	victim := idx[len(idx)/2]
	path := filepath.Join(dir, f.info.Name)
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	raw[victim.off+victim.size/2] ^= 0xff
	require.NoError(t, os.WriteFile(path, raw, 0o644))
	opts := quietOpts(t)
	opts.MaxFileLength = int64(fx.Expected.MaxFileLength)
	fsys, err := Open(dir, opts)
	require.NoError(t, err)
	hurt := fsys.Snapshot().file(f.info.ID)
	require.False(t, hurt.sum.Clean(), "the changed byte is damage")
	for _, e := range idx {
		if _, ok := hurt.located(e.loc(f.info.ID)); ok {
			damaged++
		}
	}
	assert.Zero(t, damaged, "records of a file read with damage found from themselves")
}

// TestReadBatchesChunked: the batch list read in chunks of any size (a
// header across two reads, a chunk smaller than a batch) is the one read
// at once, and its batches are those the file's index puts its records
// in, for every clean file of every fixture; a file read to less than
// its end stops at the last batch within it.
func TestReadBatchesChunked(t *testing.T) {
	files := 0
	for _, fx := range brokertest.Fixtures(t) {
		s := openFixture(t, fx)
		for _, f := range s.files {
			if !f.sum.Clean() {
				continue
			}
			fd, err := f.open()
			require.NoError(t, err)
			whole := readBatches(fd, f.sum.End, f.sum.Batches, make([]byte, f.sum.End+1))
			require.Len(t, whole, f.sum.Batches, "%s", f.info.Name)
			idx, err := f.index()
			require.NoError(t, err)
			starts := map[int32]bool{}
			for _, b := range whole {
				starts[b.off] = true
			}
			for _, e := range idx {
				require.True(t, starts[e.batch], "%s: record at %d in a batch at %d not listed", f.info.Name, e.off, e.batch)
			}
			for _, size := range []int{codec.BatchHeaderSize, codec.BatchHeaderSize + 1, 61, 100, 257, 1000, 4096, 65536} {
				got := readBatches(fd, f.sum.End, f.sum.Batches, make([]byte, size))
				require.Equal(t, whole, got, "%s read %d bytes at a time", f.info.Name, size)
			}
			if len(whole) > 1 {
				cut := int64(whole[len(whole)-1].end) - 1
				got := readBatches(fd, cut, f.sum.Batches, make([]byte, 100))
				require.Equal(t, whole[:len(whole)-1], got, "%s read to %d", f.info.Name, cut)
			}
			files++
		}
	}
	assert.Greater(t, files, 10)
}
