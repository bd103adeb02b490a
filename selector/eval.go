package selector

import (
	"math"
	"strings"
)

// Match reports whether the broker delivers m to a subscription with this
// selector: BooleanExpression.matches, as AbstractSubscription.matches
// calls it. An unknown (NULL) result is no match.
//
// The error is an *EvalError: an exception ActiveMQ's own evaluation
// throws on this message (Exception names its class; see EvalError for
// what the broker does then), or ErrUnsupported when the answer depends on
// something kahafs does not reproduce. The result is then false.
func (s *Selector) Match(m *Message) (bool, error) {
	c := &evalCtx{m: m}
	ok, err := s.root.matches(c)
	if err != nil {
		return false, err
	}
	return ok, nil
}

// evalCtx is one evaluation on one message.
type evalCtx struct {
	m *Message
	// props holds the properties read so far: the same property read
	// twice is the same Java object (identity matters for byte arrays,
	// maps and lists).
	props map[string]val
}

// property is Message.getProperty(name): null when absent or null.
func (c *evalCtx) property(at int, name string) (val, error) {
	if c.m.PropertiesErr != nil {
		return vNull, &EvalError{Offset: at, Exception: exJMS, Err: ErrException,
			Msg: "Could not get property: " + name + " reason: " + c.m.PropertiesErr.Error()}
	}
	if v, ok := c.props[name]; ok {
		return v, nil
	}
	ov, ok := c.m.Properties.Get(name)
	if !ok {
		return vNull, nil
	}
	v := fromOpenWire(ov)
	if v.k == kString {
		v.s = utf8BufferString(v.s)
	}
	if c.props == nil {
		c.props = make(map[string]val)
	}
	c.props[name] = v
	return v, nil
}

// utf8BufferString is a property's string as the broker reads it.
// ActiveMQ keeps the strings of a message's own properties (not those
// nested in maps and lists) as hawtbuf UTF8Buffers, written in modified
// UTF-8 and read back as standard UTF-8: a NUL (C0 80) and a character
// above U+FFFF (two 3-byte surrogates) each come back as two U+FFFD.
func utf8BufferString(s string) string {
	clean := true
	for _, r := range s {
		if r == 0 || r >= 0x10000 {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if r == 0 || r >= 0x10000 {
			b.WriteString("\ufffd\ufffd")
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// compare is ComparisonExpression.compare for two non-null Comparables:
// values of different classes are converted up (Byte to Short, Integer,
// Long, Float or Double; Short to Integer and up; Integer to Long, Float
// or Double; Long to Float or Double, an Integer to Long; Float to Double,
// an Integer or Long to Float; an Integer or Long to Double) and anything
// else is FALSE, including a Short against a Byte and every String
// against a number. A Double against a Float is a ClassCastException (the
// Float is "converted" to a Float). With convert, a String is parsed as
// the other operand's type (a NumberFormatException is FALSE), and a
// Boolean against a String is a ClassCastException.
func compare(at int, lv, rv val, convert bool, op tokKind) (val, error) {
	if lv.k != rv.k {
		var ok bool
		switch lv.k {
		case kBool:
			if convert && rv.k == kString {
				return vNull, castErr(at, kBool, "java.lang.String")
			}
		case kByte, kShort, kInt, kLong, kFloat, kDouble:
			if rv.k == kString {
				if !convert {
					break
				}
				rv, ok = parseAs(rv.s, lv.k)
				if !ok {
					return vFalse, nil
				}
				break
			}
			if lv.k == kDouble && rv.k == kFloat {
				return vNull, castErr(at, kFloat, "java.lang.Double")
			}
			lv, rv, ok = promote(lv, rv)
			if !ok {
				return vFalse, nil
			}
		case kString:
			if !convert {
				break
			}
			switch rv.k {
			case kBool, kByte, kShort, kInt, kLong, kFloat, kDouble:
				lv, ok = parseAs(lv.s, rv.k)
				if !ok {
					return vFalse, nil
				}
			}
		}
		if lv.k != rv.k {
			return vFalse, nil
		}
	}
	n := compareTo(lv, rv)
	switch op {
	case tEQ:
		return boolVal(n == 0), nil
	case tGT:
		return boolVal(n > 0), nil
	case tGE:
		return boolVal(n >= 0), nil
	case tLT:
		return boolVal(n < 0), nil
	}
	return boolVal(n <= 0), nil
}

// promote converts two numbers of different classes to one class as
// compare does; ok is false when it does not.
func promote(lv, rv val) (val, val, bool) {
	widen := func(v val, to kind) val {
		switch to {
		case kShort, kInt, kLong:
			return val{k: to, i: v.longValue()}
		case kFloat:
			return floatVal(v.floatValue())
		}
		return doubleVal(v.doubleValue())
	}
	switch lv.k {
	case kByte:
		if rv.k >= kShort && rv.k <= kDouble {
			return widen(lv, rv.k), rv, true
		}
	case kShort, kInt:
		if rv.k > lv.k && rv.k <= kDouble {
			return widen(lv, rv.k), rv, true
		}
	case kLong:
		switch rv.k {
		case kInt:
			return lv, widen(rv, kLong), true
		case kFloat, kDouble:
			return widen(lv, rv.k), rv, true
		}
	case kFloat:
		switch rv.k {
		case kInt, kLong:
			return lv, widen(rv, kFloat), true
		case kDouble:
			return widen(lv, kDouble), rv, true
		}
	case kDouble:
		if rv.k == kInt || rv.k == kLong {
			return lv, widen(rv, kDouble), true
		}
	}
	return lv, rv, false
}

// parseAs is Boolean.valueOf, Byte.valueOf ... Double.valueOf of s.
func parseAs(s string, k kind) (val, bool) {
	var n int64
	var ok bool
	switch k {
	case kBool:
		return boolVal(javaBooleanValueOf(s)), true
	case kByte:
		n, ok = parseJavaLong(s, math.MinInt8, math.MaxInt8)
	case kShort:
		n, ok = parseJavaLong(s, math.MinInt16, math.MaxInt16)
	case kInt:
		n, ok = parseJavaLong(s, math.MinInt32, math.MaxInt32)
	case kLong:
		n, ok = parseJavaLong(s, math.MinInt64, math.MaxInt64)
	case kFloat:
		f, ok := parseJavaDouble(s, 32)
		return floatVal(float32(f)), ok
	case kDouble:
		f, ok := parseJavaDouble(s, 64)
		return doubleVal(f), ok
	default:
		return vNull, false
	}
	return val{k: k, i: n}, ok
}

// javaRem is Java's % on doubles (like C's fmod).
func javaRem(a, b float64) float64 { return math.Mod(a, b) }
