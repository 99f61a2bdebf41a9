//go:build amd64 && !purego

#include "textflag.h"

// AVX2 + FMA versions of the exp kernels, for CPUs without AVX-512: 4 lanes
// per ymm register, constants in memory (no embedded broadcast), tails under
// VMASKMOVPD masks (masked lanes are neither read nor written).

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
