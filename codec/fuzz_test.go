package codec_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/brokertest"
)

// seedFiles adds the first bytes of fixture data files as fuzz seeds.
func seedFiles(f *testing.F, limit int) [][]byte {
	var out [][]byte
	paths, _ := filepath.Glob(filepath.Join(brokertest.RepoRoot(), "testdata", "stores", "*", "store", "db-*.log"))
	for i, p := range paths {
		if i >= 6 {
			break
		}
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if len(b) > limit {
			b = b[:limit]
		}
		out = append(out, b)
	}
	return out
}

// FuzzReader: any file content reads without panic; every error is a
// positioned *CorruptionError inside the file; lenient reading always ends.
func FuzzReader(f *testing.F) {
	for _, b := range seedFiles(f, 2048) {
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add(codec.EOFRecord)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, lenient := range []bool{false, true} {
			r := codec.NewReader(codec.NewDataFile(1, "db-1.log", data), codec.ReadOptions{Lenient: lenient})
			var c codec.Command
			for i := 0; ; i++ {
				if i > len(data) {
					t.Fatal("more records than bytes: reader does not advance")
				}
				rec, err := r.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					var ce *codec.CorruptionError
					if !errors.As(err, &ce) {
						t.Fatalf("unpositioned error %v", err)
					}
					if ce.Offset < 0 || ce.Offset > int64(len(data)) {
						t.Fatalf("offset %d outside file of %d bytes", ce.Offset, len(data))
					}
					break
				}
				if int(rec.Loc.Offset)+int(rec.Loc.Size) > len(data) || len(rec.Data) != int(rec.Loc.Size) {
					t.Fatalf("record %v outside file", rec.Loc)
				}
				if err := codec.DecodeRecord("db-1.log", rec, &c); err != nil {
					var ce *codec.CorruptionError
					if !errors.As(err, &ce) || ce.Offset != int64(rec.Loc.Offset) {
						t.Fatalf("decode error not positioned at the record: %v", err)
					}
				}
			}
			for _, d := range r.Damage() {
				if d.Offset < 0 || d.Offset > int64(len(data)) || d.End > int64(len(data)) {
					t.Fatalf("damage %v outside file", d)
				}
			}
		}
	})
}

// FuzzDecodeCommand: any payload decodes without panic, and what decodes
// without unknown fields re-encodes to bytes that decode to the same.
func FuzzDecodeCommand(f *testing.F) {
	for _, b := range seedFiles(f, 1<<20) {
		r := codec.NewReader(codec.NewDataFile(1, "x", b), codec.ReadOptions{Lenient: true})
		for n := 0; n < 40; n++ {
			rec, err := r.Next()
			if err != nil {
				break
			}
			f.Add(append([]byte(nil), rec.Payload()...))
		}
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		var c, d codec.Command
		if err := codec.DecodeCommand(payload, &c); err != nil {
			if !errors.Is(err, codec.ErrDecode) && !errors.Is(err, codec.ErrUnknownCommand) {
				t.Fatalf("error wraps no sentinel: %v", err)
			}
			return
		}
		enc := codec.AppendCommand(nil, &c)
		if err := codec.DecodeCommand(enc, &d); err != nil {
			t.Fatalf("re-encoded command does not decode: %v", err)
		}
		if string(codec.AppendCommand(nil, &d)) != string(enc) {
			t.Fatal("encoding is not stable")
		}
		var s codec.MessageSummary
		_ = codec.ParseMessageSummary(c.Message, &s)
		_, _ = codec.ParseSubscriptionInfo(c.SubscriptionInfo)
		_, _ = codec.ParseMessageAck(c.Ack)
		_ = codec.AppendCommandJSON(nil, codec.Record{}, &c, codec.JSONOptions{OpenWire: true})
	})
}
