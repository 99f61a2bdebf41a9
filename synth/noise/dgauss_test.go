package noise

import (
	"math"
	"math/big"
	"sort"
	"testing"
)

// sigmas covers the fast path across magnitudes, including σ < 1 (t = 1)
// and σ² that are integers, dyadic and arbitrary float64 values.
var sigmas = []float64{0.3, 1, 1.5, 2.5, math.Sqrt(10), 10, 37.7, 100}

func TestDiscreteGaussianChiSquare(t *testing.T) {
	const n = 200000
	for _, sigma := range sigmas {
		s := testSource("dgauss")
		counts := make(map[int64]int)
		for range n {
			counts[s.DiscreteGaussian(sigma)]++
		}
		chiSquare(t, "DiscreteGaussian", counts, discreteGaussianPMF(sigmaSquared(sigma)), n)
	}
}

// TestDiscreteGaussianBigPath forces the math/big fallback and checks it
// samples the same distribution.
func TestDiscreteGaussianBigPath(t *testing.T) {
	const n = 100000
	for _, sigma := range []float64{0.3, 2.5, 37.7} {
		var p dgParams
		p.init(sigma)
		if !p.fast {
			t.Fatalf("σ=%v: expected the fast path to apply", sigma)
		}
		p.fast = false
		s := testSource("dgauss-big")
		counts := make(map[int64]int)
		for range n {
			counts[s.discreteGaussian(&p)]++
		}
		chiSquare(t, "discreteGaussian (big)", counts, discreteGaussianPMF(sigmaSquared(sigma)), n)
	}
}

// TestDiscreteGaussianKS checks large σ, where χ² bins would be sparse, with
// the Kolmogorov–Smirnov statistic: √n·D < 1.95 (p ≈ 0.001 for continuous
// distributions; conservative for discrete ones).
func TestDiscreteGaussianKS(t *testing.T) {
	const n = 50000
	for _, sigma := range []float64{1000, 123456.789, 1 << 33} {
		s := testSource("dgauss-ks")
		x := make([]float64, n)
		s.AddDiscreteGaussian(x, sigma)
		sort.Float64s(x)
		// At these σ the discrete Gaussian's CDF differs from the continuous
		// one, evaluated at k+½, by far less than the KS resolution.
		cdf := func(k float64) float64 { return 0.5 * math.Erfc(-(k+0.5)/(sigma*math.Sqrt2)) }
		var d float64
		for i := 0; i < n; {
			j := i
			for j < n && x[j] == x[i] {
				j++
			}
			f := cdf(x[i])
			d = max(d, math.Abs(float64(j)/n-f), math.Abs(float64(i)/n-cdf(x[i]-1)))
			i = j
		}
		if ks := math.Sqrt(n) * d; ks > 1.95 {
			t.Errorf("σ=%v: KS statistic √n·D = %.3f > 1.95", sigma, ks)
		}
	}
}

func TestAddDiscreteGaussian(t *testing.T) {
	const n = 100000
	dst := make([]float64, n)
	for i := range dst {
		dst[i] = float64(i) + 0.25
	}
	testSource("add").AddDiscreteGaussian(dst, 3)
	var sum, sum2 float64
	for i, v := range dst {
		e := v - (float64(i) + 0.25)
		if e != math.Trunc(e) {
			t.Fatalf("dst[%d]: added noise %v is not an integer", i, e)
		}
		sum += e
		sum2 += e * e
	}
	// Var N_Z(0, 9) = 9 up to 1e-70; the sample variance of 1e5 draws has
	// standard error ≈ 9·√(2/n) ≈ 0.04.
	if mean := sum / n; math.Abs(mean) > 5*3/math.Sqrt(n) {
		t.Errorf("mean noise %v", mean)
	}
	if v := sum2 / n; math.Abs(v-9) > 5*9*math.Sqrt(2.0/n) {
		t.Errorf("noise variance %v, want 9", v)
	}
}

func TestSigmaSquaredRoundsUp(t *testing.T) {
	s := testSource("sigma2").Rand()
	for range 10000 {
		sigma := math.Ldexp(1+s.Float64(), s.IntN(60)-20)
		v := sigmaSquared(sigma)
		exact := new(big.Float).SetPrec(200).SetFloat64(sigma)
		exact.Mul(exact, exact)
		if new(big.Float).SetFloat64(v).Cmp(exact) < 0 {
			t.Fatalf("σ=%v: σ² rounded down to %v", sigma, v)
		}
		if below := math.Nextafter(v, 0); new(big.Float).SetFloat64(below).Cmp(exact) >= 0 {
			t.Fatalf("σ=%v: %v is not the smallest float64 ≥ σ²", sigma, v)
		}
	}
}

// TestDGParams checks the exact decomposition σ² = N/D, the proposal scale
// t = ⌊σ⌋+1 and that the fast-path numerator and denominator equal their
// math/big definitions.
func TestDGParams(t *testing.T) {
	r := testSource("params").Rand()
	for range 2000 {
		sigma := math.Ldexp(1+r.Float64(), r.IntN(50)-10)
		var p dgParams
		p.init(sigma)
		got := new(big.Rat).SetFrac(&p.bigN, &p.bigD)
		if want := new(big.Rat).SetFloat64(sigmaSquared(sigma)); got.Cmp(want) != 0 {
			t.Fatalf("σ=%v: N/D = %v, want %v", sigma, got, want)
		}
		tm1 := new(big.Int).Sub(&p.bigT, bigOne)
		lo := new(big.Rat).SetInt(new(big.Int).Mul(tm1, tm1))
		hi := new(big.Rat).SetInt(new(big.Int).Mul(&p.bigT, &p.bigT))
		if lo.Cmp(got) > 0 || hi.Cmp(got) <= 0 {
			t.Fatalf("σ=%v: t = %v is not ⌊σ⌋+1", sigma, &p.bigT)
		}
		if !p.fast {
			continue
		}
		if b := new(big.Int).Or(new(big.Int).Lsh(new(big.Int).SetUint64(p.b.hi), 64), new(big.Int).SetUint64(p.b.lo)); b.Cmp(&p.bigB) != 0 {
			t.Fatalf("σ=%v: fast b = %v, want %v", sigma, b, &p.bigB)
		}
		for _, y := range []uint64{0, 1, 2, p.t - 1, p.t, p.t + 1, 5 * p.t, uint64(r.IntN(1 << 20))} {
			a, ok := p.numerator(y)
			if !ok {
				continue
			}
			want := new(big.Int).SetUint64(y)
			want.Mul(want, &p.bigT).Mul(want, &p.bigD).Sub(want, &p.bigN).Abs(want)
			if want.Cmp(new(big.Int).SetUint64(a)) != 0 {
				t.Fatalf("σ=%v y=%d: numerator %d, want %v", sigma, y, a, want)
			}
		}
	}
}

func TestDiscreteGaussianPanics(t *testing.T) {
	for _, sigma := range []float64{0, -1, minSigma / 2, math.NaN(), math.Inf(1), maxSigma * 2} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("DiscreteGaussian(%v) did not panic", sigma)
				}
			}()
			testSource("panic").DiscreteGaussian(sigma)
		}()
	}
}

func TestDiscreteLaplaceChiSquare(t *testing.T) {
	const n = 200000
	for _, scale := range []uint64{1, 3, 10} {
		s := testSource("dlaplace")
		counts := make(map[int64]int)
		for range n {
			counts[s.discreteLaplace(scale)]++
		}
		want := make(map[int64]float64)
		var z float64
		for x := int64(-60 * int64(scale)); x <= 60*int64(scale); x++ {
			w := math.Exp(-math.Abs(float64(x)) / float64(scale))
			want[x] = w
			z += w
		}
		for x := range want {
			want[x] /= z
		}
		chiSquare(t, "discreteLaplace", counts, want, n)
	}
}

func BenchmarkDiscreteGaussian(b *testing.B) {
	for _, bc := range []struct {
		name  string
		sigma float64
	}{
		{"sigma=1", 1}, {"sigma=10", 10}, {"sigma=100", 100}, {"sigma=1000", 1000},
		{"sigma=1000.37", 1000.37}, {"sigma=1e5", 1e5},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := NewSource()
			b.ReportAllocs()
			for b.Loop() {
				s.DiscreteGaussian(bc.sigma)
			}
		})
	}
}

func BenchmarkAddDiscreteGaussian(b *testing.B) {
	dst := make([]float64, 100000)
	s := NewSource()
	b.ReportAllocs()
	for b.Loop() {
		s.AddDiscreteGaussian(dst, 87.3)
	}
}

func BenchmarkUint64(b *testing.B) {
	s := NewSource()
	for b.Loop() {
		s.Uint64()
	}
}

// TestDiscreteGaussianTinySigma exercises σ whose σ² needs the math/big path:
// P(x ≠ 0) < 2·exp(−1/(2σ²)), which is 0 in any float64.
func TestDiscreteGaussianTinySigma(t *testing.T) {
	s := testSource("tiny")
	for _, sigma := range []float64{1e-3, 1e-30, minSigma} {
		for range 100 {
			if x := s.DiscreteGaussian(sigma); x != 0 {
				t.Fatalf("DiscreteGaussian(%v) = %d", sigma, x)
			}
		}
	}
}
