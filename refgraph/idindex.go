package refgraph

// idIndex is a destination's message id index (messageIdIndex of the
// broker's StoredDestination): id -> sequence. Keys whose producer index
// and sequence fit (nearly all) are packed into one word, which makes a
// slot of the map 16 bytes instead of 24; the others keep their msgKey.
type idIndex struct {
	packed map[uint64]int64
	other  map[msgKey]int64
}

const (
	packSeqBits    = 40
	packPrefixBits = 64 - packSeqBits
)

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

func newIDIndex(hint int) idIndex { return idIndex{packed: make(map[uint64]int64, hint)} }

func (x *idIndex) len() int { return len(x.packed) + len(x.other) }

func (x *idIndex) get(k msgKey) (int64, bool) {
	if p, ok := pack(k); ok {
		s, ok := x.packed[p]
		return s, ok
	}
	s, ok := x.other[k]
	return s, ok
}

func (x *idIndex) set(k msgKey, seq int64) {
	if p, ok := pack(k); ok {
		if x.packed == nil {
			x.packed = map[uint64]int64{}
		}
		x.packed[p] = seq
		return
	}
	if x.other == nil {
		x.other = map[msgKey]int64{}
	}
	x.other[k] = seq
}

func (x *idIndex) del(k msgKey) {
	if p, ok := pack(k); ok {
		delete(x.packed, p)
		return
	}
	delete(x.other, k)
}

// each calls fn for every id, in no particular order; fn must not change
// x.
func (x *idIndex) each(fn func(k msgKey, seq int64)) {
	for p, s := range x.packed {
		fn(unpack(p), s)
	}
	for k, s := range x.other {
		fn(k, s)
	}
}
