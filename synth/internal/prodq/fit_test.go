package prodq

import (
	"math"
	"math/rand/v2"
	"testing"
)

// bruteFit is FitLoss's definition on brute-force answers.
func bruteFit(l *Layout, p []float64, rows int, attrs [][]int, t [][]float64) float64 {
	loss := 0.0
	for m, a := range attrs {
		for y, v := range brute(l, p, rows, a) {
			e := v - t[m][y]
			loss += e * e
		}
	}
	return loss
}

func randTargets(rng *rand.Rand, l *Layout, attrs [][]int) [][]float64 {
	t := make([][]float64, len(attrs))
	for m, a := range attrs {
		t[m] = make([]float64, l.Cells(a))
		for y := range t[m] {
			if rng.IntN(3) > 0 { // some zero cells, as clipped targets have
				t[m][y] = rng.Float64() / float64(len(t[m]))
			}
		}
	}
	return t
}

// TestFitLoss checks both forms (Gram for every marginal of two or more
// attributes, direct for all, and the default mix) against the brute-force
// loss, and their gradients against each other and finite differences.
func TestFitLoss(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	l := NewLayout([]int{3, 2, 4, 1, 5, 6})
	for _, c := range []struct {
		rows  int
		attrs [][]int
	}{
		{4, [][]int{{0, 3}}},
		{5, [][]int{{4, 0, 2}, {1, 2, 4}, {2}}},
		{3, [][]int{{5, 4}, {4, 5}, {0, 1, 2, 3}, {4, 3, 2, 1, 0}, {1, 5, 0}}},
		{6, [][]int{{2, 5, 4}, {0, 5, 1}, {3, 0}, {5, 2, 4, 0}}},
	} {
		p := randMixture(rng, l, c.rows)
		if c.rows == 3 { // RAP's relaxed rows are signed: the identities still hold
			for i := range p {
				p[i] = 2*p[i] - 0.5
			}
		}
		tg := randTargets(rng, l, c.attrs)
		want := bruteFit(l, p, c.rows, c.attrs, tg)
		var grads [][]float64
		for _, gramCells := range []int{1, 1 << 30, 20} {
			s := &FitScratch{GramCells: gramCells}
			dp := make([]float64, len(p))
			for i := range dp {
				dp[i] = 0.25 // FitLoss adds
			}
			for range 2 { // the second call reuses the scratch
				clear(dp)
				got := l.FitLoss(dp, s, p, c.rows, c.attrs, tg)
				if math.Abs(got-want) > 1e-12*max(1, want) {
					t.Fatalf("%v GramCells %d: loss %v, brute force %v", c.attrs, gramCells, got, want)
				}
			}
			grads = append(grads, dp)
		}
		for i := range grads[0] {
			for k := 1; k < len(grads); k++ {
				if math.Abs(grads[k][i]-grads[0][i]) > 1e-12 {
					t.Fatalf("%v: ∂/∂p[%d]: Gram %v, form %d %v", c.attrs, i, grads[0][i], k, grads[k][i])
				}
			}
		}
		const h = 1e-6
		for i := range p {
			old := p[i]
			p[i] = old + h
			up := bruteFit(l, p, c.rows, c.attrs, tg)
			p[i] = old - h
			down := bruteFit(l, p, c.rows, c.attrs, tg)
			p[i] = old
			if fd := (up - down) / (2 * h); math.Abs(grads[0][i]-fd) > 1e-8 {
				t.Fatalf("%v: ∂/∂p[%d] = %v, finite difference %v", c.attrs, i, grads[0][i], fd)
			}
		}
	}
}

// TestFitLossAdds checks that FitLoss adds to dp rather than overwriting.
func TestFitLossAdds(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	l := NewLayout([]int{3, 4, 5})
	attrs := [][]int{{2, 0, 1}}
	p := randMixture(rng, l, 4)
	tg := randTargets(rng, l, attrs)
	s := &FitScratch{GramCells: 1}
	a := make([]float64, len(p))
	l.FitLoss(a, s, p, 4, attrs, tg)
	b := make([]float64, len(p))
	for i := range b {
		b[i] = 1
	}
	l.FitLoss(b, s, p, 4, attrs, tg)
	for i := range a {
		if math.Abs(b[i]-1-a[i]) > 1e-14 {
			t.Fatalf("p[%d]: %v from 1, %v from 0", i, b[i], a[i])
		}
	}
}

// BenchmarkFitLoss times one loss and gradient on the full adult's domain
// (14 attributes, d' = 588) with RAP's N' = 1000 rows and ten 3-way
// marginals of more than 50 000 cells each (1.75M cells), in the direct
// and the Gram form: go test -bench FitLoss ./synth/internal/prodq
func BenchmarkFitLoss(b *testing.B) {
	sizes := []int{85, 9, 100, 16, 7, 15, 6, 5, 2, 100, 100, 99, 42, 2}
	l := NewLayout(sizes)
	rng := rand.New(rand.NewPCG(1, 2))
	const rows = 1000
	p := randMixture(rng, l, rows)
	var attrs [][]int
	for x := range sizes {
		for y := x + 1; y < len(sizes); y++ {
			for z := y + 1; z < len(sizes); z++ {
				if a := []int{x, y, z}; l.Cells(a) > 50000 && len(attrs) < 10 {
					attrs = append(attrs, a)
				}
			}
		}
	}
	tg := randTargets(rng, l, attrs)
	dp := make([]float64, len(p))
	for _, c := range []struct {
		name  string
		cells int
	}{{"direct", math.MaxInt}, {"gram", 0}} {
		b.Run(c.name, func(b *testing.B) {
			s := &FitScratch{GramCells: c.cells}
			for b.Loop() {
				l.FitLoss(dp, s, p, rows, attrs, tg)
			}
		})
	}
}
