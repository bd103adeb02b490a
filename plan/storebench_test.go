package plan

import (
	"os"
	"testing"

	"github.com/kahafs/kahafs/store"
)

// BenchmarkMakeStore makes the plan of the store named by
// KAHAFS_BENCH_STORE (a bench store: bench/, BENCHMARKS.md), its replay
// done once before timing: the cleanup emulation run for every candidate
// action and the greedy combination's trials, which the mount's first
// listing and kahafs plan wait for.
func BenchmarkMakeStore(b *testing.B) {
	dir := os.Getenv("KAHAFS_BENCH_STORE")
	if dir == "" {
		b.Skip("KAHAFS_BENCH_STORE (a store directory) is not set")
	}
	l, err := store.Locate(dir)
	if err != nil {
		b.Fatal(err)
	}
	a, err := store.Analyse(l, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Make(dir, a.Graph); err != nil {
			b.Fatal(err)
		}
	}
}
