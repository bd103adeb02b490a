package refgraph

import (
	"cmp"
	"slices"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/binenc"
	"github.com/kahafs/kahafs/kahaindex"
)

// The shape of a destination's location index (StoredDestination's
// locationIndex: a BTreeIndex from a message's journal location to its
// sequence), as the broker's BTreeNode builds it. Its shape matters to the
// cleanup: the broker walks the index with a visitor whose
// isInterestedInKeysBetween takes the file of every branch key it meets
// out of the candidates (MessageDatabase.checkpointUpdate), and a branch
// key is the first key of a leaf when that leaf was split off, which stays
// in its branch after the message is gone. A file that holds no message
// any more but such a stale key is kept by the broker (kept seed 340:
// db-56.log, a topic's messages all acknowledged, kept by the key 56:9165
// in the root of the topic's location index).
//
// locTree mirrors BTreeNode's put, remove and split exactly for the
// location keys (12 bytes, file then offset then size) and sequence values
// (8 bytes): a node that no longer fits its page after a put splits in
// the middle, a leaf's separator is its right half's first key, a branch's
// the key between its halves; a leaf that loses its last key leaves its
// branch with the key to its right (to its left, for the last child); a
// branch left with one child is replaced by it; a root left with one child
// becomes it. Removing a key never changes a branch's keys otherwise.
//
// An adopted index's tree is its shape as stored (kahaindex.LocationNode),
// its leaves filled from the adopted messages only once the replay after
// the index changes the tree (fill): a leaf holds exactly the live keys
// between its branch keys.
//
// An index whose tree kahafs could not read (db.data damaged there, or
// not adopted at all) leaves the tree unknown: no keys, nothing put or
// removed. Such an index is damaged (model.indexDamage), which keeps
// every file: a stale branch key kahafs cannot see never makes a "free".
type locTree struct {
	root *ltNode
	max  int  // keys a node holds; one more splits it
	fill bool // the leaves are still to be filled from the destination's messages
	// unknown: the shape is not known (root is nil)
	unknown bool
	// right: the rightmost leaf, where a key not below rightLow goes
	// (the last key of the branch above it); nil: not known (the shape
	// changed since it was found)
	right    *ltNode
	rightLow ltKey
}

// ltNode is a node of a locTree: a leaf when children is nil.
type ltNode struct {
	keys     []ltKey
	children []*ltNode
}

// ltKey is a location as the index orders it (Location.compareTo: file,
// then offset).
type ltKey uint64

func ltKeyOf(l codec.Location) ltKey { return ltKey(locKey(l)) }

func (k ltKey) file() int32 { return int32(uint32(k>>32) ^ 1<<31) }

func (k ltKey) offset() int32 { return int32(uint32(k) ^ 1<<31) }

// pageSize is the index's page size (PageFile's default; MessageDatabase
// does not change it).
const pageSize = 4096

// nodeKeys is how many keys a node of a location index holds in a page of
// size ps: Transaction.store fails a node whose 21-byte page header and
// payload reach the page size (a node of up to 3 keys may overflow into
// more pages instead; locations never come that close). A leaf's payload is
// a short count, 12 bytes a key, a boolean, 8 bytes a value and the next
// leaf's id; a branch's the count, the keys, the boolean and count+1 child
// ids: 11 + 20 bytes a key both.
func nodeKeys(ps int) int { return (ps - 21 - 11 - 1) / 20 }

func newLocTree() *locTree { return &locTree{root: &ltNode{}, max: nodeKeys(pageSize)} }

func (n *ltNode) leaf() bool { return n.children == nil }

// search is Arrays.binarySearch: the index of k, or -(insertion point)-1.
func search(keys []ltKey, k ltKey) int {
	i, found := slices.BinarySearch(keys, k)
	if found {
		return i
	}
	return -i - 1
}

// childFor is the index of the child a branch descends to for k.
func childFor(keys []ltKey, k ltKey) int {
	i := search(keys, k)
	if i < 0 {
		return -(i + 1)
	}
	return i + 1
}

// put is BTreeIndex.put of a new key (an existing one: its value is
// overwritten, the shape stays).
func (t *locTree) put(k ltKey) {
	// A replay appends: a key past the rightmost leaf's last, where it
	// fits, goes there without a descent.
	if r := t.right; r != nil && k >= t.rightLow && len(r.keys) < t.max && (len(r.keys) == 0 || k > r.keys[len(r.keys)-1]) {
		r.keys = append(r.keys, k)
		return
	}
	// the path from the root to the leaf, for the splits
	var path [24]*ltNode
	depth := 0
	n := t.root
	rightmost, low := true, ltKey(0)
	for !n.leaf() {
		if depth < len(path) {
			path[depth] = n
		}
		depth++
		i := childFor(n.keys, k)
		if i == len(n.children)-1 {
			low = n.keys[len(n.keys)-1]
		} else {
			rightmost = false
		}
		n = n.children[i]
	}
	if rightmost && depth <= len(path) {
		t.right, t.rightLow = n, low
	}
	i := search(n.keys, k)
	if i >= 0 {
		return
	}
	n.keys = slices.Insert(n.keys, -(i + 1), k)
	if len(n.keys) <= t.max {
		return
	}
	t.right = nil
	t.split(n, path[:min(depth, len(path))])
}

// split splits n, which holds one key too many; parents is the path from
// the root to n's parent (empty: n is the root).
func (t *locTree) split(n *ltNode, parents []*ltNode) {
	vc := len(n.keys)
	pivot := vc / 2
	var left, right *ltNode
	var sep ltKey
	if n.leaf() {
		left = &ltNode{keys: slices.Clone(n.keys[:pivot])}
		right = &ltNode{keys: slices.Clone(n.keys[pivot:])}
		sep = right.keys[0]
	} else {
		left = &ltNode{keys: slices.Clone(n.keys[:pivot]), children: slices.Clone(n.children[:pivot+1])}
		right = &ltNode{keys: slices.Clone(n.keys[pivot+1:]), children: slices.Clone(n.children[pivot+1:])}
		sep = n.keys[pivot]
	}
	if len(parents) == 0 {
		// the root keeps its page and becomes a branch over the halves
		n.keys = []ltKey{sep}
		n.children = []*ltNode{left, right}
		return
	}
	*n = *left
	p := parents[len(parents)-1]
	// promoteValue
	i := childFor(p.keys, sep)
	p.keys = slices.Insert(p.keys, i, sep)
	p.children = slices.Insert(p.children, i+1, right)
	if len(p.keys) > t.max {
		t.split(p, parents[:len(parents)-1])
	}
}

// remove is BTreeIndex.remove.
func (t *locTree) remove(k ltKey) {
	t.removeFrom(t.root, k, true)
}

func (t *locTree) removeFrom(n *ltNode, k ltKey, root bool) {
	if n.leaf() {
		if i := search(n.keys, k); i >= 0 {
			n.keys = slices.Delete(n.keys, i, i+1)
		}
		return
	}
	idx := childFor(n.keys, k)
	child := n.children[idx]
	t.removeFrom(child, k, false)
	if len(child.keys) > 0 {
		return
	}
	t.right = nil
	if !child.leaf() {
		// a branch is never empty: it is down to one child
		n.children[idx] = child.children[0]
		return
	}
	if idx < len(n.children)-1 {
		n.keys = slices.Delete(n.keys, idx, idx+1)
	} else {
		n.keys = slices.Delete(n.keys, idx-1, idx)
	}
	n.children = slices.Delete(n.children, idx, idx+1)
	if len(n.children) == 1 && root {
		*n = *n.children[0]
	}
}

// fillFrom fills the leaves of an adopted shape with keys, the
// destination's live locations in ascending order: each leaf takes those
// below the next branch key.
func (t *locTree) fillFrom(keys []ltKey) {
	t.fill, t.right = false, nil
	var walk func(n *ltNode, hi ltKey, bounded bool)
	walk = func(n *ltNode, hi ltKey, bounded bool) {
		if n.leaf() {
			j := len(keys)
			if bounded {
				j, _ = slices.BinarySearch(keys, hi)
			}
			n.keys = append(n.keys[:0], keys[:j]...)
			keys = keys[j:]
			return
		}
		for i, c := range n.children {
			if i < len(n.keys) {
				walk(c, n.keys[i], true)
			} else {
				walk(c, hi, bounded)
			}
		}
	}
	walk(t.root, 0, false)
}

// locPut and locRemove are d's location index's put and remove of l.
// Before the recovery position of an index that is to be adopted they do
// nothing: the adoption replaces the replayed location indexes by the
// index's. An unknown tree stays unknown.
func (b *Builder) locPut(d *dest, l codec.Location) {
	if d.locs != nil && d.locs.unknown || b.skipLocs() {
		return
	}
	d.locTree().put(ltKeyOf(l))
}

func (b *Builder) locRemove(d *dest, l codec.Location) {
	if d.locs != nil && d.locs.unknown || b.skipLocs() {
		return
	}
	d.locTree().remove(ltKeyOf(l))
}

func (b *Builder) skipLocs() bool { return !b.phaseB && b.opts.LoadIndex != nil }

// unknownLocs gives every destination an unknown location index: an index
// was to be adopted and was not (the broker uses the index, which kahafs
// could not read; model.indexDamage says so).
func (b *Builder) unknownLocs() {
	for _, m := range b.dests {
		for _, d := range m {
			d.locs = unknownLocTree()
		}
	}
}

func unknownLocTree() *locTree { return &locTree{unknown: true} }

// locTree is d's location index, its leaves filled.
func (d *dest) locTree() *locTree {
	if d.locs != nil && d.locs.unknown {
		panic("refgraph: locTree of an unknown location index")
	}
	if d.locs == nil {
		d.locs = newLocTree()
	}
	if d.locs.fill {
		keys := make([]ltKey, 0, d.entries.len())
		d.entries.each(func(_ int64, e entry) { keys = append(keys, ltKeyOf(e.loc)) })
		slices.Sort(keys)
		d.locs.fillFrom(slices.Compact(keys))
	}
	return d.locs
}

// indexKeys are the keys of d's location index's branches, the first of
// each file, by file (none for an unknown index).
func (d *dest) indexKeys() []codec.Location {
	if d.locs == nil || d.locs.unknown {
		return nil
	}
	var out []codec.Location
	var walk func(n *ltNode)
	walk = func(n *ltNode) {
		if n.leaf() {
			return
		}
		for _, k := range n.keys {
			out = append(out, codec.Location{File: k.file(), Offset: k.offset()})
		}
		for _, c := range n.children {
			walk(c)
		}
	}
	walk(d.locs.root)
	slices.SortFunc(out, func(a, b codec.Location) int { return cmp.Compare(ltKeyOf(a), ltKeyOf(b)) })
	return slices.CompactFunc(out, func(a, b codec.Location) bool { return a.File == b.File })
}

// locTreeFrom is the tree of an index's shape (leaves to fill).
func locTreeFrom(shape *kahaindex.LocationNode) *locTree {
	var conv func(n *kahaindex.LocationNode) *ltNode
	conv = func(n *kahaindex.LocationNode) *ltNode {
		if n.Children == nil {
			return &ltNode{}
		}
		out := &ltNode{keys: make([]ltKey, len(n.Keys)), children: make([]*ltNode, len(n.Children))}
		for i, k := range n.Keys {
			out.keys[i] = ltKeyOf(k)
		}
		for i, c := range n.Children {
			out.children[i] = conv(c)
		}
		return out
	}
	t := newLocTree()
	t.root, t.fill = conv(shape), true
	return t
}

// saveLocTree writes t: whether there is one and is still to be filled,
// then its nodes depth first (a leaf's keys are written unless it is to
// be filled).
func saveLocTree(w *binenc.Writer, t *locTree) {
	w.Bool(t != nil)
	if t == nil {
		return
	}
	w.Bool(t.unknown)
	if t.unknown {
		return
	}
	w.Bool(t.fill)
	var node func(n *ltNode)
	node = func(n *ltNode) {
		w.Bool(n.leaf())
		if n.leaf() && t.fill {
			return
		}
		w.Uvarint(uint64(len(n.keys)))
		prev := ltKey(0)
		for _, k := range n.keys {
			w.Uvarint(uint64(k - prev)) // ascending
			prev = k
		}
		for _, c := range n.children {
			node(c)
		}
	}
	node(t.root)
}

// locTree reads what saveLocTree wrote.
func (d *stateDecoder) locTree(key string) *locTree {
	r := d.r
	if !r.Bool() {
		return nil
	}
	if r.Bool() {
		return unknownLocTree()
	}
	t := newLocTree()
	t.fill = r.Bool()
	var node func(depth int) *ltNode
	node = func(depth int) *ltNode {
		n := &ltNode{}
		leaf := r.Bool()
		if depth > 64 {
			r.Fail("location index of %s: too deep", key)
		}
		if r.Err() != nil || leaf && t.fill {
			return n
		}
		m := r.Count(1)
		n.keys = make([]ltKey, 0, m)
		prev := ltKey(0)
		for i := 0; i < m && r.Err() == nil; i++ {
			delta := ltKey(r.Uvarint())
			if i > 0 && delta == 0 {
				r.Fail("location index of %s: keys out of order", key)
			}
			prev += delta
			n.keys = append(n.keys, prev)
		}
		if !leaf {
			if m == 0 {
				r.Fail("location index of %s: a branch without keys", key)
			}
			for i := 0; i <= m && r.Err() == nil; i++ {
				n.children = append(n.children, node(depth+1))
			}
		}
		return n
	}
	t.root = node(0)
	return t
}

// adoptedLocTree is a destination's location index adopted from an index
// that holds it as shape (nil: not read, the index damaged there: unknown).
func adoptedLocTree(shape *kahaindex.LocationNode) *locTree {
	if shape == nil {
		return unknownLocTree()
	}
	return locTreeFrom(shape)
}
