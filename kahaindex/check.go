package kahaindex

import (
	"github.com/kahafs/kahafs/codec"
)

// checkMessages compares the order index with the message-id and location
// indexes: the broker updates all three together, so each message of the
// order index should be in both, under the same sequence, and nothing else.
func (r *reader) checkMessages(d *Destination) {
	type pos struct{ file, offset int32 }
	bySeq := make(map[int64]int, len(d.Messages))
	dups := 0
	for i, m := range d.Messages {
		if _, ok := bySeq[m.Seq]; ok {
			dups++
			continue
		}
		bySeq[m.Seq] = i
	}
	if dups > 0 {
		r.note(Mismatch, d.Key, -1, "%d sequences appear in more than one priority class of the order index", dups)
	}
	ids := make(map[string]int64, len(d.Indexes.MessageIDs))
	for _, e := range d.Indexes.MessageIDs {
		ids[e.ID] = e.Seq
	}
	locs := make(map[pos]int64, len(d.Indexes.Locations))
	for _, e := range d.Indexes.Locations {
		locs[pos{e.Loc.File, e.Loc.Offset}] = e.Seq
	}
	var noID, badID, noLoc, badLoc int
	var firstID, firstLoc *Message
	for i := range d.Messages {
		m := &d.Messages[i]
		if seq, ok := ids[m.ID]; !ok {
			noID++
			firstID = firstOf(firstID, m)
		} else if seq != m.Seq {
			badID++
			firstID = firstOf(firstID, m)
		}
		if seq, ok := locs[pos{m.Loc.File, m.Loc.Offset}]; !ok {
			noLoc++
			firstLoc = firstOf(firstLoc, m)
		} else if seq != m.Seq {
			badLoc++
			firstLoc = firstOf(firstLoc, m)
		}
	}
	if noID+badID > 0 {
		r.note(Mismatch, d.Key, d.Indexes.Roots.MessageIDs,
			"message-id index: %d messages of the order index missing, %d under another sequence (first: seq %d, %s)",
			noID, badID, firstID.Seq, firstID.ID)
	}
	if noLoc+badLoc > 0 {
		r.note(Mismatch, d.Key, d.Indexes.Roots.Locations,
			"location index: %d messages of the order index missing, %d under another sequence (first: seq %d at %s)",
			noLoc, badLoc, firstLoc.Seq, firstLoc.Loc)
	}
	if extra := countExtra(d.Indexes.MessageIDs, func(e MessageIDEntry) int64 { return e.Seq }, bySeq); extra > 0 {
		r.note(Mismatch, d.Key, d.Indexes.Roots.MessageIDs, "message-id index: %d entries for sequences not in the order index", extra)
	}
	if extra := countExtra(d.Indexes.Locations, func(e LocationEntry) int64 { return e.Seq }, bySeq); extra > 0 {
		r.note(Mismatch, d.Key, d.Indexes.Roots.Locations, "location index: %d entries for sequences not in the order index", extra)
	}
}

func firstOf(cur, m *Message) *Message {
	if cur == nil {
		return m
	}
	return cur
}

func countExtra[E any](entries []E, seq func(E) int64, bySeq map[int64]int) int {
	n := 0
	for _, e := range entries {
		if _, ok := bySeq[seq(e)]; !ok {
			n++
		}
	}
	return n
}

// mergeSubscriptions builds Destination.Subscriptions from the four
// subscription structures and notes where they disagree. Within one
// structure the first entry of a key wins (ListIndex.get finds the first).
func (r *reader) mergeSubscriptions(d *Destination) {
	if !d.Topic {
		return
	}
	idx := map[string]int{}
	sub := func(key string) *Subscription {
		i, ok := idx[key]
		if !ok {
			i = len(d.Subscriptions)
			idx[key] = i
			d.Subscriptions = append(d.Subscriptions, Subscription{Key: key})
		}
		return &d.Subscriptions[i]
	}
	dup := map[string]int{}
	for _, e := range d.Indexes.SubscriptionLocations {
		s := sub(e.Key)
		if s.HasLoc {
			dup["subscription-locations list"]++
			continue
		}
		s.Loc, s.HasLoc = codec.Location{File: e.Loc.File, Offset: e.Loc.Offset}, true
	}
	for _, e := range d.Indexes.SubscriptionCommands {
		s := sub(e.Key)
		if s.HasCommand {
			dup["subscriptions B-tree"]++
			continue
		}
		s.Command, s.HasCommand = e.Command, true
	}
	for _, e := range d.Indexes.LastAcks {
		s := sub(e.Key)
		if s.HasLastAck {
			dup["subscription-acks B-tree"]++
			continue
		}
		s.LastAck, s.LastAckPriority, s.HasLastAck = e.Seq, e.Priority, true
	}
	for _, e := range d.Indexes.AckPositions {
		s := sub(e.Key)
		if s.HasAckPositions {
			dup["ack-positions list"]++
			continue
		}
		s.AckPositions, s.HasAckPositions = e.Ranges, true
	}
	for _, what := range []string{"subscription-locations list", "subscriptions B-tree", "subscription-acks B-tree", "ack-positions list"} {
		if n := dup[what]; n > 0 {
			r.note(Mismatch, d.Key, -1, "%s: %d keys appear more than once (the first is used)", what, n)
		}
	}
	for _, s := range d.Subscriptions {
		switch {
		case !s.HasCommand:
			r.note(Mismatch, d.Key, -1, "subscription %q is in the other subscription structures but not in the subscriptions B-tree", s.Key)
		case !s.HasLoc:
			r.note(Mismatch, d.Key, -1, "subscription %q has no entry in the subscription-locations list", s.Key)
		case !s.HasLastAck:
			r.note(Mismatch, d.Key, -1, "subscription %q has no entry in the subscription-acks B-tree", s.Key)
		}
	}
}
