// Package deliver works out what a restarted broker hands a durable topic
// subscription: the store recovers candidates for it (the order index
// after its last-acknowledged position, or its ack-position set:
// refgraph.Subscription.Pending), and the broker's subscription checks
// each against its JMS selector before it dispatches it
// (DurableTopicSubscription, TopicStorePrefetch): a message the selector
// does not match is not delivered (it is acknowledged as unmatched).
// Where the store filters by the ack-position set, it does so in its
// first batch only, which ends with the MaxBatch-th message the selector
// takes; the next batches hand every stored message after it
// (refgraph.Subscription.Recovered; seed 79 of the differential test).
//
// The selector is evaluated as ActiveMQ 5.17.2 does (package selector) on
// each candidate's headers and properties (package openwire), read from
// the journal.
//
// The subscription's store cursor (TopicStorePrefetch, an
// AbstractStoreCursor) starts from the count the store reports for it
// (refgraph.Subscription.Count) and recovers candidates from the store
// only while that count is above zero, a batch of up to MaxBatch matching
// ones at a time, each dispatched one lowering it (fillBatch, remove). So
// a subscription whose count is 0 is handed nothing, even where the store
// holds candidates after its last ack (acks marked unmatched leave the
// last-ack position where it was); one whose count is short of its
// candidates is handed whole batches (the out-of-order acks of
// KAHADB-FORMAT §5.4: count 3, 4 delivered). Checked against the real
// broker by the differential test (seed 243).
package deliver

import (
	"errors"
	"fmt"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/openwire"
	"github.com/kahafs/kahafs/refgraph"
	"github.com/kahafs/kahafs/selector"
)

// Reader reads the command of the record at loc (an ADD or UPDATE).
type Reader func(loc codec.Location, c *codec.Command) error

// Skipped is a candidate the broker does not deliver, and why.
type Skipped struct {
	Message *refgraph.Message
	Why     string
	// ByCount: the store cursor's count does not reach it (else the
	// selector does not match it, or its evaluation failed).
	ByCount bool
}

// Subscription returns, in order, the candidates of sub the broker hands
// it (its selector matches them and its store cursor's count reaches
// them), and the others with why. wireVersion is the store's OpenWire version
// (kahaindex.StoreOpenWireVersion). A message that cannot be read or decoded
// is kept, with an error naming it; the error of a selector that does not
// parse (the broker would not have stored it) keeps every candidate.
func Subscription(sub *refgraph.Subscription, read Reader, wireVersion int) (delivered []*refgraph.Message, skipped []Skipped, err error) {
	delivered, skipped, err = matching(sub, read, wireVersion)
	if limit := cursorLimit(sub, delivered); len(delivered) > limit {
		why := fmt.Sprintf("the broker's count for the subscription is %d: its store cursor recovers only while its count of what is left is above zero, %d at a time", sub.Count, MaxBatch)
		for _, m := range delivered[limit:] {
			skipped = append(skipped, Skipped{Message: m, Why: why, ByCount: true})
		}
		delivered = delivered[:limit]
	}
	return delivered, skipped, err
}

// Reaches reports whether sub's store cursor hands out every candidate
// (before its selector): Subscription then reads nothing for a
// subscription without a selector.
func Reaches(sub *refgraph.Subscription) bool {
	n := sub.NumPending()
	// whole batches up to the count are always handed
	if c := sub.Count; c > 0 && (c >= int64(n) || (c+MaxBatch-1)/MaxBatch*MaxBatch >= int64(n)) {
		return true
	}
	return cursorLimitAt(sub, n, sub.PendingAt) >= n
}

// MaxBatch is how many messages a durable subscription's store cursor
// recovers at a time: the topic's maxPageSize (200 by default).
const MaxBatch = refgraph.MaxPageSize

// cursorLimit is how many of the messages the store hands sub, in order
// (taken: its selector applied), its store cursor hands out. The cursor
// starts from the subscription's count (AbstractStoreCursor.size) and
// recovers a batch of up to MaxBatch only while that is above zero, each
// message handed lowering it: none at 0; past zero, the cursor's size is
// read again from the store (size(): the count of the ack positions not
// acknowledged yet, the messages handed having been consumed), and it goes
// on while that is above zero. So a subscription counted 3 with 4
// candidates is handed the 4 (seed 243), and one counted 381 whose
// candidates are 381 of its positions and 33 acknowledged messages of the
// store's later batches is handed all 414 (the bench's big-pending store,
// PRICES, checked with a real broker).
func cursorLimit(sub *refgraph.Subscription, taken []*refgraph.Message) int {
	return cursorLimitAt(sub, len(taken), func(i int) *refgraph.Message { return taken[i] })
}

// cursorLimitAt is cursorLimit on the total messages at(0), at(1), ...
func cursorLimitAt(sub *refgraph.Subscription, total int, at func(int) *refgraph.Message) int {
	size := sub.Count
	n := 0
	var consumed int64 // of the ack positions
	for n < total {
		if size < 0 && n > 0 {
			// read again: the store's count less what was consumed
			size = sub.Count - consumed
		}
		if size <= 0 {
			break
		}
		k := min(MaxBatch, total-n)
		for i := n; i < n+k; i++ {
			if sub.InAckPositions(at(i).Seq) {
				consumed++
			}
		}
		n += k
		size -= int64(k)
	}
	return n
}

// matching returns the candidates of sub its selector matches, in order,
// and the others with why.
func matching(sub *refgraph.Subscription, read Reader, wireVersion int) (delivered []*refgraph.Message, skipped []Skipped, err error) {
	cands := sub.Pending()
	if !sub.HasSelector {
		return cands, nil, nil
	}
	sel, perr := selector.Parse(sub.Selector)
	if perr != nil {
		return cands, nil, fmt.Errorf("deliver: %s %s: selector %q: %w", sub.Destination, sub.Key, sub.Selector, perr)
	}
	var errs []error
	var c codec.Command
	dec := openwire.Decoder{Version: wireVersion}
	// (Recovered, not cands: where the store's first batch is filtered
	// by the ack positions, the selector decides where it ends)
	delivered = sub.Recovered(func(m *refgraph.Message) bool {
		if rerr := read(m.Loc, &c); rerr != nil {
			errs = append(errs, fmt.Errorf("%s at %s: %w", m.ID(), m.Loc, rerr))
			return true
		}
		om, derr := dec.Decode(c.Message)
		if om == nil {
			errs = append(errs, fmt.Errorf("%s at %s: %w", m.ID(), m.Loc, derr))
			return true
		}
		ok, merr := sel.Match(selector.FromOpenWire(om))
		var ee *selector.EvalError
		switch {
		case merr == nil && ok:
			return true
		case merr == nil:
			skipped = append(skipped, Skipped{Message: m, Why: "the selector does not match"})
			return false
		case errors.As(merr, &ee) && ee.JMSException():
			// the broker catches it: not delivered
			skipped = append(skipped, Skipped{Message: m, Why: "the selector's evaluation fails: " + merr.Error()})
			return false
		default:
			// an exception the broker does not catch, or what this
			// evaluator does not support: said, and kept
			errs = append(errs, fmt.Errorf("%s: %w", m.ID(), merr))
			return true
		}
	})
	if len(errs) > 0 {
		err = fmt.Errorf("deliver: %s %s: %d candidate(s) kept undecided: %w", sub.Destination, sub.Key, len(errs), errors.Join(errs...))
	}
	return delivered, skipped, err
}

// StoreReader reads commands of st's data files (codec.ReadRecordAt).
func StoreReader(st *codec.Store) Reader {
	return func(loc codec.Location, c *codec.Command) error {
		fi, ok := st.File(loc.File)
		if !ok {
			return &codec.CorruptionError{File: codec.DataFileName(loc.File), FileID: loc.File, Offset: int64(loc.Offset), Err: codec.ErrMissingFile}
		}
		_, err := codec.ReadRecordAt(fi, loc, c)
		return err
	}
}
