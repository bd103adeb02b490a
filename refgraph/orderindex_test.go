package refgraph

import (
	"math/rand"
	"slices"
	"testing"

	"github.com/kahafs/kahafs/codec"
)

// TestOrderIndexMatchesMap runs seeded random adds, updates and deletes
// (dense runs, sparse leftovers, negative sequences) against a map.
func TestOrderIndexMatchesMap(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewSource(seed))
		var x orderIndex
		want := map[int64]entry{}
		next := int64(-100)
		// every field set, priorities a broker writes (0..9) and others
		// (a foreign store's: kept aside from the packed entry)
		prios := []int32{0, 4, 9, -1, 127, -128, 128, -129, 1 << 20, -1 << 31}
		rnd := func(e entry) entry {
			e.prio = prios[rng.Intn(len(prios))]
			e.loc = codec.Location{File: int32(rng.Intn(100)), Offset: rng.Int31(), Size: rng.Int31()}
			e.class = int8(rng.Intn(3))
			e.flags = uint8(rng.Intn(8))
			return e
		}
		for step := 0; step < 5000; step++ {
			switch r := rng.Intn(10); {
			case r < 5: // append, as a broker numbers messages
				e := rnd(entry{id: msgKey{uint32(rng.Intn(3)), next}, size: int32(step)})
				x.set(next, e)
				want[next] = e
				next += 1 + int64(rng.Intn(2))*int64(rng.Intn(200))
			case r < 6: // anywhere (an adopted index, a restored state)
				s := next - int64(rng.Intn(1000))
				e := rnd(entry{size: int32(-step)})
				x.set(s, e)
				want[s] = e
			default: // acks, mostly the oldest
				s := next - int64(rng.Intn(300))
				if rng.Intn(2) == 0 {
					for k := range want {
						s = k
						break
					}
				}
				if rng.Intn(2) == 0 {
					x.del(s)
				} else {
					got, ok := x.take(s)
					if w, wok := want[s]; ok != wok || got != w {
						t.Fatalf("seed %d step %d: take(%d) = %v, %v; want %v, %v", seed, step, s, got, ok, w, wok)
					}
				}
				delete(want, s)
			}
			if x.len() != len(want) {
				t.Fatalf("seed %d step %d: len %d, want %d", seed, step, x.len(), len(want))
			}
			// find, the writer's get, through the page last used (and
			// changing it) between the writes
			s := next - int64(rng.Intn(300))
			w, wok := want[s]
			if got, ok := x.find(s); ok != wok || got != w {
				t.Fatalf("seed %d step %d: find(%d) = %v, %v; want %v, %v", seed, step, s, got, ok, w, wok)
			}
		}
		for s, e := range want {
			if got, ok := x.get(s); !ok || got != e || !x.has(s) {
				t.Fatalf("seed %d: get(%d) = %v, %v; want %v", seed, s, got, ok, e)
			}
		}
		got := map[int64]entry{}
		x.each(func(s int64, e entry) {
			if _, dup := got[s]; dup {
				t.Fatalf("seed %d: each yields %d twice", seed, s)
			}
			got[s] = e
		})
		if len(got) != len(want) {
			t.Fatalf("seed %d: each yields %d entries, want %d", seed, len(got), len(want))
		}
		seqs := x.seqs()
		slices.Sort(seqs)
		var asc []int64
		x.ascending(func(s int64, e entry) {
			if want[s] != e {
				t.Fatalf("seed %d: ascending yields %d -> %v, want %v", seed, s, e, want[s])
			}
			asc = append(asc, s)
		})
		if !slices.Equal(asc, seqs) {
			t.Fatalf("seed %d: ascending yields %d sequences out of order", seed, len(asc))
		}
		for i := 1; i < len(seqs); i++ {
			if seqs[i] == seqs[i-1] {
				t.Fatalf("seed %d: seqs repeats %d", seed, seqs[i])
			}
		}
		for k, p := range x.pages {
			if p.bits == 0 || len(p.es) != popcount(p.bits) {
				t.Fatalf("seed %d: page %d: bits %b with %d entries", seed, k, p.bits, len(p.es))
			}
		}
		if _, ok := x.get(next + 1000); ok {
			t.Fatalf("seed %d: get of an absent sequence succeeds", seed)
		}
		wide := 0
		for _, e := range want {
			if e.prio != int32(int8(e.prio)) {
				wide++
			}
		}
		if len(x.prio) != wide {
			t.Fatalf("seed %d: %d priorities kept aside, want %d (the live wide ones)", seed, len(x.prio), wide)
		}
		var drained []int64
		x.drain(func(s int64, e entry) {
			if want[s] != e {
				t.Fatalf("seed %d: drain yields %d -> %v, want %v", seed, s, e, want[s])
			}
			drained = append(drained, s)
		})
		if !slices.Equal(drained, seqs) || x.len() != 0 || len(x.pages) != 0 {
			t.Fatalf("seed %d: drain yields %d of %d sequences and leaves %d entries", seed, len(drained), len(seqs), x.len())
		}
	}
}

func popcount(b uint64) int {
	n := 0
	for ; b != 0; b &= b - 1 {
		n++
	}
	return n
}

// TestIDIndexMatchesMap checks idIndex against a map, with keys that pack
// and keys that do not (whole-id prefixes, large sequences and prefixes).
func TestIDIndexMatchesMap(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	var x idIndex
	want := map[msgKey]int64{}
	keys := []msgKey{{0, 0}, {0, -1}, {1<<packPrefixBits - 1, 1<<packSeqBits - 1}, {1 << packPrefixBits, 5}, {3, 1 << packSeqBits}, {7, 1<<62 + 3}}
	for i := 0; i < 2000; i++ {
		keys = append(keys, msgKey{uint32(rng.Intn(5)), int64(rng.Intn(500))})
	}
	for step := 0; step < 20000; step++ {
		k := keys[rng.Intn(len(keys))]
		switch r := rng.Intn(6); {
		case r == 0:
			x.del(k)
			delete(want, k)
		case r == 1:
			got, ok := x.take(k)
			w, wok := want[k]
			if got != w || ok != wok {
				t.Fatalf("step %d: take(%v) = %d, %v; want %d, %v", step, k, got, ok, w, wok)
			}
			delete(want, k)
		case r == 2:
			seq := int64(step)
			if rng.Intn(10) == 0 {
				seq = int64(rng.Intn(3)-1) << 40
			}
			prev, dup := x.add(k, seq)
			w, wok := want[k]
			if dup != wok || dup && prev != w {
				t.Fatalf("step %d: add(%v) = %d, %v; want %d, %v", step, k, prev, dup, w, wok)
			}
			if !wok {
				want[k] = seq
			}
		default:
			// mostly near the others, sometimes too far from a page's
			// base for a 32-bit difference (kept in the map, and back)
			seq := int64(step)
			if rng.Intn(10) == 0 {
				seq = int64(rng.Intn(3)-1) << 40
			}
			x.set(k, seq)
			want[k] = seq
		}
		if x.len() != len(want) {
			t.Fatalf("step %d: len %d, want %d", step, x.len(), len(want))
		}
		// find, the writer's get, through the pages last used (and
		// changing them) between the writes
		k = keys[rng.Intn(len(keys))]
		w, wok := want[k]
		if got, ok := x.find(k); got != w || ok != wok {
			t.Fatalf("step %d: find(%v) = %d, %v; want %d, %v", step, k, got, ok, w, wok)
		}
	}
	if x.recent == nil {
		t.Fatalf("the index of %d pages has no recent pages", len(x.pages))
	}
	for _, k := range keys {
		got, ok := x.get(k)
		w, wok := want[k]
		if got != w || ok != wok {
			t.Fatalf("get(%v) = %d, %v; want %d, %v", k, got, ok, w, wok)
		}
	}
	n := 0
	x.each(func(k msgKey, s int64) {
		n++
		if w, ok := want[k]; !ok || w != s {
			t.Fatalf("each yields %v -> %d; want %d, %v", k, s, w, ok)
		}
	})
	if n != len(want) {
		t.Fatalf("each yields %d ids, want %d", n, len(want))
	}
	inPages := 0
	for key, pg := range x.pages {
		if pg.bits == 0 || len(pg.delta) != popcount(pg.bits) {
			t.Fatalf("page %d: bits %b with %d sequences", key, pg.bits, len(pg.delta))
		}
		inPages += len(pg.delta)
	}
	if inPages != x.n || inPages+len(x.other) != len(want) || len(x.other) == 0 {
		t.Fatalf("%d ids in pages (n %d) and %d in the map, want %d in all and some in the map", inPages, x.n, len(x.other), len(want))
	}
}
