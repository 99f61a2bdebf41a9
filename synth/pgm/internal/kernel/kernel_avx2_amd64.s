//go:build amd64 && !purego

#include "textflag.h"

// AVX2 + FMA versions of the kernels of kernel_amd64.s, for CPUs without
// AVX-512: 4 lanes per ymm register, constants in memory (no embedded
// broadcast), tails under VMASKMOVPD masks (masked lanes are neither read nor
// written). The Go references in kernel.go and reduce.go define the results.

// expc4 holds the exp constants of EXP4, each in four lanes (32 bytes).
DATA expc4<>+0(SB)/8, $0x3FF71547652B82FE   // 1/ln2
DATA expc4<>+8(SB)/8, $0x3FF71547652B82FE
DATA expc4<>+16(SB)/8, $0x3FF71547652B82FE
DATA expc4<>+24(SB)/8, $0x3FF71547652B82FE
DATA expc4<>+32(SB)/8, $0x4338000000000000   // 0x1.8p52: adding it rounds to an integer
DATA expc4<>+40(SB)/8, $0x4338000000000000
DATA expc4<>+48(SB)/8, $0x4338000000000000
DATA expc4<>+56(SB)/8, $0x4338000000000000
DATA expc4<>+64(SB)/8, $0xBFE62E42FEFA39EF   // -ln2hi
DATA expc4<>+72(SB)/8, $0xBFE62E42FEFA39EF
DATA expc4<>+80(SB)/8, $0xBFE62E42FEFA39EF
DATA expc4<>+88(SB)/8, $0xBFE62E42FEFA39EF
DATA expc4<>+96(SB)/8, $0xBC7ABC9E3B39803F   // -ln2lo
DATA expc4<>+104(SB)/8, $0xBC7ABC9E3B39803F
DATA expc4<>+112(SB)/8, $0xBC7ABC9E3B39803F
DATA expc4<>+120(SB)/8, $0xBC7ABC9E3B39803F
DATA expc4<>+128(SB)/8, $0x3FE0000000000001   // c2
DATA expc4<>+136(SB)/8, $0x3FE0000000000001
DATA expc4<>+144(SB)/8, $0x3FE0000000000001
DATA expc4<>+152(SB)/8, $0x3FE0000000000001
DATA expc4<>+160(SB)/8, $0x3FC5555555555556   // c3
DATA expc4<>+168(SB)/8, $0x3FC5555555555556
DATA expc4<>+176(SB)/8, $0x3FC5555555555556
DATA expc4<>+184(SB)/8, $0x3FC5555555555556
DATA expc4<>+192(SB)/8, $0x3FA5555555553D63   // c4
DATA expc4<>+200(SB)/8, $0x3FA5555555553D63
DATA expc4<>+208(SB)/8, $0x3FA5555555553D63
DATA expc4<>+216(SB)/8, $0x3FA5555555553D63
DATA expc4<>+224(SB)/8, $0x3F811111111109B3   // c5
DATA expc4<>+232(SB)/8, $0x3F811111111109B3
DATA expc4<>+240(SB)/8, $0x3F811111111109B3
DATA expc4<>+248(SB)/8, $0x3F811111111109B3
DATA expc4<>+256(SB)/8, $0x3F56C16C1788BD90   // c6
DATA expc4<>+264(SB)/8, $0x3F56C16C1788BD90
DATA expc4<>+272(SB)/8, $0x3F56C16C1788BD90
DATA expc4<>+280(SB)/8, $0x3F56C16C1788BD90
DATA expc4<>+288(SB)/8, $0x3F2A01A01A7C41D5   // c7
DATA expc4<>+296(SB)/8, $0x3F2A01A01A7C41D5
DATA expc4<>+304(SB)/8, $0x3F2A01A01A7C41D5
DATA expc4<>+312(SB)/8, $0x3F2A01A01A7C41D5
DATA expc4<>+320(SB)/8, $0x3EFA019B90D2AE7A   // c8
DATA expc4<>+328(SB)/8, $0x3EFA019B90D2AE7A
DATA expc4<>+336(SB)/8, $0x3EFA019B90D2AE7A
DATA expc4<>+344(SB)/8, $0x3EFA019B90D2AE7A
DATA expc4<>+352(SB)/8, $0x3EC71DE0DAE63BB3   // c9
DATA expc4<>+360(SB)/8, $0x3EC71DE0DAE63BB3
DATA expc4<>+368(SB)/8, $0x3EC71DE0DAE63BB3
DATA expc4<>+376(SB)/8, $0x3EC71DE0DAE63BB3
DATA expc4<>+384(SB)/8, $0x3E9289185613A3D6   // c10
DATA expc4<>+392(SB)/8, $0x3E9289185613A3D6
DATA expc4<>+400(SB)/8, $0x3E9289185613A3D6
DATA expc4<>+408(SB)/8, $0x3E9289185613A3D6
DATA expc4<>+416(SB)/8, $0x3E5AF38A9B0EC855   // c11
DATA expc4<>+424(SB)/8, $0x3E5AF38A9B0EC855
DATA expc4<>+432(SB)/8, $0x3E5AF38A9B0EC855
DATA expc4<>+440(SB)/8, $0x3E5AF38A9B0EC855
DATA expc4<>+448(SB)/8, $0x3FF0000000000000   // 1
DATA expc4<>+456(SB)/8, $0x3FF0000000000000
DATA expc4<>+464(SB)/8, $0x3FF0000000000000
DATA expc4<>+472(SB)/8, $0x3FF0000000000000
DATA expc4<>+480(SB)/8, $0xC087500000000000   // -746
DATA expc4<>+488(SB)/8, $0xC087500000000000
DATA expc4<>+496(SB)/8, $0xC087500000000000
DATA expc4<>+504(SB)/8, $0xC087500000000000
DATA expc4<>+512(SB)/8, $0x4086300000000000   // 710
DATA expc4<>+520(SB)/8, $0x4086300000000000
DATA expc4<>+528(SB)/8, $0x4086300000000000
DATA expc4<>+536(SB)/8, $0x4086300000000000
DATA expc4<>+544(SB)/8, $0xFFF0000000000000   // -Inf
DATA expc4<>+552(SB)/8, $0xFFF0000000000000
DATA expc4<>+560(SB)/8, $0xFFF0000000000000
DATA expc4<>+568(SB)/8, $0xFFF0000000000000
DATA expc4<>+576(SB)/8, $0x00000000000003FF   // 1023, the exponent bias
DATA expc4<>+584(SB)/8, $0x00000000000003FF
DATA expc4<>+592(SB)/8, $0x00000000000003FF
DATA expc4<>+600(SB)/8, $0x00000000000003FF
GLOBL expc4<>(SB), RODATA|NOPTR, $608

// tail64 and tail32 hold four all-ones lanes then four zero lanes: loading
// at lane 4-n gives the mask of the first n lanes.
DATA tail64<>+0(SB)/8, $-1
DATA tail64<>+8(SB)/8, $-1
DATA tail64<>+16(SB)/8, $-1
DATA tail64<>+24(SB)/8, $-1
DATA tail64<>+32(SB)/8, $0
DATA tail64<>+40(SB)/8, $0
DATA tail64<>+48(SB)/8, $0
DATA tail64<>+56(SB)/8, $0
GLOBL tail64<>(SB), RODATA|NOPTR, $64

DATA tail32<>+0(SB)/4, $-1
DATA tail32<>+4(SB)/4, $-1
DATA tail32<>+8(SB)/4, $-1
DATA tail32<>+12(SB)/4, $-1
DATA tail32<>+16(SB)/4, $0
DATA tail32<>+20(SB)/4, $0
DATA tail32<>+24(SB)/4, $0
DATA tail32<>+28(SB)/4, $0
GLOBL tail32<>(SB), RODATA|NOPTR, $32

// EXP4_CONSTS loads the constants EXP4 keeps in registers.
#define EXP4_CONSTS \
	VMOVUPD expc4<>+480(SB), Y14; \
	VMOVUPD expc4<>+512(SB), Y13; \
	VMOVUPD expc4<>+0(SB), Y12; \
	VMOVUPD expc4<>+32(SB), Y11; \
	VMOVDQU expc4<>+576(SB), Y10

// EXP4 leaves e^d in p for the 4 lanes of d (clobbered), like EXP8 in
// kernel_amd64.s but without VSCALEFPD: t = d/ln2 + 0x1.8p52 holds k =
// round(d/ln2) in its low bits, and 2^k is applied as 2^(k - k>>1) · 2^(k>>1),
// two factors built in the exponent field that stay normal for every k of
// the clamped range [-1076, 1024]; the second product rounds once, to a
// subnormal, 0 or +Inf where the result is one.
#define EXP4(d, k, t, p) \
	VMAXPD d, Y14, d; \
	VMINPD d, Y13, d; \
	VMOVAPD Y11, k; \
	VFMADD231PD Y12, d, k; \
	VSUBPD Y11, k, t; \
	VFMADD231PD expc4<>+64(SB), t, d; \
	VFMADD231PD expc4<>+96(SB), t, d; \
	VMOVUPD expc4<>+416(SB), p; \
	VFMADD213PD expc4<>+384(SB), d, p; \
	VFMADD213PD expc4<>+352(SB), d, p; \
	VFMADD213PD expc4<>+320(SB), d, p; \
	VFMADD213PD expc4<>+288(SB), d, p; \
	VFMADD213PD expc4<>+256(SB), d, p; \
	VFMADD213PD expc4<>+224(SB), d, p; \
	VFMADD213PD expc4<>+192(SB), d, p; \
	VFMADD213PD expc4<>+160(SB), d, p; \
	VFMADD213PD expc4<>+128(SB), d, p; \
	VFMADD213PD expc4<>+448(SB), d, p; \
	VFMADD213PD expc4<>+448(SB), d, p; \
	VPSRLQ $1, k, t; \
	VPSUBQ t, k, k; \
	VPADDQ Y10, t, t; \
	VPADDQ Y10, k, k; \
	VPSLLQ $52, t, t; \
	VPSLLQ $52, k, k; \
	VMULPD t, p, p; \
	VMULPD k, p, p

// func expShiftTotalAVX2(x []float64, s float64) (sum float64)
TEXT ·expShiftTotalAVX2(SB), NOSPLIT, $0-40
	MOVQ x_base+0(FP), DI
	MOVQ x_len+8(FP), CX
	VBROADCASTSD s+24(FP), Y15
	EXP4_CONSTS
	VXORPD Y8, Y8, Y8
	VXORPD Y9, Y9, Y9
	XORQ BX, BX
	MOVQ CX, DX
	ANDQ $-8, DX
	JZ e4

e8:
	VMOVUPD (DI)(BX*8), Y0
	VMOVUPD 32(DI)(BX*8), Y4
	VSUBPD Y15, Y0, Y0
	VSUBPD Y15, Y4, Y4
	EXP4(Y0, Y1, Y2, Y3)
	EXP4(Y4, Y5, Y6, Y7)
	VMOVUPD Y3, (DI)(BX*8)
	VMOVUPD Y7, 32(DI)(BX*8)
	VADDPD Y3, Y8, Y8
	VADDPD Y7, Y9, Y9
	ADDQ $8, BX
	CMPQ BX, DX
	JB e8

e4:
	LEAQ 4(BX), DX
	CMPQ DX, CX
	JA eTail
	VMOVUPD (DI)(BX*8), Y0
	VSUBPD Y15, Y0, Y0
	EXP4(Y0, Y1, Y2, Y3)
	VMOVUPD Y3, (DI)(BX*8)
	VADDPD Y3, Y8, Y8
	MOVQ DX, BX

eTail:
	MOVQ CX, R8
	SUBQ BX, R8
	JZ eDone
	MOVQ $4, AX
	SUBQ R8, AX
	LEAQ tail64<>(SB), DX
	VMOVDQU (DX)(AX*8), Y6
	VMASKMOVPD (DI)(BX*8), Y6, Y0
	VSUBPD Y15, Y0, Y0
	EXP4(Y0, Y1, Y2, Y3)
	VMASKMOVPD Y3, Y6, (DI)(BX*8)
	VANDPD Y6, Y3, Y3
	VADDPD Y3, Y8, Y8

eDone:
	VADDPD Y9, Y8, Y8
	VEXTRACTF128 $1, Y8, X1
	VADDPD X1, X8, X8
	VPERMILPD $1, X8, X1
	VADDSD X1, X8, X8
	VMOVSD X8, sum+32(FP)
	VZEROUPPER
	RET

// func expShiftGatherAVX2(x, shift []float64, idx []int32) (ok bool)
TEXT ·expShiftGatherAVX2(SB), NOSPLIT, $0-73
	MOVQ x_base+0(FP), DI
	MOVQ x_len+8(FP), CX
	MOVQ shift_base+24(FP), SI
	MOVQ shift_len+32(FP), AX
	MOVQ idx_base+48(FP), DX
	EXP4_CONSTS
	VMOVD AX, X9
	VPBROADCASTD X9, X9          // len(shift) in each lane
	VPCMPEQD X8, X8, X8          // -1 in each lane
	VPCMPEQD X15, X15, X15       // lanes found in range so far
	XORQ BX, BX

g4:
	LEAQ 4(BX), R8
	CMPQ R8, CX
	JA gTail
	VMOVDQU (DX)(BX*4), X4
	VPCMPGTD X4, X9, X5          // idx < len
	VPCMPGTD X8, X4, X6          // idx ≥ 0
	VPAND X6, X5, X5
	VPAND X5, X15, X15
	VPMOVSXDQ X5, Y5
	VXORPD Y6, Y6, Y6
	VGATHERDPD Y5, (SI)(X4*8), Y6
	VMOVUPD (DI)(BX*8), Y0
	VCMPPD $0, expc4<>+544(SB), Y6, Y7 // shift == -Inf
	VSUBPD Y6, Y0, Y0
	EXP4(Y0, Y1, Y2, Y3)
	VANDNPD Y3, Y7, Y3
	VMOVUPD Y3, (DI)(BX*8)
	MOVQ R8, BX
	JMP g4

gTail:
	MOVQ CX, R8
	SUBQ BX, R8
	JZ gDone
	MOVQ $4, AX
	SUBQ R8, AX
	LEAQ tail32<>(SB), R9
	VMOVDQU (R9)(AX*4), X7       // the tail's lanes
	VPMASKMOVD (DX)(BX*4), X7, X4
	VPCMPGTD X4, X9, X5
	VPCMPGTD X8, X4, X6
	VPAND X6, X5, X5
	VPAND X7, X5, X5
	VPXOR X7, X5, X6             // tail lanes out of range
	VPANDN X15, X6, X15
	VPMOVSXDQ X7, Y8
	VPMOVSXDQ X5, Y5
	VXORPD Y6, Y6, Y6
	VGATHERDPD Y5, (SI)(X4*8), Y6
	VMASKMOVPD (DI)(BX*8), Y8, Y0
	VCMPPD $0, expc4<>+544(SB), Y6, Y7
	VSUBPD Y6, Y0, Y0
	EXP4(Y0, Y1, Y2, Y3)
	VANDNPD Y3, Y7, Y3
	VMASKMOVPD Y3, Y8, (DI)(BX*8)

gDone:
	VMOVMSKPS X15, AX
	CMPB AX, $0xf
	SETEQ ok+72(FP)
	VZEROUPPER
	RET

DATA iota4<>+0(SB)/4, $0
DATA iota4<>+4(SB)/4, $1
DATA iota4<>+8(SB)/4, $2
DATA iota4<>+12(SB)/4, $3
GLOBL iota4<>(SB), RODATA|NOPTR, $16

// GATHER4_SETUP prepares GATHER4: SI = src, AX = len(src), X11 = len(src)
// and X10 = -1 in each lane, X14 = 0…3, X13 = the previous indices (none
// yet), X15 = lanes found in range so far.
#define GATHER4_SETUP \
	VMOVD AX, X11; \
	VPBROADCASTD X11, X11; \
	VPCMPEQD X10, X10, X10; \
	VMOVDQU iota4<>(SB), X14; \
	VPCMPEQD X13, X13, X13; \
	VPCMPEQD X15, X15, X15

// GATHER4 loads src[idx[BX+j]], j < 4, into Y12 (DX = idx): the previous
// values when the indices repeat, one load when they are consecutive, a
// gather otherwise; lanes out of range are not read and clear X15. Uses X0,
// X1, Y2, AX, R9 and the labels g4have and g4gather.
#define GATHER4 \
	VMOVDQU (DX)(BX*4), X0; \
	VPCMPGTD X0, X11, X1; \
	VPCMPGTD X10, X0, X2; \
	VPAND X2, X1, X1; \
	VPAND X1, X15, X15; \
	VPCMPEQD X13, X0, X2; \
	VMOVMSKPS X2, AX; \
	CMPL AX, $0xf; \
	JEQ g4have; \
	VMOVDQA X0, X13; \
	VPBROADCASTD X0, X2; \
	VPADDD X14, X2, X2; \
	VPCMPEQD X0, X2, X2; \
	VPAND X1, X2, X2; \
	VMOVMSKPS X2, AX; \
	CMPL AX, $0xf; \
	JNE g4gather; \
	VMOVD X0, R9; \
	VMOVUPD (SI)(R9*8), Y12; \
	JMP g4have; \
g4gather: \
	VPMOVSXDQ X1, Y2; \
	VGATHERDPD Y2, (SI)(X0*8), Y12; \
g4have:

// GATHER4_TAIL gathers the n = R8 < 4 remaining cells' src[idx] into Y12,
// leaving the tail's lane mask in Y3; uses X0–X2, X4, AX and R9.
#define GATHER4_TAIL \
	MOVQ $4, AX; \
	SUBQ R8, AX; \
	LEAQ tail32<>(SB), R9; \
	VMOVDQU (R9)(AX*4), X4; \
	VPMASKMOVD (DX)(BX*4), X4, X0; \
	VPCMPGTD X0, X11, X1; \
	VPCMPGTD X10, X0, X2; \
	VPAND X2, X1, X1; \
	VPAND X4, X1, X1; \
	VPXOR X4, X1, X2; \
	VPANDN X15, X2, X15; \
	VPMOVSXDQ X4, Y3; \
	VPMOVSXDQ X1, Y2; \
	VXORPD Y12, Y12, Y12; \
	VGATHERDPD Y2, (SI)(X0*8), Y12

// func expandAVX2(dst, src []float64, idx []int32) (ok bool)
TEXT ·expandAVX2(SB), NOSPLIT, $0-73
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ src_base+24(FP), SI
	MOVQ src_len+32(FP), AX
	MOVQ idx_base+48(FP), DX
	GATHER4_SETUP
	XORQ BX, BX

xLoop:
	LEAQ 4(BX), R8
	CMPQ R8, CX
	JA xTail
	GATHER4
	VADDPD (DI)(BX*8), Y12, Y5
	VMOVUPD Y5, (DI)(BX*8)
	MOVQ R8, BX
	JMP xLoop

xTail:
	MOVQ CX, R8
	SUBQ BX, R8
	JZ xDone
	GATHER4_TAIL
	VMASKMOVPD (DI)(BX*8), Y3, Y5
	VADDPD Y5, Y12, Y5
	VMASKMOVPD Y5, Y3, (DI)(BX*8)

xDone:
	VMOVMSKPS X15, AX
	CMPB AX, $0xf
	SETEQ ok+72(FP)
	VZEROUPPER
	RET

// func scaleAVX2(x, f []float64, idx []int32) (ok bool)
TEXT ·scaleAVX2(SB), NOSPLIT, $0-73
	MOVQ x_base+0(FP), DI
	MOVQ x_len+8(FP), CX
	MOVQ f_base+24(FP), SI
	MOVQ f_len+32(FP), AX
	MOVQ idx_base+48(FP), DX
	GATHER4_SETUP
	XORQ BX, BX

sLoop:
	LEAQ 4(BX), R8
	CMPQ R8, CX
	JA sTail
	GATHER4
	VMULPD (DI)(BX*8), Y12, Y5
	VMOVUPD Y5, (DI)(BX*8)
	MOVQ R8, BX
	JMP sLoop

sTail:
	MOVQ CX, R8
	SUBQ BX, R8
	JZ sDone
	GATHER4_TAIL
	VMASKMOVPD (DI)(BX*8), Y3, Y5
	VMULPD Y5, Y12, Y5
	VMASKMOVPD Y5, Y3, (DI)(BX*8)

sDone:
	VMOVMSKPS X15, AX
	CMPB AX, $0xf
	SETEQ ok+72(FP)
	VZEROUPPER
	RET

// TAIL4 loads into y the mask of the first R8 (0…4) lanes, using AX and R9.
#define TAIL4(y) \
	MOVQ $4, AX; \
	SUBQ R8, AX; \
	LEAQ tail64<>(SB), R9; \
	VMOVDQU (R9)(AX*8), y

// HSUM4 leaves in the low lane of x the sum of the 4 lanes of y, using tx.
#define HSUM4(y, x, tx) \
	VEXTRACTF128 $1, y, tx; \
	VADDPD tx, x, x; \
	VPERMILPD $1, x, tx; \
	VADDSD tx, x, x

// func maxAVX2(x []float64) float64
TEXT ·maxAVX2(SB), NOSPLIT, $0-32
	MOVQ x_base+0(FP), SI
	MOVQ x_len+8(FP), CX
	VBROADCASTSD expc4<>+544(SB), Y0
	VMOVAPD Y0, Y1
	VMOVAPD Y0, Y2
	VMOVAPD Y0, Y3
	VMOVAPD Y0, Y8
	XORQ BX, BX
	MOVQ CX, DX
	ANDQ $-16, DX
	JZ mx4

mx16:
	VMOVUPD (SI)(BX*8), Y4
	VMOVUPD 32(SI)(BX*8), Y5
	VMOVUPD 64(SI)(BX*8), Y6
	VMOVUPD 96(SI)(BX*8), Y7
	VMAXPD Y0, Y4, Y0 // v > m ? v : m, so NaNs are skipped
	VMAXPD Y1, Y5, Y1
	VMAXPD Y2, Y6, Y2
	VMAXPD Y3, Y7, Y3
	ADDQ $16, BX
	CMPQ BX, DX
	JB mx16

mx4:
	LEAQ 4(BX), DX
	CMPQ DX, CX
	JA mxTail
	VMOVUPD (SI)(BX*8), Y4
	VMAXPD Y0, Y4, Y0
	MOVQ DX, BX
	JMP mx4

mxTail:
	MOVQ CX, R8
	SUBQ BX, R8
	JZ mxDone
	TAIL4(Y6)
	VMASKMOVPD (SI)(BX*8), Y6, Y4
	VBLENDVPD Y6, Y4, Y8, Y4 // -Inf in the lanes past the end
	VMAXPD Y0, Y4, Y0

mxDone:
	VMAXPD Y1, Y0, Y0
	VMAXPD Y3, Y2, Y2
	VMAXPD Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPD X1, X0, X0
	VPERMILPD $1, X0, X1
	VMAXSD X1, X0, X0
	VMOVSD X0, ret+24(FP)
	VZEROUPPER
	RET

// func scaleAllAVX2(x []float64, a float64)
TEXT ·scaleAllAVX2(SB), NOSPLIT, $0-32
	MOVQ x_base+0(FP), DI
	MOVQ x_len+8(FP), CX
	VBROADCASTSD a+24(FP), Y15
	XORQ BX, BX
	MOVQ CX, DX
	ANDQ $-16, DX
	JZ sa4

sa16:
	VMULPD (DI)(BX*8), Y15, Y0
	VMULPD 32(DI)(BX*8), Y15, Y1
	VMULPD 64(DI)(BX*8), Y15, Y2
	VMULPD 96(DI)(BX*8), Y15, Y3
	VMOVUPD Y0, (DI)(BX*8)
	VMOVUPD Y1, 32(DI)(BX*8)
	VMOVUPD Y2, 64(DI)(BX*8)
	VMOVUPD Y3, 96(DI)(BX*8)
	ADDQ $16, BX
	CMPQ BX, DX
	JB sa16

sa4:
	LEAQ 4(BX), DX
	CMPQ DX, CX
	JA saTail
	VMULPD (DI)(BX*8), Y15, Y0
	VMOVUPD Y0, (DI)(BX*8)
	MOVQ DX, BX
	JMP sa4

saTail:
	MOVQ CX, R8
	SUBQ BX, R8
	JZ saDone
	TAIL4(Y6)
	VMASKMOVPD (DI)(BX*8), Y6, Y0
	VMULPD Y0, Y15, Y0
	VMASKMOVPD Y0, Y6, (DI)(BX*8)

saDone:
	VZEROUPPER
	RET

// func axpyToAVX2(dst, y []float64, a float64, x []float64)
TEXT ·axpyToAVX2(SB), NOSPLIT, $0-80
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ y_base+24(FP), R10
	VBROADCASTSD a+48(FP), Y15
	MOVQ x_base+56(FP), SI
	XORQ BX, BX
	MOVQ CX, DX
	ANDQ $-16, DX
	JZ at4

at16:
	VMULPD (SI)(BX*8), Y15, Y0
	VMULPD 32(SI)(BX*8), Y15, Y1
	VMULPD 64(SI)(BX*8), Y15, Y2
	VMULPD 96(SI)(BX*8), Y15, Y3
	VADDPD (R10)(BX*8), Y0, Y0
	VADDPD 32(R10)(BX*8), Y1, Y1
	VADDPD 64(R10)(BX*8), Y2, Y2
	VADDPD 96(R10)(BX*8), Y3, Y3
	VMOVUPD Y0, (DI)(BX*8)
	VMOVUPD Y1, 32(DI)(BX*8)
	VMOVUPD Y2, 64(DI)(BX*8)
	VMOVUPD Y3, 96(DI)(BX*8)
	ADDQ $16, BX
	CMPQ BX, DX
	JB at16

at4:
	LEAQ 4(BX), DX
	CMPQ DX, CX
	JA atTail
	VMULPD (SI)(BX*8), Y15, Y0
	VADDPD (R10)(BX*8), Y0, Y0
	VMOVUPD Y0, (DI)(BX*8)
	MOVQ DX, BX
	JMP at4

atTail:
	MOVQ CX, R8
	SUBQ BX, R8
	JZ atDone
	TAIL4(Y6)
	VMASKMOVPD (SI)(BX*8), Y6, Y0
	VMASKMOVPD (R10)(BX*8), Y6, Y1
	VMULPD Y0, Y15, Y0
	VADDPD Y1, Y0, Y0
	VMASKMOVPD Y0, Y6, (DI)(BX*8)

atDone:
	VZEROUPPER
	RET

// func dotDiffAVX2(g, x, y []float64) float64
TEXT ·dotDiffAVX2(SB), NOSPLIT, $0-80
	MOVQ g_base+0(FP), R10
	MOVQ g_len+8(FP), CX
	MOVQ x_base+24(FP), SI
	MOVQ y_base+48(FP), DI
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	XORQ BX, BX
	MOVQ CX, DX
	ANDQ $-16, DX
	JZ dd4

dd16:
	VMOVUPD (SI)(BX*8), Y4
	VMOVUPD 32(SI)(BX*8), Y5
	VMOVUPD 64(SI)(BX*8), Y6
	VMOVUPD 96(SI)(BX*8), Y7
	VSUBPD (DI)(BX*8), Y4, Y4
	VSUBPD 32(DI)(BX*8), Y5, Y5
	VSUBPD 64(DI)(BX*8), Y6, Y6
	VSUBPD 96(DI)(BX*8), Y7, Y7
	VFMADD231PD (R10)(BX*8), Y4, Y0
	VFMADD231PD 32(R10)(BX*8), Y5, Y1
	VFMADD231PD 64(R10)(BX*8), Y6, Y2
	VFMADD231PD 96(R10)(BX*8), Y7, Y3
	ADDQ $16, BX
	CMPQ BX, DX
	JB dd16

dd4:
	LEAQ 4(BX), DX
	CMPQ DX, CX
	JA ddTail
	VMOVUPD (SI)(BX*8), Y4
	VSUBPD (DI)(BX*8), Y4, Y4
	VFMADD231PD (R10)(BX*8), Y4, Y0
	MOVQ DX, BX
	JMP dd4

ddTail:
	MOVQ CX, R8
	SUBQ BX, R8
	JZ ddDone
	TAIL4(Y6)
	VMASKMOVPD (SI)(BX*8), Y6, Y4
	VMASKMOVPD (DI)(BX*8), Y6, Y5
	VMASKMOVPD (R10)(BX*8), Y6, Y7
	VSUBPD Y5, Y4, Y4
	VFMADD231PD Y7, Y4, Y0

ddDone:
	VADDPD Y1, Y0, Y0
	VADDPD Y3, Y2, Y2
	VADDPD Y2, Y0, Y0
	HSUM4(Y0, X0, X1)
	VMOVSD X0, ret+72(FP)
	VZEROUPPER
	RET

// MASK4(v, y) loads into y the mask of the lanes of vector v (0…3) among the
// first R8 cells of a row (clamped to 0…4), using AX, CX and R9.
#define MASK4(v, y) \
	MOVQ R8, CX; \
	SUBQ $(4*v), CX; \
	MOVL $0, AX; \
	CMOVQLT AX, CX; \
	MOVL $4, AX; \
	CMPQ CX, AX; \
	CMOVQGT AX, CX; \
	SUBQ CX, AX; \
	LEAQ tail64<>(SB), R9; \
	VMOVDQU (R9)(AX*8), y

// REDUCE_SMALL4 is REDUCE_SMALL (kernel_amd64.s) on 4-lane registers, with
// the identity in Y15: with 1, 2, 4 or 8 columns the run is reduced 8 cells
// (two registers) at a time and folded; other widths row by row, a row in up
// to four masked registers (masks Y8–Y11).
#define REDUCE_SMALL4(OP) \
	MOVQ R12, R14; \
	IMULQ R13, R14; \
	CMPQ R13, $8; \
	JA r4Rows; \
	LEAQ -1(R13), AX; \
	TESTQ R13, AX; \
	JNZ r4Rows; \
r4Block: \
	VMOVAPD Y15, Y0; \
	VMOVAPD Y15, Y1; \
	VMOVAPD Y15, Y2; \
	VMOVAPD Y15, Y3; \
	XORQ BX, BX; \
	MOVQ R14, DX; \
	ANDQ $-16, DX; \
	JZ r48; \
r416: \
	VMOVUPD (SI)(BX*8), Y4; \
	VMOVUPD 32(SI)(BX*8), Y5; \
	VMOVUPD 64(SI)(BX*8), Y6; \
	VMOVUPD 96(SI)(BX*8), Y7; \
	OP Y0, Y4, Y0; \
	OP Y1, Y5, Y1; \
	OP Y2, Y6, Y2; \
	OP Y3, Y7, Y3; \
	ADDQ $16, BX; \
	CMPQ BX, DX; \
	JB r416; \
r48: \
	LEAQ 8(BX), DX; \
	CMPQ DX, R14; \
	JA r4Tail; \
	VMOVUPD (SI)(BX*8), Y4; \
	VMOVUPD 32(SI)(BX*8), Y5; \
	OP Y0, Y4, Y0; \
	OP Y1, Y5, Y1; \
	MOVQ DX, BX; \
r4Tail: \
	MOVQ R14, R8; \
	SUBQ BX, R8; \
	JZ r4Fold; \
	MASK4(0, Y8); \
	MASK4(1, Y9); \
	VMASKMOVPD (SI)(BX*8), Y8, Y4; \
	VMASKMOVPD 32(SI)(BX*8), Y9, Y5; \
	VBLENDVPD Y8, Y4, Y15, Y4; \
	VBLENDVPD Y9, Y5, Y15, Y5; \
	OP Y0, Y4, Y0; \
	OP Y1, Y5, Y1; \
r4Fold: \
	OP Y2, Y0, Y0; \
	OP Y3, Y1, Y1; \
	CMPQ R13, $8; \
	JEQ r4Store8; \
	OP Y1, Y0, Y0; \
	CMPQ R13, $4; \
	JEQ r4Store4; \
	VEXTRACTF128 $1, Y0, X1; \
	OP X1, X0, X0; \
	CMPQ R13, $2; \
	JEQ r4Store2; \
	VPERMILPD $1, X0, X1; \
	OP X1, X0, X0; \
	VMOVSD X0, (DI); \
	JMP r4Next; \
r4Store2: \
	VMOVUPD X0, (DI); \
	JMP r4Next; \
r4Store4: \
	VMOVUPD Y0, (DI); \
	JMP r4Next; \
r4Store8: \
	VMOVUPD Y0, (DI); \
	VMOVUPD Y1, 32(DI); \
r4Next: \
	LEAQ (DI)(R13*8), DI; \
	LEAQ (SI)(R14*8), SI; \
	DECQ R11; \
	JNZ r4Block; \
	JMP r4Done; \
r4Rows: \
	MOVQ R13, R8; \
	MASK4(0, Y8); \
	MASK4(1, Y9); \
	MASK4(2, Y10); \
	MASK4(3, Y11); \
r4RowBlock: \
	VMOVAPD Y15, Y0; \
	VMOVAPD Y15, Y1; \
	VMOVAPD Y15, Y2; \
	VMOVAPD Y15, Y3; \
	MOVQ SI, R10; \
	MOVQ R12, CX; \
r4Row: \
	VMASKMOVPD (R10), Y8, Y4; \
	VMASKMOVPD 32(R10), Y9, Y5; \
	VMASKMOVPD 64(R10), Y10, Y6; \
	VMASKMOVPD 96(R10), Y11, Y7; \
	OP Y0, Y4, Y0; \
	OP Y1, Y5, Y1; \
	OP Y2, Y6, Y2; \
	OP Y3, Y7, Y3; \
	LEAQ (R10)(R13*8), R10; \
	DECQ CX; \
	JNZ r4Row; \
	VMASKMOVPD Y0, Y8, (DI); \
	VMASKMOVPD Y1, Y9, 32(DI); \
	VMASKMOVPD Y2, Y10, 64(DI); \
	VMASKMOVPD Y3, Y11, 96(DI); \
	LEAQ (DI)(R13*8), DI; \
	LEAQ (SI)(R14*8), SI; \
	DECQ R11; \
	JNZ r4RowBlock; \
r4Done:

// func reduceSmallSumAVX2(dst, src []float64, outer, s, inner int)
TEXT ·reduceSmallSumAVX2(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ outer+48(FP), R11
	MOVQ s+56(FP), R12
	MOVQ inner+64(FP), R13
	VXORPD Y15, Y15, Y15
	REDUCE_SMALL4(VADDPD)
	VZEROUPPER
	RET

// func reduceSmallMaxAVX2(dst, src []float64, outer, s, inner int)
TEXT ·reduceSmallMaxAVX2(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ outer+48(FP), R11
	MOVQ s+56(FP), R12
	MOVQ inner+64(FP), R13
	VBROADCASTSD expc4<>+544(SB), Y15
	REDUCE_SMALL4(VMAXPD)
	VZEROUPPER
	RET

// REDUCE_COLS4 is REDUCE_COLS (kernel_amd64.s) on 4-lane registers: 16
// columns at a time, the last < 16 under masks Y8–Y11.
#define REDUCE_COLS4(OP) \
c4Block: \
	XORQ BX, BX; \
c4Cols: \
	LEAQ 16(BX), DX; \
	CMPQ DX, R13; \
	JA c4Rest; \
	LEAQ (SI)(BX*8), R10; \
	VMOVUPD (R10), Y0; \
	VMOVUPD 32(R10), Y1; \
	VMOVUPD 64(R10), Y2; \
	VMOVUPD 96(R10), Y3; \
	MOVQ R12, R14; \
	DECQ R14; \
	JZ c4Store; \
c4Row: \
	ADDQ R15, R10; \
	VMOVUPD (R10), Y4; \
	VMOVUPD 32(R10), Y5; \
	VMOVUPD 64(R10), Y6; \
	VMOVUPD 96(R10), Y7; \
	OP Y0, Y4, Y0; \
	OP Y1, Y5, Y1; \
	OP Y2, Y6, Y2; \
	OP Y3, Y7, Y3; \
	DECQ R14; \
	JNZ c4Row; \
c4Store: \
	VMOVUPD Y0, (DI)(BX*8); \
	VMOVUPD Y1, 32(DI)(BX*8); \
	VMOVUPD Y2, 64(DI)(BX*8); \
	VMOVUPD Y3, 96(DI)(BX*8); \
	MOVQ DX, BX; \
	JMP c4Cols; \
c4Rest: \
	MOVQ R13, R8; \
	SUBQ BX, R8; \
	JZ c4Next; \
	MASK4(0, Y8); \
	MASK4(1, Y9); \
	MASK4(2, Y10); \
	MASK4(3, Y11); \
	LEAQ (SI)(BX*8), R10; \
	VMASKMOVPD (R10), Y8, Y0; \
	VMASKMOVPD 32(R10), Y9, Y1; \
	VMASKMOVPD 64(R10), Y10, Y2; \
	VMASKMOVPD 96(R10), Y11, Y3; \
	MOVQ R12, R14; \
	DECQ R14; \
	JZ c4RestStore; \
c4RestRow: \
	ADDQ R15, R10; \
	VMASKMOVPD (R10), Y8, Y4; \
	VMASKMOVPD 32(R10), Y9, Y5; \
	VMASKMOVPD 64(R10), Y10, Y6; \
	VMASKMOVPD 96(R10), Y11, Y7; \
	OP Y0, Y4, Y0; \
	OP Y1, Y5, Y1; \
	OP Y2, Y6, Y2; \
	OP Y3, Y7, Y3; \
	DECQ R14; \
	JNZ c4RestRow; \
c4RestStore: \
	VMASKMOVPD Y0, Y8, (DI)(BX*8); \
	VMASKMOVPD Y1, Y9, 32(DI)(BX*8); \
	VMASKMOVPD Y2, Y10, 64(DI)(BX*8); \
	VMASKMOVPD Y3, Y11, 96(DI)(BX*8); \
c4Next: \
	LEAQ (DI)(R13*8), DI; \
	MOVQ R15, AX; \
	IMULQ R12, AX; \
	ADDQ AX, SI; \
	DECQ R11; \
	JNZ c4Block

// func reduceColsSumAVX2(dst, src []float64, outer, s, width, stride int)
TEXT ·reduceColsSumAVX2(SB), NOSPLIT, $0-80
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ outer+48(FP), R11
	MOVQ s+56(FP), R12
	MOVQ width+64(FP), R13
	MOVQ stride+72(FP), R15
	SHLQ $3, R15
	REDUCE_COLS4(VADDPD)
	VZEROUPPER
	RET

// func reduceColsMaxAVX2(dst, src []float64, outer, s, width, stride int)
TEXT ·reduceColsMaxAVX2(SB), NOSPLIT, $0-80
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ outer+48(FP), R11
	MOVQ s+56(FP), R12
	MOVQ width+64(FP), R13
	MOVQ stride+72(FP), R15
	SHLQ $3, R15
	REDUCE_COLS4(VMAXPD)
	VZEROUPPER
	RET
