package refgraph

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/kahaindex"
	"github.com/stretchr/testify/require"
)

// A location index kahafs cannot read from db.data is unknown, and the
// index is then damaged: no file is predicted free, so an unread stale
// branch key never turns into a "free" (kept seed 340, whose db-56.log
// only topic://T.1's branch key 56:9165 keeps).
func TestUnknownLocationIndexIsDamage(t *testing.T) {
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
	for _, f := range known.Files() {
		for _, r := range f.Reasons {
			require.NotEqual(t, KindIndexDamaged, r.Kind, "a sound index: %s", r.Text)
		}
	}
	require.NotEmpty(t, free(known), "the sound index predicts deletions")

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
	require.Empty(t, shapeless.destByK[tkey].IndexKeys, "an unknown tree names no key")
	require.NotEmpty(t, known.destByK[tkey].IndexKeys)
	requireDamaged(t, shapeless, `destination "1:T.1": its location index could not be walked whole`)

	// db.data damaged there (TestUnknownLocationIndexStopsTheBroker): the
	// leaves still chain, so the index is adopted; the shape is not read
	work := damagedLocationIndex(t)
	dst, err := codec.OpenStore(work)
	require.NoError(t, err)
	dg, err := Load(dst, StoreOptions(dst, true, nil), codec.ReadOptions{})
	require.NoError(t, err)
	require.Empty(t, dg.destByK[tkey].IndexKeys)
	requireDamaged(t, dg, `destination "1:T.1": its location index could not be walked whole`)

	// the index not adopted (kahafs could not read it; the broker loads it)
	unread := load(func(ix *kahaindex.Index, err error) (*kahaindex.Index, error) {
		return nil, errors.New("test: db.data unreadable")
	})
	for _, gd := range unread.destByK {
		require.Empty(t, gd.IndexKeys, "%s: keys of an index not read", gd)
	}
	requireDamaged(t, unread, "test: db.data unreadable")
}

// requireDamaged: g's index is damaged for why: every file is kept by
// KindIndexDamaged, whose text names why, and a warning says so too.
func requireDamaged(t *testing.T, g *Graph, why string) {
	t.Helper()
	require.NotEmpty(t, g.Files())
	for _, f := range g.Files() {
		require.True(t, f.Pinned, "db-%d.log predicted free on a damaged index", f.ID)
		found := false
		for _, r := range f.Reasons {
			found = found || r.Kind == KindIndexDamaged && strings.Contains(r.Text, why)
		}
		require.True(t, found, "db-%d.log: no index-damaged reason naming %q in %+v", f.ID, why, f.Reasons)
	}
	warned := false
	for _, w := range g.Warnings() {
		warned = warned || strings.Contains(w, why)
	}
	require.True(t, warned, "%q", g.Warnings())
}

// free: the files g predicts free.
func free(g *Graph) []int32 {
	var out []int32
	for _, f := range g.Files() {
		if !f.Pinned {
			out = append(out, f.ID)
		}
	}
	return out
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
	in, out := inspectNoTrace(t, work)
	require.Nil(t, in, "the broker started on the damaged index:\n%s", out)
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
// index, whose order index disagrees with its location index, is damaged.
func TestDamagedOrderIndexKeepsLocationFiles(t *testing.T) {
	work := damagedOrderIndex(t)
	st, err := codec.OpenStore(work)
	require.NoError(t, err)
	g, err := Load(st, StoreOptions(st, true, nil), codec.ReadOptions{})
	require.NoError(t, err)
	d := g.destByK["1:T.1"]
	require.Len(t, d.Messages, 28, "the order index as damaged")
	requireDamaged(t, g, "")
	for _, id := range []int32{92, 139} {
		require.True(t, g.fileByID[id].Pinned, "db-%d.log", id)
	}
	require.Equal(t, KindIndexDamaged, g.fileByID[30].Reasons[0].Kind)

	brokertest.Require(t)
	in, out := inspectNoTrace(t, work)
	require.NotNil(t, in, "the broker did not start:\n%s", out)
	// the broker deletes db-30.log only: kahafs never predicts more
	require.Equal(t, []int32{30}, in.Deleted, "what the broker deleted")
	require.Subset(t, in.Deleted, free(g))
}

// requireIndexKey: file id of g is kept by dest's index key at loc.
func requireIndexKey(t *testing.T, g *Graph, id int32, dest, loc string) {
	t.Helper()
	for _, r := range g.fileByID[id].Reasons {
		if r.Kind == KindIndexKey && r.Destination == dest && r.Location == loc {
			return
		}
	}
	t.Fatalf("db-%d.log: no index-key reason of %s at %q in %+v", id, dest, loc, g.fileByID[id].Reasons)
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
