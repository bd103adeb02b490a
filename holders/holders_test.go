package holders

import (
	"encoding/json"
	"testing"

	"github.com/kahafs/kahafs/refgraph"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRenderings: the two layouts of the same verdicts, and a free file's
// reasons are an empty list in JSON, never null.
func TestRenderings(t *testing.T) {
	pinned := Of(&refgraph.File{ID: 3, Name: "db-3.log", Pinned: true, Commands: 7,
		Reasons: []refgraph.Reason{{Kind: "pending", Text: "2 messages\nof q"}, {Kind: "producer-audit", Text: "audit"}},
		Notes:   []refgraph.Reason{{Kind: "rewrite", Text: "sub"}}})
	free := Of(&refgraph.File{ID: 10, Name: "db-10.log", Size: 2048})
	assert.Equal(t, "pinned\npending: 2 messages of q\nproducer-audit: audit\nnote: rewrite: sub\n", string(pinned.Text()))
	assert.Equal(t, "free: the broker deletes it at its next cleanup\n", string(free.Text()))

	doc := Doc{Files: []File{pinned, free}}
	assert.Equal(t, []string{
		"db-3.log        0 B pinned: 2 messages\nof q; audit (note: sub)",
		"db-10.log   2.0 KiB free: the broker deletes it at its next cleanup",
	}, doc.Table())
	doc.Files[1].Allocated = 4096
	tot := TotalsOf(doc.Files)
	assert.Equal(t, Totals{All: Size{Files: 2, Bytes: 2048, Allocated: 4096}, Pinned: Size{Files: 1},
		Free: Size{Files: 1, Bytes: 2048, Allocated: 4096}, NextCleanupFrees: 4096}, tot)

	b, err := json.Marshal(free)
	require.NoError(t, err)
	assert.JSONEq(t, `{"id":10,"name":"db-10.log","pinned":false,"bytes":2048,"commands":0,"reasons":[]}`, string(b))
}
