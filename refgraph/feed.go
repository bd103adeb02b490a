package refgraph

import (
	"math"
	"runtime"
	"sync"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/kahaindex"
)

// Reading the index is independent of the replay: nothing in db.data
// depends on the records. So a Builder that will adopt an index starts
// streaming it (Options.LoadIndex) on a goroutine of its own when the
// replay starts, and the adoption, at the recovery position, takes what
// that goroutine read as if it were reading the index right then: the
// sink's calls come in the same order, with the same arguments, and the
// stream's result and error are the same. Reading db.data's pages and
// decoding its B-trees so overlap the replay of the records before the
// recovery position, and, at the position, the adoption of what was read
// overlaps the reading of the rest.
//
// What the goroutine reads ahead waits in batches: feedBatches of them
// at most, each of feedBatchEvents events and their message ids, so the
// memory read ahead is bounded (about 4 MiB on the bench's big store,
// with 48-byte ids), whatever the index's size.

const (
	feedBatchEvents = 4096
	feedBatches     = 8
)

// feedKind is the kind of a feedEvent: the sink call it stands for.
type feedKind uint8

const (
	feedDestination feedKind = iota + 1
	feedMessage
	feedDone
	feedRestart
)

// feedEvent is one call of the sink. A message's id is in its batch's
// arena, from the end of the previous event's id to idEnd; key is the id
// split as the id table splits it, its prefix numbered by the feed.
type feedEvent struct {
	seq       int64
	keySeq    int64 // key, its fields side by side (40 bytes an event, not 48)
	loc       codec.Location
	keyPrefix uint32
	idEnd     uint32
	kind      feedKind
	class     kahaindex.Class
}

// feedKey is a message id as idTable.intern splits it: its producer's
// sequence and its prefix, numbered by the feed in the order it met them
// (from 1; 0: an id without a producer sequence, interned whole). The
// adoption interns each prefix once and takes the others' references
// by number: the splitting and the prefixes' look-ups run on the feed's
// goroutine, beside the adoption, instead of in it.
type feedKey struct {
	prefix uint32
	seq    int64
}

// feedPrefixes numbers the prefixes of the ids the feed reads, in a
// direct-mapped table: a prefix met again while it is in its slot gets
// its number again; one that took the slot of another, a new number.
// A store's messages come from a few producers at a time, each numbering
// its own, so nearly every id finds its prefix; where producers come and
// go by the thousand (one connection a message), the table stays this
// size, and a number costs the adoption an intern, as without the feed.
type feedPrefixes struct {
	slots [feedPrefixSlots]struct {
		name string
		n    uint32
	}
	last uint32 // the last number given
}

const feedPrefixSlots = 1024

func (t *feedPrefixes) key(id []byte) feedKey {
	p, seq := split(id)
	if seq < 0 {
		return feedKey{}
	}
	s := &t.slots[prefixHash(p)&(feedPrefixSlots-1)]
	if s.n == 0 || s.name != string(p) {
		if t.last == math.MaxUint32 {
			return feedKey{}
		}
		t.last++
		s.name, s.n = string(p), t.last
	}
	return feedKey{s.n, seq}
}

// feedBatch is a run of sink calls. dests are the destinations of its
// feedDestination and feedDone events, in order.
type feedBatch struct {
	ev    []feedEvent
	arena []byte
	dests []*kahaindex.Destination
}

func (fb *feedBatch) reset() {
	fb.ev, fb.arena = fb.ev[:0], fb.arena[:0]
	clear(fb.dests)
	fb.dests = fb.dests[:0]
}

// indexFeed is the goroutine reading the index ahead of the adoption.
type indexFeed struct {
	full chan *feedBatch // batches read, in order; closed after the last
	free chan *feedBatch // batches taken, for reuse
	stop chan struct{}   // closed when nothing takes the batches any more
	once sync.Once
	// check is the stream's CheckAfter (kahaindex.StreamFast): closed when
	// the adoption starts taking the batches (or nothing will), so that
	// the reading of the indexes that give the adoption nothing shares
	// the cores with the adoption, not with the replay before it
	check     chan struct{}
	checkOnce sync.Once
	// set before full is closed
	ix  *kahaindex.Index
	err error
}

// startFeed starts reading the index with load on a goroutine of its own.
func startFeed(load func(kahaindex.Sink) (*kahaindex.Index, error)) *indexFeed {
	f := &indexFeed{
		full:  make(chan *feedBatch, feedBatches),
		free:  make(chan *feedBatch, feedBatches+2),
		stop:  make(chan struct{}),
		check: make(chan struct{}),
	}
	go f.run(load)
	return f
}

// halt tells the goroutine that nothing takes its batches any more: it
// reads on without keeping anything (a stream cannot be stopped midway)
// and ends with the stream.
func (f *indexFeed) halt() {
	f.startCheck()
	f.once.Do(func() { close(f.stop) })
}

// startCheck lets the stream's second pass start.
func (f *indexFeed) startCheck() { f.checkOnce.Do(func() { close(f.check) }) }

func (f *indexFeed) run(load func(kahaindex.Sink) (*kahaindex.Index, error)) {
	defer close(f.full)
	halted := false
	var cur *feedBatch
	// next hands cur on and takes a batch to fill (nil once halted)
	next := func() {
		if halted {
			return
		}
		if cur != nil {
			select {
			case f.full <- cur:
			case <-f.stop:
				halted, cur = true, nil
				return
			}
		}
		select {
		case cur = <-f.free:
			cur.reset()
		default:
			cur = &feedBatch{ev: make([]feedEvent, 0, feedBatchEvents)}
		}
	}
	next()
	add := func(e feedEvent) {
		if halted {
			return
		}
		cur.ev = append(cur.ev, e)
	}
	// room hands a full batch on; false once halted
	room := func() bool {
		if !halted && len(cur.ev) >= feedBatchEvents {
			next()
		}
		return !halted
	}
	var prefixes feedPrefixes
	sink := kahaindex.Sink{
		Destination: func(d *kahaindex.Destination) {
			if halted {
				return
			}
			cur.dests = append(cur.dests, d)
			add(feedEvent{kind: feedDestination, idEnd: uint32(len(cur.arena))})
		},
		Message: func(_ *kahaindex.Destination, m *kahaindex.StreamMessage) {
			if !room() {
				return
			}
			cur.arena = append(cur.arena, m.ID...)
			k := prefixes.key(m.ID)
			add(feedEvent{kind: feedMessage, seq: m.Seq, keySeq: k.seq, keyPrefix: k.prefix, loc: m.Loc, class: m.Class, idEnd: uint32(len(cur.arena))})
		},
		Done: func(d *kahaindex.Destination) {
			if halted {
				return
			}
			cur.dests = append(cur.dests, d)
			add(feedEvent{kind: feedDone, idEnd: uint32(len(cur.arena))})
		},
		Restart: func() {
			if room() {
				add(feedEvent{kind: feedRestart, idEnd: uint32(len(cur.arena))})
			}
		},
		CheckAfter: f.check,
	}
	ix, err := load(sink)
	f.ix, f.err = ix, err
	if !halted && cur != nil && len(cur.ev) > 0 {
		select {
		case f.full <- cur:
		case <-f.stop:
		}
	}
}

// replay makes the sink calls the stream made, in order, and returns
// its result; keyed, when not nil, takes the messages instead of
// sink.Message, with their ids' feedKey. The feed is spent afterwards.
func (f *indexFeed) replay(sink kahaindex.Sink, keyed func(*kahaindex.Destination, *kahaindex.StreamMessage, feedKey)) (*kahaindex.Index, error) {
	defer f.halt()
	f.startCheck()
	var msg kahaindex.StreamMessage
	var d *kahaindex.Destination
	for fb := range f.full {
		from, di := uint32(0), 0
		for i := range fb.ev {
			e := &fb.ev[i]
			switch e.kind {
			case feedDestination:
				d = fb.dests[di]
				di++
				if sink.Destination != nil {
					sink.Destination(d)
				}
			case feedMessage:
				msg.Seq, msg.ID, msg.Loc, msg.Class = e.seq, fb.arena[from:e.idEnd:e.idEnd], e.loc, e.class
				if keyed != nil {
					keyed(d, &msg, feedKey{prefix: e.keyPrefix, seq: e.keySeq})
				} else if sink.Message != nil {
					sink.Message(d, &msg)
				}
			case feedDone:
				d = fb.dests[di]
				di++
				if sink.Done != nil {
					sink.Done(d)
				}
			case feedRestart:
				if sink.Restart != nil {
					sink.Restart()
				}
			}
			from = e.idEnd
		}
		fb.reset()
		select {
		case f.free <- fb:
		default:
		}
	}
	// the batches are garbage now (the cleanup of the Builder keeps f)
	for len(f.free) > 0 {
		<-f.free
	}
	ix, err := f.ix, f.err
	f.ix, f.err = nil, nil
	return ix, err
}

// startFeed starts reading the index ahead, when the replay is going to
// adopt it; the feed is halted when the Builder is dropped without
// adopting (a replay that failed).
func (b *Builder) startFeed() {
	if b.feed != nil || b.adopted || b.opts.LoadIndex == nil || !b.hasRecovery || b.built || b.opts.readAtPosition {
		return
	}
	b.feed = startFeed(b.opts.LoadIndex)
	runtime.AddCleanup(b, (*indexFeed).halt, b.feed)
}

// haltFeed halts the feed of a Builder that will not adopt (a resumed
// state that did not decode).
func (b *Builder) haltFeed() {
	if f := b.feed; f != nil {
		b.feed = nil
		f.halt()
	}
}
