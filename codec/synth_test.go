package codec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/kahafs/kahafs/internal/faults"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sampleCommands returns commands of every entry type, fields present as
// the broker writes them (TestEveryCommandType makes one of each type with
// all its fields from the table).
func sampleCommands() []*Command {
	q := NewDestination(Queue, []byte("Q.A"))
	tp := NewDestination(Topic, []byte("T.X"))
	local := NewLocalTx([]byte("ID:host-1234-1700000000000-1:1"), 7)
	xa := NewXATx(1, []byte{0xAB, 0xCD}, []byte{0x01})
	var cs []*Command
	add := func(c *Command, fields ...int) {
		for _, f := range fields {
			c.Set(f)
		}
		cs = append(cs, c)
	}
	add(&Command{Type: TraceCommand, Text: []byte("LOADED Sun Nov 29 20:40:55 UTC 2026")}, 1)
	add(&Command{Type: AddMessageCommand, Dest: q, MessageID: []byte("ID:m1"), Message: []byte{1, 2, 3}, Priority: 9, PrioritySupported: true}, 2, 3, 4, 5, 6)
	add(&Command{Type: AddMessageCommand, Tx: local, Dest: tp, MessageID: []byte("ID:m2"), Message: bytes.Repeat([]byte{7}, 300), Priority: -1}, 1, 2, 3, 4, 5, 6)
	add(&Command{Type: RemoveMessageCommand, Dest: q, MessageID: []byte("ID:m1"), Ack: []byte{9, 9}}, 2, 3, 4)
	add(&Command{Type: RemoveMessageCommand, Tx: xa, Dest: tp, MessageID: []byte("ID:m2"), Ack: []byte{}, SubscriptionKey: []byte("c1:s1")}, 1, 2, 3, 4, 5)
	add(&Command{Type: PrepareCommand, Tx: xa}, 1)
	add(&Command{Type: CommitCommand, Tx: local}, 1)
	add(&Command{Type: RollbackCommand, Tx: xa}, 1)
	add(&Command{Type: RemoveDestinationCommand, Dest: q}, 1)
	add(&Command{Type: SubscriptionCommand, Dest: tp, SubscriptionKey: []byte("c1:s1"), SubscriptionInfo: []byte{1}}, 1, 2, 3, 4)
	add(&Command{Type: SubscriptionCommand, Dest: tp, SubscriptionKey: []byte("c1:s1")}, 1, 2, 3)
	add(&Command{Type: ProducerAuditCommand, Blob: []byte{0xAC, 0xED}}, 1)
	add(&Command{Type: AckMessageFileMapCommand, Blob: []byte{0xAC, 0xED, 0}}, 1)
	up := &Command{Type: UpdateMessageCommand, Update: true, HasInner: true, Dest: q, MessageID: []byte("ID:m1"), Message: []byte{4}, Priority: 4}
	add(up, 2, 3, 4, 5, 6)
	add(&Command{Type: AddScheduledJobCommand, Scheduler: []byte("JMS"), JobID: []byte("j1"), StartTime: 5, CronEntry: []byte("* * *"), Delay: 1, Period: 2, Repeat: 3, Payload: []byte{1}, NextExecutionTime: 9}, 1, 2, 3, 4, 5, 6, 7, 8, 9)
	add(&Command{Type: RescheduleJobCommand, Scheduler: []byte("JMS"), JobID: []byte("j1"), ExecutionTime: 1, NextExecutionTime: 2, RescheduledCount: 3}, 1, 2, 3, 4, 5)
	add(&Command{Type: RemoveScheduledJobCommand, Scheduler: []byte("JMS"), JobID: []byte("j1"), NextExecutionTime: 2}, 1, 2, 3)
	add(&Command{Type: RemoveScheduledJobsCommand, Scheduler: []byte("JMS"), StartTime: 1, EndTime: 2}, 1, 2, 3)
	add(&Command{Type: DestroySchedulerCommand, Scheduler: []byte("JMS")}, 1)
	add(&Command{Type: RewrittenDataFileCommand, SourceDataFileID: 3, RewriteType: 1}, 1, 2)
	return cs
}

func TestCommandRoundTrip(t *testing.T) {
	for _, c := range sampleCommands() {
		payload := AppendCommand(nil, c)
		var d Command
		require.NoError(t, DecodeCommand(payload, &d), c.Type.String())
		assert.Equal(t, c.Type, d.Type)
		assert.Equal(t, payload, AppendCommand(nil, &d), "re-encoding %s", c.Type)
		assert.Equal(t, c.Tx.String(), d.Tx.String())
		assert.Equal(t, string(c.MessageID), string(d.MessageID))
		if c.Type == AddMessageCommand || c.Type == UpdateMessageCommand {
			assert.Equal(t, c.Priority, d.Priority)
		}
	}
}

func TestLocalTxQuirk(t *testing.T) {
	// Broker bytes: 0A <len> "ID:c" 08 <varint> inside the local id.
	c := &Command{Type: CommitCommand, Tx: NewLocalTx([]byte("ID:c"), 300)}
	c.Set(1)
	p := AppendCommand(nil, c)
	want := []byte{4, 13, 0x0A, 11, 0x0A, 9, 0x0A, 4, 'I', 'D', ':', 'c', 0x08, 0xAC, 0x02}
	assert.Equal(t, want, p)
	var d Command
	require.NoError(t, DecodeCommand(p, &d))
	assert.Equal(t, "TX:ID:c:300", d.Tx.String())
}

func TestTxAndDestinationStrings(t *testing.T) {
	assert.Equal(t, "XID:[1,globalId=abcd,branchId=01]", NewXATx(1, []byte{0xAB, 0xCD}, []byte{1}).String())
	assert.Equal(t, "queue://A.B", NewDestination(Queue, []byte("A.B")).String())
	assert.Equal(t, "1:T", NewDestination(Topic, []byte("T")).Key())
}

func TestDecodeErrors(t *testing.T) {
	good := AppendCommand(nil, sampleCommands()[1])
	cases := []struct {
		name    string
		payload []byte
		want    error
	}{
		{"empty", nil, ErrDecode},
		{"unknown type", append([]byte{NumEntryTypes}, good[1:]...), ErrUnknownCommand},
		{"length past end", good[:len(good)-1], ErrDecode},
		{"bad tag", []byte{1, 2, 0xFF, 0xFF}, ErrDecode},
		{"wrong wire type", []byte{1, 2, 0x10, 1}, ErrDecode}, // field 2 (destination) as varint
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var c Command
			err := DecodeCommand(tc.payload, &c)
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.want)
			rec := Record{Loc: Location{File: 3, Offset: 100, Size: int32(len(tc.payload) + 5)}}
			rec.Data = AppendUserRecord(nil, tc.payload)
			err = DecodeRecord("db-3.log", rec, &c)
			var ce *CorruptionError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, int64(100), ce.Offset)
			assert.Contains(t, err.Error(), "db-3.log: offset 100")
			assert.ErrorIs(t, err, tc.want)
		})
	}
}

// buildFile writes batches of the sample commands and returns the file
// bytes, the record offsets, and the batch offsets.
func buildFile(t testing.TB, batches int) ([]byte, []int32, []int32) {
	var b []byte
	var recs, bats []int32
	cs := sampleCommands()
	for i := 0; i < batches; i++ {
		var rs []byte
		bats = append(bats, int32(len(b)))
		for j := 0; j < 3; j++ {
			recs = append(recs, int32(len(b)+BatchHeaderSize+len(rs)))
			rs = AppendUserRecord(rs, AppendCommand(nil, cs[(i*3+j)%len(cs)]))
		}
		b = AppendBatch(b, rs, true)
	}
	return append(b, EOFRecord...), recs, bats
}

func readAll(t testing.TB, data []byte, opts ReadOptions) ([]Record, []*CorruptionError, error) {
	r := NewReader(NewDataFile(5, "db-5.log", data), opts)
	var out []Record
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return out, r.Damage(), nil
		}
		if err != nil {
			return out, r.Damage(), err
		}
		out = append(out, rec)
	}
}

func TestReaderCleanFile(t *testing.T) {
	data, offs, bats := buildFile(t, 4)
	recs, dmg, err := readAll(t, data, ReadOptions{})
	require.NoError(t, err)
	require.Empty(t, dmg)
	require.Len(t, recs, len(offs))
	for i, r := range recs {
		assert.Equal(t, offs[i], r.Loc.Offset)
		assert.Equal(t, int32(5), r.Loc.File)
		assert.Equal(t, bats[i/3], r.Batch)
		var c Command
		require.NoError(t, DecodeCommand(r.Payload(), &c))
	}
	assert.Equal(t, int32(28), recs[0].Loc.Offset, "first record of a file is at 28")
}

func TestReaderPreallocated(t *testing.T) {
	data, offs, _ := buildFile(t, 2)
	const size = 3 * chunkSize
	sparse := make([]byte, size)
	copy(sparse, data)
	copy(sparse[size-5:], EOFRecord)
	chunked := make([]byte, size)
	for off := 0; off < size; off += chunkSize {
		copy(chunked[off:], EOFRecord)
	}
	copy(chunked, data)
	empty := make([]byte, size)
	copy(empty, EOFRecord)
	noEOF := data[:len(data)-5]
	for name, tc := range map[string]struct {
		data []byte
		n    int
	}{"sparse": {sparse, len(offs)}, "chunked": {chunked, len(offs)}, "emptyPrealloc": {empty, 0}, "noEOF": {noEOF, len(offs)}, "zeroLength": {nil, 0}} {
		t.Run(name, func(t *testing.T) {
			recs, dmg, err := readAll(t, tc.data, ReadOptions{})
			require.NoError(t, err)
			assert.Empty(t, dmg)
			assert.Len(t, recs, tc.n)
		})
	}
}

func TestReaderDamage(t *testing.T) {
	data, offs, bats := buildFile(t, 4)
	second := int(bats[1])
	third := int(bats[2])
	last := int(bats[3])
	cases := []struct {
		name string
		data []byte
		want error // strict error
		tail bool  // classified as torn tail
		left int   // records readable in lenient mode
		at   int   // damage offset
	}{
		{"flipped byte mid-file", faults.FlipByte(data, second+40), ErrChecksum, false, 9, second},
		{"flipped byte in last batch", faults.FlipByte(data, last+40), ErrTornTail, true, 9, last},
		{"torn last batch", faults.Truncate(data, last+50), ErrTornTail, true, 9, last},
		{"truncated mid-header", faults.Truncate(data, last+4), ErrTornTail, true, 9, last},
		{"zeroed sector mid-file", faults.Zero(data, second, 40), ErrBadBatch, false, 9, second},
		{"length larger than file", faults.Put(data, second+16, 0x7F, 0, 0, 0), ErrTruncated, false, 9, second},
		{"negative batch length", faults.Put(data, second+16, 0xFF, 0xFF, 0xFF, 0xF0), ErrBadBatch, false, 9, second},
		{"record size too small", faults.Put(fixSum(data, second, offs[3], 0, 0, 0, 2), int(offs[3]), 0, 0, 0, 2), ErrBadSize, false, 9, int(offs[3])},
		{"unknown record type", fixSum(data, second, offs[4]+4, 7), ErrBadRecordType, false, 10, int(offs[4])},
		{"bad magic", faults.Put(data, third+6, 'X'), ErrBadBatch, false, 9, third},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := readAll(t, tc.data, ReadOptions{})
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.want)
			var ce *CorruptionError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, int64(tc.at), ce.Offset, "damage offset")
			assert.Equal(t, tc.tail, IsTail(err))
			assert.Contains(t, err.Error(), "db-5.log")

			recs, dmg, err := readAll(t, tc.data, ReadOptions{Lenient: true})
			require.NoError(t, err)
			require.Len(t, dmg, 1)
			assert.Len(t, recs, tc.left, "records still readable")
		})
	}
}

// fixSum rewrites bytes at off and recomputes the checksum of the batch at
// batch so that only the framing is wrong.
func fixSum(data []byte, batch int, off int32, v ...byte) []byte {
	c := faults.Put(data, int(off), v...)
	n := int(binary.BigEndian.Uint32(c[batch+16:]))
	sum := uint64(adlerOf(c[batch+BatchHeaderSize : batch+BatchHeaderSize+n]))
	binary.BigEndian.PutUint64(c[batch+20:], sum)
	return c
}

func TestReaderUnknownRecordType(t *testing.T) {
	data, _, bats := buildFile(t, 3)
	// A header of type 9 where a batch should start.
	bad := faults.Put(data, int(bats[1])+4, 9)
	_, _, err := readAll(t, bad, ReadOptions{})
	assert.ErrorIs(t, err, ErrBadRecordType)
}

func TestReaderSkipChecksums(t *testing.T) {
	data, offs, bats := buildFile(t, 3)
	bad := faults.FlipByte(data, int(bats[1])+BatchHeaderSize+20)
	recs, dmg, err := readAll(t, bad, ReadOptions{SkipChecksums: true})
	require.NoError(t, err)
	assert.Empty(t, dmg)
	assert.Len(t, recs, len(offs))
}

func TestJournalWriterLayout(t *testing.T) {
	dir := t.TempDir()
	w := NewJournalWriter(dir, JournalWriterTestOptions(4096))
	cs := sampleCommands()
	var locs []Location
	for i := 0; i < 400; i++ {
		loc, err := w.AppendCommand(cs[i%len(cs)])
		require.NoError(t, err)
		locs = append(locs, loc)
	}
	require.NoError(t, w.Close())
	require.Greater(t, len(w.Files()), 3, "rotated into several files")
	st, err := OpenStore(dir)
	require.NoError(t, err)
	var got []Location
	var payloads [][]byte
	for _, fi := range st.Files {
		assert.LessOrEqual(t, fi.Size, int64(4096+5+BatchHeaderSize))
		sum, err := ScanFile(fi, ReadOptions{}, func(rec Record, c *Command) error {
			got = append(got, rec.Loc)
			payloads = append(payloads, AppendCommand(nil, c))
			return nil
		})
		require.NoError(t, err)
		assert.Empty(t, sum.Damage)
		assert.Equal(t, sum.Batches, sum.Checksummed)
		raw, _ := os.ReadFile(fi.Path)
		assert.Equal(t, EOFRecord, raw[len(raw)-5:], "file ends with the EOF record")
	}
	assert.Equal(t, locs, got)
	for i, p := range payloads {
		assert.Equal(t, AppendCommand(nil, cs[i%len(cs)]), p)
	}
	// Never overwrites.
	w2 := NewJournalWriter(dir, WriterOptions{NoSync: true})
	_, err = w2.AppendCommand(cs[0])
	assert.Error(t, err)
}

// JournalWriterTestOptions: small files, no fsync.
func JournalWriterTestOptions(max int) WriterOptions {
	return WriterOptions{MaxFileLength: max, MaxBatchSize: 1024, NoSync: true}
}

func TestScanOrderedKeepsOrderAndStops(t *testing.T) {
	files := make([]FileInfo, 50)
	for i := range files {
		files[i] = FileInfo{ID: int32(i + 1)}
	}
	var got []int32
	err := ScanOrdered(files, 4, func(fi FileInfo) (int32, error) {
		if rand.Intn(2) == 0 {
			// scramble completion order
			for i := 0; i < 1000; i++ {
				_ = fmt.Sprint(i)
			}
		}
		return fi.ID * 10, nil
	}, func(fi FileInfo, v int32) error {
		got = append(got, v/10)
		return nil
	})
	require.NoError(t, err)
	for i, id := range got {
		assert.Equal(t, int32(i+1), id)
	}
	stop := errors.New("stop")
	n := 0
	err = ScanOrdered(files, 4, func(fi FileInfo) (int, error) { return 0, nil }, func(FileInfo, int) error {
		n++
		if n == 5 {
			return stop
		}
		return nil
	})
	assert.ErrorIs(t, err, stop)
	assert.Equal(t, 5, n)
}

func TestOpenStore(t *testing.T) {
	dir := t.TempDir()
	_, err := OpenStore(dir)
	assert.ErrorIs(t, err, ErrNotStore)
	f := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(f, nil, 0o644))
	_, err = OpenStore(f)
	assert.ErrorIs(t, err, ErrNotStore)
	for _, n := range []string{"db-10.log", "db-2.log", "db-x.log", "db-0.log", "db.data", "lock"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), nil, 0o644))
	}
	st, err := OpenStore(dir)
	require.NoError(t, err)
	require.Len(t, st.Files, 2)
	assert.Equal(t, []int32{2, 10}, []int32{st.Files[0].ID, st.Files[1].ID})
	assert.True(t, st.HasIndex)
	assert.True(t, st.HasLock)
}
