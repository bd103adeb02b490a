package selector

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kahafs/kahafs/openwire"
)

// fuzzMessages are evaluated by FuzzParse: no properties, and the usual.
var fuzzMessages = []*Message{
	{},
	msg("parity", "even", "idx", 12, "n", 5, "l", int64(5), "d", 2.5, "f", float32(2.5), "b", int8(7), "sh", int16(300),
		"s", "abc", "flag", true, "bytes", []byte{1}, "list", openwire.Value{Type: openwire.TypeList,
			List: []openwire.Value{{Type: openwire.TypeString, Str: "a"}, {Type: openwire.TypeNull}}}),
}

// FuzzParse: Parse never panics and returns a *SyntaxError or a selector;
// a selector prints, evaluates without panicking and with an *EvalError
// when it fails; and parentheses around a selector change nothing.
func FuzzParse(f *testing.F) {
	for _, s := range handSelectors {
		f.Add(s)
	}
	g := newGen(99)
	for i := 0; i < 200; i++ {
		f.Add(g.selector())
	}
	f.Fuzz(func(t *testing.T, s string) {
		sel, err := Parse(s)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) || se.Line < 1 || se.Column < 1 || se.Offset < 0 || se.Offset > len(s) {
				t.Fatalf("Parse(%q): %v (%#v)", s, err, err)
			}
			return
		}
		js := sel.JavaString()
		for _, m := range fuzzMessages {
			_, err := sel.Match(m)
			var ee *EvalError
			if err != nil && (!errors.As(err, &ee) || ee.Offset < 0 || ee.Offset > len(s)) {
				t.Fatalf("Match(%q): %v", s, err)
			}
		}
		if strings.HasPrefix(s, convertPrefix) {
			return
		}
		wrapped, err := Parse("(" + s + ")")
		if errors.Is(err, ErrTooDeep) {
			return
		}
		if err != nil || wrapped.JavaString() != js {
			t.Fatalf("Parse(%q) = %s, but in parentheses: %v %v", s, js, wrapped, err)
		}
	})
}

// Pathological selectors of 256 KiB parse (or fail) in time linear in
// their length, and evaluate likewise.
func TestBoundedWork(t *testing.T) {
	const n = 1 << 18
	for name, s := range map[string]string{
		"parentheses":      strings.Repeat("(", n/2) + "a" + strings.Repeat(")", n/2),
		"NOT":              strings.Repeat("NOT ", n/4) + "a",
		"unary plus":       strings.Repeat("+", n) + "a",
		"additions":        "n" + strings.Repeat(" + 1", n/4) + " > 0",
		"nested additions": strings.Repeat("1 + (", MaxDepth-2) + strings.Repeat("1 + ", n/4) + "1" + strings.Repeat(")", MaxDepth-2) + " > n",
		"signs":            "n" + strings.Repeat(" + +1", n/5) + " > 0",
		"ORs":              "a = 1" + strings.Repeat(" OR a = 1", n/9),
		"IN":               "s IN ('x'" + strings.Repeat(", 'x'", n/5) + ")",
		"LIKE":             "s LIKE '" + strings.Repeat("%a", n/2) + "'",
		"string":           "s = '" + strings.Repeat("''", n/2) + "'",
		"comment":          "a = 1 /*" + strings.Repeat("*", n) + "*/",
		"unterminated":     "a = '" + strings.Repeat("x''", n/3),
	} {
		start := time.Now()
		sel, err := Parse(s)
		if err == nil {
			_, err = sel.Match(fuzzMessages[1])
			var ee *EvalError
			if err != nil && !errors.As(err, &ee) {
				t.Errorf("%s: %v", name, err)
			}
		}
		if d := time.Since(start); d > time.Minute {
			t.Errorf("%s: %v", name, d)
		}
		t.Logf("%s: %v (%v)", name, time.Since(start), errors.Unwrap(err))
	}
}
