//go:build amd64 && !purego

#include "textflag.h"

// AVX-512 kernels. Each processes 8 float64 lanes per zmm register, with the
// last len%8 cells under a k-mask (masked loads do not fault beyond a slice).
// The Go references in kernel.go define the results.

// Constants of the vectorised exp (see EXP8).
DATA expc<>+0(SB)/8, $0x3FF71547652B82FE   // 1/ln2
DATA expc<>+8(SB)/8, $0xBFE62E42FEFA39EF   // -ln2hi (ln2 rounded to double)
DATA expc<>+16(SB)/8, $0xBC7ABC9E3B39803F  // -ln2lo (ln2 - ln2hi)
DATA expc<>+24(SB)/8, $0x3FE0000000000001  // c2
DATA expc<>+32(SB)/8, $0x3FC5555555555556  // c3
DATA expc<>+40(SB)/8, $0x3FA5555555553D63  // c4
DATA expc<>+48(SB)/8, $0x3F811111111109B3  // c5
DATA expc<>+56(SB)/8, $0x3F56C16C1788BD90  // c6
DATA expc<>+64(SB)/8, $0x3F2A01A01A7C41D5  // c7
DATA expc<>+72(SB)/8, $0x3EFA019B90D2AE7A  // c8
DATA expc<>+80(SB)/8, $0x3EC71DE0DAE63BB3  // c9
DATA expc<>+88(SB)/8, $0x3E9289185613A3D6  // c10
DATA expc<>+96(SB)/8, $0x3E5AF38A9B0EC855  // c11
DATA expc<>+104(SB)/8, $0x3FF0000000000000 // 1
DATA expc<>+112(SB)/8, $0xC087500000000000 // -746: exp underflows to 0 below
DATA expc<>+120(SB)/8, $0x4086300000000000 // 710: exp overflows to +Inf above
DATA expc<>+128(SB)/8, $0xFFF0000000000000 // -Inf
GLOBL expc<>(SB), RODATA|NOPTR, $136

DATA iota32<>+0(SB)/4, $0
DATA iota32<>+4(SB)/4, $1
DATA iota32<>+8(SB)/4, $2
DATA iota32<>+12(SB)/4, $3
DATA iota32<>+16(SB)/4, $4
DATA iota32<>+20(SB)/4, $5
DATA iota32<>+24(SB)/4, $6
DATA iota32<>+28(SB)/4, $7
GLOBL iota32<>(SB), RODATA|NOPTR, $32

// EXP_CONSTS loads the exp constants into Z16–Z31.
#define EXP_CONSTS \
	VBROADCASTSD expc<>+0(SB), Z16; \
	VBROADCASTSD expc<>+8(SB), Z17; \
	VBROADCASTSD expc<>+16(SB), Z18; \
	VBROADCASTSD expc<>+24(SB), Z19; \
	VBROADCASTSD expc<>+32(SB), Z20; \
	VBROADCASTSD expc<>+40(SB), Z21; \
	VBROADCASTSD expc<>+48(SB), Z22; \
	VBROADCASTSD expc<>+56(SB), Z23; \
	VBROADCASTSD expc<>+64(SB), Z24; \
	VBROADCASTSD expc<>+72(SB), Z25; \
	VBROADCASTSD expc<>+80(SB), Z26; \
	VBROADCASTSD expc<>+88(SB), Z27; \
	VBROADCASTSD expc<>+96(SB), Z28; \
	VBROADCASTSD expc<>+104(SB), Z29; \
	VBROADCASTSD expc<>+112(SB), Z30; \
	VBROADCASTSD expc<>+120(SB), Z31

// EXP8 computes e^d for the 8 lanes of d as p·2^k: the caller finishes with
// VSCALEFPD k, p, dst, which scales exactly and rounds once, so results that
// underflow become the correctly rounded subnormal or 0 and those that
// overflow +Inf. d is clamped to [-746, 710] first (VMAXPD/VMINPD return
// their second source, d, when it is NaN, so NaN propagates; -Inf gives 0).
// k = round(d/ln2), r = d - k·ln2 in two FMA steps (the first is exact), and
// e^r on |r| ≤ ln2/2 is the degree-11 polynomial 1 + r + c2 r² + … + c11 r¹¹
// (a Chebyshev fit of (e^r - 1 - r)/r², error below 2e-17 relative). d is
// clobbered (it ends as r).
#define EXP8(d, k, p) \
	VMAXPD d, Z30, d; \
	VMINPD d, Z31, d; \
	VMULPD Z16, d, k; \
	VRNDSCALEPD $0, k, k; \
	VFMADD231PD Z17, k, d; \
	VFMADD231PD Z18, k, d; \
	VMOVAPD Z28, p; \
	VFMADD213PD Z27, d, p; \
	VFMADD213PD Z26, d, p; \
	VFMADD213PD Z25, d, p; \
	VFMADD213PD Z24, d, p; \
	VFMADD213PD Z23, d, p; \
	VFMADD213PD Z22, d, p; \
	VFMADD213PD Z21, d, p; \
	VFMADD213PD Z20, d, p; \
	VFMADD213PD Z19, d, p; \
	VFMADD213PD Z29, d, p; \
	VFMADD213PD Z29, d, p

// TAILMASK sets k to the low n bits (n < 8 in r), using AX.
#define TAILMASK(r, k) \
	MOVL $0xff, AX; \
	BZHIL r, AX, AX; \
	KMOVW AX, k

// HSUM leaves in the low lane of X(z) the sum of the 8 lanes of z, using Z(t).
#define HSUM(z, y, x, tz, ty, tx) \
	VEXTRACTF64X4 $1, z, ty; \
	VADDPD ty, y, y; \
	VEXTRACTF128 $1, y, tx; \
	VADDPD tx, x, x; \
	VPERMILPD $1, x, tx; \
	VADDSD tx, x, x

// HMAX is HSUM with max; no lane may be NaN.
#define HMAX(z, y, x, tz, ty, tx) \
	VEXTRACTF64X4 $1, z, ty; \
	VMAXPD ty, y, y; \
	VEXTRACTF128 $1, y, tx; \
	VMAXPD tx, x, x; \
	VPERMILPD $1, x, tx; \
	VMAXSD tx, x, x

// GATHER_SETUP prepares the index checks and the run detection of GATHER8:
// SI = src, AX = R11 = len(src), Y15 = len(src) in each lane, Y14 = 0…7,
// Y10 = 8 in each lane, Y13 = the previous chunk's indices (none yet), K3 =
// lanes found in range so far.
#define GATHER_SETUP \
	MOVQ AX, R11; \
	VPBROADCASTD AX, Y15; \
	VMOVDQU32 iota32<>(SB), Y14; \
	MOVL $8, R9; \
	VPBROADCASTD R9, Y10; \
	VPCMPEQD Y13, Y13, Y13; \
	KXNORW K3, K3, K3

// GATHER8 loads src[idx[BX+j]], j < 8, into Z12 (DX = idx). Chunks whose
// indices equal the previous chunk's (broadcast pairs, say) reuse Z12;
// chunks whose indices lie in [idx[BX], idx[BX]+8) — consecutive ones, or
// each value repeated along a dropped inner axis — are one load and a
// permutation; others are gathered. Every path loads the same values.
// Indices outside [0, len(src)) are not read and clear their lane in K3.
// Uses Y0, Y1, K1, K2, R9, R10 and the labels g8have and g8gather.
#define GATHER8 \
	VMOVDQU32 (DX)(BX*4), Y0; \
	VPCMPUD $1, Y15, Y0, K1; \
	KANDW K1, K3, K3; \
	VPCMPEQD Y13, Y0, K2; \
	KORTESTB K2, K2; \
	JC g8have; \
	VMOVDQA32 Y0, Y13; \
	VPBROADCASTD X0, Y1; \
	VPSUBD Y1, Y0, Y1; \
	VPCMPUD $1, Y10, Y1, K2; \
	KORTESTB K2, K2; \
	JCC g8gather; \
	VMOVD X0, R9; \
	LEAQ 8(R9), R10; \
	CMPQ R10, R11; \
	JA g8gather; \
	VPMOVZXDQ Y1, Z1; \
	VPERMPD (SI)(R9*8), Z1, Z12; \
	JMP g8have; \
g8gather: \
	VGATHERDPD (SI)(Y0*8), K1, Z12; \
g8have:

// GATHER_TAIL loads the n = R8 < 8 remaining cells' src[idx] into Z12 under
// K2 (which it sets), gathering; uses Y0, K1, K5 and AX.
#define GATHER_TAIL \
	TAILMASK(R8, K2); \
	VMOVDQU32.Z (DX)(BX*4), K2, Y0; \
	VPCMPUD $1, Y15, Y0, K2, K1; \
	KXNORW K1, K2, K5; \
	KANDW K5, K3, K3; \
	VGATHERDPD (SI)(Y0*8), K1, Z12

// GATHER_OK sets ZF if every index was in range (SETEQ ok stores it).
#define GATHER_OK \
	KMOVW K3, AX; \
	CMPB AX, $0xff

// func expShiftTotalAVX512(x []float64, s float64) (sum float64)
TEXT ·expShiftTotalAVX512(SB), NOSPLIT, $0-40
	MOVQ x_base+0(FP), DI
	MOVQ x_len+8(FP), CX
	VBROADCASTSD s+24(FP), Z15
	EXP_CONSTS
	VPXORQ Z10, Z10, Z10
	VPXORQ Z11, Z11, Z11
	XORQ BX, BX
	MOVQ CX, DX
	ANDQ $-16, DX
	JZ est8

est16:
	VMOVUPD (DI)(BX*8), Z0
	VMOVUPD 64(DI)(BX*8), Z3
	VSUBPD Z15, Z0, Z0
	VSUBPD Z15, Z3, Z3
	EXP8(Z0, Z1, Z2)
	EXP8(Z3, Z4, Z5)
	VSCALEFPD Z1, Z2, Z2
	VSCALEFPD Z4, Z5, Z5
	VMOVUPD Z2, (DI)(BX*8)
	VMOVUPD Z5, 64(DI)(BX*8)
	VADDPD Z2, Z10, Z10
	VADDPD Z5, Z11, Z11
	ADDQ $16, BX
	CMPQ BX, DX
	JB est16

est8:
	LEAQ 8(BX), DX
	CMPQ DX, CX
	JA estTail
	VMOVUPD (DI)(BX*8), Z0
	VSUBPD Z15, Z0, Z0
	EXP8(Z0, Z1, Z2)
	VSCALEFPD Z1, Z2, Z2
	VMOVUPD Z2, (DI)(BX*8)
	VADDPD Z2, Z10, Z10
	MOVQ DX, BX

estTail:
	MOVQ CX, R8
	SUBQ BX, R8
	JZ estDone
	TAILMASK(R8, K1)
	VMOVUPD.Z (DI)(BX*8), K1, Z0
	VSUBPD Z15, Z0, Z0
	EXP8(Z0, Z1, Z2)
	VSCALEFPD Z1, Z2, Z2
	VMOVUPD Z2, K1, (DI)(BX*8)
	VADDPD Z2, Z10, K1, Z10

estDone:
	VADDPD Z11, Z10, Z10
	HSUM(Z10, Y10, X10, Z1, Y1, X1)
	VMOVSD X10, sum+32(FP)
	VZEROUPPER
	RET

// func expandAVX512(dst, src []float64, idx []int32) (ok bool)
TEXT ·expandAVX512(SB), NOSPLIT, $0-73
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ src_base+24(FP), SI
	MOVQ src_len+32(FP), AX
	MOVQ idx_base+48(FP), DX
	GATHER_SETUP
	XORQ BX, BX

expLoop:
	LEAQ 8(BX), R8
	CMPQ R8, CX
	JA expTail
	GATHER8
	VADDPD (DI)(BX*8), Z12, Z2
	VMOVUPD Z2, (DI)(BX*8)
	MOVQ R8, BX
	JMP expLoop

expTail:
	MOVQ CX, R8
	SUBQ BX, R8
	JZ expDone
	GATHER_TAIL
	VMOVUPD.Z (DI)(BX*8), K2, Z2
	VADDPD Z2, Z12, Z2
	VMOVUPD Z2, K2, (DI)(BX*8)

expDone:
	GATHER_OK
	SETEQ ok+72(FP)
	VZEROUPPER
	RET

// func scaleAVX512(x, f []float64, idx []int32) (ok bool)
TEXT ·scaleAVX512(SB), NOSPLIT, $0-73
	MOVQ x_base+0(FP), DI
	MOVQ x_len+8(FP), CX
	MOVQ f_base+24(FP), SI
	MOVQ f_len+32(FP), AX
	MOVQ idx_base+48(FP), DX
	GATHER_SETUP
	XORQ BX, BX

scLoop:
	LEAQ 8(BX), R8
	CMPQ R8, CX
	JA scTail
	GATHER8
	VMULPD (DI)(BX*8), Z12, Z2
	VMOVUPD Z2, (DI)(BX*8)
	MOVQ R8, BX
	JMP scLoop

scTail:
	MOVQ CX, R8
	SUBQ BX, R8
	JZ scDone
	GATHER_TAIL
	VMOVUPD.Z (DI)(BX*8), K2, Z2
	VMULPD Z2, Z12, Z2
	VMOVUPD Z2, K2, (DI)(BX*8)

scDone:
	GATHER_OK
	SETEQ ok+72(FP)
	VZEROUPPER
	RET

// func expShiftGatherAVX512(x, shift []float64, idx []int32) (ok bool)
TEXT ·expShiftGatherAVX512(SB), NOSPLIT, $0-73
	MOVQ x_base+0(FP), DI
	MOVQ x_len+8(FP), CX
	MOVQ shift_base+24(FP), SI
	MOVQ shift_len+32(FP), AX
	MOVQ idx_base+48(FP), DX
	GATHER_SETUP
	EXP_CONSTS
	VBROADCASTSD expc<>+128(SB), Z11
	XORQ BX, BX

esgLoop:
	LEAQ 8(BX), R8
	CMPQ R8, CX
	JA esgTail
	GATHER8
	VMOVUPD (DI)(BX*8), Z2
	VCMPPD $4, Z11, Z12, K4 // shift != -Inf
	VSUBPD Z12, Z2, Z2
	EXP8(Z2, Z3, Z4)
	VSCALEFPD.Z Z3, Z4, K4, Z4
	VMOVUPD Z4, (DI)(BX*8)
	MOVQ R8, BX
	JMP esgLoop

esgTail:
	MOVQ CX, R8
	SUBQ BX, R8
	JZ esgDone
	GATHER_TAIL
	VMOVUPD.Z (DI)(BX*8), K2, Z2
	VCMPPD $4, Z11, Z12, K4
	VSUBPD Z12, Z2, Z2
	EXP8(Z2, Z3, Z4)
	VSCALEFPD.Z Z3, Z4, K4, Z4
	VMOVUPD Z4, K2, (DI)(BX*8)

esgDone:
	GATHER_OK
	SETEQ ok+72(FP)
	VZEROUPPER
	RET

// func maxAVX512(x []float64) float64
TEXT ·maxAVX512(SB), NOSPLIT, $0-32
	MOVQ x_base+0(FP), SI
	MOVQ x_len+8(FP), CX
	VBROADCASTSD expc<>+128(SB), Z0
	VMOVAPD Z0, Z1
	VMOVAPD Z0, Z2
	VMOVAPD Z0, Z3
	XORQ BX, BX
	MOVQ CX, DX
	ANDQ $-32, DX
	JZ max8

max32:
	VMOVUPD (SI)(BX*8), Z4
	VMOVUPD 64(SI)(BX*8), Z5
	VMOVUPD 128(SI)(BX*8), Z6
	VMOVUPD 192(SI)(BX*8), Z7
	VMAXPD Z0, Z4, Z0 // v > m ? v : m, so NaNs are skipped
	VMAXPD Z1, Z5, Z1
	VMAXPD Z2, Z6, Z2
	VMAXPD Z3, Z7, Z3
	ADDQ $32, BX
	CMPQ BX, DX
	JB max32

max8:
	LEAQ 8(BX), DX
	CMPQ DX, CX
	JA maxTail
	VMOVUPD (SI)(BX*8), Z4
	VMAXPD Z0, Z4, Z0
	MOVQ DX, BX
	JMP max8

maxTail:
	MOVQ CX, R8
	SUBQ BX, R8
	JZ maxDone
	TAILMASK(R8, K1)
	VMOVUPD.Z (SI)(BX*8), K1, Z4
	VMAXPD Z0, Z4, K1, Z0

maxDone:
	VMAXPD Z1, Z0, Z0
	VMAXPD Z3, Z2, Z2
	VMAXPD Z2, Z0, Z0
	HMAX(Z0, Y0, X0, Z1, Y1, X1)
	VMOVSD X0, ret+24(FP)
	VZEROUPPER
	RET

// func scaleAllAVX512(x []float64, a float64)
TEXT ·scaleAllAVX512(SB), NOSPLIT, $0-32
	MOVQ x_base+0(FP), DI
	MOVQ x_len+8(FP), CX
	VBROADCASTSD a+24(FP), Z15
	XORQ BX, BX
	MOVQ CX, DX
	ANDQ $-32, DX
	JZ sa8

sa32:
	VMULPD (DI)(BX*8), Z15, Z0
	VMULPD 64(DI)(BX*8), Z15, Z1
	VMULPD 128(DI)(BX*8), Z15, Z2
	VMULPD 192(DI)(BX*8), Z15, Z3
	VMOVUPD Z0, (DI)(BX*8)
	VMOVUPD Z1, 64(DI)(BX*8)
	VMOVUPD Z2, 128(DI)(BX*8)
	VMOVUPD Z3, 192(DI)(BX*8)
	ADDQ $32, BX
	CMPQ BX, DX
	JB sa32

sa8:
	LEAQ 8(BX), DX
	CMPQ DX, CX
	JA saTail
	VMULPD (DI)(BX*8), Z15, Z0
	VMOVUPD Z0, (DI)(BX*8)
	MOVQ DX, BX
	JMP sa8

saTail:
	MOVQ CX, R8
	SUBQ BX, R8
	JZ saDone
	TAILMASK(R8, K1)
	VMOVUPD.Z (DI)(BX*8), K1, Z0
	VMULPD Z0, Z15, Z0
	VMOVUPD Z0, K1, (DI)(BX*8)

saDone:
	VZEROUPPER
	RET

// func axpyToAVX512(dst, y []float64, a float64, x []float64)
TEXT ·axpyToAVX512(SB), NOSPLIT, $0-80
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ y_base+24(FP), R10
	VBROADCASTSD a+48(FP), Z15
	MOVQ x_base+56(FP), SI
	XORQ BX, BX
	MOVQ CX, DX
	ANDQ $-32, DX
	JZ at8

at32:
	VMULPD (SI)(BX*8), Z15, Z0
	VMULPD 64(SI)(BX*8), Z15, Z1
	VMULPD 128(SI)(BX*8), Z15, Z2
	VMULPD 192(SI)(BX*8), Z15, Z3
	VADDPD (R10)(BX*8), Z0, Z0
	VADDPD 64(R10)(BX*8), Z1, Z1
	VADDPD 128(R10)(BX*8), Z2, Z2
	VADDPD 192(R10)(BX*8), Z3, Z3
	VMOVUPD Z0, (DI)(BX*8)
	VMOVUPD Z1, 64(DI)(BX*8)
	VMOVUPD Z2, 128(DI)(BX*8)
	VMOVUPD Z3, 192(DI)(BX*8)
	ADDQ $32, BX
	CMPQ BX, DX
	JB at32

at8:
	LEAQ 8(BX), DX
	CMPQ DX, CX
	JA atTail
	VMULPD (SI)(BX*8), Z15, Z0
	VADDPD (R10)(BX*8), Z0, Z0
	VMOVUPD Z0, (DI)(BX*8)
	MOVQ DX, BX
	JMP at8

atTail:
	MOVQ CX, R8
	SUBQ BX, R8
	JZ atDone
	TAILMASK(R8, K1)
	VMOVUPD.Z (SI)(BX*8), K1, Z0
	VMOVUPD.Z (R10)(BX*8), K1, Z1
	VMULPD Z0, Z15, Z0
	VADDPD Z1, Z0, Z0
	VMOVUPD Z0, K1, (DI)(BX*8)

atDone:
	VZEROUPPER
	RET

// func dotDiffAVX512(g, x, y []float64) float64
TEXT ·dotDiffAVX512(SB), NOSPLIT, $0-80
	MOVQ g_base+0(FP), R10
	MOVQ g_len+8(FP), CX
	MOVQ x_base+24(FP), SI
	MOVQ y_base+48(FP), DI
	VPXORQ Z0, Z0, Z0
	VPXORQ Z1, Z1, Z1
	VPXORQ Z2, Z2, Z2
	VPXORQ Z3, Z3, Z3
	XORQ BX, BX
	MOVQ CX, DX
	ANDQ $-32, DX
	JZ dd8

dd32:
	VMOVUPD (SI)(BX*8), Z4
	VMOVUPD 64(SI)(BX*8), Z5
	VMOVUPD 128(SI)(BX*8), Z6
	VMOVUPD 192(SI)(BX*8), Z7
	VSUBPD (DI)(BX*8), Z4, Z4
	VSUBPD 64(DI)(BX*8), Z5, Z5
	VSUBPD 128(DI)(BX*8), Z6, Z6
	VSUBPD 192(DI)(BX*8), Z7, Z7
	VFMADD231PD (R10)(BX*8), Z4, Z0
	VFMADD231PD 64(R10)(BX*8), Z5, Z1
	VFMADD231PD 128(R10)(BX*8), Z6, Z2
	VFMADD231PD 192(R10)(BX*8), Z7, Z3
	ADDQ $32, BX
	CMPQ BX, DX
	JB dd32

dd8:
	LEAQ 8(BX), DX
	CMPQ DX, CX
	JA ddTail
	VMOVUPD (SI)(BX*8), Z4
	VSUBPD (DI)(BX*8), Z4, Z4
	VFMADD231PD (R10)(BX*8), Z4, Z0
	MOVQ DX, BX
	JMP dd8

ddTail:
	MOVQ CX, R8
	SUBQ BX, R8
	JZ ddDone
	TAILMASK(R8, K1)
	VMOVUPD.Z (SI)(BX*8), K1, Z4
	VMOVUPD.Z (DI)(BX*8), K1, Z5
	VMOVUPD.Z (R10)(BX*8), K1, Z6
	VSUBPD Z5, Z4, Z4
	VFMADD231PD Z6, Z4, Z0

ddDone:
	VADDPD Z1, Z0, Z0
	VADDPD Z3, Z2, Z2
	VADDPD Z2, Z0, Z0
	HSUM(Z0, Y0, X0, Z1, Y1, X1)
	VMOVSD X0, ret+72(FP)
	VZEROUPPER
	RET

// REDUCE_SMALL reduces each of R11 blocks of R12 rows × R13 (< 16) columns
// at SI into a row at DI, with OP (VADDPD or VMAXPD, register sources only:
// OP acc, v, acc computes v+acc or v > acc ? v : acc, which skips NaNs) from
// the identity in Z31. With 1, 2, 4 or 8 columns a block is one contiguous
// run whose lanes all belong to the column lane % columns: it is reduced in
// four accumulators and folded. Other widths go row by row, in two
// accumulator sets (even and odd rows), the columns beyond 8 under K2.
#define REDUCE_SMALL(OP) \
	MOVQ R12, R14; \
	IMULQ R13, R14; \
	MOVQ R13, R15; \
	SHLQ $4, R15; \
	CMPQ R13, $8; \
	JA rsRows; \
	LEAQ -1(R13), AX; \
	TESTQ R13, AX; \
	JNZ rsRows; \
rsBlock: \
	VMOVAPD Z31, Z0; \
	VMOVAPD Z31, Z1; \
	VMOVAPD Z31, Z2; \
	VMOVAPD Z31, Z3; \
	XORQ BX, BX; \
	MOVQ R14, DX; \
	ANDQ $-32, DX; \
	JZ rs8; \
rs32: \
	VMOVUPD (SI)(BX*8), Z4; \
	VMOVUPD 64(SI)(BX*8), Z5; \
	VMOVUPD 128(SI)(BX*8), Z6; \
	VMOVUPD 192(SI)(BX*8), Z7; \
	OP Z0, Z4, Z0; \
	OP Z1, Z5, Z1; \
	OP Z2, Z6, Z2; \
	OP Z3, Z7, Z3; \
	ADDQ $32, BX; \
	CMPQ BX, DX; \
	JB rs32; \
rs8: \
	LEAQ 8(BX), DX; \
	CMPQ DX, R14; \
	JA rsTail; \
	VMOVUPD (SI)(BX*8), Z4; \
	OP Z0, Z4, Z0; \
	MOVQ DX, BX; \
	JMP rs8; \
rsTail: \
	MOVQ R14, R8; \
	SUBQ BX, R8; \
	JZ rsFold; \
	TAILMASK(R8, K1); \
	VMOVUPD.Z (SI)(BX*8), K1, Z4; \
	OP Z0, Z4, K1, Z0; \
rsFold: \
	OP Z1, Z0, Z0; \
	OP Z3, Z2, Z2; \
	OP Z2, Z0, Z0; \
	CMPQ R13, $8; \
	JEQ rsStore8; \
	VEXTRACTF64X4 $1, Z0, Y1; \
	OP Y1, Y0, Y0; \
	CMPQ R13, $4; \
	JEQ rsStore4; \
	VEXTRACTF128 $1, Y0, X1; \
	OP X1, X0, X0; \
	CMPQ R13, $2; \
	JEQ rsStore2; \
	VPERMILPD $1, X0, X1; \
	OP X1, X0, X0; \
	VMOVSD X0, (DI); \
	JMP rsNext; \
rsStore2: \
	VMOVUPD X0, (DI); \
	JMP rsNext; \
rsStore4: \
	VMOVUPD Y0, (DI); \
	JMP rsNext; \
rsStore8: \
	VMOVUPD Z0, (DI); \
rsNext: \
	LEAQ (DI)(R13*8), DI; \
	LEAQ (SI)(R14*8), SI; \
	DECQ R11; \
	JNZ rsBlock; \
	JMP rsDone; \
rsRows: \
	MOVQ R13, R8; \
	SUBQ $8, R8; \
	JA rsTwo; \
	TAILMASK(R13, K2); \
rsOneBlock: \
	VMOVAPD Z31, Z0; \
	VMOVAPD Z31, Z2; \
	MOVQ SI, R9; \
	LEAQ (SI)(R13*8), R10; \
	MOVQ R12, CX; \
rsOnePair: \
	CMPQ CX, $2; \
	JB rsOneLast; \
	VMOVUPD.Z (R9), K2, Z4; \
	VMOVUPD.Z (R10), K2, Z6; \
	OP Z0, Z4, Z0; \
	OP Z2, Z6, Z2; \
	ADDQ R15, R9; \
	ADDQ R15, R10; \
	SUBQ $2, CX; \
	JMP rsOnePair; \
rsOneLast: \
	TESTQ CX, CX; \
	JZ rsOneStore; \
	VMOVUPD.Z (R9), K2, Z4; \
	OP Z0, Z4, Z0; \
rsOneStore: \
	OP Z2, Z0, Z0; \
	VMOVUPD Z0, K2, (DI); \
	LEAQ (DI)(R13*8), DI; \
	LEAQ (SI)(R14*8), SI; \
	DECQ R11; \
	JNZ rsOneBlock; \
	JMP rsDone; \
rsTwo: \
	TAILMASK(R8, K2); \
rsTwoBlock: \
	VMOVAPD Z31, Z0; \
	VMOVAPD Z31, Z1; \
	VMOVAPD Z31, Z2; \
	VMOVAPD Z31, Z3; \
	MOVQ SI, R9; \
	LEAQ (SI)(R13*8), R10; \
	MOVQ R12, CX; \
rsTwoPair: \
	CMPQ CX, $2; \
	JB rsTwoLast; \
	VMOVUPD (R9), Z4; \
	VMOVUPD.Z 64(R9), K2, Z5; \
	VMOVUPD (R10), Z6; \
	VMOVUPD.Z 64(R10), K2, Z7; \
	OP Z0, Z4, Z0; \
	OP Z1, Z5, Z1; \
	OP Z2, Z6, Z2; \
	OP Z3, Z7, Z3; \
	ADDQ R15, R9; \
	ADDQ R15, R10; \
	SUBQ $2, CX; \
	JMP rsTwoPair; \
rsTwoLast: \
	TESTQ CX, CX; \
	JZ rsTwoStore; \
	VMOVUPD (R9), Z4; \
	VMOVUPD.Z 64(R9), K2, Z5; \
	OP Z0, Z4, Z0; \
	OP Z1, Z5, Z1; \
rsTwoStore: \
	OP Z2, Z0, Z0; \
	OP Z3, Z1, Z1; \
	VMOVUPD Z0, (DI); \
	VMOVUPD Z1, K2, 64(DI); \
	LEAQ (DI)(R13*8), DI; \
	LEAQ (SI)(R14*8), SI; \
	DECQ R11; \
	JNZ rsTwoBlock; \
rsDone:

// func reduceSmallSumAVX512(dst, src []float64, outer, s, inner int)
TEXT ·reduceSmallSumAVX512(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ outer+48(FP), R11
	MOVQ s+56(FP), R12
	MOVQ inner+64(FP), R13
	VPXORQ Z31, Z31, Z31
	REDUCE_SMALL(VADDPD)
	VZEROUPPER
	RET

// func reduceSmallMaxAVX512(dst, src []float64, outer, s, inner int)
TEXT ·reduceSmallMaxAVX512(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ outer+48(FP), R11
	MOVQ s+56(FP), R12
	MOVQ inner+64(FP), R13
	VBROADCASTSD expc<>+128(SB), Z31
	REDUCE_SMALL(VMAXPD)
	VZEROUPPER
	RET

// COLMASK sets k to the lanes of vector v (0…3) among the R8 remaining
// columns (all 8 if ≥ 8 are left for it, none if none), using AX and CX.
#define COLMASK(v, k) \
	MOVQ R8, CX; \
	SUBQ $(8*v), CX; \
	MOVL $0, AX; \
	CMOVQLT AX, CX; \
	MOVL $0xff, AX; \
	BZHIL CX, AX, AX; \
	KMOVW AX, k

// REDUCE_COLS reduces each of R11 blocks of R12 rows (R15 bytes apart) × R13
// columns at SI into a row at DI: the first row is copied, then OP (as in
// REDUCE_SMALL) folds in the others, so a maximum keeps a NaN of the first
// row and skips the others'. Columns go 32 at a time in four accumulators;
// the last < 32 under masks K1–K4.
#define REDUCE_COLS(OP) \
rcBlock: \
	XORQ BX, BX; \
rcCols: \
	LEAQ 32(BX), DX; \
	CMPQ DX, R13; \
	JA rcRest; \
	LEAQ (SI)(BX*8), R9; \
	VMOVUPD (R9), Z0; \
	VMOVUPD 64(R9), Z1; \
	VMOVUPD 128(R9), Z2; \
	VMOVUPD 192(R9), Z3; \
	MOVQ R12, R10; \
	DECQ R10; \
	JZ rcStore; \
rcRow: \
	ADDQ R15, R9; \
	VMOVUPD (R9), Z4; \
	VMOVUPD 64(R9), Z5; \
	VMOVUPD 128(R9), Z6; \
	VMOVUPD 192(R9), Z7; \
	OP Z0, Z4, Z0; \
	OP Z1, Z5, Z1; \
	OP Z2, Z6, Z2; \
	OP Z3, Z7, Z3; \
	DECQ R10; \
	JNZ rcRow; \
rcStore: \
	VMOVUPD Z0, (DI)(BX*8); \
	VMOVUPD Z1, 64(DI)(BX*8); \
	VMOVUPD Z2, 128(DI)(BX*8); \
	VMOVUPD Z3, 192(DI)(BX*8); \
	MOVQ DX, BX; \
	JMP rcCols; \
rcRest: \
	MOVQ R13, R8; \
	SUBQ BX, R8; \
	JZ rcNext; \
	COLMASK(0, K1); \
	COLMASK(1, K2); \
	COLMASK(2, K3); \
	COLMASK(3, K4); \
	LEAQ (SI)(BX*8), R9; \
	VMOVUPD.Z (R9), K1, Z0; \
	VMOVUPD.Z 64(R9), K2, Z1; \
	VMOVUPD.Z 128(R9), K3, Z2; \
	VMOVUPD.Z 192(R9), K4, Z3; \
	MOVQ R12, R10; \
	DECQ R10; \
	JZ rcRestStore; \
rcRestRow: \
	ADDQ R15, R9; \
	VMOVUPD.Z (R9), K1, Z4; \
	VMOVUPD.Z 64(R9), K2, Z5; \
	VMOVUPD.Z 128(R9), K3, Z6; \
	VMOVUPD.Z 192(R9), K4, Z7; \
	OP Z0, Z4, Z0; \
	OP Z1, Z5, Z1; \
	OP Z2, Z6, Z2; \
	OP Z3, Z7, Z3; \
	DECQ R10; \
	JNZ rcRestRow; \
rcRestStore: \
	VMOVUPD Z0, K1, (DI)(BX*8); \
	VMOVUPD Z1, K2, 64(DI)(BX*8); \
	VMOVUPD Z2, K3, 128(DI)(BX*8); \
	VMOVUPD Z3, K4, 192(DI)(BX*8); \
rcNext: \
	LEAQ (DI)(R13*8), DI; \
	MOVQ R15, AX; \
	IMULQ R12, AX; \
	ADDQ AX, SI; \
	DECQ R11; \
	JNZ rcBlock

// func reduceColsSumAVX512(dst, src []float64, outer, s, width, stride int)
TEXT ·reduceColsSumAVX512(SB), NOSPLIT, $0-80
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ outer+48(FP), R11
	MOVQ s+56(FP), R12
	MOVQ width+64(FP), R13
	MOVQ stride+72(FP), R15
	SHLQ $3, R15
	REDUCE_COLS(VADDPD)
	VZEROUPPER
	RET

// func reduceColsMaxAVX512(dst, src []float64, outer, s, width, stride int)
TEXT ·reduceColsMaxAVX512(SB), NOSPLIT, $0-80
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ outer+48(FP), R11
	MOVQ s+56(FP), R12
	MOVQ width+64(FP), R13
	MOVQ stride+72(FP), R15
	SHLQ $3, R15
	REDUCE_COLS(VMAXPD)
	VZEROUPPER
	RET

// func addRun32AVX512(a, x []float64)
// a[l] += x[32g+l] for l < 32 and every whole group g of x, in order, in
// four vectors: REDUCE_SMALL's accumulation, carried between calls.
TEXT ·addRun32AVX512(SB), NOSPLIT, $0-48
	MOVQ a_base+0(FP), DI
	MOVQ x_base+24(FP), SI
	MOVQ x_len+32(FP), CX
	SHRQ $5, CX
	JZ ar32Done
	VMOVUPD (DI), Z0
	VMOVUPD 64(DI), Z1
	VMOVUPD 128(DI), Z2
	VMOVUPD 192(DI), Z3
ar32Loop:
	VADDPD (SI), Z0, Z0
	VADDPD 64(SI), Z1, Z1
	VADDPD 128(SI), Z2, Z2
	VADDPD 192(SI), Z3, Z3
	ADDQ $256, SI
	DECQ CX
	JNZ ar32Loop
	VMOVUPD Z0, (DI)
	VMOVUPD Z1, 64(DI)
	VMOVUPD Z2, 128(DI)
	VMOVUPD Z3, 192(DI)
	VZEROUPPER
ar32Done:
	RET

// func maxIntoAVX512(d, x []float64)
// d[i] = x[i] > d[i] ? x[i] : d[i] (VMAXPD with x first: a NaN in either
// keeps d[i]), as maxIntoGo.
TEXT ·maxIntoAVX512(SB), NOSPLIT, $0-48
	MOVQ d_base+0(FP), DI
	MOVQ d_len+8(FP), CX
	MOVQ x_base+24(FP), SI
	XORQ BX, BX
	MOVQ CX, DX
	ANDQ $-32, DX
	JZ mi8
mi32:
	VMOVUPD (SI)(BX*8), Z0
	VMOVUPD 64(SI)(BX*8), Z1
	VMOVUPD 128(SI)(BX*8), Z2
	VMOVUPD 192(SI)(BX*8), Z3
	VMAXPD (DI)(BX*8), Z0, Z0
	VMAXPD 64(DI)(BX*8), Z1, Z1
	VMAXPD 128(DI)(BX*8), Z2, Z2
	VMAXPD 192(DI)(BX*8), Z3, Z3
	VMOVUPD Z0, (DI)(BX*8)
	VMOVUPD Z1, 64(DI)(BX*8)
	VMOVUPD Z2, 128(DI)(BX*8)
	VMOVUPD Z3, 192(DI)(BX*8)
	ADDQ $32, BX
	CMPQ BX, DX
	JB mi32
mi8:
	LEAQ 8(BX), DX
	CMPQ DX, CX
	JA miTail
	VMOVUPD (SI)(BX*8), Z0
	VMAXPD (DI)(BX*8), Z0, Z0
	VMOVUPD Z0, (DI)(BX*8)
	MOVQ DX, BX
	JMP mi8
miTail:
	MOVQ CX, R8
	SUBQ BX, R8
	JZ miDone
	TAILMASK(R8, K1)
	VMOVUPD.Z (SI)(BX*8), K1, Z0
	VMOVUPD.Z (DI)(BX*8), K1, Z1
	VMAXPD Z1, Z0, Z0
	VMOVUPD Z0, K1, (DI)(BX*8)
miDone:
	VZEROUPPER
	RET
