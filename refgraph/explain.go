package refgraph

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/kahafs/kahafs/codec"
)

// holders are the reasons that keep each file and the notes about it.
type holders struct {
	reasons, notes map[int32][]Reason
	exists         map[int32]bool // the files of the store
}

// add gives file the reason r (when the file exists).
func (h *holders) add(file int32, r Reason) {
	if h.exists[file] {
		h.reasons[file] = append(h.reasons[file], r)
	}
}

// note gives file the note r (when the file exists).
func (h *holders) note(file int32, r Reason) {
	if h.exists[file] {
		h.notes[file] = append(h.notes[file], r)
	}
}

// explain names, for every file of m, the holders that keep it, in the
// order of the broker's cleanup steps, and the notes: the cleanup started
// from cl and decided plan over the materialized destinations of g with
// the transactions in progress inprog. All holders are listed, not only
// the one that decided: a file pinned by the write position and by
// pending messages says both. Each kind of reason has its function.
func explain(m *model, g *Graph, cl cleanup, plan *cleanupPlan, inprog []*txState, running bool) holders {
	h := &holders{reasons: map[int32][]Reason{}, notes: map[int32][]Reason{}, exists: make(map[int32]bool, len(m.files))}
	for _, f := range m.files {
		h.exists[f.ID] = true
	}
	unreadableReasons(h, m.files)                     // 0. files that could not be read
	indexDamageReasons(h, m)                          //    an index that cannot tell
	lastUpdateReasons(h, m.files, cl, running)        // 1. last update
	producerAuditReasons(h, cl, plan)                 // 2. producer audit,
	ackMapReasons(h, cl)                              //    ack map
	transactionRangeReasons(h, m.files, plan, inprog) // 3. transaction range
	pendingReasons(h, m, g)                           // 4. pending messages, per destination
	indexKeyReasons(h, g)                             //    keys of its location index
	subscriptionReasons(h, m, g, plan)                // 5. subscriptions
	ackReasons(h, plan, g)                            // 6. acks referring to kept files
	compactionSkippedNotes(h, m.files)                // compaction files skipped on replay
	return *h
}

// maxIndexDamage bounds the index notes model.indexDamage keeps.
const maxIndexDamage = 8

// indexDamageReasons: KindIndexDamaged, every file, when the broker's
// index is damaged (model.indexDamage).
func indexDamageReasons(h *holders, m *model) {
	if len(m.indexDamage) == 0 {
		return
	}
	why := m.indexDamage[0]
	if n := len(m.indexDamage) - 1; n > 0 {
		why += fmt.Sprintf(" (and %d more)", n)
	}
	for _, f := range m.files {
		h.add(f.ID, Reason{Kind: KindIndexDamaged, Text: "unknown: the broker's index (db.data) is damaged or its structures disagree, so what its cleanup keeps is not known and no file's deletion is predicted: " + why})
	}
}

// unreadableReasons: KindUnreadable, the files that could not be read.
func unreadableReasons(h *holders, files []*File) {
	for _, f := range files {
		if d := unreadable(f); d != nil {
			detail := d.Detail
			if detail == "" {
				detail = d.Err.Error()
			}
			loc := codec.Location{File: f.ID, Offset: int32(d.Offset)}
			h.add(f.ID, Reason{Kind: KindUnreadable, Location: loc.String(), Loc: loc, Text: fmt.Sprintf("unknown: the file could not be read at offset %d (%s); what it holds is unknown, so its deletion is not predicted", d.Offset, detail)})
		}
	}
}

// lastUpdateReasons: KindLastUpdate, the file of the cleanup's last
// update and the newer ones.
func lastUpdateReasons(h *holders, files []*File, cl cleanup, running bool) {
	if !cl.hasLastUpdate {
		return
	}
	for _, f := range files {
		if f.ID < cl.lastUpdate.File {
			continue
		}
		r := Reason{Kind: KindLastUpdate, Location: cl.lastUpdate.String(), Loc: cl.lastUpdate}
		switch {
		case f.ID > cl.lastUpdate.File:
			r.Text = fmt.Sprintf("newer than %s, the file of the broker's last update (%s)", codec.DataFileName(cl.lastUpdate.File), cl.lastUpdate)
		case running:
			r.Text = fmt.Sprintf("the broker's last update is in this file (%s): it is the file the broker writes to", cl.lastUpdate)
		default:
			r.Text = fmt.Sprintf("a restarted broker appends to this file; its last update will be its LOADED trace at %s", cl.lastUpdate)
		}
		h.add(f.ID, r)
	}
}

// producerAuditReasons: KindProducerAudit, the file of the latest
// producer audit when the cleanup does not write a new one.
func producerAuditReasons(h *holders, cl cleanup, plan *cleanupPlan) {
	if !cl.hasAudit || cl.auditNew {
		return
	}
	r := Reason{Kind: KindProducerAudit, Location: cl.audit.String(), Loc: cl.audit, Rewrite: plan.auditFirst,
		Text: fmt.Sprintf("holds the broker's latest producer audit record (%s); no message was stored since, so the broker keeps pointing at it", cl.audit)}
	if plan.auditFirst {
		r.Text += "; it is the oldest candidate, so the broker writes a new audit and the file can go at the cleanup after"
	}
	h.add(cl.audit.File, r)
}

// ackMapReasons: KindAckMap, the file of the latest ack-map record when
// the cleanup does not write a new one.
func ackMapReasons(h *holders, cl cleanup) {
	if !cl.hasAckMap || cl.ackMapNew {
		return
	}
	h.add(cl.ackMap.File, Reason{Kind: KindAckMap, Location: cl.ackMap.String(), Loc: cl.ackMap,
		Text: fmt.Sprintf("holds the broker's latest ack-map record (%s); no ack was recorded since, so the broker keeps pointing at it", cl.ackMap)})
}

// transactionRangeReasons: KindTransactionRange, the files between the
// first and the last operation of the transactions in progress.
func transactionRangeReasons(h *holders, files []*File, plan *cleanupPlan, inprog []*txState) {
	if !plan.hasRange {
		return
	}
	rng := plan.txRange
	for _, f := range files {
		id := f.ID
		if id < rng[0].File || id > rng[1].File {
			continue
		}
		var ids, states []string
		for _, t := range inprog {
			if t.ops[0].loc.File <= id && id <= t.ops[len(t.ops)-1].loc.File {
				ids = append(ids, t.id)
				states = append(states, txStateWord(t))
			}
		}
		var text string
		if len(ids) == 0 {
			// between the spans of different transactions: name the
			// ones that open and close the range
			for _, t := range inprog {
				if sameLoc(t.ops[0].loc, rng[0]) || sameLoc(t.ops[len(t.ops)-1].loc, rng[1]) {
					ids = append(ids, t.id)
					states = append(states, txStateWord(t))
				}
			}
			text = fmt.Sprintf("lies between the first and the last operation (%s..%s) of the transactions in progress, which the broker keeps as one range: %s",
				rng[0], rng[1], txList(ids, states))
		} else {
			text = fmt.Sprintf("lies within the operations of %s; the broker keeps every file from the first to the last operation of the transactions in progress (%s..%s)",
				txList(ids, states), rng[0], rng[1])
		}
		h.add(id, Reason{Kind: KindTransactionRange, Transactions: ids,
			Range: []string{rng[0].String(), rng[1].String()}, Text: text})
	}
}

// pendingReasons: KindPendingMessages, per destination (in the broker's
// order) the files that hold its pending messages.
func pendingReasons(h *holders, m *model, g *Graph) {
	for _, key := range g.order {
		gd := g.destByK[key]
		d := m.destByKey(key)
		if gd == nil || d == nil {
			continue
		}
		per := map[int32]*fileAgg{}
		var order []int32
		for i := range gd.Messages {
			msg := &gd.Messages[i]
			a := per[msg.Loc.File]
			if a == nil {
				a = &fileAgg{first: msg.id}
				per[msg.Loc.File] = a
				order = append(order, msg.Loc.File)
			}
			a.n++
			a.bytes += int64(msg.Loc.Size)
			a.last = msg.id
			if gd.AckedInPreparedTx(msg) != "" {
				a.prepared++
			}
		}
		if d.topic {
			for _, s := range d.subs {
				if !s.hasPos {
					continue
				}
				for i := range gd.Messages {
					if msg := &gd.Messages[i]; s.pos.contains(msg.Seq) {
						markSub(per, msg.Loc.File, s.key)
					}
				}
			}
		}
		sortInt32(order)
		for _, id := range order {
			h.add(id, pendingReason(gd, d.topic, per[id]))
		}
	}
}

// indexKeyReasons: KindIndexKey, the files a destination's location index
// names in a branch key but holds no message of it in.
func indexKeyReasons(h *holders, g *Graph) {
	for _, key := range g.order {
		gd := g.destByK[key]
		if gd == nil {
			continue
		}
		for _, k := range gd.IndexKeys {
			if _, held := slices.BinarySearch(gd.Stats.Files, k.File); held {
				continue
			}
			h.add(k.File, Reason{Kind: KindIndexKey, Destination: gd.String(), Location: k.String(), Loc: k,
				Text: fmt.Sprintf("holds no message of %s, but the destination's location index still has a key here (%s, in a branch node: the first key of a leaf when the leaf was split off, left there after its message was removed); the broker's cleanup keeps every file its index's branch keys name", gd, k)})
		}
	}
}

// pendingReason is the reason of the messages a of destination gd in one
// file.
func pendingReason(gd *Destination, topic bool, a *fileAgg) Reason {
	first, last := a.first.String(), a.last.String()
	r := Reason{Kind: KindPendingMessages, Destination: gd.String(), Messages: a.n, Bytes: a.bytes,
		FirstMessageID: first, LastMessageID: last}
	noun := "pending message"
	if a.n != 1 {
		noun += "s"
	}
	if a.n == 1 {
		r.Text = fmt.Sprintf("holds 1 %s of %s (%s)", noun, gd, first)
	} else {
		r.Text = fmt.Sprintf("holds %d %s of %s (%s … %s)", a.n, noun, gd, first, last)
	}
	if topic {
		for k := range a.subs {
			r.Subscriptions = append(r.Subscriptions, k)
		}
		sort.Strings(r.Subscriptions)
		if len(r.Subscriptions) > 0 {
			r.Text += " still needed by durable subscription"
			if len(r.Subscriptions) > 1 {
				r.Text += "s"
			}
			r.Text += " " + strings.Join(r.Subscriptions, ", ")
		}
	}
	if a.prepared > 0 {
		r.Text += fmt.Sprintf("; %d of them acked only inside a prepared transaction", a.prepared)
	}
	return r
}

// subscriptionReasons: KindSubscription, the files of the durable
// subscriptions' commands, and the notes KindSubscriptionRewrite of the
// commands the cleanup rewrites.
func subscriptionReasons(h *holders, m *model, g *Graph, plan *cleanupPlan) {
	for _, key := range g.order {
		gd := g.destByK[key]
		d := m.destByKey(key)
		if gd == nil || d == nil {
			continue
		}
		for i, s := range d.subs {
			gs := gd.Subscriptions[i]
			cnt := gs.Count
			r := Reason{Kind: KindSubscription, Destination: gd.String(), Subscription: s.key,
				ClientID: gs.ClientID, SubscriptionName: gs.SubscriptionName,
				Location: s.loc.String(), Loc: s.loc, Pending: &cnt}
			if plan.rewritten[s] {
				r.Kind = KindSubscriptionRewrite
				r.Rewrite = true
				r.Text = fmt.Sprintf("holds the command of durable subscription %s on %s, which has nothing pending: this file is the oldest candidate, so the broker appends a copy of the command to the journal and no longer needs this one", s.key, gd)
				h.note(s.loc.File, r)
				continue
			}
			r.Text = fmt.Sprintf("holds the command of durable subscription %s on %s (%d pending)", s.key, gd, cnt)
			if noPending(s) {
				r.FixpointDiffers = true
				r.Text = fmt.Sprintf("holds the command of durable subscription %s on %s, which has nothing pending; the broker rewrites the command only when this file is the oldest cleanup candidate, so it keeps the file for now", s.key, gd)
			}
			h.add(s.loc.File, r)
		}
	}
}

// ackReasons: KindAcks, the files whose acks refer to kept files, and the
// notes KindFixpointDiffers of those the broker deletes all the same.
func ackReasons(h *holders, plan *cleanupPlan, g *Graph) {
	keys := make([]int32, 0, len(plan.acks))
	for k := range plan.acks {
		keys = append(keys, k)
	}
	sortInt32(keys)
	gcSet := map[int32]bool{}
	for _, id := range g.gc {
		gcSet[id] = true
	}
	for _, c := range keys {
		var kept []int32
		for _, r := range plan.acks[c] {
			if r != c && plan.all.has(r) && !gcSet[r] {
				kept = append(kept, r)
			}
		}
		if len(kept) == 0 {
			continue
		}
		sortInt32(kept)
		names := make([]string, len(kept))
		for i, r := range kept {
			names[i] = codec.DataFileName(r)
		}
		if !gcSet[c] {
			h.add(c, Reason{Kind: KindAcks, Files: kept,
				Text: fmt.Sprintf("holds acks for messages in %s, which %s kept: without them a replay would deliver those messages again", strings.Join(names, ", "), isAre(len(kept)))})
		} else {
			h.note(c, Reason{Kind: KindFixpointDiffers, Files: kept, FixpointDiffers: true,
				Text: fmt.Sprintf("the broker deletes it although its acks refer to %s, which %s kept: its single ascending pass looked at this file while %s still a candidate", strings.Join(names, ", "), isAre(len(kept)), isAre(len(kept)))})
		}
	}
}

// compactionSkippedNotes: the notes KindCompactionSkipped of the
// ack-compaction files whose records the replay skipped.
// The source is named as existing only when it is one of the store's
// files: the records of a file whose source is gone are skipped too, when
// the index already covers them (the broker that wrote the file never
// processed them).
func compactionSkippedNotes(h *holders, files []*File) {
	present := make(map[int32]bool, len(files))
	for _, f := range files {
		present[f.ID] = true
	}
	for _, f := range files {
		if f.Compaction && f.Skipped > 0 {
			text := fmt.Sprintf("an ack-compaction file for %s, which still exists: the broker skips its %d forwarded records on replay", codec.DataFileName(f.Source), f.Skipped)
			if !present[f.Source] {
				text = fmt.Sprintf("an ack-compaction file for %s, which is no longer in the store: the broker does not apply its %d forwarded records, which it never processed when it wrote them", codec.DataFileName(f.Source), f.Skipped)
			}
			h.note(f.ID, Reason{Kind: KindCompactionSkipped, Files: []int32{f.Source}, Text: text})
		}
	}
}

// fileAgg sums up a destination's messages in one file.
type fileAgg struct {
	n, prepared int
	bytes       int64
	first, last msgID // ids of the first and last message
	subs        map[string]bool
}

func markSub(per map[int32]*fileAgg, file int32, key string) {
	a := per[file]
	if a == nil {
		return
	}
	if a.subs == nil {
		a.subs = map[string]bool{}
	}
	a.subs[key] = true
}

func txStateWord(t *txState) string {
	if t.prepared {
		return "prepared"
	}
	return "in flight"
}

func txList(ids, states []string) string {
	parts := make([]string, len(ids))
	for i := range ids {
		parts[i] = "transaction " + ids[i] + " (" + states[i] + ")"
	}
	return strings.Join(parts, ", ")
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}
