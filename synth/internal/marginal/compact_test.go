package marginal

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dpsql/dpsql/synth/pgm"
)

func TestCompact(t *testing.T) {
	dom, _ := pgm.NewDomain([]string{"a", "b", "c"}, []int{3, 4, 5})
	attrs := []int{0, 1, 2}
	rng := rand.New(rand.NewPCG(1, 2))
	counts := func() float64 { return float64(1 + rng.IntN(9)) }
	fractions := func() float64 { return rng.Float64() * 9 }              // not float32 values
	large := func() float64 { return float64(1<<25 + 2*rng.IntN(9) + 1) } // odd above 2^24: not float32
	for _, tt := range []struct {
		name   string
		fill   float64 // fraction of non-zero cells
		value  func() float64
		sparse bool
		bytes  func(nz int) int // the memory the cells are held in
	}{
		{"empty cells", 0, counts, true, func(nz int) int { return 8 * nz }},
		{"sparse counts", 0.1, counts, true, func(nz int) int { return 8 * nz }},
		{"counts, 40% filled", 0.4, counts, true, func(nz int) int { return 8 * nz }},
		{"dense counts", 0.6, counts, false, func(int) int { return 4 * 60 }},
		{"sparse fractions", 0.1, fractions, true, func(nz int) int { return 12 * nz }},
		{"fractions, 60% filled", 0.6, fractions, true, func(nz int) int { return 12 * nz }},
		{"dense fractions", 0.9, fractions, false, func(int) int { return 8 * 60 }},
		{"dense counts above 2^24", 0.9, large, false, func(int) int { return 8 * 60 }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			x := make([]float64, 60)
			nz := 0
			for i := range x {
				if rng.Float64() < tt.fill {
					x[i] = tt.value()
					nz++
				}
			}
			c := NewCompact(slices.Clone(x))
			if c.Sparse() != tt.sparse || c.Len() != 60 {
				t.Fatalf("sparse = %v, len %d; want %v, 60", c.Sparse(), c.Len(), tt.sparse)
			}
			if got, want := c.Bytes(), tt.bytes(nz); got != want {
				t.Errorf("held in %d bytes, want %d (%d non-zero cells)", got, want, nz)
			}
			if got := c.Expand(make([]float64, 3)); !slices.Equal(got, x) {
				t.Errorf("Expand = %v, want %v", got, x)
			}
			y := make([]float64, 60)
			for i := range y {
				y[i] = rng.Float64()*4 - 1 // some negative cells too
			}
			// L1Total: against a non-negative y with its total.
			var total float64
			for i := range y {
				y[i] = math.Abs(y[i])
				total += y[i]
			}
			if got, want := c.L1Total(y, total), L1(x, y); math.Abs(got-want) > 1e-12*want || !c.Sparse() && got != want {
				t.Errorf("L1Total = %v, want %v", got, want)
			}
			for _, sub := range [][]int{{0}, {1}, {2}, {0, 2}, {1, 2}, {0, 1, 2}} {
				got := c.ProjectTo(nil, dom, attrs, sub)
				if want := ProjectTo(nil, dom, attrs, x, sub); !slices.Equal(got, want) {
					t.Errorf("ProjectTo(%v) = %v, want %v", sub, got, want)
				}
			}
		})
	}
	var zero Compact
	if zero.Len() != 0 || len(zero.Expand(nil)) != 0 || zero.L1Total(nil, 0) != 0 {
		t.Error("the zero Compact is not an empty marginal")
	}
}
