package refgraph

import (
	"fmt"

	"github.com/kahafs/kahafs/codec"
)

// What deleting db.data loses. A broker whose index is gone rebuilds it
// from the journal alone (§5: the replay from scratch), and on a store
// where the cleanup has rewritten durable subscription commands that
// rebuild recovers fewer messages than the index holds:
//
//   - a message is pending for a durable subscription only if the
//     subscription was known when the message was stored (its ADD, or the
//     COMMIT of its transaction, puts it in the ack-position set of every
//     subscription the destination has then);
//   - a rebuild knows a subscription from the first KahaSubscriptionCommand
//     that adds it still in the journal. When the cleanup found the
//     subscription with nothing pending and its command in the oldest file,
//     it appended a copy of the command at the journal's end and deleted the
//     file with the original (§6.2 6b); the messages stored after that, but
//     before the copy (sent while the cleanup ran, or written by a broker
//     that did not rewrite the command at once), are pending for the index
//     and unknown to the rebuild, which sets the subscription's last ack at
//     the copy.
//
// So, exactly: a message the index holds pending for a (non-retroactive)
// subscription is lost by the rebuild when it was stored before the first
// command adding the subscription that the journal still has (since the
// last deletion of the subscription), or when the journal has no such
// command at all (then the subscription itself is lost). The replay meets
// every subscription command anyway (the records before the index's
// recovery position are replayed too, adopt.go), so the first one is
// recorded as it goes (sub.first) and carried over when the index is
// adopted: no second replay. A message added in a transaction is stored
// at its commit, whose location the model does not keep: it is lost when
// its add comes before the first command and its commit does too, which
// the replay records the other way round (spannedTx: the rare
// transactional adds committed after the first command of a subscription
// of their destination that came after the add). What it cannot tell is
// left undecided, not guessed: a record that is an update or unreadable
// before the first command, a transactional add that spanned the first
// command of some subscription of its destination; and every message of
// a retroactive subscription is skipped (a rebuild gives it the other
// subscriptions' sets).

// RebuildLoss is what a journal-only rebuild of the index (deleting
// db.data) loses of one durable subscription's pending messages.
type RebuildLoss struct {
	Destination      string `json:"destination"`
	ClientID         string `json:"clientId"`
	SubscriptionName string `json:"subscriptionName"`
	// Pending: the messages the index holds for it (delivered and in
	// doubt); Lost: those a rebuild does not recover; Undecided: those
	// kahafs cannot tell (updated or unreadable records, transactional
	// adds committed after another subscription's first command).
	Pending   int64 `json:"pending"`
	Lost      int64 `json:"lost"`
	Undecided int64 `json:"undecided,omitempty"`
	// FirstCommand: where the first command adding the subscription that
	// the journal has is ("3:10772"; empty: none, the rebuild loses the
	// subscription).
	FirstCommand string `json:"firstCommand,omitempty"`
}

// Text is the warning about l, one line.
func (l RebuildLoss) Text() string {
	s := fmt.Sprintf("do not delete db.data: durable subscription %s:%s on %s has %d message(s) pending that a broker rebuilding its index from the journal does not recover (of %d)",
		l.ClientID, l.SubscriptionName, l.Destination, l.Lost, l.Pending)
	if l.FirstCommand == "" {
		s += ": the journal no longer has a command adding the subscription, so the rebuild loses the subscription too"
	} else {
		s += fmt.Sprintf(": they were stored before %s, the oldest command adding the subscription that the journal still has (the file of the one before is gone)", l.FirstCommand)
	}
	if l.Undecided > 0 {
		s += fmt.Sprintf("; %d more may be lost (kahafs cannot tell)", l.Undecided)
	}
	return s
}

// RebuildLosses are the durable subscriptions of which a journal-only
// rebuild of the adopted index (deleting db.data) loses pending messages,
// in the graph's order; none when the graph did not adopt an index.
func (g *Graph) RebuildLosses() []RebuildLoss { return g.rebuildLoss }

// noteAdd records loc, a command adding s, as its first since it was
// last deleted (a deletion drops s, and a new one starts over).
func (s *sub) noteAdd(loc codec.Location) {
	if !s.hasFirst {
		s.first, s.hasFirst = loc, true
	}
}

// carryFirst gives s, adopted from the index, the first adding command
// the replay met for the subscription of the same key in old (the
// replayed destination, nil if none). Without one, the replay met no
// command adding it before the recovery position, and the first it meets
// after is its first.
func (s *sub) carryFirst(old *dest) {
	if old == nil {
		return
	}
	if o := old.sub([]byte(s.key)); o != nil && o.hasFirst {
		s.first, s.hasFirst = o.first, true
	}
}

// noteCommitSpan records add, the location of a transactional add to d
// committed now, when a subscription of d was first added after it (its
// first command lies between the add and the commit: a rebuild stores
// the message for that subscription).
func (b *Builder) noteCommitSpan(d *dest, add codec.Location) {
	if !d.topic {
		return
	}
	for _, s := range d.subs {
		if s.hasFirst && before(add, s.first) {
			b.spannedTx = append(b.spannedTx, add.File, add.Offset)
			return
		}
	}
}

// spanned reports whether spannedTx holds loc.
func spanned(spannedTx []int32, loc codec.Location) bool {
	for i := 0; i+1 < len(spannedTx); i += 2 {
		if spannedTx[i] == loc.File && spannedTx[i+1] == loc.Offset {
			return true
		}
	}
	return false
}

// before reports whether a comes before b in the journal.
func before(a, b codec.Location) bool {
	return a.File < b.File || a.File == b.File && a.Offset < b.Offset
}

// rebuildLosses works out the RebuildLoss of every durable subscription
// of g that loses something.
func rebuildLosses(g *Graph, spannedTx []int32) []RebuildLoss {
	var out []RebuildLoss
	for _, d := range g.dests {
		for _, s := range d.Subscriptions {
			if s.Retroactive {
				continue
			}
			l := RebuildLoss{Destination: d.String(), ClientID: s.ClientID, SubscriptionName: s.SubscriptionName}
			if s.hasFirst {
				l.FirstCommand = s.first.String()
			}
			count := func(m *Message) {
				l.Pending++
				switch {
				case s.hasFirst && !before(m.Loc, s.first) && !m.Updated:
				case m.Updated || m.Unreadable || m.inTx && spanned(spannedTx, m.Loc):
					// first added elsewhere, or unread; or committed
					// after some subscription's first command
					l.Undecided++
				default:
					l.Lost++
				}
			}
			for _, i := range s.pending {
				count(&d.Messages[i])
			}
			for _, i := range s.inDoubt {
				count(&d.Messages[i])
			}
			if l.Lost > 0 || l.Undecided > 0 || !s.hasFirst {
				out = append(out, l)
			}
		}
	}
	return out
}
