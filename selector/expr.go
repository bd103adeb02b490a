package selector

import (
	"math/big"
	"strings"
)

// The expression tree mirrors ActiveMQ's classes, because what the parser
// accepts depends on them (a property can be read as a boolean, a number
// literal cannot; only a property can be IN a list) and so does the
// evaluation (each class evaluates in its own way, and evaluates as a
// value, evaluate, differently from as the whole selector, matches).

// expr is an Expression.
type expr interface {
	// eval is Expression.evaluate: the value, null (vNull) when unknown.
	eval(c *evalCtx) (val, error)
	// pos is the byte offset of the expression in the parsed text.
	pos() int
	// String is the expression's toString.
	String() string
}

// boolExpr is a BooleanExpression: also matches, what the broker calls on
// the whole selector.
type boolExpr interface {
	expr
	matches(c *evalCtx) (bool, error)
}

// isBoolean reports whether e is an instance of BooleanExpression: a
// constant is one only when it is TRUE, FALSE or NULL, a function call
// only when the function returns a boolean.
func isBoolean(e expr) bool {
	switch e := e.(type) {
	case *constExpr:
		return e.boolean
	case *funcExpr:
		return e.f.boolean
	case *propExpr, *arithExpr, *negExpr:
		return false
	}
	return true
}

// constExpr is a ConstantExpression; boolean: a BooleanConstantExpression
// (TRUE, FALSE, NULL).
type constExpr struct {
	at      int
	v       val
	boolean bool
}

func (e *constExpr) pos() int                       { return e.at }
func (e *constExpr) eval(*evalCtx) (val, error)     { return e.v, nil }
func (e *constExpr) matches(*evalCtx) (bool, error) { return e.v.isTrue(), nil }

func (e *constExpr) String() string {
	switch e.v.k {
	case kNull:
		return "NULL"
	case kBool:
		if e.v.isTrue() {
			return "TRUE"
		}
		return "FALSE"
	case kString:
		return "'" + strings.ReplaceAll(e.v.s, "'", "''") + "'"
	}
	s, _ := javaString(e.v)
	return s
}

// propExpr is a PropertyExpression: a header field or a property.
type propExpr struct {
	at     int
	name   string
	header func(*Message) val // nil: a property
}

func newProp(at int, name string) *propExpr {
	return &propExpr{at: at, name: name, header: headers[name]}
}

func (e *propExpr) pos() int       { return e.at }
func (e *propExpr) String() string { return e.name }

func (e *propExpr) eval(c *evalCtx) (val, error) {
	if e.header != nil {
		v := e.header(c.m)
		if v.isNull() && e.name == "JMSXUserID" {
			// The property instead; ActiveMQ ignores its failing to
			// unmarshal here (null).
			if c.m.PropertiesErr != nil {
				return vNull, nil
			}
			return c.property(e.at, e.name)
		}
		return v, nil
	}
	return c.property(e.at, e.name)
}

// castExpr is UnaryExpression.createBooleanCast: a property where a
// boolean is expected. Not a Boolean is FALSE.
type castExpr struct{ x *propExpr }

func (e *castExpr) pos() int       { return e.x.at }
func (e *castExpr) String() string { return e.x.String() }

func (e *castExpr) eval(c *evalCtx) (val, error) {
	v, err := e.x.eval(c)
	if err != nil || v.isNull() {
		return vNull, err
	}
	if v.k != kBool {
		return vFalse, nil
	}
	return v, nil
}

func (e *castExpr) matches(c *evalCtx) (bool, error) { return isTrue(e.eval(c)) }

func isTrue(v val, err error) (bool, error) { return err == nil && v.isTrue(), err }

// logicExpr is LogicExpression: AND or OR of two or more operands.
type logicExpr struct {
	or bool
	xs []boolExpr
}

func (e *logicExpr) pos() int { return e.xs[0].pos() }

func (e *logicExpr) String() string {
	sym := " AND "
	if e.or {
		sym = " OR "
	}
	if len(e.xs) == 2 {
		return "( " + e.xs[0].String() + sym + e.xs[1].String() + " )"
	}
	parts := make([]string, len(e.xs))
	for i, x := range e.xs {
		parts[i] = x.String()
	}
	return "(" + strings.Join(parts, sym) + ")"
}

// eval: three-valued logic, operands from left to right, stopping at the
// first that decides (TRUE for OR, FALSE for AND); else null if any was
// null.
func (e *logicExpr) eval(c *evalCtx) (val, error) {
	nulls := false
	for _, x := range e.xs {
		v, err := x.eval(c)
		if err != nil {
			return vNull, err
		}
		if v.isNull() {
			nulls = true
		} else if v.isTrue() == e.or {
			return v, nil
		}
	}
	if nulls {
		return vNull, nil
	}
	return boolVal(!e.or), nil
}

// matches: each operand's matches, from left to right, stopping at the
// first that decides.
func (e *logicExpr) matches(c *evalCtx) (bool, error) {
	for _, x := range e.xs {
		m, err := x.matches(c)
		if err != nil {
			return false, err
		}
		if m == e.or {
			return m, nil
		}
	}
	return !e.or, nil
}

// notExpr is UnaryExpression.createNOT.
type notExpr struct {
	at int
	x  boolExpr
}

func (e *notExpr) pos() int       { return e.at }
func (e *notExpr) String() string { return "(NOT " + e.x.String() + ")" }

func (e *notExpr) eval(c *evalCtx) (val, error) {
	v, err := e.x.eval(c)
	if err != nil || v.isNull() {
		return vNull, err
	}
	return boolVal(!v.isTrue()), nil
}

// matches negates the operand's value, not its matches: NOT of unknown is
// false.
func (e *notExpr) matches(c *evalCtx) (bool, error) {
	v, err := e.x.eval(c)
	if err != nil || v.isNull() {
		return false, err
	}
	return !v.isTrue(), nil
}

// equalExpr is ComparisonExpression's EqualsExpression (=, and so <>,
// IS NULL, IS NOT NULL).
type equalExpr struct {
	at      int
	l, r    expr
	convert bool
}

func (e *equalExpr) pos() int       { return e.at }
func (e *equalExpr) String() string { return "(" + e.l.String() + " = " + e.r.String() + ")" }

// eval: a null left operand against a non-null right one is unknown, a
// non-null left against a null right FALSE, two nulls TRUE; then equals,
// then compare when both are Comparable.
func (e *equalExpr) eval(c *evalCtx) (val, error) {
	lv, err := e.l.eval(c)
	if err != nil {
		return vNull, err
	}
	rv, err := e.r.eval(c)
	if err != nil {
		return vNull, err
	}
	if lv.isNull() != rv.isNull() {
		if lv.isNull() {
			return vNull, nil
		}
		return vFalse, nil
	}
	if lv.isNull() || javaEquals(lv, rv) {
		return vTrue, nil
	}
	if lv.comparable() && rv.comparable() {
		return compare(e.at, lv, rv, e.convert, tEQ)
	}
	return vFalse, nil
}

// matches: one null operand is false, two are true; values of the same
// class are compared with equals only.
func (e *equalExpr) matches(c *evalCtx) (bool, error) {
	lv, err := e.l.eval(c)
	if err != nil {
		return false, err
	}
	rv, err := e.r.eval(c)
	if err != nil {
		return false, err
	}
	if lv.isNull() != rv.isNull() {
		return false, nil
	}
	if lv.isNull() || javaEquals(lv, rv) {
		return true, nil
	}
	if lv.k == rv.k {
		return false, nil
	}
	if lv.comparable() && rv.comparable() {
		return isTrue(compare(e.at, lv, rv, e.convert, tEQ))
	}
	return false, nil
}

// compareExpr is >, >=, < or <= (BETWEEN is two of them).
type compareExpr struct {
	at      int
	op      tokKind
	l, r    expr
	convert bool
}

var opSymbol = map[tokKind]string{
	tGT: ">", tGE: ">=", tLT: "<", tLE: "<=", tEQ: "=",
	tPlus: "+", tMinus: "-", tStar: "*", tSlash: "/", tPercent: "%",
}

func (e *compareExpr) pos() int { return e.at }
func (e *compareExpr) String() string {
	return "(" + e.l.String() + " " + opSymbol[e.op] + " " + e.r.String() + ")"
}

// eval: each operand must be Comparable (a byte array, map or list is a
// ClassCastException); a null one makes the comparison unknown (the right
// one is not evaluated when the left one is null).
func (e *compareExpr) eval(c *evalCtx) (val, error) {
	lv, err := e.l.eval(c)
	if err != nil {
		return vNull, err
	}
	if !lv.isNull() && !lv.comparable() {
		return vNull, castErr(e.l.pos(), lv.k, "java.lang.Comparable")
	}
	if lv.isNull() {
		return vNull, nil
	}
	rv, err := e.r.eval(c)
	if err != nil {
		return vNull, err
	}
	if !rv.isNull() && !rv.comparable() {
		return vNull, castErr(e.r.pos(), rv.k, "java.lang.Comparable")
	}
	if rv.isNull() {
		return vNull, nil
	}
	return compare(e.at, lv, rv, e.convert, e.op)
}

func (e *compareExpr) matches(c *evalCtx) (bool, error) { return isTrue(e.eval(c)) }

func castErr(at int, from kind, to string) error {
	return &EvalError{Offset: at, Exception: exClassCast, Err: ErrException,
		Msg: "class " + kindClass[from] + " cannot be cast to class " + to}
}

// likeExpr is LIKE (NOT LIKE is a NOT of it).
type likeExpr struct {
	at  int
	x   expr
	pat likePattern
}

func (e *likeExpr) pos() int       { return e.at }
func (e *likeExpr) String() string { return "(LIKE " + e.x.String() + ")" }

// eval: null is unknown, anything but a String is FALSE.
func (e *likeExpr) eval(c *evalCtx) (val, error) {
	v, err := e.x.eval(c)
	if err != nil || v.isNull() {
		return vNull, err
	}
	if v.k != kString {
		return vFalse, nil
	}
	return boolVal(e.pat.match(v.s)), nil
}

func (e *likeExpr) matches(c *evalCtx) (bool, error) { return isTrue(e.eval(c)) }

// inExpr is IN and NOT IN: a property against a list of strings.
type inExpr struct {
	at   int
	x    *propExpr
	list []string // for toString: as written, or in HashSet order from 5 on
	set  map[string]bool
	not  bool
}

func newIn(at int, x *propExpr, list []string, not bool) *inExpr {
	e := &inExpr{at: at, x: x, list: list, set: make(map[string]bool, len(list)), not: not}
	for _, s := range list {
		e.set[s] = true
	}
	if len(list) >= 5 {
		e.list = hashSetOrder(list)
	}
	return e
}

func (e *inExpr) pos() int { return e.at }

func (e *inExpr) String() string {
	sym := " IN ( "
	if e.not {
		sym = " NOT IN ( "
	}
	return e.x.String() + sym + strings.Join(e.list, ", ") + " )"
}

// eval: null, and anything but a String, is unknown (also for NOT IN).
func (e *inExpr) eval(c *evalCtx) (val, error) {
	v, err := e.x.eval(c)
	if err != nil || v.isNull() || v.k != kString {
		return vNull, err
	}
	return boolVal(e.set[v.s] != e.not), nil
}

func (e *inExpr) matches(c *evalCtx) (bool, error) { return isTrue(e.eval(c)) }

// arithExpr is +, -, *, / or %.
type arithExpr struct {
	at   int
	op   tokKind
	l, r expr
}

func (e *arithExpr) pos() int { return e.at }
func (e *arithExpr) String() string {
	return "(" + e.l.String() + " " + opSymbol[e.op] + " " + e.r.String() + ")"
}

// eval: null when an operand is (the right one is not evaluated when the
// left one is null); a String plus anything is their concatenation; else
// both must be numbers: Integer arithmetic (wrapping) unless one is a Long
// (Long arithmetic) or a Float or Double (double arithmetic); / and % are
// always double arithmetic (so 7 / 2 is 3.5 and 1 / 0 Infinity).
func (e *arithExpr) eval(c *evalCtx) (val, error) {
	lv, err := e.l.eval(c)
	if err != nil || lv.isNull() {
		return vNull, err
	}
	rv, err := e.r.eval(c)
	if err != nil || rv.isNull() {
		return vNull, err
	}
	if e.op == tPlus && lv.k == kString {
		s, ok := javaString(rv)
		if !ok {
			return vNull, &EvalError{Offset: e.at, Err: ErrUnsupported,
				Msg: "Java's text of a " + kindClass[rv.k] + " value (string concatenation)"}
		}
		return strVal(lv.s + s), nil
	}
	if !lv.isNumber() {
		return vNull, &EvalError{Offset: e.at, Exception: exRuntime, Err: ErrException,
			Msg: "Cannot call " + arithName[e.op] + " operation on a " + kindClass[lv.k]}
	}
	if !rv.isNumber() {
		return vNull, &EvalError{Offset: e.at, Exception: exRuntime, Err: ErrException,
			Msg: "Cannot convert a " + kindClass[rv.k] + " into a number"}
	}
	if e.op == tSlash {
		return doubleVal(lv.doubleValue() / rv.doubleValue()), nil
	}
	if e.op == tPercent {
		return doubleVal(javaRem(lv.doubleValue(), rv.doubleValue())), nil
	}
	switch {
	case lv.k == kFloat || lv.k == kDouble || rv.k == kFloat || rv.k == kDouble:
		a, b := lv.doubleValue(), rv.doubleValue()
		switch e.op {
		case tPlus:
			return doubleVal(a + b), nil
		case tMinus:
			return doubleVal(a - b), nil
		}
		return doubleVal(a * b), nil
	case lv.k == kLong || rv.k == kLong:
		a, b := lv.longValue(), rv.longValue()
		switch e.op {
		case tPlus:
			return longVal(a + b), nil
		case tMinus:
			return longVal(a - b), nil
		}
		return longVal(a * b), nil
	}
	a, b := lv.intValue(), rv.intValue()
	switch e.op {
	case tPlus:
		return intVal(a + b), nil
	case tMinus:
		return intVal(a - b), nil
	}
	return intVal(a * b), nil
}

var arithName = map[tokKind]string{tPlus: "plus", tMinus: "minus", tStar: "multiply", tSlash: "divide", tPercent: "mod"}

// negExpr is UnaryExpression.createNegate.
type negExpr struct {
	at int
	x  expr
}

func (e *negExpr) pos() int       { return e.at }
func (e *negExpr) String() string { return "(- " + e.x.String() + ")" }

// eval: anything but a number is null; an Integer or Long wraps (the
// negation of the smallest is itself); a Byte or Short is a
// RuntimeException; a BigDecimal that becomes Long.MIN_VALUE becomes a
// Long (so -9223372036854775808 is a Long).
func (e *negExpr) eval(c *evalCtx) (val, error) {
	v, err := e.x.eval(c)
	if err != nil || v.isNull() || !v.isNumber() {
		return vNull, err
	}
	switch v.k {
	case kInt:
		return intVal(-int32(v.i)), nil
	case kLong:
		return longVal(-v.i), nil
	case kFloat:
		return floatVal(-float32(v.f)), nil
	case kDouble:
		return doubleVal(-v.f), nil
	case kBig:
		n := new(big.Int).Neg(v.n)
		if n.IsInt64() && n.Int64() == minInt64 {
			return longVal(minInt64), nil
		}
		return val{k: kBig, n: n}, nil
	}
	return vNull, &EvalError{Offset: e.at, Exception: exRuntime, Err: ErrException,
		Msg: "Don't know how to negate a " + kindClass[v.k]}
}

const minInt64 = -1 << 63

// xpathExpr is XPATH 'expression', evaluated on the message body: not
// supported.
type xpathExpr struct {
	at int
	s  string
}

func (e *xpathExpr) pos() int       { return e.at }
func (e *xpathExpr) String() string { return "XPATH " + (&constExpr{v: strVal(e.s)}).String() }
func (e *xpathExpr) eval(*evalCtx) (val, error) {
	return vNull, &EvalError{Offset: e.at, Err: ErrUnsupported, Msg: "XPATH selectors (evaluated on the message body)"}
}
func (e *xpathExpr) matches(c *evalCtx) (bool, error) { return isTrue(e.eval(c)) }

// xqueryExpr is XQUERY 'expression', which ActiveMQ evaluates to FALSE.
type xqueryExpr struct {
	at int
	s  string
}

func (e *xqueryExpr) pos() int                       { return e.at }
func (e *xqueryExpr) String() string                 { return "XQUERY " + (&constExpr{v: strVal(e.s)}).String() }
func (e *xqueryExpr) eval(*evalCtx) (val, error)     { return vFalse, nil }
func (e *xqueryExpr) matches(*evalCtx) (bool, error) { return false, nil }

// hashSetOrder is the order in which a java.util.HashSet made of list
// (new HashSet<>(list)) iterates: by bucket of the spread String.hashCode
// in a table of the smallest power of two at least 16 and at least
// size/0.75+1, each bucket in insertion order, duplicates once.
func hashSetOrder(list []string) []string {
	n := 16
	for want := int(float32(len(list))/0.75) + 1; n < want; n <<= 1 {
	}
	buckets := make([][]string, n)
	seen := make(map[string]bool, len(list))
	for _, s := range list {
		if seen[s] {
			continue
		}
		seen[s] = true
		h := javaHashCode(s)
		h ^= h >> 16
		b := int(h & uint32(n-1))
		buckets[b] = append(buckets[b], s)
	}
	out := make([]string, 0, len(seen))
	for _, b := range buckets {
		out = append(out, b...)
	}
	return out
}

// javaHashCode is String.hashCode over UTF-16 units.
func javaHashCode(s string) uint32 {
	var h uint32
	for _, r := range s {
		u := utf16Units(r)
		h = 31*h + uint32(u[0])
		if u[1] != 0 {
			h = 31*h + uint32(u[1])
		}
	}
	return h
}
