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
		want := expProbabilities(t, tc.name, tc.scores, tc.eps, tc.sens, counts)
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

// TestExponentialLazyChiSquare checks that the lazy sampler draws the
// exponential mechanism's distribution over the true scores whatever valid
// bounds it is given (exact, loose by a constant, loose at random, one
// candidate far above), and that it computes few scores when the likely
// winners' bounds are exact.
func TestExponentialLazyChiSquare(t *testing.T) {
	const n = 40000
	inf := math.Inf(-1)
	tests := []struct {
		name      string
		scores    []float64
		slack     []float64 // upper = score + slack
		eps, sens float64
	}{
		{"exact", []float64{0, 1, 2, 3, 4}, []float64{0, 0, 0, 0, 0}, 1, 1},
		{"loose", []float64{0, 1, 2, 3, 4}, []float64{5, 5, 5, 5, 5}, 1, 1},
		{"mixed", []float64{0, 1, 2, 3, 4}, []float64{0.3, 7, 0, 2.5, 0.01}, 1, 1},
		{"one far above", []float64{10, 0, 0, 0, 0, 0}, []float64{0, 40, 0, 0, 0, 0}, 0.8, 1},
		{"sensitivity", []float64{0, 10, 20, 30}, []float64{3, 50, 0, 1}, 0.7, 13.5},
		{"excluded", []float64{inf, 0.5, inf, -0.25, 1e-3}, []float64{0, 1, 0, 0.2, 4}, 2, 0.5},
		{"large scores", []float64{1e6, 1e6 + 1, 1e6 - 2.5}, []float64{2, 0, 10}, 1, 1},
	}
	for _, tc := range tests {
		s := testSource("explazy/" + tc.name)
		counts := make(map[int64]int)
		calls := 0
		upper := make([]float64, len(tc.scores))
		for range n {
			for i, q := range tc.scores {
				upper[i] = q + tc.slack[i]
			}
			i, err := s.ExponentialLazy(upper, func(i int) (float64, error) { calls++; return tc.scores[i], nil }, tc.eps, tc.sens)
			if err != nil {
				t.Fatal(err)
			}
			counts[int64(i)]++
		}
		want := expProbabilities(t, tc.name, tc.scores, tc.eps, tc.sens, counts)
		chiSquare(t, "ExponentialLazy/"+tc.name, counts, want, n)
		if tc.name == "exact" && calls > n {
			t.Errorf("exact bounds: %d score calls for %d samples", calls, n)
		}
	}
}

// TestExponentialLazyFewScores checks that with exact bounds on the likely
// winners and loose ones far below, the far candidates are almost never
// scored.
func TestExponentialLazyFewScores(t *testing.T) {
	s := testSource("explazy/few")
	const k = 1000
	scores := make([]float64, k)
	upper := make([]float64, k)
	calls := 0
	for trial := range 200 {
		for i := range k {
			scores[i] = -float64(i)
			upper[i] = scores[i]
			if i >= 10 {
				upper[i] = scores[i] + 5 // loose, but 5/2·… below the top
			}
		}
		if _, err := s.ExponentialLazy(upper, func(i int) (float64, error) {
			if i >= 10 {
				calls++
			}
			return scores[i], nil
		}, 2, 0.05); err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
	}
	if calls > 20 {
		t.Errorf("%d scores of far candidates in 200 samples", calls)
	}
}

func TestExponentialLazyBoundViolated(t *testing.T) {
	s := testSource("explazy/violated")
	_, err := s.ExponentialLazy([]float64{0, 0}, func(i int) (float64, error) { return 1, nil }, 1, 1)
	if err == nil {
		t.Fatal("no error for a score above its bound")
	}
}

// expProbabilities is the exponential mechanism's distribution over scores,
// and reports a candidate of probability 0 that counts says was chosen.
func expProbabilities(t *testing.T, name string, scores []float64, eps, sens float64, counts map[int64]int) map[int64]float64 {
	t.Helper()
	best := math.Inf(-1)
	for _, q := range scores {
		best = max(best, q)
	}
	want := make(map[int64]float64)
	var z float64
	for i, q := range scores {
		w := math.Exp(eps * (q - best) / (2 * sens))
		want[int64(i)] = w
		z += w
	}
	for i := range want {
		want[i] /= z
		if want[i] == 0 && counts[i] > 0 {
			t.Errorf("%s: candidate %d has probability 0 but was chosen %d times", name, i, counts[i])
		}
	}
	return want
}
