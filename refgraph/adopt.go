package refgraph

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"runtime/trace"
	"slices"
	"sort"
	"strings"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/kahaindex"
)

// ErrIndexRebuild: the index does not load the way a broker loads it (it
// would log "Index corrupted. Recovering the index through journal replay",
// discard db.data and replay the whole journal). Load and the analysis
// cache then replay again without the index (WithoutIndex).
var ErrIndexRebuild = errors.New("refgraph: the broker discards this index and rebuilds it from the journal")

// WithoutIndex is o for a broker that rebuilds its index from the journal.
func WithoutIndex(o Options) Options {
	o.Index, o.LoadIndex, o.IndexStamp = nil, nil, ""
	return o
}

// A broker restarted with its index starts from the state db.data holds
// and applies only the records from the recovery position on. The records
// before that position were applied by the broker that wrote them, with
// the rules of a running broker, across its own restarts and crash
// recoveries (which reset sequence counters and replay with other rules),
// in the order its threads took the index lock — which the journal does
// not always tell. So when the index can be read (Options.LoadIndex), the
// replay adopts its state at the recovery position: destinations with
// their order index, durable subscriptions with their last-ack positions
// and ack-position sets, the next sequence of each destination. The
// records before the position are still replayed, with the running
// broker's rules, for what the index does not keep: the priority, size
// and kind of each message's record (found by location) and the
// explanations of the files. Without a readable index that emulation is
// the state (Options.LoadIndex nil, or an index the broker would rebuild).

// adoptIndex replaces the replayed state by the index's, if there is one
// to adopt and it has not been adopted yet. The index is streamed
// (kahaindex.StreamFast; a restarted stream restarts the adoption), read
// ahead since the replay started (feed.go):
// each destination is adopted as its pages are read, next to the
// replayed state, which is dropped only once the whole index has been
// read (a read that fails leaves it as it was). The details of the
// messages the replay did not keep are taken from their records as the
// replay meets them, and the others' read afterwards, in journal order.
//
// A destination whose messages are all the replay's own, as the
// adoption would make them (the usual case when a broker stopped cleanly:
// the recovery position is the journal's end, and the index and the
// replay agree), takes the replay's order and id indexes as they are
// instead of a copy (curDest.matching): on a store a broker wrote, 840 k
// pending, the replay goroutine's time in the adoption fell from 0.31 to
// 0.09-0.13 s and the peak RSS by 19 MiB (BENCHMARKS.md). Nothing else
// changes: a message that differs in any way makes the destination build
// its own indexes, from the messages matched so far on.
func (b *Builder) adoptIndex() error {
	if b.adopted || b.opts.LoadIndex == nil || !b.hasRecovery {
		return nil
	}
	b.adopted = true
	// for kahafs' hidden --trace (go tool trace: user-defined regions)
	defer trace.StartRegion(context.Background(), "refgraph: adopt the index").End()
	a := b.newAdoption()
	var ix *kahaindex.Index
	var err error
	if f := b.feed; f != nil {
		b.feed = nil
		ix, err = f.replay(a.sink(), a.keyed)
	} else {
		ix, err = b.opts.LoadIndex(a.sink())
	}
	var ce *kahaindex.CorruptionError
	switch {
	case errors.As(err, &ce) && ce.AtLoad:
		a.discard()
		return fmt.Errorf("%w: %v", ErrIndexRebuild, err)
	case err != nil:
		// the broker loads it and meets the damage later, or kahafs could
		// not read it: the journal's own account stands
		a.discard()
		b.warnf("index not used: %v", err)
		b.indexDamage = append(b.indexDamage, fmt.Sprintf("it could not be used: %v", err))
		return nil
	}
	if ix == nil || ix.Fresh {
		// the index's head had a recovery position, the index no page
		// (db.data changed while it was read): nothing of it is known
		a.discard()
		b.indexDamage = append(b.indexDamage, "it holds no index, where its head names a recovery position")
		b.warnf("index not used: %s", b.indexDamage[len(b.indexDamage)-1])
		return nil
	}
	a.finish(ix)
	return nil
}

// adoption is the adoption of one index as it streams in.
type adoption struct {
	b *Builder
	// the replayed state (old) and the index's (dests: in index order,
	// nil for a destination of an unknown type; byType: as b.dests)
	old map[string]*dest // by key
	// oldMax: the largest producer sequence of old's ids, by prefix (-1:
	// none); an id past it is not old's
	oldMax   []int64
	oldKnown []knownRecord // old's messages by location (made when first needed)
	madeOld  bool
	// the largest location of old's messages (made when first needed)
	oldLast    uint64 // locKey
	hasOldLast bool
	subSize    map[[2]int32]int32
	dests      []*dest
	byType     [4]map[string]*dest
	keys       []string
	cur        curDest                // the destination being read
	perKey     map[string][]IndexDiff // diffs of the index destinations the replay has too
	idxOnly    []IndexDiff            // index-only destinations, in index order
	seen       map[string]bool
	// The adopted messages whose details are read from their records
	// carry flagDetails in their entries (unmet of them, at most, are
	// left: a destination the replay removes takes its own along). The
	// ones a later entry of the same sequence replaced are gone from the
	// entries: their ids are in replaced, and they are listed to be
	// read, by data file as they come (pendBy, pendAt: the last file's),
	// then, from finish on, in journal order, one list a file (pend).
	unmet int
	// early: those of them recorded before the recovery position (in
	// adoption order, then in journal order), whose records readEarly
	// reads while the replay goes on (earlyRead, once earlyDone closes)
	early     []pendingDetail
	earlyRead []detailRead
	earlyDone chan struct{}
	pendBy    map[int32]*pendList
	pendAt    *pendList
	pendFile  int32
	pend      [][]pendingDetail
	replaced  map[pendingDetail]msgKey
	// given: old's destinations whose indexes an adopted one took (by
	// it), taken: the other way round (curDest.matching)
	given map[*dest]*dest
	taken map[*dest]*dest
	nmsg  uint32 // messages adopted so far
	// prefixes: the id table's prefix (+1) by the feed's number (intern)
	prefixes []uint32
	warns    []adoptWarning
	warnAt   int // where the adoption's warnings go in Builder.warnings
	nextFile int // meet's place in pend: pend[nextFile][next]
	next     int
	c        codec.Command
}

// curDest is the index's destination being read.
type curDest struct {
	d       *dest // nil: skipped (unknown type)
	old     *dest // the replay's destination of the same key
	di      int   // in adoption.dests
	count   int   // messages read
	onlyN   int   // messages old does not hold
	only    []string
	skipped bool
	hint    int // the index's count of its messages (at most 1<<20)
	// matching: every message of d so far is old's entry at its
	// sequence, as keyed would make it (matched: their sequences, each
	// class's past the one before: last), and d has no order or id index
	// of its own yet. A destination whose messages are all of old's
	// takes old's indexes as they are (done), instead of a copy.
	matching bool
	matched  []int64
	last     [3]int64 // by kahaindex.Class
}

// knownRecord is what the replay knew of the message at a location.
type knownRecord struct {
	at         uint64 // locKey of its location
	size, prio int32
	flags      uint8
}

// locKey orders locations as Location.Less does (signed file, then
// signed offset), in one integer.
func locKey(l codec.Location) uint64 {
	const sign = 1 << 31
	return uint64(uint32(l.File)^sign)<<32 | uint64(uint32(l.Offset)^sign)
}

// pendingDetail is an adopted message whose record is read by finish.
type pendingDetail struct {
	loc  codec.Location
	seq  int64
	ord  uint32 // its place among the adopted messages
	di   uint32 // adoption.dests
	done bool   // the replay met its record (meet)
}

// adoptWarning is a warning of the adoption, with its place: 2n before
// the n+1st message's record is read, 2n+1 for the n+1st message.
type adoptWarning struct {
	at   uint64
	text string
}

func (b *Builder) newAdoption() *adoption {
	a := &adoption{b: b, old: map[string]*dest{}, subSize: map[[2]int32]int32{}, perKey: map[string][]IndexDiff{}, seen: map[string]bool{},
		given: map[*dest]*dest{}, taken: map[*dest]*dest{}}
	for i := range a.byType {
		a.byType[i] = map[string]*dest{}
	}
	for _, m := range b.dests {
		for _, d := range m {
			a.old[d.key] = d
			for _, s := range d.subs {
				a.subSize[[2]int32{s.loc.File, s.loc.Offset}] = s.loc.Size
			}
		}
	}
	return a
}

func (a *adoption) sink() kahaindex.Sink {
	return kahaindex.Sink{Destination: a.destination, Message: a.message, Done: a.done, Restart: a.restart}
}

// restart starts the adoption again: the stream reads the index again
// from its first destination (kahaindex.StreamFast met something its
// passes cannot tell alone).
func (a *adoption) restart() {
	a.discard()
	*a = *a.b.newAdoption()
}

func (a *adoption) warn(at uint64, format string, args ...any) {
	a.warns = append(a.warns, adoptWarning{at, fmt.Sprintf(format, args...)})
}

// destination starts the index's destination xd.
func (a *adoption) destination(xd *kahaindex.Destination) {
	b := a.b
	cur := &a.cur
	*cur = curDest{di: len(a.dests), old: a.old[xd.Key]}
	if xd.Type < 0 || int(xd.Type) >= len(b.dests) {
		a.warn(2*uint64(a.nmsg), "index: destination %q has an unknown type", xd.Key)
		cur.skipped = true
		a.dests = append(a.dests, nil)
		return
	}
	hint := 0
	if xd.Stats != nil && xd.Stats.Count > 0 {
		hint = int(min(xd.Stats.Count, 1<<20))
	}
	cur.d = &dest{typ: xd.Type, name: b.names.get([]byte(xd.Name)), key: xd.Key, topic: xd.Type.IsTopic() || xd.Topic,
		nextSeq: xd.NextSeq}
	cur.hint = hint
	if cur.old != nil && a.given[cur.old] == nil && !b.opts.noTake {
		cur.matching = true
		for i := range cur.last {
			cur.last[i] = math.MinInt64
		}
	} else {
		cur.d.entries, cur.d.ids = newOrderIndex(hint), newIDIndex(hint)
	}
	a.dests = append(a.dests, cur.d)
}

// matches reports whether the index's message m, of id k, is the
// replay's entry at its sequence, as keyed would make it: the same id,
// location (with its size), class and details, and the replay's entry
// of that id. Each class's matches come by ascending sequence, so that
// no entry of the replay's is matched twice.
func (a *adoption) matches(k msgKey, m *kahaindex.StreamMessage) bool {
	cur := &a.cur
	c := int(m.Class)
	if c < 0 || c >= len(cur.last) || m.Seq <= cur.last[c] {
		return false
	}
	o := cur.old
	if seq, ok := o.ids.find(k); !ok || seq != m.Seq {
		return false
	}
	oe, ok := o.entries.find(m.Seq)
	if !ok || oe.id != k || oe.loc != m.Loc || oe.class != int8(m.Class) || oe.flags&flagDetails != 0 {
		return false
	}
	cur.last[c] = m.Seq
	return true
}

// unmatch ends the current destination's matching: it gets indexes of
// its own, with the entries keyed would have made of the messages
// matched so far.
func (a *adoption) unmatch() {
	cur := &a.cur
	d, o := cur.d, cur.old
	if t := a.b.opts.takes; t != nil && len(cur.matched) > 0 {
		t.unmatched++
	}
	d.entries, d.ids = newOrderIndex(cur.hint), newIDIndex(cur.hint)
	for _, seq := range cur.matched {
		oe, _ := o.entries.find(seq)
		a.b.ids.ref(oe.id)
		d.ids.add(oe.id, seq)
		d.entries.swap(seq, oe)
	}
	cur.matching, cur.matched = false, nil
}

// message adopts one message of the order index.
func (a *adoption) message(xd *kahaindex.Destination, m *kahaindex.StreamMessage) {
	a.keyed(xd, m, feedKey{})
}

// keyed is message for the feed, which split the id (fk).
func (a *adoption) keyed(_ *kahaindex.Destination, m *kahaindex.StreamMessage, fk feedKey) {
	b, cur := a.b, &a.cur
	cur.count++
	if cur.skipped {
		return
	}
	d := cur.d
	k := a.intern(m.ID, fk)
	if cur.matching {
		if a.matches(k, m) {
			b.ids.release(k) // old's entry holds it
			if cur.matched == nil {
				// (sized at once: 840 k sequences grown by appends cost
				// 40 ms; none for a destination whose first message
				// differs)
				cur.matched = make([]int64, 0, cur.hint)
			}
			cur.matched = append(cur.matched, m.Seq)
			a.nmsg++
			d.count++
			d.bytes += int64(m.Loc.Size)
			return
		}
		a.unmatch()
	}
	// the replay's entry of the id in the destination of the same key
	var oe entry
	var byID bool
	if o := cur.old; o != nil {
		// (most of an index's messages are recorded after the recovery
		// position, their producers' sequences past the replay's)
		if a.oldHas(k) {
			if seq, ok := o.ids.find(k); ok {
				oe, byID = o.entries.find(seq)
			}
		}
		if !byID || oe.id != k {
			a.indexOnly(m.ID)
		}
	}
	if _, dup := d.ids.add(k, m.Seq); dup {
		b.ids.release(k)
		return
	}
	e := entry{id: k, loc: m.Loc, class: int8(m.Class)}
	if byID && sameLoc(oe.loc, m.Loc) {
		e.prio, e.size, e.flags = oe.prio, oe.size, oe.flags
	} else if o, ok := a.knownAt(m.Loc); ok {
		e.prio, e.size, e.flags = o.prio, o.size, o.flags
	} else {
		// its details come from its record: met by the replay from
		// the recovery position on (Builder.meetDetails), or read by
		// readDetails; until then its size holds its place. One
		// recorded before the position the replay may know by its
		// location: readEarly looks there first.
		e.flags, e.size = flagDetails, int32(a.nmsg)
		a.unmet++
		if m.Loc.Less(b.phaseBStart) {
			// the replay is past its record: read ahead (readEarly)
			a.early = append(a.early, pendingDetail{loc: m.Loc, seq: m.Seq, ord: a.nmsg, di: uint32(cur.di)})
		}
	}
	if old, ok := d.entries.swap(m.Seq, e); ok {
		// another class holds the sequence too: this one replaces it
		if a.replaced == nil {
			a.replaced = map[pendingDetail]msgKey{}
		}
		a.replaced[pendingDetail{loc: old.loc, seq: m.Seq, di: uint32(cur.di)}] = old.id
		if old.flags&flagDetails != 0 {
			// only its warning is left to tell, if its record cannot be
			// read: meet and readDetails look for it by location (or
			// readEarly has it already)
			a.unmet--
			if !old.loc.Less(b.phaseBStart) {
				a.addPending(pendingDetail{loc: old.loc, seq: m.Seq, ord: uint32(old.size), di: uint32(cur.di)})
			}
		}
	}
	a.nmsg++
	d.count++
	d.bytes += int64(m.Loc.Size)
}

// intern is b.ids.intern(id), through the feed's number of its prefix
// (fk.prefix, 0: none): the first id of a prefix is interned, and the
// adoption holds a reference of its own on the prefix (dropPrefixes
// gives it back), so that the others take theirs by number.
func (a *adoption) intern(id []byte, fk feedKey) msgKey {
	ids := a.b.ids
	if fk.prefix == 0 {
		return ids.intern(id)
	}
	if i := int(fk.prefix); i < len(a.prefixes) && a.prefixes[i] != 0 {
		k := msgKey{prefix: a.prefixes[i] - 1, seq: fk.seq}
		ids.ref(k)
		return k
	}
	k := ids.intern(id)
	ids.ref(k)
	if n := int(fk.prefix) + 1; n > len(a.prefixes) {
		a.prefixes = append(a.prefixes, make([]uint32, n-len(a.prefixes))...)
	}
	a.prefixes[fk.prefix] = k.prefix + 1
	return k
}

// dropPrefixes gives back intern's own references.
func (a *adoption) dropPrefixes() {
	for _, p := range a.prefixes {
		if p != 0 {
			a.b.ids.release(msgKey{prefix: p - 1})
		}
	}
	a.prefixes = nil
}

// holdsID reports whether an adopted destination has taken id k (its
// id index has every id the index listed for it).
func holdsID(d *dest, k msgKey) bool {
	_, ok := d.ids.find(k)
	return ok
}

// indexOnly counts a message the replay's destination does not hold,
// keeping the smallest ids.
func (a *adoption) indexOnly(id []byte) {
	cur := &a.cur
	cur.onlyN++
	n := len(cur.only)
	if n == maxDiffIDs && string(id) >= cur.only[n-1] {
		return
	}
	i := sort.SearchStrings(cur.only, string(id))
	for i < n && cur.only[i] == string(id) {
		i++
	}
	if n < maxDiffIDs {
		cur.only = append(cur.only, "")
	}
	copy(cur.only[i+1:], cur.only[i:])
	cur.only[i] = string(id)
}

// pendList is a data file's messages whose details are read from their
// records, as they come: in chunks, so that none is copied as the list
// grows.
type pendList struct {
	chunks [][]pendingDetail
	n      int
}

// pendChunk is the length of a pendList's chunks.
const pendChunk = 1024

// addPending adds p to the messages whose details are read from their
// records. They are kept by data file (a destination's messages come by
// sequence, which is nearly journal order, several destinations and
// priority classes one after the other) in chunks: no array as big as
// all of them is made or copied while they come in, and sortPending
// sorts each file's apart.
func (a *adoption) addPending(p pendingDetail) {
	if a.pendAt == nil || a.pendFile != p.loc.File {
		if a.pendBy == nil {
			a.pendBy = map[int32]*pendList{}
		}
		l := a.pendBy[p.loc.File]
		if l == nil {
			l = &pendList{}
			a.pendBy[p.loc.File] = l
		}
		a.pendAt, a.pendFile = l, p.loc.File
	}
	l := a.pendAt
	if k := len(l.chunks); k == 0 || len(l.chunks[k-1]) == pendChunk {
		l.chunks = append(l.chunks, make([]pendingDetail, 0, pendChunk))
	}
	last := &l.chunks[len(l.chunks)-1]
	*last = append(*last, p)
	l.n++
}

// sortPending puts the messages addPending kept in pend: a list a file,
// by file, each in journal order (and adoption order at one location).
func (a *adoption) sortPending() {
	files := make([]int32, 0, len(a.pendBy))
	most := 0
	for f, l := range a.pendBy {
		files = append(files, f)
		most = max(most, l.n)
	}
	slices.Sort(files)
	a.pend = make([][]pendingDetail, 0, len(files))
	var tmp []pendingDetail
	for _, f := range files {
		l := a.pendBy[f]
		flat := make([]pendingDetail, 0, l.n)
		for _, c := range l.chunks {
			flat = append(flat, c...)
		}
		l.chunks = nil
		if tmp == nil {
			tmp = make([]pendingDetail, most)
		}
		sortFile(flat, tmp)
		a.pend = append(a.pend, flat)
	}
	a.pendBy, a.pendAt = nil, nil
}

// pendingBefore orders a file's pending details: by offset, then by
// adoption (a total order: ord is unique).
func pendingBefore(x, y *pendingDetail) bool {
	return x.loc.Offset < y.loc.Offset || x.loc.Offset == y.loc.Offset && x.ord < y.ord
}

// maxRuns: sortFile merges at most this many ascending runs, and sorts
// anything more broken up.
const maxRuns = 64

// sortFile sorts one file's pending details (pendingBefore) using tmp
// (at least as long). They come as a few ascending runs, one for each
// destination and priority class with messages in the file (a
// destination numbers its messages in journal order): those are merged,
// two at a time, as a natural merge sort does, instead of sorted.
func sortFile(p, tmp []pendingDetail) {
	if len(p) < 2 {
		return
	}
	var bounds [maxRuns + 1]int
	n := 0
	for i := 1; i < len(p); i++ {
		if pendingBefore(&p[i], &p[i-1]) {
			if n++; n == maxRuns {
				slices.SortFunc(p, func(x, y pendingDetail) int {
					if pendingBefore(&x, &y) {
						return -1
					}
					return 1 // never equal: ord is unique
				})
				return
			}
			bounds[n] = i
		}
	}
	runs := append(bounds[:n+1:n+1], len(p))
	src, dst := p, tmp[:len(p)]
	for len(runs) > 2 {
		out := runs[:1]
		for i := 0; i+1 < len(runs); i += 2 {
			if i+2 >= len(runs) { // an odd run out: copied as it is
				copy(dst[runs[i]:runs[i+1]], src[runs[i]:runs[i+1]])
				out = append(out, runs[i+1])
				continue
			}
			mergeRuns(dst[runs[i]:runs[i+2]], src[runs[i]:runs[i+1]], src[runs[i+1]:runs[i+2]])
			out = append(out, runs[i+2])
		}
		runs = out
		src, dst = dst, src
	}
	if &src[0] != &p[0] {
		copy(p, src)
	}
}

// mergeRuns merges the ascending runs x and y into out (len(x)+len(y)),
// x's first at equal keys (there are none).
func mergeRuns(out, x, y []pendingDetail) {
	i, j, k := 0, 0, 0
	for i < len(x) && j < len(y) {
		if pendingBefore(&y[j], &x[i]) {
			out[k] = y[j]
			j++
		} else {
			out[k] = x[i]
			i++
		}
		k++
	}
	k += copy(out[k:], x[i:])
	copy(out[k:], y[j:])
}

// knownAt is what the replay knew of the message at loc, found by
// location in any of its destinations (message found none by id), when
// the index is adopted after the last record. At a recovery position
// within the journal, the replay's state holds only records before it:
// a message recorded from the position on it does not know, and one
// recorded before, readEarly looks up (off the replay's goroutine).
func (a *adoption) knownAt(loc codec.Location) (knownRecord, bool) {
	if a.b.seenPhaseB {
		return knownRecord{}, false
	}
	if !a.hasOldLast {
		// the replay's last message: most of an index's messages the
		// replay did not know are past it (recorded after the recovery
		// position), and need no sorted list of them all
		a.hasOldLast = true
		for _, d := range a.old {
			d.entries.each(func(_ int64, e entry) {
				a.oldLast = max(a.oldLast, locKey(e.loc))
			})
		}
	}
	if locKey(loc) > a.oldLast {
		return knownRecord{}, false
	}
	if !a.madeOld {
		a.madeOld = true
		a.oldKnown = knownRecords(a.old, 0, math.MaxUint64)
	}
	return findKnown(a.oldKnown, loc)
}

// knownRecords are the messages of dests recorded from locKey lo to hi,
// by location.
func knownRecords(dests map[string]*dest, lo, hi uint64) []knownRecord {
	n := 0
	for _, d := range dests {
		n += d.entries.len()
	}
	ks := make([]knownRecord, 0, n)
	for _, d := range dests {
		d.entries.each(func(_ int64, e entry) {
			if at := locKey(e.loc); at >= lo && at <= hi {
				ks = append(ks, knownRecord{at, e.size, e.prio, e.flags})
			}
		})
	}
	slices.SortFunc(ks, func(x, y knownRecord) int { return cmp.Compare(x.at, y.at) })
	return ks
}

// findKnown finds the message at loc in ks (knownRecords).
func findKnown(ks []knownRecord, loc codec.Location) (knownRecord, bool) {
	at := locKey(loc)
	i := sort.Search(len(ks), func(i int) bool { return ks[i].at >= at })
	if i < len(ks) && ks[i].at == at {
		return ks[i], true
	}
	return knownRecord{}, false
}

// oldHas reports whether the replay's state may hold id k: its
// producer's sequence is not past the replay's largest.
func (a *adoption) oldHas(k msgKey) bool {
	if a.oldMax == nil {
		a.makeOldMax()
	}
	return k.seq < 0 || int(k.prefix) < len(a.oldMax) && k.seq <= a.oldMax[k.prefix]
}

// makeOldMax makes oldMax, when first needed: an adoption whose
// destinations all take the replay's indexes (curDest.matching) never
// needs it.
func (a *adoption) makeOldMax() {
	a.oldMax = make([]int64, len(a.b.ids.names))
	for i := range a.oldMax {
		a.oldMax[i] = -1
	}
	for _, d := range a.old {
		d.ids.each(func(k msgKey, _ int64) {
			if k.seq >= 0 {
				a.oldMax[k.prefix] = max(a.oldMax[k.prefix], k.seq)
			}
		})
	}
}

// done ends the index's destination xd: its subscriptions, and how it
// differs from the replay's.
func (a *adoption) done(xd *kahaindex.Destination) {
	b, cur := a.b, &a.cur
	a.keys = append(a.keys, xd.Key)
	took := false
	if cur.matching {
		if o := cur.old; len(cur.matched) == o.entries.len() && o.ids.len() == o.entries.len() {
			// every one of old's messages, and nothing else
			cur.d.entries, cur.d.ids = o.entries, o.ids
			a.given[o], a.taken[cur.d] = cur.d, o
			cur.matching, cur.matched, took = false, nil, true
			if t := b.opts.takes; t != nil {
				t.took++
			}
		} else {
			a.unmatch()
		}
	}
	if d := cur.d; d != nil {
		if xd.Stats != nil {
			d.statDelta = xd.Stats.Count - d.count
		}
		at := 2 * uint64(a.nmsg)
		for _, xs := range xd.Subscriptions {
			if !xs.HasCommand {
				continue // not a subscription for the broker (only in the other structures)
			}
			if err := xs.DecodeCommand(&a.c); err != nil {
				a.warn(at, "index: subscription %s of %s: %v", xs.Key, xd.Key, err)
				continue
			}
			s := &sub{key: b.names.get([]byte(xs.Key)), info: append([]byte(nil), a.c.SubscriptionInfo...), retro: a.c.Retroactive, lastAck: -1}
			if xs.HasLoc {
				s.loc = xs.Loc
				if s.loc.Size == 0 {
					s.loc.Size = b.recordSize(s.loc, a.subSize, func(format string, args ...any) { a.warn(at, format, args...) })
				}
			}
			if xs.HasLastAck {
				s.lastAck = xs.LastAck
			}
			s.carryFirst(cur.old)
			if xs.HasAckPositions {
				for _, r := range xs.AckPositions {
					s.pos.addRange(r.First, r.Last)
				}
				s.hasPos = !s.pos.empty()
			}
			d.subs = append(d.subs, s)
		}
		if d.topic {
			d.acks, d.cache = adoptAckList(d.subs, xd.Indexes.AckPositions, b.names.get)
		}
	}
	old := cur.old
	if old == nil {
		a.idxOnly = append(a.idxOnly, IndexDiff{Kind: "index-only-destination", Destination: xd.Type.Scheme() + "://" + xd.Name, Count: cur.count})
		return
	}
	a.seen[old.key] = true
	q := old.typ.Scheme() + "://" + old.name
	var out []IndexDiff
	var extra []string
	if !took {
		old.entries.each(func(_ int64, e entry) {
			if cur.d != nil && holdsID(cur.d, e.id) {
				return
			}
			extra = append(extra, b.ids.String(e.id))
		})
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		out = append(out, IndexDiff{Kind: "messages", Destination: q, Count: len(extra), MessageIDs: extra[:min(len(extra), maxDiffIDs)]})
	}
	if cur.onlyN > 0 {
		out = append(out, IndexDiff{Kind: "index-only-messages", Destination: q, Count: cur.onlyN, MessageIDs: cur.only})
	}
	subs := map[string]bool{}
	for _, xs := range xd.Subscriptions {
		if xs.HasCommand {
			subs[xs.Key] = true
		}
	}
	for _, s := range old.subs {
		if !subs[s.key] {
			out = append(out, IndexDiff{Kind: "subscription", Destination: q, Subscription: s.key})
		}
		delete(subs, s.key)
	}
	var left []string
	for k := range subs {
		left = append(left, k)
	}
	sort.Strings(left)
	for _, k := range left {
		out = append(out, IndexDiff{Kind: "index-only-subscription", Destination: q, Subscription: k})
	}
	a.perKey[old.key] = out
}

// discard undoes a stream that is not adopted: the replayed state stays.
func (a *adoption) discard() {
	a.dropPrefixes()
	for _, d := range a.dests {
		if d != nil && a.taken[d] == nil {
			d.ids.each(func(k msgKey, _ int64) { a.b.ids.release(k) })
		}
	}
	a.dests = nil
}

// finish adopts what was streamed: the details of the messages the replay
// did not know are read from their records, the replayed state is
// dropped, and the adoption's warnings are told in the order a reading
// of one destination after the other makes them.
func (a *adoption) finish(ix *kahaindex.Index) {
	b := a.b
	a.sortPending()
	// diffs, in the replay's key order, then the index-only destinations
	var oldKeys []string
	for k := range a.old {
		oldKeys = append(oldKeys, k)
	}
	sort.Strings(oldKeys)
	var diffs []IndexDiff
	for _, k := range oldKeys {
		if !a.seen[k] {
			d := a.old[k]
			diffs = append(diffs, IndexDiff{Kind: "destination", Destination: d.typ.Scheme() + "://" + d.name, Count: d.entries.len()})
			continue
		}
		diffs = append(diffs, a.perKey[k]...)
	}
	b.diffs = append(diffs, a.idxOnly...)
	for _, d := range a.old {
		if a.given[d] == nil { // a taken one's references are its own
			d.entries.each(func(_ int64, e entry) { b.ids.release(e.id) })
		}
	}
	for i := range b.dests {
		b.dests[i] = map[string]*dest{}
	}
	clear(b.destCache[:])
	b.indexKeys = b.indexKeys[:0]
	for _, d := range a.dests {
		if d != nil {
			b.dests[d.typ][d.name] = d
			b.indexKeys = append(b.indexKeys, d.key)
		}
	}
	// The broker's cleanup keeps the files of the location indexes' keys
	// (checkpointUpdate visits them), whatever the order indexes say. Where
	// the index is damaged (a note of the reader: damage it read past,
	// structures that disagree), an order index gives another number of
	// messages than its location index has entries, or a location index
	// could not be walked whole, kahafs cannot tell those keys: the index
	// is damaged, and no deletion is predicted (model.indexDamage). A
	// free-marked order-index page of seed 340's store made kahafs call
	// files free that a real broker kept (TestFreeMarkedIndexPageFreesNoMore).
	damage := func(why string) {
		if len(b.indexDamage) < maxIndexDamage {
			b.indexDamage = append(b.indexDamage, why)
		}
	}
	for _, n := range ix.Notes {
		damage(n.String())
	}
	for _, d := range a.dests {
		if d == nil {
			continue
		}
		if keys, ok := ix.LocationKeys[d.key]; ok {
			// checkMissing: a key in a file not in the store
			for _, f := range keys.Files {
				if i, found := slices.BinarySearch(b.keyFiles, f); !found {
					b.keyFiles = slices.Insert(b.keyFiles, i, f)
					b.keyFilesBy = slices.Insert(b.keyFilesBy, i, fmt.Sprintf("the location index of %s://%s", d.typ.Scheme(), d.name))
				}
			}
			var sum uint64
			d.entries.each(func(_ int64, e entry) { sum = kahaindex.SumLocation(sum, e.loc) })
			switch {
			case keys.Count != d.entries.len():
				damage(fmt.Sprintf("destination %q: the order index gives %d messages, the location index has %d entries", d.key, d.entries.len(), keys.Count))
			case keys.Sum != sum:
				damage(fmt.Sprintf("destination %q: the location index's keys are not the locations of the order index's messages", d.key))
			}
		}
		shape := ix.LocationShapes[d.key]
		if shape == nil {
			damage(fmt.Sprintf("destination %q: its location index could not be walked whole (a broker starting on this index may fail: MessageDatabase.recoverIndex walks every location index)", d.key))
		}
		d.locs = adoptedLocTree(shape)
	}
	if len(b.indexDamage) > 0 {
		b.warnf("the broker's index (db.data) is damaged or its structures disagree, so what the broker's cleanup keeps is not known: kahafs predicts no file's deletion (index-damaged): %s", strings.Join(b.indexDamage, "; "))
	}
	b.adoptedIndex = true
	a.dropPrefixes()
	old := a.old // dropped: readEarly looks up its messages by location
	a.warnAt = len(b.warnings)
	b.adopting = a
	// what only the stream needed: b.adopting keeps a until Build, and
	// the replayed state must not live that long next to the adopted one
	a.old, a.oldMax, a.oldKnown, a.subSize, a.perKey, a.seen, a.idxOnly, a.keys = nil, nil, nil, nil, nil, nil, nil, nil
	a.byType = [4]map[string]*dest{}
	a.cur = curDest{}
	a.readEarly(old, len(a.given) > 0)
	a.given, a.taken = nil, nil
}

// detailRead is what the record of an adopted message tells of it: the
// fields detailsFrom fills, or why it could not.
type detailRead struct {
	prio, size int32
	flags      uint8
	err        error
}

func readDetail(c *codec.Command, err error) detailRead {
	var e entry
	if err == nil {
		err = detailsFrom(&e, c)
	}
	return detailRead{e.prio, e.size, e.flags, err}
}

// readEarly starts reading, on a goroutine of its own, the records of
// the adopted messages the replay passed before the recovery position
// without keeping them by their ids (a.early): nothing after the
// position changes them, so their reading overlaps the rest of the
// replay instead of waiting for readDetails. On a store whose durable
// subscription the replay met only late, that is every message stored
// for it before. A message the replay's state (old) holds at the same
// location, under another id or in another destination, takes what the
// replay knew of it instead (knownAt's answer, found off the replay's
// goroutine).
func (a *adoption) readEarly(old map[string]*dest, shared bool) {
	if len(a.early) == 0 {
		return
	}
	early := a.early
	slices.SortFunc(early, comparePending)
	read := make([]detailRead, len(early))
	done := make(chan struct{})
	a.earlyRead, a.earlyDone = read, done
	b := a.b
	lo, hi := locKey(early[0].loc), locKey(early[len(early)-1].loc)
	var known []knownRecord
	if shared {
		// some of old's indexes are adopted destinations' now, which
		// the replay goes on changing: looked up here
		known, old = knownRecords(old, lo, hi), nil
	}
	go func() {
		defer close(done)
		// what the replay knew at their locations (nothing changes the
		// rest of old any more: the replay goes on with the adopted
		// destinations)
		if old != nil {
			known = knownRecords(old, lo, hi)
			old = nil // garbage from here on, as when the adoption finished
		}
		var locs []codec.Location
		var at []int // early's index of locs[i]
		for i, p := range early {
			if k, ok := findKnown(known, p.loc); ok {
				read[i] = detailRead{prio: k.prio, size: k.size, flags: k.flags}
				continue
			}
			locs, at = append(locs, p.loc), append(at, i)
		}
		known = nil
		b.readRecords(locs, func(i int, c *codec.Command, err error) { read[at[i]] = readDetail(c, err) })
	}()
}

// comparePending orders pending details by location, then adoption.
func comparePending(x, y pendingDetail) int {
	if c := cmp.Compare(x.loc.File, y.loc.File); c != 0 {
		return c
	}
	if pendingBefore(&x, &y) {
		return -1
	}
	return 1 // never equal: ord is unique
}

// meet takes the details of adopted messages from the record the replay
// is at (loc, c), when it is theirs: the record readDetails would read.
// A record that is not a message's is left to readDetails (its error is
// a warning).
func (a *adoption) meet(loc codec.Location, c *codec.Command) {
	for a.nextFile < len(a.pend) {
		l := a.pend[a.nextFile]
		if a.next == len(l) {
			a.nextFile, a.next = a.nextFile+1, 0
			continue
		}
		if p := l[a.next].loc; p.File < loc.File || p.File == loc.File && p.Offset < loc.Offset {
			a.next++
			continue
		}
		break
	}
	if c.Type != codec.AddMessageCommand && c.Type != codec.UpdateMessageCommand || a.nextFile == len(a.pend) {
		return
	}
	pend := a.pend[a.nextFile]
	for i := a.next; i < len(pend) && pend[i].loc.File == loc.File && pend[i].loc.Offset == loc.Offset; i++ {
		p := &pend[i]
		if p.done || p.loc.Size != loc.Size {
			continue
		}
		p.done = true
		rk := pendingDetail{loc: p.loc, seq: p.seq, di: p.di}
		if _, replaced := a.replaced[rk]; replaced {
			delete(a.replaced, rk) // readable: nothing to tell
			continue
		}
		d := a.dests[p.di]
		if e, ok := d.entries.find(p.seq); ok && e.loc == p.loc {
			if err := detailsFrom(&e, c); err == nil {
				d.entries.set(p.seq, e)
			}
		}
	}
}

// finishAdoption reads the records of the adopted messages the replay
// has not met (readDetails) and tells the adoption's warnings where the
// adoption made them. Build and AppendState call it: nothing before them
// looks at the details.
func (b *Builder) finishAdoption() {
	a := b.adopting
	if a == nil {
		return
	}
	b.adopting = nil
	a.readDetails()
	sort.SliceStable(a.warns, func(i, j int) bool { return a.warns[i].at < a.warns[j].at })
	if len(a.warns) == 0 {
		return
	}
	at := min(a.warnAt, len(b.warnings))
	all := make([]string, 0, len(b.warnings)+len(a.warns))
	all = append(all, b.warnings[:at]...)
	for _, w := range a.warns {
		all = append(all, w.text)
	}
	all = append(all, b.warnings[at:]...)
	b.warnings = all[:min(len(all), maxWarnings)]
}

// readDetails fills the priority, size and kind of the messages whose
// records the replay did not keep, reading the records in journal order.
func (a *adoption) readDetails() {
	b := a.b
	if a.earlyDone != nil {
		<-a.earlyDone
		for i, p := range a.early {
			a.takeDetail(p, a.earlyRead[i])
		}
	}
	a.early, a.earlyRead, a.earlyDone = nil, nil, nil
	var pend []pendingDetail
	for _, l := range a.pend {
		for _, p := range l {
			if !p.done {
				pend = append(pend, p)
			}
		}
	}
	a.pend = nil
	if a.unmet > 0 {
		// the messages whose records the replay did not meet, with
		// the replaced ones left, in journal order (and adoption order
		// at one location, as the lists of sortPending)
		for di, d := range a.dests {
			if d == nil {
				continue
			}
			d.entries.each(func(seq int64, e entry) {
				if e.flags&flagDetails != 0 {
					pend = append(pend, pendingDetail{loc: e.loc, seq: seq, ord: uint32(e.size), di: uint32(di)})
				}
			})
		}
		slices.SortFunc(pend, comparePending)
	}
	a.unmet = 0
	if len(pend) == 0 {
		return
	}
	locs := make([]codec.Location, len(pend))
	for i, p := range pend {
		locs[i] = p.loc
	}
	b.readRecords(locs, func(i int, c *codec.Command, err error) { a.takeDetail(pend[i], readDetail(c, err)) })
}

// takeDetail gives the adopted message p what its record told (r), or
// warns that it could not be read.
func (a *adoption) takeDetail(p pendingDetail, r detailRead) {
	b := a.b
	d := a.dests[p.di]
	e, ok := d.entries.find(p.seq)
	own := ok && e.loc == p.loc
	waiting := own && e.flags&flagDetails != 0
	var k msgKey
	rk := pendingDetail{loc: p.loc, seq: p.seq, di: p.di}
	if id, replaced := a.replaced[rk]; replaced {
		// a later entry of the index took the sequence: only its
		// warning is left to tell
		delete(a.replaced, rk)
		k, own = id, false
	} else if !own {
		return
	} else {
		k = e.id
	}
	if err := r.err; err == nil {
		// detailsFrom's (a message waiting for it has no other flag)
		e.prio, e.size, e.flags = r.prio, r.size, e.flags&^flagDetails|r.flags
	} else {
		// the broker reads the record when it delivers the message:
		// say so, keep what the index tells (and do not save this
		// state: the journal may yet grow to hold it). A record past
		// the end of its file (or in a missing file) is said once,
		// with the others of its file and destination, by the
		// lost-messages warning.
		if !errors.Is(err, codec.ErrTruncated) && !errors.Is(err, codec.ErrMissingFile) {
			a.warn(2*uint64(p.ord)+1, "index: %s of %s at %s: %v", b.ids.String(k), d.key, p.loc, err)
		}
		b.indexAhead = true
		e.flags = e.flags&^flagDetails | flagUnreadable
		e.size = 0
		e.prio = classPriority(e.class)
		if e.class != classDEF {
			e.flags |= flagPrioSupported
		}
	}
	if own {
		if waiting {
			a.unmet--
		}
		d.entries.set(p.seq, e)
	}
}

// meetDetails takes the details of the adopted message at seq of d,
// entry e (flagDetails), from its record, an add the replay applies over
// the index (applyAdd): what detailsFrom takes from it.
func (b *Builder) meetDetails(d *dest, seq int64, e entry, prio int32, supported bool, size int32, tx bool) {
	setDetails(&e, prio, size, supported, false, tx)
	d.entries.set(seq, e)
	if a := b.adopting; a != nil {
		a.unmet--
	}
}

// readRecords reads the records at locs (in journal order) with
// Options.ReadRecords, or one by one with ReadRecord.
func (b *Builder) readRecords(locs []codec.Location, fn func(i int, c *codec.Command, err error)) {
	if b.opts.ReadRecords != nil {
		b.opts.ReadRecords(locs, fn)
		return
	}
	var c codec.Command
	for i, loc := range locs {
		if b.opts.ReadRecord == nil {
			fn(i, nil, fmt.Errorf("its record was not read"))
			continue
		}
		_, err := b.opts.ReadRecord(loc, &c)
		fn(i, &c, err)
	}
}

// recordSize is the size of the record at loc: known from the replay, or
// read (0 when it cannot be; warn says why).
func (b *Builder) recordSize(loc codec.Location, known map[[2]int32]int32, warn func(format string, args ...any)) int32 {
	if n, ok := known[[2]int32{loc.File, loc.Offset}]; ok && n > 0 {
		return n
	}
	if b.opts.ReadRecord == nil {
		return 0
	}
	var c codec.Command
	full, err := b.opts.ReadRecord(loc, &c)
	if err != nil {
		warn("index: the subscription command at %s: %v", loc, err)
		return 0
	}
	return full.Size
}

// detailsFrom fills the priority, size and kind of e from its record c.
func detailsFrom(e *entry, c *codec.Command) error {
	switch c.Type {
	case codec.AddMessageCommand, codec.UpdateMessageCommand:
	default:
		return fmt.Errorf("the index points at a %s, not a message", c.Type)
	}
	setDetails(e, c.Priority, int32(len(c.Message)), c.PrioritySupported, c.Type == codec.UpdateMessageCommand, c.Tx.Kind != codec.NoTx)
	return nil
}

// setDetails gives e the priority, size and kind of its message's record.
func setDetails(e *entry, prio, size int32, supported, updated, tx bool) {
	e.prio, e.size = prio, size
	e.flags &^= flagDetails
	if supported {
		e.flags |= flagPrioSupported
	}
	if updated {
		e.flags |= flagUpdated
	}
	if tx {
		e.flags |= flagTx
	}
}

// classPriority is a JMS priority of class c (its lowest).
func classPriority(c int8) int32 {
	switch c {
	case classHI:
		return 5
	case classLO:
		return 0
	}
	return 4
}

// sortedIndexKeys are the adopted index's destination keys in the order a
// restarted broker loads them (the B-tree's, Java String order).
func (m *model) sortedIndexKeys() []string {
	keys := append([]string(nil), m.indexKeys...)
	sort.SliceStable(keys, func(i, j int) bool { return javaLess(keys[i], keys[j]) })
	return keys
}

// maxDiffIDs bounds the message ids an IndexDiff names.
const maxDiffIDs = 10
