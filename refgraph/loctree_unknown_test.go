package refgraph

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/kahaindex"
	"github.com/stretchr/testify/require"
)

// A location index kahafs cannot read from db.data is unknown: the files
// its destination's messages were put in stay kept (index-key), so an
// unread stale branch key never turns into a "free" (kept seed 340, whose
// db-56.log only topic://T.1's branch key 56:9165 keeps).
func TestUnknownLocationIndexKeepsItsFiles(t *testing.T) {
	st, err := codec.OpenStore(seed340)
	require.NoError(t, err)
	load := func(edit func(*kahaindex.Index, error) (*kahaindex.Index, error)) *Graph {
		opts := StoreOptions(st, true, nil)
		real := opts.LoadIndex
		opts.LoadIndex = func(sink kahaindex.Sink) (*kahaindex.Index, error) { return edit(real(sink)) }
		g, err := Load(st, opts, codec.ReadOptions{})
		require.NoError(t, err)
		return g
	}
	const topic, tkey = "topic://T.1", "1:T.1"
	known := load(func(ix *kahaindex.Index, err error) (*kahaindex.Index, error) { return ix, err })
	require.True(t, known.fileByID[56].Pinned, "db-56.log is kept by a branch key")
	requireIndexKey(t, known, 56, topic, "56:9165")

	// T.1's shape not read (the branch walk and the leaves disagreed, or
	// the walk stopped on damage)
	had := false
	shapeless := load(func(ix *kahaindex.Index, err error) (*kahaindex.Index, error) {
		if err == nil {
			_, had = ix.LocationShapes[tkey]
			delete(ix.LocationShapes, tkey)
		}
		return ix, err
	})
	require.True(t, had, "T.1's shape read from db.data")
	d := shapeless.destByK[tkey]
	require.True(t, d.IndexUnknown)
	require.True(t, shapeless.fileByID[56].Pinned)
	requireIndexKey(t, shapeless, 56, topic, "")
	require.Greater(t, len(d.IndexKeys), len(known.destByK[tkey].IndexKeys),
		"every file T.1 had a message put in, not only its branch keys' files")
	notFreer(t, known, shapeless)
	for _, other := range shapeless.destByK {
		if other.Key != tkey {
			require.False(t, other.IndexUnknown, other.Key)
		}
	}

	// db.data damaged there (TestUnknownLocationIndexStopsTheBroker): the
	// leaves still chain, so the index is adopted; the shape is not read
	work := damagedLocationIndex(t)
	dst, err := codec.OpenStore(work)
	require.NoError(t, err)
	dg, err := Load(dst, StoreOptions(dst, true, nil), codec.ReadOptions{})
	require.NoError(t, err)
	require.True(t, dg.destByK[tkey].IndexUnknown)
	requireIndexKey(t, dg, 56, topic, "")
	notFreer(t, known, dg)
	warned := false
	for _, w := range dg.Warnings() {
		warned = warned || strings.Contains(w, "topic://T.1: its location index in db.data could not be walked whole")
	}
	require.True(t, warned, "%q", dg.Warnings())

	// the index not adopted (kahafs could not read it; the broker loads
	// it): every destination that had messages is unknown
	unread := load(func(ix *kahaindex.Index, err error) (*kahaindex.Index, error) {
		return nil, errors.New("test: db.data unreadable")
	})
	unknown := 0
	for _, gd := range unread.destByK {
		if gd.IndexUnknown {
			unknown++
			for _, k := range gd.IndexKeys {
				require.True(t, unread.fileByID[k.File] == nil || unread.fileByID[k.File].Pinned,
					"%s: db-%d.log, which it had messages in, predicted free", gd, k.File)
			}
		}
	}
	require.Positive(t, unknown)
	require.True(t, unread.fileByID[56].Pinned)
}

// seed340 is kept seed 340's store, with its db.data.
var seed340 = filepath.Join(brokertest.RepoRoot(), "internal", "difftest", "testdata", "kept",
	"seed-340-cleanup-stale-location-index-key", "workload", "store")

// damagedLocationIndex is a copy of seed 340's store whose db.data has
// the second child of topic://T.1's location-index root (page 11, at
// offset 12×4096 after the file's 4 KiB header: 3 keys, children 81 70
// 93 110) point past the end of the file.
func damagedLocationIndex(t *testing.T) string {
	t.Helper()
	work := brokertest.CopyStore(t, seed340)
	data, err := os.ReadFile(filepath.Join(work, "db.data"))
	require.NoError(t, err)
	at := 12*4096 + 21 + 2 + 3*12 + 1 + 8 // page header, count, keys, branch flag, first child
	require.Equal(t, uint64(70), binary.BigEndian.Uint64(data[at:]), "T.1's root as the test expects it")
	binary.BigEndian.PutUint64(data[at:], 999999)
	require.NoError(t, os.WriteFile(filepath.Join(work, "db.data"), data, 0o644))
	return work
}

// A real 5.17.2 broker does not start on that db.data: the visit of the
// location indexes in MessageDatabase.recoverIndex stops with a
// java.io.EOFException, which is what kahafs's warning says it may do.
func TestUnknownLocationIndexStopsTheBroker(t *testing.T) {
	brokertest.Require(t)
	work := damagedLocationIndex(t)
	out, err := exec.Command(filepath.Join(brokertest.RepoRoot(), "brokerkit", "run.sh"), "Inspect", work,
		filepath.Join(t.TempDir(), "inspect.json")).CombinedOutput()
	require.Error(t, err, "the broker started on the damaged index:\n%s", out)
	require.Contains(t, string(out), "java.io.EOFException")
	require.Contains(t, string(out), "MessageDatabase.recoverIndex")
}

// damagedOrderIndex is a copy of seed 340's store whose db.data has the
// page at offset 70×4096 (page 69, a leaf of topic://T.1's order index)
// marked free: the order index shows 28 of T.1's 302 messages, the
// location index all of them.
func damagedOrderIndex(t *testing.T) string {
	t.Helper()
	work := brokertest.CopyStore(t, seed340)
	data, err := os.ReadFile(filepath.Join(work, "db.data"))
	require.NoError(t, err)
	require.Equal(t, byte(2), data[70*4096], "page 69 as the test expects it")
	data[70*4096] = 0 // PAGE_FREE_TYPE
	require.NoError(t, os.WriteFile(filepath.Join(work, "db.data"), data, 0o644))
	return work
}

// Where the order index lost messages that the location index still has,
// the broker's cleanup keeps their files: checkpointUpdate keeps the files
// of the location index's keys. kahafs, which read the messages from the
// order index, called db-92.log and db-139.log free (T.1's messages
// there); a real 5.17.2 broker deletes only db-30.log. The destination's
// location index is now unknown where the reader has a note about it.
func TestDamagedOrderIndexKeepsLocationFiles(t *testing.T) {
	work := damagedOrderIndex(t)
	st, err := codec.OpenStore(work)
	require.NoError(t, err)
	g, err := Load(st, StoreOptions(st, true, nil), codec.ReadOptions{})
	require.NoError(t, err)
	d := g.destByK["1:T.1"]
	require.Len(t, d.Messages, 28, "the order index as damaged")
	require.True(t, d.IndexUnknown)
	for _, id := range []int32{92, 139} {
		require.True(t, g.fileByID[id].Pinned, "db-%d.log", id)
		requireIndexKey(t, g, id, "topic://T.1", "")
	}
	var free []int32
	for _, f := range g.Files() {
		if !f.Pinned {
			free = append(free, f.ID)
		}
	}
	require.Empty(t, free, "an index with damage predicts no deletion")
	require.Equal(t, KindIndexDamaged, g.fileByID[30].Reasons[0].Kind)

	brokertest.Require(t)
	out := filepath.Join(t.TempDir(), "inspect.json")
	// without the TRACE lines: 5.17.2's TRACE line for c11:s11 (no ack
	// positions) throws in checkpointUpdate
	msg, err := exec.Command(filepath.Join(brokertest.RepoRoot(), "brokerkit", "run.sh"), "Inspect", work, out, "--no-gc-trace").CombinedOutput()
	require.NoError(t, err, "%s", msg)
	raw, err := os.ReadFile(out)
	require.NoError(t, err)
	var in brokertest.Inspection
	require.NoError(t, json.Unmarshal(raw, &in))
	// the broker deletes db-30.log only: kahafs never predicts more
	require.Equal(t, []int32{30}, in.Deleted, "what the broker deleted")
	require.Subset(t, in.Deleted, free)
}

// requireIndexKey: file id of g is kept by dest's index key at loc ("":
// an unknown index's, without a location).
func requireIndexKey(t *testing.T, g *Graph, id int32, dest, loc string) {
	t.Helper()
	for _, r := range g.fileByID[id].Reasons {
		if r.Kind == KindIndexKey && r.Destination == dest && r.Location == loc {
			return
		}
	}
	t.Fatalf("db-%d.log: no index-key reason of %s at %q in %+v", id, dest, loc, g.fileByID[id].Reasons)
}

// notFreer: every file b predicts free, a does too.
func notFreer(t *testing.T, a, b *Graph) {
	t.Helper()
	var freeA, freeB []int32
	for _, f := range a.Files() {
		if !f.Pinned {
			freeA = append(freeA, f.ID)
		}
	}
	for _, f := range b.Files() {
		if !f.Pinned {
			freeB = append(freeB, f.ID)
			require.True(t, slices.Contains(freeA, f.ID), "db-%d.log free only when the index is not known", f.ID)
		}
	}
	require.Less(t, len(freeB), len(freeA)+1)
}

// Seed 340's db.data with one page marked free (its type byte PAGE_FREE),
// the page at offset OFF×4096: what a real 5.17.2 broker deleted at its
// stop on each (brokerkit Inspect --no-gc-trace, 2026-12-04), and the
// files kahafs called free before it took a damaged or disagreeing index
// for one that cannot tell: order-index, destination and subscription
// pages whose loss the reader reads past. kahafs must never call free a
// file the broker kept.
func TestFreeMarkedIndexPageFreesNoMore(t *testing.T) {
	brokerDeleted := map[int][]int32{
		3:  {30}, // kahafs had 30 100 111 112 123 136 147 165
		9:  {30}, // 30 49 59 80 83 84 85 92 139
		19: {30}, // 30 66 71 78 106 132 133 134
		21: {30}, // 30 31 36 46
		38: {30}, // 30 41
		70: {30}, // 30 92 139 (TestDamagedOrderIndexKeepsLocationFiles)
	}
	for off, deleted := range brokerDeleted {
		work := brokertest.CopyStore(t, seed340)
		data, err := os.ReadFile(filepath.Join(work, "db.data"))
		require.NoError(t, err)
		data[off*4096] = 0
		require.NoError(t, os.WriteFile(filepath.Join(work, "db.data"), data, 0o644))
		st, err := codec.OpenStore(work)
		require.NoError(t, err)
		g, err := Load(st, StoreOptions(st, true, nil), codec.ReadOptions{})
		require.NoError(t, err)
		for _, f := range g.Files() {
			if !f.Pinned {
				require.Contains(t, deleted, f.ID, "page at %d×4096: db-%d.log called free, the broker kept it", off, f.ID)
			}
		}
	}
}
