package selector

import (
	"strings"
	"sync"
)

// The functions ActiveMQ registers (BuiltinFunctionRegistry), called by
// their exact names. REGEX, REPLACE and SPLIT use Java regular
// expressions: kahafs evaluates those it translates (regex.go), and a
// REPLACE replacement without $ or \, and reports ErrUnsupported
// otherwise.
type function struct {
	minArgs, maxArgs int  // maxArgs -1: any number
	boolean          bool // returnsBoolean: a BooleanExpression
	eval             func(e *funcExpr, c *evalCtx) (val, error)
}

var functions map[string]*function

func init() {
	functions = map[string]*function{
		"INLIST":   {minArgs: 2, maxArgs: 2, boolean: true, eval: inList},
		"MAKELIST": {minArgs: 1, maxArgs: -1, eval: makeList},
		"REGEX":    {minArgs: 2, maxArgs: 2, boolean: true, eval: regexMatch},
		"REPLACE":  {minArgs: 3, maxArgs: 3, eval: replace},
		"SPLIT":    {minArgs: 2, maxArgs: 3, eval: split},
	}
}

// funcExpr is a FunctionCallExpression (a BooleanFunctionCallExpr when the
// function returns a boolean).
type funcExpr struct {
	at   int
	name string
	f    *function
	args []expr
	// regexes caches translateRegex by pattern (and allowDollar): a
	// selector's patterns are mostly literals. Safe for concurrent use.
	regexes sync.Map
}

type regexKey struct {
	pattern     string
	allowDollar bool
}

type regexEntry struct {
	re javaRegex
	ok bool
}

// regex is translateRegex, cached.
func (e *funcExpr) regex(p string, allowDollar bool) (javaRegex, bool) {
	k := regexKey{p, allowDollar}
	if v, ok := e.regexes.Load(k); ok {
		r := v.(regexEntry)
		return r.re, r.ok
	}
	re, ok := translateRegex(p, allowDollar)
	e.regexes.Store(k, regexEntry{re, ok})
	return re, ok
}

func (e *funcExpr) pos() int { return e.at }

func (e *funcExpr) String() string {
	parts := make([]string, len(e.args))
	for i, a := range e.args {
		parts[i] = a.String()
	}
	return e.name + "(" + strings.Join(parts, ", ") + ")"
}

func (e *funcExpr) eval(c *evalCtx) (val, error) { return e.f.eval(e, c) }

// matches: a null result is false.
func (e *funcExpr) matches(c *evalCtx) (bool, error) { return isTrue(e.eval(c)) }

func (e *funcExpr) npe(what string) error {
	return &EvalError{Offset: e.at, Exception: exNullPointer, Err: ErrException, Msg: e.name + ": " + what + " is null"}
}

func (e *funcExpr) unsupported(what string) error {
	return &EvalError{Offset: e.at, Err: ErrUnsupported, Msg: e.name + " with " + what}
}

// inList is INLIST(list, value): whether an element of the list equals
// the value. Not a list is a ClassCastException; a null list, or a null
// element met before a match, a NullPointerException.
func inList(e *funcExpr, c *evalCtx) (val, error) {
	l, err := e.args[0].eval(c)
	if err != nil {
		return vNull, err
	}
	if !l.isNull() && l.k != kList {
		return vNull, castErr(e.args[0].pos(), l.k, "java.util.List")
	}
	cand, err := e.args[1].eval(c)
	if err != nil {
		return vNull, err
	}
	if l.isNull() {
		return vNull, e.npe("the list")
	}
	for _, x := range l.o.l {
		if x.isNull() {
			return vNull, e.npe("an element of the list")
		}
		if !cand.isNull() && javaEquals(x, cand) {
			return vTrue, nil
		}
	}
	return vFalse, nil
}

// makeList is MAKELIST(a, ...): a new list of the values (nulls too).
func makeList(e *funcExpr, c *evalCtx) (val, error) {
	l := make([]val, len(e.args))
	for i, a := range e.args {
		v, err := a.eval(c)
		if err != nil {
			return vNull, err
		}
		l[i] = v
	}
	return newList(l), nil
}

// regexMatch is REGEX(pattern, text): whether the pattern is found in the
// text (Matcher.find), each converted with toString; a null pattern or
// text is FALSE (the text is not evaluated when the pattern is null).
func regexMatch(e *funcExpr, c *evalCtx) (val, error) {
	re, err := e.args[0].eval(c)
	if err != nil || re.isNull() {
		return vFalse, err
	}
	res, ok := javaString(re)
	if !ok {
		return vNull, e.unsupported("Java's text of a " + kindClass[re.k])
	}
	cand, err := e.args[1].eval(c)
	if err != nil || cand.isNull() {
		return vFalse, err
	}
	cs, ok := javaString(cand)
	if !ok {
		return vNull, e.unsupported("Java's text of a " + kindClass[cand.k])
	}
	jr, ok := e.regex(res, true)
	if !ok {
		return vNull, e.unsupported("the Java regular expression " + quote(res))
	}
	return boolVal(jr.find(cs)), nil
}

// replace is REPLACE(text, pattern, replacement): String.replaceAll. Each
// argument must be a String (else a ClassCastException); a null text or
// pattern is a NullPointerException, and so is a null replacement when
// the pattern is found.
func replace(e *funcExpr, c *evalCtx) (val, error) {
	var s [3]val
	for i := range s {
		v, err := e.stringArg(c, i)
		if err != nil {
			return vNull, err
		}
		s[i] = v
	}
	if s[0].isNull() {
		return vNull, e.npe("the text")
	}
	if s[1].isNull() {
		return vNull, e.npe("the pattern")
	}
	re, ok := e.regex(s[1].s, false)
	if !ok || re.matchesEmpty() {
		return vNull, e.unsupported("the Java regular expression " + quote(s[1].s))
	}
	if !re.re.MatchString(s[0].s) {
		return s[0], nil
	}
	if s[2].isNull() {
		return vNull, e.npe("the replacement")
	}
	if strings.ContainsAny(s[2].s, `$\`) {
		return vNull, e.unsupported("the replacement " + quote(s[2].s))
	}
	return strVal(re.re.ReplaceAllLiteralString(s[0].s, s[2].s)), nil
}

// split is SPLIT(text, pattern[, limit]): String.split, as a list. The
// text and pattern must be Strings, the limit an Integer (else a
// ClassCastException); null ones are a NullPointerException.
func split(e *funcExpr, c *evalCtx) (val, error) {
	src, err := e.stringArg(c, 0)
	if err != nil {
		return vNull, err
	}
	pat, err := e.stringArg(c, 1)
	if err != nil {
		return vNull, err
	}
	limit := int64(0)
	if len(e.args) > 2 {
		l, err := e.args[2].eval(c)
		if err != nil {
			return vNull, err
		}
		if !l.isNull() && l.k != kInt {
			return vNull, castErr(e.args[2].pos(), l.k, "java.lang.Integer")
		}
		if l.isNull() {
			return vNull, e.npe("the limit")
		}
		limit = l.i
	}
	if src.isNull() {
		return vNull, e.npe("the text")
	}
	if pat.isNull() {
		return vNull, e.npe("the pattern")
	}
	re, ok := e.regex(pat.s, false)
	if !ok || re.matchesEmpty() {
		return vNull, e.unsupported("the Java regular expression " + quote(pat.s))
	}
	var parts []string
	switch {
	case !re.re.MatchString(src.s):
		parts = []string{src.s}
	case limit > 0:
		parts = re.re.Split(src.s, int(min(limit, int64(len(src.s)+1))))
	default:
		parts = re.re.Split(src.s, -1)
		if limit == 0 {
			for len(parts) > 0 && parts[len(parts)-1] == "" {
				parts = parts[:len(parts)-1]
			}
		}
	}
	l := make([]val, len(parts))
	for i, p := range parts {
		l[i] = strVal(p)
	}
	return newList(l), nil
}

// stringArg is (String) args[i].evaluate(...): null or a String.
func (e *funcExpr) stringArg(c *evalCtx, i int) (val, error) {
	v, err := e.args[i].eval(c)
	if err != nil {
		return vNull, err
	}
	if !v.isNull() && v.k != kString {
		return vNull, castErr(e.args[i].pos(), v.k, "java.lang.String")
	}
	return v, nil
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
