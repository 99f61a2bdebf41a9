package oracle

import (
	"math"
	"math/rand/v2"
	"testing"
)

type pcgBits struct{ r *rand.Rand }

func (p pcgBits) Uint64() uint64 { return p.r.Uint64() }

func bitsOf(seed uint64) Bits { return pcgBits{rand.New(rand.NewPCG(seed, 99))} }

// chiSquare returns Pearson's statistic of counts against probabilities.
func chiSquare(counts []int, p []float64, n int) float64 {
	var c float64
	for i, pi := range p {
		if pi == 0 {
			continue
		}
		e := pi * float64(n)
		d := float64(counts[i]) - e
		c += d * d / e
	}
	return c
}

func TestBernoulli(t *testing.T) {
	src := bitsOf(1)
	const n = 200000
	for _, f := range []float64{0, 1e-3, 0.1, 1.0 / 3, 0.5, 0.9, 1} {
		k := 0
		for range n {
			if Bernoulli(src, f) {
				k++
			}
		}
		sd := math.Sqrt(f*(1-f)/n) + 1e-9
		if got := float64(k) / n; math.Abs(got-f) > 5*sd {
			t.Errorf("Bernoulli(%v): frequency %v", f, got)
		}
	}
	for _, y := range []float64{0, 0.01, 0.5, 1, 1.7, 3.25} {
		k := 0
		for range n {
			if BernoulliExp(src, y) {
				k++
			}
		}
		p := math.Exp(-y)
		sd := math.Sqrt(p*(1-p)/n) + 1e-9
		if got := float64(k) / n; math.Abs(got-p) > 5*sd {
			t.Errorf("BernoulliExp(%v): frequency %v, want %v", y, got, p)
		}
	}
}

// The sampler's draws follow exp(u) normalised: a chi-square test with a
// generous threshold (the 1−1e-6 quantile is far below it for these
// degrees of freedom), on exponents spread over many levels, with a
// crowded low level and −Inf candidates.
func TestSamplerDistribution(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	cases := map[string][]float64{
		"spread": {0, -0.5, -3.2, 1.7, math.Inf(-1), 2.0, 2.0, -10, 0.3, 1.99},
		"crowd": func() []float64 {
			u := make([]float64, 300)
			for i := range u {
				u[i] = -6 - r.Float64() // many small weights
			}
			u[0] = 0
			return u
		}(),
		"wide": func() []float64 {
			u := make([]float64, 50)
			for i := range u {
				u[i] = 40 * r.Float64()
			}
			return u
		}(),
	}
	for name, u := range cases {
		var s Sampler
		if err := s.Reset(u); err != nil {
			t.Fatal(err)
		}
		M := math.Inf(-1)
		for _, v := range u {
			M = max(M, v)
		}
		p := make([]float64, len(u))
		var z float64
		for i, v := range u {
			p[i] = math.Exp(v - M)
			z += p[i]
		}
		// Merge cells with tiny expectation into one bin for the test.
		const n = 200000
		counts := make([]int, len(u))
		src := bitsOf(11)
		for range n {
			counts[s.Draw(src)]++
		}
		var bp []float64
		var bc []int
		var restP float64
		var restC int
		for i := range p {
			p[i] /= z
			if p[i]*n < 20 {
				restP += p[i]
				restC += counts[i]
				if p[i] == 0 && counts[i] > 0 {
					t.Fatalf("%s: drew a −Inf candidate", name)
				}
				continue
			}
			bp = append(bp, p[i])
			bc = append(bc, counts[i])
		}
		if restP > 0 {
			bp = append(bp, restP)
			bc = append(bc, restC)
		}
		df := float64(len(bp) - 1)
		// mean df, sd sqrt(2df): 6 sd + 20 is beyond the 1e-6 tail.
		if c := chiSquare(bc, bp, n); c > df+6*math.Sqrt(2*df)+20 {
			t.Errorf("%s: χ² = %.1f with %v degrees of freedom", name, c, df)
		}
	}
}

func TestSamplerRejects(t *testing.T) {
	var s Sampler
	if err := s.Reset([]float64{math.Inf(-1)}); err == nil {
		t.Error("all −Inf accepted")
	}
	if err := s.Reset([]float64{0, math.NaN()}); err == nil {
		t.Error("NaN accepted")
	}
}

func BenchmarkSamplerDraw(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	u := make([]float64, 1<<20)
	for i := range u {
		u[i] = 60 * r.NormFloat64()
	}
	var s Sampler
	if err := s.Reset(u); err != nil {
		b.Fatal(err)
	}
	src := bitsOf(3)
	for b.Loop() {
		s.Draw(src)
	}
}
