// Package jsonw appends JSON to byte slices without reflection: strings
// escaped so that any input (invalid UTF-8 included) gives valid JSON, and
// an object/array writer that places the commas. codec's command lines and
// openwire's message content are built with it: a mount renders a line per
// command listed, and encoding/json's reflection would cost more than the
// decoding.
package jsonw

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// AppendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD;
// control characters, U+2028 and U+2029 are escaped.
func AppendString[T ~string | ~[]byte](dst []byte, s T) []byte {
	const hexd = "0123456789abcdef"
	dst = append(dst, '"')
	plain := 0 // s[plain:i] needs no escaping: appended in one go
	for i := 0; i < len(s); {
		// eight plain ASCII bytes at a time (a message body is mostly
		// that): none of them escaped, none past ASCII
		for i+8 <= len(s) {
			w := s[i : i+8] // (one bounds check, not eight: one load)
			x := uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
				uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
			if !plainASCII8(x) {
				break
			}
			i += 8
		}
		if i == len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != 0x7f {
				i++
				continue
			}
			dst = append(dst, s[plain:i]...)
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexd[c>>4], hexd[c&0xF])
			}
			i++
			plain = i
			continue
		}
		var buf [utf8.UTFMax]byte
		n := copy(buf[:], s[i:min(i+utf8.UTFMax, len(s))])
		r, n := utf8.DecodeRune(buf[:n])
		switch {
		case r == utf8.RuneError && n == 1:
			dst = append(dst, s[plain:i]...)
			dst = append(dst, `\ufffd`...)
		case r == 0x2028 || r == 0x2029:
			dst = append(dst, s[plain:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexd[r&0xF])
		default:
			i += n // valid: stays in the run
			continue
		}
		i += n
		plain = i
	}
	dst = append(dst, s[plain:]...)
	return append(dst, '"')
}

// plainASCII8: each byte of x is ASCII that AppendString copies as it is
// (0x20 to 0x7e, neither '"' nor '\\'). Small enough to be inlined in
// AppendString's loop (a call per eight bytes of a message body cost as
// much as the test).
func plainASCII8(x uint64) bool {
	const (
		ones = 0x0101010101010101
		high = 0x8080808080808080
	)
	// a byte with its high bit set, below 0x20, or (a zero byte after
	// the xor: (v-ones)&^v has its high bit) '"', '\\' or 0x7f: the tests
	// are exact for the lowest such byte below 0x80 (a borrow may flag a
	// byte above it too: the bytes are then looked at one by one), and a
	// byte at or above 0x80 fails the first
	q, b, d := x^('"'*ones), x^('\\'*ones), x^(0x7f*ones)
	return (x|(x-0x20*ones)&^x|(q-ones)&^q|(b-ones)&^b|(d-ones)&^d)&high == 0
}

// AppendFloat appends f as a JSON number in the shortest form that reads
// back to the same value of the given bit size (32 or 64); NaN and the
// infinities, which JSON has no number for, as the strings "NaN",
// "Infinity" and "-Infinity".
func AppendFloat(dst []byte, f float64, bitSize int) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(dst, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(dst, `"-Infinity"`...)
	}
	return strconv.AppendFloat(dst, f, 'g', -1, bitSize)
}

// Writer appends one JSON value made of nested objects and arrays to B.
// Members are written with a key (Str, Int, Open, ...) inside an object,
// elements without one (the Value methods, OpenValue) inside an array; the
// Writer places the commas. Keys are escaped like any string.
type Writer struct {
	B     []byte
	first bool // nothing written yet at the current level
}

// New starts a writer of one value (an object, an array, ...) appended to
// dst.
func New(dst []byte) Writer { return Writer{B: dst, first: true} }

// Object starts a writer of an object appended to dst.
func Object(dst []byte) Writer { return Writer{B: append(dst, '{'), first: true} }

// End closes the top-level object and returns the bytes.
func (w *Writer) End() []byte { return append(w.B, '}') }

func (w *Writer) sep() {
	if !w.first {
		w.B = append(w.B, ',')
	}
	w.first = false
}

// Key writes the key of the next member.
func (w *Writer) Key(k string) {
	w.sep()
	w.B = AppendString(w.B, k)
	w.B = append(w.B, ':')
	w.first = true // the value that follows takes no comma
}

// Str writes a string member.
func (w *Writer) Str(k, v string) { w.Key(k); w.StrValue(v) }

// Bytes writes a member whose value is the string of v's bytes (as UTF-8).
func (w *Writer) Bytes(k string, v []byte) { w.Key(k); w.sep(); w.B = AppendString(w.B, v) }

// Int writes an integer member.
func (w *Writer) Int(k string, v int64) { w.Key(k); w.IntValue(v) }

// Bool writes a boolean member.
func (w *Writer) Bool(k string, v bool) { w.Key(k); w.BoolValue(v) }

// Null writes a null member.
func (w *Writer) Null(k string) { w.Key(k); w.NullValue() }

// Raw writes a member whose value is already JSON.
func (w *Writer) Raw(k string, v []byte) { w.Key(k); w.RawValue(v) }

// Open starts a member that is an object; Close ends it.
func (w *Writer) Open(k string) { w.Key(k); w.OpenValue() }

// OpenArray starts a member that is an array; CloseArray ends it.
func (w *Writer) OpenArray(k string) { w.Key(k); w.OpenArrayValue() }

// StrValue writes a string element.
func (w *Writer) StrValue(v string) { w.sep(); w.B = AppendString(w.B, v) }

// IntValue writes an integer element.
func (w *Writer) IntValue(v int64) { w.sep(); w.B = strconv.AppendInt(w.B, v, 10) }

// BoolValue writes a boolean element.
func (w *Writer) BoolValue(v bool) { w.sep(); w.B = strconv.AppendBool(w.B, v) }

// NullValue writes a null element.
func (w *Writer) NullValue() { w.sep(); w.B = append(w.B, "null"...) }

// FloatValue writes a number element (see AppendFloat).
func (w *Writer) FloatValue(v float64, bitSize int) { w.sep(); w.B = AppendFloat(w.B, v, bitSize) }

// RawValue writes an element that is already JSON.
func (w *Writer) RawValue(v []byte) { w.sep(); w.B = append(w.B, v...) }

// OpenValue starts an element that is an object.
func (w *Writer) OpenValue() { w.sep(); w.B = append(w.B, '{'); w.first = true }

// Close ends an object.
func (w *Writer) Close() { w.B = append(w.B, '}'); w.first = false }

// OpenArrayValue starts an element that is an array.
func (w *Writer) OpenArrayValue() { w.sep(); w.B = append(w.B, '['); w.first = true }

// CloseArray ends an array.
func (w *Writer) CloseArray() { w.B = append(w.B, ']'); w.first = false }
