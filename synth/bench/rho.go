package bench

import "math"

// This file is a local copy of the tight (ε, δ) → ρ conversion of
// Canonne, Kamath and Steinke (2020), used until budget's
// RhoFromEpsilonDelta exists. The server never uses it.

// cdpDelta returns the smallest δ such that ρ-zCDP implies (ε, δ)-DP:
// min over a > 1 of exp((a−1)(aρ−ε) + a·log(1−1/a)) / (a−1), with the
// minimising a found by bisection on the derivative's sign.
func cdpDelta(rho, eps float64) float64 {
	if rho == 0 {
		return 0
	}
	lo, hi := 1.01, (eps+1)/(2*rho)+2
	var a float64
	for range 1000 {
		a = (lo + hi) / 2
		if a == lo || a == hi {
			break
		}
		if (2*a-1)*rho-eps+math.Log1p(-1/a) < 0 {
			lo = a
		} else {
			hi = a
		}
	}
	return min(1, deltaAt(rho, eps, a))
}

// deltaAt is the bound for one Rényi order a.
func deltaAt(rho, eps, a float64) float64 {
	return math.Exp((a-1)*(a*rho-eps)+a*math.Log1p(-1/a)) / (a - 1)
}

// rhoFromEpsilonDelta returns the largest ρ with cdpDelta(ρ, ε) ≤ δ, by
// bisection on [0, ε+1]; the result always satisfies the bound.
func rhoFromEpsilonDelta(eps, delta float64) float64 {
	if delta >= 1 {
		return math.Inf(1)
	}
	lo, hi := 0.0, eps+1
	for range 1000 {
		mid := (lo + hi) / 2
		if mid == lo || mid == hi {
			break
		}
		if cdpDelta(mid, eps) <= delta {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}
