package kahaindex

import "strings"

// StreamFast is Stream for a caller that wants the order indexes'
// messages without waiting for the rest: it reads db.data in two passes,
// one that reads what Stream hands the sink (each destination's order
// index, then its subscriptions) and one that reads the message-id and
// location indexes, which the broker reads too (damage there is the
// index's) but which give the sink nothing. The second pass runs on a
// goroutine of its own, beside the first, once sink.CheckAfter is closed
// (nil: at once).
//
// When the two passes read a clean index — neither fails nor the second
// notes anything, no page is read by both as different objects, together
// they stay within the reads' budget, the free list hands out no page
// either read (freeListClash) — what the sink was handed and the
// index returned are Stream's: the passes read the pages Stream reads,
// each pass in Stream's order, and no page of one could change how the
// other reads. Otherwise StreamFast calls sink.Restart and reads the index
// again with Stream, whose result it returns: a damaged index costs a
// second read, and its errors and notes are Stream's, in Stream's order.
// A sink without Restart gets Stream.
func StreamFast(dir string, sink Sink) (*Index, error) {
	if sink.Restart == nil {
		return Stream(dir, sink)
	}
	files, closeAll, err := openSources(dir, "db")
	if err != nil {
		return nil, err
	}
	defer closeAll()
	return streamFast(files, sink)
}

// StreamBytesFast is StreamFast on the contents of db.data, db.redo and
// db.free (Parse's arguments).
func StreamBytesFast(data, redo, free []byte, sink Sink) (*Index, error) {
	if sink.Restart == nil {
		return StreamBytes(data, redo, free, sink)
	}
	return streamFast(byteSources("db", data, redo, free), sink)
}

func streamFast(files [3]source, sink Sink) (*Index, error) {
	type pass struct {
		ix  *Index
		pf  *pageFile
		err error
	}
	checked := make(chan pass, 1)
	failed := make(chan struct{}) // the first pass failed: no need for the second
	go func() {
		if sink.CheckAfter != nil {
			select {
			case <-sink.CheckAfter:
			case <-failed:
				checked <- pass{}
				return
			}
		}
		ix, pf, err := loadPart(files[0], files[1], files[2], &Sink{}, partCheck)
		checked <- pass{ix, pf, err}
	}()
	ix, pf, err := loadPart(files[0], files[1], files[2], &sink, partOrder)
	if err != nil || ix == nil || ix.Fresh {
		close(failed)
	}
	c := <-checked
	if err == nil && c.err == nil && ix != nil && !ix.Fresh && c.ix != nil && len(c.ix.Notes) == 0 &&
		pf.read+c.pf.read <= pf.budget && sameObjects(&pf.cache, &c.pf.cache) && !freeListClashes(pf, c.pf) {
		ix.shape = mergeShapes(ix.shape, c.ix.shape)
		ix.LocationShapes = c.ix.LocationShapes // the second pass reads the location indexes
		ix.LocationKeys = c.ix.LocationKeys
		return ix, nil
	}
	sink.Restart()
	return load(files[0], files[1], files[2], &sink)
}

// freeListClashes reports whether the free list clashes with the pages
// either pass read: Stream then notes it (checkFreeList).
func freeListClashes(a, b *pageFile) bool {
	_, _, clash := a.freeListClash(b)
	return clash
}

// sameObjects reports whether no page is in both caches as different
// objects (both passes load every destination: those pages they hold
// alike; a page that is both an order index node and a location index
// node, say, is one the broker's reading order decides about).
func sameObjects(a, b *pageCache) bool {
	for i := range min(len(a.pages), len(b.pages)) {
		x, y := a.pages[i], b.pages[i]
		if x.kind != 0 && y.kind != 0 && x != y {
			return false
		}
	}
	for id, x := range a.other {
		if y, ok := b.other[id]; ok && x != y {
			return false
		}
	}
	return true
}

// mergeShapes is what Stream's shape would be: the first pass's, and
// the second's message-id and location indexes (the rest of what the
// second pass counts, it read as the first did, loading the destinations).
func mergeShapes(order, check shape) shape {
	add := func(dst *map[string]int, src map[string]int) {
		for what, n := range src {
			if strings.HasSuffix(what, " message-id index") || strings.HasSuffix(what, " location index") {
				if *dst == nil {
					*dst = map[string]int{}
				}
				(*dst)[what] += n
			}
		}
	}
	add(&order.multiPage, check.multiPage)
	add(&order.branches, check.branches)
	return order
}
