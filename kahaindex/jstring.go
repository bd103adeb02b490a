package kahaindex

import (
	"fmt"
	"unicode/utf16"
)

// jstring is a Java String: UTF-16 code units, as DataInputStream.readUTF
// produces them. Keys are compared as Java compares them (String.compareTo,
// code unit by code unit), which is not Go's byte order for characters
// above U+FFFF.
type jstring []uint16

// String converts to Go; a lone surrogate becomes U+FFFD.
func (s jstring) String() string { return string(utf16.Decode(s)) }

// compareJava is java.lang.String.compareTo.
func compareJava(a, b jstring) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return int(a[i]) - int(b[i])
		}
	}
	return len(a) - len(b)
}

// decodeModifiedUTF8 decodes the body of a DataOutput.writeUTF string the
// way DataInputStream.readUTF does: 1-, 2- and 3-byte forms only (NUL as
// C0 80, characters above U+FFFF as two 3-byte surrogates), overlong forms
// accepted, anything else an error naming the byte position.
func decodeModifiedUTF8(b []byte) (jstring, error) {
	out := make(jstring, 0, len(b))
	for i := 0; i < len(b); {
		c := b[i]
		switch c >> 4 {
		case 0, 1, 2, 3, 4, 5, 6, 7:
			out = append(out, uint16(c))
			i++
		case 12, 13:
			if i+2 > len(b) {
				return nil, fmt.Errorf("partial character at end (byte %d)", i)
			}
			c2 := b[i+1]
			if c2&0xC0 != 0x80 {
				return nil, fmt.Errorf("malformed input around byte %d", i+1)
			}
			out = append(out, uint16(c&0x1F)<<6|uint16(c2&0x3F))
			i += 2
		case 14:
			if i+3 > len(b) {
				return nil, fmt.Errorf("partial character at end (byte %d)", i)
			}
			c2, c3 := b[i+1], b[i+2]
			if c2&0xC0 != 0x80 || c3&0xC0 != 0x80 {
				return nil, fmt.Errorf("malformed input around byte %d", i+2)
			}
			out = append(out, uint16(c&0x0F)<<12|uint16(c2&0x3F)<<6|uint16(c3&0x3F))
			i += 3
		default:
			return nil, fmt.Errorf("malformed input around byte %d", i)
		}
	}
	return out, nil
}
