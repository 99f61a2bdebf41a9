package noise

import (
	"fmt"
	"math"
	"math/big"
)

// Exponential runs the exponential mechanism: it returns i with probability
// ∝ exp(epsilon·scores[i]/(2·sensitivity)). Its zCDP cost is epsilon²/8.
//
// Candidates scoring −Inf are never chosen. The sample is exact (see the
// package documentation). Exponential panics if epsilon or sensitivity is not
// positive and finite, if a score is NaN or +Inf, or if no score is finite.
func (s *Source) Exponential(scores []float64, epsilon, sensitivity float64) int {
	if !(epsilon > 0) || math.IsInf(epsilon, 1) {
		panic("noise: epsilon must be positive and finite")
	}
	if !(sensitivity > 0) || math.IsInf(sensitivity, 1) {
		panic("noise: sensitivity must be positive and finite")
	}
	best, finite := math.Inf(-1), 0
	for _, q := range scores {
		switch {
		case math.IsNaN(q) || math.IsInf(q, 1):
			panic("noise: score is NaN or +Inf")
		case math.IsInf(q, -1):
			continue
		}
		finite++
		best = max(best, q)
	}
	if finite == 0 {
		panic("noise: no candidate has a finite score")
	}

	// Accept a uniform proposal i with probability exp(−x_i), where
	// x_i = c·(best − q_i) ≥ 0 and c = ε/(2Δ), all exact rationals.
	var c, qmax, x big.Rat
	c.SetFloat64(epsilon)
	c.Quo(&c, new(big.Rat).SetFloat64(sensitivity))
	c.Quo(&c, big.NewRat(2, 1))
	qmax.SetFloat64(best)
	var sc bigScratch
	n := uint64(len(scores))
	for {
		i := s.uniform(n)
		q := scores[i]
		if math.IsInf(q, -1) {
			continue
		}
		x.SetFloat64(q)
		x.Sub(&qmax, &x)
		x.Mul(&x, &c)
		if s.bernoulliExpBig(x.Num(), x.Denom(), &sc) {
			return int(i)
		}
	}
}

// CheckExponential reports whether [Source.Exponential] accepts epsilon and
// sensitivity; see [CheckSigma].
func CheckExponential(epsilon, sensitivity float64) error {
	if !(epsilon > 0) || math.IsInf(epsilon, 1) {
		return fmt.Errorf("noise: exponential mechanism ε = %g must be positive and finite", epsilon)
	}
	if !(sensitivity > 0) || math.IsInf(sensitivity, 1) {
		return fmt.Errorf("noise: exponential mechanism sensitivity %g must be positive and finite", sensitivity)
	}
	return nil
}
