package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kahafs/kahafs/fsnode"
	"github.com/kahafs/kahafs/internal/brokertest"
)

// TestGeneratedShapeDelivers: what a real broker hands out of a small
// big-pending store (its index rebuilt from the journal: brokerkit
// BrokerView, every queue and durable subscription consumed) is what the
// tree lists under pending/, message for message, in order. The shape's
// PRICES subscriptions ack out of order and hold more than a store batch
// (200): their last acks above their first ack positions, the store
// filters the first batch only and hands acknowledged messages after it
// again, and its cursor goes on past the subscription's count (kahafs
// listed 378 and 398 where the broker hands 408 and 422 before that was
// known).
func TestGeneratedShapeDelivers(t *testing.T) {
	brokertest.Require(t)
	root, err := repoRoot()
	require.NoError(t, err)
	ts, err := loadTemplates(filepath.Join("..", "testdata", "stores"))
	require.NoError(t, err)
	dir := t.TempDir()
	cfg := genConfig{Bytes: 40e6, FileLength: 32 << 20, BatchSize: 64 << 10, Seed: 1, Shape: "big-pending", NoSync: true}
	_, err = generate(dir, cfg, ts)
	require.NoError(t, err)

	// kahafs first: the broker consumes its copy
	fsys, err := fsnode.Open(dir, fsnode.Options{})
	require.NoError(t, err)
	s := fsys.Snapshot()
	listed := func(p string) []string {
		ents, err := s.ReadDir(p)
		require.NoError(t, err, p)
		var ids []string
		for _, e := range ents {
			if name, ok := strings.CutSuffix(e.Name, ".json"); ok {
				_, id, _ := strings.Cut(name, "-")
				ids = append(ids, id)
			}
		}
		return ids
	}

	files, err := filepath.Glob(filepath.Join(dir, "db-*.log"))
	require.NoError(t, err)
	cp := filepath.Join(t.TempDir(), "store")
	require.NoError(t, copyStore(files, cp))
	wl := filepath.Join(t.TempDir(), "workload.json")
	require.NoError(t, os.WriteFile(wl, []byte(`{"policies": [], "expirations": {}}`), 0o644))
	out := filepath.Join(t.TempDir(), "view.json")
	b, err := exec.Command(filepath.Join(root, "brokerkit", "run.sh"), "BrokerView", cp, out, "--policies", wl,
		"--max-file-length", "33554432", "--no-browse").CombinedOutput()
	require.NoError(t, err, "%s", b)
	raw, err := os.ReadFile(out)
	require.NoError(t, err)
	var view struct {
		Queues map[string]struct {
			Consumed []string `json:"consumed"`
		} `json:"queues"`
		Subscriptions map[string]struct {
			Delivered  []string `json:"delivered"`
			StoreCount int64    `json:"storeCount"`
		} `json:"subscriptions"`
	}
	require.NoError(t, json.Unmarshal(raw, &view))
	require.NotEmpty(t, view.Queues)
	require.NotEmpty(t, view.Subscriptions)

	for name, q := range view.Queues {
		assert.Equal(t, q.Consumed, listed("by-destination/queue/"+name+"/pending"), "queue %s", name)
	}
	beyond := 0
	for key, sub := range view.Subscriptions {
		dest, sk, ok := strings.Cut(key, "|")
		require.True(t, ok, key)
		typ, name, ok := strings.Cut(dest, "://")
		require.True(t, ok, key)
		assert.Equal(t, sub.Delivered, listed("by-destination/"+typ+"/"+name+"/subscriptions/"+sk+"/pending"), "subscription %s", key)
		if int64(len(sub.Delivered)) > sub.StoreCount {
			beyond++
		}
	}
	assert.Positive(t, beyond, "some subscription is handed more than its count (the case this store is for)")
}
