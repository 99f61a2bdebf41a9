package budget

import (
	"math"
)

// maxBisect bounds every bisection; each one stops earlier, when its bracket
// can no longer be split in float64.
const maxBisect = 2200

func checkEpsilon(eps float64) error {
	if !(eps > 0) || math.IsInf(eps, 1) {
		return invalidParam("epsilon %v must be positive and finite", eps)
	}
	return nil
}

func checkDelta(delta float64) error {
	if !(delta > 0 && delta < 1) {
		return invalidParam("delta %v must be in (0, 1)", delta)
	}
	return nil
}

// MaxBudgetDelta is the largest δ a table's budget may have. δ bounds the
// probability that the guarantee fails outright, so it must be far below
// 1/n for a table of n units: a δ near 1/n lets a mechanism release a
// random unit's record. 1e-3 is already generous; 1e-9 or below is usual.
const MaxBudgetDelta = 1e-3

func checkBudgetDelta(delta float64) error {
	if err := checkDelta(delta); err != nil {
		return err
	}
	if delta > MaxBudgetDelta {
		return invalidParam("delta %v exceeds the maximum %v for a budget", delta, MaxBudgetDelta)
	}
	return nil
}

func checkRho(rho float64) error {
	if !(rho >= 0) || math.IsInf(rho, 1) {
		return invalidParam("rho %v must be non-negative and finite", rho)
	}
	return nil
}

// logDeltaAt returns log of exp((a−1)(aρ−ε) + a·log(1−1/a)) / (a−1), the
// δ bound of Rényi order a > 1.
func logDeltaAt(rho, eps, a float64) float64 {
	return (a-1)*(a*rho-eps) + a*math.Log1p(-1/a) - math.Log(a-1)
}

// logDelta returns log δ(ρ, ε) = min_{a>1} logDeltaAt(ρ, ε, a) for ρ > 0,
// ε ≥ 0. logDeltaAt is strictly convex in a (its second derivative is
// 2ρ + 1/(a(a−1)) > 0), so the minimiser is the unique root of the
// derivative g(a) = (2a−1)ρ − ε + log(1−1/a), which tends to −∞ as a → 1.
func logDelta(rho, eps float64) float64 {
	g := func(a float64) float64 { return (2*a-1)*rho - eps + math.Log1p(-1/a) }
	lo := 1.0
	// At hi, (2a−1)ρ − ε ≥ 1 + 3ρ and log(1−1/a) ≥ −log 2, so g(hi) > 0;
	// the loop only guards the bracket against rounding.
	hi := max(2, (eps+1)/(2*rho)+2)
	for g(hi) <= 0 {
		lo, hi = hi, 2*hi
		if math.IsInf(hi, 1) {
			return math.Inf(-1) // ρ is so small the bound tends to 0
		}
	}
	for range maxBisect {
		mid := lo + (hi-lo)/2
		if mid <= lo || mid >= hi {
			break
		}
		if g(mid) < 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	// Both ends are within an ulp of the root; any a > 1 gives a valid
	// bound, so take the smaller of the two.
	best := logDeltaAt(rho, eps, hi)
	if lo > 1 {
		best = min(best, logDeltaAt(rho, eps, lo))
	}
	return min(best, 0)
}

// DeltaFromRhoEpsilon returns the smallest δ such that ρ-zCDP implies
// (ε, δ)-DP by the tight conversion of Canonne, Kamath and Steinke (2020).
func DeltaFromRhoEpsilon(rho, eps float64) (float64, error) {
	if err := checkRho(rho); err != nil {
		return 0, err
	}
	if err := checkEpsilon(eps); err != nil {
		return 0, err
	}
	if rho == 0 {
		return 0, nil
	}
	return math.Exp(logDelta(rho, eps)), nil
}

// RhoFromEpsilonDelta returns the largest ρ such that ρ-zCDP implies
// (ε, δ)-DP by the tight conversion: the budget of an (ε, δ) owner. The
// result satisfies δ(ρ, ε) ≤ δ as computed in float64.
func RhoFromEpsilonDelta(eps, delta float64) (float64, error) {
	if err := checkEpsilon(eps); err != nil {
		return 0, err
	}
	if err := checkDelta(delta); err != nil {
		return 0, err
	}
	// Compare δ, not log δ, so that DeltaFromRhoEpsilon(result, ε) ≤ δ.
	ok := func(rho float64) bool { return rho == 0 || math.Exp(logDelta(rho, eps)) <= delta }
	lo, hi := 0.0, eps+1 // δ(ρ, ε) increases with ρ; ok(lo) holds
	for ok(hi) {
		lo, hi = hi, 2*hi
		if math.IsInf(hi, 1) {
			return 0, invalidParam("no finite rho for epsilon %v, delta %v", eps, delta)
		}
	}
	for range maxBisect {
		mid := lo + (hi-lo)/2
		if mid <= lo || mid >= hi {
			break
		}
		if ok(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, nil
}

// EpsilonFromRhoDelta returns the smallest ε such that ρ-zCDP implies
// (ε, δ)-DP by the tight conversion. The result satisfies δ(ρ, ε) ≤ δ as
// computed in float64; it is 0 when ρ is so small that (0, δ)-DP holds.
func EpsilonFromRhoDelta(rho, delta float64) (float64, error) {
	if err := checkRho(rho); err != nil {
		return 0, err
	}
	if err := checkDelta(delta); err != nil {
		return 0, err
	}
	if rho == 0 {
		return 0, nil
	}
	ok := func(eps float64) bool { return math.Exp(logDelta(rho, eps)) <= delta }
	if ok(0) {
		return 0, nil
	}
	// δ(ρ, ε) decreases with ε; ρ + 2√(ρ·log(1/δ)) is the classical bound,
	// which always suffices, but check it anyway.
	lo, hi := 0.0, rho+2*math.Sqrt(-rho*math.Log(delta))+1
	for !ok(hi) {
		lo, hi = hi, 2*hi
		if math.IsInf(hi, 1) {
			return 0, invalidParam("no finite epsilon for rho %v, delta %v", rho, delta)
		}
	}
	for range maxBisect {
		mid := lo + (hi-lo)/2
		if mid <= lo || mid >= hi {
			break
		}
		if ok(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, nil
}
