package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/plan"
	"github.com/stretchr/testify/require"
)

// TestPlanCommand: `kahafs plan --json` is the plan package's document,
// the text one numbered line an action; on a layout of several stores
// the answer is per store (the transaction and scheduler stores say why
// they have none); a scheduler store alone is refused with a reason.
func TestPlanCommand(t *testing.T) {
	fx := brokertest.Named(t, "queues")
	mfl := strconv.Itoa(fx.Expected.MaxFileLength)
	out, stderr, code := runCLI(t, "plan", "--json", "--no-cache", "--max-file-length", mfl, fx.StoreDir)
	require.Equal(t, exitOK, code, stderr)
	var doc plan.Doc
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	purges := 0
	for _, a := range doc.Actions {
		if a.Action == plan.Purge {
			purges++
			require.True(t, strings.HasPrefix(a.Target.Destination, "queue://"), a.Target.Destination)
		}
	}
	require.Equal(t, 5, purges, "one purge for every queue of the fixture")

	text, stderr, code := runCLI(t, "plan", "--no-cache", "--max-file-length", mfl, fx.StoreDir)
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, text, "journalMaxFileLength 16384")
	for i := range doc.Actions {
		require.Contains(t, text, fmt.Sprintf("\n%2d. ", i+1), "action %d", i+1)
	}

	lf := brokertest.LayoutFixtures(t)[0]
	out, stderr, code = runCLI(t, "plan", "--json", "--no-cache", "--max-file-length", "16384", lf.DataDir)
	require.Equal(t, exitOK, code, stderr)
	var ld plan.LayoutDoc
	require.NoError(t, json.Unmarshal([]byte(out), &ld))
	kinds := map[string]bool{}
	for _, s := range ld.Stores {
		kinds[s.Kind] = true
		if s.Kind == "kahadb" {
			require.NotNil(t, s.Doc, s.Name)
		} else {
			require.Nil(t, s.Doc, s.Name)
			require.NotEmpty(t, s.NotAnalysed, s.Name)
		}
	}
	require.True(t, kinds["kahadb"] && kinds["txstore"] && kinds["scheduler"], "%v", kinds)

	_, stderr, code = runCLI(t, "plan", "--no-cache", lf.DataDir+"/scheduler")
	require.NotEqual(t, exitOK, code)
	require.Contains(t, stderr, "job scheduler store")
}
