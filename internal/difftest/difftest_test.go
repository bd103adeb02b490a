package difftest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/refgraph"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDifferential runs the seeded workloads on a real broker and compares
// kahafs with it (see the package documentation for the knobs).
func TestDifferential(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: not running the real broker")
	}
	brokertest.Require(t)
	spec := os.Getenv("KAHAFS_DIFF_SEEDS")
	if spec == "" {
		spec = DefaultSeeds
	}
	seeds, err := ParseSeeds(spec)
	require.NoError(t, err, "KAHAFS_DIFF_SEEDS")
	ops := DefaultOps
	if s := os.Getenv("KAHAFS_DIFF_OPS"); s != "" {
		ops, err = strconv.Atoi(s)
		require.NoError(t, err, "KAHAFS_DIFF_OPS")
		require.Positive(t, ops, "KAHAFS_DIFF_OPS")
	}
	known, err := LoadKnown("known.json")
	require.NoError(t, err)
	repo := brokertest.RepoRoot()
	keys, err := SourceKeys(repo)
	require.NoError(t, err)
	cfg := Config{Repo: repo, Cache: os.Getenv("KAHAFS_DIFF_CACHE"), Work: t.TempDir(), Ops: ops, Keys: keys}
	t.Logf("seeds %s, %d operations each, cache %q (%s, %s), failing seeds kept under %s", spec, ops, cfg.Cache, keys.Workload, keys.Oracle, KeepRoot())

	var mu sync.Mutex
	var results []*Result
	sem := make(chan struct{}, 2) // at most two seeds (two JVMs) at once
	t.Run("seeds", func(t *testing.T) {
		for _, seed := range seeds {
			t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) {
				t.Parallel()
				sem <- struct{}{}
				defer func() { <-sem }()
				r := RunSeed(context.Background(), cfg, seed)
				mu.Lock()
				results = append(results, r)
				mu.Unlock()
				judge(t, cfg, r, known[seed])
			})
		}
	})
	sort.Slice(results, func(i, j int) bool { return results[i].Seed < results[j].Seed })
	t.Log("\n" + Summary(results, known))
	if path := os.Getenv("KAHAFS_DIFF_RESULTS"); path != "" {
		raw, err := ResultsJSON(results)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, raw, 0o644), "KAHAFS_DIFF_RESULTS")
	}
}

// reporter is what judge needs of a testing.T.
type reporter interface {
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
}

// judge prints a seed's report, keeps it (Keep, under KeepRoot) when it
// fails or is known to disagree, or with KAHAFS_DIFF_KEEP set when it
// disagrees at all (KAHAFS_DIFF_KEEP_ALL=1: always), and fails it unless
// every finding is explained or the seed is in known.json; a seed that
// could not be compared fails even so. It returns where the seed was kept
// ("" if it was not).
func judge(t reporter, cfg Config, r *Result, reason string) string {
	rep := Report(r, reason)
	t.Logf("\n%s", rep)
	failing := r.Err != nil || r.Unexplained() > 0
	kept := ""
	if failing || os.Getenv("KAHAFS_DIFF_KEEP_ALL") == "1" || !r.Agrees() && os.Getenv("KAHAFS_DIFF_KEEP") != "" {
		dir, err := Keep(KeepRoot(), cfg, r, rep)
		if err != nil {
			t.Errorf("seed %d: %v", r.Seed, err)
		}
		kept = dir
		t.Logf("seed %d: KEPT in %s (replay: KAHAFS_DIFF_REPLAY=%s go test ./internal/difftest -run TestReplay -v)", r.Seed, dir, dir)
	}
	// explained findings (a broker behaviour kahafs cannot know, e.g. the
	// clock) are reported, not failed
	switch {
	case r.Err != nil:
		t.Errorf("seed %d could not be compared: %v", r.Seed, r.Err)
	case r.Unexplained() == 0 && reason != "":
		t.Logf("seed %d has no unexplained finding now: remove it from known.json (%s)", r.Seed, reason)
	case r.Unexplained() == 0:
	case reason != "":
		t.Logf("seed %d: known, not failing: %s", r.Seed, reason)
	default:
		t.Errorf("seed %d: kahafs disagrees with the broker (%d unexplained findings, report above)", r.Seed, r.Unexplained())
	}
	return kept
}

func TestParseSeeds(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []int64
		err  bool
	}{
		{in: "1-5", want: []int64{1, 2, 3, 4, 5}},
		{in: "3,17,42", want: []int64{3, 17, 42}},
		{in: "9, 1-3 ,2", want: []int64{1, 2, 3, 9}},
		{in: "7", want: []int64{7}},
		{in: "-3--1", want: []int64{-3, -2, -1}},
		{in: "5-1", err: true},
		{in: "x", err: true},
		{in: "1-", err: true},
		{in: "", err: true},
		{in: "1-1000000", err: true},
	} {
		got, err := ParseSeeds(c.in)
		if c.err {
			assert.Error(t, err, c.in)
			continue
		}
		require.NoError(t, err, c.in)
		assert.Equal(t, c.want, got, c.in)
	}
}

func TestKnownParses(t *testing.T) {
	known, err := LoadKnown("known.json")
	require.NoError(t, err)
	for seed, reason := range known {
		assert.NotEmpty(t, reason, "seed %d needs a reason", seed)
	}
}

// TestDispatchOrderMatchesBroker checks the priority dispatch rule against
// the orders a real 5.17.2 broker delivered (testdata/priority-paging.json).
func TestDispatchOrderMatchesBroker(t *testing.T) {
	raw, err := os.ReadFile("testdata/priority-paging.json")
	require.NoError(t, err)
	var doc struct {
		Cases []struct {
			Name              string `json:"name"`
			StorePriorities   []int  `json:"storePriorities"`
			StoreExpired      []int  `json:"storeExpired"`
			Prefetch1         []int  `json:"prefetch1"`
			Prefetch1Again    []int  `json:"prefetch1Again"`
			Prefetch1000      []int  `json:"prefetch1000"`
			Prefetch1000Again []int  `json:"prefetch1000Again"`
			Browse            []int  `json:"browse"`
		} `json:"cases"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	require.Len(t, doc.Cases, 3)
	for _, c := range doc.Cases {
		t.Run(c.Name, func(t *testing.T) {
			msgs := make([]Paged, len(c.StorePriorities))
			for i, p := range c.StorePriorities {
				msgs[i].Priority = p
			}
			for _, i := range c.StoreExpired {
				msgs[i].Expired = true
			}
			n := len(msgs) - len(c.StoreExpired)
			require.Len(t, c.Prefetch1, n)
			assert.Equal(t, c.Prefetch1, c.Prefetch1Again, "the broker's order with prefetch 1 is repeatable")
			assert.Equal(t, c.Prefetch1000, c.Prefetch1000Again, "and with prefetch 1000")
			assert.Equal(t, c.Prefetch1, DispatchOrder(msgs, MaxPageSize, 1), "prefetch 1")
			assert.Equal(t, c.Prefetch1000, DispatchOrder(msgs, MaxPageSize, 1000), "prefetch 1000")
			if c.Browse != nil {
				want := DispatchOrder(msgs, MaxPageSize, 1000)
				assert.Equal(t, want[:min(len(want), MaxBrowsePageSize)], c.Browse, "a browser sees the pages sorted one by one, at most maxBrowsePageSize")
			}
			// the rule is not the store order, nor (with more than a page) one sort by priority
			var ident []int
			for i := range msgs {
				if !msgs[i].Expired {
					ident = append(ident, i)
				}
			}
			assert.NotEqual(t, ident, c.Prefetch1)
			if len(c.StoreExpired) > 0 {
				// leaving the expired message out before paging does not give the
				// broker's order: it took a place in the store cursor's batch
				var kept []Paged
				var pos []int
				for i, m := range msgs {
					if !m.Expired {
						kept = append(kept, m)
						pos = append(pos, i)
					}
				}
				var got []int
				for _, p := range DispatchOrder(kept, MaxPageSize, 1000) {
					got = append(got, pos[p])
				}
				assert.NotEqual(t, c.Prefetch1000, got)
			}
		})
	}
	pg := func(prios ...int) []Paged {
		var out []Paged
		for _, p := range prios {
			out = append(out, Paged{Priority: p})
		}
		return out
	}
	assert.Empty(t, DispatchOrder(nil, MaxPageSize, 1))
	assert.Equal(t, []int{1, 0, 2}, DispatchOrder(pg(4, 9, 4), 0, 0), "defaults: one page, prefetch 1")
	assert.Equal(t, []int{0, 3, 1, 2}, DispatchOrder(pg(1, 0, 0, 5), 2, 1), "page 2 arrives after the first dispatch")
	assert.Equal(t, []int{0, 1, 3, 2}, DispatchOrder(pg(1, 0, 0, 5), 2, 2), "prefetch 2: the first page is dispatched whole")
	exp := pg(1, 1, 0, 5)
	exp[0].Expired = true
	assert.Equal(t, []int{3, 1, 2}, DispatchOrder(exp, 2, 2), "an expired message takes a place in the cursor's batch, not in the page")
	all := pg(3, 3)
	all[0].Expired, all[1].Expired = true, true
	assert.Empty(t, DispatchOrder(all, 2, 1))
}

// viewFromGraph is the broker view that agrees with the tree's view of g
// (Destination.Pending and Stats.Count, Subscription.Pending and Count),
// but for the queues in storeOrder, which it delivers in store order:
// what the tests below perturb.
func viewFromGraph(g *refgraph.Graph, storeOrder map[string]bool) *View {
	v := &View{StartedAt: 1, Destinations: kahafsDestinations(g), Queues: map[string]*ViewQueue{}, Subscriptions: map[string]*ViewSub{}}
	for _, d := range g.Destinations() {
		if d.Type != codec.Queue {
			continue
		}
		q := &ViewQueue{Count: d.Stats.Count, Consumed: []string{}}
		if storeOrder[d.Name] {
			held := map[string]bool{}
			for _, m := range d.InDoubt() {
				held[m.ID()] = true
			}
			for _, m := range d.Messages {
				if !held[m.ID()] {
					q.Consumed = append(q.Consumed, m.ID())
				}
			}
		} else {
			for _, m := range d.Pending() {
				q.Consumed = append(q.Consumed, m.ID())
			}
		}
		v.Queues[d.Name] = q
	}
	for _, s := range g.Subscriptions() {
		vs := &ViewSub{ClientID: s.ClientID, SubscriptionName: s.SubscriptionName, NoLocal: s.NoLocal, StoreCount: s.Count, Delivered: []string{}}
		if s.HasSelector {
			sel := s.Selector
			vs.Selector = &sel
		}
		for _, m := range s.Pending() {
			vs.Delivered = append(vs.Delivered, m.ID())
		}
		v.Subscriptions[subKey(s)] = vs
	}
	for _, t := range g.PreparedTransactions() {
		p := brokertestPrepared(t)
		v.Prepared = append(v.Prepared, p)
	}
	return v
}

func kinds(fs []Finding) []Kind {
	var out []Kind
	for _, f := range fs {
		out = append(out, f.Kind)
	}
	return out
}

// TestCompareTree: a view that agrees gives no finding; each perturbation
// gives the finding of its kind (on the committed real-broker fixtures).
func TestCompareTree(t *testing.T) {
	for _, fx := range brokertest.Fixtures(t) {
		if fx.Name == "hostile" {
			continue // names the broker lists differently: refgraph's broker tests cover them
		}
		t.Run(fx.Name, func(t *testing.T) {
			g, _, err := LoadGraph(fx.StoreDir, true, int64(fx.Expected.MaxFileLength))
			require.NoError(t, err)
			w := &Workload{}
			if fx.Name == "queues" {
				w.Policies = []Policy{{Queue: "Q.PRIO", PrioritizedMessages: true}}
			}
			in := newInfo(w)
			v := viewFromGraph(g, nil)
			require.Empty(t, compareTree(ViewIndex, g, v, nil, in), "a view made from the graph agrees")

			for name, q := range v.Queues {
				if len(q.Consumed) < 2 || hasHidden(g, name) {
					continue
				}
				other := viewFromGraph(g, nil) // the broker's other view agrees with kahafs
				q.Count++
				q.Consumed[0], q.Consumed[1] = q.Consumed[1], q.Consumed[0]
				fs := compareTree(ViewIndex, g, v, other, in)
				assert.ElementsMatch(t, []Kind{KindQueueCount, KindQueueOrder}, kinds(fs), "queue %s", name)
				for _, f := range fs {
					assert.Equal(t, "queue://"+name, f.Where)
					assert.Empty(t, f.Explained)
					assert.Contains(t, strings.Join(f.Detail, "\n"), "the broker without its index")
				}
				q.Count--
				q.Consumed[0], q.Consumed[1] = q.Consumed[1], q.Consumed[0]
				break
			}
			for key, s := range v.Subscriptions {
				s.StoreCount += 2
				s.Delivered = append(s.Delivered, "ID:extra")
				fs := compareTree(ViewIndex, g, v, nil, in)
				assert.ElementsMatch(t, []Kind{KindSubCount, KindSubDelivered}, kinds(fs), "subscription %s", key)
				delete(v.Subscriptions, key)
				assert.Contains(t, kinds(compareTree(ViewIndex, g, v, nil, in)), KindSubListed)
				break
			}
			v.Destinations = append(v.Destinations, "queue://NOT.THERE")
			assert.Contains(t, kinds(compareTree(ViewIndex, g, v, nil, in)), KindDestinations)
			v.Prepared = append(v.Prepared, brokertest.PreparedTx{XID: "XID:[1,globalId=00,branchId=00]"})
			assert.Contains(t, kinds(compareTree(ViewIndex, g, v, nil, in)), KindPrepared)
		})
	}
}

// TestQueueFindings: the tree's dispatch order and in-doubt messages
// agree with a broker that behaves so; a broker that delivers in store
// order, or delivers an in-doubt message, disagrees.
func TestQueueFindings(t *testing.T) {
	fx := brokertest.Named(t, "queues")
	g, _, err := LoadGraph(fx.StoreDir, true, int64(fx.Expected.MaxFileLength))
	require.NoError(t, err)
	in := newInfo(&Workload{Policies: []Policy{{Queue: "Q.PRIO", PrioritizedMessages: true}}})
	require.Empty(t, compareTree(ViewIndex, g, viewFromGraph(g, nil), nil, in))
	fs := compareTree(ViewIndex, g, viewFromGraph(g, map[string]bool{"Q.PRIO": true}), nil, in)
	require.Len(t, fs, 1, "the tree dispatches Q.PRIO by priority")
	assert.Equal(t, KindQueueOrder, fs[0].Kind)
	assert.Empty(t, fs[0].Explained)
	assert.Contains(t, strings.Join(fs[0].Detail, "\n"), "no pending message of this prioritized queue had expired", "nothing expired: the rule cannot explain it")

	tx := brokertest.Named(t, "tx")
	g, _, err = LoadGraph(tx.StoreDir, true, int64(tx.Expected.MaxFileLength))
	require.NoError(t, err)
	in = newInfo(&Workload{})
	v := viewFromGraph(g, nil)
	require.Empty(t, compareTree(ViewIndex, g, v, nil, in), "the tree holds back what a prepared transaction acked, as the broker does")
	var held *refgraph.Message
	for _, d := range g.Destinations() {
		if ms := d.InDoubt(); len(ms) > 0 && v.Queues[d.Name] != nil {
			held = ms[0]
			v.Queues[d.Name].Consumed = append(v.Queues[d.Name].Consumed, held.ID())
			break
		}
	}
	require.NotNil(t, held, "the tx fixture acks a queue message inside its prepared transaction")
	fs = compareTree(ViewIndex, g, v, nil, in)
	require.Len(t, fs, 1)
	assert.Contains(t, strings.Join(fs[0].Detail, "\n"), held.ID()+" (prio 4, acked in prepared XID:")
}

func TestCompareViews(t *testing.T) {
	sel := "parity = 'even'"
	base := func() *View {
		return &View{
			Destinations:  []string{"queue://Q", "topic://T"},
			Queues:        map[string]*ViewQueue{"Q": {Count: 2, Consumed: []string{"a", "b"}}},
			Subscriptions: map[string]*ViewSub{"topic://T|c:s": {Selector: &sel, StoreCount: 1, Delivered: []string{"x"}}},
			Prepared:      []brokertest.PreparedTx{{XID: "X", Adds: []string{"p"}}},
		}
	}
	assert.Empty(t, compareViews(base(), base(), base(), nil, nil))
	got := base()
	got.Queues["Q"].Consumed = []string{"b", "a"}
	got.Subscriptions["topic://T|c:s"].Delivered = nil
	got.Prepared = nil
	noIndex := base()
	noIndex.Queues["Q"].Consumed = []string{"b", "a"}
	fs := compareViews(base(), got, noIndex, nil, nil)
	require.Len(t, fs, 3)
	for _, f := range fs {
		assert.Equal(t, KindCompaction, f.Kind)
	}
	assert.Equal(t, "queue://Q", fs[0].Where)
	assert.NotEmpty(t, fs[0].Explained, "the original without its index gives the same")
	assert.Contains(t, fs[0].Detail[0], "order differs from position 1")
	assert.Empty(t, fs[1].Explained)
	assert.Contains(t, fs[2].Kahafs, "prepared")

	// the compacted store counts and delivers what the original's drifted
	// count held back (kahafs's Undelivered), and only that
	got = base()
	got.Queues["Q"] = &ViewQueue{Count: 4, Consumed: []string{"a", "h1", "b", "h2"}}
	held := map[string][]string{"Q": {"h1", "h2"}}
	fs = compareViews(base(), got, base(), held, nil)
	require.Len(t, fs, 2)
	assert.Equal(t, heldBackExplains, fs[0].Explained, "count")
	assert.Equal(t, heldBackExplains, fs[1].Explained, "delivered")
	// ... all but those of them that had expired when its broker started
	// (seed 99): it counts them and does not deliver them
	got.Queues["Q"] = &ViewQueue{Count: 5, Consumed: []string{"a", "h1", "b", "h2"}}
	held3 := map[string][]string{"Q": {"h1", "e", "h2"}}
	expired := func(q, id string) bool { return q == "Q" && id == "e" }
	fs = compareViews(base(), got, base(), held3, expired)
	require.Len(t, fs, 2)
	assert.Equal(t, heldBackExplains, fs[0].Explained, "count")
	assert.Contains(t, fs[1].Explained, heldBackExplains, "delivered")
	assert.Contains(t, fs[1].Explained, "1 more it held back had expired")
	fs = compareViews(base(), got, base(), held3, nil)
	require.Len(t, fs, 2)
	assert.Empty(t, fs[1].Explained, "delivered: without the expiry, a held back message is missing")
	got.Queues["Q"] = &ViewQueue{Count: 5, Consumed: []string{"a", "h1", "b", "h2", "e"}}
	fs = compareViews(base(), got, base(), held3, expired)
	require.Len(t, fs, 2)
	assert.Empty(t, fs[1].Explained, "delivered: an expired message delivered is not the drift's doing")
	for _, bad := range []struct {
		name string
		q    *ViewQueue
	}{
		{"a message more", &ViewQueue{Count: 5, Consumed: []string{"a", "h1", "b", "h2", "z"}}},
		{"one held back missing", &ViewQueue{Count: 3, Consumed: []string{"a", "h1", "b"}}},
		{"the others reordered", &ViewQueue{Count: 4, Consumed: []string{"b", "h1", "a", "h2"}}},
		{"a held back one in place of another", &ViewQueue{Count: 4, Consumed: []string{"a", "h1", "h2", "z"}}},
	} {
		got.Queues["Q"] = bad.q
		for _, f := range compareViews(base(), got, base(), held, nil) {
			if f.Kahafs != "compacted: count 4" { // the count alone matches in the last two
				assert.Empty(t, f.Explained, "%s: %s", bad.name, f.Kahafs)
			}
		}
	}
}

// TestWitnessedHeld: kahafs's held-back messages explain a compacted
// store's extra deliveries only where the workload confirms them: sent to
// that queue, never acknowledged there.
func TestWitnessedHeld(t *testing.T) {
	in := newInfo(&Workload{Steps: []Step{
		{N: 1, Op: "send", Dest: "queue://Q", Messages: []SentMessage{{ID: "h1"}, {ID: "h2"}, {ID: "a"}}},
		{N: 2, Op: "send", Dest: "queue://R", Messages: []SentMessage{{ID: "r1"}}},
		{N: 3, Op: "consume", Dest: "queue://Q", Received: []string{"a"}, AckedIDs: []string{"a"}},
	}})
	got := in.witnessedHeld(map[string][]string{
		"Q": {"h1", "h2"}, // confirmed
		"R": {"r1", "h1"}, // h1 was sent to Q
		"S": {"a"},        // a went to Q, and was acked there
	})
	assert.Equal(t, map[string][]string{"Q": {"h1", "h2"}}, got)
	assert.Empty(t, in.witnessedHeld(map[string][]string{"Q": {"h1", "a"}}), "a was acknowledged on Q")
}

func TestReportAndSummary(t *testing.T) {
	w := &Workload{Steps: []Step{
		{N: 1, Op: "send", Dest: "queue://Q", Messages: []SentMessage{{ID: "a", Prio: 9}, {ID: "b", Prio: 1, TTL: 5}}},
		{N: 2, Op: "send", Dest: "queue://R", Messages: []SentMessage{{ID: "c"}}},
		{N: 3, Op: "restart", How: "halt"},
		{N: 4, Op: "consume", Dest: "queue://Q", Received: []string{"a"}, AckedIDs: []string{"a"}},
		{N: 5, Op: "consume", Dest: "queue://Q", Rejected: "javax.jms.JMSException: Unmatched acknowledge: x"},
	}, Rejected: []string{"seed 7 segment 1: step 5 (consume): javax.jms.JMSException: Unmatched acknowledge: x"}}
	r := &Result{Seed: 7, Workload: w, Findings: []Finding{{Kind: KindQueueCount, View: ViewIndex, Where: "queue://Q", Kahafs: "2", Broker: "1"}}}
	rep := Report(r, "a reason")
	assert.Contains(t, rep, "seed 7: 1 disagreement (known: a reason)")
	assert.Contains(t, rep, "[queue count | with index] queue://Q")
	assert.Contains(t, rep, "#1 send: sent 2 to queue://Q (priorities 1..9) (1 with a TTL)")
	assert.Contains(t, rep, "#3 restart halt")
	assert.Contains(t, rep, "#4 consume: received 1 from queue://Q, acked 1")
	assert.Contains(t, rep, "#5 consume: cut short, the broker refused an ack: javax.jms.JMSException: Unmatched acknowledge: x")
	assert.Contains(t, rep, "1 ack(s) refused by the broker, their steps cut short: seed 7 segment 1: step 5")
	assert.NotContains(t, rep, "queue://R")
	s := Summary([]*Result{r, {Seed: 8}}, map[int64]string{7: "a reason"})
	assert.Contains(t, s, "seeds run: 2, agreeing: 1, disagreeing: 1 (known: 1)")
	assert.Regexp(t, `queue count\s+1\s+0\s+1\s+7\n`, s)
}

func TestSelectorMatch(t *testing.T) {
	in := newInfo(&Workload{Steps: []Step{{N: 1, Messages: []SentMessage{{ID: "e", Idx: 4}, {ID: "o", Idx: 7}}}}})
	for _, c := range []struct {
		sel   string
		id    string
		match bool
	}{
		{"parity = 'even'", "e", true}, {"parity = 'even'", "o", false}, {"parity = 'odd'", "o", true},
		{"idx < 5", "e", true}, {"idx < 5", "o", false}, {"idx >= 7", "o", true}, {"idx >= 7", "e", false},
	} {
		sel := c.sel
		m, ok := in.selectorMatch(&sel, c.id)
		assert.True(t, ok, c.sel)
		assert.Equal(t, c.match, m, "%s on %s", c.sel, c.id)
	}
	sel := "JMSType = 'x'"
	_, ok := in.selectorMatch(&sel, "e")
	assert.False(t, ok)
	_, ok = in.selectorMatch(&sel, "unknown")
	assert.False(t, ok)
}

func brokertestPrepared(t *refgraph.Transaction) brokertest.PreparedTx {
	p := brokertest.PreparedTx{XID: t.ID}
	for _, op := range t.Ops {
		if op.Add {
			p.Adds = append(p.Adds, op.MessageID)
		} else {
			p.Acks = append(p.Acks, op.MessageID)
		}
	}
	return p
}

func TestCompareCleanup(t *testing.T) {
	fx := brokertest.Named(t, "queues")
	g, _, err := LoadGraph(fx.StoreDir, true, int64(fx.Expected.MaxFileLength))
	require.NoError(t, err)
	require.NotEmpty(t, g.GCCandidates(), "the queues fixture's first cleanup deletes files")
	noTrace := func() (*Inspected, error) { return nil, fmt.Errorf("Inspect at TRACE: NullPointerException\nstack") }
	ins := &Inspected{Inspection: &brokertest.Inspection{Deleted: append([]int32{}, g.GCCandidates()...)}}
	assert.Empty(t, compareCleanup(ViewIndex, g, g.GCCandidates(), ins, noTrace))

	ins.Deleted = ins.Deleted[1:]
	fs := compareCleanup(ViewIndex, g, g.GCCandidates(), ins, noTrace)
	require.Len(t, fs, 1)
	assert.Equal(t, KindCleanup, fs[0].Kind)
	assert.Contains(t, fs[0].Detail[0], codec.DataFileName(g.GCCandidates()[0])+": kahafs deletes it, the broker kept it")
	assert.Contains(t, fs[0].Detail[len(fs[0].Detail)-1], "run at TRACE failed: Inspect at TRACE: NullPointerException")

	// with the broker's TRACE lines: the first line that differs is shown
	log := filepath.Join(t.TempDir(), "inspect.log")
	lines := append([]string{}, g.GCLog()...)
	for i, l := range lines {
		if strings.HasPrefix(l, "Cleanup removing the data files: ") {
			lines[i] = "Cleanup removing the data files: " + fmt.Sprint(ins.Deleted)
		}
	}
	require.NoError(t, os.WriteFile(log, []byte("x TRACE MessageDatabase [main] "+strings.Join(lines, "\nx TRACE MessageDatabase [main] ")+"\n"), 0o644))
	traced := func() (*Inspected, error) { return &Inspected{Inspection: ins.Inspection, Log: log, Trace: true}, nil }
	fs = compareCleanup(ViewIndex, g, g.GCCandidates(), ins, traced)
	require.Len(t, fs, 1)
	d := strings.Join(fs[0].Detail, "\n")
	assert.Contains(t, d, "first differing cleanup line:\n  kahafs: Cleanup removing the data files: ")
	assert.Contains(t, d, "  broker: Cleanup removing the data files: "+fmt.Sprint(ins.Deleted))
}

func TestAckedPerDestination(t *testing.T) {
	sub := &SubscriptionRef{Topic: "T", ClientID: "c", SubscriptionName: "s"}
	in := newInfo(&Workload{Steps: []Step{
		{N: 1, Op: "consume", Dest: "queue://Q", AckedIDs: []string{"a"}},
		{N: 2, Op: "consume", Sub: sub, AckedIDs: []string{"t"}},
		{N: 3, Op: "localtx", Outcome: "rollback", From: "queue://Q", AckedIDs: []string{"b"}},
		{N: 4, Op: "xa", Outcome: "prepare-leave", XID: "X", From: "queue://Q", AckedIDs: []string{"c"}},
		{N: 5, Op: "xa", Outcome: "prepare-leave", XID: "Y", Sub: sub, AckedIDs: []string{"u"}},
		{N: 6, Op: "xaresolve", Outcome: "commit", XID: "X"},
		{N: 7, Op: "xaresolve", Outcome: "rollback", XID: "Y"},
		{N: 8, Op: "xa", Outcome: "onephase", From: "queue://Q", AckedIDs: []string{"d", "a"}},
	}})
	assert.Equal(t, map[string]map[string]int{
		"queue://Q":     {"a": 1, "c": 4, "d": 8},
		"topic://T|c:s": {"t": 2},
	}, in.ackedStep)
	assert.Equal(t, []string{"a (acked #1)"}, ackedAgain("queue://Q", []string{"a", "b", "t"}, in))
	assert.Empty(t, ackedAgain("topic://T|other:s", []string{"t"}, in), "acks are per subscription")
}

func TestSourceKeys(t *testing.T) {
	repo := t.TempDir()
	src := filepath.Join(repo, "brokerkit", "src")
	require.NoError(t, os.MkdirAll(src, 0o755))
	write := func(name, text string) {
		require.NoError(t, os.WriteFile(filepath.Join(repo, "brokerkit", name), []byte(text), 0o644))
	}
	write("build.sh", "b")
	write("run.sh", "r")
	write("src/Workload.java", "w1")
	write("src/BrokerView.java", "v1")
	k1, err := SourceKeys(repo)
	require.NoError(t, err)
	write("src/BrokerView.java", "v2")
	k2, err := SourceKeys(repo)
	require.NoError(t, err)
	assert.Equal(t, k1.Workload, k2.Workload, "an oracle change keeps the workloads")
	assert.NotEqual(t, k1.Oracle, k2.Oracle)
	write("src/Workload.java", "w2")
	k3, err := SourceKeys(repo)
	require.NoError(t, err)
	assert.NotEqual(t, k2.Workload, k3.Workload)
	assert.NotEqual(t, k2.Oracle, k3.Oracle)
	c := Config{Cache: "/c", Ops: 40, Keys: k3}
	assert.Equal(t, filepath.Join("/c", k3.Workload, "seed-7-ops40", k3.Oracle), c.OracleDir(7))
}

// hasHidden: a message of the queue is acked inside a prepared transaction.
func hasHidden(g *refgraph.Graph, queue string) bool {
	d, ok := g.Destination("0:" + queue)
	if !ok {
		return false
	}
	for _, m := range d.Messages {
		if d.AckedInPreparedTx(&m) != "" {
			return true
		}
	}
	return false
}

// TestPriorityDispatchNeedsExpiry: a prioritized queue's order that
// differs from the tree's is explained only by messages the workload
// recorded as expired, which the broker did not deliver, and only when the
// expiry is the whole difference (on the priority fixture: 450 pending
// messages on Q.PRIO, more than a page).
func TestPriorityDispatchNeedsExpiry(t *testing.T) {
	fx := brokertest.Named(t, "priority")
	g, _, err := LoadGraph(fx.StoreDir, true, int64(fx.Expected.MaxFileLength))
	require.NoError(t, err)
	d, ok := g.Destination("0:Q.PRIO")
	require.True(t, ok)
	pending := d.Pending()
	require.Greater(t, len(pending), MaxPageSize)
	// the first message in store order expired before the broker started
	gone := d.Messages[0].ID()
	w := &Workload{Policies: []Policy{{Queue: "Q.PRIO", PrioritizedMessages: true}},
		Steps:       []Step{{N: 1, Op: "send", Dest: "queue://Q.PRIO", Messages: []SentMessage{{ID: gone, TTL: 1, Exp: 5}}}},
		Expirations: map[string]int64{gone: 5}}
	in := newInfo(w)
	// the broker: the rule on the store order, the expired message dropped where it is paged in
	var ps []Paged
	var ids []string
	for _, m := range d.Messages {
		ps = append(ps, Paged{Priority: int(m.Priority), Expired: m.ID() == gone})
		ids = append(ids, m.ID())
	}
	var broker []string
	for _, i := range DispatchOrder(ps, MaxPageSize, DefaultQueuePrefetch) {
		broker = append(broker, ids[i])
	}
	tree, _ := in.unexpired("queue://Q.PRIO", pending, 1)
	require.NotEqual(t, tree, broker, "the expired message moves the page boundaries")
	view := func(consumed []string) *View {
		v := viewFromGraph(g, nil)
		v.StartedAt = 10
		v.Queues["Q.PRIO"].Consumed = consumed
		return v
	}
	only := func(fs []Finding) Finding {
		require.Len(t, fs, 1)
		require.Equal(t, "queue://Q.PRIO", fs[0].Where)
		return fs[0]
	}

	f := only(compareTree(ViewIndex, g, view(broker), nil, in))
	assert.Equal(t, KindQueuePriority, f.Kind)
	assert.Contains(t, f.Explained, "1 of its messages had expired")

	// the workload records no expiry (or it came after the broker started)
	f = only(compareTree(ViewIndex, g, view(broker), nil, newInfo(&Workload{Policies: w.Policies, Steps: w.Steps})))
	assert.Equal(t, KindQueueOrder, f.Kind)
	assert.Empty(t, f.Explained)
	assert.Contains(t, strings.Join(f.Detail, "\n"), "no pending message of this prioritized queue had expired")
	late := view(broker)
	late.StartedAt = 4
	f = only(compareTree(ViewIndex, g, late, nil, in))
	assert.Empty(t, f.Explained, "expired after the broker started")

	// the broker delivered the expired message
	f = only(compareTree(ViewIndex, g, view(append([]string{gone}, broker...)), nil, in))
	assert.Empty(t, f.Explained)
	assert.Contains(t, strings.Join(f.Detail, "\n"), "the broker delivered 1 of the messages the workload recorded as expired")

	// the tree's order differs from the rule's for another reason too
	swap := func(view, queue string, ms []*refgraph.Message) []*refgraph.Message {
		if queue == "Q.PRIO" {
			ms[len(ms)-1], ms[len(ms)-2] = ms[len(ms)-2], ms[len(ms)-1]
		}
		return ms
	}
	in.pending = func(d *refgraph.Destination) []*refgraph.Message { return swap(ViewIndex, d.Name, d.Pending()) }
	f = only(compareTree(ViewIndex, g, view(broker), nil, in))
	assert.Empty(t, f.Explained)
	assert.Contains(t, strings.Join(f.Detail, "\n"), "the difference is not the expiry's")
	in.pending = nil

	// the broker's order is neither
	other := append([]string{}, broker...)
	other[0], other[1] = other[1], other[0]
	f = only(compareTree(ViewIndex, g, view(other), nil, in))
	assert.Empty(t, f.Explained)
	assert.Contains(t, strings.Join(f.Detail, "\n"), "does not give the broker's order either")
}
