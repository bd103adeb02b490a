package main

import (
	"encoding/json"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kahafs/kahafs/fsnode"
	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// layoutHoldersOut is holders --json on a layout of several stores.
type layoutHoldersOut struct {
	Stores []struct {
		Name        string          `json:"name"`
		Kind        string          `json:"kind"`
		Filter      string          `json:"filter"`
		Store       string          `json:"store"`
		NotAnalysed string          `json:"notAnalysed"`
		Files       json.RawMessage `json:"files"`
		GCCandidate []int32         `json:"gcCandidates"`
	} `json:"stores"`
}

// layoutHolders runs holders --json on dir, a layout of several stores.
func layoutHolders(t *testing.T, maxLen int, dir string) layoutHoldersOut {
	t.Helper()
	out, stderr, code := runCLI(t, "holders", "--no-cache", "--json", "--max-file-length", strconv.Itoa(maxLen), dir)
	require.Equal(t, exitOK, code, stderr)
	var doc layoutHoldersOut
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	return doc
}

// TestLayoutHoldersMatchBroker: holders on a broker's data directory and on
// its mKahaDB root lists every store, each with the files the broker
// deleted from it at its first cleanup (layout.json: the real broker's
// MultiStore inspect, made when the fixture was) as its gcCandidates; the
// scheduler store is answered by its own model (what the broker deleted); each store's
// document is the one holders gives pointed at that store alone.
func TestLayoutHoldersMatchBroker(t *testing.T) {
	for _, fx := range brokertest.LayoutFixtures(t) {
		t.Run(fx.Name, func(t *testing.T) {
			in := fx.Expected.Inspect
			require.NotNil(t, in)
			for _, root := range []string{"", "mKahaDB"} {
				doc := layoutHolders(t, in.MaxFileLength, filepath.Join(fx.DataDir, root))
				seen := map[string]bool{}
				for _, s := range doc.Stores {
					rel, err := filepath.Rel(fx.DataDir, s.Store)
					if s.Kind == "scheduler" {
						require.Equal(t, "", root, "the scheduler is a child of the data directory only")
						assert.Equal(t, "scheduler", s.Name)
						// the scheduler's own model: what the broker's
						// scheduler store deleted (layout.json)
						assert.Empty(t, s.NotAnalysed)
						assert.NotNil(t, s.Files)
						want := in.Stores["scheduler"].Deleted
						if want == nil {
							want = []int32{}
						}
						assert.Equal(t, want, s.GCCandidate, "the scheduler store's cleanup")
						seen["scheduler"] = true
						continue
					}
					require.NoError(t, err)
					seen[rel] = true
					assert.Equal(t, filepath.Base(rel), s.Name)
					assert.Empty(t, s.NotAnalysed)
					want, ok := in.Stores[rel]
					require.True(t, ok, "store %s is not in the broker's report", rel)
					wantDeleted := want.Deleted
					if wantDeleted == nil {
						wantDeleted = []int32{}
					}
					assert.Equal(t, wantDeleted, s.GCCandidate, "store %s", rel)
					switch {
					case s.Name == "txStore":
						assert.Equal(t, "txstore", s.Kind)
					default:
						assert.Equal(t, "kahadb", s.Kind)
						assert.True(t, s.Name == "#210" || strings.HasPrefix(s.Filter, "queue://") || strings.HasPrefix(s.Filter, "topic://"), s.Filter)
					}

					// Pointed at the store alone, holders says the same.
					out, stderr, code := runCLI(t, "holders", "--no-cache", "--json", "--max-file-length", strconv.Itoa(in.MaxFileLength), s.Store)
					require.Equal(t, exitOK, code, stderr)
					var single struct {
						Files        json.RawMessage `json:"files"`
						GCCandidates []int32         `json:"gcCandidates"`
					}
					require.NoError(t, json.Unmarshal([]byte(out), &single))
					assert.JSONEq(t, string(single.Files), string(s.Files), "store %s", rel)
					assert.Equal(t, single.GCCandidates, s.GCCandidate)
				}
				for rel := range in.Stores {
					if root == "" || strings.HasPrefix(rel, "mKahaDB/") {
						assert.True(t, seen[rel], "store %s not listed (root %q)", rel, root)
					}
				}
			}
		})
	}
}

// TestLayoutHoldersMatchLiveBroker: what a real broker with the fixture's
// configuration, restarted on a copy of the data directory now, deletes
// from each store is what holders predicts. One fixture, the one with the
// most stores (a broker run costs 10-20 s); layout.json has both brokers'
// reports for TestLayoutHoldersMatchBroker.
func TestLayoutHoldersMatchLiveBroker(t *testing.T) {
	brokertest.Require(t)
	for _, fx := range brokertest.LayoutFixtures(t) {
		if fx.Expected.Mode != "perdest" {
			continue
		}
		t.Run(fx.Name, func(t *testing.T) {
			doc := layoutHolders(t, fx.Expected.MaxFileLength, fx.DataDir)
			in := brokertest.InspectLayout(t, brokertest.CopyTree(t, fx.DataDir), fx.Expected.Mode)
			require.Len(t, in.Prepared, 1, "the fixture leaves one XA transaction prepared")
			n := 0
			for _, s := range doc.Stores {
				rel, err := filepath.Rel(fx.DataDir, s.Store)
				require.NoError(t, err)
				want := in.Stores[rel].Deleted
				if want == nil {
					want = []int32{}
				}
				assert.Equal(t, want, s.GCCandidate, "store %s", rel)
				n++
			}
			assert.Equal(t, len(in.Stores), n, "every store, the scheduler's too (its own model)")
		})
	}
}

// TestLayoutHoldersText: the text output has one heading per store, the
// scheduler's with its own model's lines.
func TestLayoutHoldersText(t *testing.T) {
	fx := brokertest.LayoutFixtures(t)[0]
	out, stderr, code := runCLI(t, "holders", "--no-cache", "--max-file-length", "16384", fx.DataDir)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, out, "== queue://ORDERS.> (mKahaDB/queue#3a#2f#2fORDERS.#3e, kahadb)\n")
	assert.Contains(t, out, "== txStore (mKahaDB/txStore, txstore)\n")
	assert.Contains(t, out, "== scheduler (scheduler, scheduler)\njob scheduler store "+filepath.Join(fx.DataDir, "scheduler")+": 1 job(s) scheduled")
	assert.Contains(t, out, "db-1.log  15.2 KiB free: the broker deletes it at its next cleanup")
}

// TestLayoutStatsAndDump: stats and dump on a data directory report each
// store as they do pointed at it alone, under a heading; the scheduler is
// not analysed.
func TestLayoutStatsAndDump(t *testing.T) {
	fx := brokertest.LayoutFixtures(t)[0]
	out, stderr, code := runCLI(t, "stats", "--json", fx.DataDir)
	require.Equal(t, exitOK, code, stderr)
	var doc struct {
		Stores []map[string]json.RawMessage `json:"stores"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	require.Len(t, doc.Stores, 5)
	for _, s := range doc.Stores {
		var name, kind, dir string
		require.NoError(t, json.Unmarshal(s["name"], &name))
		require.NoError(t, json.Unmarshal(s["kind"], &kind))
		if kind == "scheduler" {
			assert.Contains(t, string(s["notAnalysed"]), "not analysed here: a job scheduler store")
			assert.NotContains(t, s, "files")
			continue
		}
		require.NoError(t, json.Unmarshal(s["store"], &dir))
		alone, stderr, code := runCLI(t, "stats", "--json", dir)
		require.Equal(t, exitOK, code, stderr)
		var single map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(alone), &single))
		for k, v := range single {
			assert.JSONEq(t, string(v), string(s[k]), "%s: %s", name, k)
		}
	}

	out, stderr, code = runCLI(t, "dump", fx.DataDir)
	require.Equal(t, exitOK, code, stderr)
	var heads []string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "== ") {
			heads = append(heads, line)
		}
	}
	assert.Equal(t, []string{
		"== catch-all (mKahaDB/#210, kahadb)",
		"== queue://ORDERS.> (mKahaDB/queue#3a#2f#2fORDERS.#3e, kahadb)",
		"== topic://EVENTS.> (mKahaDB/topic#3a#2f#2fEVENTS.#3e, kahadb)",
		"== txStore (mKahaDB/txStore, txstore)",
		"== scheduler (scheduler, scheduler)",
	}, heads)
	one, stderr, code := runCLI(t, "dump", filepath.Join(fx.DataDir, "mKahaDB", "txStore"))
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, out, "== txStore (mKahaDB/txStore, txstore)\n"+one+"== scheduler")

	_, stderr, code = runCLI(t, "dump", "--file", "1", fx.DataDir)
	assert.Equal(t, exitError, code)
	assert.Contains(t, stderr, "--file names a data file of one store")
}

// TestLayoutCompactDryRun: compact --dry-run on a broker's data directory
// reports each store under a heading, the txStore and the scheduler
// skipped; --json has one report per store.
func TestLayoutCompactDryRun(t *testing.T) {
	fx := brokertest.LayoutFixtures(t)[0]
	data := brokertest.CopyTree(t, fx.DataDir)
	out, stderr, code := runCLI(t, "compact", "--dry-run", "--no-cache", "--max-file-length", "16384", data)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, out, "== mKahaDB/queue#3a#2f#2fORDERS.#3e (kahadb)\nCOMPACTION (dry run: nothing written) of "+filepath.Join(data, "mKahaDB", "queue#3a#2f#2fORDERS.#3e")+"\n")
	assert.Contains(t, out, "== mKahaDB/txStore (txstore)\nskipped: the transaction store of an mKahaDB is not compacted\n")
	assert.Contains(t, out, "== scheduler (scheduler)\nskipped: a job scheduler store is not compacted (its files stay as they are)\n")
	out, stderr, code = runCLI(t, "compact", "--dry-run", "--json", "--no-cache", "--max-file-length", "16384", data)
	require.Equal(t, exitOK, code, stderr)
	var doc struct {
		Stores []struct {
			Name    string `json:"name"`
			Skipped string `json:"skipped"`
			DryRun  bool   `json:"dryRun"`
		} `json:"stores"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	require.Len(t, doc.Stores, 5)
	assert.True(t, doc.Stores[0].DryRun)
	assert.NotEmpty(t, doc.Stores[4].Skipped)
}

// TestLayoutTreeCLIAgreesWithMount: kahafs ls and cat on a broker's data
// directory list and serve what its mount does: the top (a directory per
// store), a store's top and its data files' directories.
func TestLayoutTreeCLIAgreesWithMount(t *testing.T) {
	requireFUSE(t)
	fx := brokertest.LayoutFixtures(t)[0]
	mfl := itoa(int32(fx.Expected.MaxFileLength))
	var opts fsnode.Options
	opts.MaxFileLength = int64(fx.Expected.MaxFileLength)
	fsys, err := fsnode.Open(fx.DataDir, opts)
	require.NoError(t, err)
	mnt := t.TempDir()
	require.NoError(t, fsys.Mount(mnt))
	defer func() { assert.NoError(t, fsys.Unmount()) }()

	dirs := []string{"", "scheduler", "scheduler/jobs"}
	for _, store := range []string{"queue:%2F%2FORDERS.>", "catch-all", "txStore"} {
		dirs = append(dirs, store, path.Join(store, "by-file"))
		for _, f := range readDirOrder(t, filepath.Join(mnt, store, "by-file")) {
			dirs = append(dirs, path.Join(store, "by-file", f))
		}
	}
	files := cliAgreesWithMount(t, mnt, []string{"--no-cache", "--max-file-length", mfl, fx.DataDir}, dirs)
	assert.Greater(t, files, 50)
}
