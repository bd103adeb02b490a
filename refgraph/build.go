package refgraph

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime/trace"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/kahaindex"
	"github.com/kahafs/kahafs/openwire"
)

// Build finishes the replay: it settles the transactions as a restarted
// broker would (Options.Running: as they are), materialises destinations
// and subscriptions, emulates the broker's next cleanup and explains every
// data file. The Builder is spent afterwards.
func (b *Builder) Build() (*Graph, error) {
	if b.built {
		return nil, errBuilt
	}
	if err := b.reach(math.MaxInt32); err != nil {
		return nil, err
	}
	if b.hasRecovery && !b.phaseB {
		// the recovery position is after the last record: the broker
		// replays nothing
		b.dropUnknownTxs(b.recovery)
	}
	if err := b.adoptIndex(); err != nil { // the recovery position is after the last record
		return nil, err
	}
	if !b.adoptedIndex && b.opts.LoadIndex != nil {
		b.unknownLocs()
	}
	b.finishAdoption()
	defer trace.StartRegion(context.Background(), "refgraph: build the graph").End()
	b.built = true
	g := &Graph{fileByID: map[int32]*File{}, destByK: map[string]*Destination{}}
	sort.Slice(b.files, func(i, j int) bool { return b.files[i].ID < b.files[j].ID })
	for _, f := range b.files {
		for _, d := range f.Damage {
			if !codec.IsTail(d) {
				g.damaged = true
			}
		}
	}
	b.checkMissing(g)
	if len(b.indexDamage) > 0 {
		g.damaged = true
		g.indexDamage = slices.Clone(b.indexDamage)
	}

	// transactions still open at the end of the journal, in the order the
	// broker met them
	open := make([]*txState, 0, len(b.txs))
	for _, t := range b.txs {
		open = append(open, t)
	}
	sort.Slice(open, func(i, j int) bool { return open[i].order < open[j].order })

	in := b.cleanupInput(b.opts, open)
	cl := in.point(nil, nil)
	b.materialize(g, open)
	g.order = b.destOrder(b.opts.Index, b.hasRecovery)
	inprog := inProgress(open, b.opts.Running)
	plan := in.plan(in.destSteps(g), cl, inprog, nil)
	g.cleanIn = in
	g.gc = append([]int32{}, plan.deleted.ids...)
	g.gcLog = plan.log
	g.keptForAcks = plan.keptForAcks
	for _, f := range b.files {
		f.Pinned = !plan.deleted.has(f.ID)
	}
	b.label(explain(&b.model, g, cl, plan, inprog, b.opts.Running))
	b.listTransactions(g, open)

	g.files = b.files
	for _, f := range b.files {
		g.fileByID[f.ID] = f
	}
	ackChains(g.files, g.fileByID, plan.acks)
	s := &g.summary
	s.Files = len(b.files)
	for _, f := range b.files {
		if f.Pinned {
			s.PinnedFiles++
		} else {
			s.FreeFiles++
		}
	}
	s.Commands, s.SkippedCommands = b.commands, b.skipped
	s.Committed, s.RolledBack = b.nCommit, b.nRollbk
	s.LastUpdate, s.HasLastUpdate = b.lastUpdate, b.hasLastUpdate
	s.CleanupLastUpdate, s.HasCleanupLastUpdate = cl.lastUpdate, cl.hasLastUpdate
	s.RecoveryStart, s.HasRecoveryStart = b.phaseBStart, b.seenPhaseB && b.hasRecovery
	s.UsedIndex = b.opts.Index != nil && b.hasRecovery
	g.warnings = b.warnings
	g.diffs = b.diffs
	if b.adoptedIndex {
		g.rebuildLoss = rebuildLosses(g, b.spannedTx)
	}
	return g, nil
}

// label gives every file its holders (the reasons of a pinned file) and
// notes.
func (m *model) label(h holders) {
	for _, f := range m.files {
		f.Reasons, f.Notes = h.reasons[f.ID], h.notes[f.ID]
		if f.Pinned && len(f.Reasons) == 0 {
			// The emulation kept the file for a reason the explanation
			// does not name: say so rather than leave it unexplained.
			m.warnf("%s is kept by the emulated cleanup without a named holder", f.Name)
		}
		if !f.Pinned {
			f.Reasons = nil
		}
	}
}

// cleanup is the state the predicted cleanup starts from.
type cleanup struct {
	lastUpdate    codec.Location
	hasLastUpdate bool
	newFiles      []int32 // files the restart (and the actions written after it) create
	audit, ackMap codec.Location
	hasAudit      bool
	hasAckMap     bool
	auditNew      bool // written by the cleanup's own checkpoint
	ackMapNew     bool
	rolledBack    []*txState // local transactions a restart rolls back
}

// point works out lastUpdate and the audit and ack-map locations of the
// predicted cleanup. After a restart: recovery appends a rollback record
// per in-flight local transaction and a "LOADED <date>" trace (the trace
// is the last update), and the stop checkpoint writes a fresh producer
// audit and ack map before collecting (§5.3, §6.1). writes are records an
// admin's actions append before the cleanup (after the restart's, or at
// the end of a running broker's journal): the last of them is the last
// update; point calls landed (when not nil) with where each lands, in
// order.
func (in *cleanupInput) point(writes []Write, landed func(i int, loc codec.Location)) cleanup {
	var cl cleanup
	// the file a restarted broker appends to: the newest one that is not
	// empty. Journal.start leaves a zero-length data file out of the files
	// it appends to ("ignoring zero length, partially initialised journal
	// data file": a kill right after the journal created its next file), so
	// the restart's writes go to the file before it, not into it (seen on
	// a real broker, issue 25: seed 58 killed with an empty db-22.log, its
	// LOADED trace at 21:3159). A running broker appends after its last
	// record (below).
	var file int32
	var end int64
	for _, f := range in.files {
		if f.empty {
			continue
		}
		if f.id > file {
			file, end = f.id, f.end
		}
	}
	if file == 0 {
		file, end = 1, 0
	}
	appendRec := func(size int32) codec.Location {
		if end > 0 && end+int64(size) >= in.maxFileLength {
			file++
			end = 0
			cl.newFiles = append(cl.newFiles, file)
		}
		loc := codec.Location{File: file, Offset: int32(end + codec.BatchHeaderSize), Size: size}
		end += codec.BatchHeaderSize + int64(size)
		return loc
	}
	appendWrites := func() {
		var loc codec.Location
		for i, w := range writes {
			loc = appendRec(w.Size)
			if landed != nil {
				landed(i, loc)
			}
		}
		if len(writes) > 0 {
			cl.lastUpdate, cl.hasLastUpdate = loc, true
		}
	}
	if in.running {
		cl.lastUpdate, cl.hasLastUpdate = in.pos.lastUpdate, in.pos.hasLastUpdate
		if len(writes) > 0 {
			// a running broker appends after its last record
			file, end = in.pos.lastRecord.File, int64(in.pos.lastRecord.Offset)+int64(in.pos.lastRecord.Size)
		}
		appendWrites()
		// The checkpoint before the cleanup writes a new audit when a
		// message was stored since the last one, and a new ack map when
		// acks were recorded since (approximation: the broker only marks
		// the map dirty for an ack file not in it yet).
		if in.pos.hasAudit && !in.pos.addAfterAudit {
			cl.audit, cl.hasAudit = in.pos.lastAudit, true
		} else {
			cl.hasAudit, cl.auditNew = true, true
			cl.audit = codec.Location{File: in.pos.lastRecord.File}
		}
		if in.pos.hasAckMap && !in.pos.ackAfterMap && len(writes) == 0 {
			cl.ackMap, cl.hasAckMap = in.pos.lastAckMap, true
		} else {
			cl.hasAckMap, cl.ackMapNew = true, true
			cl.ackMap = codec.Location{File: in.pos.lastRecord.File}
			if len(writes) > 0 {
				cl.ackMap.File = file
			}
		}
		return cl
	}
	for _, t := range in.open {
		if !t.xa && !t.prepared {
			appendRec(t.rbSize)
			cl.rolledBack = append(cl.rolledBack, t)
		}
	}
	cl.lastUpdate, cl.hasLastUpdate = appendRec(in.restartTraceSize), true
	appendWrites()
	// the stop checkpoint's audit and ack map come after the trace
	auditSize := int32(375)
	if in.pos.hasAudit {
		auditSize = in.pos.lastAudit.Size
	}
	cl.audit, cl.hasAudit, cl.auditNew = appendRec(auditSize), true, true
	ackSize := int32(91)
	if in.pos.hasAckMap {
		ackSize = in.pos.lastAckMap.Size
	}
	cl.ackMap, cl.hasAckMap, cl.ackMapNew = appendRec(ackSize), true, true
	return cl
}

// inProgress lists the transactions whose operations the cleanup's
// transaction range covers.
func inProgress(open []*txState, running bool) []*txState {
	var out []*txState
	for _, t := range open {
		if len(t.ops) == 0 {
			continue
		}
		if running || t.prepared {
			out = append(out, t)
		}
	}
	return out
}

// ---- destinations ----

// preparedAcks are the acks of the prepared transactions a restarted
// broker recovers (KahaDBTransactionStore.recover → trackRecoveredAcks):
// per destination key, the acked message ids of queue acks (sub "") and
// of each durable subscription, with the transaction.
type preparedAcks map[string]map[string]map[string]string

func (m *model) preparedAcks(open []*txState) preparedAcks {
	pa := preparedAcks{}
	for _, t := range open {
		if !t.prepared {
			continue
		}
		for _, op := range t.ops {
			if op.add {
				continue
			}
			key := strconv.Itoa(int(op.typ)) + ":" + op.name
			bySub := pa[key]
			if bySub == nil {
				bySub = map[string]map[string]string{}
				pa[key] = bySub
			}
			sub := ""
			if op.hasSub {
				sub = op.subKey
			}
			ids := bySub[sub]
			if ids == nil {
				ids = map[string]string{}
				bySub[sub] = ids
			}
			ids[m.ids.String(op.id)] = t.id
		}
	}
	return pa
}

// materialize makes the graph's destinations and subscriptions from the
// model's, with what each delivers when a broker starts (queueDelivery,
// subscriptionDelivery: the pending order is worked out there and only
// there).
func (m *model) materialize(g *Graph, open []*txState) {
	var all []*dest
	for _, byName := range m.dests {
		for _, d := range byName {
			all = append(all, d)
		}
	}
	// by key: warnings in one order
	sort.Slice(all, func(i, j int) bool { return all[i].key < all[j].key })
	pa := m.preparedAcks(open)
	// the builder's per-message maps go as the graph takes their place:
	// the id index now, each order index once its messages are made (what
	// Build does after materialize reads the graph's messages)
	for _, d := range all {
		d.ids = idIndex{}
	}
	// One destination at a time: made on every core, two destinations'
	// messages and draining order indexes at once cost up to 50 MiB more
	// at 5 M pending (holders' peak RSS 407–413 → 411–460 MiB) for 3 %
	// of the time.
	prefixes := m.newPrefixes()
	for _, d := range all {
		gd, warnings := m.destination(d, pa[d.key], prefixes)
		for _, w := range warnings {
			m.warnf("%s", w)
		}
		g.dests = append(g.dests, gd)
		g.destByK[gd.Key] = gd
	}
	sort.Slice(g.dests, func(i, j int) bool { return g.dests[i].String() < g.dests[j].String() })

	s := &g.summary
	for _, d := range g.dests {
		s.Destinations++
		if d.IsTopic() {
			s.Topics++
		} else {
			s.Queues++
		}
		s.Subscriptions += len(d.Subscriptions)
		s.Messages += d.Stats.Messages
		s.MessageBytes += d.Stats.Bytes
	}
}

// destination makes the graph's destination of d, its messages and
// subscriptions, and the warnings they give. It changes d and nothing
// else of m.
func (m *model) destination(d *dest, acked map[string]map[string]string, prefixes []*string) (*Destination, []string) {
	var warnings []string
	gd := &Destination{Type: d.typ, Name: d.name, Key: d.key, NextSeq: d.nextSeq, IndexKeys: d.indexKeys()}
	gd.Messages, gd.Stats.Files, gd.ackedTx = m.messages(d, acked, prefixes)
	gd.Stats.Messages, gd.Stats.Bytes, gd.Stats.Count = d.count, d.bytes, d.count
	if !d.topic {
		if w := queueDelivery(gd, d.statDelta, acked[""]); w != "" {
			warnings = append(warnings, w)
		}
	}
	for _, s := range d.subs {
		gs := &Subscription{Destination: gd, Key: s.key, Retroactive: s.retro, Loc: s.loc, LastAck: s.lastAck, first: s.first, hasFirst: s.hasFirst}
		if info, err := openwire.ParseSubscriptionInfo(s.info); err == nil {
			gs.ClientID, gs.SubscriptionName = info.ClientID, info.SubscriptionName
			gs.Selector, gs.HasSelector, gs.NoLocal = info.Selector, info.HasSelector, info.NoLocal
		} else {
			warnings = append(warnings, fmt.Sprintf("subscription %s on %s: subscription info does not parse: %v", s.key, gd, err))
			if c, n, ok := strings.Cut(s.key, ":"); ok {
				gs.ClientID, gs.SubscriptionName = c, n
			}
		}
		if s.hasPos {
			if n := s.pos.count(); n > 0 {
				gs.Count = n - 1
			}
			gs.AckPositions = make([]SeqRange, len(s.pos.r))
			for i, r := range s.pos.r {
				gs.AckPositions[i] = SeqRange{r.first, r.last}
			}
		}
		gs.pending, gs.inDoubt, gs.batch = subscriptionDelivery(gd.Messages, s, acked[s.key])
		gd.Subscriptions = append(gd.Subscriptions, gs)
	}
	return gd, warnings
}

// messages makes the messages of d in the order of its order index (by
// class, highest first, then by sequence), marking those the prepared
// transactions ack (acked), and lists the files that hold them.
func (m *model) messages(d *dest, acked map[string]map[string]string, prefixes []*string) (ms []Message, files []int32, ackedTx map[int64]string) {
	// off is where each class's messages start
	var off [256]int // by uint8(class)
	d.entries.each(func(_ int64, e entry) { off[uint8(e.class)]++ })
	at := 0
	for c := math.MaxInt8; c >= math.MinInt8; c-- {
		n := off[uint8(c)]
		off[uint8(c)] = at
		at += n
	}
	ackedBySeq := ackedBySequence(acked)
	ms = make([]Message, d.entries.len())
	inFile := map[int32]bool{}
	// the order index goes page by page as the messages take its place
	d.entries.drain(func(s int64, e entry) {
		i := off[uint8(e.class)]
		off[uint8(e.class)]++
		msg := Message{id: m.graphID(e.id, prefixes), Loc: e.loc, Priority: e.prio,
			PrioritySupported: e.flags&flagPrioSupported != 0, Size: e.size, Seq: s,
			Updated: e.flags&flagUpdated != 0, Unreadable: e.flags&flagUnreadable != 0, inTx: e.flags&flagTx != 0}
		for _, a := range ackedBySeq[msg.id.seq] {
			if msg.id.is(a.id) && a.tx != "" {
				if ackedTx == nil {
					ackedTx = map[int64]string{}
				}
				ackedTx[s] = a.tx
			}
		}
		ms[i] = msg
		inFile[e.loc.File] = true
	})
	for f := range inFile {
		files = append(files, f)
	}
	sortInt32(files)
	return ms, files, ackedTx
}

// queueDelivery works out what the queue gd delivers when a broker starts,
// in its dispatch order, from its stored count (statDelta: the count less
// the messages, adopt.go) and the messages prepared transactions ack
// (held). It returns a warning when the count keeps messages back.
func queueDelivery(gd *Destination, statDelta int64, held map[string]string) (warning string) {
	// KahaDBMessageStore.recover skips the messages a prepared
	// transaction acked, and the recovered count leaves them out
	gd.delivery, gd.inDoubt = holdBack(gd.Messages, indexesOf(len(gd.Messages)), held)
	gd.Stats.InDoubt = int64(len(gd.inDoubt))
	// the count the broker starts from: its stored statistics (an adopted
	// index's), less what prepared transactions ack
	gd.Stats.Count += statDelta - int64(len(held))
	gd.Stats.CountDrift = statDelta
	if n := max(gd.Stats.Count, 0); n < int64(len(gd.delivery)) {
		// its store cursor stops when the count runs out (the last in
		// store order: a prioritized queue's cursor recovers the order
		// index's classes, then dispatches)
		heldBack := int64(len(gd.delivery)) - n
		warning = fmt.Sprintf("%s: the broker's stored count is %d but it holds %d message(s) to deliver; its store cursor stops at its count, so it does not deliver the last %d (%s …) until the count is right again (KahaDB 5.17.2 subtracts the messages acked in a prepared transaction from the stored count once more at every restart while the transaction stays prepared)",
			gd, gd.Stats.Count, len(gd.delivery), heldBack, gd.Messages[gd.delivery[n]].ID())
		if n > MaxPageSize {
			// ActiveMQ 5.17.2: the store cursor spends its count on
			// every message it pages in, an expired one too, and a
			// page that meets expired messages pages in more than its
			// size; once that takes the count below zero the cursor
			// reads it again from the store (AbstractStoreCursor.size),
			// which counts the messages delivered but not yet
			// acknowledged. Within one page (a count of MaxPageSize or
			// less) the count runs out exactly. Seen from a real broker
			// (internal/difftest, kept seeds 125, 160, 212, 222, 261,
			// 276): it delivered more of the held-back messages than
			// its count allowed, up to all of them.
			warning += fmt.Sprintf("; if some of its messages have expired by the time the broker pages them in, it may deliver some or all of these %d as well (its count is past one page of %d: the expired messages can take the cursor's count below zero, and it then reads the count again from the store, with the messages delivered but not yet acknowledged)", heldBack, MaxPageSize)
		}
		if isPrioritized(gd.Messages, gd.delivery) {
			// seen from a real broker (internal/difftest, seeds 125 and
			// 148): its store batches are taken by priority, and the
			// messages it expires while paging change its page sizes
			warning += "; on this prioritized queue, messages that have expired by the time the broker pages them in change which ones"
		}
		gd.undelivered = gd.delivery[n:]
		gd.delivery = gd.delivery[:n]
	}
	gd.delivery = dispatchOrder(gd.Messages, gd.delivery)
	return warning
}

// subscriptionDelivery works out what durable subscription s delivers
// when a broker starts (pending) and what it holds back because a
// prepared transaction acked it (inDoubt), in the order of ms; batch is
// how the store's batches made pending when they are filtered (nil:
// they are not, see storeBatches).
func subscriptionDelivery(ms []Message, s *sub, held map[string]string) (pending, inDoubt []int32, batch *storeBatches) {
	// §5.4: filtered delivery when some pending seq is below lastAck
	var deliver []int32
	if s.hasPos && !s.pos.empty() && s.pos.head() < s.lastAck {
		batch, inDoubt = filteredBatches(ms, s.pos.head(), s.pos.contains, held)
		if len(batch.filtered) <= MaxPageSize {
			// one batch holds them all: nothing after it
			return batch.filtered, inDoubt, nil
		}
		return batch.recover(ms, nil), inDoubt, batch
	} else {
		for i, m := range ms {
			if m.Seq > s.lastAck {
				deliver = append(deliver, int32(i))
			}
		}
	}
	// recoverSubscription skips what the subscription acked in a
	// prepared transaction
	pending, inDoubt = holdBack(ms, deliver, held)
	return pending, inDoubt, nil
}

// storeBatches is how the store hands a durable subscription's messages
// to its cursor when its ack positions start below its last ack (§5.4):
// KahaDBStore.recoverNextMessages filters by the ack positions only in
// the first batch it recovers (the subscription has no cursor in the
// store yet). That batch ends with the MaxPageSize-th message the
// cursor takes (TopicStorePrefetch.maxBatchSize: the topic's
// maxPageSize; a message its selector does not match is not taken), and
// the store keeps its place; the next batches go on from there through
// every message the store holds, those the subscription acked
// individually included (another subscription keeps them), without
// looking at the ack positions again. Seen from a real broker: seed 79
// of the differential test (testdata/kept), the bench's big-pending
// stores (TestGeneratedShapeDelivers).
type storeBatches struct {
	head     int64   // the first ack position: where the batches start
	filtered []int32 // the messages the first batch may take, in order
	held     map[string]string
}

// filteredBatches is the store's batches of a subscription whose ack
// positions (in) start at head, below its last ack: the first batch may
// take the messages of ms the positions hold, but those a prepared
// transaction acked for it (their ids in held), which it holds back
// (inDoubt, as ms indexes, in order).
func filteredBatches(ms []Message, head int64, in func(seq int64) bool, held map[string]string) (b *storeBatches, inDoubt []int32) {
	b = &storeBatches{head: head, held: held}
	for i := range ms {
		m := &ms[i]
		if !in(m.Seq) {
			continue
		}
		if len(held) > 0 {
			if _, ok := held[m.ID()]; ok {
				inDoubt = append(inDoubt, int32(i))
				continue
			}
		}
		b.filtered = append(b.filtered, int32(i))
	}
	return b, inDoubt
}

// recover lists what the cursor takes, in order: the messages of the
// first batch, then those after the last of them; match says which ones
// the subscription's selector takes (nil: all).
func (b *storeBatches) recover(ms []Message, match func(*Message) bool) []int32 {
	var out []int32
	taken, last := 0, -1
	for _, i := range b.filtered {
		if match != nil && !match(&ms[i]) {
			continue
		}
		out = append(out, i)
		if taken++; taken == MaxPageSize {
			last = int(i)
			break
		}
	}
	if last < 0 {
		return out
	}
	// The next batches: the store's place in each priority class is after
	// the first batch's last message in its class, the head in the
	// classes after it (ms is in the order index's order: class, then
	// sequence).
	for i := last + 1; i < len(ms); i++ {
		m := &ms[i]
		if m.Seq < b.head {
			continue
		}
		if len(b.held) > 0 {
			if _, ok := b.held[m.ID()]; ok {
				continue
			}
		}
		if match != nil && !match(m) {
			continue
		}
		out = append(out, int32(i))
	}
	return out
}

// ackedID is a message id a prepared transaction acks, and the transaction.
type ackedID struct{ id, tx string }

// ackedBySequence indexes the ids of acked (the prepared transactions'
// acks of one destination, by subscription) by their producer sequence, as
// split keeps it in msgID.seq: a message is checked against the few ids of
// its sequence without making its id.
func ackedBySequence(acked map[string]map[string]string) map[int64][]ackedID {
	if len(acked) == 0 {
		return nil
	}
	out := map[int64][]ackedID{}
	for _, ids := range acked {
		for id, tx := range ids {
			_, seq := split([]byte(id))
			out[seq] = append(out[seq], ackedID{id, tx})
		}
	}
	return out
}

// graphID is the graph's form of the id k: the producer part is shared by
// the graph's messages through prefixes (by prefix index, a slot per
// entry of the id table, made by newPrefixes; the id table
// reuses the indexes of prefixes no longer used, never during Build).
func (m *model) graphID(k msgKey, prefixes []*string) msgID {
	p := prefixes[k.prefix]
	if p == nil {
		p = new(string)
		*p = m.ids.names[k.prefix]
		prefixes[k.prefix] = p
	}
	return msgID{prefix: p, seq: k.seq}
}

// newPrefixes makes graphID's prefixes: one slot per prefix index of the
// id table (a slice, not a map: graphID runs once per message).
func (m *model) newPrefixes() []*string { return make([]*string, len(m.ids.names)) }

// dispatchOrder reorders a queue's delivery (store order) as a broker
// dispatches a prioritized queue to a consumer with the default prefetch
// (dispatch.go). A queue is prioritized when its messages were stored
// with prioritySupported, as the destination policy says.
func dispatchOrder(ms []Message, delivery []int32) []int32 {
	if !isPrioritized(ms, delivery) {
		return delivery
	}
	prios := make([]int32, len(delivery))
	for k, i := range delivery {
		prios[k] = ms[i].Priority
	}
	order := DispatchOrder(prios, MaxPageSize, DefaultQueuePrefetch, nil)
	out := make([]int32, len(order))
	for k, j := range order {
		out[k] = delivery[j]
	}
	return out
}

// isPrioritized reports whether any of the messages at delivery was
// stored with prioritySupported (the queue's prioritizedMessages).
func isPrioritized(ms []Message, delivery []int32) bool {
	for _, i := range delivery {
		if ms[i].PrioritySupported {
			return true
		}
	}
	return false
}

func indexesOf(n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(i)
	}
	return out
}

// holdBack divides the messages at ix into those whose id is not in held and
// those that are, keeping the order.
func holdBack(ms []Message, ix []int32, held map[string]string) (keep, out []int32) {
	if len(held) == 0 {
		return ix, nil
	}
	keep = ix[:0:0]
	for _, i := range ix {
		if _, ok := held[ms[i].ID()]; ok {
			out = append(out, i)
		} else {
			keep = append(keep, i)
		}
	}
	return keep, out
}

// destOrder emulates the broker's storedDestinations HashMap: a restarted
// broker first loads the index's destinations in ascending key order, then
// replay creates and removes destinations (§6.5). index and hasRecovery
// are the Builder's: the index's head, and whether the broker restarts
// from a recovery position in it.
func (m *model) destOrder(index *kahaindex.Head, hasRecovery bool) []string {
	hm := newJavaHashMap()
	events := m.events
	if m.adoptedIndex {
		// the index's destinations, in its key order, then what the
		// replay from the recovery position changed
		for _, k := range m.sortedIndexKeys() {
			hm.put(k)
		}
		events = m.replayedEvents()
	} else if hasRecovery {
		live := map[string]bool{}
		lu := index.LastUpdate
		i := 0
		for ; i < len(events); i++ {
			e := events[i]
			if lu == nil || lu.Less(e.loc) {
				break
			}
			if e.create {
				live[e.key] = true
			} else {
				delete(live, e.key)
			}
		}
		keys := make([]string, 0, len(live))
		for k := range live {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return javaLess(keys[i], keys[j]) })
		for _, k := range keys {
			hm.put(k)
		}
		events = m.replayedEvents()
	}
	for _, e := range events {
		if e.create {
			hm.put(e.key)
		} else {
			hm.remove(e.key)
		}
	}
	// a key the emulation lost track of (should not happen) goes last
	order := hm.keys()
	for _, byName := range m.dests {
		for _, d := range byName {
			if !hm.has(d.key) {
				order = append(order, d.key)
			}
		}
	}
	// keep only live destinations
	out := order[:0]
	for _, k := range order {
		if m.liveKey(k) {
			out = append(out, k)
		}
	}
	return out
}

// replayedEvents are the destination events the broker replays: those
// from the recovery position on (none when the replay never reached it).
func (m *model) replayedEvents() []destEvent {
	if !m.seenPhaseB {
		return nil
	}
	j := 0
	for j < len(m.events) && m.events[j].loc.Less(m.phaseBStart) {
		j++
	}
	return m.events[j:]
}

func (m *model) liveKey(k string) bool {
	t, name, ok := strings.Cut(k, ":")
	if !ok {
		return false
	}
	n, err := strconv.Atoi(t)
	if err != nil || n < 0 || n >= len(m.dests) {
		return false
	}
	_, ok = m.dests[n][name]
	return ok
}

func (m *model) destByKey(k string) *dest {
	t, name, _ := strings.Cut(k, ":")
	n, _ := strconv.Atoi(t)
	return m.dests[n][name]
}

// ---- cleanup emulation (§6.2) ----

// idSet is a small ordered set of file ids (TreeSet<Integer>).
type idSet struct{ ids []int32 }

func (s *idSet) has(id int32) bool {
	i := sort.Search(len(s.ids), func(i int) bool { return s.ids[i] >= id })
	return i < len(s.ids) && s.ids[i] == id
}

func (s *idSet) remove(id int32) {
	i := sort.Search(len(s.ids), func(i int) bool { return s.ids[i] >= id })
	if i < len(s.ids) && s.ids[i] == id {
		s.ids = append(s.ids[:i], s.ids[i+1:]...)
	}
}

func (s *idSet) String() string { return javaList(s.ids) }

func javaList(ids []int32) string {
	var sb strings.Builder
	sb.WriteByte('[')
	for i, id := range ids {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(strconv.Itoa(int(id)))
	}
	sb.WriteByte(']')
	return sb.String()
}

// ackMap is the ack-message-file map the cleanup sees.
func (m *model) ackMap() map[int32][]int32 {
	var maps []map[int32][]int32
	if m.ackLoadOK {
		maps = append(maps, m.ackLoaded)
	}
	return mergeAckMaps(append(maps, m.ackB)...)
}

// mergeAckMaps is the union of ack maps, the references of each key in
// the order first met.
func mergeAckMaps(maps ...map[int32][]int32) map[int32][]int32 {
	out := map[int32][]int32{}
	add := func(m map[int32][]int32) {
		for k, v := range m {
			cur := out[k]
			if cur == nil {
				cur = []int32{}
			}
		next:
			for _, r := range v {
				for _, x := range cur {
					if x == r {
						continue next
					}
				}
				cur = append(cur, r)
			}
			out[k] = cur
		}
	}
	for _, m := range maps {
		add(m)
	}
	return out
}

// cleanupPlan is what the emulated cleanup decides: the files it deletes,
// its log, and what explain needs to say why it keeps the others.
type cleanupPlan struct {
	deleted    idSet             // the candidates; once planned, the files the cleanup deletes
	log        []string          // what the broker logs (Graph.GCLog)
	all        idSet             // every file, and the one a restart creates
	rewritten  map[*sub]bool     // subscriptions whose command the cleanup rewrites
	acks       map[int32][]int32 // the ack map the cleanup saw
	txRange    [2]codec.Location // of the transactions in progress (hasRange)
	hasRange   bool
	auditFirst bool // the audit's file was the smallest candidate
	// keptForAcks: the candidates the last step kept only because their
	// acks refer to kept files (Graph.KeptForAcks)
	keptForAcks []int32
}

// plan emulates the broker's cleanup (§6.2) of the files of in from the
// state cl, over the destinations dests in the broker's order and the
// transactions in progress inprog; acks are ack-map entries the actions
// written after the restart added. Its steps are those of
// MessageDatabase.checkpointUpdate, each logged as the broker does.
func (in *cleanupInput) plan(dests []destStep, cl cleanup, inprog []*txState, acks map[int32][]int32) *cleanupPlan {
	p := &cleanupPlan{rewritten: map[*sub]bool{}, acks: in.ackMap}
	if len(acks) > 0 {
		p.acks = mergeAckMaps(in.ackMap, acks)
	}
	for _, f := range in.files {
		p.all.ids = append(p.all.ids, f.id)
	}
	for _, id := range cl.newFiles {
		if !p.all.has(id) {
			p.all.ids = append(p.all.ids, id)
		}
	}
	p.deleted = idSet{ids: append([]int32(nil), p.all.ids...)}
	p.checkpointSteps(cl)
	p.transactionStep(inprog)
	for _, d := range dests {
		if len(p.deleted.ids) == 0 {
			break
		}
		p.destinationStep(d)
	}
	// What a file that could not be read holds is unknown: its deletion
	// is never predicted (explain says why), and the files whose acks
	// refer to it are kept with it.
	for _, f := range in.files {
		if f.unreadable || in.indexDamaged {
			p.deleted.remove(f.id)
		}
	}
	p.logf("gc candidates: %s", &p.deleted)
	p.ackStep()
	// Journal.removeDataFiles never deletes the file of the last append
	// or newer ones; the last update's file is at least as new.
	if len(p.deleted.ids) > 0 {
		p.logf("Cleanup removing the data files: %s", &p.deleted)
	}
	return p
}

func (p *cleanupPlan) logf(format string, args ...any) {
	p.log = append(p.log, fmt.Sprintf(format, args...))
}

// checkpointSteps keep the files from the last update on, and those of
// the producer audit and of the ack map.
func (p *cleanupPlan) checkpointSteps(cl cleanup) {
	cand := &p.deleted
	lu := "null"
	if cl.hasLastUpdate {
		lu = cl.lastUpdate.String()
	}
	p.logf("Last update: %s, full gc candidates set: %s", lu, cand)
	if cl.hasLastUpdate {
		keep := cand.ids[:0]
		for _, id := range cand.ids {
			if id < cl.lastUpdate.File {
				keep = append(keep, id)
			}
		}
		cand.ids = keep
	}
	if cl.hasAudit {
		if len(cand.ids) > 0 && cand.ids[0] == cl.audit.File {
			p.auditFirst = true
			p.logf("rewriting producerSequenceIdTracker:%s", cl.audit)
		}
		cand.remove(cl.audit.File)
		p.logf("gc candidates after producerSequenceIdTrackerLocation:%s, %s", cl.audit, cand)
	}
	if cl.hasAckMap {
		cand.remove(cl.ackMap.File)
		p.logf("gc candidates after ackMessageFileMapLocation:%s, %s", cl.ackMap, cand)
	}
}

// transactionStep keeps the files from the first to the last operation
// of the transactions in progress.
func (p *cleanupPlan) transactionStep(inprog []*txState) {
	cand := &p.deleted
	for _, t := range inprog {
		first, last := t.ops[0].loc, t.ops[len(t.ops)-1].loc
		if !p.hasRange || !p.txRange[0].Less(first) {
			p.txRange[0] = first
		}
		if !p.hasRange || !last.Less(p.txRange[1]) {
			p.txRange[1] = last
		}
		p.hasRange = true
	}
	if !p.hasRange {
		p.logf("gc candidates after in progress tx range:[null, null], %s", cand)
		return
	}
	keep := cand.ids[:0]
	for _, id := range cand.ids {
		if id < p.txRange[0].File || id > p.txRange[1].File {
			keep = append(keep, id)
		}
	}
	cand.ids = keep
	p.logf("gc candidates after in progress tx range:[%s, %s], %s", p.txRange[0], p.txRange[1], cand)
}

// destinationStep keeps the files of the messages of destination d (gd,
// materialized) and of its subscriptions' commands, unless the command
// of a subscription with nothing pending is in the oldest candidate: the
// broker rewrites it.
func (p *cleanupPlan) destinationStep(d destStep) {
	cand := &p.deleted
	key := d.key
	for _, f := range d.files {
		cand.remove(f)
	}
	// the location index's visitor: the files of its branch keys too
	for _, f := range d.keys {
		cand.remove(f)
	}
	for _, s := range d.subs {
		f := s.loc.File
		if len(cand.ids) > 0 && cand.ids[0] == f && noPending(s) {
			p.rewritten[s] = true
			p.logf("Found candidate for rewrite: sub %s on %s from file %d", s.key, key, f)
			continue
		}
		pc := int64(-1)
		if s.hasPos {
			pc = s.pos.count() - 1
		}
		p.logf("sub %s on %s in dataFile %d has pendingCount %d", s.key, key, f, pc)
		cand.remove(f)
	}
	p.logf("gc candidates after dest:%s, %s", key, cand)
}

// ackStep is the one ascending pass over the ack map: a candidate whose
// acks refer to a kept file is kept.
func (p *cleanupPlan) ackStep() {
	cand := &p.deleted
	p.logf("ackMessageFileMap: %s", javaAckMap(p.acks))
	for i := 0; i < len(cand.ids); {
		c := cand.ids[i]
		refs, ok := p.acks[c]
		if ok {
			drop := false
			for _, r := range refs {
				if p.all.has(r) && !cand.has(r) {
					drop = true
					break
				}
			}
			if drop {
				p.logf("not removing data file: %d as contained ack(s) refer to referenced file: %s", c, javaList(refs))
				p.keptForAcks = append(p.keptForAcks, c)
				cand.ids = append(cand.ids[:i], cand.ids[i+1:]...)
				continue
			}
		}
		i++
	}
}

// unreadable returns the damage that kept f from being read, nil when it
// was read.
func unreadable(f *File) *codec.CorruptionError {
	for _, d := range f.Damage {
		if errors.Is(d, codec.ErrUnreadable) {
			return d
		}
	}
	return nil
}

// noPending is the broker's rewrite test: no ackPositions, or only the
// next-message marker.
func noPending(s *sub) bool {
	return !s.hasPos || s.pos.empty() || (s.pos.ranges() == 1 && s.pos.r[0].first == s.pos.r[0].last)
}

func javaAckMap(m map[int32][]int32) string {
	keys := make([]int32, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sortInt32(keys)
	var sb strings.Builder
	sb.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(strconv.Itoa(int(k)))
		sb.WriteByte('=')
		sb.WriteString(javaList(m[k]))
	}
	sb.WriteByte('}')
	return sb.String()
}

// ---- transactions ----

func (m *model) listTransactions(g *Graph, open []*txState) {
	for _, t := range open {
		tr := &Transaction{ID: t.id, Kind: LocalTx, State: InFlight, Commands: t.cmds}
		if t.xa {
			tr.Kind = XATx
		}
		if t.prepared {
			tr.State = Prepared
			g.summary.Prepared++
		} else {
			g.summary.InFlight++
		}
		for _, op := range t.ops {
			o := TxOp{Add: op.add, Destination: op.typ.Scheme() + "://" + op.name, MessageID: m.ids.String(op.id),
				Subscription: op.subKey, Loc: op.loc}
			tr.Ops = append(tr.Ops, o)
			if t.prepared && !op.add {
				if msg := g.message(strconv.Itoa(int(op.typ))+":"+op.name, o.MessageID); msg != nil {
					tr.InDoubt = append(tr.InDoubt, msg)
				}
			}
		}
		g.txs = append(g.txs, tr)
	}
	done := m.done
	if m.doneFull {
		done = append(append([]*Transaction{}, m.done[m.doneNext:]...), m.done[:m.doneNext]...)
	}
	if m.lazy != nil {
		// made when first asked for (Graph.Transactions)
		g.lazy, g.lazyTail = m.lazy, done
		g.summary.CompletedTransactionsKept = m.lazy.n + len(done)
		return
	}
	g.txs = append(g.txs, done...)
	g.summary.CompletedTransactionsKept = len(done)
}

// checkLostMessages reports the messages an adopted index holds in data
// files that are gone, empty or shorter than the record: the broker starts
// (it skips empty files and keeps them), but cannot deliver them (a browse
// of the destination never returns): they are lost.
func (b *Builder) checkLostMessages(g *Graph) {
	if !b.adoptedIndex {
		return
	}
	type lost struct {
		dest     string
		ids      []string
		from, to int64 // the records' offsets: first, end of the last
	}
	perFile := map[int32]map[string]*lost{}
	// the file of the last entry (a page's entries are mostly in one)
	lastFile, f := int32(0), b.fileIx[0]
	for _, m := range b.dests {
		for _, d := range m {
			d.entries.each(func(_ int64, e entry) {
				if e.loc.File != lastFile {
					lastFile, f = e.loc.File, b.fileIx[e.loc.File]
				}
				if f != nil && f.End >= int64(e.loc.Offset)+int64(e.loc.Size) {
					return
				}
				byDest := perFile[e.loc.File]
				if byDest == nil {
					byDest = map[string]*lost{}
					perFile[e.loc.File] = byDest
				}
				l := byDest[d.key]
				if l == nil {
					l = &lost{dest: d.typ.Scheme() + "://" + d.name}
					byDest[d.key] = l
				}
				if len(l.ids) == 0 || int64(e.loc.Offset) < l.from {
					l.from = int64(e.loc.Offset)
				}
				l.to = max(l.to, int64(e.loc.Offset)+int64(e.loc.Size))
				l.ids = append(l.ids, b.ids.String(e.id))
			})
		}
	}
	files := make([]int32, 0, len(perFile))
	for id := range perFile {
		files = append(files, id)
	}
	sortInt32(files)
	for _, id := range files {
		what := "is missing"
		if f := b.fileIx[id]; f != nil {
			what = fmt.Sprintf("holds data up to offset %d only", f.End)
			switch {
			case f.Size == 0:
				what = "is empty"
			case f.End == 0:
				what = fmt.Sprintf("holds no complete record in its %d bytes", f.Size)
			}
		}
		keys := make([]string, 0, len(perFile[id]))
		for k := range perFile[id] {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			l := perFile[id][k]
			sort.Strings(l.ids)
			g.damaged = true
			b.warnings = append(b.warnings, fmt.Sprintf("the index (db.data) holds %d message(s) of %s in %s at offsets %d..%d (%s), but the file %s: a broker starts and cannot deliver them (a browse of the destination does not return): they are lost",
				len(l.ids), l.dest, codec.DataFileName(id), l.from, l.to, idList(l.ids), what))
		}
	}
}

func idList(ids []string) string {
	if len(ids) <= 3 {
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s, %s … %s", ids[0], ids[1], ids[len(ids)-1])
}

// message finds a stored message of the destination with key dk.
func (g *Graph) message(dk, id string) *Message {
	d := g.destByK[dk]
	if d == nil {
		return nil
	}
	for i := range d.Messages {
		if d.Messages[i].id.is(id) {
			return &d.Messages[i]
		}
	}
	return nil
}

// checkMissing reports data files the index refers to that are not in the
// store: a broker started with this index refuses to start ("Detected
// missing journal files") unless told to ignore them, and what they held is
// lost. A journal-only reading cannot see such gaps (ids have gaps anyway).
func (b *Builder) checkMissing(g *Graph) {
	missing := map[int32]string{}
	note := func(id int32, what string) {
		if !b.present[id] {
			if _, ok := missing[id]; !ok {
				missing[id] = what
			}
		}
	}
	if m := b.opts.Index; m != nil {
		for _, l := range []struct {
			loc  *codec.Location
			what string
		}{{m.LastUpdate, "its last update"}, {m.FirstInProgressTx, "its first in-progress transaction"},
			{m.ProducerAudit, "its producer audit"}, {m.AckMap, "its ack map record"}} {
			if l.loc != nil {
				note(l.loc.File, l.what)
			}
		}
	}
	if b.ackLoadOK {
		for k, vs := range b.ackLoaded {
			note(k, "its ack map")
			for _, v := range vs {
				note(v, "its ack map")
			}
		}
	}
	// recoverIndex: "Detected missing/corrupt journal files", which goes
	// first among the index's damage: a broker does not start on it
	var refused []string
	for i, id := range b.keyFiles {
		if !b.present[id] {
			note(id, b.keyFilesBy[i])
			if len(refused) < maxIndexDamage {
				refused = append(refused, fmt.Sprintf("%s has a key in %s, which is not in the store (a broker refuses to start on it)", b.keyFilesBy[i], codec.DataFileName(id)))
			}
		}
	}
	if len(refused) > 0 {
		b.indexDamage = append(refused, b.indexDamage...)
	}
	b.checkLostMessages(g)
	ids := make([]int32, 0, len(missing))
	for id := range missing {
		ids = append(ids, id)
	}
	sortInt32(ids)
	for _, id := range ids {
		g.damaged = true
		b.warnings = append(b.warnings, fmt.Sprintf("%s: %v: the index (db.data) refers to it in %s: a broker started with this index refuses to start (Detected missing journal files); what the file held is lost",
			codec.DataFileName(id), codec.ErrMissingFile, missing[id]))
	}
}
