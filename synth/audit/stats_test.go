package audit

import (
	"math"
	"testing"
)

// Reference values computed with mpmath at 40 digits by bisection on the
// regularized incomplete beta function (the first row is also R's
// binom.test(5, 20)$conf.int).
var cpCases = []struct {
	k, n   int
	alpha  float64
	lo, hi float64
}{
	{5, 20, 0.025, 0.086571469101434541, 0.4910458717079575},
	{0, 100, 1e-3, 0, 0.066745699203008948},
	{1, 1000, 1e-3, 1.0004998330832417e-6, 0.0091954976353875915},
	{500, 1000, 1e-3, 0.45077105398478237, 0.54922894601521763},
	{999, 1000, 1e-3, 0.99080450236461241, 0.99999899950016692},
	{3, 7, 0.05, 0.12875639280424268, 0.77467841596755221},
	{10000, 10000, 1e-3, 0.99930946300258992, 1},
	{17, 5000, 1e-3, 0.0014069328384087283, 0.0067869679725144839},
}

func TestClopperPearsonKnownValues(t *testing.T) {
	for _, c := range cpCases {
		lo, hi := ClopperPearsonLower(c.k, c.n, c.alpha), ClopperPearsonUpper(c.k, c.n, c.alpha)
		if !near(lo, c.lo, 1e-12) || !near(hi, c.hi, 1e-12) {
			t.Errorf("k=%d n=%d α=%g: [%.17g, %.17g], want [%.17g, %.17g]", c.k, c.n, c.alpha, lo, hi, c.lo, c.hi)
		}
	}
}

// TestClopperPearsonDefinition checks the bounds against their definition,
// binomial tails summed exactly in log space: P[Bin(n, lo) ≥ k] = α and
// P[Bin(n, hi) ≤ k] = α, and the closed forms at k = 0 and k = n.
func TestClopperPearsonDefinition(t *testing.T) {
	const alpha = 1e-3
	for _, n := range []int{1, 2, 10, 250, 2500} {
		for _, k := range []int{0, 1, n / 3, n / 2, n - 1, n} {
			if k < 0 || k > n {
				continue
			}
			lo, hi := ClopperPearsonLower(k, n, alpha), ClopperPearsonUpper(k, n, alpha)
			if !(0 <= lo && lo < hi && hi <= 1) {
				t.Fatalf("k=%d n=%d: bounds [%v, %v]", k, n, lo, hi)
			}
			if k > 0 {
				if got := binomTail(n, lo, k, n); !near(got, alpha, 1e-10) {
					t.Errorf("k=%d n=%d: P[Bin(n, %v) ≥ k] = %v, want %v", k, n, lo, got, alpha)
				}
			}
			if k < n {
				if got := binomTail(n, hi, 0, k); !near(got, alpha, 1e-10) {
					t.Errorf("k=%d n=%d: P[Bin(n, %v) ≤ k] = %v, want %v", k, n, hi, got, alpha)
				}
			}
			if k == 0 && !near(hi, 1-math.Pow(alpha, 1/float64(n)), 1e-12) {
				t.Errorf("n=%d: upper bound at k=0 is %v, want 1−α^(1/n)", n, hi)
			}
			if k == n && !near(lo, math.Pow(alpha, 1/float64(n)), 1e-12) {
				t.Errorf("n=%d: lower bound at k=n is %v, want α^(1/n)", n, lo)
			}
		}
	}
}

// binomTail is P[lo ≤ Bin(n, p) ≤ hi].
func binomTail(n int, p float64, lo, hi int) float64 {
	var s float64
	for i := lo; i <= hi; i++ {
		a, _ := math.Lgamma(float64(n + 1))
		b, _ := math.Lgamma(float64(i + 1))
		c, _ := math.Lgamma(float64(n - i + 1))
		s += math.Exp(a - b - c + float64(i)*math.Log(p) + float64(n-i)*math.Log1p(-p))
	}
	return s
}

func near(got, want, rel float64) bool {
	return math.Abs(got-want) <= rel*math.Max(math.Abs(want), 1e-300)
}

func TestEpsilonLowerBound(t *testing.T) {
	for _, c := range []struct{ p, q, delta, want float64 }{
		{0.5, 0.05, 0, math.Log(10)},
		{0.5, 0.05, 0.25, math.Log(5)},
		{0.1, 0.5, 0, 0},     // no evidence: the bound is ε ≥ 0
		{1e-7, 0.5, 1e-6, 0}, // p below δ witnesses nothing
		{0.5, 0, 0, math.Inf(1)},
	} {
		if got := EpsilonLowerBound(c.p, c.q, c.delta); got != c.want && !near(got, c.want, 1e-15) {
			t.Errorf("EpsilonLowerBound(%v, %v, %v) = %v, want %v", c.p, c.q, c.delta, got, c.want)
		}
	}
}

// TestBestEvent checks the threshold search on samples it can be worked out
// for: a on {0, 1}, b on {1, 2}, 50 each.
func TestBestEvent(t *testing.T) {
	a, b := make([]float64, 100), make([]float64, 100)
	for i := range a {
		a[i], b[i] = float64(i%2), float64(1+i%2)
	}
	cb := newBounds(100, 1e-3)
	e, got := bestEvent(3, a, b, 0, cb)
	// T ≥ 2 (or T < 1): half of one sample, none of the other.
	want := math.Log(cb.lower(50) / cb.upper(0))
	if e.Stat != 3 || !near(got, want, 1e-12) {
		t.Fatalf("best event %+v with %v, want log ratio %v", e, got, want)
	}
	if k1, k0 := e.count(b), e.count(a); (e.Favours == 1) != (k1 > k0) || max(k1, k0) != 50 || min(k1, k0) != 0 {
		t.Errorf("event %+v: counts %d on a, %d on b", e, k0, k1)
	}
}
