package budget

import (
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"testing"
)

// bruteMax maximises f over x in [lo, hi] by a grid search that repeatedly
// zooms in on the best grid point. It assumes only that f is continuous with
// one local maximum, and is independent of the solvers under test.
func bruteMax(f func(float64) float64, lo, hi float64) float64 {
	const n = 400
	best, c := math.Inf(-1), lo
	for range 80 {
		step := (hi - lo) / n
		for i := 0; i <= n; i++ {
			x := lo + float64(i)*step
			if v := f(x); v > best {
				best, c = v, x
			}
		}
		lo, hi = c-2*step, c+2*step
	}
	return best
}

// Oracles parametrise the Rényi order as a = 1 + e^u and search u. Each
// fixes two of (ρ, ε, δ) and optimises the third over a:
//
//	log δ_a = (a−1)(aρ−ε) + a·log(1−1/a) − log(a−1)
//	ε_a     = aρ + (a·log(1−1/a) − log(a−1) − log δ)/(a−1)
//	ρ_a     = (ε + (log δ − a·log(1−1/a) + log(a−1))/(a−1))/a
const uLo, uHi = -40.0, 40.0

func order(u float64) float64 { return 1 + math.Exp(u) }

func bruteDelta(rho, eps float64) float64 {
	return math.Exp(bruteMax(func(u float64) float64 {
		a := order(u)
		return -((a-1)*(a*rho-eps) + a*math.Log1p(-1/a) - math.Log(a-1))
	}, uLo, uHi) * -1)
}

func bruteEpsilon(rho, delta float64) float64 {
	return -bruteMax(func(u float64) float64 {
		a := order(u)
		return -(a*rho + (a*math.Log1p(-1/a)-math.Log(a-1)-math.Log(delta))/(a-1))
	}, uLo, uHi)
}

func bruteRho(eps, delta float64) float64 {
	return bruteMax(func(u float64) float64 {
		a := order(u)
		return (eps + (math.Log(delta)-a*math.Log1p(-1/a)+math.Log(a-1))/(a-1)) / a
	}, uLo, uHi)
}

func relErr(got, want float64) float64 { return math.Abs(got-want) / math.Abs(want) }

// tol is the required agreement with the brute-force oracles.
const tol = 1e-9

func TestConversionsAgainstBruteForce(t *testing.T) {
	epsilons := []float64{1e-3, 3e-3, 0.01, 0.05, 0.1, 0.3, 1, 2, 5, 10, 30, 100}
	deltas := []float64{1e-15, 1e-12, 1e-9, 1e-6, 1e-4, 1e-2}
	for _, eps := range epsilons {
		for _, delta := range deltas {
			rho, err := RhoFromEpsilonDelta(eps, delta)
			if err != nil {
				t.Fatalf("RhoFromEpsilonDelta(%v, %v): %v", eps, delta, err)
			}
			if want := bruteRho(eps, delta); relErr(rho, want) > tol {
				t.Errorf("RhoFromEpsilonDelta(%v, %v) = %.15g, brute force %.15g", eps, delta, rho, want)
			}
			d, err := DeltaFromRhoEpsilon(rho, eps)
			if err != nil {
				t.Fatal(err)
			}
			if want := bruteDelta(rho, eps); relErr(d, want) > tol {
				t.Errorf("DeltaFromRhoEpsilon(%v, %v) = %.15g, brute force %.15g", rho, eps, d, want)
			}
			if d > delta {
				t.Errorf("ρ=%v for (ε=%v, δ=%v) gives δ=%v > δ", rho, eps, delta, d)
			}
			if relErr(d, delta) > tol {
				t.Errorf("ρ=%v for (ε=%v, δ=%v) is not tight: δ(ρ, ε) = %v", rho, eps, delta, d)
			}
			e, err := EpsilonFromRhoDelta(rho, delta)
			if err != nil {
				t.Fatal(err)
			}
			if want := bruteEpsilon(rho, delta); relErr(e, want) > tol {
				t.Errorf("EpsilonFromRhoDelta(%v, %v) = %.15g, brute force %.15g", rho, delta, e, want)
			}
			if relErr(e, eps) > tol {
				t.Errorf("EpsilonFromRhoDelta(RhoFromEpsilonDelta(%v, %v)) = %v", eps, delta, e)
			}
		}
	}
}

// TestDeltaAgainstBruteForceRandom checks δ(ρ, ε) at random points,
// including ones where δ is far outside the owner-facing range.
func TestDeltaAgainstBruteForceRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		eps := math.Pow(10, -3+5*r.Float64())
		rho := math.Pow(10, -5+6*r.Float64())
		d, err := DeltaFromRhoEpsilon(rho, eps)
		if err != nil {
			t.Fatal(err)
		}
		want := min(bruteDelta(rho, eps), 1)
		if want < 1e-300 {
			continue // underflow: nothing to compare
		}
		if relErr(d, want) > tol {
			t.Errorf("DeltaFromRhoEpsilon(%v, %v) = %.15g, brute force %.15g", rho, eps, d, want)
		}
	}
}

// TestSanityValues checks the published figures for δ = 1e-9 to the digits
// given.
func TestSanityValues(t *testing.T) {
	tests := []struct {
		eps  float64
		want string
	}{
		{0.1, "1.7714e-04"}, {0.3, "1.4767e-03"}, {1, "1.4973e-02"}, {3, "1.2058e-01"}, {10, "1.0908e+00"},
	}
	for _, tc := range tests {
		rho, err := RhoFromEpsilonDelta(tc.eps, 1e-9)
		if err != nil {
			t.Fatal(err)
		}
		if got := strconv.FormatFloat(rho, 'e', 4, 64); got != tc.want {
			t.Errorf("RhoFromEpsilonDelta(%v, 1e-9) = %s, want %s", tc.eps, got, tc.want)
		}
	}
}

func TestConversionsMonotone(t *testing.T) {
	prev := 0.0
	for eps := 0.01; eps < 50; eps *= 1.3 {
		rho, err := RhoFromEpsilonDelta(eps, 1e-6)
		if err != nil {
			t.Fatal(err)
		}
		if rho <= prev {
			t.Errorf("ρ(ε=%v) = %v not above ρ at the previous ε, %v", eps, rho, prev)
		}
		prev = rho
	}
	prev = 0
	for delta := 1e-15; delta < 0.5; delta *= 10 {
		rho, err := RhoFromEpsilonDelta(1, delta)
		if err != nil {
			t.Fatal(err)
		}
		if rho <= prev {
			t.Errorf("ρ(δ=%v) = %v not above ρ at the previous δ, %v", delta, rho, prev)
		}
		prev = rho
	}
}

func TestConversionEdges(t *testing.T) {
	if d, err := DeltaFromRhoEpsilon(0, 1); err != nil || d != 0 {
		t.Errorf("DeltaFromRhoEpsilon(0, 1) = %v, %v; want 0", d, err)
	}
	if e, err := EpsilonFromRhoDelta(0, 1e-9); err != nil || e != 0 {
		t.Errorf("EpsilonFromRhoDelta(0, 1e-9) = %v, %v; want 0", e, err)
	}
	// For ρ far below δ², (0, δ)-DP already holds.
	if e, err := EpsilonFromRhoDelta(1e-20, 1e-3); err != nil || e != 0 {
		t.Errorf("EpsilonFromRhoDelta(1e-20, 1e-3) = %v, %v; want 0", e, err)
	}
	// A huge ρ against a tiny ε gives δ = 1.
	if d, err := DeltaFromRhoEpsilon(1e3, 1e-3); err != nil || d != 1 {
		t.Errorf("DeltaFromRhoEpsilon(1e3, 1e-3) = %v, %v; want 1", d, err)
	}
}

func TestConversionInvalid(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	tests := []struct {
		name string
		fn   func() (float64, error)
	}{
		{"rho: eps 0", func() (float64, error) { return RhoFromEpsilonDelta(0, 1e-9) }},
		{"rho: eps negative", func() (float64, error) { return RhoFromEpsilonDelta(-1, 1e-9) }},
		{"rho: eps NaN", func() (float64, error) { return RhoFromEpsilonDelta(nan, 1e-9) }},
		{"rho: eps Inf", func() (float64, error) { return RhoFromEpsilonDelta(inf, 1e-9) }},
		{"rho: delta 0", func() (float64, error) { return RhoFromEpsilonDelta(1, 0) }},
		{"rho: delta 1", func() (float64, error) { return RhoFromEpsilonDelta(1, 1) }},
		{"rho: delta NaN", func() (float64, error) { return RhoFromEpsilonDelta(1, nan) }},
		{"eps: rho negative", func() (float64, error) { return EpsilonFromRhoDelta(-1e-9, 1e-9) }},
		{"eps: rho Inf", func() (float64, error) { return EpsilonFromRhoDelta(inf, 1e-9) }},
		{"eps: rho NaN", func() (float64, error) { return EpsilonFromRhoDelta(nan, 1e-9) }},
		{"eps: delta negative", func() (float64, error) { return EpsilonFromRhoDelta(1, -1e-9) }},
		{"delta: rho negative", func() (float64, error) { return DeltaFromRhoEpsilon(-1, 1) }},
		{"delta: eps 0", func() (float64, error) { return DeltaFromRhoEpsilon(1, 0) }},
		{"gaussian: sigma 0", func() (float64, error) { return GaussianCost(1, 0) }},
		{"gaussian: sensitivity NaN", func() (float64, error) { return GaussianCost(nan, 1) }},
		{"gaussian: overflow", func() (float64, error) { return GaussianCost(1e200, 1e-200) }},
		{"exponential: eps 0", func() (float64, error) { return ExponentialCost(0) }},
		{"pure: eps Inf", func() (float64, error) { return PureDPCost(inf) }},
	}
	for _, tc := range tests {
		if _, err := tc.fn(); !errors.Is(err, ErrInvalidParameter) {
			t.Errorf("%s: error %v, want ErrInvalidParameter", tc.name, err)
		}
	}
}

// TestCostsRoundUp checks each cost is the smallest float64 not below its
// exact value, computed with big.Rat.
func TestCostsRoundUp(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	rat := func(x float64) *big.Rat { return new(big.Rat).SetFloat64(x) }
	check := func(name string, got float64, exact *big.Rat) {
		t.Helper()
		if rat(got).Cmp(exact) < 0 {
			t.Fatalf("%s = %v is below the exact cost %v", name, got, exact.FloatString(30))
		}
		if rat(math.Nextafter(got, 0)).Cmp(exact) >= 0 {
			t.Fatalf("%s = %v is not the smallest float64 above %v", name, got, exact.FloatString(30))
		}
	}
	for range 2000 {
		sens := math.Ldexp(1+r.Float64(), r.IntN(10)-5)
		sigma := math.Ldexp(1+r.Float64(), r.IntN(30)-5)
		eps := math.Ldexp(1+r.Float64(), r.IntN(20)-15)

		g, err := GaussianCost(sens, sigma)
		if err != nil {
			t.Fatal(err)
		}
		num := new(big.Rat).Mul(rat(sens), rat(sens))
		den := new(big.Rat).Mul(rat(sigma), rat(sigma))
		den.Mul(den, big.NewRat(2, 1))
		check("GaussianCost", g, num.Quo(num, den))

		e, err := ExponentialCost(eps)
		if err != nil {
			t.Fatal(err)
		}
		sq := new(big.Rat).Mul(rat(eps), rat(eps))
		check("ExponentialCost", e, new(big.Rat).Quo(sq, big.NewRat(8, 1)))

		p, err := PureDPCost(eps)
		if err != nil {
			t.Fatal(err)
		}
		check("PureDPCost", p, new(big.Rat).Quo(sq, big.NewRat(2, 1)))
	}
}

// TestUnitsRounding checks charges round up and totals round down to the
// 2⁻⁴⁰ unit, against exact rational arithmetic.
func TestUnitsRounding(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	unit := new(big.Rat).SetFrac(big.NewInt(1), new(big.Int).Lsh(big.NewInt(1), unitShift))
	for range 5000 {
		rho := math.Ldexp(r.Float64(), r.IntN(57)-45)
		x := new(big.Rat).SetFloat64(rho)
		up, err := ceilUnits(rho)
		if err != nil {
			t.Fatal(err)
		}
		down, err := floorUnits(rho)
		if err != nil {
			t.Fatal(err)
		}
		u := new(big.Rat).Mul(unit, new(big.Rat).SetInt(new(big.Int).SetUint64(uint64(up))))
		d := new(big.Rat).Mul(unit, new(big.Rat).SetInt(new(big.Int).SetUint64(uint64(down))))
		if u.Cmp(x) < 0 || new(big.Rat).Sub(u, unit).Cmp(x) >= 0 {
			t.Fatalf("ceilUnits(%v) = %d is not ⌈ρ/unit⌉", rho, up)
		}
		if d.Cmp(x) > 0 || new(big.Rat).Add(d, unit).Cmp(x) <= 0 {
			t.Fatalf("floorUnits(%v) = %d is not ⌊ρ/unit⌋", rho, down)
		}
		if new(big.Rat).SetFloat64(up.rho()).Cmp(u) != 0 {
			t.Fatalf("units(%d).rho() is inexact", up)
		}
	}
	if _, err := ceilUnits(MaxRho * 2); !errors.Is(err, ErrInvalidParameter) {
		t.Errorf("ceilUnits(2·MaxRho): error %v, want ErrInvalidParameter", err)
	}
}

func BenchmarkRhoFromEpsilonDelta(b *testing.B) {
	for b.Loop() {
		RhoFromEpsilonDelta(1, 1e-9)
	}
}

func BenchmarkEpsilonFromRhoDelta(b *testing.B) {
	for b.Loop() {
		EpsilonFromRhoDelta(0.015, 1e-9)
	}
}
