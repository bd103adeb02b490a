package codec

import "encoding/binary"

// Adler-32 (RFC 1950), the checksum of a batch's user records
// (java.util.zip.Adler32 in the broker). Part of the wire format.
//
// The journal reader verifies every batch, so this sits on the hot path of
// every command that reads a store. hash/adler32 adds one byte at a time:
// s1 += b; s2 += s1, a chain of dependent additions.
//
// Dispatch. On amd64 with AVX2 (golang.org/x/sys/cpu), adler32Update hands
// inputs of 32 bytes and more to the assembly in adler32_amd64.s, 32-byte
// vector blocks (the scheme is in adler32_amd64.go), about 15 times as fast
// as hash/adler32 from 1 KiB up. Shorter inputs, other CPUs and
// architectures, and builds with the purego tag (adler32_other.go) use
// adler32UpdateGo below, about three times as fast as hash/adler32: it adds
// eight bytes per step into independent lanes and folds the lanes into s1
// and s2 once per block.
//
// Lanes. Split the data into words of W = 8 bytes; byte j of word c is
// b[c][j]. For each lane j keep
//
//	A_j = Σ_c b[c][j]            (the lane's byte sum)
//	B_j = Σ_c A_j after word c   (the sum of the lane's running sums)
//
// Over n words (L = 8n bytes) starting from (s1, s2):
//
//	s1' = s1 + Σ_j A_j
//	s2' = s2 + L·s1 + W·Σ_j B_j − Σ_j j·A_j
//
// since the byte at position p = W·c + j is added to s2 L − p times, and
// Σ_c (n − c)·b[c][j] = B_j. W·B_j ≥ j·A_j, so the sum never goes negative.
// The eight lanes live in four uint64 words as pairs of 32-bit halves (lane
// g low, lane g+4 high: a little-endian word shifted by 8g and masked with
// 0x000000ff000000ff). B_j grows to 255·n(n+1)/2, which stays below 2^32
// (no carry from the low half into the high half) for n ≤ 5803 words.
//
// The inner loop is narrower still: 16 words at a time are added into 16-bit
// lanes (bytes 0, 2, 4, 6 and bytes 1, 3, 5, 7 of each word, masked with
// 0x00ff00ff00ff00ff), one mask and two additions per four bytes, and then
// widened into the 32-bit lanes.
const (
	adlerMod = 65521 // largest prime below 2^16
	// adlerNMAX is how many bytes the bytewise loop may add before s2 must
	// be reduced to stay below 2^32 (zlib's NMAX).
	adlerNMAX = 5552
	// adlerBlockBytes is how many bytes (8-byte words) the lanes add before
	// they are folded into s1 and s2: 5792 words, at most 5803 (see above),
	// and a multiple of adlerChunk.
	adlerBlockBytes = 362 * adlerChunk
	// adlerChunk: the inner loop adds 16 words into 16-bit lanes; their
	// running sums reach 255·16·17/2 = 34680 < 2^16.
	adlerChunk = 128
	// adlerLaneMin: shorter inputs are summed bytewise; folding the lanes
	// costs more than it saves below this (measured).
	adlerLaneMin = 64

	adlerMask8  = 0x000000ff000000ff // bytes j and j+4 of a word in 32-bit lanes
	adlerMask16 = 0x00ff00ff00ff00ff // bytes 0, 2, 4, 6 of a word in 16-bit lanes
	adlerMask32 = 0x0000ffff0000ffff // 16-bit lanes 0 and 2 widened to 32 bits
)

// adler32Sum returns the Adler-32 checksum of b: the same value as
// hash/adler32.Checksum(b).
func adler32Sum(b []byte) uint32 { return adler32Update(1, b) }

// adlerImpl is one implementation of adler32Update, for the tests and
// benchmarks to compare.
type adlerImpl struct {
	name   string
	update func(sum uint32, b []byte) uint32
}

// adler32UpdateGo is adler32Update in pure Go: the implementation on every
// architecture without an assembly one, under the purego tag, for inputs too
// short for the assembly; the tests compare it with hash/adler32 on every
// machine. Pure Go, it is about three times as fast as hash/adler32 from a
// few KiB up (twice from 300 B; the same below 128 B).
func adler32UpdateGo(sum uint32, b []byte) uint32 {
	s1, s2 := uint64(sum&0xffff), uint64(sum>>16)
	for len(b) >= adlerLaneMin {
		n := min(len(b)&^7, adlerBlockBytes)
		s1, s2 = adlerLanes(s1, s2, b[:n])
		b = b[n:]
	}
	s1, s2 = adlerBytes(s1, s2, b)
	return uint32(s2<<16 | s1)
}

// adlerBytes adds b one byte at a time (the textbook loop), reducing every
// adlerNMAX bytes. s1 and s2 come in and go out reduced.
func adlerBytes(s1, s2 uint64, b []byte) (uint64, uint64) {
	for len(b) > 0 {
		p := b[:min(len(b), adlerNMAX)]
		b = b[len(p):]
		for len(p) >= 4 {
			s1 += uint64(p[0])
			s2 += s1
			s1 += uint64(p[1])
			s2 += s1
			s1 += uint64(p[2])
			s2 += s1
			s1 += uint64(p[3])
			s2 += s1
			p = p[4:]
		}
		for _, c := range p {
			s1 += uint64(c)
			s2 += s1
		}
		s1 %= adlerMod
		s2 %= adlerMod
	}
	return s1, s2
}

// adlerLanes adds b (a whole number of words, at most adlerBlockBytes)
// through the eight lanes and folds them into s1 and s2 (both reduced on
// return). Lane pair g of a and c (g = 0..3) holds lanes g and g+4 as the
// low and high 32 bits: A_j in a, B_j in c.
func adlerLanes(s1, s2 uint64, b []byte) (uint64, uint64) {
	var a, c [4]uint64
	n := len(b) &^ (adlerChunk - 1)
	for i := 0; i < n; i += adlerChunk {
		aE, aO, cE, cO := adlerChunk16((*[adlerChunk]byte)(b[i:i+adlerChunk]), adlerMask16)
		// The 16 words add 16·A (the lanes before them) to B.
		c[0] += 16*a[0] + cE&adlerMask32
		c[1] += 16*a[1] + cO&adlerMask32
		c[2] += 16*a[2] + cE>>16&adlerMask32
		c[3] += 16*a[3] + cO>>16&adlerMask32
		a[0] += aE & adlerMask32
		a[1] += aO & adlerMask32
		a[2] += aE >> 16 & adlerMask32
		a[3] += aO >> 16 & adlerMask32
	}
	if k := (len(b) - n) / 8; k > 0 { // the last words, fewer than 16
		aE, aO, cE, cO := adlerWords(b[n:n+8*k], adlerMask16)
		kk := uint64(k)
		c[0] += kk*a[0] + cE&adlerMask32
		c[1] += kk*a[1] + cO&adlerMask32
		c[2] += kk*a[2] + cE>>16&adlerMask32
		c[3] += kk*a[3] + cO>>16&adlerMask32
		a[0] += aE & adlerMask32
		a[1] += aO & adlerMask32
		a[2] += aE >> 16 & adlerMask32
		a[3] += aO >> 16 & adlerMask32
	}
	var sumA, sumB, jA uint64
	for g := range a {
		sumA += lo32(a[g]) + hi32(a[g])
		sumB += lo32(c[g]) + hi32(c[g])
		jA += uint64(g)*lo32(a[g]) + uint64(g+4)*hi32(a[g])
	}
	s2 = (s2 + uint64(len(b))*s1 + 8*sumB - jA) % adlerMod
	s1 = (s1 + sumA) % adlerMod
	return s1, s2
}

// adlerChunk16 adds the 16 words of w into 16-bit lanes: aE holds the sums
// of bytes 0, 2, 4, 6 and aO of bytes 1, 3, 5, 7 of every word; cE and cO
// the sums of their running values (B within the chunk). mask is
// adlerMask16, passed in so that it stays in a register instead of being
// reloaded as an immediate at every use; noinline keeps this loop's few
// variables in registers (inlined, the caller's lanes crowd them out).
//
//go:noinline
func adlerChunk16(w *[adlerChunk]byte, mask uint64) (aE, aO, cE, cO uint64) {
	for j := 0; j < adlerChunk; j += 32 {
		x := binary.LittleEndian.Uint64(w[j:])
		y := binary.LittleEndian.Uint64(w[j+8:])
		aE += x & mask
		aO += x >> 8 & mask
		cE += aE
		cO += aO
		aE += y & mask
		aO += y >> 8 & mask
		cE += aE
		cO += aO
		x = binary.LittleEndian.Uint64(w[j+16:])
		y = binary.LittleEndian.Uint64(w[j+24:])
		aE += x & mask
		aO += x >> 8 & mask
		cE += aE
		cO += aO
		aE += y & mask
		aO += y >> 8 & mask
		cE += aE
		cO += aO
	}
	return aE, aO, cE, cO
}

// adlerWords is adlerChunk16 for fewer than 16 words (len(w) a multiple of 8).
//
//go:noinline
func adlerWords(w []byte, mask uint64) (aE, aO, cE, cO uint64) {
	for len(w) >= 8 {
		x := binary.LittleEndian.Uint64(w)
		aE += x & mask
		aO += x >> 8 & mask
		cE += aE
		cO += aO
		w = w[8:]
	}
	return aE, aO, cE, cO
}

func lo32(v uint64) uint64 { return v & 0xffffffff }
func hi32(v uint64) uint64 { return v >> 32 }
