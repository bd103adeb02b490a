package refgraph

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/stretchr/testify/require"
)

// TestDamageGrid damages seed 340's db.data one page at a time, in two
// ways: the page's type byte set to free (A), 16 bytes of its body
// garbled (B). A real 5.17.2 broker is started on each copy, and kahafs
// must never call free a file the broker keeps: its free set lies within
// what the broker deleted (nothing, when it does not start). The grid
// found a wrong "free" on 6 pages of A (an order index the reader read
// past), on 3 of B (location keys in files not in the store) and on
// page 1 of A (the destinations root marked free); each is a test of its
// own too. CI runs every eighth page and those; KAHAFS_DAMAGE_GRID=full
// runs every page (about 230 broker runs).
func TestDamageGrid(t *testing.T) {
	brokertest.Require(t)
	orig, err := os.ReadFile(filepath.Join(seed340, "db.data"))
	require.NoError(t, err)
	pages := len(orig)/4096 - 1 // after the file's header
	found := map[string][]int{"A": {1, 2, 8, 18, 20, 37, 69}, "B": {71, 101, 106}}
	full := os.Getenv("KAHAFS_DAMAGE_GRID") == "full"
	for _, grid := range []string{"A", "B"} {
		for p := 0; p < pages; p++ {
			if !full && p%8 != 0 && !slices.Contains(found[grid], p) {
				continue
			}
			at := (p + 1) * 4096
			data := slices.Clone(orig)
			switch grid {
			case "A":
				if data[at] == 0 {
					continue // free already
				}
				data[at] = 0 // PAGE_FREE_TYPE
			case "B":
				r := rand.New(rand.NewPCG(uint64(p), 340))
				from := at + 21 + r.IntN(4096-21-16)
				for i := range 16 {
					data[from+i] = byte(r.Uint32())
				}
			}
			t.Run(fmt.Sprintf("%s-page-%d", grid, p), func(t *testing.T) {
				work := brokertest.CopyStore(t, seed340)
				require.NoError(t, os.WriteFile(filepath.Join(work, "db.data"), data, 0o644))
				requireFreeWithinDeleted(t, work)
			})
		}
	}
}

// kahafsFree is what kahafs predicts free in the store at work (nothing
// when it cannot read it).
func kahafsFree(t *testing.T, work string) []int32 {
	t.Helper()
	st, err := codec.OpenStore(work)
	require.NoError(t, err)
	g, err := Load(st, StoreOptions(st, true, nil), codec.ReadOptions{})
	if err != nil {
		return nil // an error predicts nothing
	}
	return free(g)
}

// requireDamagedStore: kahafs reads the store at work with its index as
// damaged, why among the reasons, and predicts nothing free.
func requireDamagedStore(t *testing.T, work, why string) {
	t.Helper()
	st, err := codec.OpenStore(work)
	require.NoError(t, err)
	g, err := Load(st, StoreOptions(st, true, nil), codec.ReadOptions{})
	require.NoError(t, err)
	require.Empty(t, free(g))
	requireDamaged(t, g, why)
}

// requireFreeWithinDeleted: what kahafs predicts free in the store at
// work lies within what a real broker started on it deleted.
func requireFreeWithinDeleted(t *testing.T, work string) {
	t.Helper()
	free := kahafsFree(t, work)
	deleted, started := brokerDeleted(t, work)
	t.Logf("kahafs free %v, broker deleted %v (started %v)", free, deleted, started)
	for _, id := range free {
		require.Contains(t, deleted, id, "db-%d.log called free; the broker kept it (started %v, deleted %v)", id, started, deleted)
	}
}

// brokerDeleted starts a real broker on a copy of work (inspectNoTrace)
// and returns the files its cleanup deleted; started is false when it did
// not start (it deleted nothing).
func brokerDeleted(t *testing.T, work string) (deleted []int32, started bool) {
	t.Helper()
	in, out := inspectNoTrace(t, brokertest.CopyStore(t, work))
	if in == nil {
		t.Logf("the broker did not start:\n%.400s", out)
		return nil, false
	}
	return in.Deleted, true
}

// TestRedoDamage damages seed 340's db.redo, one change a case, and starts
// a real 5.17.2 broker on each copy: kahafs's free set must lie within
// what the broker deleted. The store stopped uncleanly, so the broker
// applies db.redo's one batch (page 0, the same bytes as db.data's) when
// it can; some damage makes it discard the index and rebuild from the
// journal instead (both sides then free the same 20 files). These cases
// are a subset of a grid of 146 (redoGrid: 16 bytes garbled, truncations,
// bit flips, the file removed or replaced) whose one wrong free is
// TestRedoOverDestinationsRootIsDamage; the grid's cases where the broker
// never finishes starting take inspectTimeout each and are left out.
// KAHAFS_DAMAGE_GRID=full runs the whole grid instead (about 15 minutes,
// 10 of them the five cases the broker never finishes).
func TestRedoDamage(t *testing.T) {
	brokertest.Require(t)
	orig, err := os.ReadFile(filepath.Join(seed340, "db.redo"))
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(seed340, "db.data"))
	require.NoError(t, err)
	garble := func(at int) []byte {
		b := slices.Clone(orig)
		r := rand.New(rand.NewPCG(uint64(at), 340))
		for i := range 16 {
			b[at+i] = byte(r.Uint32())
		}
		return b
	}
	flip := func(at int, bit uint) []byte {
		b := slices.Clone(orig)
		b[at] ^= 1 << bit
		return b
	}
	cases := []fileDamage{
		{"garbled-header", garble(12)},
		{"garbled-page-id", garble(4088)}, // a negative page id: rebuilt
		{"garbled-page", garble(4300)},
		{"cut-to-0", orig[:0]}, // after an unclean shutdown: rebuilt
		{"cut-to-19", orig[:19]},
		{"cut-to-20", orig[:20]},
		{"cut-in-the-batch", orig[:4100]},
		{"cut-by-1", orig[:len(orig)-1]},
		{"page-id-16", flip(4103, 4)},    // rebuilt
		{"page-id-32", flip(4103, 5)},    // the broker deletes more than kahafs predicts
		{"page-id-2^32", flip(4099, 0)},  // rebuilt
		{"page-body-bit", flip(4200, 3)}, // the checksum fails: not applied
		{"removed", nil},                 // rebuilt
		{"db.data's head", data[:19]},    // rebuilt
		{"db.data's first page", data[:4096]},
	}
	if os.Getenv("KAHAFS_DAMAGE_GRID") == "full" {
		cases = redoGrid(orig, data)
	}
	runFileDamage(t, seed340, "db.redo", cases)
}

// runFileDamage runs each case in a copy of store, its file name replaced
// by the case's data, and requires kahafs's free set within the broker's
// deletions.
func runFileDamage(t *testing.T, store, name string, cases []fileDamage) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			work := brokertest.CopyStore(t, store)
			path := filepath.Join(work, name)
			if c.data == nil {
				require.NoError(t, os.Remove(path))
			} else {
				require.NoError(t, os.WriteFile(path, c.data, 0o644))
			}
			requireFreeWithinDeleted(t, work)
		})
	}
}

// fileDamage is a case of a damage grid: what it puts in place of one of
// the index's files.
type fileDamage struct {
	name string
	data []byte // nil: the file removed
}

// redoGrid is TestRedoDamage's whole grid of damage to seed 340's db.redo
// (orig; data is its db.data), one change a case:
//   - R0: unchanged;
//   - R1: 16 bytes garbled, in the header, the batch's page id and page,
//     and the stale records after it (49 places);
//   - R2: cut to 20 lengths, 0 to one byte short;
//   - R3: one bit flipped: the header's fields, every bit of the page id's
//     low byte, its higher bytes, the page's bytes, the stale records
//     (66 flips);
//   - R4: removed, or replaced by db.data's first 19, 20, 4096, 8200 or
//     233920 bytes or all of it.
func redoGrid(orig, data []byte) []fileDamage {
	n := len(orig)
	cs := []fileDamage{{"R0-unchanged", slices.Clone(orig)}}
	garbleAt := []int{0, 4, 8, 12, 16, 20, 500, 2048, 3000, 4080, // the header
		4088, 4092, 4096, 4100, 4104, 4110, // the batch's page id, its page's head
		4300, 4800, 5500, 6200, 7000, 7600, 8100, 8184, // the page, its end
	}
	for i := 1; i < 56; i += 4 { // stale records: ids and bodies
		rec := 4096 + i*4104
		garbleAt = append(garbleAt, rec-4, rec+8+i*97%4000)
	}
	garbleAt = append(garbleAt, n-16)
	for i, at := range garbleAt {
		b := slices.Clone(orig)
		r := rand.New(rand.NewPCG(uint64(i), 0x4ed0))
		for k := range 16 {
			b[at+k] = byte(r.Uint32())
		}
		cs = append(cs, fileDamage{fmt.Sprintf("R1-garble-%d", at), b})
	}
	for _, l := range []int{0, 1, 19, 20, 21, 100, 4095, 4096, 4100, 4103, 4104, 4105, 8199, 8200, 8201,
		12304, 50000, 116960, 200000, n - 1} {
		cs = append(cs, fileDamage{fmt.Sprintf("R2-cut-to-%d", l), slices.Clone(orig[:l])})
	}
	type bitAt struct{ at, bit int }
	var flips []bitAt
	for i := range 20 { // the header's fields, a byte each
		flips = append(flips, bitAt{i, i % 8})
	}
	flips = append(flips, bitAt{20, 0}, bitAt{1000, 3}, bitAt{2047, 7}, bitAt{4095, 0}) // the header's zeros
	for bit := range 8 {                                                                // the page id's low byte
		flips = append(flips, bitAt{4103, bit})
	}
	flips = append(flips, bitAt{4102, 0}, bitAt{4102, 1}, bitAt{4102, 7}, bitAt{4101, 0}, bitAt{4100, 0},
		bitAt{4099, 0}, bitAt{4098, 7}, bitAt{4096, 7}) // its higher bytes: past the file, huge, negative
	flips = append(flips, bitAt{4104, 0}, bitAt{4104, 1}, bitAt{4110, 2}, bitAt{4125, 4}, bitAt{4200, 5},
		bitAt{5000, 6}, bitAt{7000, 1}, bitAt{8199, 0}) // the page's bytes
	for i := 1; i < 56; i += 7 { // stale records
		rec := 4096 + i*4104
		flips = append(flips, bitAt{rec + 7, i % 8}, bitAt{rec + 8 + i*131%4096, (i + 3) % 8})
	}
	flips = append(flips, bitAt{n - 1, 0})
	for _, f := range flips {
		b := slices.Clone(orig)
		b[f.at] ^= 1 << f.bit
		cs = append(cs, fileDamage{fmt.Sprintf("R3-flip-%d.%d", f.at, f.bit), b})
	}
	cs = append(cs, fileDamage{"R4-removed", nil})
	for _, l := range []int{19, 20, 4096, 8200, 233920, len(data)} {
		cs = append(cs, fileDamage{fmt.Sprintf("R4-db.data-head-%d", l), slices.Clone(data[:l])})
	}
	return cs
}

// TestRedoOverDestinationsRootIsDamage: seed 340's db.redo with one bit
// flipped, at byte 4103 (its batch's page id 0 made 1). After the unclean
// shutdown the broker applies the batch: page 0's bytes over page 1, the
// destinations B-tree's root, which then reads as an empty leaf linking to
// itself. A real 5.17.2 broker loops in BTreeIterator.findNextPage while
// it loads the index and never starts (18 minutes at full CPU; the db.redo
// grid, three runs): it deletes nothing. kahafs took the cycle for damage
// the broker rebuilds from (a load that throws) and called 20 files free;
// now the index is damaged and nothing is.
func TestRedoOverDestinationsRootIsDamage(t *testing.T) {
	work := brokertest.CopyStore(t, seed340)
	redo := filepath.Join(work, "db.redo")
	b, err := os.ReadFile(redo)
	require.NoError(t, err)
	require.Zero(t, b[4103], "the batch's page id (low byte)")
	b[4103] = 1
	require.NoError(t, os.WriteFile(redo, b, 0o644))
	requireDamagedStore(t, work, "never finishes loading")
}

// TestFreeRootIsDamage: a tree whose root page is marked free is taken by
// the broker for a new, empty one, so what it held is gone from the
// broker's view: seed 340's destinations root (page 1) marked free, a
// real 5.17.2 broker either deleted 127 of the journal's files (every
// destination gone) or failed to start (ClassCastException in
// MessageOrderIndex.addLast), 6 runs of 12 each. kahafs had called the 127
// files free, though a rebuilt index would find their messages again. Now
// it is damage: nothing is free. (Restored: e538c7a dropped it by mistake.)
func TestFreeRootIsDamage(t *testing.T) {
	work := brokertest.CopyStore(t, seed340)
	path := filepath.Join(work, "db.data")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, byte(2), data[2*4096], "page 1 as the test expects it")
	data[2*4096] = 0 // PAGE_FREE_TYPE
	require.NoError(t, os.WriteFile(path, data, 0o644))
	st, err := codec.OpenStore(work)
	require.NoError(t, err)
	g, err := Load(st, StoreOptions(st, true, nil), codec.ReadOptions{})
	require.NoError(t, err)
	requireDamaged(t, g, "destinations B-tree: its root page 1 is marked free")
	require.True(t, g.Damaged())
}

// freeListStores are the stores TestFreeListDamage damages, kept by the
// differential test, each stopped cleanly by a 5.17.2 broker with free
// pages, so that its db.free is read at start: seed 190 (nothing free;
// free pages 74 and 81) and seed 496 (db-28.log and db-187.log free; free
// pages 24, 25 and 50).
var freeListStores = []struct {
	name, dir string
	free      [][2]int64
}{
	{"seed-190", filepath.Join(brokertest.RepoRoot(), "internal", "difftest", "testdata", "kept",
		"seed-190-prioritized-drift-swap", "workload", "store"), [][2]int64{{74, 74}, {81, 81}}},
	{"seed-496", filepath.Join(brokertest.RepoRoot(), "internal", "difftest", "testdata", "kept",
		"seed-496-xa-commit-only-in-ack-compacted-file", "workload", "store"), [][2]int64{{24, 25}, {50, 50}}},
}

// TestFreeListDamage damages the db.free of freeListStores, one change a
// case, and starts a real 5.17.2 broker on each copy: kahafs's free set
// must lie within what the broker deleted. KAHAFS_DAMAGE_GRID=full runs
// the whole grid (freeListGrid); CI runs the cases freeListCI names.
func TestFreeListDamage(t *testing.T) {
	brokertest.Require(t)
	full := os.Getenv("KAHAFS_DAMAGE_GRID") == "full"
	ci := map[string]bool{}
	for _, name := range strings.Fields(freeListCI) {
		ci[name] = true
	}
	for _, st := range freeListStores {
		t.Run(st.name, func(t *testing.T) {
			orig, err := os.ReadFile(filepath.Join(st.dir, "db.free"))
			require.NoError(t, err)
			require.Equal(t, sequenceSet(st.free...), orig, "the free list as the test expects it")
			info, err := os.Stat(filepath.Join(st.dir, "db.data"))
			require.NoError(t, err)
			cases := freeListGrid(orig, (info.Size()-4096)/4096, st.free)
			if !full {
				cases = slices.DeleteFunc(cases, func(c fileDamage) bool { return !ci[st.name+"/"+c.name] })
				named := 0
				for name := range ci {
					if strings.HasPrefix(name, st.name+"/") {
						named++
					}
				}
				require.Len(t, cases, named, "freeListCI names cases of freeListGrid")
			}
			runFileDamage(t, st.dir, "db.free", cases)
		})
	}
}

// freeListCI: the cases of freeListGrid CI runs, STORE/CASE, about 15 s.
// In the whole grid (740 cases) kahafs's free set was always within the
// broker's deletions. Seed 190's broker replays a journal tail at start
// and so writes the list's first pages: on 122 cases it did not start,
// and kahafs reports each as damage (freeListClash; it did not before).
// Seed 496's writes nothing at start: it started on every case, and on
// 224 kahafs, reporting damage, predicts nothing where the broker deleted
// [28 187].
const freeListCI = `
	seed-190/F0-unchanged seed-190/F7-past-the-file
	seed-190/F1-removed seed-496/F1-removed seed-496/F2-cut-to-13
	seed-190/F6-page-8-free seed-190/F3-flip-12.1 seed-190/F3-flip-8.0
	seed-496/F0-unchanged seed-496/F3-flip-0.7
	seed-496/F6-page-1-free seed-496/F7-huge`

// sequenceSet is a SequenceSet as the broker writes it (SequenceSet.Marshaller):
// the count of ranges, then each as a flag (first != last), first, [last].
func sequenceSet(ranges ...[2]int64) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(ranges)))
	for _, r := range ranges {
		if r[0] == r[1] {
			b = append(b, 0)
			b = binary.BigEndian.AppendUint64(b, uint64(r[0]))
			continue
		}
		b = append(b, 1)
		b = binary.BigEndian.AppendUint64(b, uint64(r[0]))
		b = binary.BigEndian.AppendUint64(b, uint64(r[1]))
	}
	return b
}

// freeListGrid is TestFreeListDamage's grid of damage to a db.free (orig)
// of a db.data of pages pages, one change a case:
//   - F0: unchanged; F1: removed;
//   - F2: cut to every length from 0 to one byte short;
//   - F3: one bit flipped, every bit of the file;
//   - F4: one byte made 0xff, every byte;
//   - F5: bytes appended (garbage, another range);
//   - F6: the true free pages (free) and one page in use, every page;
//   - F7: ranges past the file, negative, huge, the whole file.
func freeListGrid(orig []byte, pages int64, free [][2]int64) []fileDamage {
	cs := []fileDamage{{"F0-unchanged", slices.Clone(orig)}, {"F1-removed", nil}}
	for l := range len(orig) {
		cs = append(cs, fileDamage{fmt.Sprintf("F2-cut-to-%d", l), slices.Clone(orig[:l])})
	}
	for at := range orig {
		for bit := range 8 {
			b := slices.Clone(orig)
			b[at] ^= 1 << bit
			cs = append(cs, fileDamage{fmt.Sprintf("F3-flip-%d.%d", at, bit), b})
		}
	}
	for at := range orig {
		b := slices.Clone(orig)
		b[at] = 0xff
		cs = append(cs, fileDamage{fmt.Sprintf("F4-ff-at-%d", at), b})
	}
	cs = append(cs,
		fileDamage{"F5-garbage-appended", append(slices.Clone(orig), 0x5a, 0xa5, 1, 2, 3, 4, 5, 6, 7)},
		fileDamage{"F5-range-appended", append(slices.Clone(orig), sequenceSet([2]int64{2, 9})[4:]...)})
	for p := range pages {
		if slices.ContainsFunc(free, func(r [2]int64) bool { return r[0] <= p && p <= r[1] }) {
			continue
		}
		ranges := append([][2]int64{{p, p}}, free...)
		slices.SortFunc(ranges, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
		cs = append(cs, fileDamage{fmt.Sprintf("F6-page-%d-free", p), sequenceSet(ranges...)})
	}
	cs = append(cs,
		fileDamage{"F7-past-the-file", sequenceSet([2]int64{pages, pages + 100})},
		fileDamage{"F7-negative", sequenceSet([2]int64{-5, -1})},
		fileDamage{"F7-huge", sequenceSet([2]int64{1 << 40, 1<<40 + 3})},
		fileDamage{"F7-every-page", sequenceSet([2]int64{0, pages - 1})},
		fileDamage{"F7-every-page-but-0", sequenceSet([2]int64{1, pages - 1})},
		fileDamage{"F7-empty", sequenceSet()})
	return cs
}

// TestFreeListOverIndexPageIsDamage: seed 190's db.free with page 8 (a
// subscription's last-acks B-tree node) put before its own free pages. A
// real 5.17.2 broker replays the journal's tail at start, takes page 8 for
// a node it writes, and fails (ClassCastException: LastAck cannot be cast
// to Long, in BTreeIndex.put); in the free-list grid it failed to start on
// most of the index's pages put first. kahafs read the list without
// looking at what it hands out; now it is damage, and nothing is free.
func TestFreeListOverIndexPageIsDamage(t *testing.T) {
	seed190 := freeListStores[0]
	require.Equal(t, "seed-190", seed190.name)
	work := brokertest.CopyStore(t, seed190.dir)
	list := append([][2]int64{{8, 8}}, seed190.free...)
	require.NoError(t, os.WriteFile(filepath.Join(work, "db.free"), sequenceSet(list...), 0o644))
	requireDamagedStore(t, work, "the free list (db.free) hands out page 8, in use: a subscription-acks B-tree node")
}
