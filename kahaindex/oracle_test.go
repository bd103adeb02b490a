package kahaindex

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/internal/faults"
	"google.golang.org/protobuf/encoding/protowire"
)

// The JSON brokerkit's IndexDump writes (see brokerkit/src/IndexDump.java).
type oracleDump struct {
	// Timeout: IndexDump stopped the broker's code; Loops: because it
	// spent INDEXDUMP_CPU_MS of CPU time in the index code (the broker
	// loops), not because the wall-clock limit came first (no verdict).
	Timeout        bool          `json:"timeout,omitempty"`
	Loops          bool          `json:"loops,omitempty"`
	CPUMs          int64         `json:"cpuMs,omitempty"`
	WallMs         int64         `json:"wallMs,omitempty"`
	Stack          []string      `json:"stack,omitempty"`
	Header         *oracleHeader `json:"header"`
	Error          string        `json:"error,omitempty"`
	IterationError string        `json:"iterationError,omitempty"`
	PageCount      *int64        `json:"pageCount,omitempty"`
	Metadata       *oracleMeta   `json:"metadata,omitempty"`
	Destinations   []oracleDest  `json:"destinations"`
}

type oracleHeader struct {
	PageSize      int   `json:"pageSize"`
	CleanShutdown bool  `json:"cleanShutdown"`
	LastTxID      int64 `json:"lastTxId"`
	FreePages     int64 `json:"freePages"`
	MetaDataTxID  int64 `json:"metaDataTxId"`
}

type oracleLoc struct {
	File   int32 `json:"file"`
	Offset int32 `json:"offset"`
}

type oracleMeta struct {
	State             int32      `json:"state"`
	DestinationsPage  int64      `json:"destinationsPage"`
	LastUpdate        *oracleLoc `json:"lastUpdate"`
	FirstInProgressTx *oracleLoc `json:"firstInProgressTx"`
	ProducerAudit     *oracleLoc `json:"producerAudit"`
	Version           int32      `json:"version"`
	AckMap            *oracleLoc `json:"ackMap"`
	OpenwireVersion   int32      `json:"openwireVersion"`
}

type oracleDest struct {
	Key           string `json:"key"`
	Error         string `json:"error,omitempty"`
	NextMessageID int64  `json:"nextMessageId"`
	Topic         bool   `json:"topic"`
	Messages      []struct {
		Seq    int64  `json:"seq"`
		ID     string `json:"id"`
		File   int32  `json:"file"`
		Offset int32  `json:"offset"`
		Size   int32  `json:"size"`
		Class  string `json:"class"`
	} `json:"messages"`
	MessageIDs []struct {
		ID  string `json:"id"`
		Seq int64  `json:"seq"`
	} `json:"messageIds"`
	Locations []struct {
		File   int32 `json:"file"`
		Offset int32 `json:"offset"`
		Size   int32 `json:"size"`
		Seq    int64 `json:"seq"`
	} `json:"locations"`
	Subscriptions []struct {
		Key     string `json:"key"`
		Command string `json:"command"`
	} `json:"subscriptions"`
	LastAcks []struct {
		Key      string `json:"key"`
		Seq      int64  `json:"seq"`
		Priority int    `json:"priority"`
	} `json:"lastAcks"`
	AckPositions []struct {
		Key    string     `json:"key"`
		Ranges [][2]int64 `json:"ranges"`
	} `json:"ackPositions"`
	SubLocations []struct {
		Key    string `json:"key"`
		File   int32  `json:"file"`
		Offset int32  `json:"offset"`
	} `json:"subLocations"`
	Stats *struct {
		Count     int64 `json:"count"`
		TotalSize int64 `json:"totalSize"`
		MaxSize   int64 `json:"maxSize"`
		MinSize   int64 `json:"minSize"`
		SizeCount int64 `json:"sizeCount"`
	} `json:"stats"`
}

// asOracle renders ix the way IndexDump renders the broker's view, through
// JSON so that both sides go through the same decoding.
func asOracle(t *testing.T, ix *Index) oracleDump {
	t.Helper()
	m := map[string]any{}
	if ix.PageFile.HeaderCopy != 0 {
		m["header"] = oracleHeader{ix.PageFile.PageSize, ix.PageFile.CleanShutdown, ix.PageFile.LastTxID,
			ix.PageFile.FreePages, ix.PageFile.MetaDataTxID}
	}
	meta := oracleMeta{State: ix.Meta.State, DestinationsPage: ix.Meta.DestinationsPage, Version: ix.Meta.Version,
		OpenwireVersion: ix.Meta.OpenWireVersion}
	if l := ix.Meta.LastUpdate; l != nil {
		meta.LastUpdate = &oracleLoc{l.File, l.Offset}
	}
	if l := ix.Meta.FirstInProgressTx; l != nil {
		meta.FirstInProgressTx = &oracleLoc{l.File, l.Offset}
	}
	if l := ix.Meta.ProducerAudit; l != nil {
		meta.ProducerAudit = &oracleLoc{l.File, l.Offset}
	}
	if l := ix.Meta.AckMap; l != nil {
		meta.AckMap = &oracleLoc{l.File, l.Offset}
	}
	m["metadata"] = meta
	dests := []any{}
	for _, d := range ix.Destinations {
		od := map[string]any{"key": d.Key, "nextMessageId": d.NextSeq, "topic": d.Topic}
		msgs := []any{}
		for _, x := range d.Messages {
			msgs = append(msgs, map[string]any{"seq": x.Seq, "id": x.ID, "file": x.Loc.File, "offset": x.Loc.Offset,
				"size": x.Loc.Size, "class": x.Class.String()})
		}
		od["messages"] = msgs
		ids := []any{}
		for _, x := range d.Indexes.MessageIDs {
			ids = append(ids, map[string]any{"id": x.ID, "seq": x.Seq})
		}
		od["messageIds"] = ids
		locs := []any{}
		for _, x := range d.Indexes.Locations {
			locs = append(locs, map[string]any{"file": x.Loc.File, "offset": x.Loc.Offset, "size": x.Loc.Size, "seq": x.Seq})
		}
		od["locations"] = locs
		if d.Topic {
			subs, acks, pos, sl := []any{}, []any{}, []any{}, []any{}
			for _, x := range d.Indexes.SubscriptionCommands {
				subs = append(subs, map[string]any{"key": x.Key, "command": hex.EncodeToString(javaReencode(t, x.Command))})
			}
			for _, x := range d.Indexes.LastAcks {
				acks = append(acks, map[string]any{"key": x.Key, "seq": x.Seq, "priority": int(int8(x.Priority))})
			}
			for _, x := range d.Indexes.AckPositions {
				r := [][2]int64{}
				for _, s := range x.Ranges {
					r = append(r, [2]int64{s.First, s.Last})
				}
				pos = append(pos, map[string]any{"key": x.Key, "ranges": r})
			}
			for _, x := range d.Indexes.SubscriptionLocations {
				sl = append(sl, map[string]any{"key": x.Key, "file": x.Loc.File, "offset": x.Loc.Offset})
			}
			od["subscriptions"], od["lastAcks"], od["ackPositions"], od["subLocations"] = subs, acks, pos, sl
		}
		if s := d.Stats; s != nil {
			od["stats"] = map[string]any{"count": s.Count, "totalSize": s.TotalSize, "maxSize": s.MaxSize,
				"minSize": s.MinSize, "sizeCount": s.SizeCount}
		} else {
			od["stats"] = nil
		}
		dests = append(dests, od)
	}
	m["destinations"] = dests
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var out oracleDump
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// oracleCase is one store compared with the broker's own classes.
type oracleCase struct {
	name string
	dir  string
	// wantNote: a note kind Read must report (the damage is one the broker
	// reads past).
	wantNote *NoteKind
	// anyNotes: the case is checked by the table tests for its notes.
	anyNotes bool
}

// TestAgainstBroker reads every store with Read and with brokerkit's
// IndexDump (the real 5.17.2 PageFile, MessageDatabase.loadPageFile and the
// broker's own iterators) and compares the two.
func TestAgainstBroker(t *testing.T) {
	brokertest.Require(t)
	root := brokertest.RepoRoot()
	var cases []oracleCase
	for _, pattern := range []string{"testdata/stores/*/store", "refgraph/testdata/*/store"} {
		dirs, _ := filepath.Glob(filepath.Join(root, pattern))
		for _, d := range dirs {
			rel, _ := filepath.Rel(root, d)
			cases = append(cases, oracleCase{name: rel, dir: d})
		}
	}
	if len(cases) < 8 {
		t.Fatalf("only %d fixture stores found", len(cases))
	}
	gen := t.TempDir()
	brokertest.Run(t, "IndexStores", gen)
	t.Run("generated store shape", func(t *testing.T) { checkGeneratedShape(t, gen) })
	cases = append(cases,
		oracleCase{name: "index-clean", dir: filepath.Join(gen, "index-clean")},
		oracleCase{name: "index-unclean", dir: filepath.Join(gen, "index-unclean")})
	cases = append(cases, damagedStores(t, filepath.Join(gen, "index-unclean"), filepath.Join(gen, "index-clean"))...)
	cases = append(cases, syntheticStores(t)...)

	args := []string{}
	outs := make([]string, len(cases))
	for i, c := range cases {
		outs[i] = filepath.Join(t.TempDir(), "dump.json")
		args = append(args, c.dir, outs[i])
	}
	brokertest.Run(t, "IndexDump", args...)

	for i, c := range cases {
		t.Run(strings.ReplaceAll(c.name, "/", "_"), func(t *testing.T) {
			raw, err := os.ReadFile(outs[i])
			if err != nil {
				t.Fatal(err)
			}
			var want oracleDump
			if err := json.Unmarshal(raw, &want); err != nil {
				t.Fatalf("IndexDump output: %v", err)
			}
			compareWithOracle(t, c, want)
		})
	}
}

func compareWithOracle(t *testing.T, c oracleCase, want oracleDump) {
	ix, err := Read(c.dir)
	var ce *CorruptionError
	switch {
	case want.Timeout && !want.Loops:
		// Time is not a verdict: a slow machine is not a broker that
		// loops.
		t.Fatalf("IndexDump stopped the broker's code at its wall-clock limit (%d ms, %d ms of CPU) before it finished or showed it loops: no verdict to compare Read (%v) with; stack:\n%s",
			want.WallMs, want.CPUMs, err, strings.Join(want.Stack, "\n"))
	case want.Timeout || strings.Contains(want.Error, "OutOfMemoryError"):
		// The broker loops (it spent seconds of CPU in the index code on
		// an index of a few pages, or grew without end) on page links
		// that form a cycle: Read must refuse the index.
		if !errors.Is(err, ErrCycle) && !errors.Is(err, ErrBudget) {
			t.Fatalf("the broker does not finish (%q, %d ms of CPU, in %s); Read: %v", want.Error, want.CPUMs, firstFrame(want.Stack), err)
		}
		t.Logf("the broker does not finish (%q, %d ms of CPU, in %s); Read: %v", want.Error, want.CPUMs, firstFrame(want.Stack), err)
		return
	case errors.Is(err, ErrCycle) || errors.Is(err, ErrBudget):
		t.Fatalf("Read: %v; the broker finishes: %+v", err, want)
	case errors.Is(err, ErrVersion):
		// Read refuses an index older than it reads; the broker must
		// not read it as it is either: it fails to load it (a version
		// field missing), or it upgrades it in place (the version
		// after its load is not the stored one).
		h, herr := ReadHead(c.dir)
		switch {
		case herr != nil:
			t.Fatalf("Read: %v; the stored version: %v", err, herr)
		case h.Version >= minVersion:
			t.Fatalf("Read: %v, but the stored version is %d", err, h.Version)
		case want.Error != "" || want.IterationError != "" || hasDestError(want):
			t.Logf("both refuse version %d: broker %s%s%s; Read: %v", h.Version, want.Error, want.IterationError, destErrors(want), err)
		case want.Metadata != nil && want.Metadata.Version != h.Version:
			t.Logf("the broker upgrades version %d to %d in place; Read refuses it: %v", h.Version, want.Metadata.Version, err)
		default:
			t.Fatalf("Read: %v; the broker reads version %d as it is: %+v", err, h.Version, want.Metadata)
		}
		return
	case want.Error != "":
		if !errors.As(err, &ce) || !ce.AtLoad {
			t.Fatalf("the broker fails to load the index (%s); Read: %v", want.Error, err)
		}
		t.Logf("both fail: broker %s; Read: %v", want.Error, err)
		return
	case want.IterationError != "" || hasDestError(want):
		if !errors.As(err, &ce) || ce.AtLoad {
			t.Fatalf("the broker loads the index and fails later (%s%s); Read: %v", want.IterationError, destErrors(want), err)
		}
		t.Logf("both fail after the load: broker %s%s; Read: %v", want.IterationError, destErrors(want), err)
		return
	case err != nil:
		t.Fatalf("the broker loads the index; Read: %v", err)
	}
	got := asOracle(t, ix)
	if !reflect.DeepEqual(got.Header, want.Header) {
		t.Errorf("header: got %+v, broker %+v", got.Header, want.Header)
	}
	recreated := false
	for _, n := range ix.Notes {
		recreated = recreated || n.Kind == Recreated // the broker allocated pages for it
	}
	if !ix.Fresh && !recreated && want.PageCount != nil && *want.PageCount != ix.PageFile.PageCount {
		t.Errorf("page count: got %d, broker %d", ix.PageFile.PageCount, *want.PageCount)
	}
	if !reflect.DeepEqual(got.Metadata, want.Metadata) {
		t.Errorf("metadata: got %+v, broker %+v", *got.Metadata, *want.Metadata)
	}
	if len(got.Destinations) != len(want.Destinations) {
		t.Errorf("%d destinations, broker %d", len(got.Destinations), len(want.Destinations))
	}
	for i := 0; i < min(len(got.Destinations), len(want.Destinations)); i++ {
		g, w := got.Destinations[i], want.Destinations[i]
		if !reflect.DeepEqual(g, w) {
			gj, _ := json.MarshalIndent(g, "", " ")
			wj, _ := json.MarshalIndent(w, "", " ")
			t.Errorf("destination %d differs:\n%s", i, firstDiff(string(gj), string(wj)))
		}
	}
	if c.wantNote != nil {
		found := false
		for _, n := range ix.Notes {
			found = found || n.Kind == *c.wantNote
		}
		if !found {
			t.Errorf("no %v note; notes: %v", *c.wantNote, ix.Notes)
		}
	} else if !c.anyNotes {
		for _, n := range ix.Notes {
			t.Errorf("unexpected note: %v", n)
		}
	}
	t.Logf("%d destinations, %d messages, %d subscriptions, redo %v, notes %d", len(ix.Destinations),
		countMessages(ix), countSubs(ix), ix.PageFile.Redo, len(ix.Notes))
}

func hasDestError(d oracleDump) bool { return destErrors(d) != "" }

// firstFrame is the innermost frame of IndexDump's stack at a stop.
func firstFrame(stack []string) string {
	if len(stack) == 0 {
		return "no stack"
	}
	return stack[0]
}

func destErrors(d oracleDump) string {
	var s []string
	for _, x := range d.Destinations {
		if x.Error != "" {
			s = append(s, x.Key+": "+x.Error)
		}
	}
	return strings.Join(s, "; ")
}

func countMessages(ix *Index) (n int) {
	for _, d := range ix.Destinations {
		n += len(d.Messages)
	}
	return n
}

func countSubs(ix *Index) (n int) {
	for _, d := range ix.Destinations {
		n += len(d.Subscriptions)
	}
	return n
}

// firstDiff shows the lines around the first difference of two texts.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:\n got:    %s\n broker: %s", i+1, gl, wl)
		}
	}
	return "(no line differs)"
}

// syntheticStores writes the test index of the table tests, edited each
// way, where the broker would not loop forever on it.
func syntheticStores(t *testing.T) []oracleCase {
	t.Helper()
	var out []oracleCase
	add := func(name string, r synthRow) {
		data, redo, free := r.files()
		dir := filepath.Join(t.TempDir(), "synthetic")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for n, b := range map[string][]byte{"db.data": data, "db.redo": redo, "db.free": free} {
			if b != nil {
				writeFile(t, dir, n, b)
			}
		}
		out = append(out, oracleCase{name: "synthetic: " + name, dir: dir, anyNotes: true})
	}
	add("sound", synthRow{})
	for _, r := range errorRows() {
		if !r.hangs {
			add(r.name, r.synthRow)
		}
	}
	for _, r := range noteRows() {
		add(r.name, synthRow{name: r.name, edit: r.edit})
	}
	for _, r := range redoRows() {
		add(r.name, synthRow{name: r.name, edit: r.edit})
	}
	return out
}

// damagedStores makes stores the broker must treat in particular ways, from
// copies of the generated ones.
func damagedStores(t *testing.T, unclean, clean string) []oracleCase {
	t.Helper()
	var out []oracleCase
	mk := func(name, from string, fix func(dir string)) {
		dir := filepath.Join(t.TempDir(), name)
		if err := faults.CopyDir(dir, from); err != nil {
			t.Fatal(err)
		}
		fix(dir)
		out = append(out, oracleCase{name: name, dir: dir})
	}
	redoPages := func(dir string) (ids []int64, pageSize int) {
		redo := readFile(t, dir, "db.redo")
		pageSize = 4096
		n := int(binary.BigEndian.Uint32(redo[16:20]))
		for i := 0; i < n; i++ {
			off := 4096 + i*(8+pageSize)
			ids = append(ids, int64(binary.BigEndian.Uint64(redo[off:])))
		}
		return ids, pageSize
	}
	zeroRedoPages := func(dir string) {
		ids, ps := redoPages(dir)
		data := readFile(t, dir, "db.data")
		for _, id := range ids {
			off := 4096 + int(id)*ps
			if off+ps <= len(data) {
				clear(data[off : off+ps])
			}
		}
		writeFile(t, dir, "db.data", data)
	}
	// A crash after the redo file was written and before db.data was: the
	// broker rebuilds those pages from db.redo.
	mk("redo-needed", unclean, zeroRedoPages)
	// The same with the redo batch's checksum wrong: not applied.
	mk("redo-checksum", unclean, func(dir string) {
		zeroRedoPages(dir)
		redo := readFile(t, dir, "db.redo")
		redo[15] ^= 0xff
		writeFile(t, dir, "db.redo", redo)
	})
	// ... and torn: fewer pages than the count says.
	mk("redo-torn", unclean, func(dir string) {
		ids, ps := redoPages(dir)
		redo := readFile(t, dir, "db.redo")
		writeFile(t, dir, "db.redo", redo[:4096+(len(ids)-1)*(8+ps)+100])
	})
	// A redo file shorter than its header: the page file load fails.
	mk("redo-short", unclean, func(dir string) { writeFile(t, dir, "db.redo", make([]byte, 10)) })
	// A clean shutdown with free pages but no db.free.
	mk("free-missing", clean, func(dir string) {
		if err := os.Remove(filepath.Join(dir, "db.free")); err != nil {
			t.Fatal(err)
		}
	})
	// The first header copy half written (its metaDataTxId differs): the
	// broker takes the second one.
	mk("header-second-copy", clean, func(dir string) {
		data := readFile(t, dir, "db.data")
		hdr := strings.Replace(string(data[:2048]), "metaDataTxId=", "metaDataTxId=9", 1)
		hdr = strings.Replace(hdr, "pageSize=4096", "pageSize=1234", 1)
		copy(data, hdr[:2048])
		writeFile(t, dir, "db.data", data)
	})
	// A leaf of the deep queue's order index linking past the end of the
	// file: the broker's iterator stops there quietly.
	mk("broken-leaf-link", clean, func(dir string) {
		data := readFile(t, dir, "db.data")
		free := readFile(t, dir, "db.free")
		ix, err := Parse(data, nil, free)
		if err != nil {
			t.Fatal(err)
		}
		page := firstLeaf(t, data, free, ix.Destination("0:Q.DEEP").Indexes.Roots.Default)
		// the leaf's next link is the last 8 bytes of its payload
		off := 4096 + page*4096
		end := int64(binary.BigEndian.Uint64(data[off+9:]))
		binary.BigEndian.PutUint64(data[off+end-8:], 1<<40)
		writeFile(t, dir, "db.data", data)
	})
	dmg := Damage
	out[len(out)-1].wantNote = &dmg
	// The metadata page cut off: both fail.
	mk("truncated", clean, func(dir string) { writeFile(t, dir, "db.data", readFile(t, dir, "db.data")[:4096+100]) })
	return out
}

// firstLeaf returns the page of the leftmost leaf of the order index B-tree
// at root, which must have branch nodes.
func firstLeaf(t *testing.T, data, free []byte, root int64) int64 {
	t.Helper()
	src := func(name string, b []byte) source {
		return source{name: name, r: bytes.NewReader(b), size: int64(len(b))}
	}
	pf, _, err := openPageFile(src("db.data", data), source{name: "db.redo"}, src("db.free", free))
	if err != nil {
		t.Fatal(err)
	}
	tr := &btree[int64, messageKeys]{pf: pf, root: root, what: "test", key: readI64,
		value: func(in dataInput) (messageKeys, error) { return readMessageKeys(in, 7) }, cmp: compareInt64}
	n, err := tr.rootNode()
	if err != nil {
		t.Fatal(err)
	}
	if !n.branch() {
		t.Fatal("the deep queue's order index has no branch node")
	}
	for n.branch() {
		if n, err = tr.loadNode(n.children[0]); err != nil {
			t.Fatal(err)
		}
	}
	return n.page
}

func readFile(t *testing.T, dir, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t *testing.T, dir, name string, b []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// checkGeneratedShape checks that the stores IndexStores makes exercise
// what they are made for: B-tree branch nodes, nodes and values spanning
// several pages, the three priority classes, a fragmented ack-position set,
// removed subscriptions and destinations, and an unclean index whose redo
// file holds a batch.
func checkGeneratedShape(t *testing.T, gen string) {
	ix, err := Read(filepath.Join(gen, "index-clean"))
	if err != nil {
		t.Fatal(err)
	}
	for _, what := range []string{`destination "0:Q.DEEP" order index (DEF)`, `destination "0:Q.DEEP" message-id index`,
		`destination "0:Q.DEEP" location index`} {
		if ix.shape.branches[what] == 0 {
			t.Errorf("%s: no branch node; branches: %v", what, ix.shape.branches)
		}
	}
	for _, what := range []string{`destination "0:Q.LONGID" order index (DEF)`, `destination "0:Q.LONGID" message-id index`,
		`destination "1:T.FRAG" ack-positions list`, `destination "1:T.FRAG" subscriptions B-tree`} {
		if ix.shape.multiPage[what] == 0 {
			t.Errorf("%s: no multi-page stream; multi-page: %v", what, ix.shape.multiPage)
		}
	}
	classes := map[Class]int{}
	for _, m := range ix.Destination("0:Q.PRIO").Messages {
		classes[m.Class]++
	}
	if len(classes) != 3 {
		t.Errorf("Q.PRIO classes: %v", classes)
	}
	frag := ix.Destination("1:T.FRAG")
	var keys []string
	for _, s := range frag.Subscriptions {
		keys = append(keys, s.Key)
		if s.Key == "c-odd:s" && len(s.AckPositions) < 500 {
			t.Errorf("c-odd:s: %d ack ranges, want a fragmented set", len(s.AckPositions))
		}
	}
	if got := strings.Join(keys, " "); got != "c-odd:s c-none:s c-big:s c-retro:s c-late:s" {
		t.Errorf("T.FRAG subscriptions: %s", got)
	}
	if ix.Destination("1:T.GONE") != nil {
		t.Error("T.GONE (its only subscription removed) is still listed")
	}
	if d := ix.Destination("1:T.DONE"); d == nil || len(d.Messages) != 0 || d.NextSeq != 30 {
		t.Errorf("T.DONE: %+v", d)
	}
	un, err := Read(filepath.Join(gen, "index-unclean"))
	if err != nil {
		t.Fatal(err)
	}
	if un.PageFile.CleanShutdown || un.PageFile.Redo != RedoApplied || un.PageFile.RedoPages == 0 {
		t.Errorf("unclean copy: %+v", un.PageFile)
	}
}

// TestDifferential mutates the small test index at random (seeded) and
// compares Read with the broker's classes on every mutant: same failure
// (at load, later, or never finishing), or the same index.
func TestDifferential(t *testing.T) {
	brokertest.Require(t)
	n, seed := 300, int64(20261201)
	if testing.Short() {
		n = 40
	}
	// KAHAINDEX_DIFF=N,SEED runs N other mutants (a longer hunt).
	if v := os.Getenv("KAHAINDEX_DIFF"); v != "" {
		if _, err := fmt.Sscanf(v, "%d,%d", &n, &seed); err != nil {
			t.Fatalf("KAHAINDEX_DIFF=%q: %v", v, err)
		}
	}
	rng := rand.New(rand.NewSource(seed))
	var cases []oracleCase
	for i := 0; i < n; i++ {
		x := testIndexSized(256)
		if i%3 == 1 {
			unclean(x)
			x.redo = redoFile(x, 9, map[int64][]byte{int64(rng.Intn(18)): x.pages[int64(rng.Intn(18))]})
		}
		data := x.bytes()
		for k := 0; k <= rng.Intn(4); k++ {
			switch off := 4096 + rng.Intn(len(data)-4096); rng.Intn(3) {
			case 0: // any byte
				data[off] = byte(rng.Intn(256))
			case 1: // a small number (counts, page ids) into 8 bytes
				if off+8 <= len(data) {
					binary.BigEndian.PutUint64(data[off:], uint64(rng.Intn(24)-2))
				}
			case 2: // a page type
				page := (off - 4096) / 256
				data[4096+page*256] = byte(rng.Intn(4))
			}
		}
		dir := filepath.Join(t.TempDir(), "mutant")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, dir, "db.data", data)
		if x.redo != nil {
			writeFile(t, dir, "db.redo", x.redo)
		}
		cases = append(cases, oracleCase{name: fmt.Sprintf("mutant-%03d", i), dir: dir, anyNotes: true})
	}
	// and one the broker loops on, so that a run sees the verdict "loops"
	// made (the table tests' other cycles are not compared: seconds of
	// CPU each)
	for _, r := range errorRows() {
		if r.name == "branch child is the root" {
			data, _, _ := r.files()
			dir := filepath.Join(t.TempDir(), "cycle")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, dir, "db.data", data)
			cases = append(cases, oracleCase{name: "cycle", dir: dir, anyNotes: true})
		}
	}
	if cases[len(cases)-1].name != "cycle" {
		t.Fatal("no error row \"branch child is the root\"")
	}
	args := []string{}
	outs := make([]string, len(cases))
	for i, c := range cases {
		outs[i] = filepath.Join(t.TempDir(), "dump.json")
		args = append(args, c.dir, outs[i])
	}
	// an index of 18 pages of 256 bytes: 3 s of CPU in the broker's
	// index code is a loop
	t.Setenv("INDEXDUMP_CPU_MS", "3000")
	brokertest.Run(t, "IndexDump", args...)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			raw, err := os.ReadFile(outs[i])
			if err != nil {
				t.Fatal(err)
			}
			var want oracleDump
			if err := json.Unmarshal(raw, &want); err != nil {
				t.Fatalf("IndexDump output: %v", err)
			}
			compareWithOracle(t, c, want)
		})
	}
}

// javaReencode is what IndexDump prints for a stored subscription command:
// the message as ActiveMQ's protobuf code parses it (last occurrence of a
// field wins, unknown tags read as tags, an unknown destination type
// ignored, strings decoded as UTF-8) written back by writeUnframed.
func javaReencode(t *testing.T, b []byte) []byte {
	t.Helper()
	type field struct {
		set bool
		v   []byte
		n   uint64
	}
	var destType, destName, key, retro, info field
	in := &pbInput{b: b, limit: len(b)}
	str := func(f *field) func() error {
		return func() error {
			start := in.pos
			if err := in.bytes(); err != nil {
				return err
			}
			_, n := protowire.ConsumeVarint(b[start:])
			f.set, f.v = true, []byte(strings.ToValidUTF8(string(b[start+n:in.pos]), "\uFFFD"))
			return nil
		}
	}
	raw := func(f *field) func() error {
		return func() error {
			start := in.pos
			if err := in.bytes(); err != nil {
				return err
			}
			_, n := protowire.ConsumeVarint(b[start:])
			f.set, f.v = true, b[start+n:in.pos]
			return nil
		}
	}
	destination := map[int32]func() error{
		8: func() error {
			v, err := in.varint32()
			if err == nil && v >= 0 && v <= 3 {
				destType.set, destType.n = true, uint64(v)
			}
			return err
		},
		18: str(&destName),
	}
	hasDest := false
	command := map[int32]func() error{
		10: func() error { hasDest = true; return in.framed(destination) },
		18: str(&key),
		24: func() error {
			v, err := in.varint32()
			retro.set, retro.n = true, map[bool]uint64{false: 0, true: 1}[v != 0]
			return err
		},
		34: raw(&info),
	}
	if err := in.message(command); err != nil {
		t.Fatalf("stored command %x does not parse: %v", b, err)
	}
	var d []byte
	if destType.set {
		d = protowire.AppendVarint(protowire.AppendTag(d, 1, protowire.VarintType), destType.n)
	}
	if destName.set {
		d = protowire.AppendBytes(protowire.AppendTag(d, 2, protowire.BytesType), destName.v)
	}
	var out []byte
	if hasDest {
		out = protowire.AppendBytes(protowire.AppendTag(out, 1, protowire.BytesType), d)
	}
	if key.set {
		out = protowire.AppendBytes(protowire.AppendTag(out, 2, protowire.BytesType), key.v)
	}
	if retro.set {
		out = protowire.AppendVarint(protowire.AppendTag(out, 3, protowire.VarintType), retro.n)
	}
	if info.set {
		out = protowire.AppendBytes(protowire.AppendTag(out, 4, protowire.BytesType), info.v)
	}
	return out
}
