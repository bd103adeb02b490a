package selector

import (
	"regexp"
	"strconv"
	"strings"
)

// REGEX, REPLACE and SPLIT take java.util.regex patterns (no flags). kahafs
// translates the part of that syntax whose meaning it can state exactly
// into Go's regexp, and reports ErrUnsupported for the rest:
//
//   - literal characters, and any non-alphanumeric character escaped;
//   - \t \n \r \f \a \e, and \d \D \w \W \s \S, which are ASCII in Java
//     (\s includes \x0B, Go's does not): written out as classes;
//   - . (in Java not a line end: \n \r U+0085 U+2028 U+2029);
//   - ^ (the start of the input, without MULTILINE);
//   - $ as the last character of a REGEX pattern: the end of the input, or
//     before a line end that ends it (REGEX tries both);
//   - [...] and [^...] of literals, ranges, escapes and \d \w \s (no
//     nested classes, no &&, no ']' first);
//   - groups ( ) and (?: ), alternation |;
//   - * + ? {n} {n,} {n,m} (up to 1000), each optionally lazy (?).
//
// Anything else (possessive quantifiers, lookaround, backreferences,
// flags, \b, \p{..}, \Q, octal and Unicode escapes, a '{' that is no
// quantifier, POSIX classes) is not translated. Java's and Go's matchers
// both take the leftmost match, preferring alternatives from the left, so
// found-or-not (REGEX) and the matches' places agree; REPLACE and SPLIT
// are not translated when the pattern can match the empty string (the
// engines then differ on empty matches next to other matches).

// javaRegex is the Go translation of a Java pattern; dollar: it ended with
// a '$' (not part of the translation; only REGEX takes it).
type javaRegex struct {
	re     *regexp.Regexp
	end    *regexp.Regexp // with a final '$': re at the end of the text
	dollar bool
}

const (
	lineEnds   = `\n\r\x{85}\x{2028}\x{2029}`
	spaceClass = `\t\n\x0B\f\r `
	wordClass  = `a-zA-Z_0-9`
)

// translateRegex translates p; ok is false when p is outside the subset.
func translateRegex(p string, allowDollar bool) (javaRegex, bool) {
	var b strings.Builder
	rs := []rune(p)
	dollar := false
	if allowDollar && len(rs) > 0 && rs[len(rs)-1] == '$' && (len(rs) < 2 || rs[len(rs)-2] != '\\' || escapedBackslashes(rs[:len(rs)-1])) {
		dollar = true
		rs = rs[:len(rs)-1]
	}
	atomEnd := false // the last thing written can take a quantifier
	depth := 0
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		switch c {
		case '\\':
			if i+1 >= len(rs) {
				return javaRegex{}, false
			}
			i++
			s, ok := escape(rs[i], false)
			if !ok {
				return javaRegex{}, false
			}
			b.WriteString(s)
			atomEnd = true
		case '.':
			b.WriteString(`[^` + lineEnds + `]`)
			atomEnd = true
		case '^':
			b.WriteString(`^`)
			atomEnd = false
		case '$':
			return javaRegex{}, false
		case '|':
			if dollar && depth == 0 {
				return javaRegex{}, false // the '$' would end the last alternative only
			}
			b.WriteByte('|')
			atomEnd = false
		case '(':
			depth++
			if i+1 < len(rs) && rs[i+1] == '?' {
				if i+2 < len(rs) && rs[i+2] == ':' {
					b.WriteString("(?:")
					i += 2
					atomEnd = false
					continue
				}
				return javaRegex{}, false
			}
			b.WriteByte('(')
			atomEnd = false
		case ')':
			depth--
			b.WriteByte(')')
			atomEnd = true
		case '*', '+', '?':
			if !atomEnd {
				return javaRegex{}, false
			}
			b.WriteRune(c)
			i = lazy(rs, i, &b)
			if i < 0 {
				return javaRegex{}, false
			}
			atomEnd = false
		case '{':
			j := runeIndex(rs[i:], '}')
			if !atomEnd || j < 0 || !validRepeat(string(rs[i+1:i+j])) {
				return javaRegex{}, false
			}
			b.WriteString(string(rs[i : i+j+1]))
			i = lazy(rs, i+j, &b)
			if i < 0 {
				return javaRegex{}, false
			}
			atomEnd = false
		case '[':
			j, s, ok := class(rs, i)
			if !ok {
				return javaRegex{}, false
			}
			b.WriteString(s)
			i = j
			atomEnd = true
		case '}', ']':
			b.WriteString(regexp.QuoteMeta(string(c)))
			atomEnd = true
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
			atomEnd = true
		}
	}
	re, err := regexp.Compile(b.String())
	if err != nil {
		return javaRegex{}, false
	}
	j := javaRegex{re: re, dollar: dollar}
	if dollar {
		j.end = regexp.MustCompile(`(?:` + b.String() + `)\z`)
	}
	return j, true
}

func runeIndex(rs []rune, r rune) int {
	for i, c := range rs {
		if c == r {
			return i
		}
	}
	return -1
}

// escapedBackslashes: rs ends with an even run of backslashes preceded by
// something else (so a '$' after them is not escaped). rs ends with '\'.
func escapedBackslashes(rs []rune) bool {
	n := 0
	for i := len(rs) - 1; i >= 0 && rs[i] == '\\'; i-- {
		n++
	}
	return n%2 == 0
}

// lazy writes a '?' after a quantifier ending at i when there is one;
// possessive ('+') is not translated (-1).
func lazy(rs []rune, i int, b *strings.Builder) int {
	if i+1 < len(rs) {
		switch rs[i+1] {
		case '?':
			b.WriteByte('?')
			return i + 1
		case '+':
			return -1
		}
	}
	return i
}

func validRepeat(s string) bool {
	lo, hi, comma := s, "", false
	if k := strings.IndexByte(s, ','); k >= 0 {
		lo, hi, comma = s[:k], s[k+1:], true
	}
	num := func(x string) bool {
		if x == "" || len(x) > 4 {
			return false
		}
		for _, c := range x {
			if c < '0' || c > '9' {
				return false
			}
		}
		return true
	}
	return num(lo) && (!comma || hi == "" || num(hi))
}

// escape translates \c (inClass: inside [...]).
func escape(c rune, inClass bool) (string, bool) {
	wrap := func(s string) string {
		if inClass {
			return s
		}
		return "[" + s + "]"
	}
	switch c {
	case 't':
		return `\t`, true
	case 'n':
		return `\n`, true
	case 'r':
		return `\r`, true
	case 'f':
		return `\f`, true
	case 'a':
		return `\x07`, true
	case 'e':
		return `\x1B`, true
	case 'd':
		return wrap(`0-9`), true
	case 'w':
		return wrap(wordClass), true
	case 's':
		return wrap(spaceClass), true
	case 'D', 'W', 'S':
		if inClass {
			return "", false
		}
		return map[rune]string{'D': `[^0-9]`, 'W': `[^` + wordClass + `]`, 'S': `[^` + spaceClass + `]`}[c], true
	}
	if c < 0x80 && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
		return "", false // \b \p \Q \x \u \0 \1 ...: not translated
	}
	return regexp.QuoteMeta(string(c)), true
}

// class translates the character class starting at rs[i] ('['); j is its
// closing ']'. Its elements are characters, escapes and ranges of two
// characters; a '-' first or last is itself.
func class(rs []rune, i int) (j int, s string, ok bool) {
	type elem struct {
		r     rune
		set   string // \d \w \s: a set, not a character
		dash  bool   // an unescaped '-'
		taken bool   // the end of a range
	}
	var es []elem
	neg := false
	j = i + 1
	if j < len(rs) && rs[j] == '^' {
		neg = true
		j++
	}
	if j < len(rs) && rs[j] == ']' {
		return 0, "", false
	}
	for ; j < len(rs) && rs[j] != ']'; j++ {
		switch c := rs[j]; c {
		case '[':
			return 0, "", false // a nested class
		case '&':
			if j+1 < len(rs) && rs[j+1] == '&' {
				return 0, "", false // an intersection
			}
			es = append(es, elem{r: c})
		case '\\':
			if j+1 >= len(rs) {
				return 0, "", false
			}
			j++
			switch rs[j] {
			case 'd', 'w', 's':
				e, _ := escape(rs[j], true)
				es = append(es, elem{set: e})
			default:
				e, ok := escape(rs[j], true)
				if !ok || rs[j] == 'D' || rs[j] == 'W' || rs[j] == 'S' {
					return 0, "", false
				}
				es = append(es, elem{r: unescapeOne(e)})
			}
		case '-':
			es = append(es, elem{r: c, dash: true})
		default:
			es = append(es, elem{r: c})
		}
	}
	if j >= len(rs) || len(es) == 0 {
		return 0, "", false
	}
	var b strings.Builder
	b.WriteByte('[')
	if neg {
		b.WriteByte('^')
	}
	lit := func(r rune) { b.WriteString(`\x{` + strconv.FormatInt(int64(r), 16) + `}`) }
	for k := 0; k < len(es); k++ {
		e := es[k]
		switch {
		case e.set != "":
			b.WriteString(e.set)
		case e.dash && (k == 0 || k == len(es)-1):
			lit('-')
		case e.dash:
			// a range between two plain characters, the first not
			// already the end of a range
			p, n := es[k-1], es[k+1]
			if p.set != "" || p.dash || p.taken || n.set != "" || n.dash || p.r > n.r {
				return 0, "", false
			}
			b.WriteByte('-')
			lit(n.r)
			es[k+1].taken = true
			k++
		default:
			lit(e.r)
		}
	}
	b.WriteByte(']')
	return j, b.String(), true
}

// unescapeOne is the character an escape() translation of a single
// character stands for.
func unescapeOne(e string) rune {
	switch e {
	case `\t`:
		return '\t'
	case `\n`:
		return '\n'
	case `\r`:
		return '\r'
	case `\f`:
		return '\f'
	case `\x07`:
		return 7
	case `\x1B`:
		return 0x1b
	}
	r := []rune(strings.TrimPrefix(e, `\`))
	return r[0]
}

// find is Matcher.find of the Java pattern: a match anywhere; a final '$'
// matches at the end, or before a final line end ("\r\n" as one).
func (j javaRegex) find(s string) bool {
	if !j.dollar {
		return j.re.MatchString(s)
	}
	if j.end.MatchString(s) {
		return true
	}
	for _, t := range []string{"\r\n", "\n", "\r", "\u0085", "\u2028", "\u2029"} {
		if strings.HasSuffix(s, t) {
			return j.end.MatchString(s[:len(s)-len(t)])
		}
	}
	return false
}

// matchesEmpty: the pattern can match the empty string.
func (j javaRegex) matchesEmpty() bool { return j.re.MatchString("") }
