package fsnode

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Name escaping: destination names, subscription keys, transaction ids and
// message ids come from the journal, that is from clients, and may hold any
// bytes. EscapeName turns such a raw name into one path component that
//
//   - is never empty, ".", ".." and never starts with a dot;
//   - holds no '/', no NUL, no control character, no invalid UTF-8 and no
//     non-printable rune;
//   - is at most MaxNameLen bytes long;
//   - maps back to exactly one raw name (UnescapeName), so two different
//     raw names never share an escaped name.
//
// The rules, applied per rune of the raw name (an invalid UTF-8 byte counts
// as a rune of its own):
//
//   - '%', '/', ASCII control bytes (0x00-0x1F, 0x7F), bytes that are not
//     valid UTF-8 and runes that unicode.IsPrint rejects (other than the
//     ASCII space) become '%' followed by two upper-case hex digits per
//     byte of their UTF-8 encoding ("/" → "%2F", "%" → "%25");
//   - a '.' at the very start becomes "%2E" (so ".", ".." and hidden names
//     cannot occur);
//   - every other rune is kept as it is;
//   - the empty name is written "%".
//
// When the result is longer than MaxNameLen bytes, it is cut at the last
// rune or escape boundary before MaxNameLen-34 bytes and "%#" plus 32 hex
// lower-case hex digits (the first 128 bits of the SHA-256 of the raw name) are appended.
// "%#" never occurs in a name that was not shortened, so a shortened name
// cannot collide with a full one; UnescapeName returns the raw prefix of a
// shortened name, and the directory resolves it by comparing EscapeName of
// its entries that start with that prefix.

// MaxNameLen is the longest path component Linux accepts (NAME_MAX).
const MaxNameLen = 255

const (
	escapeChar  = '%'
	hashMarker  = "%#"
	hashHexLen  = 32
	hashSuffix  = len(hashMarker) + hashHexLen
	maxPrefix   = MaxNameLen - hashSuffix
	upperHex    = "0123456789ABCDEF"
	emptyEscape = "%"
)

// ErrBadName: a path component that EscapeName cannot have produced.
var ErrBadName = errors.New("not an escaped name")

// EscapeName returns the path component for raw (see the rules above).
func EscapeName(raw string) string { return escapeName(raw, MaxNameLen) }

// escapeName is EscapeName with a smaller limit, for names that carry a
// prefix or suffix of their own (pending messages).
func escapeName(raw string, limit int) string {
	if raw == "" {
		return emptyEscape
	}
	var b strings.Builder
	b.Grow(len(raw) + 8)
	cut := -1 // last unit boundary at or below maxPrefix
	for i := 0; i < len(raw); {
		r, n := utf8.DecodeRuneInString(raw[i:])
		if needsEscape(r, n, i) {
			for k := 0; k < n; k++ {
				c := raw[i+k]
				b.WriteByte(escapeChar)
				b.WriteByte(upperHex[c>>4])
				b.WriteByte(upperHex[c&0xF])
			}
		} else {
			b.WriteString(raw[i : i+n])
		}
		i += n
		if b.Len() <= limit-hashSuffix {
			cut = b.Len()
		}
	}
	s := b.String()
	if len(s) <= limit {
		return s
	}
	sum := sha256.Sum256([]byte(raw))
	return s[:cut] + hashMarker + strings.ToLower(hex.EncodeToString(sum[:hashHexLen/2]))
}

// appendEscaped appends escapeName(raw, limit) to dst, without
// allocating when raw is printable ASCII that needs no escape and no
// shortening (message ids as brokers make them): a listing names every
// message this way (see listStream).
func appendEscaped(dst []byte, raw string, limit int) []byte {
	if raw == "" || len(raw) > limit || raw[0] == '.' {
		return append(dst, escapeName(raw, limit)...)
	}
	for i := 0; i < len(raw); i++ {
		if c := raw[i]; c < 0x20 || c >= 0x7F || c == escapeChar || c == '/' {
			return append(dst, escapeName(raw, limit)...)
		}
	}
	return append(dst, raw...)
}

func needsEscape(r rune, n, pos int) bool {
	switch {
	case r == utf8.RuneError && n == 1:
		return true // invalid UTF-8 byte
	case r == escapeChar || r == '/':
		return true
	case r < 0x20 || r == 0x7F:
		return true
	case r == '.' && pos == 0:
		return true
	case r == ' ':
		return false
	default:
		return !unicode.IsPrint(r)
	}
}

// UnescapeName parses a path component made by EscapeName. For a full
// name it returns the raw name and full = true. For a shortened name it
// returns the raw prefix and full = false: the raw name is the one entry
// starting with that prefix whose EscapeName equals name. Any other string
// (including non-canonical spellings such as "%41" for "A" or lower-case
// hex) is ErrBadName, so that every raw name has exactly one path.
func UnescapeName(name string) (raw string, full bool, err error) {
	if name == emptyEscape {
		return "", true, nil
	}
	body := name
	if i := strings.Index(name, hashMarker); i >= 0 {
		if len(name)-i != hashSuffix || i == 0 || len(name) > MaxNameLen {
			return "", false, ErrBadName
		}
		for _, c := range name[i+len(hashMarker):] {
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return "", false, ErrBadName
			}
		}
		body = name[:i]
	}
	out := make([]byte, 0, len(body))
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c != escapeChar {
			out = append(out, c)
			continue
		}
		if i+2 >= len(body) {
			return "", false, ErrBadName
		}
		hi, lo := unhex(body[i+1]), unhex(body[i+2])
		if hi < 0 || lo < 0 {
			return "", false, ErrBadName
		}
		out = append(out, byte(hi<<4|lo))
		i += 2
	}
	raw = string(out)
	if body != name {
		// Shortened: the prefix must be spelled canonically and be exactly
		// what EscapeName keeps of a longer name.
		if EscapeName(raw) != body || len(body) > maxPrefix {
			return "", false, ErrBadName
		}
		return raw, false, nil
	}
	if EscapeName(raw) != name {
		return "", false, ErrBadName
	}
	return raw, true, nil
}

// unhex decodes one upper-case hex digit, -1 if it is not one.
func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
