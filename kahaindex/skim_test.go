package kahaindex

import (
	"fmt"
	"slices"
	"testing"

	"github.com/kahafs/kahafs/codec"
)

// TestSkimLeafAsDecoded: every page of every fixture store's db.data, as
// it is and with bytes flipped, read as a message-id index node and as a
// location index node (both layouts): where skimmer takes the page, the
// full decode reads it without error, as a leaf of as many entries, with
// the same next leaf; where it does not, nothing of the stream moved.
// Both kinds of leaf are skimmed on the fixtures, and both fall back.
func TestSkimLeafAsDecoded(t *testing.T) {
	skimmed, fallbacks := map[string]int{}, map[string]int{}
	for _, fx := range fixtureIndexes() {
		for _, flip := range []bool{false, true} {
			data := fx.data
			if flip {
				data = append([]byte(nil), data...)
				for i := 4096 + 37; i < len(data); i += 211 {
					data[i] ^= 0x81
				}
			}
			files := byteSources("db", data, fx.redo, fx.free)
			pf, fresh, err := openPageFile(files[0], files[1], files[2])
			if err != nil || fresh {
				continue
			}
			pf.budget = 1 << 40
			for id := int64(0); id < pf.filePages(); id++ {
				ids := &btree[struct{}, int64]{pf: pf, what: "ids", value: readI64, key: func(in dataInput) (struct{}, error) {
					_, err := readUTFBytes(in, nil)
					return struct{}{}, err
				}}
				skimAgrees(t, fmt.Sprintf("%s page %d as message ids", fx.dir, id), ids, &skim{key: skimASCII, value: 8}, id, skimmed, fallbacks, "ids")
				for _, v := range []int32{5, 6} {
					orderLeafAgrees(t, fmt.Sprintf("%s page %d as an order index node (version %d)", fx.dir, id, v), pf, id, v, skimmed, fallbacks)
					locs := &btree[codec.Location, int64]{pf: pf, what: "locations", value: readI64,
						key: func(in dataInput) (codec.Location, error) { return readLocationSize(in, v) }}
					skimAgrees(t, fmt.Sprintf("%s page %d as locations (version %d)", fx.dir, id, v), locs,
						&skim{key: skimFixed(locationBytes(v)), value: 8}, id, skimmed, fallbacks, "locations")
				}
			}
		}
	}
	for _, k := range []string{"ids", "locations", "order"} {
		if skimmed[k] == 0 || fallbacks[k] == 0 {
			t.Errorf("%s: %d leaves skimmed, %d fallbacks: the test exercises one path only", k, skimmed[k], fallbacks[k])
		}
	}
	t.Logf("skimmed %v, fell back %v", skimmed, fallbacks)
}

func skimAgrees[K, V any](t *testing.T, what string, tr *btree[K, V], sk *skim, id int64, skimmed, fallbacks map[string]int, kind string) {
	t.Helper()
	s, err := tr.pf.openStream(id, tr.what)
	if err != nil {
		return
	}
	tr.leaf = skimmer[K, V](*sk)
	n := tr.leafNode(s, id)
	pos, page := s.pos, s.page
	full, ferr := tr.decodeFrom(s, id)
	tr.pf.release(s)
	if n == nil {
		fallbacks[kind]++
		if pos != pageHeaderSize || page != id {
			t.Fatalf("%s: a fallback moved the stream (position %d, page %d)", what, pos, page)
		}
		return
	}
	skimmed[kind]++
	switch {
	case ferr != nil:
		t.Fatalf("%s: skimmed, but decoding fails: %v", what, ferr)
	case full.branch():
		t.Fatalf("%s: skimmed, but decoded as a branch", what)
	case len(full.keys) != len(n.keys) || len(full.values) != len(n.values) || full.next != n.next || n.page != id:
		t.Fatalf("%s: skimmed %d keys, %d values, next %d; decoded %d, %d, next %d", what, len(n.keys), len(n.values), n.next,
			len(full.keys), len(full.values), full.next)
	}
}

// orderLeafAgrees: where orderLeaf decodes page id, streamOrder's decoder
// (decodeFrom) gives the same node and ids, without error.
func orderLeafAgrees(t *testing.T, what string, pf *pageFile, id int64, version int32, done, fallbacks map[string]int) {
	t.Helper()
	s, err := pf.openStream(id, "order")
	if err != nil {
		return
	}
	defer pf.release(s)
	if !onePage(s) {
		return
	}
	fast := &node[int64, rawKeys]{}
	fastArena, ok := orderLeaf(s.buf[:s.end], fast, []byte("x"), locationBytes(version))
	if !ok {
		fallbacks["order"]++
		if string(fastArena) != "x" {
			t.Fatalf("%s: a fallback left the arena %q", what, fastArena)
		}
		return
	}
	done["order"]++
	arena := []byte("x")
	tr := &btree[int64, rawKeys]{pf: pf, what: "order", key: readI64, value: func(in dataInput) (rawKeys, error) {
		from := len(arena)
		var err error
		if arena, err = readUTFBytes(in, arena); err != nil {
			return rawKeys{}, err
		}
		loc, err := readLocationSize(in, version)
		return rawKeys{from, len(arena), loc}, err
	}}
	full, err := tr.decodeFrom(s, id)
	switch {
	case err != nil:
		t.Fatalf("%s: decoded fast, but decodeFrom fails: %v", what, err)
	case full.branch():
		t.Fatalf("%s: decoded fast, but decodeFrom reads a branch", what)
	case !slices.Equal(full.keys, fast.keys) || !slices.Equal(full.values, fast.values) || full.next != fast.next || string(arena) != string(fastArena):
		t.Fatalf("%s: fast %v %v next %d %q; decodeFrom %v %v next %d %q", what, fast.keys, fast.values, fast.next, fastArena,
			full.keys, full.values, full.next, arena)
	}
}

// TestSkimLeafOddEnds: an end page whose data ends before its header or
// past the page (the end offset is the file's word) is left to the full
// decoder, which reports it; neither fast path panics.
func TestSkimLeafOddEnds(t *testing.T) {
	x := testIndex()
	data := x.bytes()
	files := byteSources("db", data, x.redo, x.free)
	pf, _, err := openPageFile(files[0], files[1], files[2])
	if err != nil {
		t.Fatal(err)
	}
	pf.budget = 1 << 40
	for _, end := range []int32{-5, 0, pageHeaderSize - 1, int32(pf.pageSize) + 1} {
		s := &stream{pf: pf, buf: make([]byte, pf.pageSize), typ: pageEnd, pos: pageHeaderSize, end: int(end)}
		tr := &btree[struct{}, int64]{pf: pf, leaf: skimmer[struct{}, int64](skim{key: skimASCII, value: 8})}
		if n := tr.leafNode(s, 1); n != nil {
			t.Errorf("end %d: skimmed", end)
		}
		if onePage(s) {
			t.Errorf("end %d: taken as one page", end)
		}
	}
}

// FuzzLeafFastPaths: any page, read as a message-id, location (both
// layouts) or order index node, gives through skimmer and orderLeaf
// what the full decoder gives, or is left to it; nothing panics.
func FuzzLeafFastPaths(f *testing.F) {
	x := testIndexSized(256)
	for _, p := range x.pages {
		f.Add(p)
	}
	for _, fx := range fixtureIndexes() {
		for at := 4096; at+4096 <= len(fx.data) && at < 4096*24; at += 4096 {
			f.Add(fx.data[at : at+4096])
		}
	}
	f.Fuzz(func(t *testing.T, page []byte) {
		x := testIndexSized(256)
		const id = 3
		p := make([]byte, x.pageSize)
		copy(p, page)
		x.pages[id] = p
		data := x.bytes()
		files := byteSources("db", data, nil, nil)
		pf, fresh, err := openPageFile(files[0], files[1], files[2])
		if err != nil || fresh {
			return
		}
		pf.budget = 1 << 30
		done, fallbacks := map[string]int{}, map[string]int{}
		ids := &btree[struct{}, int64]{pf: pf, what: "ids", value: readI64, key: func(in dataInput) (struct{}, error) {
			_, err := readUTFBytes(in, nil)
			return struct{}{}, err
		}}
		skimAgrees(t, "message ids", ids, &skim{key: skimASCII, value: 8}, id, done, fallbacks, "ids")
		for _, v := range []int32{5, 6} {
			locs := &btree[codec.Location, int64]{pf: pf, what: "locations", value: readI64,
				key: func(in dataInput) (codec.Location, error) { return readLocationSize(in, v) }}
			skimAgrees(t, "locations", locs, &skim{key: skimFixed(locationBytes(v)), value: 8}, id, done, fallbacks, "locations")
			orderLeafAgrees(t, "order", pf, id, v, done, fallbacks)
		}
	})
}
