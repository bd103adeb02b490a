package main

import (
	"unicode"
	"unicode/utf8"
)

// appendSafe appends s for a terminal: names from clients (destinations,
// subscription keys, message and transaction ids) may hold control bytes
// (ESC starts terminal escape sequences, CR and LF forge lines), invisible
// or bidi-reordering format characters, or invalid UTF-8. Those are written
// as Go-style escapes (\x1b, \u202e); everything else as it is. JSON output
// escapes on its own and does not go through here.
func appendSafe(dst, s []byte) []byte {
	const hexd = "0123456789abcdef"
	for len(s) > 0 {
		r, n := utf8.DecodeRune(s)
		switch {
		case r == utf8.RuneError && n == 1:
			dst = append(dst, '\\', 'x', hexd[s[0]>>4], hexd[s[0]&0xF])
		case r < 0x80 && (r < 0x20 || r == 0x7f):
			dst = append(dst, '\\', 'x', hexd[r>>4], hexd[r&0xF])
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
			dst = append(dst, '\\', 'u')
			for sh := 12; sh >= 0; sh -= 4 {
				dst = append(dst, hexd[(r>>sh)&0xF])
			}
		default:
			dst = append(dst, s[:n]...)
		}
		s = s[n:]
	}
	return dst
}

// safe is appendSafe for strings.
func safe(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return string(appendSafe(nil, []byte(s)))
		}
	}
	return s
}
