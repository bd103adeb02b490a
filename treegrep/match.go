package treegrep

import (
	"bytes"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
)

// Syntax is how a pattern is read.
type Syntax int

const (
	// Basic is grep's default: a POSIX basic regular expression (with
	// GNU's \| \+ \?), translated to RE2; what RE2 cannot do exactly
	// (back-references, \< \>, \w and the other GNU escapes, [= =] and
	// [. .]) is refused, not read as something else.
	Basic Syntax = iota
	// Extended is grep -E, read as RE2 syntax (Go's regexp): close to
	// POSIX ERE, with RE2's escapes (\b, \w, \d, …) and without
	// back-references.
	Extended
	// Fixed is grep -F: each line of the pattern a string.
	Fixed
)

// Matcher finds the lines of a file's content that match a pattern, as
// grep does: a file is lines ended by "\n" (a last line without one is a
// line too; an empty file has none), and a file holding a NUL byte has its
// NULs end lines as well (GNU grep's binary files). A pattern of several
// lines matches a line that any of them matches.
type Matcher struct {
	re    *regexp.Regexp
	fixed []byte // set when the pattern is one fixed string matched by bytes
}

// Compile reads pattern in the given syntax; ignoreCase is grep -i
// (Unicode simple case folding, as grep in a UTF-8 locale).
func Compile(pattern string, syn Syntax, ignoreCase bool) (*Matcher, error) {
	lines := strings.Split(pattern, "\n")
	if syn == Fixed && !ignoreCase && len(lines) == 1 {
		return &Matcher{fixed: []byte(pattern)}, nil
	}
	alts := make([]string, 0, len(lines))
	for _, l := range lines {
		var expr string
		switch syn {
		case Fixed:
			expr = regexp.QuoteMeta(l)
		case Extended:
			expr = l
		default:
			var err error
			if expr, err = basicToRE2(l); err != nil {
				return nil, fmt.Errorf("pattern %q: %w", l, err)
			}
		}
		if _, err := syntax.Parse(expr, syntax.Perl); err != nil {
			return nil, fmt.Errorf("pattern %q: %w", l, err)
		}
		alts = append(alts, "(?:"+expr+")")
	}
	flags := syntax.Perl &^ syntax.OneLine // ^ and $ at line ends
	if ignoreCase {
		flags |= syntax.FoldCase
	}
	tree, err := syntax.Parse(strings.Join(alts, "|"), flags)
	if err != nil {
		return nil, fmt.Errorf("pattern %q: %w", pattern, err)
	}
	// A match is within a line: nothing the pattern says matches "\n"
	// (Go's [^a] does; grep's, which reads a line at a time, cannot).
	withoutNewline(tree)
	re, err := regexp.Compile(tree.String())
	if err != nil {
		return nil, fmt.Errorf("pattern %q: %w", pattern, err)
	}
	return &Matcher{re: re}, nil
}

// withoutNewline takes "\n" out of every character class of re.
func withoutNewline(re *syntax.Regexp) {
	switch re.Op {
	case syntax.OpAnyChar:
		re.Op = syntax.OpAnyCharNotNL
	case syntax.OpCharClass:
		var out []rune
		for i := 0; i+1 < len(re.Rune); i += 2 {
			lo, hi := re.Rune[i], re.Rune[i+1]
			if lo <= '\n' && '\n' <= hi {
				if lo < '\n' {
					out = append(out, lo, '\n'-1)
				}
				if hi > '\n' {
					out = append(out, '\n'+1, hi)
				}
				continue
			}
			out = append(out, lo, hi)
		}
		re.Rune = out
		if len(out) == 0 {
			re.Op = syntax.OpNoMatch
		}
	}
	for _, sub := range re.Sub {
		withoutNewline(sub)
	}
}

// Count returns how many lines of b match (with all false, it stops at
// the first: 0 or 1).
func (m *Matcher) Count(b []byte, all bool) int {
	if len(b) == 0 {
		return 0
	}
	if bytes.IndexByte(b, 0) >= 0 {
		b = bytes.ReplaceAll(b, []byte{0}, []byte{'\n'}) // a copy: b may be shared
	}
	if b[len(b)-1] == '\n' {
		b = b[:len(b)-1] // the last line's end: no line after it
	}
	n := 0
	for pos := 0; pos <= len(b); {
		at := m.index(b[pos:])
		if at < 0 {
			break
		}
		n++
		if !all {
			break
		}
		nl := bytes.IndexByte(b[pos+at:], '\n')
		if nl < 0 {
			break
		}
		pos += at + nl + 1 // the next line
	}
	return n
}

// index is where the first match in b (which starts a line) starts.
func (m *Matcher) index(b []byte) int {
	if m.re == nil {
		return bytes.Index(b, m.fixed)
	}
	loc := m.re.FindIndex(b)
	if loc == nil {
		return -1
	}
	return loc[0]
}

// basicToRE2 translates a POSIX basic regular expression (grep's
// default, with GNU's \| \+ \? and \{m,n\}) to RE2 syntax, and refuses
// what RE2 would not match alike.
func basicToRE2(p string) (string, error) {
	var out strings.Builder
	// start: at the start of the expression or of a group or
	// alternative, where * is a literal and ^ an anchor.
	start := true
	for i := 0; i < len(p); i++ {
		c := p[i]
		wasStart := start
		start = false
		switch c {
		case '\\':
			if i+1 == len(p) {
				return "", fmt.Errorf("trailing backslash")
			}
			i++
			switch d := p[i]; d {
			case '(':
				out.WriteByte('(')
				start = true
			case ')':
				out.WriteByte(')')
			case '|':
				out.WriteByte('|')
				start = true
			case '{':
				j := strings.Index(p[i:], `\}`)
				if j < 0 {
					return "", fmt.Errorf(`unmatched \{`)
				}
				inner := p[i+1 : i+j]
				if inner == "" || strings.Trim(inner, "0123456789,") != "" {
					return "", fmt.Errorf(`invalid content of \{\}`)
				}
				if wasStart {
					return "", fmt.Errorf(`\{ with nothing to repeat`)
				}
				if inner[0] == ',' {
					inner = "0" + inner // GNU's \{,n\}; RE2's {,n} is a literal
				}
				out.WriteString("{" + inner + "}")
				i += j + 1
			case '+', '?':
				if wasStart {
					out.WriteString(`\` + string(d))
				} else {
					out.WriteByte(d)
				}
			case '.', '*', '[', ']', '^', '$', '\\', '/':
				out.WriteString(regexp.QuoteMeta(string(d)))
			default:
				if d >= '1' && d <= '9' {
					return "", fmt.Errorf(`back-reference \%c is not supported (RE2 has none)`, d)
				}
				return "", fmt.Errorf(`\%c is not supported in a basic regular expression here (-E takes RE2 syntax, e.g. \b, \w)`, d)
			}
		case '*':
			if wasStart {
				out.WriteString(`\*`)
			} else {
				out.WriteByte('*')
			}
		case '^':
			if wasStart {
				out.WriteByte('^')
				start = true // ^* : the * is a literal
			} else {
				out.WriteString(`\^`)
			}
		case '$':
			if i+1 == len(p) || strings.HasPrefix(p[i+1:], `\)`) || strings.HasPrefix(p[i+1:], `\|`) {
				out.WriteByte('$')
			} else {
				out.WriteString(`\$`)
			}
		case '[':
			n, cls, err := bracket(p[i:])
			if err != nil {
				return "", err
			}
			out.WriteString(cls)
			i += n - 1
		case '(', ')', '{', '}', '|', '+', '?':
			out.WriteString(`\` + string(c))
		default:
			out.WriteByte(c)
		}
	}
	return out.String(), nil
}

// bracket translates the POSIX bracket expression p starts with; it
// returns how many bytes of p it takes. A backslash in it is a literal.
func bracket(p string) (int, string, error) {
	var out strings.Builder
	out.WriteByte('[')
	i := 1
	if i < len(p) && p[i] == '^' {
		out.WriteByte('^')
		i++
	}
	first := true
	for ; i < len(p); i++ {
		c := p[i]
		switch {
		case c == ']' && !first:
			out.WriteByte(']')
			return i + 1, out.String(), nil
		case c == '[' && i+1 < len(p) && (p[i+1] == '=' || p[i+1] == '.'):
			return 0, "", fmt.Errorf("[%c %c] in a bracket expression is not supported", p[i+1], p[i+1])
		case c == '[' && i+1 < len(p) && p[i+1] == ':':
			j := strings.Index(p[i+2:], ":]")
			if j < 0 {
				return 0, "", fmt.Errorf("unmatched [: in a bracket expression")
			}
			out.WriteString(p[i : i+2+j+2])
			i += 2 + j + 1
		case c == '\\' || c == ']' || c == '[':
			out.WriteString(`\` + string(c))
		default:
			out.WriteByte(c)
		}
		first = false
	}
	return 0, "", fmt.Errorf("unmatched [")
}
