package codec

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeCompactionFile writes db-id.log in dir the way the broker's ack
// compaction does: the marker, the forwarded removes and a commit, then
// (when more) a record appended after a restart.
func writeCompactionFile(t *testing.T, dir string, id, source int32, more bool) FileInfo {
	t.Helper()
	w := NewJournalWriter(dir, WriterOptions{FirstID: id, NoSync: true, MaxBatchSize: 64})
	marker := &Command{Type: RewrittenDataFileCommand, SourceDataFileID: source, RewriteType: 1, SkipIfSourceExists: true}
	marker.Set(1)
	marker.Set(2)
	_, err := w.AppendCommand(marker)
	require.NoError(t, err)
	q := NewDestination(Queue, []byte("Q"))
	for _, m := range []string{"ID:p:1:1:1:1", "ID:p:1:1:1:2"} {
		_, err := w.AppendCommand(NewRemoveMessageCommand(TxID{}, q, []byte(m), []byte{}, nil))
		require.NoError(t, err)
	}
	commit := &Command{Type: CommitCommand, Tx: TxID{Kind: LocalTx, ConnectionID: []byte("ID:c"), LocalID: 3}}
	commit.Set(1)
	_, err = w.AppendCommand(commit)
	require.NoError(t, err)
	if more {
		tr := &Command{Type: TraceCommand, Text: []byte("LOADED")}
		tr.Set(1)
		_, err = w.AppendCommand(tr)
		require.NoError(t, err)
		_, err = w.AppendCommand(NewRemoveMessageCommand(TxID{}, q, []byte("ID:p:1:1:1:3"), []byte{}, nil))
		require.NoError(t, err)
	}
	require.NoError(t, w.Close())
	p := filepath.Join(dir, DataFileName(id))
	st, err := os.Stat(p)
	require.NoError(t, err)
	return FileInfo{ID: id, Name: DataFileName(id), Path: p, Size: st.Size()}
}

func TestCompactionHead(t *testing.T) {
	dir := t.TempDir()
	fi := writeCompactionFile(t, dir, 9, 4, true)
	h, ok, err := ReadCompactionHead(fi)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, CompactionHead{File: 9, Source: 4, SkipIfSourceExists: true}, h)

	// the forwarded part ends at the first record of another type
	var got []string
	require.NoError(t, ReadForwarded(fi, func(rec Record, c *Command) error {
		got = append(got, c.Type.String()+" "+string(c.MessageID))
		return nil
	}))
	assert.Equal(t, []string{"KAHA_REMOVE_MESSAGE_COMMAND ID:p:1:1:1:1", "KAHA_REMOVE_MESSAGE_COMMAND ID:p:1:1:1:2", "KAHA_COMMIT_COMMAND "}, got)
	assert.Equal(t, []CompactionHead{h}, CompactionHeads([]FileInfo{fi}))
}

func TestCompactionHeadNotACompactionFile(t *testing.T) {
	dir := t.TempDir()
	w := NewJournalWriter(dir, WriterOptions{FirstID: 3, NoSync: true})
	_, err := w.AppendCommand(NewRemoveMessageCommand(TxID{}, NewDestination(Queue, []byte("Q")), []byte("ID:x:1:1:1:1"), nil, nil))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	p := filepath.Join(dir, "db-3.log")
	_, ok, err := ReadCompactionHead(FileInfo{ID: 3, Path: p})
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Error(t, ReadForwarded(FileInfo{ID: 3, Path: p}, func(Record, *Command) error { return nil }))

	// an empty file, a file of zeros (preallocated), a torn first batch
	for name, b := range map[string][]byte{"empty": nil, "zeros": make([]byte, 4096)} {
		p := filepath.Join(dir, "db-5.log")
		require.NoError(t, os.WriteFile(p, b, 0o644))
		_, ok, err := ReadCompactionHead(FileInfo{ID: 5, Path: p})
		require.NoError(t, err, name)
		assert.False(t, ok, name)
	}
	fi := writeCompactionFile(t, t.TempDir(), 9, 4, false)
	b, err := os.ReadFile(fi.Path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(fi.Path, b[:BatchHeaderSize+10], 0o644)) // the marker's record is cut
	_, ok, err = ReadCompactionHead(fi)
	require.NoError(t, err)
	assert.False(t, ok, "a cut record")

	// one batch for everything: the marker is whole, its batch is not
	w = NewJournalWriter(dir, WriterOptions{FirstID: 11, NoSync: true})
	marker := &Command{Type: RewrittenDataFileCommand, SourceDataFileID: 4}
	marker.Set(1)
	_, err = w.AppendCommand(marker)
	require.NoError(t, err)
	_, err = w.AppendCommand(NewRemoveMessageCommand(TxID{}, NewDestination(Queue, []byte("Q")), []byte("ID:x:1:1:1:1"), []byte{}, nil))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	fi = FileInfo{ID: 11, Path: filepath.Join(dir, "db-11.log")}
	b, err = os.ReadFile(fi.Path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(fi.Path, b[:BatchHeaderSize+20], 0o644))
	_, ok, err = ReadCompactionHead(fi)
	require.NoError(t, err)
	assert.False(t, ok, "a torn first batch is no data")
	b[len(b)-8] ^= 0xff // inside the batch: checksum mismatch
	require.NoError(t, os.WriteFile(fi.Path, b, 0o644))
	_, ok, err = ReadCompactionHead(fi)
	require.NoError(t, err)
	assert.False(t, ok, "a damaged first batch")
}

func TestCompactionHeadUnreadable(t *testing.T) {
	p := filepath.Join(t.TempDir(), "db-2.log")
	require.NoError(t, syscall.Mkfifo(p, 0o644))
	_, ok, err := ReadCompactionHead(FileInfo{ID: 2, Path: p}) // must not block
	assert.ErrorIs(t, err, ErrUnreadable)
	assert.False(t, ok)
	assert.Empty(t, CompactionHeads([]FileInfo{{ID: 2, Path: p}}))
}
