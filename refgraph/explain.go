package refgraph

import (
	"fmt"
	"sort"
	"strings"

	"github.com/kahafs/kahafs/codec"
)

// explain attaches to every file the holders that keep it, in the order of
// the broker's cleanup steps, and the notes. All holders are listed, not
// only the one that decided: a file pinned by the write position and by
// pending messages says both.
func (b *Builder) explain(g *Graph, cl cleanup, open []*txState) {
	st := b.gcs
	reasons := map[int32][]Reason{}
	notes := map[int32][]Reason{}
	exists := func(id int32) bool { _, ok := b.fileIx[id]; return ok }
	add := func(id int32, r Reason) {
		if exists(id) {
			reasons[id] = append(reasons[id], r)
		}
	}
	note := func(id int32, r Reason) {
		if exists(id) {
			notes[id] = append(notes[id], r)
		}
	}

	// 0. files that could not be read
	for _, f := range b.files {
		if d := unreadable(f); d != nil {
			detail := d.Detail
			if detail == "" {
				detail = d.Err.Error()
			}
			loc := codec.Location{File: f.ID, Offset: int32(d.Offset)}
			add(f.ID, Reason{Kind: KindUnreadable, Location: loc.String(), Loc: loc, Text: fmt.Sprintf("unknown: the file could not be read at offset %d (%s); what it holds is unknown, so its deletion is not predicted", d.Offset, detail)})
		}
	}

	// 1. last update
	if cl.hasLastUpdate {
		for _, f := range b.files {
			if f.ID < cl.lastUpdate.File {
				continue
			}
			r := Reason{Kind: KindLastUpdate, Location: cl.lastUpdate.String(), Loc: cl.lastUpdate}
			switch {
			case f.ID > cl.lastUpdate.File:
				r.Text = fmt.Sprintf("newer than %s, the file of the broker's last update (%s)", codec.DataFileName(cl.lastUpdate.File), cl.lastUpdate)
			case b.opts.Running:
				r.Text = fmt.Sprintf("the broker's last update is in this file (%s): it is the file the broker writes to", cl.lastUpdate)
			default:
				r.Text = fmt.Sprintf("a restarted broker appends to this file; its last update will be its LOADED trace at %s", cl.lastUpdate)
			}
			add(f.ID, r)
		}
	}
	// 2. producer audit, ack map
	if cl.hasAudit && !cl.auditNew {
		r := Reason{Kind: KindProducerAudit, Location: cl.audit.String(), Loc: cl.audit, Rewrite: st.auditFirst,
			Text: fmt.Sprintf("holds the broker's latest producer audit record (%s); no message was stored since, so the broker keeps pointing at it", cl.audit)}
		if st.auditFirst {
			r.Text += "; it is the oldest candidate, so the broker writes a new audit and the file can go at the cleanup after"
		}
		add(cl.audit.File, r)
	}
	if cl.hasAckMap && !cl.ackMapNew {
		add(cl.ackMap.File, Reason{Kind: KindAckMap, Location: cl.ackMap.String(), Loc: cl.ackMap,
			Text: fmt.Sprintf("holds the broker's latest ack-map record (%s); no ack was recorded since, so the broker keeps pointing at it", cl.ackMap)})
	}
	// 3. transaction range
	if st.hasRange {
		inprog := b.inProgress(open)
		for _, f := range b.files {
			id := f.ID
			if id < st.txRange[0].File || id > st.txRange[1].File {
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
					if sameLoc(t.ops[0].loc, st.txRange[0]) || sameLoc(t.ops[len(t.ops)-1].loc, st.txRange[1]) {
						ids = append(ids, t.id)
						states = append(states, txStateWord(t))
					}
				}
				text = fmt.Sprintf("lies between the first and the last operation (%s..%s) of the transactions in progress, which the broker keeps as one range: %s",
					st.txRange[0], st.txRange[1], txList(ids, states))
			} else {
				text = fmt.Sprintf("lies within the operations of %s; the broker keeps every file from the first to the last operation of the transactions in progress (%s..%s)",
					txList(ids, states), st.txRange[0], st.txRange[1])
			}
			add(id, Reason{Kind: KindTransactionRange, Transactions: ids,
				Range: []string{st.txRange[0].String(), st.txRange[1].String()}, Text: text})
		}
	}
	// 4. pending messages, per destination (in the broker's order)
	for _, key := range g.order {
		gd := g.destByK[key]
		d := b.destByKey(key)
		if gd == nil || d == nil {
			continue
		}
		per := map[int32]*fileAgg{}
		var order []int32
		for i := range gd.Messages {
			m := &gd.Messages[i]
			a := per[m.Loc.File]
			if a == nil {
				a = &fileAgg{first: m.id}
				per[m.Loc.File] = a
				order = append(order, m.Loc.File)
			}
			a.n++
			a.bytes += int64(m.Loc.Size)
			a.last = m.id
			if gd.AckedInPreparedTx(m) != "" {
				a.prepared++
			}
		}
		if d.topic {
			for _, s := range d.subs {
				if !s.hasPos {
					continue
				}
				for i := range gd.Messages {
					if m := &gd.Messages[i]; s.pos.contains(m.Seq) {
						markSub(per, m.Loc.File, s.key)
					}
				}
			}
		}
		sortInt32(order)
		for _, id := range order {
			a := per[id]
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
			if d.topic {
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
			add(id, r)
		}
	}
	// 5. subscriptions
	for _, key := range g.order {
		gd := g.destByK[key]
		d := b.destByKey(key)
		if gd == nil || d == nil {
			continue
		}
		for i, s := range d.subs {
			gs := gd.Subscriptions[i]
			cnt := gs.Count
			r := Reason{Kind: KindSubscription, Destination: gd.String(), Subscription: s.key,
				ClientID: gs.ClientID, SubscriptionName: gs.SubscriptionName,
				Location: s.loc.String(), Loc: s.loc, Pending: &cnt}
			if st.rewritten[s] {
				r.Kind = KindSubscriptionRewrite
				r.Rewrite = true
				r.Text = fmt.Sprintf("holds the command of durable subscription %s on %s, which has nothing pending: this file is the oldest candidate, so the broker appends a copy of the command to the journal and no longer needs this one", s.key, gd)
				note(s.loc.File, r)
				continue
			}
			r.Text = fmt.Sprintf("holds the command of durable subscription %s on %s (%d pending)", s.key, gd, cnt)
			if noPending(s) {
				r.FixpointDiffers = true
				r.Text = fmt.Sprintf("holds the command of durable subscription %s on %s, which has nothing pending; the broker rewrites the command only when this file is the oldest cleanup candidate, so it keeps the file for now", s.key, gd)
			}
			add(s.loc.File, r)
		}
	}
	// 6. acks referring to kept files
	keys := make([]int32, 0, len(st.acks))
	for k := range st.acks {
		keys = append(keys, k)
	}
	sortInt32(keys)
	gcSet := map[int32]bool{}
	for _, id := range g.gc {
		gcSet[id] = true
	}
	for _, c := range keys {
		if !exists(c) {
			continue
		}
		var kept []int32
		for _, r := range st.acks[c] {
			if r != c && st.all.has(r) && !gcSet[r] {
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
			add(c, Reason{Kind: KindAcks, Files: kept,
				Text: fmt.Sprintf("holds acks for messages in %s, which %s kept: without them a replay would deliver those messages again", strings.Join(names, ", "), isAre(len(kept)))})
		} else {
			note(c, Reason{Kind: KindFixpointDiffers, Files: kept, FixpointDiffers: true,
				Text: fmt.Sprintf("the broker deletes it although its acks refer to %s, which %s kept: its single ascending pass looked at this file while %s still a candidate", strings.Join(names, ", "), isAre(len(kept)), isAre(len(kept)))})
		}
	}
	// compaction files skipped on replay
	for _, f := range b.files {
		if f.Compaction && f.Skipped > 0 {
			note(f.ID, Reason{Kind: KindCompactionSkipped, Files: []int32{f.Source},
				Text: fmt.Sprintf("an ack-compaction file for %s, which still exists: the broker skips its %d forwarded records on replay", codec.DataFileName(f.Source), f.Skipped)})
		}
	}
	for _, f := range b.files {
		f.Reasons = reasons[f.ID]
		f.Notes = notes[f.ID]
		if f.Pinned && len(f.Reasons) == 0 {
			// The emulation kept the file for a reason the explanation
			// does not name: say so rather than leave it unexplained.
			b.warnf("%s is kept by the emulated cleanup without a named holder", f.Name)
		}
		if !f.Pinned {
			f.Reasons = nil
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
