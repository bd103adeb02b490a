package selector

import (
	"math"
	"math/big"
	"strconv"
	"strings"
)

// MaxDepth bounds how deep a selector nests: parentheses, NOT and unary
// signs each nest what follows one level deeper, and so does a function
// call its arguments ("((a))" and "NOT NOT a" nest 2 levels). ActiveMQ has
// no limit but its thread's stack: a StackOverflowError, which it reports
// as an InvalidSelectorException. With 1 MiB stacks that happened from 800
// levels of parentheses in a JVM that had parsed a few thousand selectors
// (compiled code), and only past 2000 in a fresh one; 500 levels always
// parsed.
const MaxDepth = 500

// convertPrefix makes ActiveMQ convert strings to the other operand's type
// in comparisons (ComparisonExpression.CONVERT_STRING_EXPRESSIONS); it is
// not part of the selector.
const convertPrefix = "convert_string_expressions:"

// Selector is a parsed JMS message selector. It is immutable and safe for
// concurrent use.
type Selector struct {
	src  string
	root boolExpr
	// inexact: a double literal's Java text is not reproduced, so
	// JavaString may differ from ActiveMQ's.
	inexact bool
}

// String is the selector as given to Parse.
func (s *Selector) String() string { return s.src }

// JavaString is the parsed selector as ActiveMQ prints it
// (BooleanExpression.toString): every operation in parentheses, the way
// ActiveMQ understood the precedence, "a IS NULL" as "(a = NULL)", LIKE as
// "(LIKE a)" without its pattern. A double literal outside the range where
// kahafs reproduces Java's text may print differently.
func (s *Selector) JavaString() string { return s.root.String() }

// Parse parses a JMS message selector as ActiveMQ 5.17.2 does
// (SelectorParser.parse): it accepts what ActiveMQ accepts, and rejects
// what it rejects with a *SyntaxError naming the place (wrapping ErrSyntax
// or ErrInvalid), apart from nesting deeper than MaxDepth (ErrTooDeep). A
// selector starting with "convert_string_expressions:" is the rest of it,
// with comparisons converting strings to the other operand's type.
func Parse(s string) (*Selector, error) {
	p := &parser{src: s}
	body := s
	if strings.HasPrefix(s, convertPrefix) {
		p.convert = true
		p.base = len(convertPrefix)
		body = s[p.base:]
	}
	p.toks = lex(body)
	root, err := p.parse()
	if err != nil {
		return nil, p.rebase(err)
	}
	return &Selector{src: s, root: root, inexact: p.inexact}, nil
}

// MustParse is Parse that panics on an error; for tests and constants.
func MustParse(s string) *Selector {
	sel, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return sel
}

type parser struct {
	src     string
	base    int // offset of the parsed text in src (after the prefix)
	toks    []token
	i       int
	depth   int
	convert bool
	inexact bool
	scanned map[int]int // scanner.unary's results by token: the end, -1 when it fails
}

// rebase turns an error's place in the parsed text into its place in the
// selector (the prefix is on the first line).
func (p *parser) rebase(e *SyntaxError) *SyntaxError {
	e.Offset += p.base
	if e.Line == 1 {
		e.Column += p.base
	}
	return e
}

// parsePanic carries an error up to parse from deep in the parser or a
// scan: the lexical error of reading the tErr token, or ErrTooDeep.
type parsePanic struct{ err *SyntaxError }

// parse is selector, reporting a parsePanic met on the way.
func (p *parser) parse() (sel boolExpr, err *SyntaxError) {
	defer func() {
		if r := recover(); r != nil {
			lp, ok := r.(parsePanic)
			if !ok {
				panic(r)
			}
			sel, err = nil, lp.err
		}
	}()
	return p.selector()
}

// at reads token i: reading the tErr token is its lexical error.
func (p *parser) at(i int) token {
	if i >= len(p.toks) {
		i = len(p.toks) - 1
	}
	t := p.toks[i]
	if t.k == tErr {
		panic(parsePanic{t.err})
	}
	return t
}

func (p *parser) tok() token { return p.at(p.i) }

func (p *parser) peek(n int) token { return p.at(p.i + n) }

func (p *parser) next() token {
	t := p.at(p.i)
	if t.k != tEOF {
		p.i++
	}
	return t
}

// body is the parsed text.
func (p *parser) body() string { return p.src[p.base:] }

// unexpected is JavaCC's ParseException at token t. The end of the input
// is where ActiveMQ's parser reports it: at its last character.
func (p *parser) unexpected(t token) *SyntaxError {
	if t.k == tEOF {
		if t.pos == 0 {
			return syntaxErr(p.body(), 0, "empty selector", ErrSyntax)
		}
		return syntaxErr(p.body(), lastRuneStart(p.body()), "unexpected end", ErrSyntax)
	}
	return syntaxErr(p.body(), t.pos, "unexpected "+t.describe(), ErrSyntax)
}

func lastRuneStart(s string) int {
	i := len(s) - 1
	for i > 0 && s[i]&0xc0 == 0x80 {
		i--
	}
	return i
}

func (p *parser) invalid(at int, msg string) *SyntaxError {
	return syntaxErr(p.body(), at, msg, ErrInvalid)
}

func (p *parser) expect(k tokKind) (token, *SyntaxError) {
	t := p.tok()
	if t.k != k {
		return t, p.unexpected(t)
	}
	return p.next(), nil
}

func (p *parser) enter() *SyntaxError {
	p.depth++
	if p.depth > MaxDepth+1 { // the outermost unaryExpr is at depth 1
		return p.tooDeep(p.tok())
	}
	return nil
}

func (p *parser) tooDeep(t token) *SyntaxError {
	return syntaxErr(p.body(), t.pos, "nesting deeper than "+strconv.Itoa(MaxDepth)+" levels", ErrTooDeep)
}

func (p *parser) leave() { p.depth-- }

// selector: orExpression <EOF>, a boolean expression.
func (p *parser) selector() (boolExpr, *SyntaxError) {
	e, err := p.orExpr()
	if err != nil {
		return nil, err
	}
	if t := p.tok(); t.k != tEOF {
		return nil, p.unexpected(t)
	}
	return p.asBoolean(e)
}

// asBoolean is SelectorParser.asBooleanExpression: a boolean expression
// as it is, a property read as a boolean, anything else rejected.
func (p *parser) asBoolean(e expr) (boolExpr, *SyntaxError) {
	if b, ok := e.(boolExpr); ok && isBoolean(e) {
		return b, nil
	}
	if pe, ok := e.(*propExpr); ok {
		return &castExpr{x: pe}, nil
	}
	return nil, p.invalid(e.pos(), "Expression will not result in a boolean value: "+e.String())
}

func (p *parser) orExpr() (expr, *SyntaxError) {
	left, err := p.andExpr()
	if err != nil {
		return nil, err
	}
	for p.tok().k == tOR {
		p.next()
		right, err := p.andExpr()
		if err != nil {
			return nil, err
		}
		l, err := p.asBoolean(left)
		if err != nil {
			return nil, err
		}
		r, err := p.asBoolean(right)
		if err != nil {
			return nil, err
		}
		left = newLogic(true, l, r)
	}
	return left, nil
}

func (p *parser) andExpr() (expr, *SyntaxError) {
	left, err := p.equalityExpr()
	if err != nil {
		return nil, err
	}
	for p.tok().k == tAND {
		p.next()
		right, err := p.equalityExpr()
		if err != nil {
			return nil, err
		}
		l, err := p.asBoolean(left)
		if err != nil {
			return nil, err
		}
		r, err := p.asBoolean(right)
		if err != nil {
			return nil, err
		}
		left = newLogic(false, l, r)
	}
	return left, nil
}

// newLogic is LogicExpression.createOR/createAND: a left operand that is
// already an OR (AND) takes the right one as one more operand.
func newLogic(or bool, l, r boolExpr) boolExpr {
	if le, ok := l.(*logicExpr); ok && le.or == or {
		le.xs = append(le.xs, r)
		return le
	}
	return &logicExpr{or: or, xs: []boolExpr{l, r}}
}

func (p *parser) equalityExpr() (expr, *SyntaxError) {
	left, err := p.comparisonExpr()
	if err != nil {
		return nil, err
	}
	for {
		t := p.tok()
		switch {
		case t.k == tEQ || t.k == tNE:
			p.next()
			right, err := p.comparisonExpr()
			if err != nil {
				return nil, err
			}
			eq, err := p.newEqual(t, left, right)
			if err != nil {
				return nil, err
			}
			left = eq
			if t.k == tNE {
				left = &notExpr{at: t.pos, x: eq}
			}
		case t.k == tIS && p.peek(1).k == tNULL:
			p.next()
			p.next()
			left = &equalExpr{at: t.pos, l: left, r: nullConst(t.pos), convert: p.convert}
		case t.k == tIS:
			p.next()
			if _, err := p.expect(tNOT); err != nil {
				return nil, err
			}
			if _, err := p.expect(tNULL); err != nil {
				return nil, err
			}
			left = &notExpr{at: t.pos, x: &equalExpr{at: t.pos, l: left, r: nullConst(t.pos), convert: p.convert}}
		default:
			return left, nil
		}
	}
}

// newEqual is ComparisonExpression.createEqual with its checks: NULL
// cannot be an operand, and a TRUE or FALSE literal cannot be compared
// with a literal that is not one.
func (p *parser) newEqual(op token, l, r expr) (*equalExpr, *SyntaxError) {
	for _, e := range []expr{l, r} {
		if c, ok := e.(*constExpr); ok && c.v.isNull() {
			return nil, p.invalid(c.at, "'"+c.String()+"' cannot be compared.")
		}
	}
	lc, lok := l.(*constExpr)
	rc, rok := r.(*constExpr)
	if lok && rok && lc.boolean && !rc.boolean {
		return nil, p.invalid(op.pos, "'"+lc.String()+"' cannot be compared with '"+rc.String()+"'")
	}
	return &equalExpr{at: op.pos, l: l, r: r, convert: p.convert}, nil
}

// newCompare is createGreaterThan and the others, with
// checkLessThanOperand: a literal operand must be a number, and a boolean
// expression cannot be one.
func (p *parser) newCompare(at int, op tokKind, l, r expr) (*compareExpr, *SyntaxError) {
	for _, e := range []expr{l, r} {
		if c, ok := e.(*constExpr); ok {
			if !c.v.isNumber() {
				return nil, p.invalid(c.at, "Value '"+c.String()+"' cannot be compared.")
			}
			continue
		}
		if isBoolean(e) {
			return nil, p.invalid(e.pos(), "Value '"+e.String()+"' cannot be compared.")
		}
	}
	return &compareExpr{at: at, op: op, l: l, r: r, convert: p.convert}, nil
}

func (p *parser) comparisonExpr() (expr, *SyntaxError) {
	left, err := p.addExpr()
	if err != nil {
		return nil, err
	}
	for {
		t := p.tok()
		not := false
		if t.k == tNOT {
			switch p.peek(1).k {
			case tLIKE, tBETWEEN, tIN:
				not = true
				p.next()
			default:
				return left, nil
			}
		}
		op := p.tok()
		switch op.k {
		case tGT, tGE, tLT, tLE:
			p.next()
			right, err := p.addExpr()
			if err != nil {
				return nil, err
			}
			c, err := p.newCompare(op.pos, op.k, left, right)
			if err != nil {
				return nil, err
			}
			left = c
		case tLIKE:
			p.next()
			pat, err := p.stringLiteral()
			if err != nil {
				return nil, err
			}
			escape := rune(-1)
			if p.tok().k == tESCAPE {
				p.next()
				et := p.tok()
				esc, err := p.stringLiteral()
				if err != nil {
					return nil, err
				}
				if utf16Len(esc) != 1 {
					return nil, p.invalid(et.pos, "The ESCAPE string litteral is invalid.  It can only be one character.  Litteral used: "+esc)
				}
				escape = []rune(esc)[0]
			}
			lp, perr := compileLike(pat, escape)
			if perr != "" {
				return nil, p.invalid(op.pos, "java.util.regex.PatternSyntaxException: "+perr)
			}
			var like boolExpr = &likeExpr{at: op.pos, x: left, pat: lp}
			if not {
				like = &notExpr{at: t.pos, x: like}
			}
			left = like
		case tBETWEEN:
			p.next()
			low, err := p.addExpr()
			if err != nil {
				return nil, err
			}
			if _, err := p.expect(tAND); err != nil {
				return nil, err
			}
			high, err := p.addExpr()
			if err != nil {
				return nil, err
			}
			// createBetween: value >= low AND value <= high;
			// createNotBetween: value < low OR value > high.
			lo, hi := tGE, tLE
			if not {
				lo, hi = tLT, tGT
			}
			a, err := p.newCompare(op.pos, lo, left, low)
			if err != nil {
				return nil, err
			}
			b, err := p.newCompare(op.pos, hi, left, high)
			if err != nil {
				return nil, err
			}
			left = newLogic(not, a, b)
		case tIN:
			p.next()
			if _, err := p.expect(tLParen); err != nil {
				return nil, err
			}
			var list []string
			for {
				s, err := p.stringLiteral()
				if err != nil {
					return nil, err
				}
				list = append(list, s)
				if p.tok().k != tComma {
					break
				}
				p.next()
			}
			if _, err := p.expect(tRParen); err != nil {
				return nil, err
			}
			pe, ok := left.(*propExpr)
			if !ok {
				return nil, p.invalid(op.pos, "Expected a property for In expression, got: "+left.String())
			}
			left = newIn(op.pos, pe, list, not)
		default:
			return left, nil
		}
	}
}

// addExpr: multExpr (("+" | "-") multExpr)*. ActiveMQ's grammar takes a
// sign as an operator only when a multExpr follows it (a syntactic
// lookahead): when none does, the sign is left for the rule above, where
// it is an error.
func (p *parser) addExpr() (expr, *SyntaxError) {
	left, err := p.multExpr()
	if err != nil {
		return nil, err
	}
	for {
		op := p.tok()
		if op.k != tPlus && op.k != tMinus {
			return left, nil
		}
		if _, ok := p.scanner().mult(p.i + 1); !ok {
			return left, nil
		}
		p.next()
		right, err := p.multExpr()
		if err != nil {
			return nil, err
		}
		left = &arithExpr{at: op.pos, op: op.k, l: left, r: right}
	}
}

func (p *parser) multExpr() (expr, *SyntaxError) {
	left, err := p.unaryExpr()
	if err != nil {
		return nil, err
	}
	for {
		op := p.tok()
		if op.k != tStar && op.k != tSlash && op.k != tPercent {
			return left, nil
		}
		p.next()
		right, err := p.unaryExpr()
		if err != nil {
			return nil, err
		}
		left = &arithExpr{at: op.pos, op: op.k, l: left, r: right}
	}
}

func (p *parser) unaryExpr() (expr, *SyntaxError) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	t := p.tok()
	switch t.k {
	case tPlus:
		// A no-op, taken only when a unaryExpr follows (a syntactic
		// lookahead); else no alternative matches.
		if _, ok := p.scanner().unary(p.i + 1); !ok {
			return nil, p.unexpected(t)
		}
		p.next()
		return p.unaryExpr()
	case tMinus:
		p.next()
		e, err := p.unaryExpr()
		if err != nil {
			return nil, err
		}
		return &negExpr{at: t.pos, x: e}, nil
	case tNOT:
		p.next()
		e, err := p.unaryExpr()
		if err != nil {
			return nil, err
		}
		b, err := p.asBoolean(e)
		if err != nil {
			return nil, err
		}
		return &notExpr{at: t.pos, x: b}, nil
	case tXPATH, tXQUERY:
		p.next()
		s, err := p.stringLiteral()
		if err != nil {
			return nil, err
		}
		if t.k == tXPATH {
			return &xpathExpr{at: t.pos, s: s}, nil
		}
		return &xqueryExpr{at: t.pos, s: s}, nil
	case tID:
		if p.peek(1).k == tLParen {
			return p.functionCall()
		}
	}
	return p.primaryExpr()
}

// functionCall: ID "(" unaryExpr ("," unaryExpr)* ")", one of the
// functions ActiveMQ registers (FunctionCallExpression), by its exact name.
func (p *parser) functionCall() (expr, *SyntaxError) {
	name := p.next()
	p.next() // (
	var args []expr
	for {
		a, err := p.unaryExpr()
		if err != nil {
			return nil, err
		}
		args = append(args, a)
		if p.tok().k != tComma {
			break
		}
		p.next()
	}
	if _, err := p.expect(tRParen); err != nil {
		return nil, err
	}
	f, ok := functions[name.text]
	if !ok {
		return nil, p.invalid(name.pos, "invalid function name, \""+name.text+"\"")
	}
	if len(args) < f.minArgs || f.maxArgs >= 0 && len(args) > f.maxArgs {
		return nil, p.invalid(name.pos, "invalid call of function "+name.text)
	}
	return &funcExpr{at: name.pos, name: name.text, f: f, args: args}, nil
}

func (p *parser) primaryExpr() (expr, *SyntaxError) {
	t := p.tok()
	switch t.k {
	case tLParen:
		p.next()
		e, err := p.orExpr()
		if err != nil {
			return nil, err
		}
		if _, err := p.expect(tRParen); err != nil {
			return nil, err
		}
		return e, nil
	case tID:
		p.next()
		return newProp(t.pos, t.text), nil
	}
	return p.literal()
}

func (p *parser) literal() (expr, *SyntaxError) {
	t := p.tok()
	switch t.k {
	case tString:
		s, err := p.stringLiteral()
		if err != nil {
			return nil, err
		}
		return &constExpr{at: t.pos, v: strVal(s)}, nil
	case tDecimal:
		p.next()
		return &constExpr{at: t.pos, v: decimalLiteral(t.text)}, nil
	case tHex, tOctal:
		p.next()
		digits, base := t.text, 8
		if t.k == tHex {
			digits, base = t.text[2:], 16
		}
		n, err := strconv.ParseInt(digits, base, 64)
		if err != nil {
			return nil, p.invalid(t.pos, "java.lang.NumberFormatException: For input string: \""+digits+"\" under radix "+strconv.Itoa(base))
		}
		return &constExpr{at: t.pos, v: narrow(n)}, nil
	case tFloat:
		p.next()
		f, err := strconv.ParseFloat(t.text, 64)
		if err != nil && !isRangeErr(err) {
			return nil, p.invalid(t.pos, "bad floating point literal "+t.text)
		}
		if _, ok := javaDoubleString(f); !ok {
			p.inexact = true
		}
		return &constExpr{at: t.pos, v: doubleVal(f)}, nil
	case tTRUE:
		p.next()
		return &constExpr{at: t.pos, v: vTrue, boolean: true}, nil
	case tFALSE:
		p.next()
		return &constExpr{at: t.pos, v: vFalse, boolean: true}, nil
	case tNULL:
		p.next()
		return nullConst(t.pos), nil
	}
	return nil, p.unexpected(t)
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

func nullConst(at int) *constExpr { return &constExpr{at: at, v: vNull, boolean: true} }

// decimalLiteral is ConstantExpression.createFromDecimal: without its l or
// L, a Long, or a BigDecimal when too big for one; then an Integer when
// its longValue (for a BigDecimal: its low 64 bits) fits in an int. So 5L
// is an Integer and 18446744073709551617 is the Integer 1.
func decimalLiteral(text string) val {
	text = strings.TrimRight(text, "lL")
	if n, err := strconv.ParseInt(text, 10, 64); err == nil {
		return narrow(n)
	}
	b, _ := new(big.Int).SetString(text, 10)
	if l := lowBits(b); l >= math.MinInt32 && l <= math.MaxInt32 {
		return intVal(int32(l))
	}
	return val{k: kBig, n: b}
}

// narrow is an Integer when n fits in an int, else a Long.
func narrow(n int64) val {
	if n >= math.MinInt32 && n <= math.MaxInt32 {
		return intVal(int32(n))
	}
	return longVal(n)
}

// stringLiteral reads a string literal, ” standing for '.
func (p *parser) stringLiteral() (string, *SyntaxError) {
	t, err := p.expect(tString)
	if err != nil {
		return "", err
	}
	return strings.ReplaceAll(t.text[1:len(t.text)-1], "''", "'"), nil
}
