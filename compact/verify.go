package compact

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/refgraph"
	"github.com/kahafs/kahafs/store"
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
			// a stored count that drifted stops the broker's cursor early
			// (Destination.Undelivered); the compacted store, whose index
			// the broker rebuilds, counts right and delivers them all
			s.queues[d.String()] = messageIDs(d.DeliveredIfCounted())
			s.queues[d.String()+" in doubt"] = messageIDs(d.InDoubt())
			n := d.Stats.Count - d.Stats.CountDrift // less what a forced compaction drops
			for _, m := range append(d.Pending(), d.Undelivered()...) {
				if m.Unreadable {
					n--
				}
			}
			s.queues[d.String()+" count"] = []string{strconv.FormatInt(n, 10)}
			continue
		}
		for _, sub := range d.Subscriptions {
			s.subs[d.String()+"|"+sub.Key] = messageIDs(sub.Pending())
			s.subs[d.String()+"|"+sub.Key+" in doubt"] = messageIDs(sub.InDoubt())
			// the count the broker reports (JMX), which may differ from what it delivers
			s.subs[d.String()+"|"+sub.Key+" count"] = []string{strconv.FormatInt(sub.Count, 10)}
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

// messageIDs lists the ids of ms, leaving out the messages whose record
// could not be read (a forced compaction drops them and says so).
func messageIDs(ms []*refgraph.Message) []string {
	ids := make([]string, 0, len(ms))
	for _, m := range ms {
		if !m.Unreadable {
			ids = append(ids, m.ID())
		}
	}
	return ids
}

// verify compares the live state of the original and the compacted store,
// and the message bytes of every pending message.
func verify(og *refgraph.Graph, before map[codec.Location]bodySum, ng *refgraph.Graph, after map[codec.Location]bodySum, noRedelivery bool) error {
	a, b := stateOf(og), stateOf(ng)
	if noRedelivery {
		// the subscriptions the original hands acked messages again are
		// handed only what they had not acknowledged
		for _, d := range og.Destinations() {
			for _, sub := range d.Subscriptions {
				if again := sub.DeliveredAgain(); len(again) > 0 {
					drop := map[*refgraph.Message]bool{}
					for _, m := range again {
						drop[m] = true
					}
					var keep []*refgraph.Message
					for _, m := range sub.Pending() {
						if !drop[m] {
							keep = append(keep, m)
						}
					}
					a.subs[d.String()+"|"+sub.Key] = messageIDs(keep)
				}
			}
		}
	}
	var diffs []string
	cmp := func(what string, x, y map[string][]string) {
		for _, k := range sortedKeys(x) {
			if yk, ok := y[k]; !ok || !slices.Equal(x[k], yk) {
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
	if !slices.Equal(a.dests, b.dests) {
		diffs = append(diffs, fmt.Sprintf("destinations %v before, %v after", a.dests, b.dests))
	}
	if len(diffs) == 0 {
		if err := sameBodies(og, before, ng, after); err != nil {
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

// bodySum identifies what a broker delivers of a message: its OpenWire
// bytes (by SHA-256) and its priority.
type bodySum struct {
	sum       [sha256.Size]byte
	prio      int32
	supported bool
}

func sumOf(c *codec.Command) bodySum {
	return bodySum{sum: sha256.Sum256(c.Message), prio: c.Priority, supported: c.PrioritySupported}
}

// bodyVisitor replays a store and keeps the bodySum of every message
// record by location.
type bodyVisitor struct {
	*refgraph.Builder
	sums map[codec.Location]bodySum
	// progress, when set, is told the journal bytes read of total after
	// each data file.
	progress    func(done, total int64)
	done, total int64
}

func (v *bodyVisitor) FileDone(sum *codec.FileSummary) error {
	if v.progress != nil {
		v.done += sum.Size
		v.progress(v.done, v.total)
	}
	return v.Builder.FileDone(sum)
}

func (v *bodyVisitor) Command(rec codec.Record, c *codec.Command) error {
	if c.Type == codec.AddMessageCommand || c.Type == codec.UpdateMessageCommand {
		v.sums[rec.Loc] = sumOf(c)
	}
	return v.Builder.Command(rec, c)
}

// loadWithBodies is load (no cache: the new journal is replayed in full)
// that also sums every message record (about messages of them). progress,
// when set, is told the bytes read.
func loadWithBodies(dir string, maxFileLength int64, messages int, progress func(done, total int64)) (*codec.Store, *refgraph.Graph, map[codec.Location]bodySum, error) {
	l, err := store.Locate(dir)
	if err != nil {
		return nil, nil, nil, err
	}
	st, opts := l.Journal, store.ReplayOptions(l, store.Options{MaxFileLength: maxFileLength})
	v := &bodyVisitor{Builder: refgraph.NewBuilder(opts), sums: make(map[codec.Location]bodySum, messages), progress: progress}
	for _, f := range st.Files {
		v.total += f.Size
	}
	// One reading worker: framing and decoding the new journal is several
	// times faster than this visitor (hashing, building), so more workers
	// would only fill more read-ahead buffers (each of them memory to
	// fault in) without finishing sooner.
	if err := codec.ReadStore(st, codec.ReadOptions{}, 1, v); err != nil {
		return nil, nil, nil, err
	}
	g, err := v.Build()
	if err != nil {
		return nil, nil, nil, err
	}
	return st, g, v.sums, nil
}

// sameBodies checks that every message of every destination carries the
// same OpenWire bytes, priority and flag in both stores: before, as the
// write phase read each one from the original; after, as the replay of
// the new journal read it.
func sameBodies(og *refgraph.Graph, before map[codec.Location]bodySum, ng *refgraph.Graph, after map[codec.Location]bodySum) error {
	for _, d := range og.Destinations() {
		nd, ok := ng.Destination(d.Key)
		if !ok || len(nd.Messages) != len(d.Messages) {
			return fmt.Errorf("destination %s: messages differ", d)
		}
		for i := range d.Messages {
			m, n := &d.Messages[i], &nd.Messages[i]
			b, ok := before[m.Loc]
			if !ok {
				return fmt.Errorf("destination %s: message %s was not written", d, m.ID())
			}
			if a, ok := after[n.Loc]; !ok || !m.HasID(n.ID()) || a != b {
				return fmt.Errorf("destination %s: message %s differs after compaction", d, m.ID())
			}
		}
	}
	return nil
}
