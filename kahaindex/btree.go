package kahaindex

import (
	"encoding/binary"
	"fmt"
	"github.com/kahafs/kahafs/codec"
	"slices"
)

// btree reads a BTreeIndex (disk/index/BTreeIndex, BTreeNode). Each node is
// one page stream:
//
//	int16 count (signed; negative: the broker's NegativeArraySizeException)
//	count keys                                 (key marshaller)
//	bool  branch
//	branch: count+1 int64 child page ids
//	leaf:   count values (value marshaller), int64 next leaf page (-1: last)
//
// Reads follow the broker's access paths, not a tree walk: iteration goes
// down the first children to the leftmost leaf and then along the leaf
// "next" links; a lookup goes down by Java's Arrays.binarySearch; the last
// entry is found down the last children. A B-tree whose root page is free
// is an empty leaf (BTreeIndex.load initialises it).
type btree[K, V any] struct {
	pf    *pageFile
	root  int64
	what  string
	key   func(dataInput) (K, error)
	value func(dataInput) (V, error)
	cmp   func(a, b K) int // Java compareTo of the key type
	kind  objectKind
	// startNode, when set, is called before a node is decoded (a value
	// decoder that keeps its bytes in a buffer per node resets it)
	startNode func()
	// spare: a node nothing refers to any more (recycle); the next
	// decode fills its arrays instead of making new ones
	spare *node[K, V]
	// leaf, when set, decodes a leaf node that lies in one page straight
	// from the page's bytes, b (up to the stream's end; the node's bytes
	// start at b[pageHeaderSize:]), into n (a node for page id with no
	// keys or values yet) the way decodeFrom would, or reports false
	// (what it wrote to n is dropped: decodeFrom reads the node, with its
	// errors). startNode is called before either. A reader that keeps
	// neither keys nor values passes over them (skimmer: the node then
	// holds the right number of zero keys and values).
	leaf func(b []byte, n *node[K, V]) bool
	// aheadKey, when set, passes over a key of a branch node (as skim's
	// key): an iteration then reads the leaves ahead (readahead.go)
	aheadKey func(b []byte, i int) (end int, ok bool)
	// onLeaf, when set, is told the page of every leaf an iteration
	// reads
	onLeaf func(id int64)
}

// skim is how the keys and values of a B-tree's leaf are laid out, for
// skimmer: key returns where the key at b[i:] ends (ok false: not one
// skimmer can pass over, e.g. a string that is not ASCII); the values
// are value bytes each.
type skim struct {
	key   func(b []byte, i int) (end int, ok bool)
	value int
}

// skimASCII passes over a readUTF string that is ASCII (its modified
// UTF-8 is then valid: the decoder could not fail on it).
func skimASCII(b []byte, i int) (int, bool) {
	if i+2 > len(b) {
		return 0, false
	}
	end := i + 2 + int(binary.BigEndian.Uint16(b[i:]))
	return end, end <= len(b) && isASCII(b[i+2:end])
}

// skimFixed passes over a key of n bytes.
func skimFixed(n int) func(b []byte, i int) (int, bool) {
	return func(b []byte, i int) (int, bool) { return i + n, i+n <= len(b) }
}

type node[K, V any] struct {
	page     int64
	keys     []K
	values   []V
	children []int64 // nil for a leaf
	next     int64
}

func (n *node[K, V]) branch() bool { return n.children != nil }

// load is BTreeIndex.load: the root page must exist; a free root makes an
// empty tree (the broker takes it for a new one), and load reports it.
func (t *btree[K, V]) load() (freeRoot bool, err error) {
	typ, err := t.pf.pageType(t.root, t.what)
	if err != nil {
		return false, err
	}
	if typ == pageFree {
		t.pf.cacheAs(t.root, t.kind, true, true)
		return true, nil
	}
	return false, nil
}

// loadNode reads the node in page id (BTreeIndex.loadNode).
func (t *btree[K, V]) loadNode(id int64) (*node[K, V], error) {
	if err := t.pf.claim(id, t.kind, t.what); err != nil {
		return nil, err
	}
	if e, ok := t.pf.cache.get(id); ok && e.initialized {
		return &node[K, V]{page: id, next: -1}, nil
	}
	n, err := t.decodeNode(id)
	if err != nil {
		return nil, err
	}
	t.pf.cacheAs(id, t.kind, len(n.keys) == 0, false)
	return n, nil
}

func (t *btree[K, V]) decodeNode(id int64) (*node[K, V], error) {
	s, err := t.pf.openStream(id, t.what)
	if err != nil {
		return nil, err
	}
	if n := t.leafNode(s, id); n != nil {
		t.pf.release(s)
		return n, nil
	}
	n, err := t.decodeFrom(s, id)
	t.pf.release(s) // what the node holds is copied out of it
	return n, err
}

// leafNode is the node of page id read by t.leaf from the stream s, just
// opened, when it lies in one page and t.leaf takes it; else nil, s as it
// was (decodeFrom then reads it).
func (t *btree[K, V]) leafNode(s *stream, id int64) *node[K, V] {
	if t.leaf == nil || !onePage(s) {
		return nil
	}
	if t.startNode != nil {
		t.startNode()
	}
	n := t.takeSpare()
	*n = node[K, V]{page: id, next: -1, keys: n.keys[:0], values: n.values[:0], children: n.children}
	if !t.leaf(s.buf[:s.end], n) {
		t.spare = n
		return nil
	}
	n.children = nil
	return n
}

func (t *btree[K, V]) decodeFrom(s *stream, id int64) (*node[K, V], error) {
	if t.startNode != nil {
		t.startNode()
	}
	count, err := readI16(s)
	if err != nil {
		return nil, err
	}
	if count < 0 {
		return nil, s.fail(ErrNegative, fmt.Sprintf("B-tree node key count %d", count), false)
	}
	n, kids := t.spare, []int64(nil)
	if n != nil {
		t.spare = nil
		kids = n.children
		*n = node[K, V]{page: id, next: -1, keys: n.keys[:0], values: n.values[:0]}
	} else {
		// room for the keys a page can hold (a node that spans pages
		// grows as it is read)
		c := min(int(count), maxNodeHint)
		n = &node[K, V]{page: id, next: -1, keys: make([]K, 0, c)}
	}
	for i := 0; i < int(count); i++ {
		k, err := t.key(s)
		if err != nil {
			return nil, err
		}
		n.keys = append(n.keys, k)
	}
	isBranch, err := readBool(s)
	if err != nil {
		return nil, err
	}
	if isBranch {
		t.pf.shape.add(&t.pf.shape.branches, t.what)
		if kids != nil {
			n.children = kids[:0]
		} else {
			n.children = make([]int64, 0, min(int(count), maxNodeHint)+1)
		}
		for i := 0; i <= int(count); i++ {
			c, err := readI64(s)
			if err != nil {
				return nil, err
			}
			n.children = append(n.children, c)
		}
		return n, nil
	}
	if n.values == nil {
		n.values = make([]V, 0, min(int(count), maxNodeHint))
	}
	for i := 0; i < int(count); i++ {
		v, err := t.value(s)
		if err != nil {
			return nil, err
		}
		n.values = append(n.values, v)
	}
	if n.next, err = readI64(s); err != nil {
		return nil, err
	}
	return n, nil
}

// skimmer is a leaf function (btree.leaf) for a leaf whose entries are
// laid out as sk says and that decodeFrom would read without error: the
// node it fills has as many keys and values as decodeFrom's, all zero,
// and its next leaf. For any other node (a branch, one sk cannot pass
// over, one short of bytes) it reports false: decodeFrom reads that node,
// with its errors. Either way the page was read alike (openStream), so
// what the read counts (the reads' budget, the shapes) is the same.
func skimmer[K, V any](sk skim) func(b []byte, n *node[K, V]) bool {
	return func(b []byte, n *node[K, V]) bool {
		i := pageHeaderSize
		if i+2 > len(b) {
			return false
		}
		count := int(int16(binary.BigEndian.Uint16(b[i:])))
		i += 2
		if count < 0 {
			return false
		}
		for range count {
			var ok bool
			if i, ok = sk.key(b, i); !ok {
				return false
			}
		}
		// the leaf flag, the values, the next leaf
		if i+1 > len(b) || b[i] != 0 {
			return false
		}
		i++
		if count > (len(b)-i)/sk.value {
			return false
		}
		i += count * sk.value
		if i+8 > len(b) {
			return false
		}
		n.keys, n.values = zeroed(n.keys, count), zeroed(n.values, count)
		n.next = int64(binary.BigEndian.Uint64(b[i:]))
		return true
	}
}

// locationSkimmer is skimmer for a location index's leaves (keys of
// locBytes bytes: file, offset, and from version 6 on the size) that fills
// their keys; the values stay zero.
func locationSkimmer(locBytes int) func(b []byte, n *node[codec.Location, int64]) bool {
	sk := skimmer[codec.Location, int64](skim{key: skimFixed(locBytes), value: 8})
	return func(b []byte, n *node[codec.Location, int64]) bool {
		if !sk(b, n) {
			return false
		}
		i := pageHeaderSize + 2
		for j := range n.keys {
			l := codec.Location{File: int32(binary.BigEndian.Uint32(b[i:])), Offset: int32(binary.BigEndian.Uint32(b[i+4:]))}
			if locBytes == 12 {
				l.Size = int32(binary.BigEndian.Uint32(b[i+8:]))
			}
			n.keys[j] = l
			i += locBytes
		}
		return true
	}
}

// onePage reports whether the stream s, just opened, is one end page
// whose data (from the header to the end offset it names, an int the
// file gives) lies within the page.
func onePage(s *stream) bool {
	return s.typ == pageEnd && s.pos == pageHeaderSize && s.end >= pageHeaderSize && s.end <= len(s.buf)
}

// takeSpare returns the spare node (recycle), or a new one: the fast
// leaf paths fill its arrays.
func (t *btree[K, V]) takeSpare() *node[K, V] {
	n := t.spare
	if n == nil {
		return &node[K, V]{}
	}
	t.spare = nil
	return n
}

// zeroed returns s (its array reused where it has room) as n zero values.
func zeroed[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// maxNodeHint bounds the room a node's arrays are made with before its
// entries are read (the count is the file's word).
const maxNodeHint = 512

// recycle hands back a node nothing refers to any more: the next decode
// reuses its arrays. Its keys and values must have been copied out.
func (t *btree[K, V]) recycle(n *node[K, V]) { t.spare = n }

// descent guards a walk down the tree (or along its leaves) against
// cycles.
type descent struct{ pageSet }

// newDescent starts a walk at page first of t.
func (t *btree[K, V]) newDescent(first int64) *descent {
	d := &descent{}
	d.reset(t.pf.filePages())
	d.add(first)
	return d
}

func (d *descent) visit(t interface{ cycleErr(int64) error }, id int64) error {
	if d.add(id) {
		return t.cycleErr(id)
	}
	return nil
}

func (t *btree[K, V]) cycleErr(id int64) error {
	return t.pf.pageErr(id, t.pf.toOffset(id), t.what, ErrCycle, fmt.Sprintf("page %d is reached twice", id), false)
}

// root loads the root node.
func (t *btree[K, V]) rootNode() (*node[K, V], error) { return t.loadNode(t.root) }

// isEmpty is BTreeIndex.isEmpty: the root node has no keys.
func (t *btree[K, V]) isEmpty() (bool, error) {
	n, err := t.rootNode()
	if err != nil {
		return false, err
	}
	return len(n.keys) == 0, nil
}

// last is BTreeIndex.getLast: down the last children; the last key of
// that leaf, if it has any.
func (t *btree[K, V]) last() (k K, ok bool, err error) {
	n, err := t.rootNode()
	if err != nil {
		return k, false, err
	}
	seen := t.newDescent(n.page)
	for n.branch() {
		id := n.children[len(n.children)-1]
		if err := seen.visit(t, id); err != nil {
			return k, false, err
		}
		t.recycle(n)
		if n, err = t.loadNode(id); err != nil {
			return k, false, err
		}
	}
	if len(n.values) == 0 {
		return k, false, nil
	}
	return n.keys[len(n.keys)-1], true, nil
}

// binarySearch is java.util.Arrays.binarySearch(Object[], Object).
func binarySearch[K any](keys []K, key K, cmp func(a, b K) int) int {
	low, high := 0, len(keys)-1
	for low <= high {
		mid := int(uint(low+high) >> 1)
		switch c := cmp(keys[mid], key); {
		case c < 0:
			low = mid + 1
		case c > 0:
			high = mid - 1
		default:
			return mid
		}
	}
	return -(low + 1)
}

// leafFor is BTreeNode.getLeafNode: the leaf a lookup of key ends in.
func (t *btree[K, V]) leafFor(key K) (*node[K, V], error) {
	return t.leafForAhead(key, nil)
}

// leafForAhead is leafFor telling la the way down.
func (t *btree[K, V]) leafForAhead(key K, la *leafAhead[K, V]) (*node[K, V], error) {
	n, err := t.rootNode()
	if err != nil {
		return nil, err
	}
	seen := t.newDescent(n.page)
	for n.branch() {
		idx := binarySearch(n.keys, key, t.cmp)
		if idx < 0 {
			idx = -(idx + 1)
		} else {
			idx++
		}
		id := n.children[idx]
		if err := seen.visit(t, id); err != nil {
			return nil, err
		}
		la.down(n, idx)
		t.recycle(n)
		if n, err = t.loadNode(id); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// get is BTreeIndex.get.
func (t *btree[K, V]) get(key K) (v V, ok bool, err error) {
	n, err := t.leafFor(key)
	if err != nil {
		return v, false, err
	}
	if idx := binarySearch(n.keys, key, t.cmp); idx >= 0 {
		return n.values[idx], true, nil
	}
	return v, false, nil
}

// iterate is BTreeIndex.iterator(tx) (start nil) or iterator(tx, start):
// from the leftmost leaf, or from the leaf a lookup of start ends in at
// the first key not below start, then along the leaf links. Like the
// broker's BTreeIterator it stops quietly where the next leaf cannot be
// read (an IOException in the broker): stopped reports why. Other errors
// (the broker's runtime exceptions, cycles) are returned as err.
func (t *btree[K, V]) iterate(start *K, fn func(k K, v V)) (stopped error, err error) {
	var n *node[K, V]
	idx := 0
	la := t.newLeafAhead()
	if start == nil {
		if n, err = t.rootNode(); err != nil {
			return nil, err
		}
		seen := t.newDescent(n.page)
		for n.branch() {
			id := n.children[0]
			if err := seen.visit(t, id); err != nil {
				return nil, err
			}
			la.down(n, 0)
			t.recycle(n)
			if n, err = t.loadNode(id); err != nil {
				return nil, err
			}
		}
	} else {
		if n, err = t.leafForAhead(*start, la); err != nil {
			return nil, err
		}
		if idx = binarySearch(n.keys, *start, t.cmp); idx < 0 {
			idx = -(idx + 1)
		}
	}
	leaves := t.newDescent(n.page)
	if t.onLeaf != nil {
		t.onLeaf(n.page)
	}
	for {
		if idx >= len(n.keys) {
			if n.next < 0 {
				return nil, nil
			}
			if err := leaves.visit(t, n.next); err != nil {
				return nil, err
			}
			la.before(n.next)
			next, err := t.loadNode(n.next)
			if err != nil {
				if swallowed(err) {
					return err, nil
				}
				return nil, err
			}
			if next.branch() && len(next.keys) > 0 {
				// The broker reads values of a branch: NullPointerException.
				return nil, t.pf.pageErr(next.page, t.pf.toOffset(next.page), t.what, ErrInconsistent,
					fmt.Sprintf("leaf %d links to branch node %d", n.page, next.page), false)
			}
			if t.onLeaf != nil {
				t.onLeaf(next.page)
			}
			t.recycle(n)
			n, idx = next, 0
			continue
		}
		fn(n.keys[idx], n.values[idx])
		idx++
	}
}

// shape reads the branches of a location index whose leaves an iteration
// read (leaves: their pages): the branch nodes from the root down, each
// child that is not one of the leaves read as a branch. Nil when a node is
// neither (the iteration and the branches disagree: a damaged index) or
// the walk comes back to a page. Nothing it reads is cached or counted:
// the broker's cleanup walks the same nodes, after the load.
func (t *btree[K, V]) shape(leaves []int64) *LocationNode {
	slices.Sort(leaves)
	isLeaf := func(id int64) bool { _, ok := slices.BinarySearch(leaves, id); return ok }
	if isLeaf(t.root) {
		return &LocationNode{}
	}
	seen := map[int64]bool{}
	var walk func(id int64, depth int) *LocationNode
	walk = func(id int64, depth int) *LocationNode {
		if seen[id] || depth > 64 {
			return nil
		}
		seen[id] = true
		keys, children, ok := t.readBranch(id)
		if !ok {
			return nil
		}
		n := &LocationNode{Keys: make([]codec.Location, 0, len(keys)), Children: make([]*LocationNode, 0, len(children))}
		for _, k := range keys {
			l, ok := any(k).(codec.Location)
			if !ok {
				return nil
			}
			n.Keys = append(n.Keys, l)
		}
		for _, c := range children {
			if isLeaf(c) {
				n.Children = append(n.Children, &LocationNode{})
				continue
			}
			cn := walk(c, depth+1)
			if cn == nil {
				return nil
			}
			n.Children = append(n.Children, cn)
		}
		return n
	}
	return walk(t.root, 0)
}

// readBranch reads the branch node in page id; ok false when it is not
// one or does not read.
func (t *btree[K, V]) readBranch(id int64) (keys []K, children []int64, ok bool) {
	s, err := t.pf.openStream(id, t.what)
	if err != nil {
		return nil, nil, false
	}
	defer t.pf.release(s)
	count, err := readI16(s)
	if err != nil || count <= 0 {
		return nil, nil, false
	}
	for range count {
		k, err := t.key(s)
		if err != nil {
			return nil, nil, false
		}
		keys = append(keys, k)
	}
	if branch, err := readBool(s); err != nil || !branch {
		return nil, nil, false
	}
	for range int(count) + 1 {
		c, err := readI64(s)
		if err != nil {
			return nil, nil, false
		}
		children = append(children, c)
	}
	return keys, children, true
}
