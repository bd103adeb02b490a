package treegrep

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMatcherCountsAsGrep: Count on a file's content is what grep -c
// prints for it, for line ends (a last line without a newline, empty
// lines, an empty file, NUL bytes ending lines) and for the syntaxes
// (basic expressions' literal ( | + ? { and anchors, -E, -F, -i, patterns
// of several lines). grep(1) is the oracle.
func TestMatcherCountsAsGrep(t *testing.T) {
	contents := []string{
		"",
		"\n",
		"\n\n",
		"order 4711\n",
		"order 4711",
		"a\nb\n\norder 4711\nORDER 4711 again\n",
		"x(y)z a|b a+b a?b {1} ^caret$ end$\n",
		"aaa\nab\nabab\nb\n",
		"nul<\x00>order 4711\x00\x00tail\n",
		"été\nÉTÉ\nete\n",
		"line one\r\nline two\r\n",
		"[brackets] back\\slash\n",
	}
	patterns := []pattern{
		{Fixed, "4711", false},
		{Fixed, "order 4711", true},
		{Basic, "", false},
		{Basic, "^$", false},
		{Basic, "x*", false},
		{Basic, "^order", false},
		{Basic, "4711$", false},
		{Basic, `\(ab\)\{2\}`, false},
		{Basic, `a\|b$`, false},
		{Basic, "x(y)z", false},
		{Basic, "a|b", false},
		{Basic, "a+b", false},
		{Basic, `a\+b`, false},
		{Basic, "{1}", false},
		{Basic, "*caret", false},
		{Basic, "^^caret", false},
		{Basic, `end\$$`, false},
		{Basic, "[^a-z]", false},
		{Basic, `[]x]`, false},
		{Basic, `[\]`, false},
		{Basic, "[[:digit:]]", false},
		{Basic, `a\{,1\}b`, false},
		{Basic, "été", true},
		{Extended, "(ab){2}|^b$", false},
		{Extended, "order [0-9]+", true},
		{Basic, "4711\ntwo", false},
		{Fixed, "a|b\nback\\", false},
		{Basic, "two\r$", false},
	}
	paths := writeFiles(t, contents)
	for _, p := range patterns {
		m := p.compile(t)
		args := append(p.grepFlags(), "-c", "-H", "-e", p.expr, "--")
		want := systemGrep(t, "", append(args, paths...)...)
		var got []string
		for i, c := range contents {
			got = append(got, countLine(paths[i], m.Count([]byte(c), true)))
			first := m.Count([]byte(c), false)
			assert.Equal(t, min(1, m.Count([]byte(c), true)), first, "%s on %q: first match only", p, c)
		}
		assert.Equal(t, want, got, "%s", p)
	}
}

// TestBasicRefused: basic expressions RE2 cannot match as grep does are
// refused, not read as something else.
func TestBasicRefused(t *testing.T) {
	for _, expr := range []string{`\(a\)\1`, `\<word\>`, `\bword`, `\w+`, `[[=a=]]`, `[[.a.]]`, `a\`, `[abc`, `a\{1`, `\{1\}`} {
		_, err := Compile(expr, Basic, false)
		assert.Error(t, err, "%q", expr)
	}
	_, err := Compile(`(a`, Extended, false)
	require.Error(t, err)
	_, err = Compile(`(a`, Basic, false)
	require.NoError(t, err, "a ( is a literal in a basic expression")
}
