package kernel

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestTiledMatchesMap checks every Tiled kernel, on every range split,
// against the same kernel with the full Map: equal bit for bit, because the
// tile pieces run the same kernels on the same cells.
func TestTiledMatchesMap(t *testing.T) {
	tests := []struct {
		sizes, dims []int
		tile        int
	}{
		{nil, nil, 4},
		{[]int{7}, nil, 1},
		{[]int{7}, []int{0}, 3},
		{[]int{2, 3, 4}, []int{0, 2}, 1},
		{[]int{2, 3, 4}, []int{0, 2}, 5},
		{[]int{2, 3, 4}, []int{1}, 4},
		{[]int{2, 3, 4}, []int{2}, 12},
		{[]int{2, 3, 4}, []int{}, 2},
		{[]int{5, 1, 3, 2}, []int{0, 1, 3}, 6},
		{[]int{4, 3, 5, 2, 3}, []int{0, 2, 4}, 7},
		{[]int{4, 3, 5, 2, 3}, []int{1, 3}, 30},
		{[]int{4, 3, 5, 2, 3}, []int{0, 1, 2, 3, 4}, 1 << 20},
		{[]int{9, 16, 7}, []int{1}, 16},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tt := range tests {
		idx := Map(tt.sizes, tt.dims)
		tl := NewTiled(tt.sizes, tt.dims, tt.tile)
		n := len(idx)
		if tl.Len() != n || (tl.TileLen() < min(tt.tile, n)) {
			t.Fatalf("%v %v: Len %d TileLen %d, want %d and ≥ %d", tt.sizes, tt.dims, tl.Len(), tl.TileLen(), n, min(tt.tile, n))
		}
		sub := 1
		for _, d := range tt.dims {
			sub *= tt.sizes[d]
		}
		src := make([]float64, sub)
		for i := range src {
			src[i] = rng.NormFloat64()
		}
		src[0] = math.Inf(-1) // ExpShiftGather's zero path
		x := make([]float64, n)
		for i := range x {
			x[i] = rng.NormFloat64()
		}
		for _, split := range []int{0, 1, n / 3, n / 2, n - 1, n} {
			if split < 0 || split > n {
				continue
			}
			for k, kern := range []struct {
				name  string
				full  func(dst []float64, lo int)
				tiled func(dst []float64, lo int)
			}{
				{"Expand", func(d []float64, lo int) { Expand(d, src, idx[lo:lo+len(d)]) }, func(d []float64, lo int) { tl.Expand(d, src, lo) }},
				{"Scale", func(d []float64, lo int) { Scale(d, src, idx[lo:lo+len(d)]) }, func(d []float64, lo int) { tl.Scale(d, src, lo) }},
				{"ExpShiftGather", func(d []float64, lo int) { ExpShiftGather(d, src, idx[lo:lo+len(d)]) }, func(d []float64, lo int) { tl.ExpShiftGather(d, src, lo) }},
			} {
				want, got := append([]float64(nil), x...), append([]float64(nil), x...)
				kern.full(want[:split], 0)
				kern.full(want[split:], split)
				kern.tiled(got[:split], 0)
				kern.tiled(got[split:], split)
				for i := range want {
					if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
						t.Fatalf("%v %v tile %d split %d %s (%d): cell %d = %v, want %v", tt.sizes, tt.dims, tt.tile, split, kern.name, k, i, got[i], want[i])
					}
				}
			}
		}
		want, got := make([]float64, sub), make([]float64, sub)
		Project(want, x, idx)
		tl.Project(got, x)
		for i := range want {
			if math.Abs(got[i]-want[i]) > 1e-12 {
				t.Fatalf("%v %v Project: cell %d = %v, want %v", tt.sizes, tt.dims, i, got[i], want[i])
			}
		}
	}
}
