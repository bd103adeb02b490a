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
	free := Of(&refgraph.File{ID: 10, Name: "db-10.log"})
	assert.Equal(t, "pinned\npending: 2 messages of q\nproducer-audit: audit\nnote: rewrite: sub\n", string(pinned.Text()))
	assert.Equal(t, "free: the broker deletes it at its next cleanup\n", string(free.Text()))

	doc := Doc{Files: []File{pinned, free}}
	assert.Equal(t, []string{
		"db-3.log  pinned: 2 messages\nof q; audit (note: sub)",
		"db-10.log free: the broker deletes it at its next cleanup",
	}, doc.Table())

	b, err := json.Marshal(free)
	require.NoError(t, err)
	assert.JSONEq(t, `{"id":10,"name":"db-10.log","pinned":false,"commands":0,"reasons":[]}`, string(b))
}
