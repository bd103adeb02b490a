package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBrokerShape: -shape broker-big-pending has a real broker write a
// small store outright (brokerkit BigStore at SCALE 0.002): the manifest
// tells what BigStore left pending, and a broker that opens a copy
// (brokerkit Inspect) recovers just that; the store has the broker's own
// db.data, which the timed rows use as it is (-bare is refused); a second
// run takes the store from the cache.
func TestBrokerShape(t *testing.T) {
	brokertest.Require(t)
	root, err := repoRoot()
	require.NoError(t, err)
	cache := t.TempDir()
	cfg := genConfig{Bytes: 6e6, FileLength: 1 << 20, BatchSize: 64 << 10, Seed: 3, Shape: brokerShape}
	var log bytes.Buffer
	cs, err := ensureStore(root, cache, cfg, false, &log)
	require.NoError(t, err, log.String())
	man := cs.man
	assert.Equal(t, map[string]int64{"ActiveMQ.DLQ": 1000, "REPORTS": 180, "WORK": 0}, man.QueuePending)
	assert.Equal(t, map[string]int64{"topic://EVENTS|reporting:archive": 500}, man.SubPending)
	assert.Equal(t, int64(1680), man.Pending)
	assert.Equal(t, int64(2100), man.Messages)
	assert.Regexp(t, `^ID:`, man.SampleID)
	files, err := filepath.Glob(filepath.Join(cs.store, "db-*.log"))
	require.NoError(t, err)
	assert.Len(t, files, man.Files)
	assert.Greater(t, man.Files, 1, "1 MiB files")
	assert.NoDirExists(t, filepath.Join(cs.dir, "broker-data"), "the broker's scratch directory is not kept")

	require.Error(t, options{bare: true}.indexed(root, cs, &log), "-bare: the store is a broker's, index and all")
	require.NoError(t, options{}.indexed(root, cs, &log))
	assert.Equal(t, filepath.Join(cs.dir, "store"), cs.store)
	require.NotNil(t, cs.index)
	assert.True(t, cs.index.Outright)
	st, err := os.Stat(filepath.Join(cs.store, "db.data"))
	require.NoError(t, err)
	assert.Equal(t, st.Size(), cs.index.IndexBytes)
	assert.Contains(t, cs.index.describe(), "broker that wrote the whole store")

	// what a broker recovers of it
	cp := filepath.Join(t.TempDir(), "store")
	require.NoError(t, copyStore(files, cp))
	data, err := os.ReadFile(filepath.Join(cs.store, "db.data"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(cp, "db.data"), data, 0o644))
	out := filepath.Join(t.TempDir(), "inspect.json")
	b, err := exec.Command(filepath.Join(root, "brokerkit", "run.sh"), "Inspect", cp, out, "--max-file-length", "1048576").CombinedOutput()
	require.NoError(t, err, "%s", b)
	raw, err := os.ReadFile(out)
	require.NoError(t, err)
	var in inspection
	require.NoError(t, json.Unmarshal(raw, &in))
	assert.Equal(t, "same", agree(in.QueueCounts, man.QueuePending))
	subs := map[string]int64{}
	for k, s := range in.Subscriptions {
		subs[k] = s.Count
	}
	assert.Equal(t, "same", agree(subs, man.SubPending))

	log.Reset()
	again, err := ensureStore(root, cache, cfg, false, &log)
	require.NoError(t, err)
	assert.Contains(t, log.String(), "using cached store")
	assert.Equal(t, man.SampleID, again.man.SampleID)
}
