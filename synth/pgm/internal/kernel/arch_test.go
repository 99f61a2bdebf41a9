package kernel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// These tests run every implementation the CPU supports (the Go references,
// and the assembly on amd64) and compare it with the Go references or with
// math.Exp.

// forLevels runs f once per implementation level, named after it.
func forLevels(t *testing.T, f func(t *testing.T)) {
	saved := level
	defer func() { level = saved }()
	for _, l := range levels {
		level = l
		t.Run(fmt.Sprint("level", l), f)
	}
	if len(levels) == 1 {
		t.Log("only the Go implementation is available on this CPU")
	}
}

// testLengths covers every tail length around the unrolled block sizes, and
// the largest table of the adult benchmark.
func testLengths() []int {
	var ns []int
	for n := 0; n <= 300; n++ {
		ns = append(ns, n)
	}
	return append(ns, 1021, adultCells)
}

// sameBits reports whether a and b are equal or both NaN (the sign of zero
// matters).
func sameBits(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b) || (math.IsNaN(a) && math.IsNaN(b))
}

// sameValue is == with NaN equal to NaN (so -0 equals +0).
func sameValue(a, b float64) bool {
	return a == b || (math.IsNaN(a) && math.IsNaN(b))
}

// expArg returns an argument for exp covering the range the kernels see
// (mostly [-745, 10]) and the special cases.
func expArg(rng *rand.Rand) float64 {
	switch rng.IntN(16) {
	case 0:
		return math.Inf(-1)
	case 1:
		return -708 - rng.Float64()*40 // subnormal results and underflow to 0
	case 2:
		return (rng.Float64()*2 - 1) * 1e-3
	case 3:
		return 700 + rng.Float64()*12 // near and beyond overflow
	case 4:
		return float64(rng.IntN(2000)-1000) * math.Ln2 // k·ln2 and halfway points
	case 5:
		return (float64(rng.IntN(2000)-1000) + 0.5) * math.Ln2
	default:
		return -rng.Float64()*745 + rng.Float64()*10
	}
}

// checkExp fails unless got is within 2 ulps of math.Exp(d) (see expRef;
// exactly 0 for d = -Inf, NaN for NaN); it returns the distance in ulps.
func checkExp(t *testing.T, name string, i int, d, got float64) float64 {
	t.Helper()
	want, bound := expRef(d)
	switch {
	case math.IsNaN(want):
		if !math.IsNaN(got) {
			t.Fatalf("%s[%d]: exp(%v) = %v, want NaN", name, i, d, got)
		}
		return 0
	case math.IsInf(d, -1):
		if math.Float64bits(got) != 0 {
			t.Fatalf("%s[%d]: exp(-Inf) = %v, want 0", name, i, got)
		}
		return 0
	case math.IsInf(want, 1) || math.IsInf(got, 1):
		if got != want {
			t.Fatalf("%s[%d]: exp(%v) = %v, want %v", name, i, d, got, want)
		}
		return 0
	}
	u := ulps(got, want)
	if u > bound || got < 0 {
		t.Fatalf("%s[%d]: exp(%v) = %v, math.Exp = %v (%v ulps)", name, i, d, got, want, u)
	}
	return u
}

func TestArchExpShift(t *testing.T) {
	forLevels(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(11, 12))
		var worst float64
		for _, n := range testLengths() {
			x := make([]float64, n)
			for i := range x {
				x[i] = expArg(rng)
			}
			if n > 0 && rng.IntN(4) == 0 {
				x[rng.IntN(n)] = math.NaN()
			}
			for _, s := range []float64{0, 2.5, -3, math.Inf(1)} {
				got, all := guarded(n)
				copy(got, x)
				sum := ExpShiftTotal(got, s)
				checkGuard(t, "ExpShiftTotal", got, all)
				ref := append([]float64(nil), x...)
				refSum := expShiftTotalGo(ref, s)
				for i, v := range x {
					worst = math.Max(worst, checkExp(t, "ExpShiftTotal", i, v-s, got[i]))
				}
				if !relClose(sum, refSum, 1e-13) {
					t.Fatalf("n=%d s=%v: ExpShiftTotal sum = %v, reference %v", n, s, sum, refSum)
				}
				got2, all2 := guarded(n)
				copy(got2, x)
				ExpShift(got2, s)
				checkGuard(t, "ExpShift", got2, all2)
				for i := range x {
					if !sameBits(got2[i], got[i]) {
						t.Fatalf("ExpShift[%d] = %v, ExpShiftTotal gave %v", i, got2[i], got[i])
					}
				}
			}
			y := append([]float64(nil), x...)
			if ExpShiftTotal(y, math.Inf(-1)) != 0 {
				t.Fatal("ExpShiftTotal with s = -Inf: nonzero sum")
			}
			for i := range y {
				if math.Float64bits(y[i]) != 0 {
					t.Fatalf("ExpShiftTotal with s = -Inf: [%d] = %v", i, y[i])
				}
			}
		}
		t.Logf("worst difference from math.Exp: %v ulps", worst)
	})
}

// relClose reports |a-b| ≤ tol·max(|a|,|b|), or both NaN, or a == b.
func relClose(a, b, tol float64) bool {
	if a == b || (math.IsNaN(a) && math.IsNaN(b)) {
		return true
	}
	return math.Abs(a-b) <= tol*math.Max(math.Abs(a), math.Abs(b))
}

// randomMap returns an index map for a random table of about n cells (some
// from Map, some random, some mostly within windows of 8 indices, as a
// broadcast along dropped inner axes gives, up to the sub-table's end) and
// the length of the sub-table.
func randomMap(rng *rand.Rand, n int) ([]int32, int) {
	switch rng.IntN(5) {
	case 0:
		m := 1 + rng.IntN(n+1)
		idx := make([]int32, n)
		for i := range idx {
			idx[i] = int32(rng.IntN(m))
		}
		return idx, m
	case 1:
		r := 1 + rng.IntN(9) // each index repeated r times, give or take
		m := max(1, n/r)
		idx := make([]int32, n)
		for i := range idx {
			v := i / r
			if rng.IntN(16) == 0 {
				v += rng.IntN(17) - 8 // a jump out of the window, either way
			}
			idx[i] = int32(min(max(v, 0), m-1))
		}
		return idx, m
	}
	sizes := []int{n}
	var keep []int
	switch rng.IntN(4) {
	case 0:
		keep = []int{0}
	case 1:
		keep = nil
	default:
		// Factor n into axes when it can be.
		sizes = sizes[:0]
		r := n
		for _, p := range []int{2, 3, 5, 7, 2, 3, 2} {
			if r%p == 0 && r > p {
				sizes = append(sizes, p)
				r /= p
			}
		}
		sizes = append(sizes, r)
		for d := range sizes {
			if rng.IntN(2) == 0 {
				keep = append(keep, d)
			}
		}
	}
	if n == 0 {
		return []int32{}, 1
	}
	idx := Map(sizes, keep)
	m := 1
	for _, d := range keep {
		m *= sizes[d]
	}
	return idx, m
}

func TestArchGatherKernels(t *testing.T) {
	forLevels(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(21, 22))
		maps := [][]int32{Map(adultSizes, []int{1, 2, 3, 4}), Map(adultSizes, []int{0, 4}), Map(adultSizes, []int{0, 3})}
		for trial, n := range testLengths() {
			idx, m := randomMap(rng, n)
			if n == adultCells {
				idx = maps[trial%len(maps)]
				m = int(maxIdx(idx)) + 1
			}
			sub := make([]float64, m)
			for i := range sub {
				sub[i] = rng.NormFloat64() * 10
			}
			if m > 1 {
				sub[rng.IntN(m)] = math.Inf(-1)
				sub[rng.IntN(m)] = math.NaN()
			}
			x := make([]float64, n)
			for i := range x {
				x[i] = rng.NormFloat64() * 10
			}

			got, all := guarded(n)
			copy(got, x)
			Expand(got, sub, idx)
			checkGuard(t, "Expand", got, all)
			want := append([]float64(nil), x...)
			expandGo(want, sub, idx)
			for i := range want {
				if !sameBits(got[i], want[i]) {
					t.Fatalf("n=%d: Expand[%d] = %v, want %v", n, i, got[i], want[i])
				}
			}

			got, all = guarded(n)
			copy(got, x)
			Scale(got, sub, idx)
			checkGuard(t, "Scale", got, all)
			want = append(want[:0], x...)
			scaleGo(want, sub, idx)
			for i := range want {
				if !sameBits(got[i], want[i]) {
					t.Fatalf("n=%d: Scale[%d] = %v, want %v", n, i, got[i], want[i])
				}
			}

			// ExpShiftGather: shifts of every kind, arguments in exp's range.
			shift := make([]float64, m)
			for i := range shift {
				switch rng.IntN(8) {
				case 0:
					shift[i] = math.Inf(-1)
				case 1:
					shift[i] = math.Inf(1)
				default:
					shift[i] = rng.NormFloat64() * 5
				}
			}
			if m > 2 {
				shift[rng.IntN(m)] = math.NaN()
			}
			for i := range x {
				x[i] = expArg(rng)
			}
			got, all = guarded(n)
			copy(got, x)
			ExpShiftGather(got, shift, idx)
			checkGuard(t, "ExpShiftGather", got, all)
			for i, v := range x {
				s := shift[idx[i]]
				if math.IsInf(s, -1) {
					if math.Float64bits(got[i]) != 0 {
						t.Fatalf("ExpShiftGather[%d] with shift -Inf = %v", i, got[i])
					}
					continue
				}
				checkExp(t, "ExpShiftGather", i, v-s, got[i])
			}
		}
	})
}

// TestArchGatherBounds checks that an index outside the sub-table panics
// (and that the assembly reads nothing there).
func TestArchGatherBounds(t *testing.T) {
	forLevels(t, func(t *testing.T) {
		for _, bad := range []int32{5, -1, math.MaxInt32, math.MinInt32} {
			for _, n := range []int{1, 8, 9, 40} {
				for _, at := range []int{0, n - 1, n / 2} {
					for k, f := range []func(x, sub []float64, idx []int32){Expand, Scale, ExpShiftGather} {
						idx := make([]int32, n)
						for i := range idx {
							idx[i] = int32(i % 5)
						}
						idx[at] = bad
						func() {
							defer func() {
								if recover() == nil {
									t.Errorf("kernel %d with index %d at %d of %d did not panic", k, bad, at, n)
								}
							}()
							f(make([]float64, n), make([]float64, 5), idx)
						}()
					}
				}
			}
		}
	})
}

func TestArchVectorKernels(t *testing.T) {
	forLevels(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(31, 32))
		for _, n := range testLengths() {
			x, y, g := make([]float64, n), make([]float64, n), make([]float64, n)
			for i := range x {
				x[i], y[i], g[i] = rng.NormFloat64(), rng.NormFloat64()*100, rng.NormFloat64()
			}
			a := rng.NormFloat64()

			got, all := guarded(n)
			AxpyTo(got, y, a, x)
			checkGuard(t, "AxpyTo", got, all)
			want := make([]float64, n)
			axpyToGo(want, y, a, x)
			for i := range want {
				if !sameBits(got[i], want[i]) {
					t.Fatalf("n=%d: AxpyTo[%d] = %v, want %v", n, i, got[i], want[i])
				}
			}

			got, all = guarded(n)
			copy(got, y)
			Axpy(got, a, x)
			checkGuard(t, "Axpy", got, all)
			copy(want, y)
			axpyGo(want, a, x)
			for i := range want {
				if !sameBits(got[i], want[i]) {
					t.Fatalf("n=%d: Axpy[%d] = %v, want %v", n, i, got[i], want[i])
				}
			}

			got, all = guarded(n)
			copy(got, y)
			ScaleAll(got, a)
			checkGuard(t, "ScaleAll", got, all)
			copy(want, y)
			scaleAllGo(want, a)
			for i := range want {
				if !sameBits(got[i], want[i]) {
					t.Fatalf("n=%d: ScaleAll[%d] = %v, want %v", n, i, got[i], want[i])
				}
			}

			// DotDiff: the error bound of a reordered sum.
			var absDiff float64
			for i := range x {
				absDiff += math.Abs(g[i] * (x[i] - y[i]))
			}
			if d, w := DotDiff(g, x, y), dotDiffGo(g, x, y); math.Abs(d-w) > 1e-13*absDiff {
				t.Fatalf("n=%d: DotDiff = %v, want %v", n, d, w)
			}

			// Max, also with NaNs (skipped), -Inf and all-NaN input.
			if got, want := Max(y), maxGo(y); got != want {
				t.Fatalf("n=%d: Max = %v, want %v", n, got, want)
			}
			z := append([]float64(nil), y...)
			for i := range z {
				switch rng.IntN(3) {
				case 0:
					z[i] = math.NaN()
				case 1:
					z[i] = math.Inf(-1)
				}
			}
			if got, want := Max(z), maxGo(z); got != want {
				t.Fatalf("n=%d: Max with NaNs = %v, want %v", n, got, want)
			}
			for i := range z {
				z[i] = math.NaN()
			}
			if got := Max(z); !math.IsInf(got, -1) {
				t.Fatalf("n=%d: Max of NaNs = %v, want -Inf", n, got)
			}
		}
	})
}

// TestArchReduce compares reduceAxis and reduceColumns with their Go
// references on random shapes, with NaN, ±Inf and ±0 in the data: sums up to
// reassociation, maxima exactly (== , NaN where the reference has NaN).
func TestArchReduce(t *testing.T) {
	forLevels(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(41, 42))
		inners := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 15, 16, 17, 24, 31, 32, 33, 40, 63, 64, 65, 84, 100}
		for trial := range 3000 {
			st := step{outer: 1 + rng.IntN(5), s: 1 + rng.IntN(20), inner: inners[rng.IntN(len(inners))]}
			if trial%7 == 0 {
				st.s = 1 + rng.IntN(700)
			}
			src := make([]float64, st.outer*st.s*st.inner)
			special := trial%3 == 0
			for i := range src {
				src[i] = rng.NormFloat64()
				if special {
					switch rng.IntN(12) {
					case 0:
						src[i] = math.NaN()
					case 1:
						src[i] = math.Inf(-1)
					case 2:
						src[i] = math.Inf(1)
					case 3:
						src[i] = 0
					case 4:
						src[i] = math.Copysign(0, -1)
					}
				}
			}
			for _, isMax := range []bool{false, true} {
				got, all := guarded(st.outer * st.inner)
				reduceAxis(got, src, st, isMax)
				checkGuard(t, "reduceAxis", got, all)
				want := make([]float64, len(got))
				reduceAxisGo(want, src, st, isMax)
				checkReduced(t, fmt.Sprint("reduceAxis ", st, isMax), got, want, src, st, isMax)

				// reduceColumns on a random column range of the first block.
				lo := rng.IntN(st.inner)
				hi := lo + rng.IntN(st.inner-lo+1)
				block := src[:st.s*st.inner]
				gotC, allC := guarded(hi - lo)
				reduceColumns(gotC, block, st.s, st.inner, lo, isMax)
				checkGuard(t, "reduceColumns", gotC, allC)
				wantC := make([]float64, hi-lo)
				reduceColumnsGo(wantC, block, st.s, st.inner, lo, isMax)
				for i := range wantC {
					if !reducedEqual(gotC[i], wantC[i], isMax, float64(st.s)) {
						t.Fatalf("reduceColumns %v [%d,%d) max=%v: [%d] = %v, want %v", st, lo, hi, isMax, i, gotC[i], wantC[i])
					}
				}
			}
		}
	})
}

func checkReduced(t *testing.T, name string, got, want, src []float64, st step, isMax bool) {
	t.Helper()
	for i := range want {
		// The scale of a sum is the sum of its terms' magnitudes.
		var scale float64
		o, c := i/st.inner, i%st.inner
		for j := range st.s {
			scale += math.Abs(src[(o*st.s+j)*st.inner+c])
		}
		if !reducedEqual(got[i], want[i], isMax, scale) {
			t.Fatalf("%s: [%d] = %v, want %v", name, i, got[i], want[i])
		}
	}
}

func reducedEqual(got, want float64, isMax bool, scale float64) bool {
	if isMax || math.IsInf(want, 0) || math.IsNaN(want) || math.IsInf(scale, 0) || math.IsNaN(scale) {
		return sameValue(got, want)
	}
	return math.Abs(got-want) <= 1e-13*scale
}

func TestArchReductionAgainstMap(t *testing.T) {
	forLevels(t, TestReductionAgainstMap)
}

func TestArchKernelsAgainstReference(t *testing.T) {
	forLevels(t, TestKernelsAgainstReference)
}

func TestArchKernelsDoNotAllocate(t *testing.T) {
	forLevels(t, func(t *testing.T) {
		x := make([]float64, 1000)
		y := make([]float64, 1000)
		idx := Map([]int{10, 100}, []int{1})
		sub := make([]float64, 100)
		r := NewReduction([]int{10, 100}, []int{1})
		n := testing.AllocsPerRun(10, func() {
			Expand(x, sub, idx)
			Scale(x, sub, idx)
			ExpShiftGather(x, sub, idx)
			ExpShiftTotal(x, 1)
			ExpShift(x, 1)
			Max(x)
			ScaleAll(x, 2)
			Axpy(x, 2, y)
			AxpyTo(x, y, 2, x)
			DotDiff(x, y, x)
			r.Sum(sub, x, nil)
			r.Max(sub, x, nil)
		})
		if n != 0 {
			t.Errorf("kernels allocate %v times", n)
		}
	})
}
