package kahaindex

import (
	"math/rand/v2"
	"testing"
)

// TestPageSet holds pageSet to a map: ids inside and outside the file's
// pages, few and many, and a set reset and used again.
func TestPageSet(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var s pageSet
	for round := range 200 {
		pages := int64(r.IntN(300))
		s.reset(pages)
		want := map[int64]bool{}
		n := r.IntN(3 * pageSetFew)
		if round%10 == 0 {
			n = 1000
		}
		for range n {
			id := int64(r.IntN(int(pages)+40)) - 20 // negative, inside, past the end
			if had := s.add(id); had != want[id] {
				t.Fatalf("round %d (pages %d): add(%d) reports %v, want %v", round, pages, id, had, want[id])
			}
			want[id] = true
			if s.count != len(want) {
				t.Fatalf("round %d: count %d, want %d", round, s.count, len(want))
			}
		}
	}
}
