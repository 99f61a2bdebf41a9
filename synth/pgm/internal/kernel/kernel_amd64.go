//go:build amd64 && !purego

package kernel

import (
	"math"

	"golang.org/x/sys/cpu"
)

// Implementation levels: the Go references; AVX2 and FMA
// (kernel_avx2_amd64.s); AVX-512 F, DQ and VL, with BMI2 for the tail masks
// (kernel_amd64.s).
const (
	levelGo = iota
	levelAVX2
	levelAVX512
)

var (
	hasAVX2   = cpu.X86.HasAVX2 && cpu.X86.HasFMA
	hasAVX512 = hasAVX2 && cpu.X86.HasAVX512F && cpu.X86.HasAVX512DQ && cpu.X86.HasAVX512VL && cpu.X86.HasBMI2
)

// levels lists the implementations this CPU can run, for the tests.
var levels = func() []int {
	l := []int{levelGo}
	if hasAVX2 {
		l = append(l, levelAVX2)
	}
	if hasAVX512 {
		l = append(l, levelAVX512)
	}
	return l
}()

// level is the implementation in use, the best there is; tests switch it to
// compare them.
var level = levels[len(levels)-1]

// The gather kernels check every index against len(src) (unsigned, so
// negative ones fail too) and report false if one was out of range; their Go
// wrappers then run the reference loop, which panics with the usual index
// error. src is cut to MaxInt32 cells so that its length fits the 32-bit
// compare; every int32 index is below that.

//go:noescape
func expandAVX512(dst, src []float64, idx []int32) (ok bool)

//go:noescape
func scaleAVX512(x, f []float64, idx []int32) (ok bool)

//go:noescape
func expShiftGatherAVX512(x, shift []float64, idx []int32) (ok bool)

//go:noescape
func expShiftTotalAVX512(x []float64, s float64) (sum float64)

//go:noescape
func expShiftGatherAVX2(x, shift []float64, idx []int32) (ok bool)

//go:noescape
func expShiftTotalAVX2(x []float64, s float64) (sum float64)

//go:noescape
func expandAVX2(dst, src []float64, idx []int32) (ok bool)

//go:noescape
func scaleAVX2(x, f []float64, idx []int32) (ok bool)

//go:noescape
func maxAVX2(x []float64) float64

//go:noescape
func scaleAllAVX2(x []float64, a float64)

//go:noescape
func axpyToAVX2(dst, y []float64, a float64, x []float64)

//go:noescape
func dotDiffAVX2(g, x, y []float64) float64

//go:noescape
func maxAVX512(x []float64) float64

//go:noescape
func scaleAllAVX512(x []float64, a float64)

//go:noescape
func axpyToAVX512(dst, y []float64, a float64, x []float64)

//go:noescape
func dotDiffAVX512(g, x, y []float64) float64

func clip32(src []float64) []float64 {
	if len(src) > math.MaxInt32 {
		return src[:math.MaxInt32]
	}
	return src
}

func expand(dst, src []float64, idx []int32) {
	var ok bool
	switch {
	case level >= levelAVX512:
		ok = expandAVX512(dst, clip32(src), idx)
	case level >= levelAVX2:
		ok = expandAVX2(dst, clip32(src), idx)
	}
	if !ok {
		expandGo(dst, src, idx)
	}
}

func scale(x, f []float64, idx []int32) {
	var ok bool
	switch {
	case level >= levelAVX512:
		ok = scaleAVX512(x, clip32(f), idx)
	case level >= levelAVX2:
		ok = scaleAVX2(x, clip32(f), idx)
	}
	if !ok {
		scaleGo(x, f, idx)
	}
}

func expShiftGather(x, shift []float64, idx []int32) {
	var ok bool
	switch {
	case level >= levelAVX512:
		ok = expShiftGatherAVX512(x, clip32(shift), idx)
	case level >= levelAVX2:
		ok = expShiftGatherAVX2(x, clip32(shift), idx)
	}
	if !ok {
		expShiftGatherGo(x, shift, idx)
	}
}

func expShiftTotal(x []float64, s float64) float64 {
	switch {
	case level >= levelAVX512:
		return expShiftTotalAVX512(x, s)
	case level >= levelAVX2:
		return expShiftTotalAVX2(x, s)
	}
	return expShiftTotalGo(x, s)
}

func expShiftInPlace(x []float64, s float64) {
	switch {
	case level >= levelAVX512:
		expShiftTotalAVX512(x, s)
	case level >= levelAVX2:
		expShiftTotalAVX2(x, s)
	default:
		expShiftGo(x, s)
	}
}

func maxOf(x []float64) float64 {
	switch {
	case level >= levelAVX512:
		return maxAVX512(x)
	case level >= levelAVX2:
		return maxAVX2(x)
	}
	return maxGo(x)
}

func scaleAll(x []float64, a float64) {
	switch {
	case level >= levelAVX512:
		scaleAllAVX512(x, a)
	case level >= levelAVX2:
		scaleAllAVX2(x, a)
	default:
		scaleAllGo(x, a)
	}
}

// axpy is axpyTo in place: the kernels read each cell before writing it.
func axpy(y []float64, a float64, x []float64) { axpyTo(y, y, a, x) }

func axpyTo(dst, y []float64, a float64, x []float64) {
	switch {
	case level >= levelAVX512:
		axpyToAVX512(dst, y, a, x)
	case level >= levelAVX2:
		axpyToAVX2(dst, y, a, x)
	default:
		axpyToGo(dst, y, a, x)
	}
}

func dotDiff(g, x, y []float64) float64 {
	switch {
	case level >= levelAVX512:
		return dotDiffAVX512(g, x, y)
	case level >= levelAVX2:
		return dotDiffAVX2(g, x, y)
	}
	return dotDiffGo(g, x, y)
}

// The reductions trust their shapes: outer blocks of s rows; row j of block
// o starts at src[(o·s + j)·stride] and has width cells, and block o's
// result goes to dst[o·width:]. Their callers check the bounds.

//go:noescape
func reduceSmallSumAVX512(dst, src []float64, outer, s, inner int)

//go:noescape
func reduceSmallMaxAVX512(dst, src []float64, outer, s, inner int)

//go:noescape
func reduceColsSumAVX512(dst, src []float64, outer, s, width, stride int)

//go:noescape
func reduceColsMaxAVX512(dst, src []float64, outer, s, width, stride int)

//go:noescape
func reduceSmallSumAVX2(dst, src []float64, outer, s, inner int)

//go:noescape
func reduceSmallMaxAVX2(dst, src []float64, outer, s, inner int)

//go:noescape
func reduceColsSumAVX2(dst, src []float64, outer, s, width, stride int)

//go:noescape
func reduceColsMaxAVX2(dst, src []float64, outer, s, width, stride int)

// reduceAxisArch is reduceAxis (whose lengths are checked) with the same
// split as reduceAxisGo: inner < 16 reduces each block's rows in registers
// (a maximum skipping NaNs), wider blocks go column-block by column-block
// from a copy of the first row.
func reduceAxisArch(dst, src []float64, st step, isMax bool) {
	if level < levelAVX2 || st.outer <= 0 || st.s <= 0 || st.inner <= 0 {
		reduceAxisGo(dst, src, st, isMax)
		return
	}
	if st.inner < 16 {
		reduceSmall(dst, src, st.outer, st.s, st.inner, isMax)
	} else {
		reduceCols(dst, src, st.outer, st.s, st.inner, st.inner, isMax)
	}
}

func reduceColumnsArch(dst, src []float64, s, inner, lo int, isMax bool) {
	w := len(dst)
	// Row j reads src[j·inner+lo : j·inner+lo+w]; the last row must fit.
	if level < levelAVX2 || s <= 0 || w == 0 || lo < 0 || inner < 0 || (s-1)*inner+lo+w > len(src) {
		reduceColumnsGo(dst, src, s, inner, lo, isMax)
		return
	}
	reduceCols(dst, src[lo:], 1, s, w, inner, isMax)
}

// narrowImpl is the accumulator layout of reduceSmall's sums at the level
// in use (see narrow.go).
func narrowImpl() int {
	switch level {
	case levelAVX512:
		return narrowRun32
	case levelGo:
		return narrowRows4
	}
	return narrowNone
}

//go:noescape
func addRun32AVX512(a, x []float64)

//go:noescape
func maxIntoAVX512(d, x []float64)

func maxInto(d, x []float64) {
	if level >= levelAVX512 {
		maxIntoAVX512(d, x)
		return
	}
	maxIntoGo(d, x)
}

func addRun32(a, x []float64) {
	if level >= levelAVX512 && len(a) >= 32 && len(x)%32 == 0 {
		addRun32AVX512(a, x)
		return
	}
	addRun32Go(a, x)
}

func reduceSmall(dst, src []float64, outer, s, inner int, isMax bool) {
	switch {
	case level >= levelAVX512 && isMax:
		reduceSmallMaxAVX512(dst, src, outer, s, inner)
	case level >= levelAVX512:
		reduceSmallSumAVX512(dst, src, outer, s, inner)
	case isMax:
		reduceSmallMaxAVX2(dst, src, outer, s, inner)
	default:
		reduceSmallSumAVX2(dst, src, outer, s, inner)
	}
}

func reduceCols(dst, src []float64, outer, s, width, stride int, isMax bool) {
	switch {
	case level >= levelAVX512 && isMax:
		reduceColsMaxAVX512(dst, src, outer, s, width, stride)
	case level >= levelAVX512:
		reduceColsSumAVX512(dst, src, outer, s, width, stride)
	case isMax:
		reduceColsMaxAVX2(dst, src, outer, s, width, stride)
	default:
		reduceColsSumAVX2(dst, src, outer, s, width, stride)
	}
}
