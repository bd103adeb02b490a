package openwire

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"unicode/utf16"
	"unicode/utf8"
)

// reader reads big-endian primitives from b. The first error sticks: later
// reads return zero values, so a decoder reads straight through and checks
// err where it matters. Offsets in errors are relative to the blob (base is
// b's offset in it) or, for an inflated body, to the inflated bytes.
type reader struct {
	b        []byte
	pos      int
	base     int // offset of b[0] in what errors refer to
	inflated bool
	content  int // offset of the compressed content in the blob (inflated readers)
	field    string
	err      *DecodeError
}

func (r *reader) failAt(pos int, sentinel error, detail string) {
	if r.err == nil {
		r.err = &DecodeError{Field: r.field, Offset: r.base + pos, Inflated: r.inflated, ContentOffset: r.content, Err: sentinel, Detail: detail}
	}
}

func (r *reader) fail(sentinel error, detail string) { r.failAt(r.pos, sentinel, detail) }

func (r *reader) failf(sentinel error, format string, args ...any) {
	r.fail(sentinel, fmt.Sprintf(format, args...))
}

// left is how many bytes remain.
func (r *reader) left() int { return len(r.b) - r.pos }

// need checks that n more bytes are there.
func (r *reader) need(n int, what string) bool {
	if r.err != nil {
		return false
	}
	if n < 0 {
		r.failf(ErrMalformed, "%s: negative length %d", what, n)
		return false
	}
	if n > r.left() {
		r.failf(ErrTruncated, "%s: %d bytes, %d left", what, n, r.left())
		return false
	}
	return true
}

func (r *reader) take(n int, what string) []byte {
	if !r.need(n, what) {
		return nil
	}
	b := r.b[r.pos : r.pos+n : r.pos+n]
	r.pos += n
	return b
}

func (r *reader) u8(what string) byte {
	if !r.need(1, what) {
		return 0
	}
	v := r.b[r.pos]
	r.pos++
	return v
}

func (r *reader) bool(what string) bool { return r.u8(what) != 0 }

func (r *reader) i16(what string) int16 {
	if !r.need(2, what) {
		return 0
	}
	v := binary.BigEndian.Uint16(r.b[r.pos:])
	r.pos += 2
	return int16(v)
}

func (r *reader) u16(what string) uint16 { return uint16(r.i16(what)) }

func (r *reader) i32(what string) int32 {
	if !r.need(4, what) {
		return 0
	}
	v := binary.BigEndian.Uint32(r.b[r.pos:])
	r.pos += 4
	return int32(v)
}

func (r *reader) i64(what string) int64 {
	if !r.need(8, what) {
		return 0
	}
	v := binary.BigEndian.Uint64(r.b[r.pos:])
	r.pos += 8
	return int64(v)
}

func (r *reader) f32(what string) float32 { return math.Float32frombits(uint32(r.i32(what))) }

func (r *reader) f64(what string) float64 { return math.Float64frombits(uint64(r.i64(what))) }

// utf reads a DataOutput.writeUTF string: u16 length, modified UTF-8.
func (r *reader) utf(what string) string {
	n := int(r.u16(what))
	return ModifiedUTF8(r.take(n, what))
}

// looseString reads an OpenWire loose string: bool present, then utf.
// Absent is "".
func (r *reader) looseString(what string) string {
	if !r.bool(what) {
		return ""
	}
	return r.utf(what)
}

// byteSeq reads a loose byte sequence: bool present, int32 length, bytes.
// It returns the bytes (aliasing the blob) and their offset; absent is
// nil, -1.
func (r *reader) byteSeq(what string) ([]byte, int) {
	if !r.bool(what) {
		return nil, -1
	}
	n := int(r.i32(what))
	off := r.pos
	b := r.take(n, what)
	if b == nil {
		return nil, -1
	}
	return b, r.base + off
}

// plainUTF8 reports whether the modified UTF-8 b reads as it is: no NUL
// (C0 80) and no surrogate (ED ..)
// (looked for with IndexByte: much faster on a long text than a loop
// over the bytes)
func plainUTF8(b []byte) bool {
	return bytes.IndexByte(b, 0xC0) < 0 && bytes.IndexByte(b, 0xED) < 0
}

// ModifiedUTF8 converts Java's modified UTF-8 (DataOutput.writeUTF, and
// the text of a TextMessage) to a Go string: NUL is written as C0 80 and a
// supplementary character as two 3-byte surrogates. Invalid bytes and
// lone surrogates become U+FFFD.
func ModifiedUTF8(b []byte) string {
	if plainUTF8(b) {
		return string(b)
	}
	units := make([]uint16, 0, len(b))
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c < 0x80:
			units = append(units, uint16(c))
			i++
		case c&0xE0 == 0xC0 && i+1 < len(b):
			units = append(units, uint16(c&0x1F)<<6|uint16(b[i+1]&0x3F))
			i += 2
		case c&0xF0 == 0xE0 && i+2 < len(b):
			units = append(units, uint16(c&0x0F)<<12|uint16(b[i+1]&0x3F)<<6|uint16(b[i+2]&0x3F))
			i += 3
		default:
			units = append(units, utf8.RuneError)
			i++
		}
	}
	return string(utf16.Decode(units))
}
