package refgraph

import (
	"slices"
	"strings"

	"github.com/kahafs/kahafs/internal/binenc"
	"github.com/kahafs/kahafs/kahaindex"
)

// The ackPositions list of a topic (StoredDestination.ackPositions: a
// ListIndex<String, SequenceSet> from a subscription key to the sequences
// it still has to acknowledge), node for node as the broker's ListNode
// builds it. Its shape matters: ActiveMQ 5.17.2's ListNode loses entries.
//
//   - A node that no longer fits its page after an append (ListNode.put,
//     store ADD_LAST) splits off its last entry into a new node after it
//     and points the list's tail at that node, even when the node was not
//     the last one (split's setTailPageId).
//   - Removing the last entry of the node the tail points at unlinks it by
//     ending the list at its predecessor (ListIterator.remove: the tail
//     case sets the previous node's next to NOT_SET): every node after it
//     is lost, and their subscriptions' entries with them.
//
// A subscription that lost its entry has no ack positions: its messages
// are no longer referenced by it, its acks do nothing (removeAckLocation:
// a null range), and the next message it is subscribed for starts a new
// entry at the tail (kept seed 290: c9:s9's entry lost when c8:s8 was
// unsubscribed, its count 104 where the full set had 358).
//
// The tail pointer lives in memory only: a broker that loads the list
// (a restart with its index) points it at the real last node. A rebuild
// from the journal is one process and keeps it.
//
// Entries are the subscriptions themselves (sub.node: the node holding its
// entry, nil for none; sub.hasPos mirrors it); a node's size is computed
// from the subscriptions' sets. An entry may outlive its subscription when
// the unsubscribe does not remove it (removeAckLocationsForSub only removes
// when the head node is not empty): that sub (a ghost, in no dest.subs)
// keeps its entry and a new subscription of the same key takes it over.
type ackList struct {
	head, tail *alNode
}

// alNode is a ListNode: its entries in order and the next node.
type alNode struct {
	subs []*sub
	next *alNode
}

// alPageHeader is Page.PAGE_HEADER_SIZE; a node's payload is its next
// node's id (8 bytes) and an entry count (2 bytes) before the entries.
const alPageHeader = 21

func newAckList() *ackList {
	n := &alNode{}
	return &ackList{head: n, tail: n}
}

// entryBytes adds an entry's size in its node to n, up to limit (it stops
// counting there: a set of a million ranges is not walked on every put):
// the key (writeUTF) and the SequenceSet (an int count, and per range a
// boolean and one or two longs).
func entryBytes(s *sub, n, limit int) int {
	n += 2 + utfLen(s.key) + 4
	for _, r := range s.pos.r {
		if n >= limit {
			break
		}
		if r.first == r.last {
			n += 9
		} else {
			n += 17
		}
	}
	return n
}

// utfLen is the length of s in DataOutput.writeUTF's modified UTF-8.
func utfLen(s string) int {
	n := 0
	for _, r := range s {
		switch {
		case r >= 1 && r <= 0x7f:
			n++
		case r <= 0x7ff:
			n += 2
		case r <= 0xffff:
			n += 3
		default:
			n += 6 // a surrogate pair
		}
	}
	return n
}

// fits reports whether n's page stream stays below the page size
// (Transaction.store's overflow check: the position reaching the page
// size overflows). A node of one entry always fits (it overflows into
// more pages).
func (n *alNode) fits() bool {
	if len(n.subs) <= 1 {
		return true
	}
	b := alPageHeader + 10
	for _, s := range n.subs {
		if b = entryBytes(s, b, pageSize); b >= pageSize {
			return false
		}
	}
	return true
}

// store is ListNode.store.
func (l *ackList) store(n *alNode, addFirst bool) {
	if n.fits() {
		if n.next == nil {
			l.tail = n
		}
		return
	}
	l.split(n, addFirst)
}

// split is ListNode.split.
func (l *ackList) split(n *alNode, addFirst bool) {
	x := &alNode{next: n.next}
	if addFirst {
		x.subs = append([]*sub(nil), n.subs[1:]...)
		n.subs = n.subs[:1:1]
		x.bind()
		l.store(x, true)
	} else {
		k := len(n.subs) - 1
		x.subs = []*sub{n.subs[k]}
		n.subs = n.subs[:k:k]
		x.bind()
		l.store(x, false)
		l.tail = x
	}
	n.next = x
	l.store(n, true)
}

func (n *alNode) bind() {
	for _, s := range n.subs {
		s.node = n
	}
}

// add is ListIndex.add: s's entry appended to the tail node.
func (l *ackList) add(s *sub) {
	t := l.tail
	t.subs = append(t.subs, s)
	s.node, s.hasPos = t, true
	l.store(t, false)
}

// put is ListIndex.put of s's (changed) set: stored in place when s has an
// entry, else appended.
func (l *ackList) put(s *sub) {
	if s.node == nil {
		l.add(s)
		return
	}
	l.store(s.node, false)
}

// empty is ListIndex.isEmpty: the head node has no entries.
func (l *ackList) empty() bool { return len(l.head.subs) == 0 }

// lonely reports whether removing s's entry right after a get of it
// fails in the broker: ListIndex.remove then starts at the node the get
// cached, with no previous node, and a node it empties that is not the
// head throws a NullPointerException (ListIterator.remove).
func (l *ackList) lonely(s *sub) bool {
	return s.node != nil && s.node != l.head && len(s.node.subs) == 1
}

// remove is ListIndex.remove of s's entry (found by a scan from the head).
// lost is called for every subscription whose entry the broker loses.
func (l *ackList) remove(s *sub, lost func(*sub)) {
	n := s.node
	if n == nil {
		return
	}
	for i, o := range n.subs {
		if o == s {
			n.subs = append(n.subs[:i:i], n.subs[i+1:]...)
			break
		}
	}
	s.node, s.hasPos = nil, false
	if len(n.subs) > 0 {
		return
	}
	switch {
	case n == l.head && n == l.tail:
		// an empty list
	case n == l.head:
		// the next node's entries move into the head (its page is the
		// list's identity)
		nx := n.next
		if nx == nil {
			return
		}
		if nx == l.tail {
			l.tail = n
		}
		n.subs, n.next = nx.subs, nx.next
		n.bind()
	case n == l.tail:
		prev := l.prev(n)
		for x := n.next; x != nil; x = x.next {
			for _, o := range x.subs {
				o.node, o.hasPos = nil, false
				if lost != nil {
					lost(o)
				}
			}
		}
		prev.next = nil
		l.tail = prev
	default:
		prev := l.prev(n)
		prev.next = n.next
	}
}

func (l *ackList) prev(n *alNode) *alNode {
	for p := l.head; p != nil; p = p.next {
		if p.next == n {
			return p
		}
	}
	panic("refgraph: ack list node not in its list")
}

// find is the first entry of key from the head (ListIndex.get).
func (l *ackList) find(key string) *sub {
	for n := l.head; n != nil; n = n.next {
		for _, s := range n.subs {
			if s.key == key {
				return s
			}
		}
	}
	return nil
}

// each calls fn for every entry in list order.
func (l *ackList) each(fn func(*sub)) {
	for n := l.head; n != nil; n = n.next {
		for _, s := range n.subs {
			fn(s)
		}
	}
}

// reload is ListIndex.load: the tail pointer at the last node.
func (l *ackList) reload() {
	n := l.head
	for n.next != nil {
		n = n.next
	}
	l.tail = n
}

// ackList is d's ack list, made when first needed.
func (d *dest) ackList() *ackList {
	if d.acks == nil {
		d.acks = newAckList()
	}
	return d.acks
}

// lostPositions is called for a subscription whose ack-positions entry the
// broker's list lost.
func (b *Builder) lostPositions(s *sub) {
	s.pos = seqSet{}
	b.warnf("%s: the broker's ack-positions list loses %s's entry (ListNode's tail removal ends the list before it)", b.lastRecord, s.key)
}

// adoptAckList is a loaded index's ack list: its entries in their nodes
// (kahaindex.AckPositionsEntry.Node), the tail pointer at the last node
// (ListIndex.load), and the subscription cache in key order (loadStoredDestination
// fills it from subscriptionAcks, a B-tree). An entry without a
// subscription is a ghost's; a subscription's set is its entry's.
func adoptAckList(subs []*sub, entries []kahaindex.AckPositionsEntry, intern func([]byte) string) (*ackList, []*sub) {
	l := newAckList()
	byKey := make(map[string]*sub, len(subs))
	for _, s := range subs {
		s.pos, s.hasPos, s.node = seqSet{}, false, nil
		if _, dup := byKey[s.key]; !dup {
			byKey[s.key] = s
		}
	}
	n, at := l.head, 0
	for _, e := range entries {
		for at < e.Node {
			x := &alNode{}
			n.next, n, at = x, x, at+1
		}
		s := byKey[e.Key]
		if s == nil || s.node != nil {
			s = &sub{key: intern([]byte(e.Key)), lastAck: -1}
		}
		for _, r := range e.Ranges {
			s.pos.addRange(r.First, r.Last)
		}
		s.node, s.hasPos = n, true
		n.subs = append(n.subs, s)
	}
	l.tail = n
	cache := slices.Clone(subs)
	slices.SortStableFunc(cache, func(a, b *sub) int { return strings.Compare(a.key, b.key) })
	cache = slices.CompactFunc(cache, func(a, b *sub) bool { return a.key == b.key })
	return l, cache
}

// saveAckList writes d's subscription cache (indexes into d.subs) and ack
// list: its ghosts (key and set), then its nodes, each entry as an index
// into d.subs followed by the ghosts, and the tail's ordinal.
func saveAckList(w *binenc.Writer, d *dest) {
	at := make(map[*sub]int, len(d.subs))
	for i, s := range d.subs {
		at[s] = i
	}
	w.Uvarint(uint64(len(d.cache)))
	for _, s := range d.cache {
		w.Uvarint(uint64(at[s]))
	}
	l := d.acks
	w.Bool(l != nil)
	if l == nil {
		return
	}
	var ghosts []*sub
	l.each(func(s *sub) {
		if _, ok := at[s]; !ok {
			at[s] = len(d.subs) + len(ghosts)
			ghosts = append(ghosts, s)
		}
	})
	w.Uvarint(uint64(len(ghosts)))
	for _, s := range ghosts {
		w.String(s.key)
		w.Uvarint(uint64(len(s.pos.r)))
		for _, r := range s.pos.r {
			w.Varint(r.first)
			w.Varint(r.last)
		}
	}
	nodes, tail := 0, 0
	for n := l.head; n != nil; n = n.next {
		if n == l.tail {
			tail = nodes
		}
		nodes++
	}
	w.Uvarint(uint64(nodes))
	for n := l.head; n != nil; n = n.next {
		w.Uvarint(uint64(len(n.subs)))
		for _, s := range n.subs {
			w.Uvarint(uint64(at[s]))
		}
	}
	w.Uvarint(uint64(tail))
}

// ackList reads what saveAckList wrote into dd (its subs read).
func (d *stateDecoder) ackList(dd *dest) {
	r := d.r
	n := r.Count(1)
	seen := make([]bool, len(dd.subs))
	for i := 0; i < n && r.Err() == nil; i++ {
		j := r.Uvarint()
		if j >= uint64(len(dd.subs)) || seen[j] {
			r.Fail("subscription cache of %s: bad subscription", dd.key)
			return
		}
		seen[j] = true
		dd.cache = append(dd.cache, dd.subs[j])
	}
	if !r.Bool() || r.Err() != nil {
		for _, s := range dd.subs {
			if s.hasPos {
				r.Fail("subscription %s of %s: ack positions without an ack list", s.key, dd.key)
			}
		}
		return
	}
	all := slices.Clone(dd.subs)
	n = r.Count(2)
	for i := 0; i < n && r.Err() == nil; i++ {
		g := &sub{key: d.str(), lastAck: -1, hasPos: true}
		m := r.Count(2)
		for j := 0; j < m && r.Err() == nil; j++ {
			x := seqRange{first: r.Varint(), last: r.Varint()}
			if x.first < 0 || x.last < x.first || (j > 0 && g.pos.r[j-1].last+1 >= x.first) {
				r.Fail("ack list of %s: bad sequence range", dd.key)
			}
			g.pos.r = append(g.pos.r, x)
		}
		all = append(all, g)
	}
	l := &ackList{}
	nodes := r.Count(1)
	if nodes == 0 && r.Err() == nil {
		r.Fail("ack list of %s: no head node", dd.key)
	}
	var nl []*alNode
	for i := 0; i < nodes && r.Err() == nil; i++ {
		x := &alNode{}
		if i == 0 {
			l.head = x
		} else {
			nl[i-1].next = x
		}
		nl = append(nl, x)
		m := r.Count(1)
		for j := 0; j < m && r.Err() == nil; j++ {
			k := r.Uvarint()
			if k >= uint64(len(all)) || all[k].node != nil {
				r.Fail("ack list of %s: bad entry", dd.key)
				return
			}
			all[k].node = x
			x.subs = append(x.subs, all[k])
		}
	}
	t := r.Uvarint()
	if r.Err() != nil {
		return
	}
	if t >= uint64(len(nl)) {
		r.Fail("ack list of %s: bad tail", dd.key)
		return
	}
	l.tail = nl[t]
	for _, s := range all {
		if s.hasPos != (s.node != nil) {
			r.Fail("ack list of %s: subscription %s's entry", dd.key, s.key)
			return
		}
	}
	dd.acks = l
}
