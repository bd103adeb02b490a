package kahaindex

// The free list against the index: a cleanly stopped broker writes to
// db.free the pages it does not use, and the broker that loads them takes
// its next pages from that list, in order (SequenceSet.removeFirstSequence),
// and writes over them: while it replays the journal past the index's last
// update, at a B-tree node's split, at the next checkpoint. A list that
// names a page the index uses is damage that the broker meets at its first
// allocation: a real 5.17.2 broker started on seed 190 (a journal tail to
// replay at start) with one of its index's pages put before the list's own
// failed to start in most cases (ClassCastException, NumberFormatException:
// a node written over with another's), and one with a page id past what a
// file can hold (negative, huge) failed to write it. A broker with nothing
// to write at start (seed 496) starts and cleans up as usual: there the
// check says less than the broker, which is what damage costs.

// usedPages marks the pages a stream loaded: every page of the index the
// reader read, head or continuation.
type usedPages struct{ bits []uint64 }

func (u *usedPages) mark(id, pages int64) {
	if id < 0 || id >= pages {
		return
	}
	if u.bits == nil {
		u.bits = make([]uint64, (pages+63)/64)
	}
	u.bits[id/64] |= 1 << (id % 64)
}

func (u *usedPages) has(id int64) bool {
	return id >= 0 && id/64 < int64(len(u.bits)) && u.bits[id/64]&(1<<(id%64)) != 0
}

// freeListClash returns the first page of the free list that the broker
// would write over something with, and why: a page the index uses (read
// by pf or by any of also, the passes of one read), or one at an offset
// no file can have (negative, past maxFileOffset). Ranges whose first page is past their last are skipped, as
// the broker's allocation skips them.
func (pf *pageFile) freeListClash(also ...*pageFile) (int64, string, bool) {
	passes := append([]*pageFile{pf}, also...)
	for _, r := range pf.info.FreeList {
		if r.First > r.Last {
			continue
		}
		if r.First < 0 || r.Last > pf.maxPageID() {
			id := r.First
			if id >= 0 {
				id = max(id, pf.maxPageID()+1)
			}
			return id, "at an offset no file can have", true
		}
		for id := r.First; id <= min(r.Last, pf.info.PageCount-1); id++ {
			for _, p := range passes {
				if !p.used.has(id) {
					continue
				}
				what := "a page of the index"
				if e, ok := p.cache.get(id); ok {
					what = kindNames[e.kind]
				}
				return id, "in use: " + what, true
			}
		}
	}
	return 0, "", false
}

// maxFileOffset is the largest db.data the check lets the broker grow to
// by writing a page the free list hands out past the file's end: 16 TiB,
// ext4's largest file (4 KiB blocks). Past the file but below that, the
// write grows the file, as seed 190's broker did with its list moved past
// its 95 pages, and with a page id flipped to an offset of 2^43; flipped
// to 2^44 and more, the write failed ("Invalid argument").
const maxFileOffset = 1 << 44

// maxPageID is the last page id whose page ends within maxFileOffset.
func (pf *pageFile) maxPageID() int64 {
	return (maxFileOffset-fileHeaderSize)/int64(pf.pageSize) - 1
}

// checkFreeList notes a free list that clashes with the index as damage.
func (r *reader) checkFreeList() {
	if id, why, ok := r.pf.freeListClash(); ok {
		r.note(Damage, "", id, "the free list (db.free) hands out page %d, %s: the broker's first page allocations take the list's pages in order and write over them", id, why)
	}
}
