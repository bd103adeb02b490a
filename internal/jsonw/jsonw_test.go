package jsonw

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAppendString(t *testing.T) {
	for in, want := range map[string]string{
		"":                 `""`,
		"plain text":       `"plain text"`,
		"q\"b\\s":          `"q\"b\\s"`,
		"\n\r\t\x00\x1f":   `"\n\r\t\u0000\u001f"`,
		"del\x7f":          `"del\u007f"`,
		"été ✓ 😀":          `"été ✓ 😀"`,
		"bad \xff end":     `"bad \ufffd end"`,
		"cut \xe2\x9c":     `"cut \ufffd\ufffd"`,
		"ls\u2028ps\u2029": `"ls\u2028ps\u2029"`,
	} {
		assert.Equal(t, want, string(AppendString(nil, in)), "%q", in)
		assert.Equal(t, want, string(AppendString(nil, []byte(in))), "%q as bytes", in)
	}
}

// TestAppendStringRandom: any bytes give valid JSON that reads back as the
// input with invalid UTF-8 replaced.
func TestAppendStringRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	alphabet := []byte("ab\"\\\n\x00\x7f\xc3\xa9\xe2\x80\xa8\xf0\x9f\x98\x80\xff")
	for i := 0; i < 2000; i++ {
		b := make([]byte, rng.Intn(40))
		for j := range b {
			b[j] = alphabet[rng.Intn(len(alphabet))]
		}
		out := AppendString([]byte("x"), b)[1:]
		require.True(t, json.Valid(out), "%q -> %s", b, out)
		var back string
		require.NoError(t, json.Unmarshal(out, &back))
		require.Equal(t, replaced(b), back, "%q", b)
		require.True(t, utf8.Valid(out))
	}
}

// replaced is b with each byte that is not part of valid UTF-8 replaced
// by U+FFFD.
func replaced(b []byte) string {
	var sb strings.Builder
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		sb.WriteRune(r) // RuneError for an invalid byte
		b = b[n:]
	}
	return sb.String()
}

func TestWriter(t *testing.T) {
	w := Object(nil)
	w.Str("s", "v")
	w.Int("i", -3)
	w.Bool("b", true)
	w.Null("n")
	w.Open("o")
	w.OpenArray("a")
	w.IntValue(1)
	w.OpenValue()
	w.Key("k\"")
	w.FloatValue(math.NaN(), 64)
	w.Close()
	w.StrValue("x")
	w.CloseArray()
	w.Close()
	w.Bytes("by", []byte("\xff"))
	w.Raw("r", []byte(`[1]`))
	out := w.End()
	assert.Equal(t, `{"s":"v","i":-3,"b":true,"n":null,"o":{"a":[1,{"k\"":"NaN"},"x"]},"by":"\ufffd","r":[1]}`, string(out))
	assert.True(t, json.Valid(out))
	v := New(nil)
	v.OpenArrayValue()
	v.FloatValue(1.5, 32)
	v.FloatValue(math.Inf(-1), 32)
	v.CloseArray()
	assert.Equal(t, `[1.5,"-Infinity"]`, string(v.B))
}

// TestAppendStringEightAtATime: AppendString, which takes plain ASCII
// eight bytes at a time, writes what a rune-by-rune reference writes,
// for strings of long plain runs with every byte value put at every
// position of an eight-byte word (the start, the middle and the end of a
// run), and for every single byte and pair of bytes around a word.
func TestAppendStringEightAtATime(t *testing.T) {
	check := func(b []byte) {
		t.Helper()
		want := appendStringReference([]byte("x"), b)
		require.Equal(t, string(want), string(AppendString([]byte("x"), b)), "%q", b)
		require.Equal(t, string(want), string(AppendString([]byte("x"), string(b))), "%q as a string", b)
	}
	plain := []byte("0123456789abcdefghijklmnopqrstuvwxyz ABCDEFGH!#$%&'()*+,-./:;<=>?@[]^_`{|}~")
	for c := 0; c < 256; c++ {
		for _, n := range []int{7, 8, 9, 16, 17, 24, 40} {
			for pos := 0; pos < n; pos++ {
				b := append([]byte(nil), plain[:n]...)
				b[pos] = byte(c)
				check(b)
			}
		}
	}
	rng := rand.New(rand.NewSource(2))
	specials := []byte("\"\\\n\x00\x1f\x20\x7e\x7f\x80\xc3\xa9\xe2\x80\xa8\xf0\x9f\x98\x80\xff")
	for i := 0; i < 20000; i++ {
		b := make([]byte, rng.Intn(70))
		for j := range b {
			if rng.Intn(12) == 0 {
				b[j] = specials[rng.Intn(len(specials))]
			} else {
				b[j] = plain[rng.Intn(len(plain))]
			}
		}
		check(b)
	}
}

// appendStringReference is what AppendString writes, rune by rune: the
// reference it is held against (no shared code with it).
func appendStringReference(dst, s []byte) []byte {
	dst = append(dst, '"')
	for len(s) > 0 {
		r, n := utf8.DecodeRune(s)
		switch {
		case r == '"' || r == '\\':
			dst = append(dst, '\\', byte(r))
		case r == '\n':
			dst = append(dst, `\n`...)
		case r == '\r':
			dst = append(dst, `\r`...)
		case r == '\t':
			dst = append(dst, `\t`...)
		case r < 0x20, r == 0x7f, r == 0x2028, r == 0x2029:
			dst = fmt.Appendf(dst, `\u%04x`, r)
		case r == utf8.RuneError && n == 1: // a byte that is not UTF-8
			dst = append(dst, `\ufffd`...)
		default:
			dst = append(dst, s[:n]...)
		}
		s = s[n:]
	}
	return append(dst, '"')
}
