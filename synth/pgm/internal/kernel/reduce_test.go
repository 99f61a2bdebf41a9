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

// TestReductionBlocks: reducing a single-step table block run by block run
// gives Sum's and Max's results bit for bit.
func TestReductionBlocks(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	cases := []struct {
		sizes, keep []int
		ok          bool
	}{
		{[]int{3, 4, 5}, []int{0, 2}, true},
		{[]int{7, 3, 2}, []int{0, 1}, true},
		{[]int{4, 9, 17, 2}, []int{0, 3}, true},
		{[]int{5, 40, 3}, []int{0}, true},
		{[]int{3, 5, 20}, []int{0, 2}, true},
		{[]int{6, 7, 67}, []int{0, 2}, true},
		{[]int{3, 4, 5}, []int{1, 2}, false},    // one block
		{[]int{3, 4, 5, 2}, []int{1, 3}, false}, // two steps
	}
	for _, c := range cases {
		r := NewReduction(c.sizes, c.keep)
		block, inner, ok := r.Blocks()
		if ok != c.ok {
			t.Fatalf("%v keep %v: Blocks ok = %v", c.sizes, c.keep, ok)
		}
		if !ok {
			continue
		}
		src := make([]float64, r.In())
		for i := range src {
			src[i] = rng.NormFloat64()
		}
		scratch := make([]float64, r.Scratch())
		for _, isMax := range []bool{false, true} {
			want := make([]float64, r.Out())
			got := make([]float64, r.Out())
			if isMax {
				r.Max(want, src, scratch)
			} else {
				r.Sum(want, src, scratch)
			}
			nb := len(src) / block
			for lo := 0; lo < nb; {
				hi := min(nb, lo+1+rng.IntN(3))
				if isMax {
					r.MaxBlocks(got[lo*inner:hi*inner], src[lo*block:hi*block])
				} else {
					r.SumBlocks(got[lo*inner:hi*inner], src[lo*block:hi*block])
				}
				lo = hi
			}
			for i := range want {
				if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
					t.Fatalf("%v keep %v max %v: cell %d = %v, want %v", c.sizes, c.keep, isMax, i, got[i], want[i])
				}
			}
		}
	}
}

// TestReductionRows: summing a one-block table's rows run by run in order
// gives Sum's result bit for bit.
func TestReductionRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	cases := []struct {
		sizes, keep []int
		ok          bool
	}{
		{[]int{5, 4, 5}, []int{1, 2}, true},
		{[]int{3, 7, 2, 16}, []int{2, 3}, true},
		{[]int{9, 100}, []int{1}, true},
		{[]int{9, 15}, []int{1}, false}, // narrow rows
		{[]int{3, 4, 5}, []int{0, 2}, false},
	}
	for _, c := range cases {
		r := NewReduction(c.sizes, c.keep)
		inner, ok := r.Rows()
		if ok != c.ok {
			t.Fatalf("%v keep %v: Rows ok = %v", c.sizes, c.keep, ok)
		}
		if !ok {
			continue
		}
		src := make([]float64, r.In())
		for i := range src {
			src[i] = rng.NormFloat64() * math.Exp(4*rng.NormFloat64())
		}
		want := make([]float64, r.Out())
		r.Sum(want, src, make([]float64, r.Scratch()))
		got := make([]float64, r.Out())
		rows := len(src) / inner
		for lo := 0; lo < rows; {
			hi := min(rows, lo+1+rng.IntN(3))
			r.SumRows(got, src[lo*inner:hi*inner], lo == 0)
			lo = hi
		}
		for i := range want {
			if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
				t.Fatalf("%v keep %v: cell %d = %v, want %v", c.sizes, c.keep, i, got[i], want[i])
			}
		}
	}
}

// TestReductionSplit: the first step, then the rest, is the whole reduction
// bit for bit.
func TestReductionSplit(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for trial := range 300 {
		k := 1 + rng.IntN(5)
		sizes := make([]int, k)
		var keep []int
		for d := range k {
			sizes[d] = 1 + rng.IntN(9)
			if rng.IntN(2) == 0 {
				keep = append(keep, d)
			}
		}
		r := NewReduction(sizes, keep)
		src := make([]float64, r.In())
		for i := range src {
			src[i] = rng.NormFloat64()
		}
		want := make([]float64, r.Out())
		r.Sum(want, src, make([]float64, r.Scratch()))
		first, rest := r.Split()
		got := make([]float64, r.Out())
		if rest == nil {
			first.Sum(got, src, make([]float64, first.Scratch()))
		} else {
			mid := make([]float64, first.Out())
			first.Sum(mid, src, nil)
			rest.Sum(got, mid, make([]float64, rest.Scratch()))
		}
		for i := range want {
			if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
				t.Fatalf("trial %d %v keep %v: cell %d = %v, want %v", trial, sizes, keep, i, got[i], want[i])
			}
		}
	}
}

// TestReductionStream: a single step with long rows, streamed in pieces of
// random lengths in order, gives Sum's and Max's results bit for bit.
func TestReductionStream(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	cases := []struct {
		sizes, keep []int
		ok          bool
	}{
		{[]int{7, 300}, []int{1}, true},
		{[]int{3, 5, 16, 20}, []int{0, 2, 3}, true},
		{[]int{4, 6, 300}, []int{0, 2}, true},
		{[]int{2, 9, 17, 31}, []int{0, 2, 3}, true},
		{[]int{40, 100}, []int{0}, false}, // short rows
		{[]int{3, 4, 300}, []int{1, 2}, true},
		{[]int{3, 4, 5, 300}, []int{1, 3}, false}, // two steps
	}
	for _, c := range cases {
		r := NewReduction(c.sizes, c.keep)
		if r.Streams() != c.ok {
			t.Fatalf("%v keep %v: Streams = %v", c.sizes, c.keep, r.Streams())
		}
		if !c.ok {
			continue
		}
		src := make([]float64, r.In())
		for i := range src {
			src[i] = rng.NormFloat64() * math.Exp(4*rng.NormFloat64())
		}
		for _, isMax := range []bool{false, true} {
			want := make([]float64, r.Out())
			if isMax {
				r.Max(want, src, make([]float64, r.Scratch()))
			} else {
				r.Sum(want, src, make([]float64, r.Scratch()))
			}
			for _, maxPiece := range []int{1, 7, 300, 5000} {
				got := make([]float64, r.Out())
				for lo := 0; lo < len(src); {
					hi := min(len(src), lo+1+rng.IntN(maxPiece))
					if isMax {
						r.MaxStream(got, src[lo:hi], lo)
					} else {
						r.SumStream(got, src[lo:hi], lo)
					}
					lo = hi
				}
				for i := range want {
					if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
						t.Fatalf("%v keep %v max %v pieces ≤ %d: cell %d = %v, want %v", c.sizes, c.keep, isMax, maxPiece, i, got[i], want[i])
					}
				}
			}
		}
	}
}
