package kahaindex

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func unclean(x *tIndex) {
	x.header = [2]string{props(false, 1, ""), props(false, 1, "")}
}

// TestRedo: PageFile.redoRecoveryUpdates applies db.redo's batch only after
// an unclean shutdown, only when it is whole and its checksum matches.
func TestRedo(t *testing.T) {
	rows := redoRows()
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			x := testIndex()
			r.edit(x)
			ix, err := x.parse()
			if err != nil {
				t.Fatal(err)
			}
			q := ix.Destination("0:Q.A")
			if ix.PageFile.Redo != r.outcome || len(q.Messages) != r.msgs || ix.PageFile.PageCount != r.pages {
				t.Errorf("redo %v, %d messages, %d pages; want %v, %d, %d", ix.PageFile.Redo, len(q.Messages),
					ix.PageFile.PageCount, r.outcome, r.msgs, r.pages)
			}
		})
	}
}

type redoRow struct {
	name    string
	edit    func(x *tIndex)
	outcome RedoOutcome
	msgs    int // messages of Q.A read
	pages   int64
}

func redoRows() []redoRow {
	return []redoRow{
		{name: "clean: redo ignored", edit: func(x *tIndex) {
			x.redo = redoFile(x, 9, map[int64][]byte{2: x.pages[2]})
			x.pages[2] = x.page(pageFree, 0, nil)
		}, outcome: RedoNotNeeded, msgs: 0, pages: 18},
		{name: "unclean, batch applied", edit: func(x *tIndex) {
			unclean(x)
			x.redo = redoFile(x, 9, map[int64][]byte{2: x.pages[2], 3: x.pages[3]})
			x.pages[2] = x.page(pageFree, 0, nil)
		}, outcome: RedoApplied, msgs: 2, pages: 18},
		{name: "unclean, batch extends the file", edit: func(x *tIndex) {
			unclean(x)
			x.redo = redoFile(x, 9, map[int64][]byte{25: x.pages[2]})
		}, outcome: RedoApplied, msgs: 2, pages: 26},
		{name: "unclean, checksum wrong", edit: func(x *tIndex) {
			unclean(x)
			x.redo = redoFile(x, 9, map[int64][]byte{2: x.pages[2]})
			x.redo[12] ^= 1
			x.pages[2] = x.page(pageFree, 0, nil)
		}, outcome: RedoChecksum, msgs: 0, pages: 18},
		{name: "unclean, batch torn", edit: func(x *tIndex) {
			unclean(x)
			x.redo = redoFile(x, 9, map[int64][]byte{2: x.pages[2], 3: x.pages[3]})
			x.redo = x.redo[:len(x.redo)-10]
			x.pages[2] = x.page(pageFree, 0, nil)
		}, outcome: RedoIncomplete, msgs: 0, pages: 18},
		{name: "unclean, redo header only", edit: func(x *tIndex) {
			unclean(x)
			x.redo = redoFile(x, 9, nil)[:20]
		}, outcome: RedoApplied, msgs: 2, pages: 18},
	}
}

// TestRedoUnalignedWrite: a page id whose offset wraps around (Java's long
// overflow) lands where the broker would write it, not on a page boundary;
// reads see the bytes it covers.
func TestRedoUnalignedWrite(t *testing.T) {
	const ps = 4100
	x := testIndex()
	x.pageSize = ps
	for i := range x.header {
		x.header[i] = strings.Replace(props(false, 1, ""), "pageSize=4096", "pageSize=4100", 1)
	}
	for id, p := range x.pages {
		x.pages[id] = append(p, 0, 0, 0, 0)
	}
	id := int64(^uint64(0)/ps + 1) // id*ps wraps to a small remainder
	r := id * ps                   // wraps as in Java
	if r <= 0 || r >= ps {
		t.Fatalf("remainder %d", r)
	}
	x.redo = redoFile(x, 9, map[int64][]byte{id: bytes.Repeat([]byte{7}, ps)})
	data := x.bytes()
	pf, _, err := openPageFile(source{name: "db.data", r: bytes.NewReader(data), size: int64(len(data))},
		source{name: "db.redo", r: bytes.NewReader(x.redo), size: int64(len(x.redo))}, source{})
	if err != nil {
		t.Fatal(err)
	}
	if !pf.unaligned || pf.info.Redo != RedoApplied {
		t.Fatalf("unaligned %v redo %v", pf.unaligned, pf.info.Redo)
	}
	page1 := make([]byte, ps)
	if err := pf.readAt(page1, pf.toOffset(1)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(page1[:r], bytes.Repeat([]byte{7}, int(r))) || !bytes.Equal(page1[r:], x.pages[1][r:]) {
		t.Errorf("page 1 after the unaligned write: % x ...", page1[:32])
	}
	// Read never panics on it.
	if _, err := x.parse(); err != nil {
		t.Logf("unaligned write at %d: %v", 4096+r, err)
	}
}

func TestFreshIndexWithFreeList(t *testing.T) {
	x := testIndex()
	x.header = [2]string{props(true, 2, "freePages=2"), props(true, 2, "freePages=2")}
	x.free = out{}.i32(1).bool(true).i64(5).i64(6)
	_, err := Parse(x.bytes()[:4096], nil, x.free)
	var ce *CorruptionError
	if !errors.As(err, &ce) || !errors.Is(err, ErrPageID) || ce.Page != 6 || !ce.AtLoad {
		t.Fatalf("want the destinations root taken from the free list (page 6) to be past the end: %v", err)
	}
	// A page count of zero and no free list: a new index.
	x.header = [2]string{props(true, 2, ""), props(true, 2, "")}
	ix, err := Parse(x.bytes()[:4096], nil, nil)
	if err != nil || !ix.Fresh || len(ix.PageFile.FreeList) != 0 {
		t.Fatalf("%+v %v", ix, err)
	}
}

func TestHeaderCopies(t *testing.T) {
	x := testIndex()
	// The copies disagree: the second was written last.
	x.header[0] = strings.Replace(props(true, 3, ""), "lastTxId=7", "lastTxId=1", 1)
	ix, err := x.parse()
	if err != nil || ix.PageFile.HeaderCopy != 2 || ix.PageFile.LastTxID != 7 {
		t.Fatalf("copy %d lastTxId %d: %v", ix.PageFile.HeaderCopy, ix.PageFile.LastTxID, err)
	}
	// The first has no txid: the second.
	x.header[0] = "#nothing\n"
	if ix, err = x.parse(); err != nil || ix.PageFile.HeaderCopy != 2 {
		t.Fatalf("copy %d: %v", ix.PageFile.HeaderCopy, err)
	}
	// Same txid: the first.
	x = testIndex()
	x.header[1] = strings.Replace(props(true, 2, ""), "lastTxId=7", "lastTxId=1", 1)
	if ix, err = x.parse(); err != nil || ix.PageFile.HeaderCopy != 1 || ix.PageFile.LastTxID != 7 {
		t.Fatalf("copy %d: %v", ix.PageFile.HeaderCopy, err)
	}
}

// TestNotes: damage the broker reads past, and structures that disagree.
func TestNotes(t *testing.T) {
	rows := noteRows()
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			x := testIndex()
			r.edit(x)
			ix, err := x.parse()
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, n := range ix.Notes {
				found = found || n.Kind == r.kind
				if !strings.HasPrefix(n.String(), n.Kind.String()+": ") {
					t.Errorf("note text %q", n)
				}
			}
			if !found {
				t.Errorf("no %v note: %v", r.kind, ix.Notes)
			}
			if (r.kind == Damage) != ix.Damaged() {
				t.Errorf("Damaged() = %v", ix.Damaged())
			}
			if r.check != nil {
				r.check(t, ix)
			}
		})
	}
}

type noteRow struct {
	name  string
	edit  func(x *tIndex)
	kind  NoteKind
	check func(t *testing.T, ix *Index)
}

func noteRows() []noteRow {
	return []noteRow{
		{name: "leaf link past the end: iteration stops", edit: func(x *tIndex) {
			x.put(branch(i64s(2), 18, 19), 2)
			x.put(leaf(i64s(1), []out{msgKeys("ID:1", 1, 200, 50)}, 99), 18)
			x.put(leaf(i64s(2), []out{msgKeys("ID:2", 1, 300, 50)}, -1), 19)
		}, kind: Damage, check: func(t *testing.T, ix *Index) {
			q := ix.Destination("0:Q.A")
			if len(q.Messages) != 1 || q.NextSeq != 3 {
				t.Errorf("messages %v next %d", q.Messages, q.NextSeq)
			}
		}},
		{name: "lookup misses a listed destination", edit: func(x *tIndex) {
			x.put(branch(utfs("0:A"), 18, 19), 1)
			x.put(leaf(utfs("0:Q.A"), []out{storedQueue(2, 3, 4, 5, 6, 7)}, 19), 18)
			x.put(leaf(utfs("1:T.B"), []out{storedTopic(8, 9, 10, 11, 12, 13, 14, 15, 16, 17)}, -1), 19)
		}, kind: Recreated, check: func(t *testing.T, ix *Index) {
			q := ix.Destination("0:Q.A")
			if q == nil || len(q.Messages) != 0 || q.NextSeq != 0 || len(ix.Destinations) != 2 {
				t.Errorf("Q.A %+v", q)
			}
		}},
		{name: "message-id index misses a message", edit: func(x *tIndex) {
			x.put(leaf(utfs("ID:1"), i64s(1), -1), 4)
		}, kind: Mismatch},
		{name: "location index has another sequence", edit: func(x *tIndex) {
			x.put(leaf([]out{locKey(1, 200, 50), locKey(1, 300, 50)}, i64s(1, 7), -1), 3)
		}, kind: Mismatch},
		{name: "subscription only in the acks", edit: func(x *tIndex) {
			x.put(leaf(utfs("c:s", "d:s"), []out{out{}.i64(2).u8(4), out{}.i64(2).u8(4)}, -1), 12)
		}, kind: Mismatch, check: func(t *testing.T, ix *Index) {
			s := ix.Destination("1:T.B").Subscriptions
			if len(s) != 2 || s[1].Key != "d:s" || s[1].HasCommand || !s[1].HasLastAck {
				t.Errorf("subscriptions %+v", s)
			}
		}},
		{name: "duplicate subscription location", edit: func(x *tIndex) {
			x.put(listNode(-1, utfs("c:s", "c:s"), []out{out{}.loc(1, 10), out{}.loc(2, 20)}), 14)
		}, kind: Mismatch, check: func(t *testing.T, ix *Index) {
			s := ix.Destination("1:T.B").Subscriptions
			if len(s) != 1 || s[0].Loc.File != 1 {
				t.Errorf("subscriptions %+v", s)
			}
		}},
		{name: "a sequence in two classes", edit: func(x *tIndex) {
			x.put(leaf(i64s(2), []out{msgKeys("ID:2", 1, 300, 50)}, -1), 6)
		}, kind: Mismatch, check: func(t *testing.T, ix *Index) {
			q := ix.Destination("0:Q.A")
			if len(q.Messages) != 3 || q.Messages[0].Class != High {
				t.Errorf("messages %+v", q.Messages)
			}
		}},
		{name: "subscriptions B-tree second leaf unreadable", edit: func(x *tIndex) {
			x.put(leaf(utfs("c:s"), []out{subCommand("T.B", "c:s")}, 5000), 11)
		}, kind: Damage},
		{name: "queue looked up with subscription indexes", edit: func(x *tIndex) {
			x.put(branch(utfs("0:Q.A"), 18, 19), 1)
			x.put(leaf(utfs("0:Q.A"), []out{storedQueue(2, 3, 4, 5, 6, 7)}, 19), 18)
			x.put(leaf(utfs("0:Q.A"), []out{storedTopic(2, 3, 4, 11, 12, 13, 14, 5, 6, 7)}, -1), 19)
		}, kind: Mismatch},
	}
}

// TestFreeRoots: a free root page is an empty structure (the broker
// initialises it).
func TestFreeRoots(t *testing.T) {
	x := testIndex()
	for _, id := range []int64{2, 13, 14} {
		x.pages[id] = x.page(pageFree, 0, nil)
	}
	ix, err := x.parse()
	if err != nil {
		t.Fatal(err)
	}
	if q := ix.Destination("0:Q.A"); len(q.Messages) != 0 || q.NextSeq != 0 {
		t.Errorf("Q.A %+v", q)
	}
	tb := ix.Destination("1:T.B")
	if s := tb.Subscriptions; len(s) != 1 || s[0].HasLoc || s[0].HasAckPositions || !s[0].HasCommand {
		t.Errorf("T.B subscriptions %+v", s)
	}
	x.pages[1] = x.page(pageFree, 0, nil)
	if ix, err = x.parse(); err != nil || len(ix.Destinations) != 0 {
		t.Errorf("free destinations root: %v %v", ix, err)
	}
}

// TestNextSeqFromAcks: a topic without messages takes its next sequence
// from the last acks; with messages, from ack positions past them.
func TestNextSeqFromAcks(t *testing.T) {
	x := testIndex()
	x.put(leaf(nil, nil, -1), 8)
	x.put(leaf(utfs("c:s"), []out{out{}.i64(41).u8(4)}, -1), 12)
	ix, err := x.parse()
	if err != nil || ix.Destination("1:T.B").NextSeq != 42 {
		t.Fatalf("next %d: %v", ix.Destination("1:T.B").NextSeq, err)
	}
	x = testIndex()
	x.put(listNode(-1, utfs("c:s"), []out{seqSet(Range{3, 3}, Range{5, 9})}), 13)
	if ix, err = x.parse(); err != nil || ix.Destination("1:T.B").NextSeq != 9 {
		t.Fatalf("next %d: %v", ix.Destination("1:T.B").NextSeq, err)
	}
}

func TestBudget(t *testing.T) {
	x := testIndex()
	data := x.bytes()
	pf, _, err := openPageFile(source{name: "db.data", r: bytes.NewReader(data), size: int64(len(data))}, source{}, source{})
	if err != nil {
		t.Fatal(err)
	}
	pf.budget = 10
	r := &reader{pf: pf, ix: &Index{}}
	if err := r.read(); !errors.Is(err, ErrBudget) {
		t.Fatalf("want ErrBudget, got %v", err)
	}
}
