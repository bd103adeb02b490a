package plan

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/refgraph"
	"github.com/kahafs/kahafs/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func fixturePlan(t *testing.T, name string) (Doc, *refgraph.Graph, string) {
	t.Helper()
	fx := brokertest.Named(t, name)
	l, err := store.Locate(fx.StoreDir)
	require.NoError(t, err)
	a, err := store.Analyse(l, store.Options{MaxFileLength: int64(fx.Expected.MaxFileLength)})
	require.NoError(t, err)
	doc, err := Make(fx.StoreDir, a.Graph)
	require.NoError(t, err)
	return doc, a.Graph, fx.StoreDir
}

// TestPlanActions: one purge per queue, one delete-subscription per
// durable subscription with something pending, a commit and a rollback
// per prepared transaction, sorted by bytes freed; what an action frees
// is pinned now; an action that frees nothing says what else keeps the
// files of its holder.
func TestPlanActions(t *testing.T) {
	for _, name := range []string{"queues", "topics", "tx", "messages", "crash"} {
		doc, g, _ := fixturePlan(t, name)
		count := map[string]int{}
		for i, a := range doc.Actions {
			count[a.Action]++
			if i > 0 {
				require.GreaterOrEqual(t, doc.Actions[i-1].Frees.Bytes, a.Frees.Bytes, "%s: sorted by bytes freed", name)
			}
			for _, id := range a.Frees.Files {
				f, ok := g.File(id)
				require.True(t, ok, "%s: %s frees db-%d.log, which the store has", name, a.Action, id)
				require.True(t, f.Pinned, "%s: %s frees %s, which the cleanup keeps now", name, a.Action, f.Name)
			}
			if a.Action == Purge || a.Action == DeleteSubscription || a.Action == Commit || a.Action == Rollback {
				require.True(t, a.Writes.Estimate)
				if len(a.Frees.Files) == 0 && len(a.Holds) > 0 {
					pinned := false
					for _, id := range a.Holds {
						if f, ok := g.File(id); ok && f.Pinned {
							pinned = true
						}
					}
					if pinned {
						require.NotEmpty(t, a.HeldBy, "%s: %s %+v frees nothing: what else keeps its files", name, a.Action, a.Target)
					}
				}
			}
			if a.Action == Purge {
				require.Equal(t, a.Messages, a.Writes.Records, "%s: a purge writes an ack a message", name)
			}
		}
		queues, subs := 0, 0
		for _, d := range g.Destinations() {
			if !d.IsTopic() {
				queues++
			}
			for _, s := range d.Subscriptions {
				if s.NumPending() > 0 || len(s.InDoubt()) > 0 {
					subs++
				}
			}
		}
		assert.Equal(t, queues, count[Purge], name)
		assert.Equal(t, subs, count[DeleteSubscription], name)
		assert.Equal(t, len(g.PreparedTransactions()), count[Commit], name)
		assert.Equal(t, len(g.PreparedTransactions()), count[Rollback], name)
		assert.Equal(t, 1, count[Compact], name)
		if c := doc.Combined; c != nil {
			for _, i := range c.Actions {
				a := doc.Actions[i]
				require.NotEqual(t, Compact, a.Action)
				require.NotEqual(t, WaitAckCompaction, a.Action)
			}
		}
	}
}

// TestPlanJSONShape: the document has the keys.
func TestPlanJSONShape(t *testing.T) {
	doc, _, _ := fixturePlan(t, "topics")
	var b bytes.Buffer
	require.NoError(t, doc.WriteJSON(&b))
	var v struct {
		Actions []map[string]json.RawMessage `json:"actions"`
	}
	require.NoError(t, json.Unmarshal(b.Bytes(), &v))
	require.NotEmpty(t, v.Actions)
	for _, a := range v.Actions {
		for _, k := range []string{"action", "target", "frees", "writes"} {
			require.Contains(t, a, k)
		}
		var f struct {
			Files []int32 `json:"files"`
			Bytes *int64  `json:"bytes"`
		}
		require.NoError(t, json.Unmarshal(a["frees"], &f))
		require.NotNil(t, f.Files)
		require.NotNil(t, f.Bytes)
		var act string
		require.NoError(t, json.Unmarshal(a["action"], &act))
		if act == DeleteSubscription {
			var tg Target
			require.NoError(t, json.Unmarshal(a["target"], &tg))
			require.NotEmpty(t, tg.Destination)
			require.NotEmpty(t, tg.ClientID)
			require.NotEmpty(t, tg.SubscriptionName)
		}
	}
}

// TestResolverAgreesWithPlan: what the mount says resolving a queue or a
// subscription frees is the plan's action.
func TestResolverAgreesWithPlan(t *testing.T) {
	for _, name := range []string{"queues", "topics"} {
		doc, g, dir := fixturePlan(t, name)
		r := NewResolver(dir, g)
		for _, a := range doc.Actions {
			switch a.Action {
			case Purge:
				d := g.Destinations()
				for _, x := range d {
					if x.String() == a.Target.Destination {
						res, err := r.Destination(x)
						require.NoError(t, err)
						require.Equal(t, a.Frees.Files, res.Files)
						require.Equal(t, a.Frees.Bytes, res.Bytes)
					}
				}
			case DeleteSubscription:
				for _, s := range g.Subscriptions() {
					if s.Destination.String() == a.Target.Destination && s.ClientID == a.Target.ClientID && s.SubscriptionName == a.Target.SubscriptionName {
						res, err := r.Subscription(s)
						require.NoError(t, err)
						require.Equal(t, a.Frees.Files, res.Files)
					}
				}
			}
		}
	}
}

// TestPlanText: one numbered line an action, the combination last.
func TestPlanText(t *testing.T) {
	doc, _, _ := fixturePlan(t, "queues")
	lines := doc.Text()
	n := 0
	for _, l := range lines {
		if len(l) > 3 && l[2] == '.' {
			n++
		}
	}
	require.Equal(t, len(doc.Actions), n)
	require.True(t, strings.HasPrefix(lines[len(lines)-1], "combined: "), lines[len(lines)-1])
}

// TestRecordSizes: the sizes measured on the broker (brokerkit PlanCheck).
func TestRecordSizes(t *testing.T) {
	assert.Equal(t, int32(227), AckRecordSize("Q.PRIO", "ID:vm-36207-1795990403525-2:1:1:2:6"))
	assert.Equal(t, int32(237), AckRecordSize("Q.REDELIVER", "ID:vm-36207-1795990403525-2:1:1:6:2"))
	assert.Equal(t, int32(36), SubscriptionRemoveSize("T.NEWS", "c-early:s-early"))
	assert.Equal(t, int32(36), OutcomeRecordSize("XID:[4660,globalId=67747269642d7072657061726564,branchId=62712d34]"))
	// the connection id is the id less its last three ":" fields, or up
	// to its first ":" when it has fewer; the same from bytes
	for id, conn := range map[string]int{
		"ID:vm-36207-1795990403525-2:1:1:2:6": len("ID:vm-36207-1795990403525-2:1"),
		"a:b:c":                               1, // fewer than three fields after it
		"a:b:c:d":                             1,
		"x:a:b:c:d":                           3,
		"nocolon":                             7,
		"":                                    0,
	} {
		want := int32(151 + 2*len("Q") + len(id) + conn)
		assert.Equal(t, want, AckRecordSize("Q", id), id)
		assert.Equal(t, want, ackRecordSize("Q", []byte(id)), id)
	}
}

// TestCombinedGreedy: on every fixture, the combination gives back (freed
// less kept) at least what every action together does, what it says is
// what the emulation of its actions says, and leaving out any one of its
// actions gives back less: nothing in it is written for nothing.
func TestCombinedGreedy(t *testing.T) {
	combos := 0
	for _, fx := range brokertest.Fixtures(t) {
		doc, g, dir := fixturePlan(t, fx.Name)
		r := NewResolver(dir, g)
		var every []int
		seenTx := map[string]bool{}
		for i, a := range doc.Actions {
			switch a.Action {
			case Purge, DeleteSubscription:
				every = append(every, i)
			case Commit, Rollback:
				// the decision every action together takes: the one
				// that frees more alone, rollback on a tie
				other := Rollback
				if a.Action == Rollback {
					other = Commit
				}
				var o *Action
				for j := range doc.Actions {
					if doc.Actions[j].Action == other && doc.Actions[j].Target.Transaction == a.Target.Transaction {
						o = &doc.Actions[j]
					}
				}
				require.NotNil(t, o)
				if !seenTx[a.Target.Transaction] && (a.Frees.Bytes > o.Frees.Bytes || a.Frees.Bytes == o.Frees.Bytes && a.Action == Rollback) {
					seenTx[a.Target.Transaction] = true
					every = append(every, i)
				}
			}
		}
		c := doc.Combined
		if c == nil {
			if len(every) > 0 {
				refs, ws := refsOf(doc.Actions, every)
				f, k, err := r.frees(refs, ws)
				require.NoError(t, err)
				assert.LessOrEqual(t, net(f, k), int64(0), "%s: no combination, yet every action gives back something", fx.Name)
			}
			continue
		}
		combos++
		require.Equal(t, "greedy", c.Method)
		refs, ws := refsOf(doc.Actions, c.Actions)
		f, k, err := r.frees(refs, ws)
		require.NoError(t, err)
		assert.Equal(t, f, c.Frees, fx.Name)
		assert.Equal(t, k, c.Keeps, fx.Name)
		refs, ws = refsOf(doc.Actions, every)
		ef, ek, err := r.frees(refs, ws)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, net(c.Frees, c.Keeps), net(ef, ek), "%s: less than every action together", fx.Name)
		t.Logf("%s: %d of %d actions, giving back %d bytes (every action: %d)", fx.Name, len(c.Actions), len(every), net(c.Frees, c.Keeps), net(ef, ek))
		for _, drop := range c.Actions {
			rest := []int{}
			for _, i := range c.Actions {
				if i != drop {
					rest = append(rest, i)
				}
			}
			rf, rk := Frees{}, (*Frees)(nil)
			if len(rest) > 0 {
				refs, ws := refsOf(doc.Actions, rest)
				rf, rk, err = r.frees(refs, ws)
				require.NoError(t, err)
			}
			assert.Less(t, net(rf, rk), net(c.Frees, c.Keeps), "%s: %s %+v adds nothing", fx.Name, doc.Actions[drop].Action, doc.Actions[drop].Target)
		}
	}
	assert.Positive(t, combos)
}
