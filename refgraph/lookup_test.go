package refgraph

import (
	"testing"

	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestIDIndex: in every fixture's graph, the id index finds exactly the
// messages a scan of every destination finds, in the same order, for
// every held id and for ids nobody holds; the position lookups agree with
// the lists they index.
func TestIDIndex(t *testing.T) {
	for _, fx := range brokertest.Fixtures(t) {
		t.Run(fx.Name, func(t *testing.T) {
			g := replayDir(t, fx.StoreDir, fixtureMaxFile(fx))
			x := NewIDIndex(g)
			scan := func(id string) []MessageRef {
				var out []MessageRef
				for _, d := range g.Destinations() {
					for i := range d.Messages {
						if d.Messages[i].HasID(id) {
							out = append(out, MessageRef{d, i})
						}
					}
				}
				return out
			}
			ids := map[string]bool{"ID:no-such-message:1:1:1:1": true, "ID:x": true}
			for _, d := range g.Destinations() {
				for i := range d.Messages {
					id := d.Messages[i].ID()
					ids[id], ids[id+"1"], ids[id[:len(id)-1]] = true, true, true
				}
			}
			for id := range ids {
				assert.Equal(t, scan(id), x.Lookup(id), id)
			}
			for _, d := range g.Destinations() {
				checkIndex(t, d.Pending(), d, d.PendingIndex)
				checkIndex(t, d.InDoubt(), d, d.InDoubtIndex)
				for _, s := range d.Subscriptions {
					checkIndex(t, s.Pending(), d, s.PendingIndex)
					checkIndex(t, s.InDoubt(), d, s.InDoubtIndex)
				}
			}
			for _, tx := range g.OpenTransactions() {
				assert.Contains(t, []TxState{InFlight, Prepared}, tx.State)
			}
			open := 0
			for _, tx := range g.Transactions() {
				if tx.State == InFlight || tx.State == Prepared {
					open++
				}
			}
			assert.Len(t, g.OpenTransactions(), open)
		})
	}
}

// checkIndex checks pos against list, a list of d's messages: every
// message of d is at its position in list, or not in it.
func checkIndex(t *testing.T, list []*Message, d *Destination, pos func(i int) (int, bool)) {
	t.Helper()
	at := map[*Message]int{}
	for k, m := range list {
		at[m] = k
	}
	for i := range d.Messages {
		k, ok := pos(i)
		want, in := at[&d.Messages[i]]
		require.Equal(t, in, ok, "%s message %d", d, i)
		if ok {
			assert.Equal(t, want, k, "%s message %d", d, i)
		}
	}
}
