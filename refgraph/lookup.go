package refgraph

import (
	"sort"
	"strconv"
)

// Finding held messages by id without a scan of every message list.

// IDIndex finds the messages a graph holds (every destination's
// Messages) by their id. It is a table of positions addressed by a hash
// of the id (open addressing, linear probing): 4 bytes a slot, a slot or
// two per message, and no id kept (a candidate is checked with HasID). A
// lookup is a hash of the id and a few probes. Safe for concurrent
// lookups once made.
type IDIndex struct {
	dests []*Destination
	// offs[i] is the position of dests[i].Messages[0] among all the
	// messages, in destination order; offs[len(dests)] is their number.
	offs []int
	// slots hold a position plus one (0: empty); len is a power of two.
	slots []uint32
}

// MessageRef is a held message: Destination.Messages[Index].
type MessageRef struct {
	Destination *Destination
	Index       int
}

// Message returns the message referred to.
func (r MessageRef) Message() *Message { return &r.Destination.Messages[r.Index] }

// NewIDIndex indexes the messages of g by id.
func NewIDIndex(g *Graph) *IDIndex {
	x := &IDIndex{dests: g.Destinations()}
	x.offs = make([]int, len(x.dests)+1)
	n := 0
	for i, d := range x.dests {
		x.offs[i] = n
		n += len(d.Messages)
	}
	x.offs[len(x.dests)] = n
	n = min(n, maxIndexed) // beyond: not indexed (Lookup scans them)
	size := 1
	for size < n+n/4+1 {
		size <<= 1
	}
	x.slots = make([]uint32, size)
	mask := uint64(size - 1)
	var lastPrefix *string
	var prefixHash uint64
	pos := 0
	for _, d := range x.dests {
		for i := range d.Messages {
			if pos >= n {
				return x
			}
			k := d.Messages[i].id
			if k.prefix != lastPrefix {
				lastPrefix, prefixHash = k.prefix, fnvOffset
				if k.prefix != nil {
					prefixHash = fnvString(prefixHash, *k.prefix)
				}
			}
			h := prefixHash
			if k.prefix != nil && k.seq >= 0 {
				var buf [24]byte
				h = fnvBytes(h, strconv.AppendInt(append(buf[:0], ':'), k.seq, 10))
			}
			for j := h & mask; ; j = (j + 1) & mask {
				if x.slots[j] == 0 {
					x.slots[j] = uint32(pos + 1)
					break
				}
			}
			pos++
		}
	}
	return x
}

// Lookup returns the held messages whose id is id, in destination order
// (Graph.Destinations) and, within a destination, in Messages order; nil
// when none is.
func (x *IDIndex) Lookup(id string) []MessageRef {
	if len(x.slots) == 0 {
		return nil
	}
	var found []int
	mask := uint64(len(x.slots) - 1)
	for j := fnvString(fnvOffset, id) & mask; x.slots[j] != 0; j = (j + 1) & mask {
		if pos := int(x.slots[j] - 1); x.ref(pos).Message().HasID(id) {
			found = append(found, pos)
		}
	}
	for pos := maxIndexed; pos < x.offs[len(x.dests)]; pos++ { // past what the slots hold
		if x.ref(pos).Message().HasID(id) {
			found = append(found, pos)
		}
	}
	if len(found) == 0 {
		return nil
	}
	sort.Ints(found)
	out := make([]MessageRef, len(found))
	for k, pos := range found {
		out[k] = x.ref(pos)
	}
	return out
}

// maxIndexed messages at most are in the slots (a position plus one fits
// in 32 bits).
const maxIndexed = 1<<32 - 2

// ref is the message at position pos.
func (x *IDIndex) ref(pos int) MessageRef {
	i := sort.Search(len(x.dests), func(i int) bool { return x.offs[i+1] > pos })
	return MessageRef{Destination: x.dests[i], Index: pos - x.offs[i]}
}

// FNV-1a, 64 bits.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnvString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * fnvPrime
	}
	return h
}

func fnvBytes(h uint64, b []byte) uint64 {
	for _, c := range b {
		h = (h ^ uint64(c)) * fnvPrime
	}
	return h
}

// PendingIndex returns the position among Pending (delivery order) of the
// queue's message Messages[i], if a restarted broker delivers it.
func (d *Destination) PendingIndex(i int) (int, bool) { return indexIn(d.delivery, i) }

// InDoubtIndex returns the position among InDoubt of the queue's message
// Messages[i], if a prepared transaction acks it.
func (d *Destination) InDoubtIndex(i int) (int, bool) { return indexIn(d.inDoubt, i) }

// PendingIndex returns the position among Pending of the topic's message
// Destination.Messages[i], if the broker delivers it to the subscription.
func (s *Subscription) PendingIndex(i int) (int, bool) { return indexIn(s.pending, i) }

// InDoubtIndex returns the position among InDoubt of the topic's message
// Destination.Messages[i], if the subscription acked it in a prepared
// transaction.
func (s *Subscription) InDoubtIndex(i int) (int, bool) { return indexIn(s.inDoubt, i) }

// OpenTransactions lists the in-flight and prepared transactions (those
// with Ops), as Transactions does first, without making the finished
// ones.
func (g *Graph) OpenTransactions() []*Transaction {
	var out []*Transaction
	for _, t := range g.txs {
		if t.State == InFlight || t.State == Prepared {
			out = append(out, t)
		}
	}
	return out
}

// indexIn returns k with ix[k] == i. The lists are mostly ascending (store
// order; a prioritized queue's dispatch order departs from it): a binary
// search first, then a scan.
func indexIn(ix []int32, i int) (int, bool) {
	v := int32(i)
	if k := sort.Search(len(ix), func(k int) bool { return ix[k] >= v }); k < len(ix) && ix[k] == v {
		return k, true
	}
	for k, j := range ix {
		if j == v {
			return k, true
		}
	}
	return 0, false
}
