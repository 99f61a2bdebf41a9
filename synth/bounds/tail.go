package bounds

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// sqrt2pi is sqrt(2/π) = E|Z| for Z ~ N(0, 1).
var sqrt2pi = math.Sqrt(2 / math.Pi)

var stdNormal = distuv.Normal{Mu: 0, Sigma: 1}

// logPhi is log Φ(t), accurate for very negative t as well.
func logPhi(t float64) float64 {
	if t > -5 {
		return math.Log(stdNormal.CDF(t))
	}
	// Φ(t) = ½·erfc(−t/√2); use the asymptotic-safe log of erfc.
	return math.Log(0.5 * math.Erfc(-t/math.Sqrt2))
}

// millsInv is φ(t)/Φ(t), the derivative of log Φ(t).
func millsInv(t float64) float64 {
	return math.Exp(stdNormal.LogProb(t) - logPhi(t))
}

// l1NoiseBound returns the smallest a (in units of σ) that Chernoff's
// inequality with the exact moment generating function of the half-normal
// distribution certifies: for Z_1, …, Z_n iid N(0, 1),
//
//	P(Σ|Z_i| ≥ a) ≤ λ.
//
// With K(t) = log E exp(t|Z|) = t²/2 + log(2Φ(t)), Chernoff gives
// P(Σ|Z_i| ≥ a) ≤ exp(n·K(t) − t·a) for every t > 0, so
// a(t) = (n·K(t) + log(1/λ))/t works for every t. Its minimiser t* solves
// t·K′(t) − K(t) = log(1/λ)/n (the left side increases from 0, since its
// derivative is t·K″(t) > 0), and there a(t*) = n·K′(t*), with
// K′(t) = t + φ(t)/Φ(t). Because log(2Φ(t)) ≤ sqrt(2/π)·t (log Φ is
// concave and its slope at 0 is 2φ(0)), the result never exceeds the
// Gaussian-concentration bound sqrt(2/π)·n + sqrt(2·n·log(1/λ)).
func l1NoiseBound(n int, lambda float64) float64 {
	if n <= 0 {
		return 0
	}
	if !(lambda > 0 && lambda < 1) {
		panic("bounds: λ must be in (0, 1)")
	}
	nf := float64(n)
	c := math.Log(1/lambda) / nf
	K := func(t float64) float64 { return t*t/2 + math.Ln2 + logPhi(t) }
	dK := func(t float64) float64 { return t + millsInv(t) }
	h := func(t float64) float64 { return t*dK(t) - K(t) }
	lo, hi := 0.0, 1.0
	for h(hi) < c {
		hi *= 2
	}
	for range 200 {
		mid := (lo + hi) / 2
		if mid == lo || mid == hi {
			break
		}
		if h(mid) < c {
			lo = mid
		} else {
			hi = mid
		}
	}
	// Evaluate a(t) at the upper end: any t > 0 gives a valid bound, and
	// the bisection's last hi is within rounding of t*.
	return (nf*K(hi) + math.Log(1/lambda)) / hi
}

// foldedMean is E|m + Z| for Z ~ N(0, 1): the mean of the folded normal
// distribution, sqrt(2/π)·exp(−m²/2) + m·(1 − 2Φ(−m)). It is even, convex
// and increasing in |m|, with foldedMean(m) ≥ |m|.
func foldedMean(m float64) float64 {
	m = math.Abs(m)
	return sqrt2pi*math.Exp(-m*m/2) + m*(1-2*stdNormal.CDF(-m))
}

// invFoldedMean is the inverse of foldedMean on m ≥ 0: the m ≥ 0 with
// foldedMean(m) = v, and 0 when v ≤ sqrt(2/π) = foldedMean(0). Since
// foldedMean(m) ≥ m, the result is at most v.
func invFoldedMean(v float64) float64 {
	if v <= sqrt2pi {
		return 0
	}
	lo, hi := 0.0, v
	for range 200 {
		mid := (lo + hi) / 2
		if mid == lo || mid == hi {
			break
		}
		if foldedMean(mid) < v {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// signalBound bounds ‖μ‖₁ from one observation o = ‖μ + σ·Z‖₁ of n cells
// (Z standard normal): with probability at least 1 − λ,
//
//	‖μ‖₁ ≤ n·σ·invFoldedMean((o + σ·sqrt(2·n·log(1/λ))) / (n·σ)).
//
// Proof: z ↦ ‖μ + σz‖₁ is σ·sqrt(n)-Lipschitz in the Euclidean norm, so
// by Gaussian concentration (Tsirelson–Ibragimov–Sudakov) o ≥ E[o] −
// σ·sqrt(2·n·log(1/λ)) with probability at least 1 − λ. E[o] =
// σ·Σ_c foldedMean(μ_c/σ), and since foldedMean is convex, for a fixed
// ‖μ‖₁ = L this sum is smallest when every |μ_c| = L/n (Jensen):
// E[o] ≥ n·σ·foldedMean(L/(n·σ)). foldedMean is increasing, which gives
// the bound. It is never larger than the plain o + σ·sqrt(2·n·log(1/λ))
// (foldedMean(m) ≥ m), and much smaller when o is mostly noise.
func signalBound(o, sigma float64, n int, lambda float64) float64 {
	if n <= 0 {
		return 0
	}
	nf := float64(n)
	v := (o + sigma*math.Sqrt(2*nf*math.Log(1/lambda))) / (nf * sigma)
	return nf * sigma * invFoldedMean(v)
}
