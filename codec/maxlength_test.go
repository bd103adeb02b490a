package codec

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestInferMaxFileLength(t *testing.T) {
	full := func(name string, end int64) LayoutFile {
		return LayoutFile{Name: name, Size: end + 5, End: end, Records: 30}
	}
	pre := func(name string, size, end int64) LayoutFile {
		return LayoutFile{Name: name, Size: size, End: end, Records: 30}
	}
	for _, tc := range []struct {
		name  string
		files []LayoutFile
		kind  string
		value int64
		last  int64
		other bool // Conflict set
	}{
		{name: "no files"},
		{name: "one grown file tells nothing", files: []LayoutFile{full("db-1.log", 9000)}},
		{name: "one preallocated file", files: []LayoutFile{pre("db-1.log", 33554432, 600)},
			kind: InferredPreallocated, value: 33554432},
		{name: "preallocated store", files: []LayoutFile{pre("db-2.log", 16384, 16141), pre("db-3.log", 16384, 9747), pre("db-4.log", 16384, 13138)},
			kind: InferredPreallocated, value: 16384},
		{name: "a full preallocated file that was crossed is not preallocated evidence, the others are",
			files: []LayoutFile{full("db-2.log", 16390), pre("db-3.log", 16384, 16000), pre("db-4.log", 16384, 100)},
			kind:  InferredPreallocated, value: 16384},
		{name: "the newest preallocated length wins over older ones",
			files: []LayoutFile{pre("db-1.log", 16384, 16000), pre("db-2.log", 32768, 32000), pre("db-3.log", 32768, 100)},
			kind:  InferredPreallocated, value: 32768, other: true},
		{name: "grown store: the largest end of a filled file, less 27",
			files: []LayoutFile{full("db-1.log", 16012), full("db-2.log", 16408), full("db-3.log", 15909), full("db-4.log", 400)},
			kind:  InferredLowerBound, value: 16381},
		{name: "the newest file alone tells nothing",
			files: []LayoutFile{full("db-1.log", 16290)}},
		{name: "a newest file past the older ones sets the bound, with a warning",
			files: []LayoutFile{full("db-1.log", 16012), full("db-2.log", 16290)},
			kind:  InferredLowerBound, value: 16290 - 27, last: 16290 - 27, other: true},
		{name: "a newest file short of the older ones does not",
			files: []LayoutFile{full("db-1.log", 16012), full("db-2.log", 15000)},
			kind:  InferredLowerBound, value: 16012 - 27},
		{name: "ack-compaction, single-record and damaged files tell nothing",
			files: []LayoutFile{
				{Name: "db-1.log", Size: 70000, End: 69995, Records: 300, AckCompaction: true},
				{Name: "db-2.log", Size: 50005, End: 50000, Records: 1},
				{Name: "db-3.log", Size: 60000, End: 4000, Records: 12, Damaged: true},
				full("db-4.log", 16000), full("db-5.log", 10)},
			kind: InferredLowerBound, value: 16000 - 27},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inf := InferMaxFileLength(tc.files)
			assert.Equal(t, tc.kind, inf.Kind)
			assert.Equal(t, tc.value, inf.Value)
			assert.Equal(t, tc.last, inf.LastBound)
			assert.Equal(t, tc.other, inf.Conflict != "", inf.Conflict)
			if tc.kind != InferredNothing {
				assert.NotEmpty(t, inf.Evidence)
			}
		})
	}
	inf := InferMaxFileLength([]LayoutFile{pre("db-2.log", 16384, 16141), pre("db-3.log", 16384, 9747), pre("db-4.log", 16384, 13138)})
	assert.Equal(t, "db-2.log … db-4.log (3 files) are preallocated to 16384 bytes", inf.Evidence)
	inf = InferMaxFileLength([]LayoutFile{full("db-1.log", 16012), full("db-2.log", 16408), full("db-3.log", 400)})
	assert.Equal(t, "the files are not preallocated and the data of db-2.log ends at 16408, which a broker writes only with a journalMaxFileLength of at least 16381", inf.Evidence)
}

// TestGuessMaxFileLength: the guess from the file system alone, before
// reading: a newest file with a hole or of the size of the one before it
// is preallocated; else files end 5 bytes after their data.
func TestGuessMaxFileLength(t *testing.T) {
	dir := t.TempDir()
	mk := func(name string, size int64, sparse bool) FileInfo {
		p := filepath.Join(dir, name)
		f, err := os.Create(p)
		require.NoError(t, err)
		if sparse {
			_, err = f.Write(make([]byte, 100))
			require.NoError(t, err)
			require.NoError(t, f.Truncate(size)) // a hole to the end
		} else {
			_, err = f.Write(make([]byte, size))
			require.NoError(t, err)
		}
		require.NoError(t, f.Close())
		return FileInfo{Name: name, Path: p, Size: size}
	}
	assert.Equal(t, int64(0), GuessMaxFileLength(nil))
	assert.Equal(t, int64(0), GuessMaxFileLength([]FileInfo{mk("db-1.log", 9000, false)}))
	assert.Equal(t, int64(1<<20), GuessMaxFileLength([]FileInfo{mk("db-2.log", 1<<20, true)}), "a hole")
	assert.Equal(t, int64(16384), GuessMaxFileLength([]FileInfo{mk("db-3.log", 16384, false), mk("db-4.log", 16384, false)}), "dense copies of preallocated files")
	assert.Equal(t, int64(16413-5-27), GuessMaxFileLength([]FileInfo{mk("db-5.log", 16413, false), mk("db-6.log", 16017, false), mk("db-7.log", 500, false)}))
	assert.Equal(t, int64(16420-5-27), GuessMaxFileLength([]FileInfo{mk("db-8.log", 16017, false), mk("db-9.log", 16420, false)}), "a newest file past the older ones")
}
