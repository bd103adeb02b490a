// Package deliver works out what a restarted broker hands a durable topic
// subscription: the store recovers candidates for it (the order index
// after its last-acknowledged position, or its ack-position set:
// refgraph.Subscription.Pending), and the broker's subscription checks
// each against its JMS selector before it dispatches it
// (DurableTopicSubscription, TopicStorePrefetch): a message the selector
// does not match is not delivered (it is acknowledged as unmatched).
//
// The selector is evaluated as ActiveMQ 5.17.2 does (package selector) on
// each candidate's headers and properties (package openwire), read from
// the journal.
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
}

// Subscription returns, in order, the candidates of sub its selector
// matches, and the others with why. A subscription without a selector is
// handed every candidate. wireVersion is the store's OpenWire version
// (kahaindex.StoreOpenWireVersion). A message that cannot be read or decoded
// is kept, with an error naming it; the error of a selector that does not
// parse (the broker would not have stored it) keeps every candidate.
func Subscription(sub *refgraph.Subscription, read Reader, wireVersion int) (delivered []*refgraph.Message, skipped []Skipped, err error) {
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
	for _, m := range cands {
		if rerr := read(m.Loc, &c); rerr != nil {
			delivered = append(delivered, m)
			errs = append(errs, fmt.Errorf("%s at %s: %w", m.ID, m.Loc, rerr))
			continue
		}
		om, derr := dec.Decode(c.Message)
		if om == nil {
			delivered = append(delivered, m)
			errs = append(errs, fmt.Errorf("%s at %s: %w", m.ID, m.Loc, derr))
			continue
		}
		ok, merr := sel.Match(selector.FromOpenWire(om))
		var ee *selector.EvalError
		switch {
		case merr == nil && ok:
			delivered = append(delivered, m)
		case merr == nil:
			skipped = append(skipped, Skipped{Message: m, Why: "the selector does not match"})
		case errors.As(merr, &ee) && ee.JMSException():
			// the broker catches it: not delivered
			skipped = append(skipped, Skipped{Message: m, Why: "the selector's evaluation fails: " + merr.Error()})
		default:
			// an exception the broker does not catch, or what this
			// evaluator does not support: said, and kept
			delivered = append(delivered, m)
			errs = append(errs, fmt.Errorf("%s: %w", m.ID, merr))
		}
	}
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
