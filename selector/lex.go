package selector

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// tokKind is a token of ActiveMQ's selector grammar (SelectorParser.jj).
type tokKind uint8

const (
	tEOF tokKind = iota
	// Reserved words, in any case.
	tNOT
	tAND
	tOR
	tBETWEEN
	tLIKE
	tESCAPE
	tIN
	tIS
	tTRUE
	tFALSE
	tNULL
	tXPATH
	tXQUERY
	// Literals and identifiers.
	tDecimal // [1-9][0-9]*[lL]?
	tHex     // 0[xX][0-9a-fA-F]+
	tOctal   // 0[0-7]*
	tFloat   // [0-9]+.[0-9]*exp? | .[0-9]+exp? | [0-9]+exp
	tString  // '...' with '' for '
	tID      // [a-zA-Z_$][a-zA-Z0-9_$]*
	// Operators.
	tEQ
	tNE
	tGT
	tGE
	tLT
	tLE
	tPlus
	tMinus
	tStar
	tSlash
	tPercent
	tLParen
	tRParen
	tComma
	// tErr stands where the lexer failed: reading it is the lexical
	// error (token.err).
	tErr
)

var keywords = map[string]tokKind{
	"NOT": tNOT, "AND": tAND, "OR": tOR, "BETWEEN": tBETWEEN, "LIKE": tLIKE, "ESCAPE": tESCAPE,
	"IN": tIN, "IS": tIS, "TRUE": tTRUE, "FALSE": tFALSE, "NULL": tNULL, "XPATH": tXPATH, "XQUERY": tXQUERY,
}

type token struct {
	k        tokKind
	pos, end int // byte offsets in the selector
	text     string
	err      *SyntaxError // tErr
}

// describe is how an error names the token (JavaCC's "Encountered: ").
func (t token) describe() string {
	if t.k == tEOF {
		return "<EOF>"
	}
	return t.text
}

// lex splits s into tokens the way JavaCC's generated token manager does:
// up to the first lexical error, which ends the list as a tErr token (the
// parser reports it only when it reads that far, as JavaCC's parser reads
// tokens when it needs them), else the list ends with tEOF. The tokens are
// at each point the longest match of any token (or of white space or a
// comment, which are skipped), the first declared on a tie (reserved
// words before identifiers). White space is space, tab, newline, carriage
// return and form feed; "--" starts a comment only when a line end follows
// somewhere (else it is two minus signs), "/*" only when "*/" follows
// (else a slash).
func lex(s string) []token {
	var toks []token
	i := 0
	for i < len(s) {
		c := s[i]
		switch c {
		case ' ', '\t', '\n', '\r', '\f':
			i++
			continue
		}
		if strings.HasPrefix(s[i:], "--") {
			if j := strings.IndexAny(s[i:], "\n\r"); j >= 0 {
				i += j + 1
				if s[i-1] == '\r' && i < len(s) && s[i] == '\n' {
					i++
				}
				continue
			}
		}
		if strings.HasPrefix(s[i:], "/*") {
			if j := strings.Index(s[i+2:], "*/"); j >= 0 {
				i += 2 + j + 2
				continue
			}
		}
		start := i
		var k tokKind
		switch {
		case isIDStart(c):
			i++
			for i < len(s) && isIDPart(s[i]) {
				i++
			}
			k = tID
			if kw, ok := keywords[strings.ToUpper(s[start:i])]; ok {
				k = kw
			}
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(s) && isDigit(s[i+1]):
			k, i = lexNumber(s, i)
		case c == '\'':
			// Unterminated, the literal is the longest one that ends
			// (at the first quote of the last '' pair), as JavaCC falls
			// back to its last accepting state.
			i++
			lastEnd := -1
			for {
				if i >= len(s) {
					if lastEnd < 0 {
						return append(toks, lexErr(s, len(s), "unterminated string literal starting at offset "+strconv.Itoa(start)))
					}
					i = lastEnd
					break
				}
				if s[i] == '\'' {
					if i+1 < len(s) && s[i+1] == '\'' {
						lastEnd = i + 1
						i += 2
						continue
					}
					i++
					break
				}
				i++
			}
			k = tString
		case c == '.':
			// A '.' not followed by a digit: the error is at the next
			// character, which is not one.
			if i+1 >= len(s) {
				return append(toks, lexErr(s, len(s), "'.' at the end"))
			}
			r, _ := utf8.DecodeRuneInString(s[i+1:])
			return append(toks, lexErr(s, i+1, "unexpected character "+quoteRune(r)+" after '.'"))
		default:
			k, i = lexOperator(s, i)
			if k == tEOF {
				r, _ := utf8.DecodeRuneInString(s[i:])
				return append(toks, lexErr(s, i, "unexpected character "+quoteRune(r)))
			}
		}
		toks = append(toks, token{k: k, pos: start, end: i, text: s[start:i]})
	}
	return append(toks, token{k: tEOF, pos: len(s), end: len(s)})
}

// lexErr is a lexical error at offset (len(s): the end), placed as
// JavaCC's TokenMgrError places it: at the character, or one column
// further when it is the last one or the end.
func lexErr(s string, offset int, msg string) token {
	e := syntaxErr(s, offset, msg, ErrSyntax)
	if offset < len(s) {
		if _, n := utf8.DecodeRuneInString(s[offset:]); offset+n == len(s) {
			e.Column++
		}
	}
	return token{k: tErr, pos: offset, end: offset, err: e}
}

func isIDStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '$'
}

func isIDPart(c byte) bool { return isIDStart(c) || isDigit(c) }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isHexDigit(c byte) bool { return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// lexNumber returns the longest numeric literal at s[i:] (a tie goes to
// the first declared: decimal, hexadecimal, octal, floating point).
func lexNumber(s string, i int) (tokKind, int) {
	digits := func(j int) int {
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		return j
	}
	exponent := func(j int) int { // the end of an exponent at j, or j
		if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
			k := j + 1
			if k < len(s) && (s[k] == '+' || s[k] == '-') {
				k++
			}
			if e := digits(k); e > k {
				return e
			}
		}
		return j
	}
	best, bestEnd := tEOF, i
	try := func(k tokKind, end int) {
		if end > bestEnd {
			best, bestEnd = k, end
		}
	}
	if s[i] >= '1' && s[i] <= '9' {
		e := digits(i + 1)
		if e < len(s) && (s[e] == 'l' || s[e] == 'L') {
			e++
		}
		try(tDecimal, e)
	}
	if s[i] == '0' && i+2 < len(s) && (s[i+1] == 'x' || s[i+1] == 'X') && isHexDigit(s[i+2]) {
		e := i + 2
		for e < len(s) && isHexDigit(s[e]) {
			e++
		}
		try(tHex, e)
	}
	if s[i] == '0' {
		e := i + 1
		for e < len(s) && s[e] >= '0' && s[e] <= '7' {
			e++
		}
		try(tOctal, e)
	}
	if s[i] == '.' {
		try(tFloat, exponent(digits(i+1)))
	} else {
		d := digits(i)
		if d < len(s) && s[d] == '.' {
			try(tFloat, exponent(digits(d+1)))
		} else if e := exponent(d); e > d {
			try(tFloat, e)
		}
	}
	return best, bestEnd
}

// lexOperator returns the operator at s[i:] (tEOF: none).
func lexOperator(s string, i int) (tokKind, int) {
	two := ""
	if i+2 <= len(s) {
		two = s[i : i+2]
	}
	switch two {
	case "<>":
		return tNE, i + 2
	case "<=":
		return tLE, i + 2
	case ">=":
		return tGE, i + 2
	}
	switch s[i] {
	case '=':
		return tEQ, i + 1
	case '>':
		return tGT, i + 1
	case '<':
		return tLT, i + 1
	case '+':
		return tPlus, i + 1
	case '-':
		return tMinus, i + 1
	case '*':
		return tStar, i + 1
	case '/':
		return tSlash, i + 1
	case '%':
		return tPercent, i + 1
	case '(':
		return tLParen, i + 1
	case ')':
		return tRParen, i + 1
	case ',':
		return tComma, i + 1
	}
	return tEOF, i
}

func quoteRune(r rune) string {
	return strconv.QuoteRune(r) + " (U+" + strings.ToUpper(strconv.FormatInt(int64(r), 16)) + ")"
}

// position is where offset is, counted as ActiveMQ's parser (JavaCC's
// SimpleCharStream, tab size 1) counts: line and column from 1, a column
// per UTF-16 unit, "\r", "\n" and "\r\n" ending a line.
func position(s string, offset int) (line, col int) {
	line, col = 1, 0
	prevCR := false
	for i, r := range s {
		if i >= offset {
			break
		}
		switch {
		case prevCR && r == '\n':
			prevCR = false
			continue
		case r == '\n' || r == '\r':
			line++
			col = 0
			prevCR = r == '\r'
			continue
		case r >= 0x10000:
			col += 2
		default:
			col++
		}
		prevCR = false
	}
	return line, col + 1
}

func syntaxErr(s string, offset int, msg string, sentinel error) *SyntaxError {
	line, col := position(s, offset)
	return &SyntaxError{Offset: offset, Line: line, Column: col, Msg: msg, Err: sentinel}
}
