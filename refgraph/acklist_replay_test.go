package refgraph

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kahafs/kahafs/codec"
)

// TestAckListSeed290 replays kept seed 290, whose broker lost c9:s9's
// ack-positions entry when c8:s8 was unsubscribed (30:98546): its count
// is 104 in both views, as the broker's (358 with the whole set).
func TestAckListSeed290(t *testing.T) {
	st, err := codec.OpenStore("../internal/difftest/testdata/kept/seed-290-subscription-count-without-index/workload/store")
	require.NoError(t, err)
	for _, idx := range []bool{false, true} {
		g, err := Load(st, StoreOptions(st, idx, nil), codec.ReadOptions{})
		require.NoError(t, err)
		d, ok := g.Destination("1:T.1")
		require.True(t, ok)
		var got int64 = -1
		for _, s := range d.Subscriptions {
			if s.Key == "c9:s9" {
				got = s.Count
			}
		}
		assert.EqualValues(t, 104, got, "index %v", idx)
		assert.Contains(t, g.Warnings(), "30:98546: the broker's ack-positions list loses c9:s9's entry (ListNode's tail removal ends the list before it)", "index %v", idx)
	}
}
