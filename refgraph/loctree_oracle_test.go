package refgraph

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/brokertest"
)

// TestLocTreeSplitsAtPageSize checks the page arithmetic and the split of
// a full leaf without Java: a location index node holds 203 keys in a
// 4096-byte page, the 204th splits the root leaf into 102 + 102 under a
// root branch whose key is the right half's first key, and that key stays
// in the root once it is removed.
func TestLocTreeSplitsAtPageSize(t *testing.T) {
	tr := newLocTree()
	if tr.max != 203 {
		t.Fatalf("max = %d, want 203 keys a node in a 4096-byte page", tr.max)
	}
	key := func(i int) ltKey { return ltKeyOf(codec.Location{File: 3, Offset: int32(100 + 40*i), Size: 40}) }
	for i := range 203 {
		tr.put(key(i))
	}
	if !tr.root.leaf() || len(tr.root.keys) != 203 {
		t.Fatalf("after 203 puts: leaf %v with %d keys, want a leaf of 203", tr.root.leaf(), len(tr.root.keys))
	}
	tr.put(key(203))
	r := tr.root
	if r.leaf() || len(r.children) != 2 {
		t.Fatalf("after 204 puts: root %s, want a branch over two leaves", shapeJSON(tr))
	}
	l, rt := r.children[0], r.children[1]
	if !l.leaf() || !rt.leaf() || len(l.keys) != 102 || len(rt.keys) != 102 {
		t.Fatalf("after 204 puts: halves of %d and %d keys, want 102 + 102", len(l.keys), len(rt.keys))
	}
	if !slices.Equal(r.keys, []ltKey{key(102)}) || rt.keys[0] != key(102) || l.keys[101] != key(101) {
		t.Fatalf("after 204 puts: separator %v, want the right half's first key %v", r.keys, key(102))
	}
	tr.remove(key(102))
	if !slices.Equal(r.keys, []ltKey{key(102)}) {
		t.Fatalf("removing the separator's key changed the root's keys to %v; the broker keeps it", r.keys)
	}
	if len(rt.keys) != 101 || rt.keys[0] != key(103) {
		t.Fatalf("right leaf after the removal: %d keys from %v, want 101 from %v", len(rt.keys), rt.keys[0], key(103))
	}
	// a key below the stale separator still goes left, one at or above it right
	tr.put(key(102))
	if len(rt.keys) != 102 || rt.keys[0] != key(102) || len(l.keys) != 102 {
		t.Fatalf("re-put of the separator's key: left %d, right %d keys", len(l.keys), len(rt.keys))
	}
}

// TestLocTreeOracle runs the same puts and removes on locTree and on the
// broker's own BTreeIndex<Location, Long> (brokerkit BTreeOracle: a real
// PageFile, MessageDatabase's LocationSizeMarshaller, LongMarshaller
// values, each operation or transaction in pageFile.tx().execute) and
// compares the trees' full shapes (every branch's keys and children, every
// leaf's keys) at many points of each sequence.
func TestLocTreeOracle(t *testing.T) {
	brokertest.Require(t)
	for _, sc := range ltScenarios {
		for _, seed := range sc.seeds {
			t.Run(fmt.Sprintf("%s/%d", sc.name, seed), func(t *testing.T) {
				t.Parallel()
				g := newLtGen(seed)
				sc.gen(g)
				g.dump()
				runLtOracle(t, g.ops)
			})
		}
	}
}

// ltOp is one operation of an oracle sequence.
type ltOp struct {
	kind byte // 'p' put, 'd' remove, 'b' begin, 'c' commit, 'D' dump
	k    ltKey
}

func (o ltOp) line() string {
	switch o.kind {
	case 'p', 'd':
		cmd := "put"
		if o.kind == 'd' {
			cmd = "del"
		}
		return fmt.Sprintf("%s %d %d", cmd, o.k.file(), o.k.offset())
	case 'b':
		return "begin"
	case 'c':
		return "commit"
	default:
		return "dump"
	}
}

// runLtOracle feeds ops to one BTreeOracle JVM and to a locTree and
// compares their shapes at every dump.
func runLtOracle(t *testing.T, ops []ltOp) {
	t.Helper()
	lines := make([]string, len(ops))
	for i, o := range ops {
		lines[i] = o.line()
	}
	out, stderr := brokertest.Feed(t, context.Background(), "BTreeOracle", lines)
	tr := newLocTree()
	dumps, puts, dels := 0, 0, 0
	maxDepth := 0
	for i, o := range ops {
		switch o.kind {
		case 'p':
			tr.put(o.k)
			puts++
		case 'd':
			tr.remove(o.k)
			dels++
		case 'D':
			line, err := out.ReadBytes('\n')
			if err != nil {
				t.Fatalf("BTreeOracle stopped before dump %d (op %d): %v\n%s", dumps, i, err, stderr.Bytes())
			}
			java := bytes.TrimSpace(line)
			goShape := shapeJSON(tr)
			if !bytes.Equal(java, goShape) {
				t.Fatalf("dump %d (after op %d of %d) differs from the broker's BTreeIndex: %s\n"+
					"the ops up to there (%d puts, %d removes so far) are the reproduction; the last ten:\n%s",
					dumps, i, len(ops), firstShapeDiff(t, goShape, java), puts, dels, lastOps(ops[:i], 10))
			}
			maxDepth = max(maxDepth, depthOf(tr.root))
			dumps++
		}
	}
	if rest, _ := io.ReadAll(out); len(bytes.TrimSpace(rest)) > 0 {
		t.Fatalf("BTreeOracle wrote more than the dumps: %.300s", rest)
	}
	t.Logf("%d ops (%d puts, %d removes), %d dumps equal, depth up to %d, %d keys at the end",
		len(ops), puts, dels, dumps, maxDepth, countKeys(tr.root))
}

func lastOps(ops []ltOp, n int) string {
	var b strings.Builder
	for _, o := range ops[max(0, len(ops)-n):] {
		b.WriteString("  " + o.line() + "\n")
	}
	return b.String()
}

func depthOf(n *ltNode) int {
	if n.leaf() {
		return 1
	}
	d := 0
	for _, c := range n.children {
		d = max(d, depthOf(c))
	}
	return d + 1
}

func countKeys(n *ltNode) int {
	if n.leaf() {
		return len(n.keys)
	}
	s := 0
	for _, c := range n.children {
		s += countKeys(c)
	}
	return s
}

// shapeJSON writes t's shape as BTreeOracle's dump does.
func shapeJSON(t *locTree) []byte {
	var b []byte
	var keys func([]ltKey)
	keys = func(ks []ltKey) {
		b = append(b, '[')
		for i, k := range ks {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '[')
			b = strconv.AppendInt(b, int64(k.file()), 10)
			b = append(b, ',')
			b = strconv.AppendInt(b, int64(k.offset()), 10)
			b = append(b, ']')
		}
		b = append(b, ']')
	}
	var node func(*ltNode)
	node = func(n *ltNode) {
		if n.leaf() {
			b = append(b, `{"n":`...)
			b = strconv.AppendInt(b, int64(len(n.keys)), 10)
			b = append(b, `,"keys":`...)
			keys(n.keys)
			b = append(b, '}')
			return
		}
		b = append(b, `{"keys":`...)
		keys(n.keys)
		b = append(b, `,"children":[`...)
		for i, c := range n.children {
			if i > 0 {
				b = append(b, ',')
			}
			node(c)
		}
		b = append(b, "]}"...)
	}
	node(t.root)
	return b
}

// shapeNode is a dumped node, for locating a difference.
type shapeNode struct {
	N        *int        `json:"n"`
	Keys     [][2]int32  `json:"keys"`
	Children []shapeNode `json:"children"`
}

// firstShapeDiff names the first node where the two dumps differ.
func firstShapeDiff(t *testing.T, goShape, java []byte) string {
	var g, j shapeNode
	if err := json.Unmarshal(goShape, &g); err != nil {
		t.Fatalf("go dump: %v", err)
	}
	if err := json.Unmarshal(java, &j); err != nil {
		return fmt.Sprintf("the broker's dump is not JSON (%v): %.500s", err, java)
	}
	var walk func(path string, g, j *shapeNode) string
	walk = func(path string, g, j *shapeNode) string {
		gl, jl := g.N != nil, j.N != nil
		if gl != jl {
			return fmt.Sprintf("at %s: locTree has a %s with keys %v, the broker a %s with keys %v",
				path, kindName(gl), abbrev(g.Keys), kindName(jl), abbrev(j.Keys))
		}
		if !slices.Equal(g.Keys, j.Keys) {
			return fmt.Sprintf("at %s (%s): locTree keys (%d) %v, the broker's (%d) %v", path, kindName(gl),
				len(g.Keys), abbrev(g.Keys), len(j.Keys), abbrev(j.Keys))
		}
		if len(g.Children) != len(j.Children) {
			return fmt.Sprintf("at %s: locTree has %d children, the broker %d", path, len(g.Children), len(j.Children))
		}
		for i := range g.Children {
			if d := walk(fmt.Sprintf("%s.children[%d]", path, i), &g.Children[i], &j.Children[i]); d != "" {
				return d
			}
		}
		return ""
	}
	if d := walk("root", &g, &j); d != "" {
		return d
	}
	return "the dumps differ in their text only"
}

func kindName(leaf bool) string {
	if leaf {
		return "leaf"
	}
	return "branch"
}

func abbrev(keys [][2]int32) string {
	if len(keys) <= 8 {
		return fmt.Sprint(keys)
	}
	return fmt.Sprintf("%v ... %v", keys[:4], keys[len(keys)-4:])
}

// ltGen builds an operation sequence: a journal that appends (files
// advancing), the live keys, and the ops.
type ltGen struct {
	r       *rand.Rand
	ops     []ltOp
	live    []ltKey       // the live keys, in no order
	at      map[ltKey]int // index in live
	fifo    []ltKey       // keys in the order put (some no longer live)
	head    int           // first fifo entry that may be live
	file    int32
	off     int32
	maxFile int32
	pending [][]ltKey // open transactions: locations written, not yet indexed

	// shadow is a locTree fed the same ops, which places a dump right
	// after every change of the branches (a branch split, dropped or
	// replaced by its only child, a root collapse): between two such
	// changes a wrong step may be undone by the next one (a leaf dropped
	// early whose keys go anyway), so the dumps come where they happen.
	// (A step the broker takes and locTree does not shows at the next
	// periodic dump, the trees differ until then.)
	shadow *locTree
	sig    [2]int // the shadow's branch count and depth
	inTx   bool
	want   bool // a dump once the transaction commits
}

func newLtGen(seed int64) *ltGen {
	r := rand.New(rand.NewSource(seed))
	return &ltGen{
		r:       r,
		at:      map[ltKey]int{},
		file:    1 + int32(r.Intn(5)),
		off:     0,
		maxFile: int32(1<<20) << r.Intn(5), // 1 MiB .. 16 MiB
		shadow:  newLocTree(),
	}
}

// changed dumps (at the commit, in a transaction) when the shadow's
// branches changed.
func (g *ltGen) changed() {
	sig := [2]int{}
	var walk func(n *ltNode, d int)
	walk = func(n *ltNode, d int) {
		sig[1] = max(sig[1], d)
		if n.leaf() {
			return
		}
		sig[0]++
		for _, c := range n.children {
			walk(c, d+1)
		}
	}
	walk(g.shadow.root, 1)
	if sig == g.sig {
		return
	}
	g.sig = sig
	if g.inTx {
		g.want = true
	} else {
		g.dump()
	}
}

// next is the journal's next record location.
func (g *ltGen) next() ltKey {
	size := int32(80 + g.r.Intn(3000))
	if g.off+size > g.maxFile {
		g.file += 1 + int32(g.r.Intn(2)) // a file number skipped now and then (a rewritten file)
		g.off = 0
	}
	l := codec.Location{File: g.file, Offset: g.off + 37, Size: size} // after the file header
	g.off += size
	return ltKeyOf(l)
}

func (g *ltGen) put(k ltKey) {
	g.ops = append(g.ops, ltOp{'p', k})
	g.shadow.put(k)
	g.changed()
	if _, ok := g.at[k]; !ok {
		g.at[k] = len(g.live)
		g.live = append(g.live, k)
		g.fifo = append(g.fifo, k)
	}
}

func (g *ltGen) del(k ltKey) {
	g.ops = append(g.ops, ltOp{'d', k})
	g.shadow.remove(k)
	g.changed()
	if i, ok := g.at[k]; ok {
		last := g.live[len(g.live)-1]
		g.live[i] = last
		g.at[last] = i
		g.live = g.live[:len(g.live)-1]
		delete(g.at, k)
	}
}

// dump compares the trees here (once: not right after a dump).
func (g *ltGen) dump() {
	if len(g.ops) == 0 || g.ops[len(g.ops)-1].kind != 'D' {
		g.ops = append(g.ops, ltOp{kind: 'D'})
	}
}

func (g *ltGen) begin() {
	g.ops = append(g.ops, ltOp{kind: 'b'})
	g.inTx = true
}

func (g *ltGen) commit() {
	g.ops = append(g.ops, ltOp{kind: 'c'})
	g.inTx = false
	if g.want {
		g.want = false
		g.dump()
	}
}

// after is the location d bytes after k, in k's file.
func after(k ltKey, d int) ltKey {
	return ltKeyOf(codec.Location{File: k.file(), Offset: k.offset() + int32(d)})
}

// late is a location between the keys put so far (a message indexed at a
// late commit, or one a few bytes after one put).
func (g *ltGen) late() ltKey { return after(g.fifo[g.r.Intn(len(g.fifo))], 1+g.r.Intn(30)) }

// append puts the journal's next location.
func (g *ltGen) append() { g.put(g.next()) }

// oldest is the live key put longest ago (ok false: none).
func (g *ltGen) oldest() (ltKey, bool) {
	for g.head < len(g.fifo) {
		if _, ok := g.at[g.fifo[g.head]]; ok {
			return g.fifo[g.head], true
		}
		g.head++
	}
	return 0, false
}

func (g *ltGen) randomLive() (ltKey, bool) {
	if len(g.live) == 0 {
		return 0, false
	}
	return g.live[g.r.Intn(len(g.live))], true
}

// absent is a key that is not live: one removed, one never written
// between live ones, or one past the journal's end.
func (g *ltGen) absent() ltKey {
	for {
		var k ltKey
		switch x := g.r.Intn(3); {
		case x == 0 && len(g.fifo) > 0:
			k = g.fifo[g.r.Intn(len(g.fifo))]
		case x == 1 && len(g.fifo) > 0:
			k = after(g.fifo[g.r.Intn(len(g.fifo))], 1)
		default:
			k = ltKeyOf(codec.Location{File: g.file + 1 + int32(g.r.Intn(3)), Offset: int32(g.r.Intn(1 << 20))})
		}
		if _, ok := g.at[k]; !ok {
			return k
		}
	}
}

func (g *ltGen) sortedLive() []ltKey {
	s := slices.Clone(g.live)
	slices.Sort(s)
	return s
}

// delRun removes n consecutive live keys from position i (in key order),
// in key order, reverse order or shuffled.
func (g *ltGen) delRun(i, n int) {
	s := g.sortedLive()
	if i >= len(s) {
		return
	}
	run := slices.Clone(s[i:min(len(s), i+n)])
	switch g.r.Intn(3) {
	case 1:
		slices.Reverse(run)
	case 2:
		g.r.Shuffle(len(run), func(a, b int) { run[a], run[b] = run[b], run[a] })
	}
	for _, k := range run {
		g.del(k)
	}
}

// journal is a destination's life: mostly appends in journal order,
// consumption mostly from the oldest, some random acks, transactions
// whose messages are indexed at their commit (older locations than
// messages indexed since), re-puts, removes of absent keys, runs of
// removals that empty leaves.
func (g *ltGen) journal(n int) {
	every := n / 40
	nextDump := len(g.ops) + every
	for len(g.ops) < n {
		switch x := g.r.Intn(1000); {
		case x < 520:
			if len(g.pending) > 0 && g.r.Intn(3) == 0 {
				// a message of an open transaction: written now, indexed at the commit
				p := g.r.Intn(len(g.pending))
				g.pending[p] = append(g.pending[p], g.next())
			} else {
				g.append()
			}
		case x < 760:
			if k, ok := g.oldest(); ok {
				g.del(k)
			}
		case x < 840:
			if k, ok := g.randomLive(); ok {
				g.del(k)
			}
		case x < 860:
			g.pending = append(g.pending, nil)
		case x < 890:
			if len(g.pending) > 0 {
				p := g.r.Intn(len(g.pending))
				tx := g.pending[p]
				g.pending = slices.Delete(g.pending, p, p+1)
				if g.r.Intn(8) > 0 && len(tx) > 0 { // else rolled back
					g.begin()
					for _, k := range tx {
						g.put(k)
					}
					g.commit()
				}
			}
		case x < 910:
			if k, ok := g.randomLive(); ok {
				g.put(k) // an existing key: the value changes, not the shape
			}
		case x < 930:
			g.del(g.absent())
		case x < 940:
			if len(g.live) > 0 {
				g.delRun(g.r.Intn(len(g.live)), 50+g.r.Intn(600))
			}
		case x < 945:
			// a burst of consumption
			for range 100 + g.r.Intn(1500) {
				if k, ok := g.oldest(); ok {
					g.del(k)
				}
			}
		case x < 950:
			// a batch of removals in one transaction (an ack batch)
			g.begin()
			for range 1 + g.r.Intn(300) {
				if k, ok := g.randomLive(); ok {
					g.del(k)
				}
			}
			g.commit()
		default:
			// a producer burst
			for range 50 + g.r.Intn(800) {
				g.append()
			}
		}
		if len(g.ops) >= nextDump {
			g.dump()
			nextDump = len(g.ops) + every
		}
	}
}

// window produces a backlog deep enough for three levels, then consumes
// from the oldest while producing (the leftmost leaves and branches
// emptied over and over), then drains it.
func (g *ltGen) window(backlog, n int) {
	for range backlog {
		g.append()
	}
	g.dump()
	for i := 0; len(g.ops) < n; i++ {
		if g.r.Intn(2) == 0 || len(g.live) < backlog/2 {
			g.append()
		} else if k, ok := g.oldest(); ok {
			g.del(k)
		}
		if i%4000 == 3999 {
			g.dump()
		}
	}
	for {
		k, ok := g.oldest()
		if !ok {
			break
		}
		g.del(k)
		if len(g.live)%3000 == 0 {
			g.dump()
		}
	}
	g.dump()
}

// drainRefill fills a tree (appends and inserts into the middle), drains
// it to empty in random order, refills it and drains it from the right.
func (g *ltGen) drainRefill(n int) {
	for range n {
		if g.r.Intn(5) == 0 && len(g.fifo) > 0 {
			// an insert between existing keys (a late commit)
			k := g.late()
			g.put(k)
		} else {
			g.append()
		}
	}
	g.dump()
	order := slices.Clone(g.live)
	g.r.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
	for i, k := range order {
		g.del(k)
		if i%(n/6) == 0 || len(g.live) < 3 {
			g.dump()
		}
	}
	g.dump()
	for range n {
		g.append()
	}
	g.dump()
	s := g.sortedLive()
	for i := len(s) - 1; i >= 0; i-- {
		g.del(s[i])
		if i%(n/5) == 0 {
			g.dump()
		}
	}
	g.dump()
	for range 500 {
		g.append()
	}
}

// runs builds a three-level tree, then removes runs of keys that empty
// leaves and whole subtrees anywhere: the leftmost, the rightmost, the
// middle, with appends and middle inserts between.
func (g *ltGen) runs(n int) {
	for range n {
		g.append()
		if g.r.Intn(10) == 0 {
			g.put(g.late())
		}
	}
	g.dump()
	for round := 0; len(g.live) > 0 && round < 80; round++ {
		size := 50 + g.r.Intn(400)
		if g.r.Intn(4) == 0 {
			size = 2000 + g.r.Intn(12000) // a whole subtree
		}
		switch g.r.Intn(4) {
		case 0:
			g.delRun(0, size)
		case 1:
			g.delRun(max(0, len(g.live)-size), size)
		default:
			g.delRun(g.r.Intn(len(g.live)), size)
		}
		if g.r.Intn(3) == 0 {
			for range g.r.Intn(2000) {
				g.append()
			}
		}
		if g.r.Intn(3) == 0 && len(g.fifo) > 0 {
			g.begin()
			for range 1 + g.r.Intn(200) {
				g.put(g.late())
			}
			g.commit()
		}
		g.dump()
	}
}

// random puts and removes keys anywhere in a key space of few files.
func (g *ltGen) random(n, files, offsets int) {
	for i := range n {
		k := ltKeyOf(codec.Location{File: int32(1 + g.r.Intn(files)), Offset: int32(g.r.Intn(offsets))})
		if g.r.Intn(5) < 3 {
			g.put(k)
		} else if g.r.Intn(2) == 0 {
			if l, ok := g.randomLive(); ok {
				g.del(l)
			}
		} else {
			g.del(k)
		}
		if i%(n/20) == 0 {
			g.dump()
		}
	}
}

// small compares after every operation while a tree of a few leaves
// grows, splits, loses leaves at both ends and collapses back to a leaf,
// over and over.
func (g *ltGen) small(n int) {
	for len(g.ops) < n {
		target := 150 + g.r.Intn(1200)
		for len(g.live) < target {
			if g.r.Intn(4) == 0 && len(g.fifo) > 0 {
				g.put(g.late())
			} else {
				g.append()
			}
			g.dump()
		}
		for len(g.live) > g.r.Intn(100) {
			var k ltKey
			switch g.r.Intn(4) {
			case 0:
				k, _ = g.oldest()
			case 1:
				k = g.sortedLive()[len(g.live)-1]
			case 2:
				k = g.absent()
			default:
				k, _ = g.randomLive()
			}
			g.del(k)
			g.dump()
		}
	}
}

var ltScenarios = []struct {
	name  string
	seeds []int64
	gen   func(g *ltGen)
}{
	{"journal", []int64{1, 2}, func(g *ltGen) { g.journal(60_000) }},
	{"journal-long", []int64{4}, func(g *ltGen) { g.journal(110_000) }},
	{"window", []int64{5}, func(g *ltGen) { g.window(26_000, 100_000) }},
	{"drain-refill", []int64{6, 7}, func(g *ltGen) { g.drainRefill(24_000) }},
	{"runs", []int64{8, 9}, func(g *ltGen) { g.runs(45_000) }},
	{"random-dense", []int64{10}, func(g *ltGen) { g.random(30_000, 3, 3000) }},
	{"random-wide", []int64{11}, func(g *ltGen) { g.random(80_000, 40, 1<<30) }},
	{"small-every-op", []int64{12, 13}, func(g *ltGen) { g.small(6_000) }},
}
