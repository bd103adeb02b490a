//go:build !purego

package codec

import "golang.org/x/sys/cpu"

// The AVX2 Adler-32 (adler32_amd64.s) takes 32-byte blocks. For block k of
// a chunk of n blocks (L = 32n bytes) starting from (s1, s2),
//
//	s1' = s1 + Σ_k S_k
//	s2' = s2 + L·s1 + 32·Σ_k Σ_{j<k} S_j + Σ_k Σ_i (32 − i)·b_k[i]
//
// where S_k is the block's byte sum: byte i of block k is added to s2 once
// for every byte from it to the end, 32·(n − 1 − k) + 32 − i times. In
// vector lanes, per block: V += VPSADBW(x, 0) (S_k in four 64-bit lanes),
// but first P += V (the sums of the blocks before it); and W += the byte
// products with the weights 32..1 (VPMADDUBSW into 16-bit pairs, VPMADDWD
// with ones into eight 32-bit lanes). At the end of the chunk the lanes are
// added up, P shifted left by 5, and s1 and s2 (64-bit registers, L·s1
// included) reduced modulo 65521. A chunk is at most 5760 bytes, plus up to
// 31 of a head in the first: all the lanes add to s2 is at most
// 255·L(L+1)/2 < 2^32 for L ≤ 5803, so no 32-bit lane, nor their sum,
// overflows. The first t = len%32 bytes are a head block of their own: the
// first 32 bytes masked to t and weighted t..1, so that no byte is left for
// scalar code.

// useAVX2: the CPU (and OS) support AVX2.
var useAVX2 = cpu.X86.HasAVX2

// adlerAsmMin is the shortest input given to the assembly, which loads 32
// bytes at a time. It is already faster than the pure-Go code at 32 bytes
// (measured: twice as fast), so the dispatch uses it from there on.
const adlerAsmMin = 32

// adler32AVX2 is adler32Update for len(p) ≥ 32 on a CPU with AVX2.
//
//go:noescape
func adler32AVX2(sum uint32, p []byte) uint32

// adler32Update continues the checksum sum (as returned for a prefix) over b.
func adler32Update(sum uint32, b []byte) uint32 {
	if useAVX2 && len(b) >= adlerAsmMin {
		return adler32AVX2(sum, b)
	}
	return adler32UpdateGo(sum, b)
}

// adlerArchImpls lists the assembly implementations this CPU can run, each
// callable on any input, for the tests and benchmarks.
func adlerArchImpls() []adlerImpl {
	if !useAVX2 {
		return nil
	}
	return []adlerImpl{{"avx2", func(sum uint32, b []byte) uint32 {
		if len(b) < 32 {
			return adler32UpdateGo(sum, b)
		}
		return adler32AVX2(sum, b)
	}}}
}
