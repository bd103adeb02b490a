package kahaindex

import (
	"os"
	"testing"
)

// BenchmarkStreamStore streams the index of the store named by
// KAHAFS_BENCH_STORE (a bench store, BENCHMARKS.md) to a sink that only
// counts: the reading of db.data alone, as refgraph's feed does it.
func BenchmarkStreamStore(b *testing.B) {
	dir := os.Getenv("KAHAFS_BENCH_STORE")
	if dir == "" {
		b.Skip("KAHAFS_BENCH_STORE (a store directory with db.data) is not set")
	}
	if fi, err := os.Stat(dir + "/db.data"); err != nil {
		b.Skip(err)
	} else {
		b.SetBytes(fi.Size())
	}
	for range b.N {
		n := 0
		if _, err := Stream(dir, Sink{Message: func(*Destination, *StreamMessage) { n++ }}); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(n), "messages")
	}
}
