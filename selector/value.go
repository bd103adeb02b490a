package selector

import (
	"math"
	"math/big"
	"strconv"
	"unicode/utf8"
)

// kind is the Java class of a value an expression evaluates to.
type kind uint8

const (
	kNull   kind = iota
	kBool        // java.lang.Boolean
	kByte        // java.lang.Byte
	kShort       // java.lang.Short
	kInt         // java.lang.Integer
	kLong        // java.lang.Long
	kFloat       // java.lang.Float
	kDouble      // java.lang.Double
	kBig         // java.math.BigDecimal (an integer: a literal too big for a long)
	kString      // java.lang.String
	kChar        // java.lang.Character
	kBytes       // byte[]
	kMap         // java.util.HashMap
	kList        // java.util.ArrayList
)

var kindClass = [...]string{
	kNull: "null", kBool: "java.lang.Boolean", kByte: "java.lang.Byte", kShort: "java.lang.Short",
	kInt: "java.lang.Integer", kLong: "java.lang.Long", kFloat: "java.lang.Float", kDouble: "java.lang.Double",
	kBig: "java.math.BigDecimal", kString: "java.lang.String", kChar: "java.lang.Character", kBytes: "[B",
	kMap: "java.util.HashMap", kList: "java.util.ArrayList",
}

// val is a Java object as the evaluation sees it.
type val struct {
	k kind
	i int64    // kBool (0, 1), kByte, kShort, kInt, kLong, kChar (a UTF-16 unit)
	f float64  // kFloat (a float32 value), kDouble
	s string   // kString
	n *big.Int // kBig
	// o is a byte array, map or list; the pointer is its identity (Java's
	// ==): the same property read twice is the same object, nothing else
	// is.
	o *object
}

// object is the content of a byte array, map or list.
type object struct {
	b []byte
	m map[string]val
	l []val
}

func newList(l []val) val { return val{k: kList, o: &object{l: l}} }

var (
	vNull  = val{}
	vTrue  = val{k: kBool, i: 1}
	vFalse = val{k: kBool}
)

func boolVal(b bool) val {
	if b {
		return vTrue
	}
	return vFalse
}

func intVal(i int32) val      { return val{k: kInt, i: int64(i)} }
func longVal(i int64) val     { return val{k: kLong, i: i} }
func doubleVal(f float64) val { return val{k: kDouble, f: f} }
func floatVal(f float32) val  { return val{k: kFloat, f: float64(f)} }
func strVal(s string) val     { return val{k: kString, s: s} }

func (v val) isNull() bool { return v.k == kNull }

func (v val) isTrue() bool { return v.k == kBool && v.i != 0 }

func (v val) isNumber() bool { return v.k >= kByte && v.k <= kBig }

// comparable: an instance of java.lang.Comparable.
func (v val) comparable() bool { return v.k >= kBool && v.k <= kChar }

// intValue is Number.intValue: the low 32 bits of an integer, Java's
// narrowing of a floating-point value.
func (v val) intValue() int32 {
	switch v.k {
	case kFloat, kDouble:
		return d2i(v.f)
	case kBig:
		return int32(lowBits(v.n))
	}
	return int32(v.i)
}

// longValue is Number.longValue.
func (v val) longValue() int64 {
	switch v.k {
	case kFloat, kDouble:
		return d2l(v.f)
	case kBig:
		return lowBits(v.n)
	}
	return v.i
}

// doubleValue is Number.doubleValue (a BigDecimal rounds to nearest).
func (v val) doubleValue() float64 {
	switch v.k {
	case kFloat, kDouble:
		return v.f
	case kBig:
		f, _ := new(big.Float).SetInt(v.n).Float64()
		return f
	}
	return float64(v.i)
}

// floatValue is Number.floatValue.
func (v val) floatValue() float32 {
	switch v.k {
	case kFloat, kDouble:
		return float32(v.f)
	case kBig:
		f, _ := new(big.Float).SetInt(v.n).Float32()
		return f
	}
	return float32(v.i)
}

// lowBits is the low 64 bits of n in two's complement (BigInteger.longValue).
func lowBits(n *big.Int) int64 {
	u := new(big.Int).And(n, new(big.Int).SetUint64(math.MaxUint64)).Uint64()
	return int64(u)
}

// d2i and d2l are Java's (int) and (long) casts of a double.
func d2i(f float64) int32 {
	switch {
	case f != f:
		return 0
	case f >= math.MaxInt32:
		return math.MaxInt32
	case f <= math.MinInt32:
		return math.MinInt32
	}
	return int32(f)
}

func d2l(f float64) int64 {
	switch {
	case f != f:
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

// javaEquals is a.equals(b) for non-null values (and == for identity).
func javaEquals(a, b val) bool {
	if a.k != b.k {
		return false
	}
	if a.o != nil && a.o == b.o {
		return true
	}
	switch a.k {
	case kNull:
		return true
	case kBool, kByte, kShort, kInt, kLong, kChar:
		return a.i == b.i
	case kFloat:
		return floatBits(float32(a.f)) == floatBits(float32(b.f))
	case kDouble:
		return doubleBits(a.f) == doubleBits(b.f)
	case kBig:
		return a.n.Cmp(b.n) == 0
	case kString:
		return a.s == b.s
	case kBytes:
		return false // identity only, checked above
	case kMap:
		if len(a.o.m) != len(b.o.m) {
			return false
		}
		for k, av := range a.o.m {
			bv, ok := b.o.m[k]
			if !ok || !objectsEquals(av, bv) {
				return false
			}
		}
		return true
	case kList:
		if len(a.o.l) != len(b.o.l) {
			return false
		}
		for i := range a.o.l {
			if !objectsEquals(a.o.l[i], b.o.l[i]) {
				return false
			}
		}
		return true
	}
	return false
}

// objectsEquals is java.util.Objects.equals: nulls allowed.
func objectsEquals(a, b val) bool {
	if a.isNull() || b.isNull() {
		return a.isNull() && b.isNull()
	}
	return javaEquals(a, b)
}

// floatBits and doubleBits are Float.floatToIntBits and
// Double.doubleToLongBits: every NaN is the canonical one.
func floatBits(f float32) uint32 {
	if f != f {
		return 0x7fc00000
	}
	return math.Float32bits(f)
}

func doubleBits(f float64) uint64 {
	if f != f {
		return 0x7ff8000000000000
	}
	return math.Float64bits(f)
}

// compareTo is a.compareTo(b) for two Comparables of the same class.
func compareTo(a, b val) int {
	switch a.k {
	case kBool, kByte, kShort, kInt, kLong, kChar:
		return cmpInt(a.i, b.i)
	case kFloat, kDouble:
		return javaCompareDouble(a.f, b.f)
	case kBig:
		return a.n.Cmp(b.n)
	case kString:
		return compareUTF16(a.s, b.s)
	}
	return 0
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// javaCompareDouble is Double.compare (and Float.compare): -0.0 below 0.0,
// NaN above everything and equal to itself.
func javaCompareDouble(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	ab, bb := int64(doubleBits(a)), int64(doubleBits(b))
	return cmpInt(ab, bb)
}

// compareUTF16 is String.compareTo: the order of UTF-16 code units, which
// differs from Go's (code points) for characters above U+FFFF against
// U+E000 to U+FFFF.
func compareUTF16(a, b string) int {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			ua, ub := utf16Units(ra), utf16Units(rb)
			if ua[0] != ub[0] {
				return cmpInt(int64(ua[0]), int64(ub[0]))
			}
			return cmpInt(int64(ua[1]), int64(ub[1]))
		}
		a, b = a[na:], b[nb:]
	}
	return cmpInt(int64(len(a)), int64(len(b)))
}

// utf16Units is r as UTF-16: one unit (and 0) or a surrogate pair.
func utf16Units(r rune) [2]rune {
	if r < 0x10000 {
		return [2]rune{r, 0}
	}
	r -= 0x10000
	return [2]rune{0xd800 + r>>10, 0xdc00 + r&0x3ff}
}

// utf16Len is String.length.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r >= 0x10000 {
			n++
		}
	}
	return n
}

// javaString is String.valueOf(v), what string concatenation appends.
// ok is false where kahafs does not reproduce Java's text.
func javaString(v val) (s string, ok bool) {
	switch v.k {
	case kNull:
		return "null", true
	case kBool:
		if v.i != 0 {
			return "true", true
		}
		return "false", true
	case kByte, kShort, kInt, kLong:
		return strconv.FormatInt(v.i, 10), true
	case kChar:
		return string(rune(v.i)), true
	case kFloat:
		return javaFloatString(float32(v.f))
	case kDouble:
		return javaDoubleString(v.f)
	case kBig:
		return v.n.String(), true
	case kString:
		return v.s, true
	case kList:
		b := []byte{'['}
		for i, e := range v.o.l {
			if i > 0 {
				b = append(b, ", "...)
			}
			s, ok := javaString(e)
			if !ok {
				return "", false
			}
			b = append(b, s...)
		}
		return string(append(b, ']')), true
	}
	return "", false // byte[] ("[B@" and an identity hash), HashMap (hash order)
}
