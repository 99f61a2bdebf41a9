package prodq

import (
	"math"
	"math/rand/v2"
	"testing"
)

// brute is the definition: for every cell, the mean over rows of the
// product of the selected one-hot coordinates.
func brute(l *Layout, p []float64, rows int, attrs []int) []float64 {
	out := make([]float64, l.Cells(attrs))
	y := make([]int, len(attrs))
	for cell := range out {
		r := cell
		for j := len(attrs) - 1; j >= 0; j-- {
			y[j] = r % l.Size[attrs[j]]
			r /= l.Size[attrs[j]]
		}
		for b := range rows {
			prod := 1.0
			for j, a := range attrs {
				prod *= p[b*l.Width+l.Off[a]+y[j]]
			}
			out[cell] += prod / float64(rows)
		}
	}
	return out
}

func randMixture(rng *rand.Rand, l *Layout, rows int) []float64 {
	p := make([]float64, rows*l.Width)
	for b := range rows {
		for a, s := range l.Size {
			sum := 0.0
			for v := range s {
				x := rng.Float64()
				p[b*l.Width+l.Off[a]+v] = x
				sum += x
			}
			for v := range s {
				p[b*l.Width+l.Off[a]+v] /= sum
			}
		}
	}
	return p
}

var cases = [][]int{{2}, {0, 3}, {3, 0}, {1, 2, 4}, {4, 0, 2}, {0, 1, 2, 3}, {4, 3, 2, 1, 0}}

func TestAnswerBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	l := NewLayout([]int{3, 2, 4, 1, 5})
	const rows = 7
	p := randMixture(rng, l, rows)
	var s Scratch
	for _, attrs := range cases {
		got := l.Answer(nil, &s, p, rows, attrs)
		want := brute(l, p, rows, attrs)
		sum := 0.0
		for i := range want {
			if math.Abs(got[i]-want[i]) > 1e-14 {
				t.Fatalf("%v cell %d: %v, brute force %v", attrs, i, got[i], want[i])
			}
			sum += got[i]
		}
		if math.Abs(sum-1) > 1e-12 {
			t.Errorf("%v sums to %v", attrs, sum)
		}
	}
}

func TestBackwardFiniteDifferences(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	l := NewLayout([]int{3, 2, 4, 1, 5})
	const rows = 4
	p := randMixture(rng, l, rows)
	var s Scratch
	for _, attrs := range cases {
		g := make([]float64, l.Cells(attrs))
		for i := range g {
			g[i] = rng.NormFloat64()
		}
		f := func() float64 {
			a := brute(l, p, rows, attrs)
			v := 0.0
			for i := range a {
				v += g[i] * a[i]
			}
			return v
		}
		dp := make([]float64, len(p))
		for i := range dp {
			dp[i] = 0.5 // Backward adds
		}
		l.Backward(dp, &s, p, rows, attrs, g)
		const h = 1e-6
		for i := range p {
			old := p[i]
			p[i] = old + h
			up := f()
			p[i] = old - h
			down := f()
			p[i] = old
			fd := (up - down) / (2 * h)
			if math.Abs(dp[i]-0.5-fd) > 1e-8 {
				t.Fatalf("%v: ∂/∂p[%d] = %v, finite difference %v", attrs, i, dp[i]-0.5, fd)
			}
		}
	}
}
