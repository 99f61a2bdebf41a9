package kernel

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestReductionNarrow: a narrow step streamed in pieces of random lengths,
// in order, gives Sum's result bit for bit at every level that supports it,
// for every column count below 16, one or several blocks, and block lengths
// around the 32-cell groups.
func TestReductionNarrow(t *testing.T) {
	forLevels(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(13, 14))
		supported := 0
		for inner := 1; inner < 16; inner++ {
			for _, s := range []int{1, 2, 3, 4, 5, 7, 8, 9, 31, 33, 64, 65, 257, 1001} {
				for _, outer := range []int{1, 3} {
					sizes, keep := []int{s, inner}, []int{1}
					if outer > 1 {
						sizes, keep = []int{outer, s, inner}, []int{0, 2}
					}
					if inner == 1 {
						sizes, keep = sizes[:len(sizes)-1], keep[:len(keep)-1]
						if outer == 1 {
							keep = nil
						}
					}
					r := NewReduction(sizes, keep)
					n, ok := r.Narrow()
					if !ok {
						if narrowImpl() != narrowNone && s > 1 {
							t.Fatalf("%v keep %v: not narrow", sizes, keep)
						}
						continue
					}
					supported++
					src := make([]float64, r.In())
					for i := range src {
						src[i] = rng.NormFloat64() * math.Exp(8*rng.NormFloat64())
					}
					want := make([]float64, r.Out())
					r.Sum(want, src, make([]float64, r.Scratch()))
					for _, maxPiece := range []int{1, 7, 40, 5000} {
						acc := make([]float64, n)
						for lo := 0; lo < len(src); {
							hi := min(len(src), lo+1+rng.IntN(maxPiece))
							r.SumNarrow(acc, src[lo:hi], lo)
							lo = hi
						}
						got := make([]float64, r.Out())
						r.FinishNarrow(got, acc)
						for i := range want {
							if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
								t.Fatalf("%v keep %v pieces ≤ %d: cell %d = %v, want %v", sizes, keep, maxPiece, i, got[i], want[i])
							}
						}
					}
				}
			}
		}
		if supported == 0 && narrowImpl() != narrowNone {
			t.Fatal("no narrow reduction was tested")
		}
	})
}

// TestMaxIntoAndAddRun32: the two small kernels that carry a streamed
// maximum and narrow sums between pieces equal their Go references bit for
// bit at every level and length, NaNs and signed zeros included, and write
// nothing outside their windows.
func TestMaxIntoAndAddRun32(t *testing.T) {
	forLevels(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(15, 16))
		special := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1)}
		value := func() float64 {
			if rng.IntN(6) == 0 {
				return special[rng.IntN(len(special))]
			}
			return rng.NormFloat64() * 10
		}
		for _, n := range testLengths() {
			x := make([]float64, n)
			d0 := make([]float64, n)
			for i := range x {
				x[i], d0[i] = value(), value()
			}
			want := append([]float64(nil), d0...)
			maxIntoGo(want, x)
			got, all := guarded(n)
			copy(got, d0)
			maxInto(got, x)
			checkGuard(t, "maxInto", got, all)
			for i := range want {
				if !sameBits(got[i], want[i]) {
					t.Fatalf("maxInto n=%d: cell %d = %v, want %v (d %v, x %v)", n, i, got[i], want[i], d0[i], x[i])
				}
			}
			if n%32 != 0 {
				continue
			}
			a0 := make([]float64, 32)
			for i := range a0 {
				a0[i] = value()
			}
			wantA := append([]float64(nil), a0...)
			addRun32Go(wantA, x)
			gotA, allA := guarded(32)
			copy(gotA, a0)
			addRun32(gotA, x)
			checkGuard(t, "addRun32", gotA, allA)
			for i := range wantA {
				if !sameBits(gotA[i], wantA[i]) {
					t.Fatalf("addRun32 n=%d: lane %d = %v, want %v", n, i, gotA[i], wantA[i])
				}
			}
		}
	})
}

// TestSumParNarrowIsSum: a single block of fewer than 16 columns is not split
// among workers: SumPar and MaxPar give Sum's and Max's results bit for bit,
// which SumNarrow's streamed sums reproduce.
func TestSumParNarrowIsSum(t *testing.T) {
	forLevels(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(17, 18))
		par := func(cells, n int, f func(lo, hi int)) {
			for lo := n - 1; lo >= 0; lo-- {
				f(lo, lo+1)
			}
		}
		for inner := 2; inner < 16; inner++ {
			r := NewReduction([]int{1000 + rng.IntN(100), inner}, []int{1})
			src := make([]float64, r.In())
			for i := range src {
				src[i] = rng.NormFloat64() * math.Exp(8*rng.NormFloat64())
			}
			scratch := make([]float64, r.Scratch())
			sum, parSum := make([]float64, r.Out()), make([]float64, r.Out())
			mx, parMax := make([]float64, r.Out()), make([]float64, r.Out())
			r.Sum(sum, src, scratch)
			r.SumPar(parSum, src, scratch, par)
			r.Max(mx, src, scratch)
			r.MaxPar(parMax, src, scratch, par)
			for i := range sum {
				if !sameBits(parSum[i], sum[i]) || !sameBits(parMax[i], mx[i]) {
					t.Fatalf("inner %d cell %d: split sum %v max %v, want %v %v", inner, i, parSum[i], parMax[i], sum[i], mx[i])
				}
			}
		}
	})
}
