package refgraph

import (
	"math/bits"
	"slices"

	"github.com/kahafs/kahafs/codec"
)

// orderIndex is a destination's order index: its entries by sequence.
// A broker numbers a destination's messages one after the other, so the
// entries are kept in pages of pageSeqs consecutive sequences, each
// holding only the entries present (in sequence order) and a bitmap of
// which they are. A dense page costs about the entries' own bytes, a
// map[int64]entry about twice as much; a page with one entry left costs
// little more than that entry, so sparse indexes (one old message stuck
// in a busy queue) stay small too.
type orderIndex struct {
	pages map[int64]*page // by seq >> pageShift
	n     int
	// prio holds the priorities that do not fit a packed entry's int8
	// (by sequence; a broker writes 0..9, a foreign store anything)
	prio map[int64]int32
	// last is the page set, take or find found last (key lastKey), nil
	// for none: a destination's adds go to its newest page one after the
	// other, so most sets need no map lookup. It is always a page of
	// pages; get and has do not use it (they only read x).
	last    *page
	lastKey int64
}

// writable returns the page of key k for set and take (nil: none),
// through last.
func (x *orderIndex) writable(k int64) *page {
	if x.last != nil && x.lastKey == k {
		return x.last
	}
	p := x.pages[k]
	if p != nil {
		x.last, x.lastKey = p, k
	}
	return p
}

const (
	pageShift = 6
	pageSeqs  = 1 << pageShift
)

// page holds the entries of sequences [key<<pageShift, (key+1)<<pageShift).
type page struct {
	bits uint64        // bit i: sequence key<<pageShift + i is present
	es   []packedEntry // the present entries, ascending sequence
}

// packedEntry is an entry in 32 bytes instead of 40: the id's fields side
// by side (no padding inside a msgKey) and the priority in a byte when it
// fits (flagWidePrio: it is in orderIndex.prio).
type packedEntry struct {
	seq    int64 // entry.id.seq
	loc    codec.Location
	prefix uint32 // entry.id.prefix
	size   int32
	prio   int8
	class  int8
	flags  uint8
}

// flagWidePrio marks a packed entry whose priority is kept aside.
const flagWidePrio = 1 << 7

func (x *orderIndex) pack(seq int64, e entry) packedEntry {
	p := packedEntry{seq: e.id.seq, loc: e.loc, prefix: e.id.prefix, size: e.size, prio: int8(e.prio), class: e.class, flags: e.flags}
	if int32(p.prio) != e.prio {
		if x.prio == nil {
			x.prio = map[int64]int32{}
		}
		x.prio[seq] = e.prio
		p.flags |= flagWidePrio
	} else if x.prio != nil {
		delete(x.prio, seq)
	}
	return p
}

func (x *orderIndex) unpack(seq int64, p packedEntry) entry {
	e := entry{id: msgKey{prefix: p.prefix, seq: p.seq}, loc: p.loc, prio: int32(p.prio), size: p.size, class: p.class, flags: p.flags &^ flagWidePrio}
	if p.flags&flagWidePrio != 0 {
		e.prio = x.prio[seq]
	}
	return e
}

func newOrderIndex(hint int) orderIndex {
	return orderIndex{pages: make(map[int64]*page, (hint+pageSeqs-1)/pageSeqs)}
}

// slot returns the page key and the bit of seq (an arithmetic shift: the
// pages of negative sequences work alike).
func slot(seq int64) (int64, uint64) { return seq >> pageShift, 1 << uint64(seq&(pageSeqs-1)) }

// rank is the index in p.es of the entry at bit.
func (p *page) rank(bit uint64) int { return bits.OnesCount64(p.bits & (bit - 1)) }

func (x *orderIndex) len() int { return x.n }

func (x *orderIndex) get(seq int64) (entry, bool) {
	k, bit := slot(seq)
	p := x.pages[k]
	if p == nil || p.bits&bit == 0 {
		return entry{}, false
	}
	return x.unpack(seq, p.es[p.rank(bit)]), true
}

// find is get for the Builder, the index's one writer: through last
// (which it may change), so that the look-ups of a replay going through
// a destination's messages in order need no map look-up either.
func (x *orderIndex) find(seq int64) (entry, bool) {
	k, bit := slot(seq)
	p := x.writable(k)
	if p == nil || p.bits&bit == 0 {
		return entry{}, false
	}
	return x.unpack(seq, p.es[p.rank(bit)]), true
}

func (x *orderIndex) has(seq int64) bool {
	k, bit := slot(seq)
	p := x.pages[k]
	return p != nil && p.bits&bit != 0
}

// set adds or replaces the entry of seq.
func (x *orderIndex) set(seq int64, e entry) {
	p, bit, i := x.slotFor(seq)
	pe := x.pack(seq, e)
	if p.bits&bit != 0 {
		p.es[i] = pe
		return
	}
	p.bits |= bit
	p.es = insertAt(p.es, i, pe)
	x.n++
}

// swap sets the entry of seq as set does and returns the one it
// replaced, if any (get and set in one look at the page).
func (x *orderIndex) swap(seq int64, e entry) (entry, bool) {
	p, bit, i := x.slotFor(seq)
	if p.bits&bit != 0 {
		prev := x.unpack(seq, p.es[i]) // before pack changes x.prio
		p.es[i] = x.pack(seq, e)
		return prev, true
	}
	p.bits |= bit
	p.es = insertAt(p.es, i, x.pack(seq, e))
	x.n++
	return entry{}, false
}

// slotFor is where seq's entry is or goes: its page (made if there is
// none), its bit in the page and its index in the page's entries.
func (x *orderIndex) slotFor(seq int64) (p *page, bit uint64, i int) {
	if x.pages == nil {
		x.pages = map[int64]*page{}
	}
	k, bit := slot(seq)
	p = x.writable(k)
	if p == nil {
		p = &page{}
		x.pages[k] = p
		x.last, x.lastKey = p, k
	}
	return p, bit, p.rank(bit)
}

// take removes the entry of seq and returns it.
func (x *orderIndex) take(seq int64) (entry, bool) {
	k, bit := slot(seq)
	p := x.writable(k)
	if p == nil || p.bits&bit == 0 {
		return entry{}, false
	}
	i := p.rank(bit)
	e := x.unpack(seq, p.es[i])
	if p.es[i].flags&flagWidePrio != 0 {
		delete(x.prio, seq)
	}
	p.bits &^= bit
	x.n--
	if p.bits == 0 {
		delete(x.pages, k)
		x.last = nil
	} else {
		p.es = removeAt(p.es, i)
	}
	return e, true
}

// del removes the entry of seq, if any.
func (x *orderIndex) del(seq int64) { x.take(seq) }

// insertAt inserts v at s[i], s being a page's entries (at most 64).
// A full array grows to 16 entries, then to a page's 64: append's
// doubling from one made seven arrays for a page filled in order, 85 MB
// made and collected on a store with 850 k pending messages, where this
// makes two (removeAt gives back what acks free).
func insertAt[T any](s []T, i int, v T) []T {
	if len(s) == cap(s) {
		n := pageSeqs
		if cap(s) < 16 {
			n = 16
		}
		s = append(make([]T, 0, max(n, len(s)+1)), s...)
	}
	var zero T
	s = append(s, zero)
	copy(s[i+1:], s[i:])
	s[i] = v
	return s
}

// removeAt removes s[i], and gives back the array's room once no more than
// a quarter of it is used (what acks freed).
func removeAt[T any](s []T, i int) []T {
	s = append(s[:i], s[i+1:]...)
	if n := len(s); n <= cap(s)/4 {
		s = append(make([]T, 0, 2*n), s...)
	}
	return s
}

// each calls fn for every entry, in no particular order; fn must not
// change x.
func (x *orderIndex) each(fn func(seq int64, e entry)) {
	for k, p := range x.pages {
		b, i := p.bits, 0
		for b != 0 {
			j := bits.TrailingZeros64(b)
			seq := k<<pageShift + int64(j)
			fn(seq, x.unpack(seq, p.es[i]))
			b &= b - 1
			i++
		}
	}
}

// ascending calls fn for every entry, by sequence; fn must not change x.
func (x *orderIndex) ascending(fn func(seq int64, e entry)) { x.walk(fn, false) }

// drain is ascending emptying x as it goes: each page is given back once
// its entries have been passed to fn, so what fn builds of them can take
// their place without the two being held at once.
func (x *orderIndex) drain(fn func(seq int64, e entry)) { x.walk(fn, true) }

func (x *orderIndex) walk(fn func(seq int64, e entry), free bool) {
	keys := make([]int64, 0, len(x.pages))
	for k := range x.pages {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		p := x.pages[k]
		b, i := p.bits, 0
		for b != 0 {
			seq := k<<pageShift + int64(bits.TrailingZeros64(b))
			fn(seq, x.unpack(seq, p.es[i]))
			b &= b - 1
			i++
		}
		if free {
			p.es = nil
			x.pages[k] = nil
		}
	}
	if free {
		*x = orderIndex{}
	}
}

// seqs returns the sequences present, in no particular order.
func (x *orderIndex) seqs() []int64 {
	out := make([]int64, 0, x.n)
	x.each(func(seq int64, _ entry) { out = append(out, seq) })
	return out
}
