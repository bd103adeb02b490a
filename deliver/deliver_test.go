package deliver

import (
	"fmt"
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
// 0 (or below: a count that drifted), else whole batches of MaxBatch while
// its count is above zero; spent past zero, it reads the store's count
// again (what of the ack positions is left) and goes on while that is
// above zero.
func TestCursorLimit(t *testing.T) {
	msgs := func(seqs ...int64) []*refgraph.Message {
		var out []*refgraph.Message
		for _, v := range seqs {
			m := refgraph.NewMessage(fmt.Sprintf("ID:p:1:1:1:%d", v), codec.Location{File: 1, Offset: int32(v)})
			m.Seq = v
			out = append(out, m)
		}
		return out
	}
	rng := func(a, b int64) refgraph.SeqRange { return refgraph.SeqRange{First: a, Last: b} }
	span := func(a, b int64) []int64 {
		var out []int64
		for v := a; v <= b; v++ {
			out = append(out, v)
		}
		return out
	}
	for _, c := range []struct {
		name      string
		count     int64
		positions []refgraph.SeqRange
		taken     []int64
		want      int
	}{
		{"drifted", -3, []refgraph.SeqRange{rng(1, 5)}, span(1, 4), 0},
		{"count 0", 0, nil, span(1, 4), 0},
		// seed 243: count 3, four candidates after the last ack (one
		// acknowledged as unmatched): the batch holds all four
		{"one batch", 3, []refgraph.SeqRange{rng(1, 1), rng(3, 5)}, span(1, 4), 4},
		// 381 of the positions and 33 acknowledged ones of the later
		// batches (the PRICES subscriptions): the first two batches spend
		// the count, the store's count of what is left (14) goes on
		{"read again", 381, []refgraph.SeqRange{rng(1, 367), rng(401, 415)}, append(span(1, 400), span(401, 414)...), 414},
		// past zero with nothing of the positions left: stops
		{"nothing left", 200, []refgraph.SeqRange{rng(1, 201)}, span(1, 300), 200},
		{"spent on acknowledged ones", 201, []refgraph.SeqRange{rng(1, 200), rng(301, 302)}, span(1, 400), 400},
	} {
		sub := &refgraph.Subscription{Count: c.count, AckPositions: c.positions}
		assert.Equal(t, c.want, cursorLimit(sub, msgs(c.taken...)), c.name)
	}
}
