// Package binenc is the small binary encoding of kahafs's persisted
// analysis cache (refgraph's builder state, replaycache's files): varints,
// length-prefixed strings and bytes, and codec damage.
//
// Decoding is bounded by its input: every count read is checked against
// the bytes that remain (each element takes at least one byte), so a
// corrupt or hostile input can never make the decoder allocate more than
// its own size, and the first error sticks (later reads return zero
// values), so decoders read straight through and check Err once.
package binenc

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/kahafs/kahafs/codec"
)

// ErrCorrupt: the input is not a valid encoding.
var ErrCorrupt = errors.New("binenc: corrupt input")

// Writer appends encoded values to B.
type Writer struct{ B []byte }

// Uvarint appends an unsigned varint.
func (w *Writer) Uvarint(v uint64) { w.B = binary.AppendUvarint(w.B, v) }

// Varint appends a signed (zig-zag) varint.
func (w *Writer) Varint(v int64) { w.B = binary.AppendVarint(w.B, v) }

// Int appends an int as a signed varint.
func (w *Writer) Int(v int) { w.Varint(int64(v)) }

// Bool appends one byte, 0 or 1.
func (w *Writer) Bool(v bool) {
	if v {
		w.B = append(w.B, 1)
	} else {
		w.B = append(w.B, 0)
	}
}

// Byte appends one byte.
func (w *Writer) Byte(v byte) { w.B = append(w.B, v) }

// String appends a length-prefixed string.
func (w *Writer) String(s string) {
	w.Uvarint(uint64(len(s)))
	w.B = append(w.B, s...)
}

// Bytes appends a length-prefixed byte string.
func (w *Writer) Bytes(b []byte) {
	w.Uvarint(uint64(len(b)))
	w.B = append(w.B, b...)
}

// Location appends a journal location.
func (w *Writer) Location(l codec.Location) {
	w.Varint(int64(l.File))
	w.Varint(int64(l.Offset))
	w.Varint(int64(l.Size))
}

// Reader decodes what a Writer wrote. The first error sticks.
type Reader struct {
	b   []byte
	err error
}

// NewReader reads b.
func NewReader(b []byte) *Reader { return &Reader{b: b} }

// Err is the first error met, nil when every read succeeded.
func (r *Reader) Err() error { return r.err }

// Fail records err (the first one wins) and makes every later read fail.
func (r *Reader) Fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
		r.b = nil
	}
}

// Len is the number of bytes not read yet.
func (r *Reader) Len() int { return len(r.b) }

// Uvarint reads an unsigned varint.
func (r *Reader) Uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.Fail("bad uvarint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

// Varint reads a signed varint.
func (r *Reader) Varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.Fail("bad varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

// Int32 reads a signed varint that must fit an int32.
func (r *Reader) Int32() int32 {
	v := r.Varint()
	if int64(int32(v)) != v {
		r.Fail("value %d out of int32 range", v)
		return 0
	}
	return int32(v)
}

// Int reads a signed varint that must fit an int32 (ints of the format
// are counts and offsets, never larger).
func (r *Reader) Int() int { return int(r.Int32()) }

// Bool reads a byte that must be 0 or 1.
func (r *Reader) Bool() bool {
	b := r.Byte()
	if b > 1 {
		r.Fail("bad bool %d", b)
		return false
	}
	return b == 1
}

// Byte reads one byte.
func (r *Reader) Byte() byte {
	if r.err != nil {
		return 0
	}
	if len(r.b) == 0 {
		r.Fail("truncated")
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

// Count reads an element count and checks it against the remaining input:
// every element takes at least minBytes (≥ 1) bytes, so a count the input
// cannot hold is an error, and allocating count elements is bounded by
// the input's size.
func (r *Reader) Count(minBytes int) int {
	v := r.Uvarint()
	if minBytes < 1 {
		minBytes = 1
	}
	if v > uint64(len(r.b)/minBytes) {
		r.Fail("count %d exceeds the input", v)
		return 0
	}
	return int(v)
}

// Raw returns the next n bytes (aliasing the input).
func (r *Reader) Raw(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.Fail("truncated")
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

// Bytes reads a length-prefixed byte string (aliasing the input).
func (r *Reader) Bytes() []byte {
	n := r.Count(1)
	return r.Raw(n)
}

// String reads a length-prefixed string.
func (r *Reader) String() string { return string(r.Bytes()) }

// Location reads a journal location.
func (r *Reader) Location() codec.Location {
	return codec.Location{File: r.Int32(), Offset: r.Int32(), Size: r.Int32()}
}

// sentinels are the errors a CorruptionError may wrap, by code. The codes
// are part of the format: append only.
var sentinels = []error{
	codec.ErrChecksum, codec.ErrTruncated, codec.ErrTornTail, codec.ErrBadSize,
	codec.ErrBadRecordType, codec.ErrBadBatch, codec.ErrUnknownCommand, codec.ErrDecode,
	codec.ErrMissingFile, codec.ErrUnreadable, codec.ErrNotStore,
}

// ErrUnencodable: a value the format has no room for (damage wrapping an
// error that is not one of codec's sentinels).
var ErrUnencodable = errors.New("binenc: value cannot be encoded")

// Damage appends damage found in a data file. When d.File is path (the
// file's path as it was read) only a flag is stored, so that the damage
// names the file by the path of a later reading (ResolveDamage).
func (w *Writer) Damage(d *codec.CorruptionError, path string) error {
	code := -1
	for i, s := range sentinels {
		if d.Err == s {
			code = i
			break
		}
	}
	if code < 0 {
		return fmt.Errorf("%w: damage wrapping %v", ErrUnencodable, d.Err)
	}
	w.Uvarint(uint64(code))
	if d.File == path {
		w.Bool(true)
	} else {
		w.Bool(false)
		w.String(d.File)
	}
	w.Varint(int64(d.FileID))
	w.Varint(d.Offset)
	w.Varint(d.End)
	w.String(d.Detail)
	return nil
}

// Damage reads damage written by Writer.Damage; a stored "same as the
// file's path" becomes path.
func (r *Reader) Damage(path string) *codec.CorruptionError {
	code := r.Uvarint()
	if code >= uint64(len(sentinels)) {
		r.Fail("unknown damage code %d", code)
		return nil
	}
	d := &codec.CorruptionError{Err: sentinels[code], File: path}
	if !r.Bool() {
		d.File = r.String()
	}
	d.FileID = r.Int32()
	d.Offset = r.Varint()
	d.End = r.Varint()
	d.Detail = r.String()
	if r.err != nil {
		return nil
	}
	return d
}

// DamageList appends a list of damage.
func (w *Writer) DamageList(ds []*codec.CorruptionError, path string) error {
	w.Uvarint(uint64(len(ds)))
	for _, d := range ds {
		if err := w.Damage(d, path); err != nil {
			return err
		}
	}
	return nil
}

// DamageList reads a list written by Writer.DamageList (nil when empty).
func (r *Reader) DamageList(path string) []*codec.CorruptionError {
	n := r.Count(5)
	if n == 0 {
		return nil
	}
	out := make([]*codec.CorruptionError, 0, n)
	for i := 0; i < n && r.err == nil; i++ {
		out = append(out, r.Damage(path))
	}
	if r.err != nil {
		return nil
	}
	return out
}
