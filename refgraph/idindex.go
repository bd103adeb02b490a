package refgraph

import "math/bits"

// idIndex is a destination's message id index (messageIdIndex of the
// broker's StoredDestination): id -> sequence. A producer numbers its
// messages one after the other, and a destination numbers what it
// receives one after the other, so the ids of a producer that fit one
// word (nearly all: see pack) are kept in pages of idPageSeqs consecutive
// producer sequences, each holding a bitmap of the ids present and their
// destination sequences as 32-bit differences from the page's first: about
// 4–5 bytes an id where a map slot costs about 25 and a lookup that finds
// a small map hot in the cache. The others (an id that does not pack, a
// sequence too far from its page's base) keep a map entry.
type idIndex struct {
	pages map[uint64]*idPage // by packed id >> idPageShift
	other map[msgKey]int64
	n     int // ids in pages
	// recent holds the pages add, set, take and find found last, one per
	// producer (by the low bits of its prefix): a destination's messages
	// come from a few producers, interleaved, each numbering its own one
	// after the other, so most of them need no map lookup. Made once the
	// index has a few pages (nil before); get does not use it (it only
	// reads x).
	recent *idRecent
}

// idRecent is idIndex.recent: slot i holds a page of a prefix whose low
// bits are i (nil: none).
type idRecent [16]struct {
	key uint64
	pg  *idPage
}

// recentAt is the slot of the page key in recent.
func recentAt(key uint64) int { return int(key>>(packSeqBits-idPageShift)) & 15 }

// writable returns the page of key for add, set, take and find (nil:
// none), through recent.
func (x *idIndex) writable(key uint64) *idPage {
	if r := x.recent; r != nil {
		if s := &r[recentAt(key)]; s.pg != nil && s.key == key {
			return s.pg
		}
	}
	pg := x.pages[key]
	if pg != nil {
		x.remember(key, pg)
	}
	return pg
}

// remember puts pg, the page of key, in recent.
func (x *idIndex) remember(key uint64, pg *idPage) {
	if x.recent == nil {
		if len(x.pages) < 8 {
			return // a small map is looked up quickly
		}
		x.recent = new(idRecent)
	}
	s := &x.recent[recentAt(key)]
	s.key, s.pg = key, pg
}

// forget takes pg, the page of key, out of recent.
func (x *idIndex) forget(key uint64, pg *idPage) {
	if r := x.recent; r != nil {
		if s := &r[recentAt(key)]; s.pg == pg {
			s.pg = nil
		}
	}
}

// find is get for the Builder, the index's one writer: through recent
// (which it may change).
func (x *idIndex) find(k msgKey) (int64, bool) {
	if p, ok := pack(k); ok {
		key, bit := idSlot(p)
		if s, ok := x.writable(key).seqOf(bit); ok {
			return s, true
		}
	}
	s, ok := x.other[k]
	return s, ok
}

const (
	packSeqBits    = 40
	packPrefixBits = 64 - packSeqBits

	idPageShift = 6
	idPageSeqs  = 1 << idPageShift
)

// idPage holds the ids of packed values [key<<idPageShift, (key+1)<<idPageShift).
type idPage struct {
	bits  uint64  // bit i: packed value key<<idPageShift + i is present
	base  int64   // the sequence the differences are from
	delta []int32 // the present ids' sequences less base, ascending id
}

// pack returns k as one word, if it fits.
func pack(k msgKey) (uint64, bool) {
	if k.prefix >= 1<<packPrefixBits || k.seq < 0 || k.seq >= 1<<packSeqBits {
		return 0, false
	}
	return uint64(k.prefix)<<packSeqBits | uint64(k.seq), true
}

func unpack(p uint64) msgKey {
	return msgKey{prefix: uint32(p >> packSeqBits), seq: int64(p & (1<<packSeqBits - 1))}
}

func idSlot(p uint64) (uint64, uint64) { return p >> idPageShift, 1 << (p & (idPageSeqs - 1)) }

func newIDIndex(hint int) idIndex {
	return idIndex{pages: make(map[uint64]*idPage, (hint+idPageSeqs-1)/idPageSeqs)}
}

func (x *idIndex) len() int { return x.n + len(x.other) }

func (x *idIndex) get(k msgKey) (int64, bool) {
	if p, ok := pack(k); ok {
		key, bit := idSlot(p)
		if s, ok := x.pages[key].seqOf(bit); ok {
			return s, true
		}
	}
	s, ok := x.other[k]
	return s, ok
}

// seqOf returns the sequence of the id of bit in pg (nil: no page).
func (pg *idPage) seqOf(bit uint64) (int64, bool) {
	if pg == nil || pg.bits&bit == 0 {
		return 0, false
	}
	return pg.base + int64(pg.delta[bits.OnesCount64(pg.bits&(bit-1))]), true
}

// add sets k to seq unless k is there already: then it returns the
// sequence k has, and dup (get and set in one look at the page).
func (x *idIndex) add(k msgKey, seq int64) (prev int64, dup bool) {
	if p, ok := pack(k); ok {
		key, bit := idSlot(p)
		pg := x.writable(key)
		if s, ok := pg.seqOf(bit); ok {
			return s, true
		}
		if s, ok := x.other[k]; ok {
			return s, true
		}
		x.setPaged(k, key, bit, pg, seq)
		return 0, false
	}
	if s, ok := x.other[k]; ok {
		return s, true
	}
	x.setOther(k, seq)
	return 0, false
}

// take removes k and returns the sequence it had (get and del in one).
func (x *idIndex) take(k msgKey) (int64, bool) {
	if p, ok := pack(k); ok {
		key, bit := idSlot(p)
		if pg := x.writable(key); pg != nil && pg.bits&bit != 0 {
			return x.remove(key, pg, bit), true
		}
	}
	s, ok := x.other[k]
	if ok {
		delete(x.other, k)
	}
	return s, ok
}

func (x *idIndex) set(k msgKey, seq int64) {
	if p, ok := pack(k); ok {
		key, bit := idSlot(p)
		x.setPaged(k, key, bit, x.writable(key), seq)
		return
	}
	x.setOther(k, seq)
}

// setPaged sets k, which packs into bit of the page of key (pg: that
// page, nil when there is none yet), to seq.
func (x *idIndex) setPaged(k msgKey, key, bit uint64, pg *idPage, seq int64) {
	if pg == nil {
		if x.pages == nil {
			x.pages = map[uint64]*idPage{}
		}
		pg = &idPage{base: seq}
		x.pages[key] = pg
		x.remember(key, pg)
	}
	if d := seq - pg.base; d == int64(int32(d)) {
		i := bits.OnesCount64(pg.bits & (bit - 1))
		if pg.bits&bit != 0 {
			pg.delta[i] = int32(d)
			return
		}
		pg.bits |= bit
		pg.delta = insertAt(pg.delta, i, int32(d))
		x.n++
		delete(x.other, k) // (when it was too far from the base before)
		return
	}
	x.delPaged(key, bit) // too far from the base: a map entry
	x.setOther(k, seq)
}

// setOther sets k to seq in the map of the ids kept outside pages.
func (x *idIndex) setOther(k msgKey, seq int64) {
	if x.other == nil {
		x.other = map[msgKey]int64{}
	}
	x.other[k] = seq
}

func (x *idIndex) del(k msgKey) {
	if p, ok := pack(k); ok {
		x.delPaged(idSlot(p))
	}
	delete(x.other, k)
}

func (x *idIndex) delPaged(key, bit uint64) {
	if pg := x.writable(key); pg != nil && pg.bits&bit != 0 {
		x.remove(key, pg, bit)
	}
}

// remove takes the id of bit out of pg, the page of key, and returns its
// sequence.
func (x *idIndex) remove(key uint64, pg *idPage, bit uint64) int64 {
	i := bits.OnesCount64(pg.bits & (bit - 1))
	seq := pg.base + int64(pg.delta[i])
	pg.bits &^= bit
	x.n--
	if pg.bits == 0 {
		delete(x.pages, key)
		x.forget(key, pg)
	} else {
		pg.delta = removeAt(pg.delta, i)
	}
	return seq
}

// each calls fn for every id, in no particular order; fn must not change
// x.
func (x *idIndex) each(fn func(k msgKey, seq int64)) {
	for key, pg := range x.pages {
		b, i := pg.bits, 0
		for b != 0 {
			fn(unpack(key<<idPageShift|uint64(bits.TrailingZeros64(b))), pg.base+int64(pg.delta[i]))
			b &= b - 1
			i++
		}
	}
	for k, s := range x.other {
		fn(k, s)
	}
}
