package selector

import (
	"encoding/base64"
	"math"
	"strconv"
	"strings"
)

// The corpus the oracle tests run: messages as SelectorCheck builds them
// (brokerkit/src/SelectorCheck.java) and selectors, hand-written and
// generated from a seed.

// tval is a typed property value as SelectorCheck reads it.
type tval struct {
	Type  string `json:"type"`
	Value any    `json:"value"`
}

// cmsg is a message of the corpus.
type cmsg struct {
	Headers    map[string]any `json:"headers"`
	Properties [][2]any       `json:"properties"`
	Blob       []byte         `json:"blob,omitempty"` // a stored message instead
}

func tv(typ string, v any) tval { return tval{Type: typ, Value: v} }
func tInt(i int32) tval         { return tv("int", i) }
func tLong(i int64) tval        { return tv("long", i) }
func tStr(s string) tval        { return tv("string", s) }
func tBool(b bool) tval         { return tv("boolean", b) }
func tByte(i int8) tval         { return tv("byte", i) }
func tShort(i int16) tval       { return tv("short", i) }
func tChar(c uint16) tval       { return tv("char", c) }
func tNull() tval               { return tv("null", nil) }
func tBytes(b []byte) tval      { return tv("bytes", base64.StdEncoding.EncodeToString(b)) }
func tDouble(f float64) tval {
	return tv("double", strconv.FormatUint(math.Float64bits(f), 10))
}
func tFlt(f float32) tval {
	return tv("float", strconv.FormatInt(int64(int32(math.Float32bits(f))), 10))
}
func tMap(m map[string]tval) tval { return tv("map", m) }
func tList(l ...tval) tval        { return tv("list", l) }

func props(kv ...any) [][2]any {
	var out [][2]any
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, [2]any{kv[i], kv[i+1]})
	}
	return out
}

// handMessages exercise every header and every property type.
func handMessages() []cmsg {
	return []cmsg{
		// 0: nothing set.
		{Headers: map[string]any{}},
		// 1: the usual.
		{Headers: map[string]any{
			"messageId": "ID:kahafs-host-1-1796000000000-1:1:1:1:1", "destination": "topic://T.NEWS",
			"type": "t1", "correlationId": "c-1", "groupId": "g", "groupSeq": 3, "priority": 4,
			"persistent": true, "timestamp": int64(1796000000123), "expiration": int64(0),
		}, Properties: props(
			"parity", tStr("even"), "idx", tInt(12), "name", tStr("alpha"), "flag", tBool(true),
			"price", tDouble(9.99), "qty", tLong(100), "ratio", tFlt(0.5), "b", tByte(7),
			"sh", tShort(300), "ch", tChar('x'), "nul", tNull(), "bytes", tBytes([]byte{1, 2, 3}),
			"map", tMap(map[string]tval{"k": tInt(1)}), "list", tList(tStr("a"), tInt(1)),
			"s", tStr("abc"), "n", tInt(5), "d", tDouble(2.5), "f", tFlt(2.5), "l", tLong(5),
		)},
		// 2: the other values.
		{Headers: map[string]any{
			"messageId": "ID:kahafs-host-1-1796000000000-1:1:1:1:2", "destination": "queue://Q.A",
			"type": "t2", "priority": 9, "persistent": false, "timestamp": int64(1), "expiration": int64(4949600000000),
			"redeliveryCounter": 2, "userId": "admin", "brokerPath": []string{"b1", "b2"},
			"replyTo": "temp-queue://ID:x-1:1:1", "originalDestination": "topic://T.ORIG",
			"transactionId": map[string]any{"conn": "ID:kahafs-host-1-1796000000000-0:1", "n": 17},
			"brokerInTime":  int64(1796000000100), "brokerOutTime": int64(1796000000200), "groupFirst": true,
		}, Properties: props(
			"parity", tStr("odd"), "idx", tInt(11), "name", tStr("beta"), "flag", tBool(false),
			"price", tDouble(math.NaN()), "qty", tLong(math.MaxInt64), "ratio", tFlt(float32(math.NaN())),
			"b", tByte(-128), "sh", tShort(-1), "ch", tChar(0xe9), "s", tStr("ABC"), "n", tInt(-5),
			"d", tDouble(math.Copysign(0, -1)), "f", tFlt(0.1), "l", tLong(-5),
			"list", tList(tStr("a"), tNull()), "map", tMap(map[string]tval{}),
		)},
		// 3: strings that look like other things.
		{Headers: map[string]any{"type": "x", "correlationId": "it's"}, Properties: props(
			"s", tStr("a%b"), "t", tStr("a_b"), "u", tStr("it's"), "v", tStr("😀"), "w", tStr("x\ny"),
			"n", tStr("5"), "d", tStr("2.5"), "f", tStr(" 7 "), "l", tStr("٣"), "flag", tStr("TRUE"),
			"idx", tStr("12"), "b", tStr("1e3"), "sh", tStr("0x1p3"), "qty", tStr("100L"),
			"price", tStr("9.99d"), "ratio", tStr("NaN"), "name", tStr("-Infinity"), "ch", tStr("x"),
		)},
		// 4: extremes.
		{Headers: map[string]any{"priority": 0, "groupSeq": math.MaxInt32, "redeliveryCounter": math.MaxInt32}, Properties: props(
			"n", tInt(math.MinInt32), "idx", tInt(math.MaxInt32), "l", tLong(math.MinInt64), "qty", tLong(math.MaxInt64),
			"d", tDouble(math.Inf(1)), "price", tDouble(math.Inf(-1)), "f", tFlt(float32(math.Inf(1))),
			"ratio", tFlt(float32(math.Copysign(0, -1))), "b", tByte(127), "sh", tShort(math.MaxInt16),
			"ch", tChar(0xffff), "s", tStr(""), "flag", tNull(), "x", tDouble(1e300), "y", tDouble(5e-324),
			"big", tDouble(9.223372036854775807e18),
		)},
		// 5: the JMSXUserID property (no user id field) and a map and list that equal 1's.
		{Headers: map[string]any{"destination": "topic://T.NEWS", "persistent": true}, Properties: props(
			"JMSXUserID", tStr("prop-user"), "JMSType", tStr("not-the-header"), "map", tMap(map[string]tval{"k": tInt(1)}),
			"list", tList(tStr("a"), tInt(1)), "n", tShort(5), "d", tFlt(2.5), "l", tByte(5), "idx", tDouble(12),
			"s", tStr("abc"), "parity", tStr("even"), "t", tStr("Abc"), "u", tStr("\uffff"), "v", tStr("\U00010000"),
		)},
		// 6: numbers of every type equal to 1, and dotted names.
		{Properties: props("b", tByte(1), "sh", tShort(1), "n", tInt(1), "l", tLong(1), "f", tFlt(1), "d", tDouble(1),
			"ch", tChar('1'), "s", tStr("1"), "flag", tBool(true), "x", tLong(1<<40), "y", tFlt(16777217),
			"idx", tLong(12), "qty", tInt(100), "price", tFlt(9.99), "ratio", tDouble(0.5)),
		},
		// 7: a NUL and a character above U+FFFF in headers, properties and a nested list.
		{Headers: map[string]any{"type": "a\x00b", "correlationId": "😀"}, Properties: props(
			"z", tStr("a\x00b"), "v", tStr("😀"), "list", tList(tStr("😀"), tStr("a\x00b")), "s", tStr("x\x00"),
		)},
	}
}

// handSelectors are edge cases of the grammar and of the evaluation.
var handSelectors = []string{
	// The brief's example and plain forms.
	"parity = 'even' AND idx > 10", "parity = 'odd' OR idx < 12", "name LIKE 'al%'", "name NOT LIKE 'al%'",
	"idx BETWEEN 10 AND 12", "idx NOT BETWEEN 11 AND 12", "parity IN ('even', 'odd')", "parity NOT IN ('even')",
	"nul IS NULL", "nul IS NOT NULL", "missing IS NULL", "idx IS NULL", "idx IS NOT NULL", "flag", "NOT flag",
	"TRUE", "FALSE", "NULL", "NOT NULL", "NOT TRUE", "TRUE AND NULL", "FALSE OR NULL", "NULL OR TRUE", "NULL AND FALSE",
	// Headers.
	"JMSType = 't1'", "JMSType IS NULL", "JMSPriority > 4", "JMSPriority = 4", "JMSDeliveryMode = 'PERSISTENT'",
	"JMSDeliveryMode = 'NON_PERSISTENT'", "JMSRedelivered", "JMSRedelivered = TRUE", "JMSXDeliveryCount = 3",
	"JMSXDeliveryCount > 1", "JMSMessageID LIKE 'ID:kahafs-host-%'", "JMSMessageID = 'ID:kahafs-host-1-1796000000000-1:1:1:1:1'",
	"JMSCorrelationID = 'c-1'", "JMSCorrelationID IS NULL", "JMSTimestamp > 1796000000000", "JMSTimestamp = 1",
	"JMSExpiration = 0", "JMSExpiration > 0", "JMSXGroupID = 'g'", "JMSXGroupSeq = 3", "JMSXGroupSeq = 2147483647",
	"JMSDestination = 'topic://T.NEWS'", "JMSDestination = 'topic://T.ORIG'", "JMSReplyTo LIKE 'temp-queue://%'",
	"JMSXUserID = 'admin'", "JMSXUserID = 'prop-user'", "JMSXUserID IS NULL", "JMSType = 'not-the-header'",
	"JMSXProducerTXID = 'TX:ID:kahafs-host-1-1796000000000-0:1:17'", "JMSXProducerTXID IS NULL",
	"JMSActiveMQBrokerPath = '[b1, b2]'", "JMSActiveMQBrokerPath = 'null'", "JMSActiveMQBrokerInTime > 0",
	"JMSActiveMQBrokerOutTime = 1796000000200", "JMSXGroupFirstForConsumer", "jmstype = 't1'", "JMSTYPE IS NULL",
	// Type promotion in comparisons.
	"n = 5", "n = 5.0", "n = 5L", "l = 5", "l = 5.0", "d = 2.5", "f = 2.5", "f > 2", "d > 2", "b = 7", "sh = 300",
	"b < sh", "sh > b", "n = l", "l = n", "n = d", "d = n", "f = d", "d = f", "b = n", "n = b", "sh = n", "n = sh",
	"x = 1099511627776", "y = 16777216", "y = 16777217", "y = 16777217.0", "l = f", "f = l", "ratio = 0.5",
	"price = 9.99", "price < 10", "price <> price", "price = price", "ratio = ratio", "d = -0.0", "d = 0.0", "d < 0",
	"qty = 9223372036854775807", "qty > 9223372036854775806", "qty = 9223372036854775807.0", "n = -2147483648",
	"l = -9223372036854775808", "idx = 2147483647", "ch = 'x'", "ch = 120", "ch > 'a'", "ch IN ('x')", "ch LIKE 'x'",
	"s = 'abc'", "s > t", "s < t", "t < s", "u > v", "v > u", "s = 5", "5 = s", "n = '5'", "'5' = n", "flag = 'TRUE'",
	"flag = TRUE", "TRUE = flag", "flag = 1", "1 = TRUE", "big = 9223372036854775807", "x > 1e299", "y > 0", "y = 4.9E-324",
	// Equality's evaluate and matches.
	"missing = 'a'", "'a' = missing", "NOT (missing = 'a')", "NOT ('a' = missing)", "missing = other",
	"missing <> other", "NOT (missing = other)", "bytes = bytes", "bytes <> bytes", "map = map", "list = list",
	"(map = map) = TRUE", "NOT (bytes = bytes)", "n = 5 = TRUE", "(n = 5) = (idx = 12)",
	"(n = 5) AND (missing = 'a')", "(n = 5) OR ('a' = missing)", "NOT ((n = 5) AND (missing = 'a'))",
	// Comparisons that throw.
	"bytes > 1", "map < 1", "list >= 1", "1 < bytes", "missing > bytes", "bytes > missing", "d > f", "f > d",
	"d = f", "f = d", "0.5 = ratio", "ratio = 0.5", "price = ratio", "ratio = price",
	// Arithmetic.
	"n + 1 = 6", "n - 1 = 4", "n * 2 = 10", "n / 2 = 2.5", "n % 2 = 1", "n / 0 > 1", "n % 0 = n % 0", "-n = -5",
	"- -n = 5", "--n = 5", "n + l = 10", "n + d = 7.5", "idx * 2147483647 < 0", "2147483647 + 1 < 0",
	"9223372036854775807 + 1 < 0", "qty + 1 < 0", "b + b = 14", "sh * sh = 90000", "-b = -7", "-sh = -300", "-ch = 1",
	"-s = 1", "-flag IS NULL", "s + 1 = 'abc1'", "s + n = 'abc5'", "s + d = 'abc2.5'", "s + f = 'abc2.5'",
	"s + flag = 'abctrue'", "s + ch = 'abcx'", "s + list = 'abc[a, 1]'", "s + qty = 'abc100'", "s + price = 'abc9.99'",
	"s + bytes = 'x'", "1 + s = 'x'", "n + s = 'x'", "flag + 1 = 2", "ch + 1 = 2", "n + flag = 1", "n + ch = 1",
	"n - missing IS NULL", "missing + n IS NULL", "(n + missing) = 1", "s + missing IS NULL", "1 + 2 * 3 = 7",
	"(1 + 2) * 3 = 9", "10 - 2 - 3 = 5", "12 / 2 / 3 = 2", "7 % 4 % 2 = 1", "-2147483648 = n", "-(-2147483648) = n",
	"-9223372036854775808 = l", "9223372036854775808 > 1", "-9223372036854775808 < 0", "18446744073709551616 = 0",
	"18446744073709551617 = 1", "99999999999999999999 > 0", "99999999999999999999 = 99999999999999999999",
	"99999999999999999999 + 1 = 1", "-99999999999999999999 < 0", "9223372036854775808 + 1 < 0",
	// Literals.
	"n = 0x5", "idx = 0xC", "idx = 014", "n = 05", "n = 5l", "0x7FFFFFFFFFFFFFFF > 0", "0x8000000000000000 > 0",
	"0xFFFFFFFF = 4294967295", "0777777777777777777777 > 0", "01777777777777777777777 > 0", "d = 2.5e0",
	"d = 25e-1", "d = .25E1", "d = 2.", "n = 5.", "1e400 > d", "1e-400 = 0", "08 = 8", "0L = 0", "1.5f = 1.5",
	"0x = 0", "0x1g = 1", "1.5.3 = 1", "n = 5 -- comment\n", "n = 5 --comment", "n = 5 /* comment */",
	"n = 5 /* open", "n = 5 -- c\r", "n = 5 -- c\r\n AND TRUE", "/* a */ n /* b */ = /* c */ 5",
	"n=5", "n\t=\t5", "n\n=\n5", "n\r=\r5", "n\f=\f5", "n\v= 5", "n = 5\u00a0", "s = 'it''s'", "u = 'it''s'",
	"s = ''", "s = '", "s = 'abc", "'''' = ''''", "s = 'a''", "v = '😀'", "w = 'x\ny'", "l = '٣'",
	// Reserved words and identifiers.
	"not flag", "NoT flag", "n = 5 and idx = 12", "n = 5 oR idx = 1", "n between 1 and 10", "s like 'a%'",
	"s LIKE 'a!%' escape '!'", "s in ('abc')", "nul is null", "nul is not null", "true", "False", "null",
	"xpath '//a'", "XPATH '//a'", "xquery '//a'", "XQUERY '//a'", "XQUERY '//a' OR flag", "XPATH '//a' AND FALSE",
	"FALSE AND XPATH '//a'", "$x IS NULL", "_x IS NULL", "x1 IS NULL", "1x IS NULL", "a.b IS NULL", "a-b IS NULL",
	"and = 1", "\"quoted\" = 1", "é = 1", "ſ = 1", "K = 1", "ı IS NULL", "İN IS NULL", "NOT", "AND", "IS NULL",
	// Precedence and grammar quirks.
	"NOT n = 5", "NOT flag = TRUE", "NOT (n = 5)", "NOT NOT flag", "NOT NOT NOT flag", "flag AND NOT flag OR TRUE",
	"n = 5 AND idx = 12 OR FALSE", "n = 5 OR idx = 12 AND FALSE", "(n = 5 OR idx = 12) AND FALSE",
	"n = 5 = TRUE", "n > 1 > 0", "n > 1 = TRUE", "n = 5 IS NULL", "nul IS NULL IS NULL", "nul IS NOT NULL IS NULL",
	"n BETWEEN 1 AND 10 AND TRUE", "n BETWEEN 1 AND 10 BETWEEN 1 AND 2", "s LIKE 'a%' LIKE 'b'", "s IN ('a') IN ('b')",
	"n IN ('5')", "5 IN ('5')", "'a' IN ('a')", "(s) IN ('abc')", "+s IN ('abc')", "-s IN ('abc')", "s + '' IN ('abc')",
	"n NOT IN ('5')", "nul NOT IN ('x')", "missing NOT IN ('x')", "flag IN ('true')", "s IN ('a','b','c','d','abc')",
	"s IN ('a','b','c','d','e','f','g','h','i','j','abc')", "s IN ('abc','abc','abc','abc','abc')", "s IN ()", "s IN ('a' 'b')",
	"s IN (abc)", "s IN 'abc'", "n BETWEEN 1", "n BETWEEN 1 OR 2", "n NOT LIKE", "n NOT = 5", "n IS 5", "n IS NOT 5",
	"n == 5", "n != 5", "n <> 5", "n < > 5", "n =< 5", "n >= 5", "n => 5", "n <=> 5", "(n = 5", "n = 5)", "()", "",
	" ", "-- only a comment\n", "/* only a comment */", "n = 5 n = 6", "n = 5,", "(n = 5) (idx = 12)",
	"+5 = n", "+ +5 = n", "+-5 = -n", "-+5 = -n", "+ = 5", "n + = 5", "n = 5 +", "n = + 5", "n = - 5", "n = 5 - - 5",
	"n = 5 + NOT TRUE", "n + 1", "n", "5", "'abc'", "n + 1 = ", "NOT 5", "NOT s", "NOT (n + 1)", "-TRUE", "-(n = 5)",
	"(n = 5) + 1 = 2", "TRUE + 1 = 2", "flag + 1 = 2", "TRUE = 1", "1 = TRUE", "TRUE = FALSE", "TRUE = NULL",
	"n = NULL", "NULL = n", "NULL IS NULL", "5 IS NULL", "NULL IS NOT NULL", "n <> NULL", "n > NULL", "NULL > n",
	"n > 'a'", "'a' < n", "n > TRUE", "n BETWEEN 'a' AND 'b'", "n BETWEEN 1 AND 'b'", "s > t AND TRUE",
	"(n = 5) > 1", "n > (idx = 12)", "(n) > 1", "(5) > n", "('a') > n", "s LIKE n", "s LIKE 'a' ESCAPE", "s LIKE 'a' ESCAPE n",
	// LIKE.
	"s LIKE 'abc'", "s LIKE 'a_c'", "s LIKE '%'", "s LIKE '_'", "s LIKE '___'", "s LIKE 'a%c'", "s LIKE '%b%'", "s LIKE 'A%'",
	"s LIKE 'a.c'", "s LIKE '.*'", "s LIKE 'a[b]c'", "s LIKE '(a)bc'", "t LIKE 'a\\_b' ESCAPE '\\'", "t LIKE 'a!_b' ESCAPE '!'",
	"s LIKE 'a!%' ESCAPE '!'", "s LIKE 'a!bc' ESCAPE '!'", "s LIKE 'abc!' ESCAPE '!'", "s LIKE 'a!!bc' ESCAPE '!'",
	"t LIKE 'a%_b' ESCAPE '%'", "s LIKE 'a%%' ESCAPE '%'", "s LIKE 'a__' ESCAPE '_'", "s LIKE 'x' ESCAPE ''",
	"s LIKE 'x' ESCAPE 'ab'", "s LIKE 'x' ESCAPE '😀'", "v LIKE '_'", "v LIKE '😀'", "v LIKE '%'", "w LIKE 'x_y'", "w LIKE 'x%'",
	"u LIKE 'it''s'", "u LIKE '%''%'", "s LIKE '\t\tabc' ESCAPE '\t'", "s LIKE '\t\t' ESCAPE '\t'", "s LIKE '\t\t1' ESCAPE '\t'",
	"s LIKE '∂∂' ESCAPE '∂'", "s LIKE '\"02' ESCAPE '∂'", "n LIKE '5'", "nul LIKE 'x'", "missing LIKE 'x'", "NOT (missing LIKE 'x')",
	"missing NOT LIKE 'x'", "n NOT LIKE '5'", "flag LIKE 'true'", "s LIKE 'a^b$c'", "s LIKE '{}|&<>=!:'", "s LIKE 'ab\\'",
	"s LIKE '%%%%%%%%%%%%%%%%%%%%c'", "s LIKE '%a%b%c%'",
	// convert_string_expressions.
	"convert_string_expressions:n = '5'", "convert_string_expressions:'5' = n", "convert_string_expressions:n > '4'",
	"convert_string_expressions:d = '2.5'", "convert_string_expressions:f = ' 7 '", "convert_string_expressions:n = ' 5'",
	"convert_string_expressions:flag = 'TRUE'", "convert_string_expressions:'TRUE' = flag", "convert_string_expressions:b = '1e3'",
	"convert_string_expressions:n = 'x'", "convert_string_expressions:idx = '12'", "convert_string_expressions:12 = idx",
	"convert_string_expressions:qty = '100L'", "convert_string_expressions:100 = qty", "convert_string_expressions:d = d",
	"convert_string_expressions:price = '9.99d'", "convert_string_expressions:9.99 = price", "convert_string_expressions:ratio = 'NaN'",
	"convert_string_expressions:0.5 = ratio", "convert_string_expressions:sh = '0x1p3'", "convert_string_expressions:8.0 = sh",
	"convert_string_expressions:l = '٣'", "convert_string_expressions:3 = l", "convert_string_expressions:5 = n",
	"convert_string_expressions:n = '+5'", "convert_string_expressions:n = '-5'", "convert_string_expressions:n = '٥'",
	"convert_string_expressions:name = '-Infinity'", "convert_string_expressions:-1e400 = name", "convert_string_expressions:s = 1",
	"convert_string_expressions:b = '7'", "convert_string_expressions:b = '1'", "convert_string_expressions:sh = '1'",
	"convert_string_expressions:b = '128'", "convert_string_expressions:f = '2.5f'", "convert_string_expressions:x = '1099511627776'",
	"convert_string_expressions:n BETWEEN '1' AND '9'", "convert_string_expressions:n IN ('5')", "convert_string_expressions:n LIKE '5'",
	"convert_string_expressions:", "convert_string_expressions:n = ", "convert_string_expressions: n = '5'", " convert_string_expressions:n = '5'",
	"CONVERT_STRING_EXPRESSIONS:n = '5'",
	// Functions.
	"INLIST(MAKELIST('a', 'b'), 'a')", "INLIST(MAKELIST('a', 'b'), s)", "INLIST(list, 'a')", "INLIST(list, 1)", "INLIST(list, 1L)",
	"INLIST(list, n)", "INLIST(s, 'a')", "INLIST(missing, 'a')", "INLIST(MAKELIST(missing), 'a')", "INLIST(MAKELIST('a', missing), 'a')",
	"INLIST(MAKELIST(1), 1)", "INLIST(MAKELIST(map), map)", "INLIST(MAKELIST(bytes), bytes)", "NOT INLIST(list, 'z')",
	"MAKELIST(1, 2) = MAKELIST(1, 2)", "MAKELIST(list) = MAKELIST(list)", "list = MAKELIST('a', 1)", "MAKELIST(1) IS NULL",
	"MAKELIST() IS NULL", "MAKELIST(1)", "MAKELIST(1) > 1", "s + MAKELIST(1, 'x') = 'abc[1, x]'", "REGEX('b', s)", "REGEX('b', missing)",
	"REGEX(missing, s)", "REGEX('a.c', s)", "REGEX('5', n)", "REGEX('2.5', d)", "REGEX('b')", "regex('b', s)", "Regex('b', s)",
	"REGEX('b', s + 'x')", "REGEX('b', (s + 'x'))", "REPLACE(s, 'b', 'x') = 'axc'", "REPLACE(s, 'z', missing) = 'abc'",
	"REPLACE(s, 'b', missing) = 'abc'", "REPLACE(missing, 'b', 'x') IS NULL", "REPLACE(n, 'b', 'x') IS NULL", "REPLACE(s, 'b') = 'a'",
	"REPLACE(s, '.', 'x') = 'xxx'", "INLIST(SPLIT('a,b,c', ','), 'b')", "INLIST(SPLIT(s, 'b'), 'c')", "INLIST(SPLIT(s, 'b', 1), 'abc')",
	"INLIST(SPLIT(s, 'b', 1L), 'abc')", "INLIST(SPLIT(s, 'b', missing), 'abc')", "SPLIT(s, 'x') = MAKELIST('abc')",
	"SPLIT('a,,', ',') = MAKELIST('a')", "SPLIT('a,,', ',', -1) = MAKELIST('a', '', '')", "SPLIT(',a', ',') = MAKELIST('', 'a')",
	"SPLIT(',', ',') = MAKELIST('a')", "INLIST(SPLIT(s, ''), 'a')", "FOO(1) = 1", "n (1) = 1", "INLIST(list 'a')", "INLIST(, 'a')",
	"INLIST(list, 'a',)", "INLIST(list, 'a'", "INLIST(list, 'a' AND TRUE)", "INLIST(MAKELIST(NOT flag), TRUE)",
	"INLIST(MAKELIST(-n), -5)", "INLIST(MAKELIST(+n), 5)", "INLIST(MAKELIST(XQUERY 'x'), FALSE)",
	// HashSet order in a printed IN list; unterminated literals.
	"s IN ('ab','ba','abc','b','x')", "s IN ('zz','Aa','BB','a','b','c','d','e','f','g','h','i','j','k','l','m','n','o','p','q','r','s','t','u','v','w','x','y')",
	"s IN ('héllo','😀','x','y','z','\x00')", "s = 'x'''", "s = 'x''", "s = 'x'' OR TRUE", "s = '''", "s = ''''' b",
	// Strings with a NUL or a character above U+FFFF: a property's are
	// read as U+FFFD pairs, a header's and a nested one's are not.
	"JMSType = 'a\x00b'", "JMSType LIKE 'a_b'", "JMSCorrelationID = '😀'", "v = '\ufffd\ufffd'", "z LIKE 'a__b'",
	"z = 'a\x00b'", "INLIST(list, '😀')", "INLIST(list, 'a\x00b')", "INLIST(list, '\ufffd\ufffd')", "s LIKE 'x__'",
}

// deepSelectors nest as deep as Parse takes: ActiveMQ takes them too.
func deepSelectors() []string {
	return []string{
		strings.Repeat("(", MaxDepth) + "flag" + strings.Repeat(")", MaxDepth),
		strings.Repeat("NOT ", MaxDepth) + "flag", strings.Repeat("- ", MaxDepth) + "1 = 1",
		"n" + strings.Repeat(" + 1", 5000) + " = 5005",
	}
}
