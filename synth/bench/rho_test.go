package bench

import (
	"math"
	"testing"
)

// TestRhoFromEpsilonDelta checks the conversion against the sanity values
// of spec/aim.md (δ = 1e-9) and against a brute-force minimisation over the
// Rényi order.
func TestRhoFromEpsilonDelta(t *testing.T) {
	tests := []struct{ eps, want float64 }{
		{0.1, 1.7714e-4}, {0.3, 1.4767e-3}, {1, 1.4973e-2}, {3, 1.2058e-1}, {10, 1.0908},
	}
	const delta = 1e-9
	for _, tt := range tests {
		rho := rhoFromEpsilonDelta(tt.eps, delta)
		// The spec gives 5 significant digits.
		if math.Abs(rho-tt.want) > 1e-4*tt.want {
			t.Errorf("ε = %v: ρ = %.5g, want %.5g", tt.eps, rho, tt.want)
		}
		// Brute force over a log-spaced grid of orders: the bound at ρ
		// holds, and at ρ·(1+1e-3) it fails for every order.
		brute := func(rho float64) float64 {
			best := math.Inf(1)
			for a := 1.0001; a < 1e7; a *= 1.0005 {
				best = min(best, deltaAt(rho, tt.eps, a))
			}
			return best
		}
		if d := brute(rho); d > delta*(1+1e-6) {
			t.Errorf("ε = %v: brute-force δ(ρ) = %v > %v", tt.eps, d, delta)
		}
		if d := brute(rho * 1.001); d <= delta {
			t.Errorf("ε = %v: ρ is not the largest: δ(1.001ρ) = %v", tt.eps, d)
		}
	}
}
