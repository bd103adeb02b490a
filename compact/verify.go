package compact

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/refgraph"
	"github.com/kahafs/kahafs/store"
)

// The verification replays the compacted journal in full (refgraph, as
// for the original) and checks two things:
//
//   - the live state (liveState): what a broker serves from each store, the
//     same before and after; it is taken from the original's graph before
//     the replay, as lengths and digests of the lists of ids, so that the
//     original's graph can go before the new one is built (a compaction
//     then needs the memory of one graph, not two);
//   - the message records: every ADD or UPDATE record read back from the
//     new journal carries what the write took for it from the original
//     (destination, id, priority and its flag, OpenWire bytes), compared
//     byte for byte with the original's record, read again, in journal
//     order (compactPlan.origins, bodyCheck).
//
// With both, each destination's messages are the same ids in the same
// order (liveState.messages), and each new record holds what its
// original held.

// liveState is what a broker serves from a store: pending messages per
// queue in delivery order, delivered messages per durable subscription,
// prepared transactions with their operations; and every destination's
// messages in order. The lists are kept as digests (idList).
type liveState struct {
	queues   map[string]idList
	subs     map[string]idList
	prepared map[string]idList
	dests    []string
	// messages: every destination's messages (ids), in the graph's order
	messages map[string]idList
}

// idList stands for a list of ids (or other strings): its length and a
// digest of its elements in order.
type idList struct {
	n   int
	sum [sha256.Size]byte
}

// lister makes idLists with one reused hash, the elements of a list
// gathered into a buffer and hashed a few kilobytes at a time.
type lister struct {
	h   hash.Hash
	buf []byte
}

func newLister() *lister { return &lister{h: sha256.New(), buf: make([]byte, 0, listerBuf+1024)} }

const listerBuf = 16 << 10

// addID adds the id of m.
func (l *lister) addID(m *refgraph.Message) {
	// the id's length goes before it: as a varint, written once the id
	// is in the buffer (a length of up to 2^14-1 bytes takes two bytes)
	start := len(l.buf)
	l.buf = m.AppendID(append(l.buf, 0, 0))
	l.length(start)
}

func (l *lister) add(b []byte) {
	start := len(l.buf)
	l.buf = append(append(l.buf, 0, 0), b...)
	l.length(start)
}

// length fills in the two bytes at start with the length of what follows
// them (or, longer, moves it to make room for a longer varint), and hashes
// the buffer when it is full.
func (l *lister) length(start int) {
	n := len(l.buf) - start - 2
	if n < 1<<14 {
		l.buf[start], l.buf[start+1] = byte(n)|0x80, byte(n>>7)
	} else {
		el := append([]byte(nil), l.buf[start+2:]...)
		l.buf = append(binary.AppendUvarint(l.buf[:start], uint64(n)), el...)
	}
	if len(l.buf) >= listerBuf {
		l.h.Write(l.buf)
		l.buf = l.buf[:0]
	}
}

func (l *lister) end(n int) idList {
	l.h.Write(l.buf)
	l.buf = l.buf[:0]
	out := idList{n: n}
	l.h.Sum(out.sum[:0])
	l.h.Reset()
	return out
}

// ids lists the ids of the n messages at(0), ..., at(n-1), leaving out
// the messages whose record could not be read (a forced compaction drops
// them and says so).
func (l *lister) ids(n int, at func(i int) *refgraph.Message) idList {
	k := 0
	for i := range n {
		if m := at(i); !m.Unreadable {
			l.addID(m)
			k++
		}
	}
	return l.end(k)
}

// list is ids over ms.
func (l *lister) list(ms []*refgraph.Message) idList {
	return l.ids(len(ms), func(i int) *refgraph.Message { return ms[i] })
}

// all lists the ids of every message of ms.
func (l *lister) all(ms []refgraph.Message) idList {
	for i := range ms {
		l.addID(&ms[i])
	}
	return l.end(len(ms))
}

func (l *lister) strings(ss ...string) idList {
	for _, s := range ss {
		l.add([]byte(s))
	}
	return l.end(len(ss))
}

// stateOf is the live state of g. With noRedelivery, the subscriptions g
// hands acked messages again are handed only what they had not
// acknowledged (what a compaction with Options.NoRedelivery keeps).
func stateOf(g *refgraph.Graph, noRedelivery ...bool) liveState {
	l := newLister()
	s := liveState{queues: map[string]idList{}, subs: map[string]idList{}, prepared: map[string]idList{}, messages: map[string]idList{}}
	for _, d := range g.Destinations() {
		s.dests = append(s.dests, d.String())
		s.messages[d.String()] = l.all(d.Messages)
		if !d.IsTopic() {
			// a stored count that drifted stops the broker's cursor early
			// (Destination.Undelivered); the compacted store, whose index
			// the broker rebuilds, counts right and delivers them all
			if len(d.Undelivered()) == 0 { // what DeliveredIfCounted returns, without the slice
				s.queues[d.String()] = l.ids(d.NumPending(), d.PendingAt)
			} else {
				s.queues[d.String()] = l.list(d.DeliveredIfCounted())
			}
			s.queues[d.String()+" in doubt"] = l.list(d.InDoubt())
			n := d.Stats.Count - d.Stats.CountDrift // less what a forced compaction drops
			for i := range d.NumPending() {
				if d.PendingAt(i).Unreadable {
					n--
				}
			}
			for _, m := range d.Undelivered() {
				if m.Unreadable {
					n--
				}
			}
			s.queues[d.String()+" count"] = l.strings(strconv.FormatInt(n, 10))
			continue
		}
		for _, sub := range d.Subscriptions {
			key := d.String() + "|" + sub.Key
			s.subs[key] = l.ids(sub.NumPending(), sub.PendingAt)
			if len(noRedelivery) > 0 && noRedelivery[0] {
				if again := sub.DeliveredAgain(); len(again) > 0 {
					// its last-ack position above every message: its
					// ack positions' messages, but for the store's
					// batches after the first (PendingFiltered)
					s.subs[key] = l.list(sub.PendingFiltered())
				}
			}
			s.subs[key+" in doubt"] = l.list(sub.InDoubt())
			// the count the broker reports (JMX), which may differ from what it delivers
			s.subs[key+" count"] = l.strings(strconv.FormatInt(sub.Count, 10))
		}
	}
	sort.Strings(s.dests)
	for _, t := range g.PreparedTransactions() {
		var ops []string
		for _, op := range t.Ops {
			kind := "ack"
			if op.Add {
				kind = "add"
			}
			ops = append(ops, kind+" "+op.Destination+" "+op.MessageID+" "+op.Subscription)
		}
		s.prepared[t.ID] = l.strings(ops...)
	}
	return s
}

// verify compares the live state want of the original (stateOf, with
// Options.NoRedelivery as the compaction had it) with the compacted
// store's graph ng.
func verify(want liveState, ng *refgraph.Graph) error {
	a, b := want, stateOf(ng)
	var diffs []string
	cmp := func(what string, x, y map[string]idList) {
		for _, k := range sortedKeys(x) {
			if yk, ok := y[k]; !ok || x[k] != yk {
				diffs = append(diffs, fmt.Sprintf("%s %s: %d messages before, %d after", what, k, x[k].n, y[k].n))
			}
		}
		for _, k := range sortedKeys(y) {
			if _, ok := x[k]; !ok {
				diffs = append(diffs, fmt.Sprintf("%s %s: new after compaction", what, k))
			}
		}
	}
	cmp("queue", a.queues, b.queues)
	cmp("subscription", a.subs, b.subs)
	cmp("prepared transaction", a.prepared, b.prepared)
	if !slices.Equal(a.dests, b.dests) {
		diffs = append(diffs, fmt.Sprintf("destinations %v before, %v after", a.dests, b.dests))
	}
	if len(diffs) == 0 {
		for _, k := range sortedKeys(a.messages) {
			if x, y := a.messages[k], b.messages[k]; x != y {
				diffs = append(diffs, fmt.Sprintf("destination %s: messages differ after compaction (%d before, %d after)", k, x.n, y.n))
			}
		}
	}
	if len(diffs) > 0 {
		if len(diffs) > 10 {
			diffs = append(diffs[:10], fmt.Sprintf("... %d more", len(diffs)-10))
		}
		return fmt.Errorf("%w: %s", ErrVerify, strings.Join(diffs, "; "))
	}
	return nil
}

// expected is what the verification compares the new journal's message
// records with, in journal order: the original's records the write took
// them from (read again from st) and the placeholders it made.
type expected struct {
	st           *codec.Store
	origins      *chunked[codec.Location]
	placeholders *chunked[placeholder]
	n            int // message records written
}

func (p *compactPlan) expected(st *codec.Store) *expected {
	return &expected{st: st, origins: &p.origins, placeholders: &p.placeholders, n: p.messages}
}

// bodyCheck compares the message records of the replayed new journal, in
// journal order, with what the write took them from: the destination,
// message id, priority, prioritySupported flag and OpenWire bytes of the
// original's record, read again (a prefetcher), byte for byte. The
// replay's goroutine copies each record's fields into a buffer; they are
// compared on a goroutine of its own.
type bodyCheck struct {
	exp  *expected
	pf   *prefetcher
	jobs chan *sumJob
	free chan *sumJob
	done chan struct{}
	cur  *sumJob
	n    int   // message records handed over
	err  error // the first difference, set by the goroutine before done
}

// sumJob is a buffer of message records to compare.
type sumJob struct {
	buf  []byte
	recs []sumRec
}

// sumRec is one message record of a sumJob: its fields, the byte slices
// as lengths of consecutive parts of the buffer.
type sumRec struct {
	loc            codec.Location
	t              codec.DestType
	prio           int32
	supported      bool
	name, id, body int
}

const (
	sumJobs     = 4
	sumJobBytes = 256 << 10
)

func newBodyCheck(exp *expected) *bodyCheck {
	bc := &bodyCheck{exp: exp, pf: prefetch(newRecordSource(exp.st), exp.origins),
		jobs: make(chan *sumJob, sumJobs), free: make(chan *sumJob, sumJobs), done: make(chan struct{})}
	for range sumJobs {
		bc.free <- &sumJob{buf: make([]byte, 0, sumJobBytes)}
	}
	go bc.run()
	return bc
}

// add hands over the ADD or UPDATE command c read at loc.
func (bc *bodyCheck) add(loc codec.Location, c *codec.Command) {
	j := bc.cur
	if j == nil {
		j = <-bc.free
		j.buf, j.recs = j.buf[:0], j.recs[:0]
		if cap(j.buf) > 4*sumJobBytes {
			j.buf = make([]byte, 0, sumJobBytes) // do not keep an outsized buffer
		}
		bc.cur = j
	}
	j.buf = append(append(append(j.buf, c.Dest.Name...), c.MessageID...), c.Message...)
	j.recs = append(j.recs, sumRec{loc: loc, t: c.Dest.Type, prio: c.Priority, supported: c.PrioritySupported,
		name: len(c.Dest.Name), id: len(c.MessageID), body: len(c.Message)})
	bc.n++
	if len(j.buf) >= sumJobBytes {
		bc.jobs <- j
		bc.cur = nil
	}
}

func (bc *bodyCheck) run() {
	defer close(bc.done)
	ph, hasPh := bc.exp.placeholders.next()
	k := 0 // message records compared
	for j := range bc.jobs {
		b := j.buf
		for i := 0; i < len(j.recs) && bc.err == nil; i++ {
			r := &j.recs[i]
			name, id, body := b[:r.name], b[r.name:r.name+r.id], b[r.name+r.id:r.name+r.id+r.body]
			b = b[r.name+r.id+r.body:]
			var same bool
			var why error
			switch {
			case k >= bc.exp.n:
				why = fmt.Errorf("%d message records written, more read back", bc.exp.n)
			case hasPh && ph.at == k:
				same = r.t == ph.t && string(name) == ph.name && string(id) == ph.id && r.prio == 4 && !r.supported && len(body) == 0
				ph, hasPh = bc.exp.placeholders.next()
			default:
				f, err := bc.pf.next()
				switch {
				case err != nil:
					why = fmt.Errorf("reading the original again: %w", err)
				case f.message:
					c := &f.c
					same = r.t == c.Dest.Type && bytes.Equal(name, c.Dest.Name) && bytes.Equal(id, c.MessageID) &&
						r.prio == c.Priority && r.supported == c.PrioritySupported && bytes.Equal(body, c.Message)
				}
			}
			k++
			if !same {
				d := codec.Destination{Type: r.t, Name: name}
				bc.err = fmt.Errorf("destination %s: message %s at %v differs after compaction", d, id, r.loc)
				if why != nil {
					bc.err = fmt.Errorf("%w (%v)", bc.err, why)
				}
			}
		}
		bc.free <- j
	}
}

// finish waits for the comparisons and returns the first difference, or
// an error when the journal holds fewer message records than were
// written.
func (bc *bodyCheck) finish() error {
	if bc.jobs == nil {
		return bc.err
	}
	if bc.cur != nil {
		bc.jobs <- bc.cur
		bc.cur = nil
	}
	close(bc.jobs)
	<-bc.done
	bc.pf.close()
	bc.jobs = nil
	if bc.err == nil && bc.n != bc.exp.n {
		bc.err = fmt.Errorf("message records: %d written, %d read back: a message differs after compaction", bc.exp.n, bc.n)
	}
	return bc.err
}

// bodyVisitor replays a store and hands every message record to a
// bodyCheck.
type bodyVisitor struct {
	*refgraph.Builder
	check *bodyCheck
	// progress, when set, is told the journal bytes read of total after
	// each data file.
	progress    func(done, total int64)
	done, total int64
}

func (v *bodyVisitor) FileDone(sum *codec.FileSummary) error {
	if v.progress != nil {
		v.done += sum.Size
		v.progress(v.done, v.total)
	}
	return v.Builder.FileDone(sum)
}

func (v *bodyVisitor) Command(rec codec.Record, c *codec.Command) error {
	if c.Type == codec.AddMessageCommand || c.Type == codec.UpdateMessageCommand {
		v.check.add(rec.Loc, c)
	}
	return v.Builder.Command(rec, c)
}

// replayChecked is load (no cache: the new journal is replayed in full)
// that also checks every message record against what the write took it
// from (bodyCheck). progress, when set, is told the bytes read.
func replayChecked(dir string, maxFileLength int64, exp *expected, progress func(done, total int64)) (*codec.Store, *refgraph.Graph, error) {
	l, err := store.Locate(dir)
	if err == nil {
		err = l.SingleError("compaction's verification")
	}
	if err != nil {
		return nil, nil, err
	}
	st, opts := l.Journal, store.ReplayOptions(l, store.Options{MaxFileLength: maxFileLength})
	v := &bodyVisitor{Builder: refgraph.NewBuilder(opts), check: newBodyCheck(exp), progress: progress}
	defer v.check.finish()
	for _, f := range st.Files {
		v.total += f.Size
	}
	// One reading worker: framing and decoding the new journal is several
	// times faster than this visitor (building), so more workers would
	// only fill more read-ahead buffers (each of them memory to fault in)
	// without finishing sooner.
	if err := codec.ReadStore(st, codec.ReadOptions{}, 1, v); err != nil {
		return nil, nil, err
	}
	if err := v.check.finish(); err != nil {
		return nil, nil, err
	}
	g, err := v.Build()
	if err != nil {
		return nil, nil, err
	}
	return st, g, nil
}
