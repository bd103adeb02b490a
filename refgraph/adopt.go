package refgraph

import (
	"errors"
	"fmt"
	"sort"

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
// to adopt and it has not been adopted yet.
func (b *Builder) adoptIndex() error {
	if b.adopted || b.opts.LoadIndex == nil || !b.hasRecovery {
		return nil
	}
	b.adopted = true
	ix, err := b.opts.LoadIndex()
	var ce *kahaindex.CorruptionError
	switch {
	case errors.As(err, &ce) && ce.AtLoad:
		return fmt.Errorf("%w: %v", ErrIndexRebuild, err)
	case err != nil:
		// the broker loads it and meets the damage later, or kahafs could
		// not read it: the journal's own account stands
		b.warnf("index not used: %v", err)
		return nil
	}
	if ix == nil || ix.Fresh {
		return nil
	}
	b.diffs = b.indexDiffs(ix)
	known, subSize := b.dropReplayed()
	b.indexKeys = b.indexKeys[:0]
	var c codec.Command
	for _, xd := range ix.Destinations {
		if xd.Type < 0 || int(xd.Type) >= len(b.dests) {
			b.warnf("index: destination %q has an unknown type", xd.Key)
			continue
		}
		d := b.adoptDest(xd, known, subSize, &c)
		b.dests[d.typ][d.name] = d
		b.indexKeys = append(b.indexKeys, d.key)
	}
	b.adoptedIndex = true
	return nil
}

// dropReplayed empties the destinations the replay made before the
// recovery position, returning what it knew of their records, by
// location: the messages (known) and the sizes of the subscription
// commands (subSize; the index keeps none).
func (b *Builder) dropReplayed() (known map[[2]int32]entry, subSize map[[2]int32]int32) {
	known = map[[2]int32]entry{}
	subSize = map[[2]int32]int32{}
	for _, m := range b.dests {
		for _, d := range m {
			d.entries.each(func(_ int64, e entry) {
				known[[2]int32{e.loc.File, e.loc.Offset}] = e
				b.ids.release(e.id)
			})
			for _, s := range d.subs {
				subSize[[2]int32{s.loc.File, s.loc.Offset}] = s.loc.Size
			}
		}
	}
	for i := range b.dests {
		b.dests[i] = map[string]*dest{}
	}
	clear(b.destCache[:])
	return known, subSize
}

// adoptDest makes the destination xd of the index, with the details of
// its messages the replay knew (known) or read from their records (c:
// scratch), and its durable subscriptions.
func (b *Builder) adoptDest(xd *kahaindex.Destination, known map[[2]int32]entry, subSize map[[2]int32]int32, c *codec.Command) *dest {
	name := b.names.get([]byte(xd.Name))
	d := &dest{typ: xd.Type, name: name, key: xd.Key, topic: xd.Type.IsTopic() || xd.Topic,
		nextSeq: xd.NextSeq, entries: newOrderIndex(len(xd.Messages)), ids: newIDIndex(len(xd.Messages))}
	for _, m := range xd.Messages {
		k := b.ids.intern([]byte(m.ID))
		if _, dup := d.ids.get(k); dup {
			b.ids.release(k)
			continue
		}
		e := entry{id: k, loc: m.Loc, class: int8(m.Class)}
		if o, ok := known[[2]int32{m.Loc.File, m.Loc.Offset}]; ok {
			e.prio, e.size, e.flags = o.prio, o.size, o.flags
		} else if err := b.recordDetails(&e, c); err != nil {
			// the broker reads the record when it delivers the
			// message: say so, keep what the index tells (and do not
			// save this state: the journal may yet grow to hold it)
			// A record past the end of its file (or in a missing
			// file) is said once, with the others of its file and
			// destination, by the lost-messages warning.
			if !errors.Is(err, codec.ErrTruncated) && !errors.Is(err, codec.ErrMissingFile) {
				b.warnf("index: %s of %s at %s: %v", m.ID, xd.Key, m.Loc, err)
			}
			b.indexAhead = true
			e.flags |= flagUnreadable
			e.prio = classPriority(e.class)
			if e.class != classDEF {
				e.flags |= flagPrioSupported
			}
		}
		d.entries.set(m.Seq, e)
		d.ids.set(k, m.Seq)
		d.count++
		d.bytes += int64(m.Loc.Size)
	}
	if xd.Stats != nil {
		d.statDelta = xd.Stats.Count - d.count
	}
	for _, xs := range xd.Subscriptions {
		if !xs.HasCommand {
			continue // not a subscription for the broker (only in the other structures)
		}
		if err := xs.DecodeCommand(c); err != nil {
			b.warnf("index: subscription %s of %s: %v", xs.Key, xd.Key, err)
			continue
		}
		s := &sub{key: b.names.get([]byte(xs.Key)), info: append([]byte(nil), c.SubscriptionInfo...), retro: c.Retroactive, lastAck: -1}
		if xs.HasLoc {
			s.loc = xs.Loc
			if s.loc.Size == 0 {
				s.loc.Size = b.recordSize(s.loc, subSize)
			}
		}
		if xs.HasLastAck {
			s.lastAck = xs.LastAck
		}
		if xs.HasAckPositions {
			for _, r := range xs.AckPositions {
				s.pos.addRange(r.First, r.Last)
			}
			s.hasPos = !s.pos.empty()
		}
		d.subs = append(d.subs, s)
	}
	return d
}

// recordSize is the size of the record at loc: known from the replay, or
// read (0 when it cannot be).
func (b *Builder) recordSize(loc codec.Location, known map[[2]int32]int32) int32 {
	if n, ok := known[[2]int32{loc.File, loc.Offset}]; ok && n > 0 {
		return n
	}
	if b.opts.ReadRecord == nil {
		return 0
	}
	var c codec.Command
	full, err := b.opts.ReadRecord(loc, &c)
	if err != nil {
		b.warnf("index: the subscription command at %s: %v", loc, err)
		return 0
	}
	return full.Size
}

// recordDetails fills the priority, size and kind of e from its record.
func (b *Builder) recordDetails(e *entry, c *codec.Command) error {
	if b.opts.ReadRecord == nil {
		return fmt.Errorf("its record was not read")
	}
	if _, err := b.opts.ReadRecord(e.loc, c); err != nil {
		return err
	}
	switch c.Type {
	case codec.AddMessageCommand, codec.UpdateMessageCommand:
	default:
		return fmt.Errorf("the index points at a %s, not a message", c.Type)
	}
	e.prio, e.size = c.Priority, int32(len(c.Message))
	if c.PrioritySupported {
		e.flags |= flagPrioSupported
	}
	if c.Type == codec.UpdateMessageCommand {
		e.flags |= flagUpdated
	}
	return nil
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

// indexDiffs compares the replayed state (the journal alone, up to the
// recovery position) with the index's.
func (b *Builder) indexDiffs(ix *kahaindex.Index) []IndexDiff {
	var out []IndexDiff
	inIndex := map[string]*kahaindex.Destination{}
	for _, xd := range ix.Destinations {
		inIndex[xd.Key] = xd
	}
	var keys []string
	for _, m := range b.dests {
		for k := range m {
			keys = append(keys, m[k].key)
		}
	}
	sort.Strings(keys)
	seen := map[string]bool{}
	for _, k := range keys {
		seen[k] = true
		d := b.destByKey(k)
		q := d.typ.Scheme() + "://" + d.name
		xd := inIndex[k]
		if xd == nil {
			out = append(out, IndexDiff{Kind: "destination", Destination: q, Count: d.entries.len()})
			continue
		}
		have := make(map[string]bool, len(xd.Messages))
		for _, m := range xd.Messages {
			have[m.ID] = true
		}
		var extra []string
		journal := map[string]bool{}
		d.entries.each(func(_ int64, e entry) {
			id := b.ids.String(e.id)
			journal[id] = true
			if !have[id] {
				extra = append(extra, id)
			}
		})
		if len(extra) > 0 {
			sort.Strings(extra)
			out = append(out, IndexDiff{Kind: "messages", Destination: q, Count: len(extra), MessageIDs: extra[:min(len(extra), maxDiffIDs)]})
		}
		var only []string
		for _, m := range xd.Messages {
			if !journal[m.ID] {
				only = append(only, m.ID)
			}
		}
		if len(only) > 0 {
			sort.Strings(only)
			out = append(out, IndexDiff{Kind: "index-only-messages", Destination: q, Count: len(only), MessageIDs: only[:min(len(only), maxDiffIDs)]})
		}
		subs := map[string]bool{}
		for _, xs := range xd.Subscriptions {
			if xs.HasCommand {
				subs[xs.Key] = true
			}
		}
		for _, s := range d.subs {
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
	}
	for _, xd := range ix.Destinations {
		if !seen[xd.Key] {
			out = append(out, IndexDiff{Kind: "index-only-destination", Destination: xd.Type.Scheme() + "://" + xd.Name, Count: len(xd.Messages)})
		}
	}
	return out
}
