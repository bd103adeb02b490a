package deliver

import (
	"testing"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/openwire"
	"github.com/kahafs/kahafs/refgraph"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSelectorSubscription: the topics fixture's c-sel:s-sel (selector
// parity = 'even') is handed 24 candidates by the store; its selector
// matches 15, the count the broker reports for it, and every one of them
// has parity even; the others are skipped, with why.
func TestSelectorSubscription(t *testing.T) {
	var fx brokertest.Fixture
	for _, f := range brokertest.Fixtures(t) {
		if f.Name == "topics" {
			fx = f
		}
	}
	require.NotEmpty(t, fx.Name)
	st, err := codec.OpenStore(fx.StoreDir)
	require.NoError(t, err)
	opts := refgraph.StoreOptions(st, true, nil)
	opts.MaxFileLength = int64(fx.Expected.MaxFileLength)
	g, err := refgraph.Load(st, opts, codec.ReadOptions{})
	require.NoError(t, err)
	var sub *refgraph.Subscription
	for _, s := range g.Subscriptions() {
		if s.Key == "c-sel:s-sel" {
			sub = s
		}
	}
	require.NotNil(t, sub)
	require.True(t, sub.HasSelector)
	read := StoreReader(st)
	got, skipped, err := Subscription(sub, read, 11)
	require.NoError(t, err)
	assert.Len(t, sub.Pending(), 24)
	assert.Len(t, got, 15)
	assert.EqualValues(t, sub.Count, len(got))
	assert.Len(t, skipped, 9)
	parity := func(m *refgraph.Message) string {
		var c codec.Command
		require.NoError(t, read(m.Loc, &c))
		om, err := openwire.DecodeMessage(c.Message)
		require.NoError(t, err)
		v, _ := om.Properties.Get("parity")
		return v.Str
	}
	for _, m := range got {
		assert.Equal(t, "even", parity(m), m.ID())
	}
	for _, s := range skipped {
		assert.Equal(t, "odd", parity(s.Message), s.Message.ID())
		assert.NotEmpty(t, s.Why)
	}

	// without a selector: every candidate
	for _, s := range g.Subscriptions() {
		if !s.HasSelector {
			all, none, err := Subscription(s, read, 11)
			require.NoError(t, err)
			assert.Len(t, all, s.NumPending())
			assert.Empty(t, none)
		}
	}
}

// TestCursorLimit: a store cursor starting from count hands out nothing at
// 0 (or below: a count that drifted), else whole batches of MaxBatch until
// the count is spent.
func TestCursorLimit(t *testing.T) {
	for _, c := range []struct {
		count int64
		want  int
	}{{-3, 0}, {0, 0}, {1, MaxBatch}, {3, MaxBatch}, {MaxBatch, MaxBatch}, {MaxBatch + 1, 2 * MaxBatch}, {1 << 40, ((1 << 40) + MaxBatch - 1) / MaxBatch * MaxBatch}} {
		assert.Equal(t, c.want, cursorLimit(c.count), "count %d", c.count)
	}
}
