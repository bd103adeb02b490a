package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/stretchr/testify/require"
)

// TestIndexDeletedWarning: on testdata/rebuildloss (refgraph RebuildLoss,
// holders/rebuildloss_test.go checks the numbers against a broker),
// holders, plan and the tree's README and summary.json say not to delete
// db.data, for which subscription and how many messages.
func TestIndexDeletedWarning(t *testing.T) {
	dir := filepath.Join(brokertest.RepoRoot(), "testdata", "rebuildloss", "store")
	const line = "warning: do not delete db.data: durable subscription c-rb:s-rb on topic://T.RB has 8 message(s) pending that a broker rebuilding its index from the journal does not recover (of 13)"
	type loss struct {
		Destination      string `json:"destination"`
		ClientID         string `json:"clientId"`
		SubscriptionName string `json:"subscriptionName"`
		Pending, Lost    int64
	}
	want := []loss{{"topic://T.RB", "c-rb", "s-rb", 13, 8}}
	check := func(what, raw string) {
		t.Helper()
		var doc struct {
			IfIndexDeleted []loss `json:"ifIndexDeleted"`
		}
		require.NoError(t, json.Unmarshal([]byte(raw), &doc), what)
		require.Equal(t, want, doc.IfIndexDeleted, what)
	}
	out, _, code := runCLI(t, "holders", "--no-cache", dir)
	require.Zero(t, code)
	require.Contains(t, out, line)
	out, _, code = runCLI(t, "holders", "--no-cache", "--json", dir)
	require.Zero(t, code)
	check("holders --json", out)
	out, _, code = runCLI(t, "plan", "--no-cache", dir)
	require.Zero(t, code)
	require.Contains(t, out, line)
	out, _, code = runCLI(t, "plan", "--no-cache", "--json", dir)
	require.Zero(t, code)
	check("plan --json", out)
	out, _, code = runCLI(t, "cat", "--no-cache", dir, "README")
	require.Zero(t, code)
	require.Contains(t, out, "WARNING: do not delete db.data")
	require.Contains(t, out, line[len("warning: "):])
	out, _, code = runCLI(t, "cat", "--no-cache", dir, "summary.json")
	require.Zero(t, code)
	check("summary.json", out)
	// from the analysis cache (its saved replay state) as from the journal
	cache := t.TempDir()
	aged := brokertest.AgedCopy(t, dir)
	for i := range 2 {
		out, errOut, code := runCLI(t, "holders", "--cache-dir", cache, "--json", aged)
		require.Zero(t, code)
		check("holders --json, run "+fmt.Sprint(i+1), out)
		if i == 1 {
			require.Contains(t, errOut, "cache: hit")
		}
	}
	// --no-index: the broker's own rebuild; nothing adopted, nothing to say
	out, _, code = runCLI(t, "holders", "--no-cache", "--no-index", dir)
	require.Zero(t, code)
	require.NotContains(t, out, "do not delete db.data")
}
