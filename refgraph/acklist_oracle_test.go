package refgraph

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kahafs/kahafs/internal/brokertest"
)

// TestAckListLosesAfterSplit is the loss without Java (brokerkit
// ListOracle shows it on the real ListIndex): appending to a full node
// that is not the last splits it and points the tail at the split-off
// node; removing that node's only entry then ends the list there, and the
// node after it is lost.
func TestAckListLosesAfterSplit(t *testing.T) {
	l := newAckList()
	mk := func(key string, singles int) *sub {
		s := &sub{key: key}
		for i := range singles {
			s.pos.add(int64(2 * i))
		}
		return s
	}
	a, b := mk("A", 300), mk("B", 300) // 2.7 KB each: a node each
	l.add(a)
	l.add(b)
	c, d := mk("C", 2), mk("D", 2)
	l.add(c)
	l.add(d)
	e := mk("E", 300)
	l.add(e)
	// C grows: its node (not the last) splits, the tail points at D's node
	c.pos = mk("C", 250).pos
	l.put(c)
	if l.tail != d.node || d.node.next != e.node {
		t.Fatalf("after growing C: %s, want the tail at D's node before E's", ackListJSON(l))
	}
	var lost []string
	l.remove(d, func(s *sub) { lost = append(lost, s.key) })
	if len(lost) != 1 || lost[0] != "E" || e.node != nil || e.hasPos || l.tail != c.node || c.node.next != nil {
		t.Fatalf("after removing D: lost %v, list %s; want E lost and the list ending at C's node", lost, ackListJSON(l))
	}
}

// TestAckListOracle runs the ack-positions list operations of
// MessageDatabase (a message add for every subscription in cache order,
// acks that fragment the sets and remove emptied entries, subscribes
// retroactive or not, unsubscribes, restarts) on ackList and on the
// broker's own ListIndex<String, SequenceSet> (brokerkit ListOracle: a
// real PageFile, StringMarshaller and SequenceSet.Marshaller, each
// operation in its own transaction) and compares the lists node for node
// (every node's keys and sets in order, and the tail pointer) at many
// points of each sequence.
func TestAckListOracle(t *testing.T) {
	brokertest.Require(t)
	for seed := int64(1); seed <= 24; seed++ {
		t.Run(strconv.FormatInt(seed, 10), func(t *testing.T) {
			t.Parallel()
			g := genAckOps(seed, 600)
			runAckOracle(t, g)
		})
	}
}

type ackGen struct {
	lines []string // operations for ListOracle; "dump" lines expect want[i]
	want  []string
	lost  int
	seps  int // splits of a node that was not the last (the tail moved off the end)
}

// ackDumpEvery: the list is compared after every so many steps
var ackDumpEvery = 7

var ackKeyWords = []string{"client", "ID:host-40123-1701234567890-1", "orders", "billing-service", "c", "audit.reader",
	"t", "subscriber", "node-7", "äöü-client"}

func genAckOps(seed int64, n int) *ackGen {
	r := rand.New(rand.NewSource(seed))
	g := &ackGen{}
	l := newAckList()
	var cache []*sub
	next, seq := 0, int64(0)
	keyPad := []int{20, 200, 600}[seed%3]
	newKey := func() string {
		next++
		w1, w2 := ackKeyWords[r.Intn(len(ackKeyWords))], ackKeyWords[r.Intn(len(ackKeyWords))]
		return fmt.Sprintf("%s-%d:%s%s", w1, next, w2, strings.Repeat("x", r.Intn(3)*r.Intn(keyPad)))
	}
	lost := func(*sub) { g.lost++ }
	emit := func(op string, s *sub) {
		if op == "rm" {
			g.lines = append(g.lines, "rm "+s.key)
			return
		}
		g.lines = append(g.lines, op+" "+s.key+" "+setText(&s.pos))
	}
	subscribe := func() {
		s := &sub{key: newKey()}
		cache = append(cache, s)
		if r.Intn(4) == 0 {
			var all seqSet
			l.each(func(o *sub) {
				for _, x := range o.pos.r {
					all.addRange(x.first, x.last)
				}
			})
			s.pos = all
			l.put(s)
			emit("put", s)
		}
	}
	for range 3 + r.Intn(12) {
		subscribe()
	}
	// how the sets fragment: acks of random pending messages or near the
	// start (a subscriber that keeps up)
	ackSpread, headAcks := 1+r.Intn(4), 2+r.Intn(6)
	for i := 0; i < n; i++ {
		switch c := r.Intn(100); {
		case c < 40:
			// addAckLocationForNewMessage
			for _, s := range cache {
				if s.node == nil {
					s.pos = seqSet{}
					s.pos.addRange(seq, seq+1)
					l.add(s)
				} else {
					s.pos.addRange(seq, seq+1)
					l.put(s)
				}
				emit("add", s)
			}
			seq++
		case c < 80:
			// removeAckLocation, for a few subscriptions
			for range 1 + r.Intn(ackSpread*3) {
				if len(cache) == 0 {
					break
				}
				s := cache[r.Intn(len(cache))]
				if s.node == nil || s.pos.empty() {
					continue
				}
				var v int64
				if r.Intn(headAcks) == 0 {
					v = s.pos.head()
				} else {
					// inside the widest of a few ranges: the set fragments
					x := s.pos.r[r.Intn(len(s.pos.r))]
					for range 3 {
						if y := s.pos.r[r.Intn(len(s.pos.r))]; y.last-y.first > x.last-x.first {
							x = y
						}
					}
					v = x.first + r.Int63n(x.last-x.first+1)
				}
				s.pos.remove(v)
				switch {
				case !s.pos.empty():
					l.put(s)
					emit("ack", s)
				case !l.lonely(s):
					l.remove(s, lost)
					emit("ack", s)
				case !l.empty():
					// the broker's ack would fail (NullPointerException);
					// removed as an unsubscribe does
					l.remove(s, lost)
					emit("rm", s)
				default:
					s.pos.add(v)
				}
			}
		case c < 86:
			subscribe()
		case c < 90:
			// a subscriber acking every other message of a stretch
			if len(cache) == 0 {
				break
			}
			s := cache[r.Intn(len(cache))]
			if s.node == nil || s.pos.empty() {
				break
			}
			changed := false
			for v := s.pos.head() + r.Int63n(8); v < seq && len(s.pos.r) > 1; v += 2 {
				if s.pos.remove(v) {
					changed = true
				}
				if r.Intn(12) == 0 {
					break
				}
			}
			if changed && !s.pos.empty() {
				l.put(s)
				emit("ack", s)
			} else if changed {
				s.pos.add(seq - 1)
			}
		case c < 93:
			// a subscription's set as many acks leave it (fragmented, of
			// any size), stored as an add stores it
			if len(cache) == 0 {
				break
			}
			s := cache[r.Intn(len(cache))]
			s.pos = seqSet{}
			x := seq
			for range r.Intn([]int{3, 60, 260}[r.Intn(3)]) {
				s.pos.add(x)
				x += 2
			}
			for range r.Intn(30) {
				s.pos.addRange(x, x+1)
				x += 3
			}
			s.pos.add(x)
			seq = x + 2
			if s.node == nil {
				l.add(s)
			} else {
				l.put(s)
			}
			emit("add", s)
		case c < 97:
			if len(cache) < 2 {
				break
			}
			j := r.Intn(len(cache))
			if t := l.tail; t.next != nil && len(t.subs) == 1 && r.Intn(2) == 0 {
				// the subscription alone in a tail node that is not the
				// last (after a split of a node further up): the broker
				// loses the nodes after it
				for i, o := range cache {
					if o == t.subs[0] {
						j = i
					}
				}
			}
			s := cache[j]
			cache = append(cache[:j], cache[j+1:]...)
			if !l.empty() && s.node != nil {
				l.remove(s, lost)
			}
			emit("rm", s)
		case c < 99:
			l.reload()
			g.lines = append(g.lines, "reload")
		}
		if i%ackDumpEvery == 0 || i == n-1 {
			g.lines = append(g.lines, "dump")
			g.want = append(g.want, ackListJSON(l))
		}
	}
	return g
}

// setText is ListOracle's SET: "-" or ranges "a-b" / "a" joined by commas.
func setText(s *seqSet) string {
	if s.empty() {
		return "-"
	}
	var b strings.Builder
	for i, x := range s.r {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(x.first, 10))
		if x.last != x.first {
			b.WriteByte('-')
			b.WriteString(strconv.FormatInt(x.last, 10))
		}
	}
	return b.String()
}

// ackListJSON is ListOracle's dump of l.
func ackListJSON(l *ackList) string {
	var nodes [][]string
	tail, i := -1, 0
	for n := l.head; n != nil; n, i = n.next, i+1 {
		if n == l.tail {
			tail = i
		}
		e := []string{}
		for _, s := range n.subs {
			e = append(e, s.key+" "+setText(&s.pos))
		}
		nodes = append(nodes, e)
	}
	b, _ := json.Marshal(struct {
		Nodes [][]string `json:"nodes"`
		Tail  int        `json:"tail"`
	}{nodes, tail})
	return string(b)
}

func runAckOracle(t *testing.T, g *ackGen) {
	t.Helper()
	// the real list can come back on itself (see TestAckListOracle): a
	// get then never ends
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out, stderr := brokertest.Feed(t, ctx, "ListOracle", g.lines)
	d := 0
	for i, o := range g.lines {
		if o != "dump" {
			continue
		}
		line, err := out.ReadString('\n')
		if err != nil {
			t.Fatalf("ListOracle stopped before dump %d (line %d): %v\n%s", d, i, err, stderr.Bytes())
		}
		if java := strings.TrimSpace(line); java != g.want[d] {
			from := max(0, i-12)
			t.Fatalf("dump %d (line %d of %d) differs from the broker's ListIndex:\n java: %s\n   go: %s\nthe operations before it:\n%s",
				d, i, len(g.lines), java, g.want[d], strings.Join(g.lines[from:i], "\n"))
		}
		d++
	}
	t.Logf("%d operations, %d dumps agree; %d entries lost", len(g.lines), d, g.lost)
}
