package selector

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/openwire"
)

// oracleCase is one selector and the messages it is evaluated on.
type oracleCase struct {
	Selector string `json:"selector"`
	Messages []int  `json:"messages"`
}

type oracleIn struct {
	Messages []cmsg       `json:"messages"`
	Cases    []oracleCase `json:"cases"`
}

// oracleResult is what SelectorCheck reports for a case.
type oracleResult struct {
	Parse string   `json:"parse"` // "ok" or "error"
	Cause string   `json:"cause"` // the innermost exception of a rejection
	Expr  string   `json:"expr"`  // BooleanExpression.toString
	Match []string `json:"match"` // T, F or !ExceptionClass per message
}

type oracleOut struct {
	Blobs   []string       `json:"blobs"`
	Results []oracleResult `json:"results"`
}

// runOracle runs SelectorCheck once on the whole corpus.
func runOracle(t *testing.T, in oracleIn) oracleOut {
	t.Helper()
	dir := t.TempDir()
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	inPath, outPath := filepath.Join(dir, "in.json"), filepath.Join(dir, "out.json")
	if err := os.WriteFile(inPath, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	brokertest.Run(t, "SelectorCheck", inPath, outPath)
	raw, err = os.ReadFile(outPath)
	if err != nil {
		t.Fatal(err)
	}
	var out oracleOut
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("SelectorCheck output: %v", err)
	}
	if len(out.Results) != len(in.Cases) || len(out.Blobs) != len(in.Messages) {
		t.Fatalf("SelectorCheck answered %d cases and %d messages for %d and %d", len(out.Results), len(out.Blobs), len(in.Cases), len(in.Messages))
	}
	return out
}

// decodeBlobs decodes the messages as SelectorCheck marshalled them, with
// kahafs's own decoder: what kahafs reads from a store.
func decodeBlobs(t *testing.T, blobs []string) []*Message {
	t.Helper()
	msgs := make([]*Message, len(blobs))
	for i, b := range blobs {
		raw, err := base64.StdEncoding.DecodeString(b)
		if err != nil {
			t.Fatal(err)
		}
		m, err := openwire.DecodeMessage(raw)
		if err := m.HeaderError(err); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		msgs[i] = FromOpenWire(m)
	}
	return msgs
}

// goAnswer is this package's answer in the oracle's notation: T, F,
// !Exception, or ?reason when unsupported.
func goAnswer(sel *Selector, m *Message) string {
	ok, err := sel.Match(m)
	var ee *EvalError
	switch {
	case err == nil && ok:
		return "T"
	case err == nil:
		return "F"
	case errors.As(err, &ee) && errors.Is(err, ErrUnsupported):
		return "?" + ee.Msg
	case errors.As(err, &ee):
		return "!" + ee.Exception
	}
	return "?" + err.Error()
}

var javaPos = regexp.MustCompile(`^org\.apache\.activemq\.selector\.(?:ParseException: Parse|TokenMgrError: Lexical) error at line (\d+), column (\d+)\.`)

// tally is the outcome of a comparison.
type tally struct {
	cases, parsedBoth, rejectedBoth, evals, unsupported int
	exprCompared, positions, positionsSame, unreadable  int
	mismatches                                          []string
	unsupportedWhy                                      map[string]int
	exceptions                                          map[string]int // agreed on, by class
}

func (tl *tally) fail(format string, args ...any) {
	m := fmt.Sprintf(format, args...)
	if len(m) > 600 {
		m = m[:300] + " ... " + m[len(m)-300:]
	}
	tl.mismatches = append(tl.mismatches, m)
}

// compareOracle compares every parse, every printed expression and every
// match of this package with ActiveMQ's.
func compareOracle(in oracleIn, out oracleOut, msgs []*Message) *tally {
	tl := &tally{unsupportedWhy: map[string]int{}, exceptions: map[string]int{}}
	for i, c := range in.Cases {
		tl.cases++
		res := out.Results[i]
		sel, err := Parse(c.Selector)
		switch {
		case res.Parse == "ok" && err != nil:
			tl.fail("%q: ActiveMQ accepts it (%s), Parse: %v", c.Selector, res.Expr, err)
			continue
		case res.Parse != "ok" && err == nil:
			tl.fail("%q: ActiveMQ rejects it (%s), Parse accepts it as %s", c.Selector, res.Cause, sel.JavaString())
			continue
		case err != nil:
			tl.rejectedBoth++
			var se *SyntaxError
			if m := javaPos.FindStringSubmatch(res.Cause); m != nil && errors.As(err, &se) && se.Err == ErrSyntax {
				tl.positions++
				line, _ := strconv.Atoi(m[1])
				col, _ := strconv.Atoi(m[2])
				body := strings.TrimPrefix(c.Selector, convertPrefix)
				if body == "" && line == 0 && col == 0 {
					line, col = 1, 1 // JavaCC places the end of an empty input at 0, 0
				}
				if !strings.HasPrefix(c.Selector, convertPrefix) && line == se.Line && col == se.Column {
					tl.positionsSame++
				} else if !strings.HasPrefix(c.Selector, convertPrefix) {
					tl.fail("%q: ActiveMQ: %s; Parse: %v", c.Selector, res.Cause, err)
				} else {
					tl.positionsSame++
				}
			}
			continue
		}
		tl.parsedBoth++
		if !sel.inexact && !strings.HasPrefix(res.Expr, "!") { // ActiveMQ's toString can overflow
			tl.exprCompared++
			if got := sel.JavaString(); got != res.Expr {
				tl.fail("%q: ActiveMQ reads it as %s, JavaString %s", c.Selector, res.Expr, got)
			}
		}
		for j, mi := range c.Messages {
			tl.evals++
			want, got := res.Match[j], goAnswer(sel, msgs[mi])
			if want == "X" { // ActiveMQ cannot read the message
				tl.unreadable++
				continue
			}
			if strings.HasPrefix(got, "?") {
				tl.unsupported++
				why, _, _ := strings.Cut(got[1:], " expression ")
				tl.unsupportedWhy[why]++
				continue
			}
			if want != got {
				tl.fail("%q on message %d: ActiveMQ %s, Match %s", c.Selector, mi, want, got)
			} else if strings.HasPrefix(got, "!") {
				tl.exceptions[got[1:]]++
			}
		}
	}
	return tl
}

func (tl *tally) report(t *testing.T) {
	t.Helper()
	t.Logf("%d selectors: %d parsed by both, %d rejected by both (%d ParseException and TokenMgrError positions compared, %d the same); "+
		"%d printed expressions compared; %d evaluations compared, %d unsupported, %d on messages ActiveMQ cannot read",
		tl.cases, tl.parsedBoth, tl.rejectedBoth, tl.positions, tl.positionsSame, tl.exprCompared, tl.evals, tl.unsupported, tl.unreadable)
	for why, n := range tl.unsupportedWhy {
		t.Logf("unsupported %d×: %s", n, why)
	}
	for ex, n := range tl.exceptions {
		t.Logf("both threw %s %d times", ex, n)
	}
	for i, m := range tl.mismatches {
		if i == 60 {
			t.Errorf("... and %d more", len(tl.mismatches)-i)
			break
		}
		t.Error(m)
	}
}

// oracleCorpus is the hand-written cases on the hand-written messages and
// n random selectors, each on the hand-written messages and 8 random ones.
func oracleCorpus(seed uint64, n int) oracleIn {
	in := oracleIn{Messages: handMessages()}
	hand := make([]int, len(in.Messages))
	for i := range hand {
		hand[i] = i
	}
	for _, s := range append(handSelectors, deepSelectors()...) {
		in.Cases = append(in.Cases, oracleCase{Selector: s, Messages: hand})
	}
	g := newGen(seed)
	const randomMessages = 64
	for i := 0; i < randomMessages; i++ {
		in.Messages = append(in.Messages, g.message())
	}
	for i := 0; i < n; i++ {
		ms := append([]int(nil), hand...)
		for j := 0; j < 8; j++ {
			ms = append(ms, len(hand)+g.r.IntN(randomMessages))
		}
		in.Cases = append(in.Cases, oracleCase{Selector: g.selector(), Messages: ms})
	}
	return in
}

// textCases check Java's text of floats and doubles (string
// concatenation) where kahafs reproduces it: n messages with a random
// double d and float f from 10^-3 to 10^7, and for each the selector
// "” + d = 'TEXT'" with kahafs's text, and the same for f.
func textCases(in *oracleIn, seed uint64, n int) {
	g := newGen(seed)
	for i := 0; i < n; i++ {
		var d float64
		switch i % 3 {
		case 0:
			d = math.Pow(10, g.r.Float64()*10-3)
		case 1:
			d = float64(g.r.IntN(100000000)) / math.Pow(10, float64(g.r.IntN(11)))
		default:
			d = math.Nextafter(float64(g.r.IntN(10000000))/math.Pow(10, float64(g.r.IntN(10))), math.Inf(g.r.IntN(2)*2-1))
		}
		if g.chance(0.5) {
			d = -d
		}
		f := float32(d)
		ds, dok := javaDoubleString(d)
		fs, fok := javaFloatString(f)
		if !dok || !fok {
			continue
		}
		in.Messages = append(in.Messages, cmsg{Properties: props("d", tDouble(d), "f", tFlt(f))})
		m := []int{len(in.Messages) - 1}
		in.Cases = append(in.Cases,
			oracleCase{Selector: "'' + d = '" + ds + "'", Messages: m},
			oracleCase{Selector: "'' + f = '" + fs + "'", Messages: m},
			oracleCase{Selector: "d = " + ds + " AND '' + " + ds + " = '" + ds + "'", Messages: m})
	}
}

// regexCases check the Java regular expressions of REGEX, REPLACE and
// SPLIT: n messages with a random text s, and for each a random pattern:
// REGEX('pattern', s), and where kahafs translates the pattern,
// "REPLACE(s, 'pattern', 'X') = 'kahafs's result'" and the same for SPLIT.
func regexCases(t *testing.T, in *oracleIn, seed uint64, n int) {
	g := newGen(seed + 1000)
	value := func(sel string, m *Message) (val, bool) {
		e := MustParse(sel).root.(*equalExpr).l
		v, err := e.eval(&evalCtx{m: m})
		return v, err == nil
	}
	for i := 0; i < n; i++ {
		text, pat := g.text(), g.regex(2)
		in.Messages = append(in.Messages, cmsg{Properties: props("s", tStr(text))})
		ms := []int{len(in.Messages) - 1}
		m := msg("s", text)
		in.Cases = append(in.Cases, oracleCase{Selector: "REGEX(" + quote(pat) + ", s)", Messages: ms})
		if v, ok := value("REPLACE(s, "+quote(pat)+", 'X') = ''", m); ok {
			in.Cases = append(in.Cases, oracleCase{Selector: "REPLACE(s, " + quote(pat) + ", 'X') = " + quote(v.s), Messages: ms})
		}
		for _, limit := range []string{"", ", 2", ", -1"} {
			v, ok := value("SPLIT(s, "+quote(pat)+limit+") = ''", m)
			if !ok || len(v.o.l) == 0 {
				continue
			}
			items := make([]string, len(v.o.l))
			for i, x := range v.o.l {
				items[i] = quote(x.s)
			}
			in.Cases = append(in.Cases, oracleCase{Selector: "SPLIT(s, " + quote(pat) + limit + ") = MAKELIST(" + strings.Join(items, ", ") + ")", Messages: ms})
		}
	}
}

// TestOracle compares Parse and Match with ActiveMQ's own parser and
// evaluator (brokerkit SelectorCheck, one JVM run) on the hand-written
// corpus and thousands of random selectors and messages.
// KAHAFS_SELECTOR_SEED and KAHAFS_SELECTOR_N change the random part.
func TestOracle(t *testing.T) {
	brokertest.Require(t)
	n, seed := 4000, uint64(1)
	if testing.Short() {
		n = 500
	}
	if v, err := strconv.Atoi(os.Getenv("KAHAFS_SELECTOR_N")); err == nil {
		n = v
	}
	if v, err := strconv.ParseUint(os.Getenv("KAHAFS_SELECTOR_SEED"), 10, 64); err == nil {
		seed = v
	}
	in := oracleCorpus(seed, n)
	textCases(&in, seed, n/8)
	regexCases(t, &in, seed, n/4)
	out := runOracle(t, in)
	msgs := decodeBlobs(t, out.Blobs)
	tl := compareOracle(in, out, msgs)
	tl.report(t)
	if tl.parsedBoth < len(in.Cases)/2 || tl.rejectedBoth < len(in.Cases)/20 {
		t.Errorf("the corpus is lopsided: %d parsed, %d rejected", tl.parsedBoth, tl.rejectedBoth)
	}
}
