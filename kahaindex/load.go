package kahaindex

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/kahafs/kahafs/codec"
)

// reader holds the state of one Read.
type reader struct {
	pf      *pageFile
	ix      *Index
	version int32
	sink    *Sink // Stream's; nil for Read
	part    part  // what of each destination's indexes it reads (StreamFast)
}

// part is what a reader reads of the indexes the broker reads while it
// runs (readLater): all of them, or one of StreamFast's two passes.
type part uint8

const (
	partAll   part = iota
	partOrder      // the order indexes (streamed) and the subscriptions
	partCheck      // the message-id and location indexes (read, nothing kept)
)

func load(data, redo, free source, sink *Sink) (*Index, error) {
	ix, _, err := loadPart(data, redo, free, sink, partAll)
	return ix, err
}

// loadPart is load reading part of the indexes; it returns the page file
// read too (StreamFast compares what its passes read).
func loadPart(data, redo, free source, sink *Sink, part part) (*Index, *pageFile, error) {
	pf, fresh, err := openPageFile(data, redo, free)
	if err != nil {
		return nil, nil, err
	}
	ix := &Index{Path: data.name, PageFile: pf.info, Fresh: fresh}
	if f, ok := data.r.(*os.File); ok {
		pf.ahead = newReadAhead(f, pf.pageSize)
		defer func() {
			pf.ahead.close()
			pf.ahead = nil
		}()
	}
	r := &reader{pf: pf, ix: ix, sink: sink, part: part}
	if fresh {
		// loadPageFile allocates the metadata page and the destinations
		// root: from the free list when db.free has pages, else as new
		// (free) pages at the end of the file.
		free := append([]Range(nil), pf.info.FreeList...)
		next := pf.info.PageCount
		alloc := func() (int64, bool) {
			if id, ok := allocateFree(&free); ok {
				return id, true
			}
			next++
			return next - 1, false
		}
		meta, _ := alloc() // the metadata page: made in memory
		pf.cacheAs(meta, kindMetadata, false, true)
		root, reused := alloc()
		ix.Meta = Metadata{State: 1, DestinationsPage: root, Version: IndexVersion, OpenWireVersion: 11}
		if !reused {
			return ix, pf, nil
		}
		// A page the free list hands out is read as it is on disk.
		r.version = ix.Meta.Version
		if err := r.readDestinations(); err != nil {
			return nil, pf, err
		}
		ix.shape = pf.shape
		return ix, pf, nil
	}
	if err := r.read(); err != nil {
		return nil, pf, err
	}
	if part == partAll {
		r.checkFreeList()
	}
	ix.shape = pf.shape
	return ix, pf, nil
}

// allocateFree is SequenceSet.removeFirstSequence(1): the first value of
// the first sequence of at least one value.
func allocateFree(free *[]Range) (int64, bool) {
	for i, s := range *free {
		n := s.Last - s.First + 1
		if s.First == s.Last {
			n = 1
		}
		switch {
		case n == 1:
			*free = append((*free)[:i:i], (*free)[i+1:]...)
			return s.First, true
		case n > 1:
			(*free)[i].First++
			return s.First, true
		}
	}
	return 0, false
}

func (r *reader) note(kind NoteKind, dest string, page int64, format string, a ...any) {
	r.ix.Notes = append(r.ix.Notes, Note{Kind: kind, Destination: dest, Page: page, Text: fmt.Sprintf(format, a...)})
}

// freeRootNote records a tree (or list) whose root page is marked free.
// The broker takes it for a new, empty one, and initializes it there; a
// broker-written index never has one, since every tree is initialized
// when its destination is made. So whatever the tree held is gone from
// the broker's view (an order index's messages: their files are deleted),
// and a 5.17.2 broker given a store whose destinations root was marked
// free failed to start in 6 of 12 runs (ClassCastException in
// MessageOrderIndex.addLast: a page it handed out again).
func (r *reader) freeRootNote(dest, what string, page int64) {
	r.note(Damage, dest, page, "%s: its root page %d is marked free: the broker takes it for an empty one (and may fail on it)", what, page)
}

// loadTree loads t (btree.load), noting a free root against dest.
func loadTree[K, V any](r *reader, dest string, t *btree[K, V]) error {
	free, err := t.load()
	if free {
		r.freeRootNote(dest, t.what, t.root)
	}
	return err
}

// loadList loads l (listIndex.load), noting a free head against dest.
func loadList[K, V any](r *reader, dest string, l *listIndex[K, V]) ([]listEntry[K, V], error) {
	entries, free, err := l.load()
	if free {
		r.freeRootNote(dest, l.what, l.head)
	}
	return entries, err
}

// stopNote records where an iteration stopped quietly.
func (r *reader) stopNote(dest, what string, stopped error) {
	page := int64(-1)
	var ce *CorruptionError
	if errors.As(stopped, &ce) {
		page = ce.Page
	}
	r.note(Damage, dest, page, "%s: iteration stops here, as the broker's does: %v", what, stopped)
}

// atLoad marks err as met while the broker loads the index: its load
// throws, and it rebuilds the index from the journal. Not so a cycle or an
// overrun read budget: the broker's walks do not throw there but go on (a
// walk of the destinations B-tree whose empty leaf links back to itself,
// after a db.redo page written over the tree's root: a 5.17.2 broker ran
// at full CPU for 18 minutes without starting), or end when its memory
// runs out. Such damage is not AtLoad: the broker does not rebuild, and
// what it does is not known.
func atLoad(err error) error {
	var ce *CorruptionError
	if errors.As(err, &ce) {
		if errors.Is(ce.Err, ErrCycle) || errors.Is(ce.Err, ErrBudget) {
			ce.Detail += "; met while the broker loads the index, which it then never finishes loading"
			return err
		}
		ce.AtLoad = true
	}
	return err
}

func (r *reader) read() error {
	// Page 0: the metadata (MessageDatabase.loadPageFile).
	if err := r.pf.claim(0, kindMetadata, "metadata"); err != nil {
		return atLoad(err)
	}
	s, err := r.pf.openStream(0, "metadata")
	if err != nil {
		return atLoad(err)
	}
	if r.ix.Meta, err = readMetadata(s); err != nil {
		return atLoad(err)
	}
	r.pf.cacheAs(0, kindMetadata, false, false)
	r.version = r.ix.Meta.Version
	if r.version < minVersion {
		return &CorruptionError{File: r.pf.data.name, Page: 0, Offset: r.pf.toOffset(0), Structure: "metadata",
			Err: ErrVersion, Detail: fmt.Sprintf("version %d (a 5.17.2 broker upgrades it in place; this reader needs %d or later)", r.version, minVersion)}
	}
	return r.readDestinations()
}

// readDestinations reads the destinations B-tree and loads every
// destination as loadPageFile does, then reads what the broker reads of
// them later.
func (r *reader) readDestinations() error {
	dests := &btree[jstring, storedDest]{pf: r.pf, root: r.ix.Meta.DestinationsPage, what: "destinations B-tree",
		kind: kindDestinations, key: readUTF, cmp: compareJava,
		value: func(in dataInput) (storedDest, error) { return readStoredDest(in, r.version) }}
	if err := loadTree(r, "", dests); err != nil {
		return atLoad(err)
	}
	type entry struct {
		key jstring
		sd  storedDest
	}
	var list []entry
	stopped, err := dests.iterate(nil, func(k jstring, v storedDest) { list = append(list, entry{k, v}) })
	if err != nil {
		return atLoad(err)
	}
	if stopped != nil {
		r.stopNote("", "destinations B-tree", stopped)
	}
	var all []*loaded
	seen := map[string]int{}
	for _, e := range list {
		// loadStoredDestination looks the key up again.
		sd, found, err := dests.get(e.key)
		if err != nil {
			return atLoad(err)
		}
		key := e.key.String()
		l, err := r.loadDestination(key, e.sd.topic, sd, found)
		if err != nil {
			return atLoad(err)
		}
		// The broker keeps its destinations in a map: a key listed twice
		// is loaded twice, and the last load is the one it keeps.
		if i, ok := seen[key]; ok {
			r.note(Mismatch, key, -1, "listed more than once in the destinations B-tree (the last one loaded is kept)")
			all[i] = l
			continue
		}
		seen[key] = len(all)
		all = append(all, l)
	}
	// The broker has loaded the index; the rest is read when it is used.
	for _, l := range all {
		if r.sink != nil && r.sink.Destination != nil {
			r.sink.Destination(l.d)
		}
		if err := r.readLater(l); err != nil {
			return err
		}
		r.ix.Destinations = append(r.ix.Destinations, l.d)
		if r.sink != nil && r.sink.Done != nil {
			r.sink.Done(l.d)
		}
	}
	return nil
}

func newDestination(key string, topic bool) *Destination {
	d := &Destination{Key: key, Topic: topic, Name: key, Type: -1}
	if t, name, ok := strings.Cut(key, ":"); ok {
		if n, err := strconv.Atoi(t); err == nil {
			d.Type, d.Name = codec.DestType(n), name
		}
	}
	none := int64(-1)
	d.Indexes.Roots = Roots{none, none, none, none, none, none, none, none, none, none}
	return d
}

// loaded is a destination as loadStoredDestination leaves it, with the
// structures the broker reads later.
type loaded struct {
	d               *Destination
	high, def, low  *btree[int64, messageKeys]
	locations       *btree[codec.Location, int64]
	messageIDs      *btree[jstring, int64]
	subscriptions   *btree[jstring, []byte]
	statsPage       int64
	statsWrongClass bool // the broker's cache holds another kind of object for the statistics page
	empty           bool // new, empty indexes (the lookup did not find it)
}

// loadDestination is MessageDatabase.loadStoredDestination: what the
// broker reads of a destination while it loads the index. Every error is
// one the load fails on.
func (r *reader) loadDestination(key string, topic bool, sd storedDest, found bool) (*loaded, error) {
	d := newDestination(key, topic)
	l := &loaded{d: d}
	if !found {
		r.note(Recreated, key, -1, "listed in the destinations B-tree but not found by a lookup of its key: the broker gives it new, empty indexes")
		l.empty = true
		return l, nil
	}
	if topic && !sd.topic {
		return nil, &CorruptionError{File: r.pf.data.name, Page: -1, Offset: -1, Structure: fmt.Sprintf("destination %q", key),
			Err: ErrInconsistent, Detail: "the destinations B-tree iterates it as a topic, but a lookup finds no subscription indexes"}
	}
	if !topic && sd.topic {
		r.note(Mismatch, key, -1, "a lookup finds subscription indexes the broker does not load (the destinations B-tree iterates it as a queue)")
	}
	ro := &d.Indexes.Roots
	ro.Default, ro.Low, ro.High, ro.Locations, ro.MessageIDs = sd.defaultPrio, sd.lowPrio, sd.highPrio, sd.locations, sd.messageIDs
	if topic {
		ro.Subscriptions, ro.LastAcks, ro.AckPositions, ro.SubscriptionLocations =
			sd.subscriptions, sd.subscriptionAcks, sd.ackPositions, sd.subLocations
	}
	what := func(s string) string { return fmt.Sprintf("destination %q %s", key, s) }

	// Statistics (StoredMessageStoreStatistics.load): a free page holds
	// none.
	if sd.hasStats {
		ro.Stats = sd.stats
		if err := r.loadStats(l, sd.stats, what("statistics")); err != nil {
			return nil, err
		}
	}

	// The order index (MessageOrderIndex.load, configureLast).
	orderTree := func(root int64, name string) *btree[int64, messageKeys] {
		return &btree[int64, messageKeys]{pf: r.pf, root: root, what: what("order index (" + name + ")"),
			kind: kindOrder, key: readI64, cmp: compareInt64,
			value: func(in dataInput) (messageKeys, error) { return readMessageKeys(in, r.version) }}
	}
	l.def, l.low, l.high = orderTree(sd.defaultPrio, "DEF"), orderTree(sd.lowPrio, "LO"), orderTree(sd.highPrio, "HI")
	for _, t := range []*btree[int64, messageKeys]{l.def, l.low, l.high} {
		if err := loadTree(r, key, t); err != nil {
			return nil, err
		}
	}
	var lastKey int64
	hasLast := false
	for _, t := range []*btree[int64, messageKeys]{l.high, l.def, l.low} {
		k, ok, err := t.last()
		if err != nil {
			return nil, err
		}
		if ok && (!hasLast || k > lastKey) {
			lastKey, hasLast = k, true
		}
	}
	if hasLast {
		d.NextSeq = lastKey + 1 // wraps as Java's long does
	}
	l.locations = &btree[codec.Location, int64]{pf: r.pf, root: sd.locations, what: what("location index"),
		kind: kindLocations, value: readI64,
		key: func(in dataInput) (codec.Location, error) { return readLocationSize(in, r.version) }}
	l.messageIDs = &btree[jstring, int64]{pf: r.pf, root: sd.messageIDs, what: what("message-id index"),
		kind: kindMessageIDs, key: readUTF, value: readI64, cmp: compareJava}
	if err := loadTree(r, key, l.locations); err != nil {
		return nil, err
	}
	if err := loadTree(r, key, l.messageIDs); err != nil {
		return nil, err
	}
	if topic {
		if err := r.loadSubscriptionIndexes(l, sd, what); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// loadStats is StoredMessageStoreStatistics.load: the page's header, then
// its statistics (none when the page is free). When the broker's page
// cache holds another kind of object for the page, the load succeeds and
// the cast fails later, when the statistics are used.
func (r *reader) loadStats(l *loaded, id int64, what string) error {
	l.statsPage = id
	typ, err := r.pf.pageType(id, what)
	if err != nil {
		return err
	}
	if e, ok := r.pf.cache.get(id); ok {
		if e.kind != kindStats {
			l.statsWrongClass = true
			return nil
		}
		if e.initialized {
			return nil // null statistics stored by an earlier load
		}
	}
	if typ == pageFree {
		r.pf.cacheAs(id, kindStats, true, true)
		return nil
	}
	s, err := r.pf.openStream(id, what)
	if err != nil {
		return err
	}
	if l.d.Stats, err = readStats(s); err != nil {
		return err
	}
	r.pf.cacheAs(id, kindStats, l.d.Stats == nil, false)
	return nil
}

// loadSubscriptionIndexes is the topic part of loadStoredDestination:
// the subscriptions and subscription-acks B-trees, both lists (read whole),
// the subscription cache (an iteration of the acks), and the next sequence
// when the order index did not give one or ack positions go past it.
func (r *reader) loadSubscriptionIndexes(l *loaded, sd storedDest, what func(string) string) error {
	d := l.d
	l.subscriptions = &btree[jstring, []byte]{pf: r.pf, root: sd.subscriptions, what: what("subscriptions B-tree"),
		kind: kindSubscriptions, key: readUTF, value: readSubscriptionCommand, cmp: compareJava}
	acks := &btree[jstring, lastAck]{pf: r.pf, root: sd.subscriptionAcks, what: what("subscription-acks B-tree"),
		kind: kindLastAcks, key: readUTF, cmp: compareJava,
		value: func(in dataInput) (lastAck, error) { return readLastAck(in, r.version) }}
	if err := loadTree(r, d.Key, l.subscriptions); err != nil {
		return err
	}
	if err := loadTree(r, d.Key, acks); err != nil {
		return err
	}
	ackPos := &listIndex[jstring, []Range]{pf: r.pf, head: sd.ackPositions, what: what("ack-positions list"),
		kind: kindAckPositions, key: readUTF, value: readSequenceSet}
	positions, err := loadList(r, d.Key, ackPos)
	if err != nil {
		return err
	}
	subLocs := &listIndex[jstring, codec.Location]{pf: r.pf, head: sd.subLocations, what: what("subscription-locations list"),
		kind: kindSubLocations, key: readUTF, value: readLocation}
	locs, err := loadList(r, d.Key, subLocs)
	if err != nil {
		return err
	}
	for _, e := range positions {
		d.Indexes.AckPositions = append(d.Indexes.AckPositions, AckPositionsEntry{e.key.String(), e.value, e.node})
	}
	for _, e := range locs {
		d.Indexes.SubscriptionLocations = append(d.Indexes.SubscriptionLocations, SubscriptionLocationEntry{e.key.String(), e.value})
	}
	stopped, err := acks.iterate(nil, func(k jstring, a lastAck) {
		d.Indexes.LastAcks = append(d.Indexes.LastAcks, LastAckEntry{k.String(), a.seq, a.prio})
	})
	if err != nil {
		return err
	}
	if stopped != nil {
		r.stopNote(d.Key, "subscription-acks B-tree", stopped)
	}
	if d.NextSeq == 0 {
		// All messages gone: the next sequence follows the last acks.
		empty, err := acks.isEmpty()
		if err != nil {
			return err
		}
		if !empty {
			for _, a := range d.Indexes.LastAcks {
				d.NextSeq = max(d.NextSeq, a.Seq+1)
			}
		}
		return nil
	}
	// The largest pending sequence of any subscription (the broker keeps
	// the next sequence in every subscription's set).
	for _, e := range positions {
		m, ok, err := iteratedMax(e.value)
		if err != nil {
			return &CorruptionError{File: r.pf.data.name, Page: sd.ackPositions, Offset: r.pf.toOffset(sd.ackPositions),
				Structure: what("ack-positions list"), Err: ErrBudget,
				Detail: fmt.Sprintf("subscription %q: %v", e.key.String(), err)}
		}
		if ok {
			d.NextSeq = max(d.NextSeq, m)
		}
	}
	return nil
}

// readLater reads what the broker reads of a loaded destination while it
// runs: its statistics, the order index through a MessageOrderIterator from
// the start, the message-id, location and subscription indexes.
func (r *reader) readLater(l *loaded) error {
	d := l.d
	if l.empty {
		return nil
	}
	if l.statsWrongClass {
		return r.pf.pageErr(l.statsPage, r.pf.toOffset(l.statsPage), fmt.Sprintf("destination %q statistics", d.Key),
			ErrInconsistent, fmt.Sprintf("page %d is also another structure's page (the broker's ClassCastException)", l.statsPage), false)
	}
	if r.sink != nil {
		if r.part != partCheck {
			if err := r.streamOrder(l); err != nil {
				return err
			}
		}
		if r.part != partOrder {
			if err := r.checkMessageIDs(l); err != nil {
				return err
			}
		}
	} else if err := r.keepMessages(l); err != nil {
		return err
	}
	if r.part != partOrder {
		locations := l.locations
		if r.sink != nil {
			// nothing kept of it: its leaves skimmed, but for the keys
			c := *locations
			c.leaf = locationSkimmer(locationBytes(r.version)) // the keys read: LocationKeys
			c.aheadKey = skimFixed(locationBytes(r.version))
			locations = &c
		}
		var leaves []int64
		if locations == l.locations {
			c := *locations
			locations = &c
		}
		locations.onLeaf = func(id int64) { leaves = append(leaves, id) }
		if r.ix.LocationKeys == nil {
			r.ix.LocationKeys = map[string]LocationKeys{}
		}
		var keys LocationKeys
		stopped, err := locations.iterate(nil, func(loc codec.Location, seq int64) {
			keys.Count++
			keys.Sum = SumLocation(keys.Sum, loc)
			if n := len(keys.Files); n == 0 || keys.Files[n-1] != loc.File {
				keys.Files = append(keys.Files, loc.File)
			}
			if r.sink == nil {
				d.Indexes.Locations = append(d.Indexes.Locations, LocationEntry{loc, seq})
			}
		})
		// ascending already, unless keys are out of order (damage)
		slices.Sort(keys.Files)
		keys.Files = slices.Compact(keys.Files)
		r.ix.LocationKeys[d.Key] = keys
		if err != nil {
			return err
		}
		if stopped != nil {
			r.stopNote(d.Key, "location index", stopped)
		} else if shape := l.locations.shape(leaves); shape != nil {
			if r.ix.LocationShapes == nil {
				r.ix.LocationShapes = map[string]*LocationNode{}
			}
			r.ix.LocationShapes[d.Key] = shape
		}
	}
	if l.subscriptions != nil && r.part != partCheck {
		var stopped, err error
		stopped, err = l.subscriptions.iterate(nil, func(k jstring, cmd []byte) {
			d.Indexes.SubscriptionCommands = append(d.Indexes.SubscriptionCommands, SubscriptionCommandEntry{k.String(), cmd})
		})
		if err != nil {
			return err
		}
		if stopped != nil {
			r.stopNote(d.Key, "subscriptions B-tree", stopped)
		}
	}
	if r.sink == nil {
		r.checkMessages(d)
	}
	if r.part != partCheck {
		r.mergeSubscriptions(d)
	}
	return nil
}

// keepMessages reads the order index through a MessageOrderIterator from
// the start into d.Messages, and the message-id index into
// d.Indexes.MessageIDs (Read).
func (r *reader) keepMessages(l *loaded) error {
	d := l.d
	zero := int64(0)
	for _, c := range []struct {
		t     *btree[int64, messageKeys]
		class Class
	}{{l.high, High}, {l.def, Default}, {l.low, Low}} {
		stopped, err := c.t.iterate(&zero, func(seq int64, mk messageKeys) {
			d.Messages = append(d.Messages, Message{Seq: seq, ID: mk.id.String(), Loc: mk.loc, Class: c.class})
		})
		if err != nil {
			return err
		}
		if stopped != nil {
			r.stopNote(d.Key, "order index ("+c.class.String()+")", stopped)
		}
	}
	stopped, err := l.messageIDs.iterate(nil, func(id jstring, seq int64) {
		d.Indexes.MessageIDs = append(d.Indexes.MessageIDs, MessageIDEntry{id.String(), seq})
	})
	if err != nil {
		return err
	}
	if stopped != nil {
		r.stopNote(d.Key, "message-id index", stopped)
	}
	return nil
}

// streamOrder and checkMessageIDs read the same pages as keepMessages,
// in the same order, with the same checks and errors: streamOrder hands
// each message of the order index to the sink instead of keeping it,
// checkMessageIDs reads (and checks) the message-id index without keeping
// its entries.
func (r *reader) streamOrder(l *loaded) error {
	d := l.d
	zero := int64(0)
	var arena []byte // the ids of the node being read
	var msg StreamMessage
	for _, c := range []struct {
		t     *btree[int64, messageKeys]
		class Class
	}{{l.high, High}, {l.def, Default}, {l.low, Low}} {
		t := &btree[int64, rawKeys]{pf: c.t.pf, root: c.t.root, what: c.t.what, kind: c.t.kind, key: readI64, cmp: compareInt64,
			startNode: func() { arena = arena[:0] },
			value: func(in dataInput) (rawKeys, error) {
				from := len(arena)
				var err error
				if arena, err = readUTFBytes(in, arena); err != nil {
					return rawKeys{}, err
				}
				loc, err := readLocationSize(in, r.version)
				return rawKeys{from, len(arena), loc}, err
			}}
		t.aheadKey = skimFixed(8)
		t.leaf = func(b []byte, n *node[int64, rawKeys]) bool {
			var ok bool
			arena, ok = orderLeaf(b, n, arena, locationBytes(r.version))
			return ok
		}
		msg.Class = c.class
		stopped, err := t.iterate(&zero, func(seq int64, k rawKeys) {
			msg.Seq, msg.ID, msg.Loc = seq, arena[k.from:k.to:k.to], k.loc
			if r.sink.Message != nil {
				r.sink.Message(d, &msg)
			}
		})
		if err != nil {
			return err
		}
		if stopped != nil {
			r.stopNote(d.Key, "order index ("+c.class.String()+")", stopped)
		}
	}
	return nil
}

// rawKeys is an order index value as streamOrder reads it: the id's
// bytes (arena[from:to] of the node being read) and the location.
type rawKeys struct {
	from, to int
	loc      codec.Location
}

// orderLeaf decodes the order index leaf in b (a page up to its stream's
// end) into n as streamOrder's decoder would, the ids appended to arena,
// when every id is ASCII and the node's bytes are all there (locBytes:
// the location's, 8 or 12); otherwise it reports false, and arena is
// what it was.
func orderLeaf(b []byte, n *node[int64, rawKeys], arena []byte, locBytes int) ([]byte, bool) {
	i := pageHeaderSize
	if i+2 > len(b) {
		return arena, false
	}
	count := int(int16(binary.BigEndian.Uint16(b[i:])))
	i += 2
	if count < 0 || count > (len(b)-i)/8 {
		return arena, false
	}
	for range count {
		n.keys = append(n.keys, int64(binary.BigEndian.Uint64(b[i:])))
		i += 8
	}
	if i+1 > len(b) || b[i] != 0 {
		return arena, false // a branch (or short): decodeFrom
	}
	i++
	start := len(arena)
	for range count {
		if i+2 > len(b) {
			return arena[:start], false
		}
		from := i + 2
		to := from + int(binary.BigEndian.Uint16(b[i:]))
		if to+locBytes > len(b) || !isASCII(b[from:to]) {
			return arena[:start], false
		}
		at := len(arena)
		arena = append(arena, b[from:to]...)
		i = to
		loc := codec.Location{File: int32(binary.BigEndian.Uint32(b[i:])), Offset: int32(binary.BigEndian.Uint32(b[i+4:]))}
		if locBytes == 12 {
			loc.Size = int32(binary.BigEndian.Uint32(b[i+8:]))
		}
		i += locBytes
		n.values = append(n.values, rawKeys{at, len(arena), loc})
	}
	if i+8 > len(b) {
		return arena[:start], false
	}
	n.next = int64(binary.BigEndian.Uint64(b[i:]))
	return arena, true
}

func (r *reader) checkMessageIDs(l *loaded) error {
	d := l.d
	var scratch []byte
	ids := &btree[struct{}, int64]{pf: l.messageIDs.pf, root: l.messageIDs.root, what: l.messageIDs.what, kind: l.messageIDs.kind,
		value: readI64, leaf: skimmer[struct{}, int64](skim{key: skimASCII, value: 8}), aheadKey: skimASCII,
		key: func(in dataInput) (struct{}, error) {
			var err error
			scratch, err = readUTFBytes(in, scratch[:0])
			return struct{}{}, err
		}}
	stopped, err := ids.iterate(nil, func(struct{}, int64) {})
	if err != nil {
		return err
	}
	if stopped != nil {
		r.stopNote(d.Key, "message-id index", stopped)
	}
	return nil
}
