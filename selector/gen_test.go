package selector

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// gen makes random selectors and messages from a seed: mostly valid
// selectors over a small set of names, so that they meet the messages'
// properties, some of them damaged, so that the parser meets errors.
type gen struct {
	r *rand.Rand
}

func newGen(seed uint64) *gen { return &gen{r: rand.New(rand.NewPCG(seed, 0x5e1ec7))} }

func (g *gen) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }
func (g *gen) chance(p float64) bool    { return g.r.Float64() < p }

var genNames = []string{"a", "b", "n", "l", "d", "f", "s", "t", "x", "flag", "nul", "bytes", "list", "map", "ch", "sh",
	"idx", "parity", "missing"}

var genHeaders = []string{"JMSType", "JMSPriority", "JMSDeliveryMode", "JMSRedelivered", "JMSXDeliveryCount",
	"JMSTimestamp", "JMSMessageID", "JMSCorrelationID", "JMSDestination", "JMSReplyTo", "JMSXGroupID", "JMSXGroupSeq",
	"JMSXUserID", "JMSXProducerTXID", "JMSActiveMQBrokerPath", "JMSExpiration", "JMSXGroupFirstForConsumer"}

var genStrings = []string{"", "a", "abc", "5", "1.5", "true", "TRUE", " 7 ", "٣", "a%b", "a_b", "it''s", "é", "😀", "x", "even",
	"odd", "ABC", "-5", "1e3", "NaN", "t1", "PERSISTENT", "queue://Q.A", "[b1, b2]", "a,b"}

var genPatterns = []string{"%", "_", "a%", "%b%", "a_c", "%c", "abc", "a!%b", "a!_b", "!!", "%!%%", "__", "___", "😀", "é%",
	"a.b", "[a]", "(a|b)", "^a$", "\\%", "a\\_b", "ev%", "%dd", "t_", "%5%"}

// word writes a reserved word in a random case.
func (g *gen) word(w string) string {
	switch g.r.IntN(6) {
	case 0:
		return strings.ToLower(w)
	case 1:
		b := []byte(strings.ToLower(w))
		b[0] -= 'a' - 'A'
		return string(b)
	}
	return w
}

func (g *gen) name() string {
	if g.chance(0.2) {
		return g.pick(genHeaders...)
	}
	return g.pick(genNames...)
}

func (g *gen) number() string {
	switch g.r.IntN(14) {
	case 0:
		return g.pick("2147483647", "2147483648", "9223372036854775807", "9223372036854775808", "18446744073709551617", "99999999999999999999")
	case 1:
		return g.pick("0x5", "0xC", "0x7FFFFFFF", "0xFFFFFFFF", "0x7FFFFFFFFFFFFFFF", "0X1f")
	case 2:
		return g.pick("05", "014", "0", "00", "0777", "037777777777")
	case 3:
		return g.pick("1.5", ".5", "2.", "1e3", "2.5E0", "1e400", "1e-400", "0.1", "9.99", "100.0", "1E-3", "12.0")
	case 4:
		return g.pick("5L", "12l", "1L")
	}
	return strconv.Itoa(g.pick2(0, 1, 2, 3, 5, 7, 10, 11, 12, 100, 300, 127, 128))
}

func (g *gen) pick2(xs ...int) int { return xs[g.r.IntN(len(xs))] }

func (g *gen) str(from []string) string { return "'" + g.pick(from...) + "'" }

// value is an expression that is (mostly) not a boolean.
func (g *gen) value(depth int) string {
	if depth <= 0 {
		switch g.r.IntN(5) {
		case 0, 1:
			return g.name()
		case 2:
			return g.str(genStrings)
		}
		return g.number()
	}
	switch g.r.IntN(16) {
	case 0, 1, 2, 3:
		return g.name()
	case 4, 5:
		return g.number()
	case 6:
		return g.str(genStrings)
	case 7, 8:
		return g.value(depth-1) + " " + g.pick("+", "-", "*", "/", "%") + " " + g.value(depth-1)
	case 9:
		return g.pick("-", "+", "- ") + g.value(depth-1)
	case 10:
		return "(" + g.value(depth-1) + ")"
	case 11:
		return g.pick("TRUE", "FALSE", "NULL")
	case 12:
		return "MAKELIST(" + g.unary(depth-1) + ", " + g.unary(depth-1) + ")"
	case 13:
		return "SPLIT(" + g.pick("s", "'a,b'", g.name()) + ", " + g.pick("','", "'b'", "'.'") + ")"
	case 14:
		return "REPLACE(" + g.pick("s", "t", g.name()) + ", " + g.pick("'a'", "'b'", "'%'") + ", " + g.pick("'x'", "''", "missing") + ")"
	}
	return "(" + g.boolean(depth-1) + ")"
}

// unary is a function argument (a unaryExpr).
func (g *gen) unary(depth int) string {
	switch g.r.IntN(4) {
	case 0:
		return g.name()
	case 1:
		return g.number()
	case 2:
		return g.str(genStrings)
	}
	return "(" + g.value(depth) + ")"
}

func (g *gen) boolean(depth int) string {
	if depth <= 0 {
		switch g.r.IntN(4) {
		case 0:
			return g.name()
		case 1:
			return g.pick("TRUE", "FALSE", "NULL")
		}
		return g.name() + " " + g.pick("=", "<>", ">", "<") + " " + g.value(0)
	}
	switch g.r.IntN(20) {
	case 0, 1:
		return g.boolean(depth-1) + " " + g.word("AND") + " " + g.boolean(depth-1)
	case 2, 3:
		return g.boolean(depth-1) + " " + g.word("OR") + " " + g.boolean(depth-1)
	case 4:
		return g.word("NOT") + " " + g.boolean(depth-1)
	case 5:
		return "(" + g.boolean(depth-1) + ")"
	case 6, 7, 8:
		return g.value(depth-1) + " " + g.pick("=", "<>", ">", ">=", "<", "<=") + " " + g.value(depth-1)
	case 9:
		s := g.value(depth-1) + " " + g.not() + g.word("LIKE") + " " + g.str(genPatterns)
		if g.chance(0.3) {
			s += " " + g.word("ESCAPE") + " " + g.str([]string{"!", "\\", "%", "_", "a", "∂", "\t"})
		}
		return s
	case 10:
		return g.value(depth-1) + " " + g.not() + g.word("BETWEEN") + " " + g.value(depth-1) + " " + g.word("AND") + " " + g.value(depth-1)
	case 11:
		n := 1 + g.r.IntN(6)
		items := make([]string, n)
		for i := range items {
			items[i] = g.str(genStrings)
		}
		return g.name() + " " + g.not() + g.word("IN") + " (" + strings.Join(items, ", ") + ")"
	case 12:
		return g.value(depth-1) + " " + g.word("IS") + " " + g.not() + g.word("NULL")
	case 13:
		return "INLIST(" + g.unary(depth-1) + ", " + g.unary(depth-1) + ")"
	case 14:
		return "REGEX(" + g.pick("'b'", "'5'", "'a.c'", "missing", "''") + ", " + g.unary(depth-1) + ")"
	case 15:
		return g.pick("XQUERY 'x'", "TRUE", "FALSE", "NULL")
	case 16:
		return g.boolean(depth-1) + " " + g.pick("=", "<>") + " " + g.boolean(depth-1)
	}
	return g.name()
}

func (g *gen) not() string {
	if g.chance(0.3) {
		return g.word("NOT") + " "
	}
	return ""
}

var genJunk = []string{"(", ")", "AND", "OR", "NOT", ",", "'x'", "5", "+", "-", "=", "IS", "NULL", "--\n", "/* */", "ESCAPE",
	"LIKE", "IN", "BETWEEN", "*", "<>", ".", "0x", "'", "--", "/*", "\t", "!", "1e", "$", "XPATH", "TRUE"}

// selector is a random selector: valid most of the time, damaged at times.
func (g *gen) selector() string {
	s := g.boolean(1 + g.r.IntN(4))
	if g.chance(0.25) {
		f := strings.Split(s, " ")
		i := g.r.IntN(len(f))
		switch g.r.IntN(4) {
		case 0:
			f = append(f[:i], f[i+1:]...)
		case 1:
			f = append(f[:i], append([]string{g.pick(genJunk...)}, f[i:]...)...)
		case 2:
			j := g.r.IntN(len(f))
			f[i], f[j] = f[j], f[i]
		case 3:
			f[i] = f[i] + f[i]
		}
		s = strings.Join(f, " ")
	}
	if g.chance(0.1) {
		s = strings.ReplaceAll(s, " ", "")
	}
	if g.chance(0.05) {
		s = convertPrefix + s
	}
	return s
}

// value of a random property.
func (g *gen) tval() tval {
	switch g.r.IntN(14) {
	case 0:
		return tNull()
	case 1:
		return tBool(g.chance(0.5))
	case 2:
		return tByte(int8(g.pick2(0, 1, 5, 7, 12, -1, 127, -128)))
	case 3:
		return tShort(int16(g.pick2(0, 1, 5, 7, 12, 300, -1, 32767)))
	case 4:
		return tChar(uint16(g.pick2('a', 'x', '5', 0xe9, 0xffff)))
	case 5, 6:
		return tInt(int32(g.pick2(0, 1, 2, 3, 5, 7, 10, 11, 12, 100, -5, math.MaxInt32, math.MinInt32)))
	case 7:
		return tLong(int64(g.pick2(0, 1, 5, 12, 100, -5, 1<<31, math.MaxInt64, math.MinInt64)))
	case 8:
		f := []float32{0, 1, 1.5, 2.5, 0.5, 12, -0.5, float32(math.NaN()), float32(math.Inf(1)), 16777217, 0.1, 1e30}
		return tFlt(f[g.r.IntN(len(f))])
	case 9:
		f := []float64{0, 1, 1.5, 2.5, 0.5, 12, -0.5, math.NaN(), math.Inf(-1), 1e300, 0.1, 9.99, math.Copysign(0, -1), 1e23, 5e-324}
		return tDouble(f[g.r.IntN(len(f))])
	case 10:
		return tBytes([]byte{byte(g.r.IntN(3))})
	case 11:
		return tList(tStr("a"), tInt(1))
	case 12:
		return tMap(map[string]tval{"k": tInt(int32(g.r.IntN(2)))})
	}
	return tStr(strings.ReplaceAll(g.pick(genStrings...), "''", "'"))
}

func (g *gen) message() cmsg {
	m := cmsg{Headers: map[string]any{}}
	if g.chance(0.7) {
		m.Headers["messageId"] = "ID:gen-host-1-1796000000000-1:1:1:1:" + strconv.Itoa(1+g.r.IntN(9))
	}
	if g.chance(0.7) {
		m.Headers["destination"] = g.pick("topic://T.NEWS", "queue://Q.A", "topic://T.X")
	}
	if g.chance(0.5) {
		m.Headers["type"] = g.pick("t1", "t2", "5", "x")
	}
	if g.chance(0.3) {
		m.Headers["correlationId"] = g.pick("c-1", "abc", "5")
	}
	if g.chance(0.3) {
		m.Headers["groupId"] = g.pick("g", "abc")
		m.Headers["groupSeq"] = g.pick2(0, 1, 3)
	}
	if g.chance(0.2) {
		m.Headers["userId"] = g.pick("admin", "abc")
	}
	if g.chance(0.2) {
		m.Headers["brokerPath"] = []string{"b1", "b2"}[:1+g.r.IntN(2)]
	}
	m.Headers["priority"] = g.pick2(0, 4, 5, 9)
	m.Headers["persistent"] = g.chance(0.5)
	m.Headers["redeliveryCounter"] = g.pick2(0, 0, 1, 2)
	m.Headers["timestamp"] = int64(g.pick2(0, 1, 1796000000123))
	for _, n := range genNames {
		if n != "missing" && g.chance(0.6) {
			m.Properties = append(m.Properties, [2]any{n, g.tval()})
		}
	}
	return m
}

var regexAlphabet = []string{"a", "b", "c", "0", "1", " ", "\n", "\r", "\u0085", "\u2028", "é", "-", ".", "$", "_", "\x0b", "\t", "😀"}

// regex is a random Java pattern, mostly in the subset kahafs translates.
func (g *gen) regex(depth int) string {
	var b strings.Builder
	n := 1 + g.r.IntN(4)
	for i := 0; i < n; i++ {
		switch g.r.IntN(20) {
		case 0:
			b.WriteString(".")
		case 1:
			b.WriteString(g.pick(`\d`, `\w`, `\s`, `\D`, `\W`, `\S`, `\.`, `\-`, `\$`, `\t`, `\n`, `\r`))
		case 2:
			b.WriteString(g.pick("[abc]", "[^a-c]", `[\d.]`, "[a-]", "[-a]", `[\s]`, "[0-9a-c]", "[^.]", `[\w$]`, "[é😀]"))
		case 3:
			if depth > 0 {
				b.WriteString(g.pick("(", "(?:") + g.regex(depth-1) + ")")
			} else {
				b.WriteString("a")
			}
		case 4:
			if depth > 0 {
				b.WriteString("(" + g.regex(depth-1) + "|" + g.regex(depth-1) + ")")
			}
		case 5:
			b.WriteString(g.pick(`\b`, "(?=a)", "a*+", "[a&&b]", `\p{Alpha}`, "(?i)a", `\1`, "a{", "[[a]]", `\Q.\E`, "x{2,1}"))
		default:
			c := g.pick(regexAlphabet...)
			if strings.ContainsAny(c, `.$-`) {
				c = `\` + c
			}
			b.WriteString(c)
		}
		if g.chance(0.3) {
			b.WriteString(g.pick("*", "+", "?", "{1,2}", "{2}", "{0,}", "*?", "+?", "??"))
		}
	}
	s := b.String()
	if g.chance(0.2) {
		s = "^" + s
	}
	if g.chance(0.2) {
		s += "$"
	}
	return s
}

// text is a random text for regexes.
func (g *gen) text() string {
	var b strings.Builder
	for n := g.r.IntN(8); n > 0; n-- {
		b.WriteString(g.pick(regexAlphabet...))
	}
	return b.String()
}
