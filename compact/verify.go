package compact

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/refgraph"
)

// liveState is what a broker serves from a store: pending messages per
// queue in delivery order, delivered messages per durable subscription,
// prepared transactions with their operations.
type liveState struct {
	queues   map[string][]string
	subs     map[string][]string
	prepared map[string][]string
	dests    []string
}

func stateOf(g *refgraph.Graph) liveState {
	s := liveState{queues: map[string][]string{}, subs: map[string][]string{}, prepared: map[string][]string{}}
	for _, d := range g.Destinations() {
		s.dests = append(s.dests, d.String())
		if !d.IsTopic() {
			ids := []string{}
			for _, m := range d.Messages {
				ids = append(ids, m.ID)
			}
			s.queues[d.String()] = ids
			continue
		}
		for _, sub := range d.Subscriptions {
			ids := []string{}
			for i := 0; i < sub.NumPending(); i++ {
				ids = append(ids, sub.PendingAt(i).ID)
			}
			s.subs[d.String()+"|"+sub.Key] = ids
		}
	}
	sort.Strings(s.dests)
	for _, t := range g.PreparedTransactions() {
		var ops []string
		for _, op := range t.Ops {
			kind := "ack"
			if op.Add {
				kind = "add"
			}
			ops = append(ops, kind+" "+op.Destination+" "+op.MessageID+" "+op.Subscription)
		}
		s.prepared[t.ID] = ops
	}
	return s
}

// verify compares the live state of the original and the compacted store,
// and the message bytes of every pending message.
func verify(ost *codec.Store, og *refgraph.Graph, nst *codec.Store, ng *refgraph.Graph) error {
	a, b := stateOf(og), stateOf(ng)
	var diffs []string
	cmp := func(what string, x, y map[string][]string) {
		for _, k := range sortedKeys(x) {
			if strings.Join(x[k], ",") != strings.Join(y[k], ",") {
				diffs = append(diffs, fmt.Sprintf("%s %s: %d messages before, %d after", what, k, len(x[k]), len(y[k])))
			}
		}
		for _, k := range sortedKeys(y) {
			if _, ok := x[k]; !ok {
				diffs = append(diffs, fmt.Sprintf("%s %s: new after compaction", what, k))
			}
		}
	}
	cmp("queue", a.queues, b.queues)
	cmp("subscription", a.subs, b.subs)
	cmp("prepared transaction", a.prepared, b.prepared)
	if strings.Join(a.dests, ",") != strings.Join(b.dests, ",") {
		diffs = append(diffs, fmt.Sprintf("destinations %v before, %v after", a.dests, b.dests))
	}
	if len(diffs) == 0 {
		if err := sameBodies(ost, og, nst, ng); err != nil {
			diffs = append(diffs, err.Error())
		}
	}
	if len(diffs) > 0 {
		if len(diffs) > 10 {
			diffs = append(diffs[:10], fmt.Sprintf("... %d more", len(diffs)-10))
		}
		return fmt.Errorf("%w: %s", ErrVerify, strings.Join(diffs, "; "))
	}
	return nil
}

// sameBodies checks that every message of every destination carries the
// same OpenWire bytes, priority and flag in both stores.
func sameBodies(ost *codec.Store, og *refgraph.Graph, nst *codec.Store, ng *refgraph.Graph) error {
	os := newRecordSource(ost)
	defer os.close()
	ns := newRecordSource(nst)
	defer ns.close()
	var c1, c2 codec.Command
	for _, d := range og.Destinations() {
		nd, ok := ng.Destination(d.Key)
		if !ok || len(nd.Messages) != len(d.Messages) {
			return fmt.Errorf("destination %s: messages differ", d)
		}
		for i := range d.Messages {
			m, n := &d.Messages[i], &nd.Messages[i]
			p1, err := os.payload(m.Loc)
			if err != nil {
				return err
			}
			p2, err := ns.payload(n.Loc)
			if err != nil {
				return err
			}
			if err := codec.DecodeCommand(p1, &c1); err != nil {
				return err
			}
			if err := codec.DecodeCommand(p2, &c2); err != nil {
				return err
			}
			if m.ID != n.ID || !bytes.Equal(c1.Message, c2.Message) || c1.Priority != c2.Priority || c1.PrioritySupported != c2.PrioritySupported {
				return fmt.Errorf("destination %s: message %s differs after compaction", d, m.ID)
			}
		}
	}
	return nil
}
