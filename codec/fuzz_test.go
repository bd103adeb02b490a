package codec_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/openwire"
	"google.golang.org/protobuf/encoding/protowire"
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

// seedPayloads are the payloads of the first 40 records of every seed file.
func seedPayloads(f *testing.F) [][]byte {
	var out [][]byte
	for _, b := range seedFiles(f, 1<<20) {
		r := codec.NewReader(codec.NewDataFile(1, "x", b), codec.ReadOptions{Lenient: true})
		for n := 0; n < 40; n++ {
			rec, err := r.Next()
			if err != nil {
				break
			}
			out = append(out, append([]byte(nil), rec.Payload()...))
		}
	}
	return out
}

// FuzzDecodeCommand: any payload decodes without panic, as the table
// alone decodes it, and what decodes without unknown fields re-encodes to
// bytes that decode to the same.
func FuzzDecodeCommand(f *testing.F) {
	for _, p := range seedPayloads(f) {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		sameDecoding(t, payload, "payload") // the fast paths are the table's
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
		var s openwire.MessageSummary
		_ = openwire.ParseMessageSummary(c.Message, &s)
		_, _ = openwire.ParseSubscriptionInfo(c.SubscriptionInfo)
		_, _ = openwire.ParseMessageAck(c.Ack)
		_ = codec.AppendCommandJSON(nil, codec.Record{}, &c, codec.JSONOptions{OpenWire: true})
	})
}

// FuzzWalk: the field walker's one-byte fast paths give exactly what
// protowire alone gives: the same fields, values, byte strings (and their
// capacity) and errors.
func FuzzWalk(f *testing.F) {
	for _, p := range seedPayloads(f) {
		if len(p) > 1 {
			f.Add(p[1:]) // the protobuf after the type byte
		}
	}
	f.Add([]byte{0x00})
	f.Add([]byte{0x0a, 0x05, 'a'})
	f.Add([]byte{0x08, 0x80})
	f.Add([]byte{0x0a, 0x7f})
	f.Add([]byte{0x0a, 0x01})
	f.Add([]byte{0x80, 0x01, 0x00})
	f.Fuzz(func(t *testing.T, msg []byte) {
		got, gotErr := codec.WalkFields(msg)
		want, wantErr := walkReference(msg)
		if (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) {
			t.Fatalf("errors differ: %v, want %v", gotErr, wantErr)
		}
		if len(got) != len(want) {
			t.Fatalf("%d fields, want %d", len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("field %d: %+v, want %+v", i, got[i], want[i])
			}
		}
	})
}

// walkReference walks msg with protowire alone, as codec did before its
// fast paths.
func walkReference(msg []byte) ([]codec.WalkedField, error) {
	var out []codec.WalkedField
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return out, codec.ErrDecodef("bad field tag: %v", protowire.ParseError(n))
		}
		msg = msg[n:]
		var v uint64
		var b []byte
		switch typ {
		case protowire.VarintType:
			v, n = protowire.ConsumeVarint(msg)
		case protowire.BytesType:
			b, n = protowire.ConsumeBytes(msg)
		case protowire.Fixed32Type:
			var x uint32
			x, n = protowire.ConsumeFixed32(msg)
			v = uint64(x)
		case protowire.Fixed64Type:
			v, n = protowire.ConsumeFixed64(msg)
		default:
			n = protowire.ConsumeFieldValue(num, typ, msg)
		}
		if n < 0 {
			return out, codec.ErrDecodef("field %d: %v", num, protowire.ParseError(n))
		}
		msg = msg[n:]
		out = append(out, codec.WalkedField{Num: int32(num), Type: int8(typ), V: v, Len: len(b), Cap: cap(b), Nil: b == nil, First: firstByte(b)})
	}
	return out, nil
}

func firstByte(b []byte) int {
	if len(b) == 0 {
		return -1
	}
	return int(b[0])
}
