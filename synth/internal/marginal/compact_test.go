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
	for _, tt := range []struct {
		name   string
		fill   float64 // fraction of non-zero cells
		sparse bool
		frac   bool // values with fractions (not counts)
	}{{"empty cells", 0, true, false}, {"sparse", 0.1, true, false}, {"just under half", 29.0 / 60, true, false},
		{"half", 0.5, false, false}, {"dense", 0.9, false, false}, {"sparse fractions", 0.1, true, true},
		{"three fifths fractions", 0.6, true, true}, {"two thirds fractions", 2.0 / 3, false, true}, {"dense fractions", 0.9, false, true}} {
		t.Run(tt.name, func(t *testing.T) {
			x := make([]float64, 60)
			for i := range x {
				// Exactly fill·60 non-zero cells, spread out (7 is prime to 60).
				if float64(i*7%60) < tt.fill*60-1e-9 {
					x[i] = float64(1 + rng.IntN(9))
					if tt.frac {
						x[i] += 0.25
					}
				}
			}
			if !tt.frac && tt.fill > 0 {
				x[0] = math.MaxUint32 // the largest count held as one
			}
			c := NewCompact(slices.Clone(x))
			if c.Sparse() != tt.sparse || c.Len() != 60 {
				t.Fatalf("sparse = %v, len %d; want %v, 60", c.Sparse(), c.Len(), tt.sparse)
			}
			if counts := c.cnt != nil; counts == tt.frac || (c.val != nil) != (tt.frac && tt.sparse) || (c.dense != nil) != (tt.frac && !tt.sparse) {
				t.Fatalf("held as counts %v, floats %v, dense floats %v", counts, c.val != nil, c.dense != nil)
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
			if got, want := c.L1Total(y, total), L1(x, y); math.Abs(got-want) > 1e-12*want || (!tt.sparse && got != want) {
				t.Errorf("L1Total = %v, want %v (bit for bit when dense)", got, want)
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
