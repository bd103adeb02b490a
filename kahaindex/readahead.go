package kahaindex

import (
	"encoding/binary"
	"os"
	"sync/atomic"
)

// Reading the leaves of a B-tree ahead of its iteration.
//
// The passes of StreamFast read some 53,000 pages of a 213 MB db.data (the
// bench's broker store), one pread each, in an order no window of the
// file serves: the B-trees' pages are spread over the file. A pread costs
// 2 µs of CPU however small; 64 reads handed to the kernel in one
// io_submit (Linux AIO, which reads a cached page of a buffered file
// within the call) cost about 1 µs a page, the whole then 60 ms less CPU
// a run (aiobench: 127 against 52 ms for 53,500 cached pages).
//
// An iteration goes along the leaves' next links, so which leaves follow
// is known from the branch nodes above them: the descent to the first
// leaf reads the branches on its way down, and the rest of the lowest
// branches are peeked at (read and parsed here, not loaded: nothing of
// them is counted, cached or shaped, as the broker does not read them).
// The leaves so predicted are read in batches into a readAhead, which
// pageFile.readAt takes them from as the iteration loads them: the bytes
// a pread would have read then, every check, count and error of the load
// the same. Where the links go elsewhere than the branches say (a damaged
// tree), or a branch cannot be peeked at, reading ahead stops and every
// page is read on its own, as before.

// aheadBatch is how many leaves a batch reads at most (and the AIO
// context's depth); aheadBytes bounds the batch's buffer for large pages.
const (
	aheadBatch = 64
	aheadBytes = 1 << 20
)

// readAhead holds pages read ahead of their loads, until taken.
type readAhead struct {
	f        *os.File
	batch    pageBatcher
	pageSize int
	offs     []int64  // offsets of the pages the slots hold (-1: taken)
	next     int      // where take looks first (pages are taken in order)
	taken    int64    // pages taken (aheadStats)
	bufs     [][]byte // the slots' pages, of one allocation
	whole    []bool   // which slots the last batch read whole
}

// aheadStats count, over the process, the pages taken from read-aheads,
// the branches peeked at and the iterations that stopped reading ahead
// (the tests see each way taken).
var aheadStats struct{ taken, peeked, stopped atomic.Int64 }

// pageBatcher reads pages of f at offs into bufs (at most aheadBatch),
// each its page's size, and reports which were read whole
// (readahead_aio.go); release hands it back when the read-ahead is over.
type pageBatcher interface {
	readPages(f *os.File, bufs [][]byte, offs []int64, whole []bool)
	release()
}

// newReadAhead returns a read-ahead of pages of pageSize bytes of f, nil
// where the platform has no batched reads (or they cannot be set up).
func newReadAhead(f *os.File, pageSize int) *readAhead {
	if f == nil || pageSize <= 0 || noReadAhead {
		return nil
	}
	slots := min(aheadBatch, max(aheadBytes/pageSize, 1))
	b := newPageBatcher()
	if b == nil {
		return nil
	}
	a := &readAhead{f: f, batch: b, pageSize: pageSize, offs: make([]int64, 0, slots), whole: make([]bool, slots)}
	buf := make([]byte, slots*pageSize)
	for i := range slots {
		a.bufs = append(a.bufs, buf[i*pageSize:(i+1)*pageSize:(i+1)*pageSize])
	}
	return a
}

// noReadAhead turns reading ahead off (tests compare with and without).
var noReadAhead bool

func (a *readAhead) close() {
	if a != nil {
		a.batch.release()
		aheadStats.taken.Add(a.taken)
	}
}

// slots is how many pages a batch reads at most.
func (a *readAhead) slots() int { return len(a.bufs) }

// read drops what a holds and reads the pages at offs (at most slots()).
func (a *readAhead) read(offs []int64) {
	offs = offs[:min(len(offs), a.slots())]
	whole := a.whole[:len(offs)]
	clear(whole)
	a.batch.readPages(a.f, a.bufs[:len(offs)], offs, whole)
	a.offs, a.next = a.offs[:0], 0
	for i, off := range offs {
		if !whole[i] {
			off = -1
		}
		a.offs = append(a.offs, off)
	}
}

// take copies the page at off into b (a page's size) if a holds it, and
// forgets it.
func (a *readAhead) take(off int64, b []byte) bool {
	if a == nil || len(b) != a.pageSize || off < 0 {
		return false
	}
	for k := range a.offs {
		i := (a.next + k) % len(a.offs)
		if a.offs[i] == off {
			copy(b, a.bufs[i])
			a.offs[i], a.next = -1, i+1
			a.taken++
			return true
		}
	}
	return false
}

// leafAhead follows an iteration of t's leaves with the branches above
// them, reading the leaves it is about to load in batches (see above).
// levels are the branches from the root down, each with the child the
// iteration is in (the lowest: the leaf it loaded last).
type leafAhead[K, V any] struct {
	t      *btree[K, V]
	key    func(b []byte, i int) (int, bool) // passes over a key of t's
	levels []aheadLevel
	queue  []int64 // leaves read ahead, in the order the iteration is to load them
	off    bool
	page   []byte // a peeked branch's page
}

type aheadLevel struct {
	children []int64
	at       int
}

// newLeafAhead returns the read-ahead of an iteration of t, nil when t or
// its page file does not read ahead.
func (t *btree[K, V]) newLeafAhead() *leafAhead[K, V] {
	if t.aheadKey == nil || t.pf.ahead == nil {
		return nil
	}
	return &leafAhead[K, V]{t: t, key: t.aheadKey}
}

// down records that the descent goes from branch n to its child at.
func (a *leafAhead[K, V]) down(n *node[K, V], at int) {
	if a != nil {
		a.levels = append(a.levels, aheadLevel{children: append([]int64(nil), n.children...), at: at})
	}
}

// before is called before the iteration loads leaf id by a next link.
func (a *leafAhead[K, V]) before(id int64) {
	if a == nil || a.off {
		return
	}
	if len(a.queue) == 0 {
		a.fill()
	}
	if len(a.queue) == 0 || a.queue[0] != id {
		// the links go elsewhere than the branches say (or nothing is
		// known ahead): every page on its own from here
		a.off = true
		aheadStats.stopped.Add(1)
		return
	}
	a.queue = a.queue[1:]
}

// fill reads the next batch of leaves the branches name.
func (a *leafAhead[K, V]) fill() {
	pf := a.t.pf
	limit := pf.ahead.slots()
	for len(a.queue) < limit && a.advance() {
		low := &a.levels[len(a.levels)-1]
		for low.at+1 < len(low.children) && len(a.queue) < limit {
			low.at++
			a.queue = append(a.queue, low.children[low.at])
		}
	}
	if len(a.queue) == 0 {
		return
	}
	offs := make([]int64, 0, len(a.queue))
	for _, id := range a.queue {
		off := pf.toOffset(id)
		if id < 0 || off < 0 || off+int64(pf.pageSize) > pf.data.size {
			break
		}
		offs = append(offs, off)
	}
	pf.ahead.read(offs)
}

// advance makes sure the lowest branch has a leaf after the one the
// iteration is at, moving to the next lowest branch (peeked at) when it
// has none; false: there is no next one, or it could not be read.
func (a *leafAhead[K, V]) advance() bool {
	if len(a.levels) == 0 {
		return false
	}
	low := len(a.levels) - 1
	if a.levels[low].at+1 < len(a.levels[low].children) {
		return true
	}
	// up to a branch with a child after the one the iteration is under,
	// then down its next child's first children
	up := low - 1
	for up >= 0 && a.levels[up].at+1 >= len(a.levels[up].children) {
		up--
	}
	if up < 0 {
		return false
	}
	a.levels[up].at++
	for l := up + 1; l <= low; l++ {
		id := a.levels[l-1].children[a.levels[l-1].at]
		kids, ok := a.peekBranch(id, a.levels[l].children[:0])
		if !ok {
			a.levels = a.levels[:0]
			return false
		}
		a.levels[l] = aheadLevel{children: kids, at: 0}
	}
	a.levels[low].at = -1 // the first leaf is next
	return true
}

// peekBranch reads the children of the branch node in page id, a node in
// one page, into kids, without loading it (see above).
func (a *leafAhead[K, V]) peekBranch(id int64, kids []int64) ([]int64, bool) {
	pf := a.t.pf
	aheadStats.peeked.Add(1)
	off := pf.toOffset(id)
	if id < 0 || off < 0 || off+int64(pf.pageSize) > pf.length {
		return nil, false
	}
	if a.page == nil {
		a.page = make([]byte, pf.pageSize)
	}
	if pf.readAt(a.page, off) != nil || a.page[0] != pageEnd {
		return nil, false
	}
	end := int(int32(binary.BigEndian.Uint64(a.page[9:17])))
	if end < pageHeaderSize || end > len(a.page) {
		return nil, false
	}
	b := a.page[:end]
	i := pageHeaderSize
	if i+2 > len(b) {
		return nil, false
	}
	count := int(int16(binary.BigEndian.Uint16(b[i:])))
	i += 2
	if count < 0 {
		return nil, false
	}
	for range count {
		var ok bool
		if i, ok = a.key(b, i); !ok {
			return nil, false
		}
	}
	if i+1 > len(b) || b[i] != 1 || (len(b)-i-1)/8 < count+1 {
		return nil, false
	}
	i++
	for range count + 1 {
		kids = append(kids, int64(binary.BigEndian.Uint64(b[i:])))
		i += 8
	}
	return kids, true
}
