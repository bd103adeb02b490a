package codec

import (
	"bytes"
	"fmt"
	"hash/adler32"
	"math/rand/v2"
	"testing"
)

// adlerLengths are lengths around every boundary of adler32Sum: the lane
// minimum, one and two words, a block of lanes, the bytewise NMAX, and long
// inputs that span several blocks.
func adlerLengths() []int {
	ls := []int{0, 1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33}
	for _, edge := range []int{adlerLaneMin, adlerChunk, adlerBlockBytes, 2 * adlerBlockBytes, adlerNMAX, 2 * adlerNMAX, 1 << 16} {
		for d := -17; d <= 17; d++ {
			if edge+d >= 0 {
				ls = append(ls, edge+d)
			}
		}
	}
	return append(ls, 100_000, 1<<20+3)
}

func TestAdler32MatchesStdlib(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 32))
	buf := make([]byte, 1<<20+3+8)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	for _, n := range adlerLengths() {
		for off := 0; off < 8; off += 3 { // unaligned starts
			b := buf[off : off+n]
			if got, want := adler32Sum(b), adler32.Checksum(b); got != want {
				t.Fatalf("len %d offset %d: got %#08x, want %#08x", n, off, got, want)
			}
		}
	}
}

// TestAdler32RandomLengths: many random lengths 0..100k at random offsets.
func TestAdler32RandomLengths(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 100_000+64)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	for i := 0; i < 2000; i++ {
		n := rng.IntN(100_001)
		off := rng.IntN(64)
		b := buf[off : off+n]
		if got, want := adler32Sum(b), adler32.Checksum(b); got != want {
			t.Fatalf("len %d offset %d: got %#08x, want %#08x", n, off, got, want)
		}
	}
}

// TestAdler32Extremes: all-0xff input maximises every lane (the overflow
// bound), all-zero input leaves s1 at 1.
func TestAdler32Extremes(t *testing.T) {
	for _, fill := range []byte{0x00, 0xff, 0x80} {
		for _, n := range adlerLengths() {
			b := bytes.Repeat([]byte{fill}, n)
			if got, want := adler32Sum(b), adler32.Checksum(b); got != want {
				t.Fatalf("fill %#x len %d: got %#08x, want %#08x", fill, n, got, want)
			}
		}
	}
}

// TestAdler32Update: continuing from a prefix's sum equals summing the whole,
// for split points on and off the word grid (non-trivial s1, s2 going into
// the lanes).
func TestAdler32Update(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	buf := make([]byte, 3*adlerBlockBytes+11)
	for i := range buf {
		buf[i] = byte(rng.Uint32()) | 0xf0
	}
	want := adler32.Checksum(buf)
	for _, cut := range []int{0, 1, 63, 64, 65, adlerBlockBytes + 5, len(buf) - 1, len(buf)} {
		if got := adler32Update(adler32Sum(buf[:cut]), buf[cut:]); got != want {
			t.Fatalf("cut %d: got %#08x, want %#08x", cut, got, want)
		}
	}
}

func FuzzAdler32(f *testing.F) {
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0xff}, adlerBlockBytes+9))
	f.Add([]byte("WRITE BATCH"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := adler32Sum(b), adler32.Checksum(b); got != want {
			t.Fatalf("len %d: got %#08x, want %#08x", len(b), got, want)
		}
		if len(b) > 0 {
			cut := int(b[0]) % len(b)
			if got, want := adler32Update(adler32Sum(b[:cut]), b[cut:]), adler32.Checksum(b); got != want {
				t.Fatalf("len %d cut %d: got %#08x, want %#08x", len(b), cut, got, want)
			}
		}
	})
}

// BenchmarkAdler32 compares adler32Sum with hash/adler32 on batch-sized
// inputs (a broker batch is up to 4 MiB; most are a few KiB).
func BenchmarkAdler32(b *testing.B) {
	for _, n := range []int{100, 300, 1 << 10, 4 << 10, 64 << 10, 1 << 20, 4 << 20} {
		data := make([]byte, n)
		rng := rand.New(rand.NewPCG(uint64(n), 1))
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		var sink uint32
		b.Run(fmt.Sprintf("kahafs/%d", n), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				sink += adler32Sum(data)
			}
		})
		b.Run(fmt.Sprintf("stdlib/%d", n), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				sink += adler32.Checksum(data)
			}
		})
		_ = sink
	}
}
