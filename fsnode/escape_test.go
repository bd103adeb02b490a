package fsnode

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEscapeNameTable(t *testing.T) {
	cases := []struct{ raw, want string }{
		{"ORDERS.IN", "ORDERS.IN"},
		{"", "%"},
		{".", "%2E"},
		{"..", "%2E."},
		{".hidden", "%2Ehidden"},
		{"a/b", "a%2Fb"},
		{"../../etc/passwd", "%2E.%2F..%2Fetc%2Fpasswd"},
		{"100%", "100%25"},
		{"%2F", "%252F"},
		{"tab\there", "tab%09here"},
		{"nul\x00", "nul%00"},
		{"del\x7f", "del%7F"},
		{"bad\xff\xfeutf8", "bad%FF%FEutf8"},
		{"trunc\xe2\x82", "trunc%E2%82"},
		{"caf\u00e9 \u20ac", "caf\u00e9 \u20ac"},
		{"nbsp\u00a0x", "nbsp%C2%A0x"},
		{"line\u2028sep", "line%E2%80%A8sep"},
		{"c1\u0085", "c1%C2%85"},
		{"ID:host-1:1:1:1", "ID:host-1:1:1:1"},
		{"client:sub", "client:sub"},
		{"XID:[1,globalId=abcd,branchId=01]", "XID:[1,globalId=abcd,branchId=01]"},
		{"a.b.", "a.b."},
		{"FOO.>", "FOO.>"},
		{"*", "*"},
	}
	for _, tc := range cases {
		got := EscapeName(tc.raw)
		assert.Equal(t, tc.want, got, "EscapeName(%q)", tc.raw)
		raw, full, err := UnescapeName(got)
		require.NoError(t, err, got)
		assert.True(t, full)
		assert.Equal(t, tc.raw, raw)
		checkComponent(t, tc.raw, got)
	}
}

func TestEscapeNameLong(t *testing.T) {
	long := strings.Repeat("x", 300)
	got := EscapeName(long)
	checkComponent(t, long, got)
	assert.True(t, strings.HasPrefix(got, strings.Repeat("x", maxPrefix)))
	assert.Contains(t, got, hashMarker)
	prefix, full, err := UnescapeName(got)
	require.NoError(t, err)
	assert.False(t, full)
	assert.True(t, strings.HasPrefix(long, prefix))

	// Same long prefix, different tails: different names.
	other := long[:299] + "y"
	assert.NotEqual(t, got, EscapeName(other))

	// Exactly at the limit: kept whole.
	atLimit := strings.Repeat("z", MaxNameLen)
	assert.Equal(t, atLimit, EscapeName(atLimit))
	over := strings.Repeat("z", MaxNameLen+1)
	assert.NotEqual(t, over, EscapeName(over))

	// Escapes and multi-byte runes are never cut in the middle.
	for _, unit := range []string{"/", "\u20ac", "\xff", "\U0001F600", "\u00a0"} {
		for pad := 0; pad < 4; pad++ {
			raw := strings.Repeat("a", pad) + strings.Repeat(unit, 200)
			got := EscapeName(raw)
			checkComponent(t, raw, got)
			p, full, err := UnescapeName(got)
			require.NoError(t, err, "%q", got)
			assert.False(t, full)
			assert.True(t, strings.HasPrefix(raw, p))
		}
	}
}

func TestUnescapeNameRejects(t *testing.T) {
	for _, name := range []string{
		"%41",                           // 'A' needs no escape
		"a%2fb",                         // lower-case hex
		"a%2",                           // short escape
		"a%",                            // dangling
		"%ZZ",                           // not hex
		".",                             // must be %2E
		"..",                            // must be %2E.
		".x",                            // leading dot
		"a/b",                           // slash
		"a\x00b",                        // NUL
		"\xff",                          // invalid UTF-8
		"x%#0123",                       // short hash
		"x%#" + strings.Repeat("A", 32), // upper-case hash
		"%#" + strings.Repeat("0", 32),  // empty prefix
		"x%#" + strings.Repeat("0", 32) + "y",
	} {
		_, _, err := UnescapeName(name)
		assert.ErrorIs(t, err, ErrBadName, "%q", name)
	}
}

// checkComponent asserts that name is a safe single path component for raw.
func checkComponent(t *testing.T, raw, name string) {
	t.Helper()
	assert.NotEmpty(t, name)
	assert.LessOrEqual(t, len(name), MaxNameLen, "%q", raw)
	assert.True(t, utf8.ValidString(name), "%q", name)
	assert.NotContains(t, name, "/")
	assert.False(t, strings.HasPrefix(name, "."), "%q", name)
	for _, r := range name {
		assert.True(t, r >= 0x20 && r != 0x7F, "control in %q", name)
	}
}

func FuzzEscapeName(f *testing.F) {
	for _, s := range []string{"", ".", "..", "a/b", "%", "\xff", strings.Repeat("\u20ac", 100), strings.Repeat("/", 90), "ID:x:1:1:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		name := EscapeName(raw)
		if name == "" || len(name) > MaxNameLen || !utf8.ValidString(name) || strings.ContainsRune(name, '/') ||
			strings.HasPrefix(name, ".") || strings.ContainsAny(name, "\x00\n\r\t\x7f") {
			t.Fatalf("EscapeName(%q) = %q is not a safe component", raw, name)
		}
		back, full, err := UnescapeName(name)
		if err != nil {
			t.Fatalf("UnescapeName(EscapeName(%q) = %q): %v", raw, name, err)
		}
		if full && back != raw {
			t.Fatalf("round trip %q -> %q -> %q", raw, name, back)
		}
		if !full && (!strings.HasPrefix(raw, back) || len(raw) <= len(back)) {
			t.Fatalf("shortened %q -> %q: prefix %q", raw, name, back)
		}
	})
}

func FuzzUnescapeName(f *testing.F) {
	for _, s := range []string{"%", "%2E", "a%2Fb", "%41", "x%#" + strings.Repeat("0", 32), "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		raw, full, err := UnescapeName(name)
		if err != nil {
			return
		}
		if full && EscapeName(raw) != name {
			t.Fatalf("UnescapeName(%q) = %q but EscapeName gives %q", name, raw, EscapeName(raw))
		}
		if !full && !strings.HasPrefix(name, EscapeName(raw)) {
			t.Fatalf("shortened %q: prefix %q does not escape to its start", name, raw)
		}
	})
}
