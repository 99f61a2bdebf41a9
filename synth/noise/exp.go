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
	mustExpArgs(epsilon, sensitivity)
	best := maxScore(scores, "score")
	if math.IsInf(best, -1) {
		panic("noise: no candidate has a finite score")
	}

	// Accept a uniform proposal i with probability exp(−x_i), where
	// x_i = c·(best − q_i) ≥ 0 and c = ε/(2Δ), all exact rationals.
	c := expRate(epsilon, sensitivity)
	var qmax, x big.Rat
	qmax.SetFloat64(best)
	var sc bigScratch
	n := uint64(len(scores))
	for {
		i := s.uniform(n)
		q := scores[i]
		if math.IsInf(q, -1) {
			continue
		}
		if s.acceptExp(c, &qmax, q, &x, &sc) {
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

// ExponentialLazy is [Source.Exponential] when computing the scores is the
// cost: the caller gives an upper bound upper[i] ≥ score(i) for every
// candidate, and score(i) is called only for candidates that the sampler
// cannot decide on from their bounds. The returned index has exactly the
// distribution of Exponential over the true scores (same ε, same
// sensitivity, same zCDP cost ε²/8).
//
// It is the same rejection sampler as Exponential with the envelope
// U = max upper instead of the best score: propose i uniformly, accept it
// with probability exp(−c·(U − upper[i])) · exp(−c·(upper[i] − score(i))),
// c = ε/(2Δ), the first factor decided before score(i) is computed. Each
// trial accepts i with probability exp(−c·(U − score(i)))/n, so the accepted
// index is ∝ exp(c·score(i)) for any valid envelope; upper is tightened to
// the score once it is known (upper is modified), which only shrinks U for
// later trials. Callers that tighten the bounds of the likely winners
// beforehand (by computing their scores) make the expected number of
// score calls small.
//
// score(i) must not exceed upper[i]: ExponentialLazy returns an error if
// it does (the bound was wrong and the sample would not be exact), and
// passes on score's errors. −Inf bounds mark candidates never chosen. It
// panics on the arguments Exponential panics on (with upper for scores).
func (s *Source) ExponentialLazy(upper []float64, score func(i int) (float64, error), epsilon, sensitivity float64) (int, error) {
	mustExpArgs(epsilon, sensitivity)
	known := make([]bool, len(upper))
	envelope := func() float64 { return maxScore(upper, "score bound") }
	u := envelope()
	if math.IsInf(u, -1) {
		panic("noise: no candidate has a finite score")
	}
	c := expRate(epsilon, sensitivity)
	var umax, x big.Rat
	umax.SetFloat64(u)
	var sc bigScratch
	n := uint64(len(upper))
	for {
		i := s.uniform(n)
		b := upper[i]
		if math.IsInf(b, -1) {
			continue
		}
		if !s.acceptExp(c, &umax, b, &x, &sc) {
			continue
		}
		if known[i] {
			return int(i), nil // upper[i] is the score: the second factor is 1
		}
		q, err := score(int(i))
		if err != nil {
			return -1, err
		}
		if math.IsNaN(q) || q > b {
			return -1, fmt.Errorf("noise: the score of candidate %d exceeds its bound (the values are data and are not shown)", i)
		}
		known[i] = true
		upper[i] = q
		if math.IsInf(q, -1) {
			continue
		}
		accept := s.acceptExp(c, new(big.Rat).SetFloat64(b), q, &x, &sc)
		if b == u {
			// The envelope's maximum may have dropped.
			u = envelope()
			if math.IsInf(u, -1) {
				return -1, fmt.Errorf("noise: no candidate has a finite score")
			}
			umax.SetFloat64(u)
		}
		if accept {
			return int(i), nil
		}
	}
}

// mustExpArgs panics unless epsilon and sensitivity are positive and
// finite (the samplers' precondition; CheckExponential is its error form).
func mustExpArgs(epsilon, sensitivity float64) {
	if !(epsilon > 0) || math.IsInf(epsilon, 1) {
		panic("noise: epsilon must be positive and finite")
	}
	if !(sensitivity > 0) || math.IsInf(sensitivity, 1) {
		panic("noise: sensitivity must be positive and finite")
	}
}

// maxScore returns the largest of scores (−Inf if none is finite) and
// panics if one is NaN or +Inf; what names them in the panic.
func maxScore(scores []float64, what string) float64 {
	best := math.Inf(-1)
	for _, q := range scores {
		if math.IsNaN(q) || math.IsInf(q, 1) {
			panic("noise: " + what + " is NaN or +Inf")
		}
		best = max(best, q)
	}
	return best
}

// expRate is the exponential mechanism's c = ε/(2Δ), exactly.
func expRate(epsilon, sensitivity float64) *big.Rat {
	c := new(big.Rat).SetFloat64(epsilon)
	c.Quo(c, new(big.Rat).SetFloat64(sensitivity))
	return c.Quo(c, big.NewRat(2, 1))
}

// acceptExp draws, exactly, a coin that is true with probability
// exp(−c·(top − v)) (top ≥ v); x is scratch.
func (s *Source) acceptExp(c, top *big.Rat, v float64, x *big.Rat, sc *bigScratch) bool {
	x.SetFloat64(v)
	x.Sub(top, x)
	x.Mul(x, c)
	return s.bernoulliExpBig(x.Num(), x.Denom(), sc)
}
