//go:build !purego

#include "textflag.h"

// Adler-32 with AVX2; the scheme is described in adler32_amd64.go.
//
// Registers:
//	AX s1, BX s2 (reduced between chunks)
//	SI the next byte, CX bytes left after the current chunk
//	DX, R9 bytes of the current chunk (R9 counts down)
//	R10 bytes of the head (added to the first chunk's length)
//	Y15 weights 32..1, Y14 sixteen 16-bit ones, Y13 zero
//	Y0 V (byte sums, four 64-bit lanes), Y1 P (V summed before each block),
//	Y2 W (weighted sums, eight 32-bit lanes)

// adlerTab: the weights 32, 31, ..., 1 and 32 zero bytes (the head's weights
// t, ..., 1, 0, ... are the 32 bytes at 32-t), then 32 bytes of 0xff and 32
// zero bytes (the head's mask of t bytes is the 32 bytes at 96-t).
DATA adlerTab<>+0x00(SB)/8, $0x191a1b1c1d1e1f20
DATA adlerTab<>+0x08(SB)/8, $0x1112131415161718
DATA adlerTab<>+0x10(SB)/8, $0x090a0b0c0d0e0f10
DATA adlerTab<>+0x18(SB)/8, $0x0102030405060708
DATA adlerTab<>+0x20(SB)/8, $0
DATA adlerTab<>+0x28(SB)/8, $0
DATA adlerTab<>+0x30(SB)/8, $0
DATA adlerTab<>+0x38(SB)/8, $0
DATA adlerTab<>+0x40(SB)/8, $-1
DATA adlerTab<>+0x48(SB)/8, $-1
DATA adlerTab<>+0x50(SB)/8, $-1
DATA adlerTab<>+0x58(SB)/8, $-1
DATA adlerTab<>+0x60(SB)/8, $0
DATA adlerTab<>+0x68(SB)/8, $0
DATA adlerTab<>+0x70(SB)/8, $0
DATA adlerTab<>+0x78(SB)/8, $0
GLOBL adlerTab<>(SB), RODATA|NOPTR, $128

// FOLD keeps r mod 65521 but makes it smaller, using 2^16 ≡ 15 (mod 65521):
// r = 15·(r>>16) + (r&0xffff). t is clobbered.
#define FOLD(r, t) \
	MOVQ  r, t; \
	SHRQ  $16, t; \
	ANDL  $0xffff, r; \
	IMULQ $15, t; \
	ADDQ  t, r

// CSUB reduces r < 2·65521 to r mod 65521. t is clobbered.
#define CSUB(r, t) \
	LEAQ    -65521(r), t; \
	CMPQ    r, $65521; \
	CMOVQCC t, r

// HSUM adds the eight 32-bit lanes of y (whose low half is x) into r
// (32 bits, zero-extended); tx is clobbered.
#define HSUM(y, x, tx, r) \
	VEXTRACTI128 $1, y, tx; \
	VPADDD       tx, x, x; \
	VPSHUFD      $0x4e, x, tx; \
	VPADDD       tx, x, x; \
	VPSHUFD      $0xb1, x, tx; \
	VPADDD       tx, x, x; \
	VMOVD        x, r

// func adler32AVX2(sum uint32, p []byte) uint32
TEXT ·adler32AVX2(SB), NOSPLIT, $0-36
	MOVL sum+0(FP), AX
	MOVQ p_base+8(FP), SI
	MOVQ p_len+16(FP), CX
	MOVL AX, BX
	SHRL $16, BX
	ANDL $0xffff, AX

	VMOVDQU  adlerTab<>+0x00(SB), Y15
	VPCMPEQW Y14, Y14, Y14
	VPSRLW   $15, Y14, Y14
	VPXOR    Y13, Y13, Y13
	VPXOR    Y0, Y0, Y0
	VPXOR    Y1, Y1, Y1
	VPXOR    Y2, Y2, Y2

	// The head: the first t = len%32 bytes, as the first 32 bytes masked to
	// t and weighted t..1. V and P are zero, so it is a block of its own.
	MOVQ CX, R10
	ANDQ $31, R10
	JZ   chunk
	LEAQ adlerTab<>+0x20(SB), R8
	SUBQ R10, R8
	VMOVDQU    (SI), Y4
	VPAND      0x40(R8), Y4, Y4
	VPSADBW    Y13, Y4, Y0
	VPMADDUBSW (R8), Y4, Y4
	VPMADDWD   Y14, Y4, Y2
	ADDQ       R10, SI
	SUBQ       R10, CX

chunk:
	// A chunk is at most 5760 bytes (plus the head): the lanes' share of
	// s2 is at most 255·n(n+1)/2 < 2^32 for n ≤ 5803.
	MOVQ    $5760, DX
	CMPQ    CX, DX
	CMOVQLT CX, DX
	SUBQ    DX, CX
	LEAQ    (DX)(R10*1), R8
	XORL    R10, R10
	IMULQ   AX, R8
	ADDQ    R8, BX // s2 += n·s1
	MOVQ    DX, R9

loop128:
	CMPQ R9, $128
	JLT  loop32
	VMOVDQU 0x00(SI), Y4
	VMOVDQU 0x20(SI), Y5
	VMOVDQU 0x40(SI), Y6
	VMOVDQU 0x60(SI), Y7
	VPSADBW Y13, Y4, Y8
	VPSADBW Y13, Y5, Y9
	VPSADBW Y13, Y6, Y10
	VPSADBW Y13, Y7, Y11
	VPADDD  Y0, Y1, Y1
	VPADDD  Y8, Y0, Y0
	VPADDD  Y0, Y1, Y1
	VPADDD  Y9, Y0, Y0
	VPADDD  Y0, Y1, Y1
	VPADDD  Y10, Y0, Y0
	VPADDD  Y0, Y1, Y1
	VPADDD  Y11, Y0, Y0
	VPMADDUBSW Y15, Y4, Y4
	VPMADDUBSW Y15, Y5, Y5
	VPMADDUBSW Y15, Y6, Y6
	VPMADDUBSW Y15, Y7, Y7
	// Two blocks' 16-bit pairs add without saturating: 2·255·(32+31) < 2^15.
	VPADDW   Y5, Y4, Y4
	VPADDW   Y7, Y6, Y6
	VPMADDWD Y14, Y4, Y4
	VPMADDWD Y14, Y6, Y6
	VPADDD   Y6, Y4, Y4
	VPADDD   Y4, Y2, Y2
	ADDQ     $128, SI
	SUBQ     $128, R9
	JMP      loop128

loop32:
	CMPQ R9, $32
	JLT  fold
	VMOVDQU    (SI), Y4
	VPSADBW    Y13, Y4, Y8
	VPADDD     Y0, Y1, Y1
	VPADDD     Y8, Y0, Y0
	VPMADDUBSW Y15, Y4, Y4
	VPMADDWD   Y14, Y4, Y4
	VPADDD     Y4, Y2, Y2
	ADDQ       $32, SI
	SUBQ       $32, R9
	JMP        loop32

fold:
	// s1 += ΣV, s2 += 32·ΣP + ΣW.
	VPSLLD $5, Y1, Y1
	VPADDD Y2, Y1, Y1
	HSUM(Y1, X1, X4, R8)
	HSUM(Y0, X0, X4, R11)
	ADDQ   R11, AX
	ADDQ   R8, BX
	// s1 < 2^21 needs one fold, s2 < 2^33 two, to come below 2·65521.
	FOLD(AX, R8)
	CSUB(AX, R8)
	FOLD(BX, R8)
	FOLD(BX, R8)
	CSUB(BX, R8)
	VPXOR  Y0, Y0, Y0
	VPXOR  Y1, Y1, Y1
	VPXOR  Y2, Y2, Y2
	TESTQ  CX, CX
	JNZ    chunk

	VZEROUPPER
	SHLL $16, BX
	ORL  BX, AX
	MOVL AX, ret+32(FP)
	RET
