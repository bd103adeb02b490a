package refgraph

import (
	"fmt"
	"strconv"

	"github.com/kahafs/kahafs/codec"
)

// What-if: the cleanup emulation run again with holders resolved. Build
// keeps what the emulation reads (cleanupInput: the files, the replay's
// position, the ack map, the subscriptions, the open transactions), so a
// Graph answers "what would the next cleanup delete if this queue were
// purged" by running the same steps (cleanupInput.point, .plan) over the
// changed destinations, without replaying anything.

// ActionKind is what an admin does to resolve a holder.
type ActionKind string

// The actions the emulation can run with.
const (
	// ActPurge removes every message of a queue a broker delivers (JMX
	// purge: one ack per message); those a prepared transaction acked
	// stay until its outcome.
	ActPurge ActionKind = "purge"
	// ActDeleteSubscription removes a durable subscription: its command
	// and the messages of its topic no other subscription still needs.
	ActDeleteSubscription ActionKind = "delete-subscription"
	// ActCommit and ActRollback decide a prepared transaction.
	ActCommit   ActionKind = "commit"
	ActRollback ActionKind = "rollback"
)

// Action is one holder resolved.
type Action struct {
	Kind ActionKind
	// Destination is the destination's key (Destination.Key) of a purge
	// or a subscription deletion; Subscription the subscription's key
	// (Subscription.Key).
	Destination, Subscription string
	// Transaction is the id of a prepared transaction (Transaction.ID).
	Transaction string
}

// Write is a record an action appends to the journal before the cleanup:
// its size (a record's Location.Size; each is taken as its own batch) and,
// for an ack, the data file of the message it acknowledges (0: none).
type Write struct {
	Size   int32
	Refers int32
}

// cleanupInput is what the cleanup emulation reads, kept by Build.
type cleanupInput struct {
	files            []inFile
	maxFileLength    int64
	restartTraceSize int32
	running          bool
	pos              position
	ackMap           map[int32][]int32
	open             []*txState
	subs             map[string][]*sub // by destination key, subLocations order
	// indexDamaged: the broker's index cannot tell what its cleanup keeps
	// (model.indexDamage): no deletion is predicted
	indexDamaged bool
}

type inFile struct {
	id         int32
	end        int64
	unreadable bool
	empty      bool // zero bytes on disk: a restarted journal skips it
}

// destStep is what the cleanup's step for one destination reads: the
// files of its stored messages and its subscriptions.
type destStep struct {
	key   string
	files []int32 // of its messages
	keys  []int32 // of its location index's branch keys
	subs  []*sub
}

func (m *model) cleanupInput(opts Options, open []*txState) *cleanupInput {
	in := &cleanupInput{maxFileLength: opts.MaxFileLength, restartTraceSize: opts.RestartTraceSize,
		running: opts.Running, pos: m.position, ackMap: m.ackMap(), open: open, subs: map[string][]*sub{},
		indexDamaged: len(m.indexDamage) > 0}
	for _, f := range m.files {
		in.files = append(in.files, inFile{id: f.ID, end: f.End, unreadable: unreadable(f) != nil, empty: f.Size == 0})
	}
	for _, byName := range m.dests {
		for _, d := range byName {
			if len(d.subs) > 0 {
				in.subs[d.key] = d.subs
			}
		}
	}
	return in
}

// destSteps are the destinations of g as they are, in the broker's order.
func (in *cleanupInput) destSteps(g *Graph) []destStep {
	out := make([]destStep, 0, len(g.order))
	for _, key := range g.order {
		d := destStep{key: key, subs: in.subs[key]}
		if gd := g.destByK[key]; gd != nil {
			d.files = gd.Stats.Files
			for _, k := range gd.IndexKeys {
				d.keys = append(d.keys, k.File)
			}
		}
		out = append(out, d)
	}
	return out
}

// destChange is what actions do to one destination.
type destChange struct {
	purge    bool
	dropSubs map[string]bool
	// acked: messages (indexes in Destination.Messages) a committed
	// transaction acks: of the queue (sub "") or of a subscription
	acked map[string]map[int]bool
	added []int32 // files of messages a committed transaction adds
}

// CleanupAfter runs the emulation of the next cleanup again as if the
// actions had been done and their writes appended (in that order) before
// it: the ids of the files it deletes. It replays nothing: it is the
// cleanup's steps over the graph's destinations with the actions applied.
func (g *Graph) CleanupAfter(actions []Action, writes []Write) ([]int32, error) {
	gc, _, err := g.CleanupLogAfter(actions, writes)
	return gc, err
}

// CleanupLogAfter is CleanupAfter with the emulated cleanup's log (as
// GCLog).
func (g *Graph) CleanupLogAfter(actions []Action, writes []Write) (gc []int32, log []string, err error) {
	p, err := g.planAfter(actions, writes)
	if err != nil {
		return nil, nil, err
	}
	return append([]int32{}, p.deleted.ids...), p.log, nil
}

// KeptForAcks are the files the cleanup as it is keeps only because acks
// in them refer to kept files (its last step): what the broker's own ack
// compaction can move away.
func (g *Graph) KeptForAcks() []int32 { return g.keptForAcks }

func (g *Graph) planAfter(actions []Action, writes []Write) (*cleanupPlan, error) {
	in := g.cleanIn
	if in == nil {
		return nil, fmt.Errorf("refgraph: the graph keeps no cleanup input")
	}
	changes := map[string]*destChange{}
	change := func(key string) *destChange {
		c := changes[key]
		if c == nil {
			c = &destChange{dropSubs: map[string]bool{}, acked: map[string]map[int]bool{}}
			changes[key] = c
		}
		return c
	}
	decided := map[*txState]bool{}
	var extraKeys []string
	for _, a := range actions {
		switch a.Kind {
		case ActPurge:
			d := g.destByK[a.Destination]
			if d == nil || d.IsTopic() {
				return nil, fmt.Errorf("refgraph: purge: no queue with key %q", a.Destination)
			}
			change(a.Destination).purge = true
		case ActDeleteSubscription:
			if g.subscription(a.Destination, a.Subscription) == nil {
				return nil, fmt.Errorf("refgraph: delete-subscription: no subscription %q on %q", a.Subscription, a.Destination)
			}
			change(a.Destination).dropSubs[a.Subscription] = true
		case ActCommit, ActRollback:
			var t *txState
			for _, o := range in.open {
				if o.id == a.Transaction && o.prepared {
					t = o
				}
			}
			if t == nil {
				return nil, fmt.Errorf("refgraph: %s: no prepared transaction %q", a.Kind, a.Transaction)
			}
			decided[t] = true
			if a.Kind == ActRollback {
				continue
			}
			for _, op := range t.ops {
				key := strconv.Itoa(int(op.typ)) + ":" + op.name
				c := change(key)
				if op.add {
					c.added = append(c.added, op.loc.File)
					if g.destByK[key] == nil && !containsKey(g.order, key) && !containsKey(extraKeys, key) {
						extraKeys = append(extraKeys, key) // the commit creates it: last in the map
					}
				}
			}
			// the acks, by the message ids the graph keeps
			for _, tr := range g.txs {
				if tr.ID != t.id || tr.State != Prepared {
					continue
				}
				for _, op := range tr.Ops {
					if op.Add {
						continue
					}
					gd := g.destByName(op.Destination)
					if gd == nil {
						continue
					}
					c := change(gd.Key)
					for i := range gd.Messages {
						if gd.Messages[i].id.is(op.MessageID) {
							if c.acked[op.Subscription] == nil {
								c.acked[op.Subscription] = map[int]bool{}
							}
							c.acked[op.Subscription][i] = true
							break
						}
					}
				}
			}
		default:
			return nil, fmt.Errorf("refgraph: unknown action %q", a.Kind)
		}
	}
	// the acks among the writes: by the file each lands in, the files
	// of the messages they acknowledge (a purge's come in runs of the
	// same two files)
	var acks map[int32][]int32
	lastIn, lastRefers := int32(-1), int32(-1)
	cl := in.point(writes, func(i int, loc codec.Location) {
		w := writes[i]
		if w.Refers == 0 || loc.File == lastIn && w.Refers == lastRefers {
			return
		}
		lastIn, lastRefers = loc.File, w.Refers
		if acks == nil {
			acks = map[int32][]int32{}
		}
		if !containsID(acks[loc.File], w.Refers) {
			acks[loc.File] = append(acks[loc.File], w.Refers)
		}
	})
	steps := in.destSteps(g)
	for _, k := range extraKeys {
		steps = append(steps, destStep{key: k})
	}
	for i := range steps {
		if c := changes[steps[i].key]; c != nil {
			steps[i] = g.changed(steps[i], c)
		}
	}
	var inprog []*txState
	for _, t := range inProgress(in.open, in.running) {
		if !decided[t] {
			inprog = append(inprog, t)
		}
	}
	return in.plan(steps, cl, inprog, acks), nil
}

// changed is the step of a destination with the actions c applied: its
// subscriptions less those dropped, the files of the messages it keeps
// and of those a commit adds.
func (g *Graph) changed(d destStep, c *destChange) destStep {
	out := destStep{key: d.key}
	for _, s := range d.subs {
		if !c.dropSubs[s.key] {
			out.subs = append(out.subs, s)
		}
	}
	files := map[int32]bool{}
	for _, f := range c.added {
		files[f] = true
	}
	if gd := g.destByK[d.key]; gd != nil {
		last := int32(-1) // messages come by sequence: files in runs
		keep := func(i int) {
			if f := gd.Messages[i].Loc.File; f != last {
				files[f], last = true, f
			}
		}
		switch acked := c.acked[""]; {
		case !gd.IsTopic() && c.purge:
			// a purge removes what the store recovers: all but the
			// messages a prepared transaction acked
			for _, i := range gd.inDoubt {
				if !acked[int(i)] {
					keep(int(i))
				}
			}
		case !gd.IsTopic():
			for i := range gd.Messages {
				if !acked[i] {
					keep(i)
				}
			}
		default:
			// a topic keeps a message while a subscription's ack
			// positions hold it (removeAckLocationsForSub drops the
			// others; without any subscription the destination goes)
			subAcked := make([]map[int]bool, len(out.subs))
			for k, s := range out.subs {
				subAcked[k] = c.acked[s.key]
			}
			for i := range gd.Messages {
				seq := gd.Messages[i].Seq
				for k, s := range out.subs {
					if s.hasPos && s.pos.contains(seq) && !subAcked[k][i] {
						keep(i)
						break
					}
				}
			}
		}
	}
	for f := range files {
		out.files = append(out.files, f)
	}
	sortInt32(out.files)
	// The location index's branch keys stay while it holds a message
	// (those of the leaves that empty go: a guess that keeps more files,
	// never fewer); one that holds none is a single empty leaf.
	if len(out.files) > 0 {
		out.keys = d.keys
	}
	return out
}

func (g *Graph) destByName(qualified string) *Destination {
	for _, d := range g.dests {
		if d.String() == qualified {
			return d
		}
	}
	return nil
}

func (g *Graph) subscription(destKey, subKey string) *Subscription {
	d := g.destByK[destKey]
	if d == nil {
		return nil
	}
	for _, s := range d.Subscriptions {
		if s.Key == subKey {
			return s
		}
	}
	return nil
}

// PreparedOps are the locations of the operations of the prepared
// transaction id, with whether each adds a message (false: an ack).
func (g *Graph) PreparedOps(id string) (adds, acks []codec.Location) {
	if g.cleanIn == nil {
		return nil, nil
	}
	for _, t := range g.cleanIn.open {
		if t.id == id && t.prepared {
			for _, op := range t.ops {
				if op.add {
					adds = append(adds, op.loc)
				} else {
					acks = append(acks, op.loc)
				}
			}
		}
	}
	return adds, acks
}

func containsKey(ks []string, k string) bool {
	for _, x := range ks {
		if x == k {
			return true
		}
	}
	return false
}

func containsID(ids []int32, id int32) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}
