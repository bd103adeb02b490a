package codec

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// refWriter is the straightforward layout JournalWriter must produce: user
// records gathered in a batch, a batch written before a record that would
// make it reach the maximum batch size or carry it past the maximum file
// length, a file rotated before a batch whose first record would reach
// the maximum file length, the EOF record at the end of every file.
type refWriter struct {
	opts  WriterOptions
	files [][]byte
	batch []byte
	bOff  int
}

func (r *refWriter) append(payload []byte) Location {
	s := len(payload) + RecordHeaderSize
	cur := len(r.files) - 1
	if len(r.batch) > 0 {
		n := BatchHeaderSize + len(r.batch) + s
		if n >= r.opts.MaxBatchSize || r.bOff+n > r.opts.MaxFileLength {
			r.flush()
		}
	}
	if len(r.batch) == 0 {
		if cur < 0 || (len(r.files[cur]) > 0 && len(r.files[cur])+s >= r.opts.MaxFileLength) {
			if cur >= 0 {
				r.files[cur] = append(r.files[cur], EOFRecord...)
			}
			r.files = append(r.files, nil)
			cur++
		}
		r.bOff = len(r.files[cur])
	}
	loc := Location{File: int32(cur + 1), Offset: int32(r.bOff + BatchHeaderSize + len(r.batch)), Size: int32(s)}
	r.batch = AppendUserRecord(r.batch, payload)
	return loc
}

func (r *refWriter) flush() {
	if len(r.batch) > 0 {
		cur := len(r.files) - 1
		r.files[cur] = AppendBatch(r.files[cur], r.batch, !r.opts.NoChecksum)
		r.batch = r.batch[:0]
	}
}

func (r *refWriter) close() {
	r.flush()
	if n := len(r.files); n > 0 {
		r.files[n-1] = append(r.files[n-1], EOFRecord...)
	}
}

// TestJournalWriterMatchesReference writes random runs of records, small
// and larger than a batch, through Append and AppendCommand, and checks
// that the files are byte for byte the reference layout, the locations
// returned are where the records are, and no batch reaches the maximum
// batch size unless it holds a single record.
func TestJournalWriterMatchesReference(t *testing.T) {
	cs := sampleCommands()
	rng := rand.New(rand.NewSource(1))
	for _, o := range []WriterOptions{
		{MaxFileLength: 4096, MaxBatchSize: 1024},
		{MaxFileLength: 64 << 10, MaxBatchSize: 8 << 10},
		{MaxFileLength: 64 << 10, MaxBatchSize: 8 << 10, NoChecksum: true},
		{MaxFileLength: 3000, MaxBatchSize: 1},
		{MaxFileLength: 1 << 20, MaxBatchSize: 300},
		{MaxFileLength: 1 << 20},
	} {
		t.Run(fmt.Sprintf("file%d-batch%d-nosum%v", o.MaxFileLength, o.MaxBatchSize, o.NoChecksum), func(t *testing.T) {
			o.NoSync = true
			dir := t.TempDir()
			w := NewJournalWriter(dir, o)
			ref := &refWriter{opts: w.opts}
			var payloads [][]byte
			for i := range 1500 {
				var loc Location
				var err error
				var pl []byte
				switch k := rng.Intn(10); {
				case k < 6:
					c := cs[rng.Intn(len(cs))]
					pl = AppendCommand(nil, c)
					loc, err = w.AppendCommand(c)
				default:
					c := *cs[1]
					c.Message = bytes.Repeat([]byte{byte(i)}, rng.Intn(3*max(o.MaxBatchSize, 1)/2+1)%5000)
					pl = AppendCommand(nil, &c)
					loc, err = w.Append(pl)
				}
				require.NoError(t, err)
				assert.Equal(t, ref.append(pl), loc, "record %d", i)
				payloads = append(payloads, pl)
			}
			require.NoError(t, w.Close())
			ref.close()
			require.Len(t, w.Files(), len(ref.files))
			require.Greater(t, len(ref.files), 0)
			var all []Record
			for i, want := range ref.files {
				p := filepath.Join(dir, DataFileName(int32(i+1)))
				got, err := os.ReadFile(p)
				require.NoError(t, err)
				require.True(t, bytes.Equal(want, got), "file %d differs from the reference layout", i+1)
				df := &DataFile{ID: int32(i + 1), Path: p, data: got}
				r := NewReader(df, ReadOptions{})
				for {
					rec, err := r.Next()
					if err != nil {
						break
					}
					all = append(all, rec)
				}
				assert.Empty(t, r.Damage())
				// Batches: each below the maximum, or a single record.
				for off := 0; off+BatchHeaderSize <= len(got) && bytes.Equal(got[off:off+batchMagicLen], BatchMagic); {
					n := int(int32(binary.BigEndian.Uint32(got[off+16:])))
					if BatchHeaderSize+n >= w.opts.MaxBatchSize {
						first := int(int32(binary.BigEndian.Uint32(got[off+BatchHeaderSize:])))
						assert.Equal(t, n, first, "a batch at or over the maximum holds one record (file %d offset %d)", i+1, off)
					}
					off += BatchHeaderSize + n
				}
			}
			require.Len(t, all, len(payloads))
			for i, rec := range all {
				assert.Equal(t, payloads[i], rec.Payload(), "record %d", i)
			}
		})
	}
}

// TestJournalWriterPreallocates: with Preallocate every file is created as
// the broker's sparse_file preallocation does (apparent size
// MaxFileLength, an EOF record at its end), its data from offset 0 ended
// by an EOF record; Bytes (with Discard too) is the files' sizes; the
// length is read off the files exactly; a write error names the file once.
func TestJournalWriterPreallocates(t *testing.T) {
	const mfl = 8192
	write := func(dir string, discard bool) *JournalWriter {
		w := NewJournalWriter(dir, WriterOptions{MaxFileLength: mfl, NoSync: true, Preallocate: true, Discard: discard})
		body := bytes.Repeat([]byte{'x'}, 1000)
		for i := 0; i < 20; i++ {
			c := NewAddMessageCommand(TxID{}, NewDestination(Queue, []byte("Q")), []byte(fmt.Sprintf("ID:%d", i)), body, 4, false)
			_, err := w.AppendCommand(c)
			require.NoError(t, err)
		}
		require.NoError(t, w.Close())
		return w
	}
	dir := t.TempDir()
	w := write(dir, false)
	require.Greater(t, len(w.Files()), 1)
	assert.Equal(t, int64(len(w.Files()))*mfl, w.Bytes())
	assert.Equal(t, w.Bytes(), write("", true).Bytes(), "a dry layout says the same")
	st, err := OpenStore(dir)
	require.NoError(t, err)
	var layout []LayoutFile
	for _, fi := range st.Files {
		b, err := os.ReadFile(fi.Path)
		require.NoError(t, err)
		require.Len(t, b, mfl, fi.Name)
		assert.Equal(t, EOFRecord, b[mfl-len(EOFRecord):], "%s: EOF record at the end", fi.Name)
		assert.Equal(t, BatchMagic, b[:len(BatchMagic)], "%s: data from offset 0", fi.Name)
		sum, err := ScanFile(fi, ReadOptions{}, nil)
		require.NoError(t, err)
		assert.Empty(t, sum.Damage, fi.Name)
		assert.Equal(t, EOFRecord, b[sum.End:sum.End+int64(len(EOFRecord))], "%s: EOF after the data", fi.Name)
		layout = append(layout, LayoutFile{Name: fi.Name, Size: sum.Size, End: sum.End, Records: sum.Records})
	}
	inf := InferMaxFileLength(layout)
	assert.Equal(t, InferredPreallocated, inf.Kind)
	assert.Equal(t, int64(mfl), inf.Value)

	full := NewJournalWriter(filepath.Join(dir, "missing"), WriterOptions{MaxFileLength: mfl, NoSync: true, Preallocate: true})
	_, err = full.Append([]byte("x"))
	if err == nil {
		err = full.Close()
	}
	require.Error(t, err)
	assert.Equal(t, 1, strings.Count(err.Error(), filepath.Join(dir, "missing", "db-1.log")), err.Error())
}
