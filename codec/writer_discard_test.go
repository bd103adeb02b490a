package codec

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWriterDiscardLaysOutTheSame: a Discard writer reports the very ids
// and sizes a writing one produces (batches, rotations, EOF records), and
// creates nothing.
func TestWriterDiscardLaysOutTheSame(t *testing.T) {
	write := func(dir string, discard bool) *JournalWriter {
		w := NewJournalWriter(dir, WriterOptions{MaxFileLength: 4096, MaxBatchSize: 1024, NoSync: true, Discard: discard})
		for i := 0; i < 300; i++ {
			// sizes from 10 to ~5000 bytes: batches fill, files rotate,
			// one record is larger than a file
			payload := make([]byte, 10+(i*37)%700)
			if i == 150 {
				payload = make([]byte, 5000)
			}
			payload[0] = byte(TraceCommand)
			_, err := w.Append(payload)
			require.NoError(t, err)
		}
		require.NoError(t, w.Close())
		return w
	}
	dir := t.TempDir()
	real := write(dir, false)
	empty := t.TempDir()
	dry := write(empty, true)

	assert.Equal(t, real.Files(), dry.Files())
	assert.Greater(t, len(real.Files()), 10)
	var onDisk int64
	for _, id := range real.Files() {
		st, err := os.Stat(filepath.Join(dir, DataFileName(id)))
		require.NoError(t, err)
		onDisk += st.Size()
	}
	assert.Equal(t, onDisk, real.Bytes())
	assert.Equal(t, onDisk, dry.Bytes())
	ents, err := os.ReadDir(empty)
	require.NoError(t, err)
	assert.Empty(t, ents, "a Discard writer creates nothing")
}
