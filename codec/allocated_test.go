package codec

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAllocatedSparse: a preallocated (sparse) data file reports the bytes
// it takes on disk, less than its apparent size (summary.json and
// info.json "allocated", the inference of journalMaxFileLength).
func TestAllocatedSparse(t *testing.T) {
	p := filepath.Join(t.TempDir(), "db-1.log")
	f, err := os.Create(p)
	require.NoError(t, err)
	_, err = f.Write(EOFRecord)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(1<<20)) // a hole to the end
	require.NoError(t, f.Close())
	df, err := OpenDataFile(p, 1)
	require.NoError(t, err)
	defer df.Close()
	assert.Equal(t, int64(1<<20), df.Size)
	assert.Less(t, df.Allocated, int64(64<<10), "a sparse file takes a few blocks")
	sum, err := ScanFile(FileInfo{ID: 1, Name: "db-1.log", Path: p, Size: 1 << 20}, ReadOptions{}, func(Record, *Command) error { return nil })
	require.NoError(t, err)
	assert.Less(t, sum.Allocated, int64(64<<10))
}
