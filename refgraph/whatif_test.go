package refgraph

import (
	"testing"

	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/kahaindex"
	"github.com/stretchr/testify/require"
)

// fixtureGraph replays a fixture's store as holders does (index included,
// a restarted broker, or a running one).
func fixtureGraph(t *testing.T, fx brokertest.Fixture, running bool) *Graph {
	t.Helper()
	opts := Options{MaxFileLength: int64(fx.Expected.MaxFileLength), Running: running}
	if h, err := kahaindex.ReadHead(fx.StoreDir); err == nil {
		opts.Index = h
	}
	return replayWith(t, fx.StoreDir, opts)
}

// TestCleanupAfterNothingIsTheCleanup: the emulation run again with no
// action is the cleanup Build predicted, step for step, on every fixture
// (restarted and running broker).
func TestCleanupAfterNothingIsTheCleanup(t *testing.T) {
	for _, fx := range brokertest.Fixtures(t) {
		if fx.Expected.MaxFileLength == 0 {
			continue
		}
		for _, running := range []bool{false, true} {
			g := fixtureGraph(t, fx, running)
			gc, log, err := g.CleanupLogAfter(nil, nil)
			require.NoError(t, err, fx.Name)
			require.Equal(t, g.GCCandidates(), gc, "%s running=%v", fx.Name, running)
			require.Equal(t, g.GCLog(), log, "%s running=%v", fx.Name, running)
		}
	}
}

// TestCleanupAfterResolvingEverything: with every queue purged, every
// subscription deleted and every prepared transaction rolled back, a
// file is kept only for the checkpoint's own reasons (the last update,
// the audit and ack map, unreadable data), never for a destination.
func TestCleanupAfterResolvingEverything(t *testing.T) {
	for _, name := range []string{"queues", "topics", "tx", "crash"} {
		fx := brokertest.Named(t, name)
		g := fixtureGraph(t, fx, false)
		var acts []Action
		for _, d := range g.Destinations() {
			if !d.IsTopic() {
				acts = append(acts, Action{Kind: ActPurge, Destination: d.Key})
			}
			for _, s := range d.Subscriptions {
				acts = append(acts, Action{Kind: ActDeleteSubscription, Destination: d.Key, Subscription: s.Key})
			}
		}
		for _, tr := range g.PreparedTransactions() {
			acts = append(acts, Action{Kind: ActRollback, Transaction: tr.ID})
		}
		gc, log, err := g.CleanupLogAfter(acts, nil)
		require.NoError(t, err)
		for _, line := range log {
			require.NotContains(t, line, "has pendingCount", name)
		}
		// every file before the restart's last update's is deleted
		last := g.Summary().CleanupLastUpdate.File
		for _, f := range g.Files() {
			if f.ID < last && unreadable(f) == nil {
				require.Contains(t, gc, f.ID, "%s: %s with every holder resolved", name, f.Name)
			}
		}
	}
}

// TestCleanupAfterRefusesUnknownHolders names what it cannot find.
func TestCleanupAfterRefusesUnknownHolders(t *testing.T) {
	g := fixtureGraph(t, brokertest.Named(t, "topics"), false)
	for _, a := range []Action{
		{Kind: ActPurge, Destination: "0:NOPE"},
		{Kind: ActPurge, Destination: "1:T.NEWS"}, // a topic
		{Kind: ActDeleteSubscription, Destination: "1:T.NEWS", Subscription: "x:y"},
		{Kind: ActCommit, Transaction: "XID:[1,globalId=00,branchId=00]"},
		{Kind: "explode"},
	} {
		_, err := g.CleanupAfter([]Action{a}, nil)
		require.Error(t, err, "%+v", a)
	}
}
