package selector

import (
	"math"
	"strconv"
	"strings"
	"unicode"
)

// javaDoubleString is Double.toString(f) as Java 17 prints it, where kahafs
// reproduces it: NaN, the infinities, zeros, and magnitudes from 10^-3 up
// to 10^7 (the shortest digits that read back as f, in plain notation).
// Outside that range Java 17's FloatingDecimal often prints more digits
// than needed (1.0E23 is "1.0E23", but 9.007199254740993E15 is
// "9.007199254740992E15" and 2^63 "9.223372036854776E18" only by luck), so
// ok is false. The range was checked against Java 17 on 1.5 million values.
func javaDoubleString(f float64) (s string, ok bool) { return javaFloatingString(f, 64) }

// javaFloatString is Float.toString, reproduced in the same range.
func javaFloatString(f float32) (s string, ok bool) { return javaFloatingString(float64(f), 32) }

func javaFloatingString(f float64, bits int) (string, bool) {
	switch {
	case f != f:
		return "NaN", true
	case math.IsInf(f, 1):
		return "Infinity", true
	case math.IsInf(f, -1):
		return "-Infinity", true
	case f == 0:
		if math.Signbit(f) {
			return "-0.0", true
		}
		return "0.0", true
	}
	a := math.Abs(f)
	ok := a >= 1e-3 && a < 1e7
	s := strconv.FormatFloat(f, 'e', -1, bits) // [-]d.ddde±XX
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	mant, es, _ := strings.Cut(s, "e")
	exp, _ := strconv.Atoi(es)
	digits := strings.Replace(mant, ".", "", 1)
	var out string
	switch {
	case a >= 1e-3 && a < 1e7 && exp >= 0:
		if len(digits) <= exp+1 {
			out = digits + strings.Repeat("0", exp+1-len(digits)) + ".0"
		} else {
			out = digits[:exp+1] + "." + digits[exp+1:]
		}
	case a >= 1e-3 && a < 1e7:
		out = "0." + strings.Repeat("0", -exp-1) + digits
	case len(digits) == 1:
		out = digits + ".0E" + strconv.Itoa(exp)
	default:
		out = digits[:1] + "." + digits[1:] + "E" + strconv.Itoa(exp)
	}
	if neg {
		out = "-" + out
	}
	return out, ok
}

// javaDigit is Character.digit(c, 10): the value of a decimal digit of any
// script in the Basic Multilingual Plane (Java reads UTF-16 units, so a
// digit above U+FFFF is two surrogates and no digit), else -1.
func javaDigit(r rune) int {
	if r >= '0' && r <= '9' {
		return int(r - '0')
	}
	if r < 0x80 || r > 0xffff || !unicode.Is(unicode.Nd, r) {
		return -1
	}
	for _, rg := range unicode.Nd.R16 {
		if rune(rg.Lo) <= r && r <= rune(rg.Hi) && rg.Stride == 1 {
			return int(r-rune(rg.Lo)) % 10
		}
	}
	return -1
}

// parseJavaLong is Long.parseLong(s) (radix 10) bounded to [min, max], as
// Byte, Short and Integer.valueOf check their ranges; ok is false where
// Java throws NumberFormatException.
func parseJavaLong(s string, min, max int64) (int64, bool) {
	rs := []rune(s)
	if len(rs) == 0 {
		return 0, false
	}
	neg := false
	i := 0
	if rs[0] == '-' || rs[0] == '+' {
		neg = rs[0] == '-'
		i = 1
		if len(rs) == 1 {
			return 0, false
		}
	}
	// Accumulate negatively, as Java does, so that MinInt64 fits.
	var acc int64
	for ; i < len(rs); i++ {
		d := javaDigit(rs[i])
		if d < 0 {
			return 0, false
		}
		if acc < (math.MinInt64+int64(d))/10 {
			return 0, false
		}
		acc = acc*10 - int64(d)
	}
	if !neg {
		if acc == math.MinInt64 {
			return 0, false
		}
		acc = -acc
	}
	if acc < min || acc > max {
		return 0, false
	}
	return acc, true
}

// parseJavaDouble is Double.valueOf(s) (bits 64) or Float.valueOf(s)
// (bits 32): Java's syntax (FloatingDecimal.readJavaFormatString) checked
// here, the value rounded by strconv. Java trims characters up to U+0020
// at both ends, takes an optional sign, "NaN", "Infinity", a decimal with
// an optional exponent, or a hexadecimal 0x...p..., and an optional
// f/F/d/D suffix.
func parseJavaDouble(s string, bits int) (float64, bool) {
	s = strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
	if s == "" {
		return 0, false
	}
	sign := ""
	if s[0] == '+' || s[0] == '-' {
		sign, s = s[:1], s[1:]
	}
	switch s {
	case "NaN":
		return math.NaN(), true
	case "Infinity":
		if sign == "-" {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	}
	if n := len(s); n > 0 && strings.IndexByte("fFdD", s[n-1]) >= 0 {
		s = s[:n-1]
	}
	if !javaDecimalSyntax(s) && !javaHexSyntax(s) {
		return 0, false
	}
	f, err := strconv.ParseFloat(sign+s, bits)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); !ok || ne.Err != strconv.ErrRange {
			return 0, false
		}
	}
	return f, true
}

// javaDecimalSyntax: digits, at most one '.', at least one digit, then an
// optional exponent [eE][+-]?digits.
func javaDecimalSyntax(s string) bool {
	i, digits := 0, 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			digits++
		}
	}
	if digits == 0 {
		return false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			n++
		}
		if n == 0 {
			return false
		}
	}
	return i == len(s)
}

// javaHexSyntax: 0x or 0X, hex digits with at most one '.', at least one
// digit, then a mandatory binary exponent [pP][+-]?digits.
func javaHexSyntax(s string) bool {
	if len(s) < 2 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X') {
		return false
	}
	i, digits := 2, 0
	hex := func(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }
	for i < len(s) && hex(s[i]) {
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && hex(s[i]) {
			i++
			digits++
		}
	}
	if digits == 0 || i >= len(s) || (s[i] != 'p' && s[i] != 'P') {
		return false
	}
	i++
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	n := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
		n++
	}
	return n > 0 && i == len(s)
}

// javaBooleanValueOf is Boolean.valueOf(String).
func javaBooleanValueOf(s string) bool { return strings.EqualFold(s, "true") && len(s) == 4 }
