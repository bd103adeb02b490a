package compact

import (
	"fmt"
	"slices"
	"sort"

	"github.com/kahafs/kahafs/refgraph"
)

// A topic is rewritten so that a broker replaying the new journal ends
// with every durable subscription's ack-position set and last-ack position
// as in the original, up to a renumbering of the sequences that keeps
// their order (KAHADB-FORMAT.md §5.2, §5.4). What the broker reports and
// delivers depends on nothing else: the count is the set's size less one,
// and the delivery is the set's messages when its first element lies
// below the last-ack position, every message after that position
// otherwise. So the count, the delivered messages and their order are the
// original's, quirks included (a subscription whose acks were processed
// out of order is handed some acked messages again).
//
// The new journal for a topic, in this order:
//
//  1. the commands of the subscriptions that have an ack-position set
//     ("early": each then gets every message that follows);
//  2. one ADD per slot, ascending: the slots are the stored messages and
//     placeholders standing for the other sequences the sets and the
//     last-ack positions use (sequences of messages that are gone, a
//     subscription's creation point, the next-message markers of earlier
//     adds). A placeholder is an ADD with an empty body that never stays;
//  3. the commands of the other subscriptions ("late": no set);
//  4. the late subscriptions' last-ack acks;
//  5. per early subscription, an ack of every slot not in its set,
//     ascending, then the ack of its last-ack slot (every ack moves the
//     last-ack position on replay, so that one comes last);
//  6. a plain remove of each placeholder still stored (in some set): the
//     message goes, the sequence stays in the sets that hold it.
//
// The next-message marker the last ADD leaves in every early set stands
// for the top of each original set (its own marker).

// slot is one ADD of a topic's new journal: a stored message, or a
// placeholder for the original sequence seq.
type slot struct {
	seq int64
	msg *refgraph.Message // nil: a placeholder
}

// subLayout is what the new journal does for one subscription.
type subLayout struct {
	sub   *refgraph.Subscription
	early bool
	// top: the original sequence the new next-message marker stands for
	// (the set's largest element, when it is no stored message).
	top    int64
	hasTop bool
	// final: the original sequence of the slot acked last, which becomes
	// the last-ack position.
	final    int64
	hasFinal bool
	// extra: stored messages no original set holds, kept in this one
	extra []int64
}

// inSet reports whether the new set of an early subscription holds the
// slot of original sequence v (the top is held by the marker instead).
func (sl *subLayout) inSet(v int64) bool {
	if !sl.early || (sl.hasTop && v == sl.top) {
		return false
	}
	return positionsContain(sl.sub.AckPositions, v) || slices.Contains(sl.extra, v)
}

func positionsContain(rs []refgraph.SeqRange, v int64) bool {
	i := sort.Search(len(rs), func(i int) bool { return rs[i].Last >= v })
	return i < len(rs) && rs[i].First <= v
}

// topicLayout is the plan of one topic.
type topicLayout struct {
	slots []slot // ascending original sequence
	subs  []subLayout
	// deviations: where the new journal cannot reproduce the original
	// exactly (said in the report, checked by the verification).
	deviations []string
}

// bottomSeq stands for a last-ack position below every sequence (a
// subscription that never acked anything: -1).
const bottomSeq = -1

// layoutTopic plans the rewrite of topic d. msgs are d's messages in
// sequence order. With noRedelivery a subscription that a restarted broker
// hands acknowledged messages again (Subscription.DeliveredAgain) gets a
// last-ack position above every message instead of its own: the broker
// then delivers it its set's messages only (§5.4).
func layoutTopic(d *refgraph.Destination, msgs []*refgraph.Message, noRedelivery bool) *topicLayout {
	tl := &topicLayout{subs: make([]subLayout, len(d.Subscriptions))}
	isMsg := func(v int64) bool {
		i := sort.Search(len(msgs), func(i int) bool { return msgs[i].Seq >= v })
		return i < len(msgs) && msgs[i].Seq == v
	}
	values := make([]int64, 0, len(msgs))
	for _, m := range msgs {
		values = append(values, m.Seq)
	}
	anyEarly := false
	for i, s := range d.Subscriptions {
		sl := &tl.subs[i]
		sl.sub = s
		rs := s.AckPositions
		if len(rs) == 0 {
			continue
		}
		sl.early, anyEarly = true, true
		if top := rs[len(rs)-1].Last; !isMsg(top) {
			sl.top, sl.hasTop = top, true
		} else {
			tl.deviations = append(tl.deviations, fmt.Sprintf("%s %s: its ack-position set ends with a stored message, not a next-message marker: its count is one more after compaction", d, s.Key))
		}
		for _, r := range rs {
			for v := r.First; v <= r.Last; v++ {
				if !(sl.hasTop && v == sl.top) {
					values = append(values, v)
				}
			}
		}
	}
	if !anyEarly {
		// no subscription takes messages: the broker ignores adds, and a
		// late subscription's position is below everything there is
		return tl
	}
	top := int64(-1) // above every sequence used, for --no-redelivery
	for _, v := range values {
		top = max(top, v)
	}
	for i := range tl.subs {
		if l := tl.subs[i].sub.LastAck; l >= 0 {
			values = append(values, l)
			top = max(top, l)
		}
	}
	top++
	fixed := map[int]bool{} // subscriptions whose redelivery is dropped
	if noRedelivery {
		for i := range tl.subs {
			if tl.subs[i].early && len(tl.subs[i].sub.DeliveredAgain()) > 0 {
				fixed[i] = true
			}
		}
		if len(fixed) > 0 {
			values = append(values, top)
		}
	}
	slices.Sort(values)
	values = slices.Compact(values)

	// a message no set holds: the new journal would drop it at its last
	// ack; it stays in the first set whose subscription is handed it
	for _, m := range msgs {
		held := false
		for i := range tl.subs {
			if tl.subs[i].inSet(m.Seq) {
				held = true
				break
			}
		}
		if !held {
			k := keeper(tl, m)
			k.extra = append(k.extra, m.Seq)
			tl.deviations = append(tl.deviations, fmt.Sprintf("%s: message %s is in no subscription's ack-position set; kept for %s (its count is one more)", d, m.ID(), k.sub.Key))
		}
	}

	// last-ack positions; -1 needs a bottom placeholder when acks move it
	needBottom := false
	for i := range tl.subs {
		sl := &tl.subs[i]
		l := sl.sub.LastAck
		switch {
		case fixed[i]:
			sl.final, sl.hasFinal = top, true
		case l >= 0:
			sl.final, sl.hasFinal = l, true
		case !sl.early:
			sl.final, sl.hasFinal, needBottom = bottomSeq, true, true
		case carves(sl, values):
			sl.final, sl.hasFinal, needBottom = bottomSeq, true, true
		}
	}
	if needBottom {
		values = append([]int64{bottomSeq}, values...)
		for i := range tl.subs { // the bottom slot is carved by every early set
			sl := &tl.subs[i]
			if sl.early && sl.sub.LastAck < 0 {
				sl.final, sl.hasFinal = bottomSeq, true
			}
		}
	}
	for i := range tl.subs {
		sl := &tl.subs[i]
		if sl.hasFinal && sl.inSet(sl.final) {
			// the last-ack position is also in the set (a sequence used
			// twice after an index reload): acking it would drop it
			tl.deviations = append(tl.deviations, fmt.Sprintf("%s %s: its last-ack position %d is in its ack-position set; the last ack written is another", d, sl.sub.Key, sl.final))
			sl.hasFinal = false
		}
		if !sl.early && sl.hasFinal && sl.final == values[len(values)-1] {
			sl.hasFinal = false // created after the last ADD: already there
		}
	}
	j := 0
	tl.slots = make([]slot, len(values))
	for i, v := range values {
		tl.slots[i].seq = v
		if j < len(msgs) && msgs[j].Seq == v {
			if !msgs[j].Unreadable { // else a placeholder: dropped (Report.Dropped)
				tl.slots[i].msg = msgs[j]
			}
			j++
		}
	}
	return tl
}

// carves reports whether an early subscription's set lacks some value.
func carves(sl *subLayout, values []int64) bool {
	for _, v := range values {
		if !sl.inSet(v) {
			return true
		}
	}
	return false
}

// keeper is the early subscription a message no set holds stays with: the
// first one it is delivered to, else the first early one.
func keeper(tl *topicLayout, m *refgraph.Message) *subLayout {
	var first *subLayout
	for i := range tl.subs {
		sl := &tl.subs[i]
		if !sl.early {
			continue
		}
		if first == nil {
			first = sl
		}
		for _, p := range sl.sub.Pending() {
			if p == m {
				return sl
			}
		}
	}
	return first
}

// kept reports whether slot v must stay in some early set.
func (tl *topicLayout) kept(v int64) bool {
	for i := range tl.subs {
		if tl.subs[i].inSet(v) {
			return true
		}
	}
	return false
}

// placeholderID names the placeholder of original sequence seq: unique in
// its destination, and telling where it comes from.
func placeholderID(seq int64) string {
	return fmt.Sprintf("ID:kahafs-placeholder:1:1:1:%d", seq+2)
}
