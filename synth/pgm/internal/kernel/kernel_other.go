//go:build !amd64 || purego

package kernel

// Without assembly every kernel runs its Go reference.

func expand(dst, src []float64, idx []int32)         { expandGo(dst, src, idx) }
func scale(x, f []float64, idx []int32)              { scaleGo(x, f, idx) }
func expShiftGather(x, shift []float64, idx []int32) { expShiftGatherGo(x, shift, idx) }
func expShiftTotal(x []float64, s float64) float64   { return expShiftTotalGo(x, s) }
func expShiftInPlace(x []float64, s float64)         { expShiftGo(x, s) }
func maxOf(x []float64) float64                      { return maxGo(x) }
func scaleAll(x []float64, a float64)                { scaleAllGo(x, a) }
func axpy(y []float64, a float64, x []float64)       { axpyGo(y, a, x) }
func axpyTo(dst, y []float64, a float64, x []float64) {
	axpyToGo(dst, y, a, x)
}
func dotDiff(g, x, y []float64) float64 { return dotDiffGo(g, x, y) }

func reduceAxisArch(dst, src []float64, st step, isMax bool) { reduceAxisGo(dst, src, st, isMax) }

func reduceColumnsArch(dst, src []float64, s, inner, lo int, isMax bool) {
	reduceColumnsGo(dst, src, s, inner, lo, isMax)
}

// levels lists the implementations the tests compare; only Go here.
var levels = []int{levelGo}

const levelGo = 0

var level = levelGo

func narrowImpl() int         { return narrowRows4 }
func addRun32(a, x []float64) { addRun32Go(a, x) }
func maxInto(d, x []float64)  { maxIntoGo(d, x) }
