package compact

import (
	"cmp"
	"fmt"
	"slices"
	"sort"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/refgraph"
)

// load replays the store in dir as a broker restarted on it would,
// without the cache, with the journalMaxFileLength given (> 0) or read off
// the store.
func load(dir string, maxFileLength int) (*codec.Store, *refgraph.Graph, error) {
	st, g, _, _, err := analyse(dir, int64(max(maxFileLength, 0)), nil, nil)
	return st, g, err
}

type itemKind uint8

const (
	itemSubscription itemKind = iota // re-encode the sub command at loc, retroactive off
	itemMessage                      // the ADD/UPDATE at loc as a plain ADD
	itemAck                          // a durable ack built from dest, id, sub
	itemEmptyDest                    // an ack of a message that does not exist
	itemVerbatim                     // the record at loc as it is
	itemPlaceholder                  // an ADD with an empty body, id placeholderID
	itemRemove                       // a plain remove of id (no subscription)
	itemRemoveDest                   // KAHA_REMOVE_DESTINATION_COMMAND of removedDest
)

type item struct {
	kind itemKind
	loc  codec.Location
	dest *refgraph.Destination
	id   string
	sub  string
	// removed: the destination of an itemRemoveDest (not in the graph)
	removed codec.Destination
}

type compactPlan struct {
	g *refgraph.Graph
	// locs: the records read from the original, in journal order (read
	// once, by the prefetcher)
	locs chunked[codec.Location]
	// origins: where the write took each message record (ADD, UPDATE)
	// of the new journal from in the original, in journal order, but for
	// the placeholders, which it made (placeholders): what verification
	// compares each one read back with (bodyCheck)
	origins      chunked[codec.Location]
	placeholders chunked[placeholder]
	messages     int // message records written
	counts       Counts
	bytes        int64 // estimated journal bytes
	quirks       []string
	// noRedelivery: see Options.NoRedelivery
	noRedelivery bool
	// written is what write wrote (or, in a dry run, laid out without
	// writing: the same files and bytes).
	written FilesBytes
}

const emptyDestinationID = "ID:kahafs-empty-destination:0:0:0:0"

// plan counts the records of the compacted journal and lists those read
// from the original. The records themselves are listed again, one at a
// time, as they are written (walk), rather than kept.
func plan(st *codec.Store, g *refgraph.Graph, noRedelivery bool) (*compactPlan, error) {
	p := &compactPlan{g: g, noRedelivery: noRedelivery}
	p.quirks = quirks(g, noRedelivery)
	p.counts.Transactions = len(g.PreparedTransactions())
	_ = walk(g, noRedelivery, func(it *item, est int64) error {
		p.bytes += est
		p.counts.Records++
		switch it.kind {
		case itemSubscription:
			p.counts.Subscriptions++
		case itemMessage:
			p.counts.Messages++
		case itemAck:
			p.counts.Acks++
		case itemEmptyDest:
			p.counts.EmptyDestinations++
		case itemPlaceholder:
			p.counts.Placeholders++
		case itemVerbatim:
			p.counts.TransactionRecords++
		case itemRemoveDest:
			p.counts.RemovedDestinations++
		}
		if it.kind.read() {
			p.locs.push(it.loc)
		}
		return nil
	})
	p.bytes += int64(p.counts.Records/100+1) * codec.BatchHeaderSize
	return p, nil
}

// read: the record is read from the original.
func (k itemKind) read() bool {
	return k == itemSubscription || k == itemMessage || k == itemVerbatim
}

// walk calls fn with the records of the compacted journal, in order (see
// the package doc), and an estimate of the size of each. It stops at the
// first error of fn and returns it.
func walk(g *refgraph.Graph, noRedelivery bool, fn func(it *item, est int64) error) error {
	var queues []*refgraph.Destination
	var msgs []*refgraph.Message
	var it item
	for _, d := range g.Destinations() {
		if !d.IsTopic() {
			queues = append(queues, d)
			continue
		}
		msgs = bySeq(msgs[:0], d.Messages)
		if err := walkTopic(d, layoutTopic(d, msgs, noRedelivery), fn); err != nil {
			return err
		}
	}
	for _, d := range queues {
		msgs = bySeq(msgs[:0], d.Messages)
		for _, m := range msgs {
			if m.Unreadable {
				continue // dropped (Report.Dropped)
			}
			it = item{kind: itemMessage, loc: m.Loc, dest: d}
			if err := fn(&it, int64(m.Loc.Size)); err != nil {
				return err
			}
		}
		if len(msgs) == 0 {
			it = item{kind: itemEmptyDest, dest: d}
			if err := fn(&it, 64); err != nil {
				return err
			}
		}
	}
	for _, t := range g.PreparedTransactions() {
		for _, loc := range t.Commands {
			it = item{kind: itemVerbatim, loc: loc}
			if err := fn(&it, int64(loc.Size)); err != nil {
				return err
			}
		}
	}
	for _, d := range removedByTransactions(g) {
		it = item{kind: itemRemoveDest, removed: d}
		if err := fn(&it, int64(32+len(d.Name))); err != nil {
			return err
		}
	}
	return nil
}

// removedByTransactions are the destinations a prepared transaction adds
// messages to that the graph does not hold: the replay of a transactional
// ADD creates its destination, and in the original something removed it
// later (its last durable subscription, a destination removal). The
// compacted journal writes the transaction after everything else, so it
// removes them again after it, for the same live destinations.
func removedByTransactions(g *refgraph.Graph) []codec.Destination {
	live := map[string]bool{}
	for _, d := range g.Destinations() {
		live[d.String()] = true
	}
	var out []codec.Destination
	for _, t := range g.PreparedTransactions() {
		for _, op := range t.Ops {
			if !op.Add || live[op.Destination] {
				continue
			}
			live[op.Destination] = true
			if d, ok := codec.ParseDestination(op.Destination); ok {
				out = append(out, d)
			}
		}
	}
	return out
}

// stillAgain counts the acknowledged messages s is handed again even with
// its last-ack position above every message (--no-redelivery): those past
// the store's first batch (refgraph.Subscription.PendingFiltered).
func stillAgain(s *refgraph.Subscription) int {
	n := 0
	for _, m := range s.PendingFiltered() {
		if !s.InAckPositions(m.Seq) {
			n++
		}
	}
	return n
}

// quirks lists what a restarted broker does on g that the compacted store
// carries over (or, with noRedelivery, drops), and what layoutTopic cannot
// reproduce.
func quirks(g *refgraph.Graph, noRedelivery bool) []string {
	var out []string
	for _, d := range g.Destinations() {
		if n := d.Stats.CountDrift; n != 0 && !d.IsTopic() {
			out = append(out, fmt.Sprintf("%s: the broker's stored count is off by %d (%d undelivered); the compacted store's is right, so a broker delivers all of its messages", d, n, len(d.Undelivered())))
		}
		for _, s := range d.Subscriptions {
			again := s.DeliveredAgain()
			if len(again) == 0 {
				continue
			}
			what := "the compacted store does the same (--no-redelivery drops them)"
			still := stillAgain(s)
			if still > 0 {
				what = fmt.Sprintf("the compacted store does the same (--no-redelivery drops all but %d of them: the store filters only its first batch of %d by the acknowledgements)", still, refgraph.MaxPageSize)
			}
			if noRedelivery {
				what = "the compacted store does not (--no-redelivery)"
				if still > 0 {
					what = fmt.Sprintf("the compacted store hands it %d of them still (--no-redelivery: the store filters only its first batch of %d messages by the acknowledgements, and these come after it)", still, refgraph.MaxPageSize)
				}
			}
			sel := ""
			if s.HasSelector {
				sel = " (of those, the broker delivers the ones its selector matches)"
			}
			out = append(out, fmt.Sprintf("%s %s: a restarted broker hands it %d message(s) it had acknowledged again (%s …), its acks having been processed out of order%s; %s",
				d, s.Key, len(again), again[0].ID(), sel, what))
		}
		if d.IsTopic() {
			var msgs []*refgraph.Message
			out = append(out, layoutTopic(d, bySeq(msgs, d.Messages), noRedelivery).deviations...)
		}
	}
	return out
}

// walkTopic calls fn with the records of topic d's new journal, as tl
// plans them (see topic.go).
func walkTopic(d *refgraph.Destination, tl *topicLayout, fn func(it *item, est int64) error) error {
	var it item
	emit := func(k itemKind, loc codec.Location, id, sub string) error {
		it = item{kind: k, loc: loc, dest: d, id: id, sub: sub}
		est := int64(40 + len(d.Name) + len(id) + len(sub))
		if k.read() {
			est = int64(loc.Size)
		}
		return fn(&it, est)
	}
	slotID := func(sl slot) string {
		if sl.msg != nil {
			return sl.msg.ID()
		}
		return placeholderID(sl.seq)
	}
	ack := func(sub string, v int64) error {
		i := sort.Search(len(tl.slots), func(i int) bool { return tl.slots[i].seq >= v })
		return emit(itemAck, codec.Location{}, slotID(tl.slots[i]), sub)
	}
	for i := range tl.subs {
		if sl := &tl.subs[i]; sl.early {
			if err := emit(itemSubscription, sl.sub.Loc, "", ""); err != nil {
				return err
			}
		}
	}
	for _, sl := range tl.slots {
		var err error
		if sl.msg != nil {
			err = emit(itemMessage, sl.msg.Loc, "", "")
		} else {
			err = emit(itemPlaceholder, codec.Location{}, placeholderID(sl.seq), "")
		}
		if err != nil {
			return err
		}
	}
	for i := range tl.subs {
		if sl := &tl.subs[i]; !sl.early {
			if err := emit(itemSubscription, sl.sub.Loc, "", ""); err != nil {
				return err
			}
		}
	}
	for i := range tl.subs {
		if sl := &tl.subs[i]; !sl.early && sl.hasFinal {
			if err := ack(sl.sub.Key, sl.final); err != nil {
				return err
			}
		}
	}
	for i := range tl.subs {
		sl := &tl.subs[i]
		if !sl.early {
			continue
		}
		for _, s := range tl.slots {
			if (sl.hasFinal && s.seq == sl.final) || sl.inSet(s.seq) {
				continue
			}
			if err := emit(itemAck, codec.Location{}, slotID(s), sl.sub.Key); err != nil {
				return err
			}
		}
		if sl.hasFinal {
			if err := ack(sl.sub.Key, sl.final); err != nil {
				return err
			}
		}
	}
	for _, s := range tl.slots {
		if s.msg == nil && tl.kept(s.seq) {
			if err := emit(itemRemove, codec.Location{}, placeholderID(s.seq), ""); err != nil {
				return err
			}
		}
	}
	if len(d.Subscriptions) == 0 && len(tl.slots) == 0 {
		return emit(itemEmptyDest, codec.Location{}, "", "")
	}
	return nil
}

// bySeq appends pointers to ms, in sequence order, to out.
func bySeq(out []*refgraph.Message, ms []refgraph.Message) []*refgraph.Message {
	for i := range ms {
		out = append(out, &ms[i])
	}
	slices.SortFunc(out, func(a, b *refgraph.Message) int { return cmp.Compare(a.Seq, b.Seq) })
	return out
}

// batchSize is the largest batch the compacted journal is written in.
// Any size up to the broker's journalMaxWriteBatchSize (4 MiB) makes a
// valid journal; batches well below the 1 MiB buffers the verification
// replay reads in (codec's framer) each fit in one, and one batch being
// built stays in the CPU's cache.
const batchSize = 128 << 10

// read starts reading the records the plan needs from st, ahead of the
// write (which can start later: the reading is under way meanwhile).
// The caller closes the prefetcher.
func (p *compactPlan) read(st *codec.Store) *prefetcher {
	return prefetch(newRecordSource(st), &p.locs)
}

// write writes the planned records, read by pf (see read), into dir and
// returns how many, and the ids of the files written. The files are not
// fsynced (see syncJournal).
func (p *compactPlan) write(pf *prefetcher, dir string, opts Options) (int, []int32, error) {
	p.origins, p.placeholders, p.messages = chunked[codec.Location]{}, chunked[placeholder]{}, 0
	w := codec.NewJournalWriter(dir, codec.WriterOptions{MaxFileLength: int(opts.MaxFileLength), MaxBatchSize: batchSize, NoSync: true, Discard: opts.DryRun || dir == "", Preallocate: true,
		Written: opts.writeProgress(p.bytes)})
	var c codec.Command
	var scratch []byte
	n, reads := 0, 0
	err := walk(p.g, p.noRedelivery, func(it *item, _ int64) error {
		if n == p.counts.Records/2 {
			opts.crash("writing")
		}
		var f *fetched
		if it.kind.read() {
			reads++
			var err error
			if f, err = pf.next(); err != nil {
				return err
			}
			if f.loc != it.loc {
				return fmt.Errorf("compact: record %v was not planned", it.loc)
			}
		}
		switch it.kind {
		case itemVerbatim:
			if _, err := w.Append(f.pl); err != nil {
				return err
			}
			if f.message {
				p.origin(it.loc, opts)
			}
		case itemSubscription, itemMessage:
			if f.derr != nil {
				return fmt.Errorf("record %v: %w", it.loc, f.derr)
			}
			c := &f.c
			if it.kind == itemSubscription {
				if c.Type != codec.SubscriptionCommand {
					return fmt.Errorf("record %v: %s is not a subscription command", it.loc, c.Type)
				}
				c.Retroactive = false
			} else {
				if !f.message {
					return fmt.Errorf("record %v: %s is not a message", it.loc, c.Type)
				}
				c.Type, c.Update, c.HasInner = codec.AddMessageCommand, false, false
				c.Tx = codec.TxID{}
				c.Clear(codec.FieldAddTransaction)
				if opts.tamper != nil && !opts.tamper(c) {
					n++ // left out (a test of the verification)
					return nil
				}
				p.origin(it.loc, opts)
			}
			if _, err := w.AppendCommand(c); err != nil {
				return err
			}
		case itemPlaceholder:
			scratch = append(append(scratch[:0], it.dest.Name...), it.id...)
			c = *codec.NewAddMessageCommand(codec.TxID{}, codec.NewDestination(it.dest.Type, scratch[:len(it.dest.Name)]),
				scratch[len(it.dest.Name):], scratch[:0:0], 4, false)
			if !opts.DryRun {
				p.placeholders.push(placeholder{at: p.messages, t: it.dest.Type, name: it.dest.Name, id: it.id})
			}
			p.messages++
			if _, err := w.AppendCommand(&c); err != nil {
				return err
			}
		case itemRemoveDest:
			c = *codec.NewRemoveDestinationCommand(it.removed)
			if _, err := w.AppendCommand(&c); err != nil {
				return err
			}
		case itemAck, itemEmptyDest, itemRemove:
			// What codec.NewRemoveMessageCommand builds, with the bytes
			// in one reused buffer.
			id, sub := it.id, it.sub
			if it.kind == itemEmptyDest {
				id = emptyDestinationID
			}
			scratch = append(append(append(scratch[:0], it.dest.Name...), id...), sub...)
			name, rest := scratch[:len(it.dest.Name)], scratch[len(it.dest.Name):]
			c = codec.Command{Type: codec.RemoveMessageCommand, Dest: codec.NewDestination(it.dest.Type, name),
				MessageID: rest[:len(id)]}
			c.Set(codec.FieldRemoveDestination, codec.FieldRemoveMessageID)
			if it.kind == itemAck {
				c.Ack, c.SubscriptionKey = rest[len(id):len(id)], rest[len(id):]
				c.Set(codec.FieldRemoveAck, codec.FieldRemoveSubscriptionKey)
			}
			if _, err := w.AppendCommand(&c); err != nil {
				return err
			}
		}
		n++
		return nil
	})
	if err != nil {
		w.Abort()
		return n, nil, err
	}
	if n != p.counts.Records || reads != p.locs.len() {
		w.Abort()
		return n, nil, fmt.Errorf("compact: %d records written, %d planned", n, p.counts.Records)
	}
	if err := w.Close(); err != nil {
		w.Abort()
		return n, nil, err
	}
	p.written = FilesBytes{Files: len(w.Files()), Bytes: w.Bytes()}
	return n, w.Files(), nil
}

// placeholder is what a placeholder ADD written as message record number
// at of the new journal holds: an empty message of priority 4 (without
// the prioritySupported flag) of id in destination name of type t.
type placeholder struct {
	at       int
	t        codec.DestType
	name, id string
}

// origin notes that the next message record written is taken from the
// original's record at loc.
func (p *compactPlan) origin(loc codec.Location, opts Options) {
	if !opts.DryRun {
		p.origins.push(loc)
	}
	p.messages++
}
