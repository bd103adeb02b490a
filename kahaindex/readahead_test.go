package kahaindex

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// aheadAgrees checks that Stream and StreamFast of data, redo and free
// written to files (the leaves read ahead) give what StreamBytes gives
// (every page read on its own): the same error, the same sink calls, the
// same index, notes and shapes included.
func aheadAgrees(t *testing.T, what string, data, redo, free []byte) {
	t.Helper()
	dir := t.TempDir()
	for name, b := range map[string][]byte{"db.data": data, "db.redo": redo, "db.free": free} {
		if b != nil {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	var want recorded
	wx, werr := StreamBytes(data, redo, free, want.sink())
	norm := func(err error) string { return strings.ReplaceAll(fmt.Sprint(err), dir+string(filepath.Separator), "") }
	for _, fast := range []bool{false, true} {
		var got recorded
		stream := Stream
		if fast {
			stream = StreamFast
		}
		gx, gerr := stream(dir, got.sink())
		if norm(werr) != norm(gerr) {
			t.Fatalf("%s (fast %v): read on its own: %v\nread ahead: %v", what, fast, werr, gerr)
		}
		if werr != nil {
			continue
		}
		if !reflect.DeepEqual(want.events, got.events) {
			t.Fatalf("%s (fast %v): sink calls differ:\n%q\n%q", what, fast, want.events, got.events)
		}
		gx.Path = wx.Path
		for i := range gx.Notes {
			gx.Notes[i].Text = strings.ReplaceAll(gx.Notes[i].Text, dir+string(filepath.Separator), "")
		}
		if !reflect.DeepEqual(wx, gx) {
			t.Fatalf("%s (fast %v): the index differs:\n%+v\n%+v", what, fast, wx, gx)
		}
	}
}

// deepIndex is testIndex with Q.A's order, location and message-id
// indexes three levels deep (a root, three branches, nine leaves of two
// entries), edited by edit.
func deepIndex(edit func(x *tIndex)) *tIndex {
	x := testIndex()
	const leaves = 9
	seq := func(leafNo, k int) int64 { return int64(2*leafNo + k + 1) }
	id := func(s int64) string { return fmt.Sprintf("ID:%02d", s) }
	type tree struct {
		root, branch, leaf int64 // first page ids
		key                func(s int64) out
		value              func(s int64) out
	}
	for _, tr := range []tree{
		{2, 31, 40, func(s int64) out { return out{}.i64(s) }, func(s int64) out { return msgKeys(id(s), 1, int32(100*s), 50) }},
		{3, 51, 60, func(s int64) out { return locKey(1, int32(100*s), 50) }, func(s int64) out { return out{}.i64(s) }},
		{4, 71, 80, func(s int64) out { return out{}.utf(id(s)) }, func(s int64) out { return out{}.i64(s) }},
	} {
		for l := range leaves {
			next := tr.leaf + int64(l) + 1
			if l == leaves-1 {
				next = -1
			}
			x.put(leaf([]out{tr.key(seq(l, 0)), tr.key(seq(l, 1))}, []out{tr.value(seq(l, 0)), tr.value(seq(l, 1))}, next), tr.leaf+int64(l))
		}
		for b := range 3 {
			first := 3 * b
			x.put(branch([]out{tr.key(seq(first+1, 0)), tr.key(seq(first+2, 0))},
				tr.leaf+int64(first), tr.leaf+int64(first+1), tr.leaf+int64(first+2)), tr.branch+int64(b))
		}
		x.put(branch([]out{tr.key(seq(3, 0)), tr.key(seq(6, 0))}, tr.branch, tr.branch+1, tr.branch+2), tr.root)
	}
	if edit != nil {
		edit(x)
	}
	return x
}

// TestReadAheadAgrees: reading the leaves ahead changes nothing Stream
// and StreamFast give, on every fixture store's index and damaged copies
// of it, on every table index (errors and notes), and on deep trees whose
// leaves link as their branches say or otherwise; each way of the read-
// ahead is taken (pages taken, branches peeked at, read-aheads stopped).
func TestReadAheadAgrees(t *testing.T) {
	if newReadAhead(os.Stdin, 4096) == nil {
		t.Skip("no batched reads on this platform: nothing is read ahead")
	}
	taken, peeked, stopped := aheadStats.taken.Load(), aheadStats.peeked.Load(), aheadStats.stopped.Load()
	for _, fx := range fixtureIndexes() {
		aheadAgrees(t, fx.dir, fx.data, fx.redo, fx.free)
		for at := 4096 + len(fx.data)/64; at+64 <= len(fx.data); at += len(fx.data) / 5 {
			bad := append([]byte(nil), fx.data...)
			for i := at; i < at+64; i++ {
				bad[i] ^= 0x5a
			}
			aheadAgrees(t, fmt.Sprintf("%s, 64 bytes at %d changed", fx.dir, at), bad, fx.redo, fx.free)
		}
	}
	for _, r := range errorRows() {
		data, redo, free := r.files()
		aheadAgrees(t, r.name, data, redo, free)
	}
	for _, r := range noteRows() {
		x := testIndex()
		r.edit(x)
		aheadAgrees(t, r.name, x.bytes(), x.redo, x.free)
	}
	deepTaken := aheadStats.taken.Load()
	for _, c := range []struct {
		name string
		edit func(x *tIndex)
	}{
		{"deep trees", nil},
		{"a leaf links past its next sibling", func(x *tIndex) {
			x.put(leaf(i64s(7, 8), []out{msgKeys("ID:07", 1, 700, 50), msgKeys("ID:08", 1, 800, 50)}, 45), 43)
		}},
		{"a leaf links past the file's end", func(x *tIndex) {
			x.put(leaf(i64s(13, 14), []out{msgKeys("ID:13", 1, 1300, 50), msgKeys("ID:14", 1, 1400, 50)}, 999), 46)
		}},
		{"a lower branch in two pages", func(x *tIndex) {
			b := branch([]out{locKey(1, 900, 50), locKey(1, 1100, 50)}, 63, 64, 65)
			x.pages[52] = x.page(pagePart, 90, b[:len(b)/2])
			x.pages[90] = x.page(pageEnd, int64(pageHeaderSize+len(b)-len(b)/2), b[len(b)/2:])
		}},
		{"a lower branch that is a leaf", func(x *tIndex) {
			x.put(leaf(nil, nil, -1), 72)
		}},
		{"a lower branch past the file's end", func(x *tIndex) {
			x.put(branch(i64s(7, 13), 31, 999, 33), 2)
		}},
	} {
		x := deepIndex(c.edit)
		aheadAgrees(t, c.name, x.bytes(), x.redo, x.free)
	}
	if aheadStats.taken.Load() == deepTaken {
		t.Error("no page of the deep trees was read ahead")
	}
	if aheadStats.taken.Load() == taken || aheadStats.peeked.Load() == peeked || aheadStats.stopped.Load() == stopped {
		t.Errorf("pages taken %d, branches peeked at %d, read-aheads stopped %d: a way not taken",
			aheadStats.taken.Load()-taken, aheadStats.peeked.Load()-peeked, aheadStats.stopped.Load()-stopped)
	}
	t.Logf("pages taken %d, branches peeked at %d, read-aheads stopped %d",
		aheadStats.taken.Load()-taken, aheadStats.peeked.Load()-peeked, aheadStats.stopped.Load()-stopped)
}
