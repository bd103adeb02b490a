package refgraph

import (
	"encoding/binary"
	"hash/maphash"
	"slices"
	"sort"

	"github.com/kahafs/kahafs/internal/binenc"
)

// txIndex finds the finished transactions a graph keeps encoded (lazyTxs)
// by id without reading them all: a table of their positions addressed by
// a hash of the id (open addressing, linear probing), each with 8 more
// bits of the hash so that few candidates are read to check their id, and
// where every txRestart-th id and record starts, so that an id or a record
// is read from at most txRestart before it. On a store with 188 k finished
// transactions a message's transaction is found in microseconds instead
// of the 0.1 s of reading every id and every record before it, for two to
// four slots of 4 bytes a transaction and about a byte more.
type txIndex struct {
	seed  maphash.Seed
	slots []uint32 // position plus one, and a tag (txSlot); 0: empty; len is a power of two
	ids   []idRestart
	recs  []recRestart
}

// txRestart is how many ids and records a lookup may read to reach one.
const txRestart = 64

// idRestart is where the id at position pos starts: block blk of the ids
// at byte off, after the id prev (empty at a block's start: addID).
type idRestart struct {
	pos, blk, off int
	prev          string
}

// recRestart is where the record at position pos starts, and what a
// txMaker has counted before it.
type recRestart struct {
	pos, blk, off int
	at, nlocs     int
}

// maxTxIndexed bounds the transactions indexed (a slot's position bits).
const maxTxIndexed = 1<<24 - 2

// txSlot is what the table holds for position p of an id hashed to h.
func txSlot(p int, h uint64) uint32 { return uint32(p+1) | uint32(h>>56)<<24 }

// newTxIndex indexes the transactions of l held in ids and recs (l's, or
// what they were before the graph made them all). It reads each once, and
// reports false when they do not read as l says (a lookup then reads them
// in order, and fails the same way).
func newTxIndex(l *lazyTxs, ids, recs [][]byte) (*txIndex, bool) {
	if l.n == 0 || l.n > maxTxIndexed {
		return nil, false // too many: lookups read them in order
	}
	size := 1
	for size < 2*l.n {
		size <<= 1
	}
	x := &txIndex{seed: maphash.MakeSeed(), slots: make([]uint32, size)}
	mask := uint64(size - 1)
	pos := 0
	var cur []byte
	for bi, blk := range ids {
		cur = cur[:0]
		for b := blk; len(b) > 0; pos++ {
			if pos%txRestart == 0 || len(b) == len(blk) {
				x.ids = append(x.ids, idRestart{pos: pos, blk: bi, off: len(blk) - len(b), prev: string(cur)})
			}
			var ok bool
			if b, cur, ok = nextID(b, cur); !ok || pos >= l.n {
				return nil, false
			}
			hash := maphash.Bytes(x.seed, cur)
			h := hash & mask
			for x.slots[h] != 0 {
				h = (h + 1) & mask
			}
			x.slots[h] = txSlot(pos, hash)
		}
	}
	if pos != l.n {
		return nil, false
	}
	m := l.maker(false)
	names := strTable{}
	pos = 0
	for bi, blk := range recs {
		d := &stateDecoder{r: binenc.NewReader(blk), data: blk, names: names}
		for ; d.r.Len() > 0; pos++ {
			if pos%txRestart == 0 || d.r.Len() == len(blk) {
				x.recs = append(x.recs, recRestart{pos: pos, blk: bi, off: len(blk) - d.r.Len(), at: m.at, nlocs: m.nlocs})
			}
			if _, ok := m.read(d, false); !ok || pos >= l.n {
				return nil, false
			}
		}
	}
	if pos != l.n {
		return nil, false
	}
	return x, true
}

// nextID reads the id at the start of b, which follows prev (the id before
// it in its block, or empty at a block's start), into prev's array.
func nextID(b, prev []byte) (rest, id []byte, ok bool) {
	shared, n1 := binary.Uvarint(b)
	if n1 <= 0 {
		return nil, nil, false
	}
	more, n2 := binary.Uvarint(b[n1:])
	if n2 <= 0 || more > uint64(len(b)-n1-n2) || shared > uint64(len(prev)) {
		return nil, nil, false
	}
	b = b[n1+n2:]
	return b[more:], append(prev[:shared], b[:more]...), true
}

// find makes the transactions of ids and recs whose id is id, in order.
func (x *txIndex) find(l *lazyTxs, ids, recs [][]byte, id string) []*Transaction {
	mask := uint64(len(x.slots) - 1)
	hash := maphash.String(x.seed, id)
	tag := txSlot(-1, hash)
	var at []int
	for h := hash & mask; x.slots[h] != 0; h = (h + 1) & mask {
		s := x.slots[h]
		if s&^(1<<24-1) != tag {
			continue
		}
		if p := int(s&(1<<24-1)) - 1; x.idAt(ids, p) == id {
			at = append(at, p)
		}
	}
	slices.Sort(at)
	var out []*Transaction
	for _, p := range at {
		if t, ok := x.record(l, recs, p); ok {
			t.ID = id
			out = append(out, &t)
		}
	}
	return out
}

// idAt reads the id at position p, from the restart before it.
func (x *txIndex) idAt(ids [][]byte, p int) string {
	r := x.ids[sort.Search(len(x.ids), func(i int) bool { return x.ids[i].pos > p })-1]
	b, cur := ids[r.blk][r.off:], []byte(r.prev)
	for i := r.pos; i <= p; i++ {
		var ok bool
		if b, cur, ok = nextID(b, cur); !ok {
			return ""
		}
	}
	return string(cur)
}

// record makes the transaction at position p, reading the records from
// the restart before it without making them.
func (x *txIndex) record(l *lazyTxs, recs [][]byte, p int) (Transaction, bool) {
	r := x.recs[sort.Search(len(x.recs), func(i int) bool { return x.recs[i].pos > p })-1]
	m := l.maker(false)
	m.at, m.nlocs = r.at, r.nlocs
	blk := recs[r.blk][r.off:]
	d := &stateDecoder{r: binenc.NewReader(blk), data: blk, names: strTable{}}
	for i := r.pos; i < p; i++ {
		if _, ok := m.read(d, false); !ok {
			return Transaction{}, false
		}
	}
	return m.read(d, true)
}
