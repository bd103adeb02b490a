package holders_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/refgraph"
	"github.com/kahafs/kahafs/store"
	"github.com/stretchr/testify/require"
)

// rebuildLossFixture is testdata/rebuildloss: a store made by brokerkit
// RebuildLoss, on which deleting db.data loses messages of durable
// subscription c-rb:s-rb (generated.json: what it sent).
type rebuildLossFixture struct {
	dir     string
	maxLen  int
	batches map[string][]string
}

func loadRebuildLoss(t *testing.T) rebuildLossFixture {
	dir := filepath.Join(brokertest.RepoRoot(), "testdata", "rebuildloss")
	raw, err := os.ReadFile(filepath.Join(dir, "generated.json"))
	require.NoError(t, err)
	var g struct {
		MaxFileLength int                 `json:"journalMaxFileLength"`
		Batches       map[string][]string `json:"batches"`
	}
	require.NoError(t, json.Unmarshal(raw, &g))
	return rebuildLossFixture{dir: filepath.Join(dir, "store"), maxLen: g.MaxFileLength, batches: g.Batches}
}

func analyse(t *testing.T, dir string, maxLen int, noIndex bool) *refgraph.Graph {
	l, err := store.Locate(dir)
	require.NoError(t, err)
	an, err := store.Analyse(l, store.Options{MaxFileLength: int64(maxLen), NoIndex: noIndex})
	require.NoError(t, err)
	return an.Graph
}

func pendingIDs(g *refgraph.Graph, dest, key string) []string {
	var out []string
	for _, s := range g.Subscriptions() {
		if s.Destination.String() == dest && s.Key == key {
			for _, m := range s.Pending() {
				out = append(out, m.ID())
			}
		}
	}
	sort.Strings(out)
	return out
}

// TestRebuildLoss: on the fixture, kahafs says that deleting db.data loses
// exactly batch B of c-rb:s-rb (sent before the subscription's command the
// journal keeps; the cleanup deleted the file of the first one), and its
// own journal-only replay recovers exactly the rest.
func TestRebuildLoss(t *testing.T) {
	fx := loadRebuildLoss(t)
	g := analyse(t, fx.dir, fx.maxLen, false)
	losses := g.RebuildLosses()
	require.Len(t, losses, 1)
	l := losses[0]
	b, c := len(fx.batches["B"]), len(fx.batches["C"])
	require.Equal(t, refgraph.RebuildLoss{Destination: "topic://T.RB", ClientID: "c-rb", SubscriptionName: "s-rb",
		Pending: int64(b + c), Lost: int64(b), FirstCommand: l.FirstCommand}, l)
	require.NotEmpty(t, l.FirstCommand)
	withIndex := pendingIDs(g, "topic://T.RB", "c-rb:s-rb")
	journalOnly := pendingIDs(analyse(t, fx.dir, fx.maxLen, true), "topic://T.RB", "c-rb:s-rb")
	require.Len(t, withIndex, b+c)
	require.Len(t, journalOnly, len(withIndex)-int(l.Lost), "kahafs's own journal-only replay recovers all but the lost")
	lost := minusStrings(withIndex, journalOnly)
	want := append([]string(nil), fx.batches["B"]...)
	sort.Strings(want)
	require.Equal(t, want, lost)
	require.Contains(t, l.Text(), "do not delete db.data")
	// without the index nothing is adopted: nothing to warn about
	require.Empty(t, analyse(t, fx.dir, fx.maxLen, true).RebuildLosses())
}

// TestRebuildLossBroker: a real broker on a copy of the fixture recovers
// what kahafs says with db.data, and, on a copy without db.data and
// db.redo (it rebuilds its index from the journal), exactly that less the
// messages kahafs warns about.
func TestRebuildLossBroker(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: not running the real broker")
	}
	brokertest.Require(t)
	fx := loadRebuildLoss(t)
	g := analyse(t, fx.dir, fx.maxLen, false)
	losses := g.RebuildLosses()
	require.Len(t, losses, 1)
	const key = "topic://T.RB|c-rb:s-rb"
	with := brokertest.Inspect(t, brokertest.CopyStore(t, fx.dir), fx.maxLen)
	cp := brokertest.CopyStore(t, fx.dir)
	for _, f := range []string{"db.data", "db.redo"} {
		require.NoError(t, os.Remove(filepath.Join(cp, f)))
	}
	without := brokertest.Inspect(t, cp, fx.maxLen)
	require.Contains(t, with.Subscriptions, key)
	require.Contains(t, without.Subscriptions, key)
	require.Equal(t, losses[0].Pending, int64(with.Subscriptions[key].Count), "the broker's count with db.data")
	require.Equal(t, losses[0].Pending-losses[0].Lost, int64(without.Subscriptions[key].Count), "the broker's count after deleting db.data")
	withIDs := append([]string(nil), with.Subscriptions[key].Pending...)
	withoutIDs := append([]string(nil), without.Subscriptions[key].Pending...)
	sort.Strings(withIDs)
	sort.Strings(withoutIDs)
	require.Equal(t, pendingIDs(g, "topic://T.RB", "c-rb:s-rb"), withIDs, "the messages the broker recovers with db.data")
	require.Len(t, minusStrings(withIDs, withoutIDs), int(losses[0].Lost), "the messages deleting db.data loses")
	t.Logf("the broker recovers %d with db.data, %d without: kahafs warns of %d", len(withIDs), len(withoutIDs), losses[0].Lost)
}

func minusStrings(a, b []string) []string {
	in := map[string]bool{}
	for _, x := range b {
		in[x] = true
	}
	var out []string
	for _, x := range a {
		if !in[x] {
			out = append(out, x)
		}
	}
	return out
}
