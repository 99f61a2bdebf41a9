package kernel

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestReductionAgainstMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	for trial := range 500 {
		k := rng.IntN(6)
		sizes := make([]int, k)
		for i := range sizes {
			sizes[i] = 1 + rng.IntN(4)
		}
		var keep []int
		for d := range k {
			if rng.IntN(2) == 0 {
				keep = append(keep, d)
			}
		}
		idx := Map(sizes, keep)
		r := NewReduction(sizes, keep)
		src := make([]float64, len(idx))
		for i := range src {
			src[i] = rng.NormFloat64()
		}
		wantSum := make([]float64, r.Out())
		Project(wantSum, src, idx)
		wantMax := make([]float64, r.Out())
		MaxTo(wantMax, src, idx)
		scratch := make([]float64, r.Scratch())
		for i := range scratch {
			scratch[i] = math.NaN() // must be written before read
		}
		gotSum, all := guarded(r.Out())
		r.Sum(gotSum, src, scratch)
		checkGuard(t, "Sum", gotSum, all)
		gotMax, all2 := guarded(r.Out())
		r.Max(gotMax, src, scratch)
		checkGuard(t, "Max", gotMax, all2)
		// The split variants, with ranges of one element run in reverse.
		par := func(cells, n int, f func(lo, hi int)) {
			for lo := n - 1; lo >= 0; lo-- {
				f(lo, lo+1)
			}
		}
		parSum := make([]float64, r.Out())
		r.SumPar(parSum, src, scratch, par)
		parMax := make([]float64, r.Out())
		r.MaxPar(parMax, src, scratch, par)
		for i := range wantSum {
			if !close(parSum[i], wantSum[i]) || parMax[i] != wantMax[i] {
				t.Fatalf("trial %d sizes %v keep %v cell %d: split sum %v max %v, want %v %v",
					trial, sizes, keep, i, parSum[i], parMax[i], wantSum[i], wantMax[i])
			}
		}
		for i := range wantSum {
			if !close(gotSum[i], wantSum[i]) || gotMax[i] != wantMax[i] {
				t.Fatalf("trial %d sizes %v keep %v cell %d: sum %v max %v, want %v %v",
					trial, sizes, keep, i, gotSum[i], gotMax[i], wantSum[i], wantMax[i])
			}
		}
	}
}
