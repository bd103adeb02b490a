package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/holders"
	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/internal/faults"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type holdersOut struct {
	Files []struct {
		ID       int32            `json:"id"`
		Name     string           `json:"name"`
		Pinned   bool             `json:"pinned"`
		Bytes    int64            `json:"bytes"`
		Alloc    int64            `json:"allocated"`
		Commands int              `json:"commands"`
		Reasons  []map[string]any `json:"reasons"`
		Notes    []map[string]any `json:"notes"`
	} `json:"files"`
	GCCandidates []int32 `json:"gcCandidates"`
	Totals       struct {
		All, Pinned, Free struct {
			Files     int   `json:"files"`
			Bytes     int64 `json:"bytes"`
			Allocated int64 `json:"allocated"`
		}
		NextCleanupFrees int64 `json:"nextCleanupFrees"`
	} `json:"totals"`
}

// TestHoldersJSONMatchesBroker: on every real-broker fixture the files the
// JSON says are free are the files the broker deleted at its first cleanup.
func TestHoldersJSONMatchesBroker(t *testing.T) {
	for _, fx := range brokertest.Fixtures(t) {
		t.Run(fx.Name, func(t *testing.T) {
			require.NotNil(t, fx.Expected.Inspect)
			out, stderr, code := runCLI(t, "holders", "--json", "--max-file-length",
				strconv.Itoa(fx.Expected.MaxFileLength), fx.StoreDir)
			require.Equal(t, exitOK, code, stderr)
			var doc holdersOut
			require.NoError(t, json.Unmarshal([]byte(out), &doc))
			want := fx.Expected.Inspect.Deleted
			if want == nil {
				want = []int32{}
			}
			assert.Equal(t, want, doc.GCCandidates)

			st, err := codec.OpenStore(fx.StoreDir)
			require.NoError(t, err)
			require.Len(t, doc.Files, len(st.Files))
			free := map[int32]bool{}
			for _, id := range doc.GCCandidates {
				free[id] = true
			}
			var freeBytes, freeAlloc, allBytes int64
			for i, f := range doc.Files {
				fi, err := os.Stat(st.Files[i].Path)
				require.NoError(t, err)
				assert.Equal(t, fi.Size(), f.Bytes, "%s: bytes is the file's length", f.Name)
				assert.Equal(t, fi.Sys().(*syscall.Stat_t).Blocks*512, f.Alloc, "%s: allocated is its disk space", f.Name)
				allBytes += f.Bytes
				if free[f.ID] {
					freeBytes += f.Bytes
					freeAlloc += f.Alloc
				}
			}
			assert.Equal(t, len(doc.Files), doc.Totals.All.Files)
			assert.Equal(t, allBytes, doc.Totals.All.Bytes)
			assert.Equal(t, len(doc.GCCandidates), doc.Totals.Free.Files)
			assert.Equal(t, freeBytes, doc.Totals.Free.Bytes)
			assert.Equal(t, allBytes-freeBytes, doc.Totals.Pinned.Bytes)
			assert.Equal(t, freeAlloc, doc.Totals.NextCleanupFrees)
			for i, f := range doc.Files {
				assert.Equal(t, st.Files[i].ID, f.ID)
				assert.Equal(t, codec.DataFileName(f.ID), f.Name)
				assert.Equal(t, !free[f.ID], f.Pinned, f.Name)
				assert.Positive(t, f.Commands, f.Name)
				require.NotNil(t, f.Reasons, "%s: reasons is an array, never null", f.Name)
				if f.Pinned {
					assert.NotEmpty(t, f.Reasons, f.Name)
				} else {
					assert.Empty(t, f.Reasons, f.Name)
				}
				for _, r := range f.Reasons {
					assert.NotEmpty(t, r["kind"], f.Name)
					assert.NotEmpty(t, r["text"], f.Name)
				}
			}
		})
	}
}

func TestHoldersText(t *testing.T) {
	fx := brokertest.Named(t, "topics")
	out, stderr, code := runCLI(t, "holders", "--max-file-length", strconv.Itoa(fx.Expected.MaxFileLength), fx.StoreDir)
	require.Equal(t, exitOK, code, stderr)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	st, err := codec.OpenStore(fx.StoreDir)
	require.NoError(t, err)
	require.Len(t, lines, 1+len(st.Files)+4, "the length used, one line per data file, the totals")
	assert.Equal(t, "journalMaxFileLength 16384: given (--max-file-length)", lines[0])
	totals := lines[1+len(st.Files):]
	lines = lines[1 : 1+len(st.Files)]
	deleted := map[string]bool{}
	for _, id := range fx.Expected.Inspect.Deleted {
		deleted[codec.DataFileName(id)] = true
	}
	for i, l := range lines {
		name := st.Files[i].Name
		require.True(t, strings.HasPrefix(l, name+" "), l)
		rest := strings.TrimSpace(strings.TrimPrefix(l, name))
		size := holders.SizeText(st.Files[i].Size)
		require.True(t, strings.HasPrefix(rest, size+" "), "%s: its size first: %s", l, size)
		rest = strings.TrimPrefix(rest, size+" ")
		if deleted[name] {
			assert.True(t, strings.HasPrefix(rest, "free: the broker deletes it at its next cleanup"), l)
		} else {
			assert.True(t, strings.HasPrefix(rest, "pinned: "), l)
		}
	}
	var all, free int64
	nfree := 0
	for _, f := range st.Files {
		all += f.Size
		if deleted[f.Name] {
			free += f.Size
			nfree++
		}
	}
	assert.True(t, strings.HasPrefix(totals[0], fmt.Sprintf("total: %d file(s), %d bytes", len(st.Files), all)), totals[0])
	assert.True(t, strings.HasPrefix(totals[1], fmt.Sprintf("pinned: %d file(s), %d bytes", len(st.Files)-nfree, all-free)), totals[1])
	assert.True(t, strings.HasPrefix(totals[2], fmt.Sprintf("free: %d file(s), %d bytes", nfree, free)), totals[2])
	assert.True(t, strings.HasPrefix(totals[3], "the next cleanup frees "), totals[3])
	// the concrete holders are named
	assert.Contains(t, out, "durable subscription c-late:s-late on topic://T.NEWS")
	assert.Contains(t, out, "pending messages of topic://T.NEWS")
	assert.Contains(t, out, "appends a copy of the command")
}

func TestHoldersDamageAndErrors(t *testing.T) {
	fx := brokertest.Named(t, "queues")
	dir := brokertest.CopyStore(t, fx.StoreDir)
	// garbage in the middle of a data file that is not the last one
	require.NoError(t, faults.EditFile(filepath.Join(dir, "db-3.log"), func(b []byte) []byte {
		return faults.Zero(b, 2000, 1500)
	}))
	out, stderr, code := runCLI(t, "holders", "--json", "--max-file-length", strconv.Itoa(fx.Expected.MaxFileLength), dir)
	assert.Equal(t, exitDamaged, code, stderr)
	assert.Contains(t, stderr, "damage")
	var doc holdersOut
	require.NoError(t, json.Unmarshal([]byte(out), &doc), "the report is still printed")
	assert.NotEmpty(t, doc.Files)

	_, _, code = runCLI(t, "holders", t.TempDir())
	assert.Equal(t, exitError, code, "not a store")
	_, _, code = runCLI(t, "holders")
	assert.Equal(t, exitError, code, "no argument")
}

// TestHoldersIndexOptions: without the index the replay is a full one;
// an unreadable index is reported and ignored, as the broker does.
func TestHoldersIndexOptions(t *testing.T) {
	fx := brokertest.Named(t, "crash")
	n := strconv.Itoa(fx.Expected.MaxFileLength)
	_, stderr, code := runCLI(t, "holders", "--no-index", "--max-file-length", n, fx.StoreDir)
	require.Equal(t, exitOK, code, stderr)

	dir := brokertest.CopyStore(t, fx.StoreDir)
	require.NoError(t, faults.EditFile(filepath.Join(dir, "db.data"), func(b []byte) []byte {
		return faults.Put(b, 4096, 7) // page 0 with an invalid page type
	}))
	require.NoError(t, os.Remove(filepath.Join(dir, "db.redo")))
	out, stderr, code := runCLI(t, "holders", "--json", "--max-file-length", n, dir)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stderr, "index")
	var doc holdersOut
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	assert.NotEmpty(t, doc.Files)
}

// TestTraceFlag: the hidden --trace writes an execution trace of the run
// with the adoption of the index marked (a region go tool trace lists),
// and without the mark when the index is not adopted.
func TestTraceFlag(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "stores", "ackcompact", "store")
	for _, c := range []struct {
		flags   []string
		adopted bool
	}{{nil, true}, {[]string{"--no-index"}, false}} {
		out := filepath.Join(t.TempDir(), "run.trace")
		args := append([]string{"holders", "--json", "--no-cache", "--trace", out}, c.flags...)
		_, stderr, code := runCLI(t, append(args, dir)...)
		require.Equal(t, exitOK, code, stderr)
		data, err := os.ReadFile(out)
		require.NoError(t, err)
		require.True(t, bytes.HasPrefix(data, []byte("go 1.")), "not a Go execution trace: %.20q", data)
		assert.Equal(t, c.adopted, bytes.Contains(data, []byte("refgraph: adopt the index")), "flags %v", c.flags)
	}
}
