package selector

import (
	"strconv"
	"unicode/utf8"
)

// A LIKE pattern, as ActiveMQ builds it: a java.util.regex.Pattern,
// compiled with DOTALL, of "\A", the pattern's characters and "\z". '%'
// becomes ".*?", '_' becomes ".", the characters . \ [ ] ^ $ ? * + { } | ( )
// : & < > = ! become "\x" and their code in hexadecimal, and so does a
// character preceded by the ESCAPE character when it is '_', '%' or the
// escape character itself; everything else stays as it is. Hexadecimal
// without leading zeros is Integer.toHexString, and "\x" takes exactly two
// digits: an escaped escape character above U+00FF leaves its other digits
// as literal characters ('∂' is U+2202: "\x22" '0' '2', so it matches the
// text `"02`), and one below U+0010 takes the next character of the regular
// expression as its second digit, or makes the pattern invalid
// (PatternSyntaxException, and so InvalidSelectorException) when that is
// not a hexadecimal digit.
//
// kahafs builds the same regular expression, as runes, and reads it back
// the way java.util.regex reads this subset: literals, "\xHH", ".", ".*?",
// "\A" and "\z". Matching is by code point, anchored at both ends.
type likePattern []likeItem

type likeItem struct {
	op likeOp
	r  rune // opLit
}

type likeOp uint8

const (
	opLit  likeOp = iota
	opAny         // "."
	opStar        // ".*?"
)

// likeControl are the characters ActiveMQ escapes (REGEXP_CONTROL_CHARS).
const likeControl = `.\[]^$?*+{}|():&<>=!`

// compileLike builds the pattern ActiveMQ builds for like with escape
// (-1: none); err describes a PatternSyntaxException.
func compileLike(like string, escape rune) (likePattern, string) {
	rx := []rune{'\\', 'A'}
	hexEscape := func(c rune) {
		rx = append(rx, '\\', 'x')
		for _, d := range strconv.FormatInt(int64(c&0xffff), 16) {
			rx = append(rx, d)
		}
	}
	rs := []rune(like)
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		if c == escape && i+1 < len(rs) && (rs[i+1] == '_' || rs[i+1] == '%' || rs[i+1] == c) {
			i++
			hexEscape(rs[i])
			continue
		}
		switch {
		case c == '%':
			rx = append(rx, '.', '*', '?')
		case c == '_':
			rx = append(rx, '.')
		case c < utf8.RuneSelf && containsByte(likeControl, byte(c)):
			hexEscape(c)
		default:
			rx = append(rx, c)
		}
	}
	rx = append(rx, '\\', 'z')
	return readLikeRegex(rx)
}

func containsByte(s string, b byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == b {
			return true
		}
	}
	return false
}

// readLikeRegex reads the regular expression compileLike built.
func readLikeRegex(rx []rune) (likePattern, string) {
	var p likePattern
	for i := 0; i < len(rx); i++ {
		c := rx[i]
		switch {
		case c == '\\' && i+1 < len(rx) && (rx[i+1] == 'A' || rx[i+1] == 'z'):
			// \A at the start and \z at the end: the match is anchored.
			i++
		case c == '\\' && i+1 < len(rx) && rx[i+1] == 'x':
			if i+3 >= len(rx) || hexVal(rx[i+2]) < 0 || hexVal(rx[i+3]) < 0 {
				return nil, "Illegal hexadecimal escape sequence near index " + strconv.Itoa(i+3)
			}
			p = append(p, likeItem{op: opLit, r: rune(hexVal(rx[i+2])<<4 | hexVal(rx[i+3]))})
			i += 3
		case c == '.' && i+2 < len(rx) && rx[i+1] == '*' && rx[i+2] == '?':
			p = append(p, likeItem{op: opStar})
			i += 2
		case c == '.':
			p = append(p, likeItem{op: opAny})
		default:
			p = append(p, likeItem{op: opLit, r: c})
		}
	}
	return p, ""
}

func hexVal(r rune) int {
	switch {
	case r >= '0' && r <= '9':
		return int(r - '0')
	case r >= 'a' && r <= 'f':
		return int(r-'a') + 10
	case r >= 'A' && r <= 'F':
		return int(r-'A') + 10
	}
	return -1
}

// match reports whether the whole of s matches, code point by code point:
// the usual wildcard matching, going back to the last ".*?" on a mismatch
// (time O(len(s) * len(p)) at worst).
func (p likePattern) match(s string) bool {
	text := []rune(s)
	ti, pi := 0, 0
	star, starT := -1, 0
	for ti < len(text) {
		if pi < len(p) {
			switch it := p[pi]; it.op {
			case opStar:
				star, starT = pi, ti
				pi++
				continue
			case opAny:
				ti++
				pi++
				continue
			case opLit:
				if it.r == text[ti] {
					ti++
					pi++
					continue
				}
			}
		}
		if star < 0 {
			return false
		}
		starT++
		ti, pi = starT, star+1
	}
	for pi < len(p) && p[pi].op == opStar {
		pi++
	}
	return pi == len(p)
}
