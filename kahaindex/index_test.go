package kahaindex

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kahafs/kahafs/codec"
)

func TestReadSoundIndex(t *testing.T) {
	ix, err := testIndex().parse()
	if err != nil {
		t.Fatal(err)
	}
	if ix.Fresh || ix.PageFile.PageCount != 18 || ix.PageFile.Redo != RedoNotNeeded || len(ix.Notes) != 0 {
		t.Fatalf("page file %+v, notes %v", ix.PageFile, ix.Notes)
	}
	wantMeta := Metadata{State: 2, DestinationsPage: 1, LastUpdate: &codec.Location{File: 1, Offset: 100},
		ProducerAudit: &codec.Location{File: 1, Offset: 50}, Version: 7, AckMap: &codec.Location{File: 1, Offset: 60},
		OpenWireVersion: 11}
	if !reflect.DeepEqual(ix.Meta, wantMeta) {
		t.Errorf("metadata %+v", ix.Meta)
	}
	if rs := ix.ReplayStart(); rs.FromStart || !rs.After || rs.At != (codec.Location{File: 1, Offset: 100}) || rs.AuditReplay {
		t.Errorf("replay start %+v", rs)
	}
	q := ix.Destination("0:Q.A")
	if q == nil || q.Type != codec.Queue || q.Name != "Q.A" || q.Topic || q.NextSeq != 3 || len(q.Messages) != 2 {
		t.Fatalf("Q.A: %+v", q)
	}
	if m := q.Messages[1]; m != (Message{Seq: 2, ID: "ID:2", Loc: codec.Location{File: 1, Offset: 300, Size: 50}, Class: Default}) {
		t.Errorf("Q.A message: %+v", m)
	}
	if q.Stats == nil || *q.Stats != (Stats{2, 100, 50, 50, 2}) {
		t.Errorf("Q.A stats %+v", q.Stats)
	}
	tb := ix.Destination("1:T.B")
	if tb == nil || !tb.Topic || tb.NextSeq != 4 || tb.Stats != nil || len(tb.Subscriptions) != 1 {
		t.Fatalf("T.B: %+v", tb)
	}
	s := tb.Subscriptions[0]
	if s.Key != "c:s" || !s.HasCommand || !s.HasLoc || s.Loc != (codec.Location{File: 1, Offset: 10}) ||
		!s.HasLastAck || s.LastAck != 2 || s.LastAckPriority != PriorityDefault ||
		!reflect.DeepEqual(s.AckPositions, []Range{{3, 4}}) {
		t.Errorf("subscription %+v", s)
	}
	var c codec.Command
	if err := s.DecodeCommand(&c); err != nil || string(c.SubscriptionKey) != "c:s" || c.Dest.Key() != "1:T.B" ||
		c.IsSubscriptionDelete() {
		t.Errorf("subscription command: %v %+v", err, c)
	}
	if err := (&Subscription{Key: "x"}).DecodeCommand(&c); err == nil {
		t.Error("no command decoded")
	}
	// A command the broker's lenient protobuf parser accepts: Read keeps
	// it; a strict decode refuses it.
	x := testIndex()
	x.put(leaf(utfs("c:s"), []out{out{2, 0x0a, 0x05}}, -1), 11)
	ix, err = x.parse()
	if err != nil {
		t.Fatal(err)
	}
	if s := ix.Destination("1:T.B").Subscriptions[0]; !bytes.Equal(s.Command, []byte{0x0a, 0x05}) || s.DecodeCommand(&c) == nil {
		t.Errorf("lenient command: %+v", s)
	}
}

func TestReadFreshIndex(t *testing.T) {
	for name, data := range map[string][]byte{"missing": nil, "empty": {}} {
		ix, err := Parse(data, []byte("ignored"), nil)
		if err != nil || !ix.Fresh || len(ix.Destinations) != 0 || !ix.ReplayStart().FromStart {
			t.Errorf("%s: %+v, %v", name, ix, err)
		}
	}
	// Only the header: no page, a new index.
	x := testIndex()
	ix, err := Parse(x.bytes()[:4096], nil, nil)
	if err != nil || !ix.Fresh || ix.Meta.DestinationsPage != 1 {
		t.Errorf("header only: %+v, %v", ix, err)
	}
}

func TestReadDirectory(t *testing.T) {
	dir := t.TempDir()
	x := testIndex()
	if err := os.WriteFile(filepath.Join(dir, "db.data"), x.bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	ix, err := Read(dir)
	if err != nil || len(ix.Destinations) != 2 || ix.Path != filepath.Join(dir, "db.data") {
		t.Fatalf("%+v, %v", ix, err)
	}
	// A directory where db.data should be is an I/O error, not corruption.
	bad := t.TempDir()
	if err := os.Mkdir(filepath.Join(bad, "db.data"), 0o755); err != nil {
		t.Fatal(err)
	}
	var ce *CorruptionError
	if _, err := Read(bad); err == nil || errors.As(err, &ce) {
		t.Errorf("db.data a directory: %v", err)
	}
}

// TestReadErrors: every way Read refuses an index, with the sentinel, the
// page, and whether the broker would fail at load.
func TestReadErrors(t *testing.T) {
	for _, r := range errorRows() {
		t.Run(r.name, func(t *testing.T) {
			data, redo, free := r.files()
			ix, err := Parse(data, redo, free)
			if !errors.Is(err, r.want) {
				t.Fatalf("want %v, got %v (index %+v)", r.want, err, ix)
			}
			var ce *CorruptionError
			if !errors.As(err, &ce) {
				t.Fatalf("not a *CorruptionError: %T %v", err, err)
			}
			if ce.Page != r.page || ce.AtLoad != r.atLoad {
				t.Errorf("page %d atLoad %v, want page %d atLoad %v: %v", ce.Page, ce.AtLoad, r.page, r.atLoad, err)
			}
			if !strings.Contains(err.Error(), "db.") {
				t.Errorf("error does not name the file: %v", err)
			}
		})
	}
}

// synthRow is a test index edited one way.
type synthRow struct {
	name string
	edit func(x *tIndex)
	raw  func(b []byte) []byte // applied to db.data's bytes after edit
	// hangs: the broker would loop forever on it (not compared with it)
	hangs bool
}

func (r synthRow) files() (data, redo, free []byte) {
	x := testIndex()
	if r.edit != nil {
		r.edit(x)
	}
	data = x.bytes()
	if r.raw != nil {
		data = r.raw(data)
	}
	return data, x.redo, x.free
}

type errorRow struct {
	synthRow
	want   error
	page   int64
	atLoad bool
}

// errorRows: every way Read refuses an index, with the sentinel, the page,
// and whether the broker fails at load.
func errorRows() []errorRow {
	type row struct {
		name   string
		edit   func(x *tIndex)
		raw    func(b []byte) []byte
		want   error
		page   int64
		atLoad bool
		hangs  bool
	}
	rows := []row{
		{name: "file shorter than a header copy", raw: func(b []byte) []byte { return b[:1000] },
			want: ErrHeader, page: -1, atLoad: true},
		{name: "malformed unicode escape", edit: func(x *tIndex) { x.header[0] = props(true, 2, "k=\\u12G4") },
			want: ErrHeader, page: -1, atLoad: true},
		{name: "page size too small", edit: func(x *tIndex) {
			x.header[0] = strings.Replace(props(true, 2, ""), "pageSize=4096", "pageSize=20", 1)
			x.header[1] = x.header[0]
		}, want: ErrHeader, page: -1, atLoad: true},
		{name: "page size missing", edit: func(x *tIndex) {
			x.header[0] = strings.Replace(props(true, 2, ""), "pageSize=4096", "", 1)
			x.header[1] = x.header[0]
		}, want: ErrHeader, page: -1, atLoad: true},
		{name: "first copy without txid, no second copy", edit: func(x *tIndex) {
			x.header[0] = strings.Replace(props(true, 2, ""), "metaDataTxId=2", "", 1)
		}, raw: func(b []byte) []byte { return b[:3000] }, want: ErrHeader, page: -1, atLoad: true},
		{name: "unclean, no redo file", edit: unclean, want: ErrRedo, page: -1, atLoad: true},
		{name: "unclean, empty redo file", edit: func(x *tIndex) { unclean(x); x.redo = []byte{} },
			want: ErrRedo, page: -1, atLoad: true},
		{name: "file shorter than its header", raw: func(b []byte) []byte { return b[:3000] },
			want: ErrHeader, page: -1, atLoad: true},
		{name: "redo shorter than its header", edit: func(x *tIndex) {
			x.header = [2]string{props(false, 2, ""), props(false, 2, "")}
			x.redo = []byte{1, 2, 3}
		}, want: ErrRedo, page: -1, atLoad: true},
		{name: "redo writes a negative page", edit: func(x *tIndex) {
			x.header = [2]string{props(false, 2, ""), props(false, 2, "")}
			x.redo = redoFile(x, 9, map[int64][]byte{-3: x.pages[5]})
		}, want: ErrRedo, page: -1, atLoad: true},
		{name: "redo writes past 16 TiB", edit: func(x *tIndex) {
			x.header = [2]string{props(false, 2, ""), props(false, 2, "")}
			x.redo = redoFile(x, 9, map[int64][]byte{1 << 40: x.pages[5]})
		}, want: ErrRedo, page: -1, atLoad: true},
		{name: "free list missing", edit: func(x *tIndex) {
			x.header = [2]string{props(true, 2, "freePages=2"), props(true, 2, "freePages=2")}
		}, want: ErrFreeList, page: -1, atLoad: true},
		{name: "free list short", edit: func(x *tIndex) {
			x.header = [2]string{props(true, 2, "freePages=2"), props(true, 2, "freePages=2")}
			x.free = out{}.i32(2).bool(false).i64(30)
		}, want: ErrFreeList, page: -1, atLoad: true},
		{name: "metadata page free", edit: func(x *tIndex) { x.pages[0] = x.page(pageFree, 0, nil) },
			want: ErrFreePage, page: 0, atLoad: true},
		{name: "metadata ends after the state", edit: func(x *tIndex) { x.put(out{}.i32(2), 0) },
			want: ErrShort, page: 0, atLoad: true},
		{name: "metadata end offset before the payload", edit: func(x *tIndex) { x.pages[0] = x.page(pageEnd, 5, metadataPage(1)) },
			want: ErrShort, page: 0, atLoad: true},
		{name: "metadata without version", edit: func(x *tIndex) {
			x.put(out{}.i32(2).i64(1).optLoc(1, 100).optLoc(-1, 0).optLoc(1, 50), 0)
		}, want: ErrVersion, page: 0},
		{name: "metadata version 5 without ack map flag", edit: func(x *tIndex) {
			x.put(out{}.i32(2).i64(1).optLoc(1, 100).optLoc(-1, 0).optLoc(1, 50).i32(5), 0)
		}, want: ErrShort, page: 0, atLoad: true},
		{name: "end page length past the page, read past it", edit: func(x *tIndex) {
			x.pages[1] = x.page(pageEnd, 9000, bigLeaf())
		}, want: ErrOverrun, page: 1, atLoad: true},
		{name: "destinations root negative", edit: func(x *tIndex) { x.put(metadataPage(-4), 0) },
			want: ErrPageID, page: -4, atLoad: true},
		{name: "destinations root past the end", edit: func(x *tIndex) { x.put(metadataPage(99), 0) },
			want: ErrPageID, page: 99, atLoad: true},
		{name: "negative key count", edit: func(x *tIndex) { x.put(out{}.i16(-1), 1) },
			want: ErrNegative, page: 1, atLoad: true},
		{name: "malformed key", edit: func(x *tIndex) {
			x.put(leaf([]out{out{}.i16(2).raw([]byte{0xC3, 0x41})}, []out{storedQueue(2, 3, 4, 5, 6, 7)}, -1), 1)
		}, want: ErrUTF, page: 1, atLoad: true},
		{name: "part page links back to itself", edit: func(x *tIndex) { x.pages[1] = x.page(pagePart, 1, bigLeaf()) },
			want: ErrCycle, page: 1, hangs: true}, // not atLoad: the broker loops, it does not rebuild
		{name: "part page links past the end", edit: func(x *tIndex) { x.pages[1] = x.page(pagePart, 500, bigLeaf()) },
			want: ErrPageID, page: 500, atLoad: true},
		{name: "part page links to a negative page", edit: func(x *tIndex) { x.pages[1] = x.page(pagePart, -2, bigLeaf()) },
			want: ErrPageID, page: -2, atLoad: true},
		{name: "part page links to a free page", edit: func(x *tIndex) {
			x.pages[1] = x.page(pagePart, 17, bigLeaf())
		}, want: ErrFreePage, page: 17, atLoad: true},
		{name: "branch child is the root", edit: func(x *tIndex) { x.put(branch(utfs("1:T.B"), 1, 1), 1) },
			want: ErrCycle, page: 1, hangs: true},
		{name: "leaf links to itself", edit: func(x *tIndex) {
			x.put(leaf(i64s(1, 2), []out{msgKeys("ID:1", 1, 200, 50), msgKeys("ID:2", 1, 300, 50)}, 2), 2)
		}, want: ErrCycle, page: 2, hangs: true},
		{name: "leaf links to a branch", edit: func(x *tIndex) {
			x.put(leaf(i64s(1), []out{msgKeys("ID:1", 1, 200, 50)}, 18), 2)
			x.put(branch(i64s(5), 5, 6), 18)
		}, want: ErrInconsistent, page: 18},
		{name: "iterated as a topic, looked up as a queue", edit: func(x *tIndex) {
			// two leaves with the same key under a branch: iteration sees the
			// first, the lookup the second
			x.put(branch(utfs("0:Q.A"), 18, 19), 1)
			x.put(leaf(utfs("0:Q.A"), []out{storedTopic(8, 9, 10, 11, 12, 13, 14, 15, 16, 17)}, 19), 18)
			x.put(leaf(utfs("0:Q.A"), []out{storedQueue(2, 3, 4, 5, 6, 7)}, -1), 19)
		}, want: ErrInconsistent, page: -1, atLoad: true},
		{name: "statistics page past the end", edit: func(x *tIndex) {
			x.put(leaf(utfs("0:Q.A"), []out{storedQueue(2, 3, 4, 5, 6, 70)}, -1), 1)
		}, want: ErrPageID, page: 70, atLoad: true},
		{name: "order index root past the end", edit: func(x *tIndex) {
			x.put(leaf(utfs("0:Q.A"), []out{storedQueue(2, 3, 4, 5, 60, 7)}, -1), 1)
		}, want: ErrPageID, page: 60, atLoad: true},
		{name: "last leaf of the order index unreadable", edit: func(x *tIndex) {
			x.put(branch(i64s(2), 18, 19), 2)
			x.put(leaf(i64s(1), []out{msgKeys("ID:1", 1, 200, 50)}, 19), 18)
			x.pages[19] = x.page(pageFree, 0, nil)
		}, want: ErrFreePage, page: 19, atLoad: true},
		{name: "message-id index root unreadable", edit: func(x *tIndex) { x.pages[4] = x.page(pageEnd, 21, nil) },
			want: ErrShort, page: 4},
		{name: "statistics page is the order index root", edit: func(x *tIndex) {
			// the broker decodes page 2 as statistics first (none) and its
			// page cache then hands that out as the order index root
			x.put(leaf(utfs("0:Q.A"), []out{storedQueue(2, 3, 4, 5, 6, 2)}, -1), 1)
		}, want: ErrInconsistent, page: 2, atLoad: true},
		{name: "location index root is an order index node", edit: func(x *tIndex) {
			x.put(leaf(utfs("0:Q.A"), []out{storedQueue(2, 2, 4, 5, 6, 7)}, -1), 1)
		}, want: ErrInconsistent, page: 2},
		{name: "ack-positions list links back", edit: func(x *tIndex) {
			x.put(listNode(13, utfs("c:s"), []out{seqSet(Range{3, 4})}), 13)
		}, want: ErrCycle, page: 13, hangs: true},
		{name: "subscription-locations list links to a negative page", edit: func(x *tIndex) {
			x.put(listNode(-5, utfs("c:s"), []out{out{}.loc(1, 10)}), 14)
		}, want: ErrPageID, page: -5, atLoad: true},
		{name: "ack positions the broker would count forever", edit: func(x *tIndex) {
			x.put(listNode(-1, utfs("c:s"), []out{seqSet(Range{9, 3})}), 13)
		}, want: ErrBudget, page: 13, hangs: true},
		{name: "subscription command with a negative length", edit: func(x *tIndex) {
			x.put(leaf(utfs("c:s"), []out{out{0xff, 0xff, 0xff, 0xff, 0x0f}}, -1), 11)
		}, want: ErrNegative, page: 11},
		{name: "subscription command cut short", edit: func(x *tIndex) {
			x.put(leaf(utfs("c:s"), []out{out{40, 1, 2}}, -1), 11)
		}, want: ErrProtobuf, page: 11},
		{name: "subscription command length varint malformed", edit: func(x *tIndex) {
			x.put(leaf(utfs("c:s"), []out{out{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}, -1), 11)
		}, want: ErrProtobuf, page: 11},
	}
	var out []errorRow
	for _, r := range rows {
		out = append(out, errorRow{synthRow{r.name, r.edit, r.raw, r.hangs}, r.want, r.page, r.atLoad})
	}
	return out
}

// bigLeaf is a destinations leaf of 200 keys: more than a page.
func bigLeaf() out {
	o := out{}.i16(200)
	for i := 0; i < 200; i++ {
		o = o.utf(strings.Repeat("k", 60))
	}
	return o
}
