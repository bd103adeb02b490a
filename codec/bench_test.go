package codec_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/brokertest"
)

// writeBenchStore writes files×fileLen bytes of realistic records: queue
// adds with 1 KiB bodies, their acks, and local-transaction commits.
func writeBenchStore(b *testing.B, files, fileLen int) *codec.Store {
	b.Helper()
	dir := b.TempDir()
	w := codec.NewJournalWriter(dir, codec.WriterOptions{MaxFileLength: fileLen, NoSync: true})
	body := make([]byte, 1024)
	q := codec.NewDestination(codec.Queue, []byte("ORDERS.IN"))
	tx := codec.NewLocalTx([]byte("ID:bench-host-40000-1700000000000-1:1"), 1)
	for i := 0; len(w.Files()) <= files; i++ {
		id := []byte(fmt.Sprintf("ID:bench-host-40000-1700000000000-1:1:1:1:%d", i))
		add := &codec.Command{Type: codec.AddMessageCommand, Dest: q, MessageID: id, Message: body, Priority: 4}
		add.Set(codec.FieldAddDestination, codec.FieldAddMessageID, codec.FieldAddMessage, codec.FieldAddPriority, codec.FieldAddPrioritySupported)
		rm := &codec.Command{Type: codec.RemoveMessageCommand, Dest: q, MessageID: id, Ack: body[:100]}
		rm.Set(codec.FieldRemoveDestination, codec.FieldRemoveMessageID, codec.FieldRemoveAck)
		if i%10 == 0 {
			add.Tx = tx
			add.Set(codec.FieldAddTransaction)
		}
		for _, c := range []*codec.Command{add, rm} {
			if _, err := w.AppendCommand(c); err != nil {
				b.Fatal(err)
			}
		}
		if i%10 == 0 {
			cm := &codec.Command{Type: codec.CommitCommand, Tx: tx}
			cm.Set(codec.FieldTransaction)
			if _, err := w.AppendCommand(cm); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	st, err := codec.OpenStore(dir)
	if err != nil {
		b.Fatal(err)
	}
	return st
}

type countVisitor struct{ n, bytes int64 }

func (v *countVisitor) Command(rec codec.Record, c *codec.Command) error {
	v.n++
	v.bytes += int64(len(c.MessageID))
	return nil
}
func (v *countVisitor) FileDone(*codec.FileSummary) error { return nil }

// BenchmarkReadStore measures framing, checksum verification and decoding
// of a 100-file store (4 MiB files) through ReadStore.
func BenchmarkReadStore(b *testing.B) {
	st := writeBenchStore(b, 100, 4<<20)
	var total int64
	for _, f := range st.Files {
		total += f.Size
	}
	b.SetBytes(total)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var v countVisitor
		if err := codec.ReadStore(st, codec.ReadOptions{}, 0, &v); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(v.n), "records")
	}
}

// BenchmarkStats100Files is `kahafs stats` on a 100-file store.
func BenchmarkStats100Files(b *testing.B) {
	st := writeBenchStore(b, 100, 4<<20)
	var total int64
	for _, f := range st.Files {
		total += f.Size
	}
	b.SetBytes(total)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := codec.ComputeStats(st, codec.ReadOptions{}, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeCommand is the per-record decode cost (no allocation).
func BenchmarkDecodeCommand(b *testing.B) {
	q := codec.NewDestination(codec.Queue, []byte("ORDERS.IN"))
	add := &codec.Command{Type: codec.AddMessageCommand, Dest: q, MessageID: []byte("ID:x:1:1:1:1"), Message: make([]byte, 512), Tx: codec.NewLocalTx([]byte("ID:c"), 3)}
	add.Set(codec.FieldAddTransaction, codec.FieldAddDestination, codec.FieldAddMessageID, codec.FieldAddMessage, codec.FieldAddPriority)
	p := codec.AppendCommand(nil, add)
	var c codec.Command
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := codec.DecodeCommand(p, &c); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCommandJSON is the cost of a message command's line (what the
// tree renders per file it lists): the tx fixture's messages, OpenWire
// summary and content included.
func BenchmarkCommandJSON(b *testing.B) {
	st, err := codec.OpenStore(filepath.Join(brokertest.RepoRoot(), "testdata", "stores", "tx", "store"))
	if err != nil {
		b.Skip(err)
	}
	type msg struct {
		rec codec.Record
		c   codec.Command
	}
	var msgs []msg
	for _, fi := range st.Files {
		_, err := codec.ScanFile(fi, codec.ReadOptions{}, func(rec codec.Record, c *codec.Command) error {
			if c.Type == codec.AddMessageCommand {
				m := msg{rec: rec}
				m.rec.Data = bytes.Clone(rec.Data) // the command's slices point into it
				if err := codec.DecodeRecord(fi.Path, m.rec, &m.c); err != nil {
					return err
				}
				msgs = append(msgs, m)
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	var out []byte
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m := &msgs[i%len(msgs)]
		out = codec.AppendCommandJSON(out[:0], m.rec, &m.c, codec.JSONOptions{OpenWire: true})
	}
}
