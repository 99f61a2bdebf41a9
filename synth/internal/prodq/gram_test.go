package prodq

import (
	"math"
	"math/rand/v2"
	"testing"
)

// denseLoss is the definition: w·Σ_m Σ_y (q_m[y] − t_m[y])² over every
// cell, the answers by brute force.
func denseLoss(l *Layout, p []float64, rows int, attrs [][]int, t [][]float64, w float64) float64 {
	sum := 0.0
	for m, a := range attrs {
		for y, q := range brute(l, p, rows, a) {
			sum += w * (q - t[m][y]) * (q - t[m][y])
		}
	}
	return sum
}

// TestSquaredLoss checks the Gram form against the dense loss (equal to
// 1e-9 relative when every target cell is kept, and on the thresholded
// targets otherwise) and its gradient against central finite differences,
// for marginals of 1 to 5 attributes, in the Gram form, the dense form and
// a mix of both.
func TestSquaredLoss(t *testing.T) {
	defer func(f int) { denseFactor = f }(denseFactor)
	for _, f := range []int{0, 1, 1 << 20} {
		denseFactor = f
		testSquaredLoss(t)
	}
}

func testSquaredLoss(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	l := NewLayout([]int{3, 2, 4, 1, 5})
	const rows, w = 6, 0.7
	attrs := append([][]int{{1, 3}}, cases...)
	for _, tau := range []float64{0, 0.02, 0.05} {
		p := randMixture(rng, l, rows)
		dense := make([][]float64, len(attrs))
		kept := make([][]float64, len(attrs))
		sp := make([]Sparse, len(attrs))
		for m, a := range attrs {
			dense[m] = make([]float64, l.Cells(a))
			kept[m] = make([]float64, l.Cells(a))
			for y := range dense[m] {
				if rng.IntN(3) > 0 { // a third of the cells are 0
					dense[m][y] = rng.Float64() / float64(len(dense[m]))
				}
				if dense[m][y] > tau {
					kept[m][y] = dense[m][y]
				}
			}
			sp[m].Set(dense[m], tau)
		}
		var s GramScratch
		dp := make([]float64, len(p))
		for i := range dp {
			dp[i] = 0.5 // SquaredLoss adds
		}
		got := l.SquaredLoss(dp, &s, p, rows, attrs, sp, w)
		want := denseLoss(l, p, rows, attrs, kept, w)
		if math.Abs(got-want) > 1e-9*want {
			t.Fatalf("dense factor %d, τ = %v: Gram form %v, dense %v", denseFactor, tau, got, want)
		}
		if tau == 0 {
			if d := denseLoss(l, p, rows, attrs, dense, w); math.Abs(got-d) > 1e-9*d {
				t.Fatalf("τ = 0: Gram form %v, dense on the full targets %v", got, d)
			}
		}
		// A second call reuses the scratch and gives the same value.
		dp2 := make([]float64, len(p))
		if again := l.SquaredLoss(dp2, &s, p, rows, attrs, sp, w); math.Abs(again-got) > 1e-15*got {
			t.Fatalf("second call %v, first %v", again, got)
		}
		const h = 1e-6
		for i := range p {
			old := p[i]
			p[i] = old + h
			up := denseLoss(l, p, rows, attrs, kept, w)
			p[i] = old - h
			down := denseLoss(l, p, rows, attrs, kept, w)
			p[i] = old
			fd := (up - down) / (2 * h)
			if math.Abs(dp[i]-0.5-fd) > 1e-7 || math.Abs(dp2[i]-fd) > 1e-7 {
				t.Fatalf("τ = %v: ∂/∂p[%d] = %v, finite difference %v", tau, i, dp[i]-0.5, fd)
			}
		}
	}
}

func TestSparseSet(t *testing.T) {
	var s Sparse
	s.Set([]float64{0, 0.3, 0.1, 0, 0.5}, 0.2)
	if len(s.Idx) != 2 || s.Idx[0] != 1 || s.Idx[1] != 4 || s.Val[1] != 0.5 || math.Abs(s.SumSq-0.34) > 1e-15 {
		t.Errorf("got %+v", s)
	}
	s.Set([]float64{0, 0.3, 0.1}, 0)
	if len(s.Idx) != 2 || s.Idx[1] != 2 {
		t.Errorf("τ = 0: got %+v", s)
	}
}

// BenchmarkSquaredLoss: one evaluation of the loss and its gradient on 30
// random 3-way marginals (targets with 1 cell in 40 non-zero), B = 250, on
// the full adult domain (14 attributes, marginals up to 990 000 cells) and
// the reduced one (7 attributes), in the Gram form, the dense form (every
// cell answered and differentiated) and the default mix. GOMAXPROCS=1.
func BenchmarkSquaredLoss(b *testing.B) {
	domains := []struct {
		name  string
		sizes []int
	}{
		{"adult", []int{85, 9, 100, 16, 7, 15, 6, 5, 2, 100, 100, 99, 42, 2}},
		{"reduced", []int{2, 2, 5, 7, 15, 16, 10}},
	}
	defer func(f int) { denseFactor = f }(denseFactor)
	for _, d := range domains {
		rng := rand.New(rand.NewPCG(1, 2))
		l := NewLayout(d.sizes)
		const B = 250
		p := randMixture(rng, l, B)
		var attrs [][]int
		for len(attrs) < 30 {
			attrs = append(attrs, rng.Perm(len(d.sizes))[:3])
		}
		sp := make([]Sparse, len(attrs))
		for m, a := range attrs {
			t := make([]float64, l.Cells(a))
			for y := range t {
				if rng.IntN(40) == 0 {
					t[y] = 1e-4
				}
			}
			sp[m].Set(t, 0)
		}
		dp := make([]float64, len(p))
		for _, f := range []struct {
			name   string
			factor int
		}{{"gram", 0}, {"mix", 1}, {"dense", 1 << 30}} {
			if d.name == "adult" && f.name == "dense" {
				continue // seconds per call
			}
			b.Run(d.name+"/"+f.name, func(b *testing.B) {
				denseFactor = f.factor
				var s GramScratch
				for range b.N {
					clear(dp)
					l.SquaredLoss(dp, &s, p, B, attrs, sp, 1)
				}
			})
		}
	}
}
