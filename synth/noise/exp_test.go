package noise

import (
	"math"
	"strconv"
	"testing"
)

func TestExponentialChiSquare(t *testing.T) {
	const n = 100000
	inf := math.Inf(-1)
	tests := []struct {
		name      string
		scores    []float64
		eps, sens float64
	}{
		{"uniform", []float64{3, 3, 3, 3}, 1, 1},
		{"linear", []float64{0, 1, 2, 3, 4}, 1, 1},
		{"sharp", []float64{0, 1, 2, 3, 4}, 4, 1},
		{"sensitivity", []float64{0, 10, 20, 30}, 0.7, 13.5},
		{"excluded", []float64{inf, 0.5, inf, -0.25, 1e-3}, 2, 0.5},
		{"large scores", []float64{1e6, 1e6 + 1, 1e6 - 2.5}, 1, 1},
		{"dominant", []float64{100, 0, 0, 0, 0, 0, 0, 0}, 0.05, 1},
		{"tiny eps", []float64{-1e4, 1e4, 0}, 1e-6, 1},
	}
	for _, tc := range tests {
		s := testSource("exp/" + tc.name)
		counts := make(map[int64]int)
		for range n {
			counts[int64(s.Exponential(tc.scores, tc.eps, tc.sens))]++
		}
		best := math.Inf(-1)
		for _, q := range tc.scores {
			best = max(best, q)
		}
		want := make(map[int64]float64)
		var z float64
		for i, q := range tc.scores {
			w := math.Exp(tc.eps * (q - best) / (2 * tc.sens))
			want[int64(i)] = w
			z += w
		}
		for i := range want {
			want[i] /= z
			if want[i] == 0 && counts[i] > 0 {
				t.Errorf("%s: candidate %d has probability 0 but was chosen %d times", tc.name, i, counts[i])
			}
		}
		chiSquare(t, "Exponential/"+tc.name, counts, want, n)
	}
}

func TestExponentialPanics(t *testing.T) {
	inf := math.Inf(1)
	tests := []struct {
		name      string
		scores    []float64
		eps, sens float64
	}{
		{"no scores", nil, 1, 1},
		{"all excluded", []float64{-inf, -inf}, 1, 1},
		{"NaN score", []float64{0, math.NaN()}, 1, 1},
		{"+Inf score", []float64{0, inf}, 1, 1},
		{"zero epsilon", []float64{0}, 0, 1},
		{"infinite epsilon", []float64{0}, inf, 1},
		{"negative sensitivity", []float64{0}, 1, -1},
		{"NaN sensitivity", []float64{0}, 1, math.NaN()},
	}
	for _, tc := range tests {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: Exponential did not panic", tc.name)
				}
			}()
			testSource("panic").Exponential(tc.scores, tc.eps, tc.sens)
		}()
	}
}

func BenchmarkExponential(b *testing.B) {
	for _, n := range []int{10, 1000} {
		scores := make([]float64, n)
		for i := range scores {
			scores[i] = float64(i%97) * 13.7
		}
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			s := NewSource()
			b.ReportAllocs()
			for b.Loop() {
				s.Exponential(scores, 0.1, 50)
			}
		})
	}
}
