package holders

import (
	"strings"
	"testing"

	"github.com/kahafs/kahafs/refgraph"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDotAndChainText: a file kept by acks names its chain starts; the
// digraph has its nodes and edges, the start bold, names quoted.
func TestDotAndChainText(t *testing.T) {
	start := Of(&refgraph.File{ID: 2, Name: "db-2.log", Pinned: true, Size: 100,
		Reasons: []refgraph.Reason{{Kind: refgraph.KindPendingMessages, Text: "msgs"}}, AckedBy: []int32{3}})
	kept := Of(&refgraph.File{ID: 3, Name: "db-3.log", Pinned: true, Size: 2048,
		Reasons:    []refgraph.Reason{{Kind: refgraph.KindAcks, Text: "acks"}},
		AcksFor:    []int32{2},
		ChainStart: []int32{2}})
	free := Of(&refgraph.File{ID: 4, Name: "db-4.log", AcksFor: []int32{3}})
	assert.Equal(t, "pinned\nacks: acks\nchain-start: db-2.log (kept by something else than acks: the ack chain that keeps this file starts there)\n", string(kept.Text()))
	assert.NotContains(t, string(start.Text()), "chain-start")

	var b strings.Builder
	doc := Doc{Store: `/x/"st\ore"`, Files: []File{start, kept, free}}
	require.NoError(t, doc.WriteDot(&b))
	out := b.String()
	assert.Contains(t, out, `label="/x/\"st\\ore\"\nA -> B:`)
	assert.Contains(t, out, `  f2 [label="db-2.log\n100 B pinned\npending-messages\nchain start", fillcolor=lightsalmon, penwidth=3, color=red];`)
	assert.Contains(t, out, `  f3 [label="db-3.log\n2.0 KiB pinned\nacks", fillcolor=lightsalmon];`)
	assert.Contains(t, out, `  f4 [label="db-4.log\n0 B free", fillcolor=palegreen];`)
	assert.Contains(t, out, `  f3 -> f2 [label="acks for", style=solid];`)
	assert.Contains(t, out, `  f4 -> f3 [label="acks for", style=dashed, color=gray];`)
	assert.Equal(t, 2, strings.Count(out, " -> f"), "one edge per acks-for")
}
