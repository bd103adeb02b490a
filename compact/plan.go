package compact

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/refgraph"
	"github.com/kahafs/kahafs/replaycache"
)

// load replays the store in dir as a broker restarted on it would. An
// unreadable index is ignored, as the broker rebuilds it from the journal.
func load(dir string, maxFileLength int) (*codec.Store, *refgraph.Graph, error) {
	return loadCached(dir, maxFileLength, nil)
}

// loadCached is load through the analysis cache (nil: none). The cache
// trusts a data file only when its device, inode, size, mtime and ctime
// are the ones recorded (and, for the last one, its bytes up to the
// recorded end), and it is consulted under the store's lock, so a stale
// cache cannot drive a compaction; the verification replays the new
// journal in full all the same.
func loadCached(dir string, maxFileLength int, cache *replaycache.Options) (*codec.Store, *refgraph.Graph, error) {
	st, opts, err := openForReplay(dir, maxFileLength)
	if err != nil {
		return nil, nil, err
	}
	if cache == nil {
		g, err := refgraph.Load(st, opts, codec.ReadOptions{})
		if err != nil {
			return nil, nil, err
		}
		return st, g, nil
	}
	res, err := replaycache.Load(st, opts, codec.ReadOptions{}, *cache)
	if err != nil {
		return nil, nil, err
	}
	return st, res.Graph, nil
}

// openForReplay lists the store in dir and the replay options of a broker
// restarted on it (its index when readable).
func openForReplay(dir string, maxFileLength int) (*codec.Store, refgraph.Options, error) {
	st, err := codec.OpenStore(dir)
	if err != nil {
		return nil, refgraph.Options{}, err
	}
	opts := refgraph.StoreOptions(st, true, nil)
	opts.MaxFileLength = int64(maxFileLength)
	return st, opts, nil
}

type itemKind uint8

const (
	itemSubscription itemKind = iota // re-encode the sub command at loc, retroactive off
	itemMessage                      // the ADD/UPDATE at loc as a plain ADD
	itemAck                          // a durable ack built from dest, id, sub
	itemEmptyDest                    // an ack of a message that does not exist
	itemVerbatim                     // the record at loc as it is
)

type item struct {
	kind itemKind
	loc  codec.Location
	dest *refgraph.Destination
	id   string
	sub  string
}

type compactPlan struct {
	items  []item
	bodies map[codec.Location]bodySum // messages written, by their original location
	counts Counts
	bytes  int64 // estimated journal bytes
}

const emptyDestinationID = "ID:kahafs-empty-destination:0:0:0:0"

// plan lists the records of the compacted journal (see the package doc).
func plan(st *codec.Store, g *refgraph.Graph) (*compactPlan, error) {
	p := &compactPlan{items: make([]item, 0, planSize(g))}
	add := func(it item, est int64) {
		p.items = append(p.items, it)
		p.bytes += est
	}
	var queues []*refgraph.Destination
	var msgs []*refgraph.Message
	var pend []int64
	for _, d := range g.Destinations() {
		if !d.IsTopic() {
			queues = append(queues, d)
			continue
		}
		for _, s := range d.Subscriptions {
			add(item{kind: itemSubscription, loc: s.Loc, dest: d}, int64(s.Loc.Size))
			p.counts.Subscriptions++
		}
		msgs = bySeq(msgs[:0], d.Messages)
		for _, m := range msgs {
			add(item{kind: itemMessage, loc: m.Loc, dest: d}, int64(m.Loc.Size))
			p.counts.Messages++
		}
		for _, s := range d.Subscriptions {
			// Ack every message of the destination that is not pending
			// for the subscription: walk both in sequence order.
			pend = pend[:0]
			for i := 0; i < s.NumPending(); i++ {
				pend = append(pend, s.PendingAt(i).Seq)
			}
			slices.Sort(pend)
			j := 0
			for _, m := range msgs {
				for j < len(pend) && pend[j] < m.Seq {
					j++
				}
				if j < len(pend) && pend[j] == m.Seq {
					continue
				}
				add(item{kind: itemAck, dest: d, id: m.ID, sub: s.Key}, int64(40+len(d.Name)+len(m.ID)+len(s.Key)))
				p.counts.Acks++
			}
		}
		if len(d.Subscriptions) == 0 && len(msgs) == 0 {
			add(item{kind: itemEmptyDest, dest: d}, 64)
			p.counts.EmptyDestinations++
		}
	}
	for _, d := range queues {
		msgs = bySeq(msgs[:0], d.Messages)
		for _, m := range msgs {
			add(item{kind: itemMessage, loc: m.Loc, dest: d}, int64(m.Loc.Size))
			p.counts.Messages++
		}
		if len(msgs) == 0 {
			add(item{kind: itemEmptyDest, dest: d}, 64)
			p.counts.EmptyDestinations++
		}
	}
	for _, t := range g.PreparedTransactions() {
		p.counts.Transactions++
		for _, loc := range t.Commands {
			add(item{kind: itemVerbatim, loc: loc}, int64(loc.Size))
			p.counts.TransactionRecords++
		}
	}
	p.counts.Records = len(p.items)
	p.bytes += int64(len(p.items)/100+1) * codec.BatchHeaderSize
	return p, nil
}

// planSize estimates how many records plan lists (exactly, unless a
// subscription's pending messages are not all among its destination's).
func planSize(g *refgraph.Graph) int {
	n := 0
	for _, d := range g.Destinations() {
		n += max(len(d.Messages), 1)
		for _, s := range d.Subscriptions {
			n += 1 + max(len(d.Messages)-s.NumPending(), 0)
		}
	}
	for _, t := range g.PreparedTransactions() {
		n += len(t.Commands)
	}
	return n
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

// write writes the planned records into dir and returns how many, and the
// ids of the files written. The files are not fsynced (see syncJournal).
func (p *compactPlan) write(st *codec.Store, dir string, opts Options) (int, []int32, error) {
	src := newRecordSource(st)
	defer src.close()
	locs := make([]codec.Location, 0, p.counts.Messages+p.counts.Subscriptions+p.counts.TransactionRecords)
	for _, it := range p.items {
		if it.kind == itemVerbatim || it.kind == itemSubscription || it.kind == itemMessage {
			locs = append(locs, it.loc)
		}
	}
	pf := prefetch(src, locs)
	defer pf.close()
	p.bodies = make(map[codec.Location]bodySum, p.counts.Messages)
	w := codec.NewJournalWriter(dir, codec.WriterOptions{MaxFileLength: opts.MaxFileLength, MaxBatchSize: batchSize, NoSync: true})
	var c codec.Command
	var scratch []byte
	n := 0
	for i, it := range p.items {
		if i == len(p.items)/2 {
			opts.crash("writing")
		}
		switch it.kind {
		case itemVerbatim:
			pl, err := pf.next()
			if err != nil {
				return n, nil, err
			}
			if _, err := w.Append(pl); err != nil {
				return n, nil, err
			}
		case itemSubscription, itemMessage:
			pl, err := pf.next()
			if err != nil {
				return n, nil, err
			}
			if err := codec.DecodeCommand(pl, &c); err != nil {
				return n, nil, fmt.Errorf("record %v: %w", it.loc, err)
			}
			if it.kind == itemSubscription {
				if c.Type != codec.SubscriptionCommand {
					return n, nil, fmt.Errorf("record %v: %s is not a subscription command", it.loc, c.Type)
				}
				c.Retroactive = false
			} else {
				if c.Type != codec.AddMessageCommand && c.Type != codec.UpdateMessageCommand {
					return n, nil, fmt.Errorf("record %v: %s is not a message", it.loc, c.Type)
				}
				p.bodies[it.loc] = sumOf(&c)
				c.Type, c.Update, c.HasInner = codec.AddMessageCommand, false, false
				c.Tx = codec.TxID{}
				c.Fields &^= 1 << 1
			}
			if _, err := w.AppendCommand(&c); err != nil {
				return n, nil, err
			}
		case itemAck, itemEmptyDest:
			// What codec.NewRemoveMessageCommand builds, with the bytes
			// in one reused buffer.
			id, sub := it.id, it.sub
			if it.kind == itemEmptyDest {
				id = emptyDestinationID
			}
			scratch = append(append(append(scratch[:0], it.dest.Name...), id...), sub...)
			name, rest := scratch[:len(it.dest.Name)], scratch[len(it.dest.Name):]
			c = codec.Command{Type: codec.RemoveMessageCommand, Dest: codec.NewDestination(it.dest.Type, name),
				MessageID: rest[:len(id)], Fields: 1<<2 | 1<<3}
			if it.kind == itemAck {
				c.Ack, c.SubscriptionKey = rest[len(id):len(id)], rest[len(id):]
				c.Fields |= 1<<4 | 1<<5
			}
			if _, err := w.AppendCommand(&c); err != nil {
				return n, nil, err
			}
		}
		n++
	}
	if err := w.Close(); err != nil {
		return n, nil, err
	}
	return n, w.Files(), nil
}
