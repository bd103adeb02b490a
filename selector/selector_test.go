package selector

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/kahafs/kahafs/openwire"
)

// msg builds a message with properties name, value, name, value, ...
func msg(kv ...any) *Message {
	m := &Message{Properties: &openwire.Map{}}
	for i := 0; i+1 < len(kv); i += 2 {
		var v openwire.Value
		switch x := kv[i+1].(type) {
		case int:
			v = openwire.Value{Type: openwire.TypeInt, Int: int64(x)}
		case int64:
			v = openwire.Value{Type: openwire.TypeLong, Int: x}
		case int8:
			v = openwire.Value{Type: openwire.TypeByte, Int: int64(x)}
		case int16:
			v = openwire.Value{Type: openwire.TypeShort, Int: int64(x)}
		case float64:
			v = openwire.Value{Type: openwire.TypeDouble, Float: x}
		case float32:
			v = openwire.Value{Type: openwire.TypeFloat, Float: float64(x)}
		case string:
			v = openwire.Value{Type: openwire.TypeString, Str: x}
		case bool:
			v = openwire.Value{Type: openwire.TypeBoolean}
			if x {
				v.Int = 1
			}
		case []byte:
			v = openwire.Value{Type: openwire.TypeBytes, Bytes: x}
		case openwire.Value:
			v = x
		default:
			panic("msg: type")
		}
		m.Properties.Entries = append(m.Properties.Entries, openwire.Entry{Name: kv[i].(string), Value: v})
	}
	return m
}

// answer is Match's result as T, F, !Exception or ?unsupported.
func answer(t *testing.T, s string, m *Message) string {
	t.Helper()
	sel, err := Parse(s)
	if err != nil {
		t.Fatalf("Parse(%q): %v", s, err)
	}
	return goAnswer(sel, m)
}

// The quirks of ActiveMQ 5.17.2 the package reproduces, each as ActiveMQ
// answered it (TestOracle and TestHandCorpus check these and many more
// against ActiveMQ itself).
func TestMatchQuirks(t *testing.T) {
	m := msg("parity", "even", "idx", 12, "n", 5, "l", int64(5), "d", 2.5, "f", float32(2.5), "b", int8(7),
		"sh", int16(300), "s", "abc", "flag", true, "bytes", []byte{1}, "y", float32(16777217), "nul",
		openwire.Value{Type: openwire.TypeNull}, "emoji", "😀")
	for _, c := range []struct{ sel, want string }{
		{"parity = 'even' AND idx > 10", "T"},
		{"parity = 'odd' OR idx < 12", "F"},
		// Three-valued logic; the whole selector unknown is no match.
		{"missing > 1", "F"},
		{"NOT (missing > 1)", "F"},
		{"missing > 1 OR TRUE", "T"},
		{"NOT (missing > 1 AND FALSE)", "T"},
		// Equality: two nulls are equal; a null right operand is FALSE,
		// not unknown, where the result is used as a value.
		{"missing = other", "T"},
		{"nul IS NULL", "T"},
		{"NOT ('a' = missing)", "T"},
		{"NOT (missing = 'a')", "F"},
		// Promotion, and what it refuses.
		{"n = 5.0", "T"},
		{"n = l", "T"},
		{"b < sh", "T"},
		{"sh > b", "F"}, // a Short against a Byte is FALSE
		{"n = '5'", "F"},
		{"y = 16777216", "T"}, // the Integer becomes a Float
		{"f = d", "T"},
		{"d = f", "!java.lang.ClassCastException"}, // the Float is "converted" to a Float
		{"bytes = bytes", "T"},
		{"bytes > 1", "!java.lang.ClassCastException"},
		// NOT binds tighter than =.
		{"NOT flag = FALSE", "T"},
		// Arithmetic.
		{"n / 2 = 2.5", "T"},
		{"2147483647 + 1 < 0", "T"},
		{"n / 0 > 1000", "T"},
		{"s + n = 'abc5'", "T"},
		{"s + d = 'abc2.5'", "T"},
		{"-b = -7", "!java.lang.RuntimeException"},
		{"n + s = 'x'", "!java.lang.RuntimeException"},
		{"-s IS NULL", "T"},
		{"18446744073709551617 = 1", "T"},
		{"a = 1 --a", "T"}, // a = 1 - (-a): null = null
		// LIKE.
		{"s LIKE 'a_c'", "T"},
		{"s LIKE 'A%'", "F"},
		{"n LIKE '5'", "F"},
		{"emoji LIKE '__'", "T"}, // a property's supplementary character is two U+FFFD to the broker
		{"'\"02' LIKE '∂∂' ESCAPE '∂'", "T"},
		{"s IN ('abc', 'x')", "T"},
		{"n NOT IN ('5')", "F"}, // not a String: unknown
		// convert_string_expressions.
		{"convert_string_expressions:n = '5'", "T"},
		{"convert_string_expressions:n = ' 5'", "F"},
		{"convert_string_expressions:d = ' 2.5d '", "T"},
		{"convert_string_expressions:flag = 'true'", "!java.lang.ClassCastException"},
		// Functions.
		{"INLIST(MAKELIST('a', s), 'abc')", "T"},
		{"INLIST(MAKELIST(missing), 'abc')", "!java.lang.NullPointerException"},
		{"INLIST(SPLIT('a,b', ','), 'b')", "T"},
		{"XQUERY 'x' OR TRUE", "T"},
		{"XPATH '//a'", "?XPATH selectors (evaluated on the message body)"},
		{"REGEX('a.c', s)", "T"},
		{"REGEX('^a[b-c]+$', s)", "T"},
		{"REGEX('a(?=b)', s)", "?REGEX with the Java regular expression 'a(?=b)'"},
	} {
		if got := answer(t, c.sel, m); got != c.want {
			t.Errorf("%q: got %s, ActiveMQ answers %s", c.sel, got, c.want)
		}
	}
}

// Java regular expressions as ActiveMQ's REGEX, REPLACE and SPLIT read
// them (each answer is ActiveMQ's).
func TestJavaRegex(t *testing.T) {
	for _, c := range []struct{ sel, s, want string }{
		{"REGEX('a.b', s)", "a\u2028b", "F"}, // '.' is no line end of Java's
		{"REGEX('a$', s)", "a\n", "T"},       // '$' before a final line end
		{"REGEX('a$', s)", "a\n\n", "F"},
		{"REGEX('a$', s)", "a\r\n", "T"},
		{"REGEX('\\r$', s)", "x\r\n", "F"}, // not between \r and \n
		{"REGEX('a\\s', s)", "a\x0b", "T"}, // Java's \s has \x0B
		{"REGEX('[\\s]', s)", "a\x0b", "T"},
		{"REGEX('^b', s)", "ab", "F"},
		{"REPLACE(s, 'a+', 'X') = 'cXb'", "caab", "T"},
		{"SPLIT(s, '\\d+') = MAKELIST('a', 'b', 'c')", "a1b22c", "T"},
	} {
		if got := answer(t, c.sel, msg("s", c.s)); got != c.want {
			t.Errorf("%s on %q: %s, ActiveMQ answers %s", c.sel, c.s, got, c.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, c := range []struct {
		sel       string
		sentinel  error
		line, col int
	}{
		{"a == 1", ErrSyntax, 1, 4},
		{"a = 1 OR", ErrSyntax, 1, 8},
		{"", ErrSyntax, 1, 1},
		{"a = 'open", ErrSyntax, 1, 10},
		{"a ! b", ErrSyntax, 1, 3},
		{"a = 1\n  AND b ==", ErrSyntax, 2, 10},
		{"a = 1 + )", ErrSyntax, 1, 7},
		{"a = NULL", ErrInvalid, 1, 5},
		{"5", ErrInvalid, 1, 1},
		{"a > 'x'", ErrInvalid, 1, 5},
		{"TRUE = 1", ErrInvalid, 1, 6},
		{"1 IN ('x')", ErrInvalid, 1, 3},
		{"a LIKE 'x' ESCAPE 'ab'", ErrInvalid, 1, 19},
		{"a LIKE '\t\t' ESCAPE '\t'", ErrInvalid, 1, 3},
		{"a = 0x8000000000000000", ErrInvalid, 1, 5},
		{"foo(1) = 1", ErrInvalid, 1, 1},
		{"convert_string_expressions:a == 1", ErrSyntax, 1, 31},
		{strings.Repeat("(", MaxDepth+1) + "a" + strings.Repeat(")", MaxDepth+1), ErrTooDeep, 1, MaxDepth + 2},
		{strings.Repeat("NOT ", 5000) + "a", ErrTooDeep, 1, 4*(MaxDepth+1) + 1},
		{strings.Repeat("+", 5000) + "a", ErrTooDeep, 1, MaxDepth + 2},
	} {
		_, err := Parse(c.sel)
		var se *SyntaxError
		if !errors.As(err, &se) || !errors.Is(err, c.sentinel) || se.Line != c.line || se.Column != c.col {
			t.Errorf("Parse(%.40q) = %v, want %v at line %d, column %d", c.sel, err, c.sentinel, c.line, c.col)
		}
	}
	// ActiveMQ parses MaxDepth levels (TestHandCorpus).
	deep := strings.Repeat("(", MaxDepth) + "a" + strings.Repeat(")", MaxDepth)
	if _, err := Parse(deep); err != nil {
		t.Errorf("%d levels: %v", MaxDepth, err)
	}
}

func TestJavaString(t *testing.T) {
	for sel, want := range map[string]string{
		"NOT a = 1":                      "((NOT a) = 1)",
		"a BETWEEN 1 AND 2 AND b":        "((a >= 1) AND (a <= 2) AND b)",
		"a = 1 AND b = 2 OR c":           "( ( (a = 1) AND (b = 2) ) OR c )",
		"a IS NOT NULL":                  "(NOT (a = NULL))",
		"a NOT LIKE 'x%'":                "(NOT (LIKE a))",
		"-2147483648 = a":                "((- 2147483648) = a)",
		"a = 18446744073709551617":       "(a = 1)",
		"a = 1e3 + 0x1F - 017 * 5L":      "(a = ((1000.0 + 31) - (15 * 5)))",
		"a IN ('a','b','c','d','e','f')": "a IN ( a, b, c, d, e, f )",
		"s IN ('ab','ba','abc','b','x')": "s IN ( ab, b, abc, x, ba )",
		"XQUERY 'it''s' OR INLIST(l, 1)": "( XQUERY 'it''s' OR INLIST(l, 1) )",
		"convert_string_expressions:a=1": "(a = 1)",
	} {
		if got := MustParse(sel).JavaString(); got != want {
			t.Errorf("%q: JavaString %s, ActiveMQ prints %s", sel, got, want)
		}
	}
}

func TestJavaNumbers(t *testing.T) {
	for _, c := range []struct {
		f    float64
		want string
		ok   bool
	}{
		{100, "100.0", true}, {0.001, "0.001", true}, {1e7, "1.0E7", false}, {9999999.999999998, "9999999.999999998", true},
		{-0.0, "0.0", true}, {math.Copysign(0, -1), "-0.0", true}, {1e-5, "1.0E-5", false}, {math.NaN(), "NaN", true},
		{0.30000000000000004, "0.30000000000000004", true},
	} {
		got, ok := javaDoubleString(c.f)
		if got != c.want || ok != c.ok {
			t.Errorf("javaDoubleString(%v) = %q, %v; want %q, %v", c.f, got, ok, c.want, c.ok)
		}
	}
	for _, c := range []struct {
		s    string
		min  int64
		max  int64
		want int64
		ok   bool
	}{
		{"+5", math.MinInt32, math.MaxInt32, 5, true}, {"٣", math.MinInt32, math.MaxInt32, 3, true},
		{" 5", math.MinInt32, math.MaxInt32, 0, false}, {"-9223372036854775808", math.MinInt64, math.MaxInt64, math.MinInt64, true},
		{"9223372036854775808", math.MinInt64, math.MaxInt64, 0, false}, {"128", math.MinInt8, math.MaxInt8, 0, false},
		{"-", math.MinInt32, math.MaxInt32, 0, false}, {"", math.MinInt32, math.MaxInt32, 0, false},
	} {
		got, ok := parseJavaLong(c.s, c.min, c.max)
		if got != c.want || ok != c.ok {
			t.Errorf("parseJavaLong(%q) = %d, %v; want %d, %v", c.s, got, ok, c.want, c.ok)
		}
	}
	for s, want := range map[string]float64{" 7 ": 7, "2.5d": 2.5, "0x1p3": 8, "-Infinity": math.Inf(-1), "1e400": math.Inf(1), ".5": 0.5} {
		if got, ok := parseJavaDouble(s, 64); !ok || got != want {
			t.Errorf("parseJavaDouble(%q) = %v, %v; want %v", s, got, ok, want)
		}
	}
	for _, s := range []string{"", "inf", "nan", "1_0", "0x1", "1e", "1.5x", "d"} {
		if _, ok := parseJavaDouble(s, 64); ok {
			t.Errorf("parseJavaDouble(%q) accepted", s)
		}
	}
}

// A message whose properties do not decode: reading a property is the
// broker's JMSException (no delivery); reading a header is not.
func TestPropertiesError(t *testing.T) {
	m := &Message{Type: "t1", PropertiesErr: errors.New("truncated")}
	if got := answer(t, "JMSType = 't1'", m); got != "T" {
		t.Errorf("header: %s", got)
	}
	if got := answer(t, "JMSXUserID IS NULL", m); got != "T" { // the property's failure is ignored there
		t.Errorf("JMSXUserID: %s", got)
	}
	sel := MustParse("a = 1")
	ok, err := sel.Match(m)
	var ee *EvalError
	if ok || !errors.As(err, &ee) || !ee.JMSException() || !errors.Is(err, ErrException) {
		t.Errorf("property: %v, %v", ok, err)
	}
}

// A selector is used by many goroutines at once (go test -race).
func TestConcurrentMatch(t *testing.T) {
	sel := MustParse("REGEX('^a[0-9]+$', s) AND s LIKE 'a%' AND n + 1 > 5 AND INLIST(SPLIT(s, '[0-9]'), 'a')")
	done := make(chan error)
	for g := 0; g < 4; g++ {
		go func() {
			for i := 0; i < 200; i++ {
				ok, err := sel.Match(msg("s", "a1", "n", 5))
				if err == nil && !ok {
					err = errors.New("no match")
				}
				if err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for g := 0; g < 4; g++ {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}
