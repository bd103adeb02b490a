package refgraph

import (
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"testing"

	"github.com/kahafs/kahafs/codec"
)

// heldStore is a store's decoded commands and file summaries held in
// memory, for timing the replay alone.
type heldStore struct {
	recs []codec.Record
	cmds []codec.Command
	sums []codec.FileSummary
	at   []int // at[i]: records before file i's FileDone
}

// holdVisitor copies every record into an arena and decodes it again
// there, so the commands outlive the reader's buffers.
type holdVisitor struct {
	h     *heldStore
	arena []byte
}

func (v *holdVisitor) Command(rec codec.Record, _ *codec.Command) error {
	if len(v.arena) < len(rec.Data) {
		v.arena = make([]byte, max(64<<20, len(rec.Data)))
	}
	data := v.arena[:len(rec.Data):len(rec.Data)]
	copy(data, rec.Data)
	v.arena = v.arena[len(rec.Data):]
	rec.Data = data
	var c codec.Command
	if err := codec.DecodeRecord("", rec, &c); err != nil {
		return err
	}
	v.h.recs = append(v.h.recs, rec)
	v.h.cmds = append(v.h.cmds, c)
	return nil
}

func (v *holdVisitor) FileDone(sum *codec.FileSummary) error {
	v.h.sums = append(v.h.sums, *sum)
	v.h.at = append(v.h.at, len(v.h.recs))
	return nil
}

// BenchmarkReplayStore replays the store named by KAHAFS_BENCH_STORE from
// memory: the replay's own CPU (the main goroutine of holders), without
// reading, checksums or decoding, which run beside it on other cores.
// For comparing changes to the replay: go test ./refgraph -run XXX
// -bench ReplayStore -count 6, with a bench store (bench/, BENCHMARKS.md);
// KAHAFS_BENCH_FILES=N replays its first N files only;
// KAHAFS_BENCH_INDEX=1 adopts the store's index.
func BenchmarkReplayStore(b *testing.B) {
	dir := os.Getenv("KAHAFS_BENCH_STORE")
	if dir == "" {
		b.Skip("KAHAFS_BENCH_STORE (a store directory) is not set")
	}
	st, err := codec.OpenStore(dir)
	if err != nil {
		b.Fatal(err)
	}
	files := st.Files
	if n, err := strconv.Atoi(os.Getenv("KAHAFS_BENCH_FILES")); err == nil && n > 0 && n < len(files) {
		files = files[:n] // its first files: a store too
	}
	// the collector off while timing (the held commands would make it
	// scan gigabytes that holders does not have), and run between rounds
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	h := &heldStore{}
	if err := codec.ReadFiles(files, codec.ReadOptions{}, 0, &holdVisitor{h: h}); err != nil {
		b.Fatal(err)
	}
	var size int64
	for _, f := range files {
		size += f.Size
	}
	b.SetBytes(size)
	b.ReportAllocs()
	b.ReportMetric(float64(len(h.recs)), "records")
	// KAHAFS_BENCH_INDEX=1: with the store's index (db.data), as holders
	// adopts it (read on a goroutine of its own, records read by location)
	var opts Options
	if os.Getenv("KAHAFS_BENCH_INDEX") == "1" {
		opts = StoreOptions(st, true, nil)
	}
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		runtime.GC()
		b.StartTimer()
		bl := NewBuilder(opts)
		i := 0
		for f, end := range h.at {
			for ; i < end; i++ {
				if err := bl.Command(h.recs[i], &h.cmds[i]); err != nil {
					b.Fatal(err)
				}
			}
			if err := bl.FileDone(&h.sums[f]); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := bl.Build(); err != nil {
			b.Fatal(err)
		}
	}
}
