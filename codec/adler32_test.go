package codec

import (
	"bytes"
	"encoding"
	"encoding/binary"
	"fmt"
	"hash/adler32"
	"math/rand/v2"
	"slices"
	"testing"
)

// adlerImpls are the implementations under test: the pure-Go code, the
// dispatching adler32Update, and every assembly version this CPU can run.
func adlerImpls(t testing.TB) []adlerImpl {
	impls := append([]adlerImpl{{"go", adler32UpdateGo}, {"dispatch", adler32Update}}, adlerArchImpls()...)
	if t != nil && len(impls) == 2 {
		t.Log("no assembly Adler-32 on this CPU/build: testing the pure-Go code only")
	}
	return impls
}

// adlerRef is hash/adler32 continued from sum (any 32 bits, even with a half
// not reduced), through its marshaled state.
func adlerRef(sum uint32, b []byte) uint32 {
	if sum == 1 {
		return adler32.Checksum(b)
	}
	h := adler32.New()
	state := binary.BigEndian.AppendUint32([]byte("adl\x01"), sum)
	if err := h.(encoding.BinaryUnmarshaler).UnmarshalBinary(state); err != nil {
		panic(err)
	}
	h.Write(b)
	return h.Sum32()
}

// adlerCheck compares every implementation with hash/adler32 on b from sum.
func adlerCheck(t *testing.T, impls []adlerImpl, what string, sum uint32, b []byte) {
	t.Helper()
	want := adlerRef(sum, b)
	for _, im := range impls {
		if got := im.update(sum, b); got != want {
			t.Fatalf("%s: %s: len %d from %#08x: got %#08x, want %#08x", im.name, what, len(b), sum, got, want)
		}
	}
}

// adlerCheckPrefixes is adlerCheck on b[:n] for every n in lengths (all at
// most len(b)), with hash/adler32 run once over b, the reference for each
// prefix continued from the one before.
func adlerCheckPrefixes(t *testing.T, impls []adlerImpl, what string, sum uint32, b []byte, lengths []int) {
	t.Helper()
	lengths = slices.Sorted(slices.Values(lengths))
	want, done := sum, 0
	for _, n := range lengths {
		want, done = adlerRef(want, b[done:n]), n
		for _, im := range impls {
			if got := im.update(sum, b[:n]); got != want {
				t.Fatalf("%s: %s: len %d from %#08x: got %#08x, want %#08x", im.name, what, n, sum, got, want)
			}
		}
	}
}

// adlerRandom returns n random bytes.
func adlerRandom(seed uint64, n int) []byte {
	rng := rand.New(rand.NewPCG(seed, 32))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// adlerAsmChunk is the assembly's chunk (bytes between reductions, besides
// a head of up to 31 bytes in the first).
const adlerAsmChunk = 5760

// adlerLengths are lengths around every boundary of the implementations:
// the pure-Go lane minimum, words, chunks and blocks, the bytewise NMAX, the
// assembly's 32-byte blocks, 128-byte loop and chunks, and long inputs that
// span several of each.
func adlerLengths() []int {
	ls := []int{0, 1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33}
	for _, edge := range []int{
		adlerLaneMin, adlerChunk, adlerBlockBytes, 2 * adlerBlockBytes,
		adlerNMAX, 2 * adlerNMAX, 3 * adlerNMAX,
		adlerAsmChunk, adlerAsmChunk + 31, 2 * adlerAsmChunk, 2*adlerAsmChunk + 31, 3 * adlerAsmChunk,
		1 << 16,
	} {
		for d := -40; d <= 40; d++ {
			if edge+d >= 0 {
				ls = append(ls, edge+d)
			}
		}
	}
	return append(ls, 100_000, 1<<20+3)
}

// TestAdler32MatchesStdlib: every length 0..1100 and every boundary length,
// from a few start offsets.
func TestAdler32MatchesStdlib(t *testing.T) {
	impls := adlerImpls(t)
	buf := adlerRandom(7, 1<<20+3+64)
	for n := 0; n <= 1100; n++ {
		for _, off := range []int{0, 1, 31} {
			adlerCheck(t, impls, fmt.Sprintf("offset %d", off), 1, buf[off:off+n])
		}
	}
	for _, off := range []int{0, 5, 33} {
		adlerCheckPrefixes(t, impls, fmt.Sprintf("offset %d", off), 1, buf[off:], adlerLengths())
	}
}

// TestAdler32Alignment: every start alignment 0..63 for short lengths and
// for lengths past a block, a 128-byte step and a chunk.
func TestAdler32Alignment(t *testing.T) {
	impls := adlerImpls(t)
	buf := adlerRandom(11, 2*adlerAsmChunk+200)
	lengths := []int{100, 127, 128, 129, 255, 1000, adlerAsmChunk + 17, 2*adlerAsmChunk + 95}
	for n := 0; n <= 70; n++ {
		lengths = append(lengths, n)
	}
	for off := 0; off < 64; off++ {
		for _, n := range lengths {
			adlerCheck(t, impls, fmt.Sprintf("offset %d", off), 1, buf[off:off+n])
		}
	}
}

// TestAdler32RandomLengths: random lengths up to 1 MiB at random offsets,
// from random sums.
func TestAdler32RandomLengths(t *testing.T) {
	impls := adlerImpls(t)
	rng := rand.New(rand.NewPCG(1, 2))
	buf := adlerRandom(2, 1<<20+64)
	count := 300
	if testing.Short() {
		count = 50
	}
	for i := 0; i < count; i++ {
		n := rng.IntN(1<<20 + 1)
		if i%2 == 0 {
			n = rng.IntN(20_000) // more of the short ones: more heads and tails
		}
		off := rng.IntN(64)
		sum := uint32(1)
		if i%3 == 0 {
			sum = rng.Uint32()
		}
		adlerCheck(t, impls, fmt.Sprintf("offset %d", off), sum, buf[off:off+n])
	}
}

// TestAdler32Extremes: all-0xff input from the largest sums maximises every
// lane and partial sum (the overflow bounds) and all-zero input leaves s1
// where it was, at lengths around multiples of NMAX, of the pure-Go lane
// block, of the assembly's blocks and chunks.
func TestAdler32Extremes(t *testing.T) {
	impls := adlerImpls(t)
	lengths := []int{100_000, 1<<20 + 3}
	for k := 1; k <= 4; k++ {
		for _, edge := range []int{k * adlerNMAX, k * adlerAsmChunk, k*adlerAsmChunk + 31, k * adlerBlockBytes, k * 32, k * 128} {
			for d := -33; d <= 33; d++ {
				if edge+d >= 0 {
					lengths = append(lengths, edge+d)
				}
			}
		}
	}
	maxSum := uint32(65520<<16 | 65520)
	for _, c := range []struct {
		fill byte
		sums []uint32
		step int // test every step-th length
	}{
		{0xff, []uint32{1, maxSum, 0xffffffff}, 1},
		{0x00, []uint32{1, 0, maxSum}, 5},
		{0x80, []uint32{1, maxSum}, 7},
	} {
		b := bytes.Repeat([]byte{c.fill}, 1<<20+3)
		var ls []int
		for i := 0; i < len(lengths); i += c.step {
			ls = append(ls, lengths[i])
		}
		for _, sum := range c.sums {
			adlerCheckPrefixes(t, impls, fmt.Sprintf("fill %#x", c.fill), sum, b, ls)
		}
	}
}

// TestAdler32Update: continuing from a prefix's sum equals summing the whole,
// for split points on and off the word and block grids (non-trivial s1, s2
// going into the lanes), and from arbitrary starting sums.
func TestAdler32Update(t *testing.T) {
	impls := adlerImpls(t)
	rng := rand.New(rand.NewPCG(3, 4))
	buf := adlerRandom(5, 3*adlerBlockBytes+11)
	for i := range buf {
		buf[i] |= 0xf0
	}
	for _, start := range []uint32{1, 0, 0x12345678, 65520<<16 | 65520, 0xffffffff, rng.Uint32(), rng.Uint32()} {
		want := adlerRef(start, buf)
		cuts := []int{0, 1, 31, 32, 33, 63, 64, 65, 127, 128, 129, adlerAsmChunk + 5, adlerBlockBytes + 5, len(buf) - 1, len(buf)}
		for range 20 {
			cuts = append(cuts, rng.IntN(len(buf)+1))
		}
		for _, im := range impls {
			for _, cut := range cuts {
				if got := im.update(im.update(start, buf[:cut]), buf[cut:]); got != want {
					t.Fatalf("%s: from %#08x, cut %d: got %#08x, want %#08x", im.name, start, cut, got, want)
				}
			}
			// Many short updates, as a caller feeding pieces would.
			sum := start
			for p := buf; len(p) > 0; {
				n := min(len(p), rng.IntN(200))
				sum = im.update(sum, p[:n])
				p = p[n:]
			}
			if sum != want {
				t.Fatalf("%s: from %#08x, in pieces: got %#08x, want %#08x", im.name, start, sum, want)
			}
		}
	}
	if got, want := adler32Update(adler32Sum(buf[:100]), buf[100:]), adler32.Checksum(buf); got != want {
		t.Fatalf("adler32Sum then adler32Update: got %#08x, want %#08x", got, want)
	}
}

// FuzzAdler32: every implementation against hash/adler32, whole, split at a
// point the input picks, and from a starting sum the input picks.
func FuzzAdler32(f *testing.F) {
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0xff}, adlerBlockBytes+9))
	f.Add(bytes.Repeat([]byte{0xff}, 2*adlerAsmChunk+31))
	f.Add([]byte("WRITE BATCH"))
	impls := adlerImpls(nil)
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := adler32Sum(b), adler32.Checksum(b); got != want {
			t.Fatalf("adler32Sum: len %d: got %#08x, want %#08x", len(b), got, want)
		}
		adlerCheck(t, impls, "whole", 1, b)
		if len(b) == 0 {
			return
		}
		cut := int(b[0]) % len(b)
		want := adler32.Checksum(b)
		for _, im := range impls {
			if got := im.update(im.update(1, b[:cut]), b[cut:]); got != want {
				t.Fatalf("%s: len %d cut %d: got %#08x, want %#08x", im.name, len(b), cut, got, want)
			}
		}
		if len(b) >= 4 {
			adlerCheck(t, impls, "from the first 4 bytes", binary.LittleEndian.Uint32(b), b[4:])
		}
	})
}

// BenchmarkAdler32 compares adler32Sum (kahafs: the dispatch, as the reader
// calls it), each implementation on its own and hash/adler32 on batch-sized
// inputs (a broker batch is up to 4 MiB; most are a few KiB).
func BenchmarkAdler32(b *testing.B) {
	impls := adlerImpls(b)
	for _, n := range []int{32, 64, 100, 300, 1 << 10, 4 << 10, 64 << 10, 1 << 20, 4 << 20} {
		data := adlerRandom(uint64(n), n)
		var sink uint32
		b.Run(fmt.Sprintf("kahafs/%d", n), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				sink += adler32Sum(data)
			}
		})
		for _, im := range impls {
			if im.name == "dispatch" {
				continue
			}
			b.Run(fmt.Sprintf("%s/%d", im.name, n), func(b *testing.B) {
				b.SetBytes(int64(n))
				for b.Loop() {
					sink += im.update(1, data)
				}
			})
		}
		b.Run(fmt.Sprintf("stdlib/%d", n), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				sink += adler32.Checksum(data)
			}
		})
		_ = sink
	}
}
