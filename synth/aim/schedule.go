package aim

import (
	"fmt"
	"math"

	"github.com/dpsql/dpsql/synth"
)

// alpha is the fraction of each round's budget that goes to measurement;
// the rest goes to selection.
const alpha = 0.9

// schedule is AIM's budget arithmetic (spec/aim.md steps 3–5): it knows
// nothing of data, so it can be tested on its own.
type schedule struct {
	rho   float64   // total budget
	used  float64   // consumed so far
	sigma float64   // σ_t for the next round
	eps   float64   // ε_t for the next round
	last  bool      // the round just started is the last one
	init  []float64 // the 1-way initialisation's noise scales
}

// newSchedule starts a schedule for budget rho with T rounds, after the
// initialisation measured one 1-way marginal per entry of sizes (the
// attributes' domain sizes) with the noise scales it returns. The
// initialisation spends init rounds' worth (α·ρ/T each) per 1-way marginal,
// shared so that σ_i ∝ n_i^(−1/3) (see initSigmas). init is capped at
// T/(2·#1-way), so that a small T (a few rounds asked for) keeps half of
// the rounds' budget, but not below 1, the paper's initialisation, which
// needs T > #1-way.
func newSchedule(rho float64, T int, init float64, sizes []int) (s *schedule, sigmas []float64, err error) {
	if !(init > 0) {
		return nil, nil, fmt.Errorf("aim: INIT_ROUNDS = %v, want > 0", init)
	}
	init = min(init, max(1, float64(T)/float64(2*len(sizes))))
	if float64(T) <= init*float64(len(sizes)) {
		return nil, nil, fmt.Errorf("aim: ROUNDS = %d must exceed the number of 1-way marginals (%d) × INIT_ROUNDS (%v)", T, len(sizes), init)
	}
	s = &schedule{
		rho:   rho,
		sigma: math.Sqrt(float64(T) / (2 * alpha * rho)),
		eps:   math.Sqrt(8 * (1 - alpha) * rho / float64(T)),
	}
	sigmas = initSigmas(sizes, init*float64(len(sizes))*alpha*rho/float64(T))
	for _, sg := range sigmas {
		s.used += gaussCost(sg)
	}
	s.init = sigmas
	return s, sigmas, nil
}

// initSigma is the 1-way noise scale (counts, before initSigmas divides
// the budget) that the default initialisation buys when the paper's σ_0 is
// larger, at most 4 rounds' worth per 1-way (σ_0/2).
const initSigma = 45

// defaultInitRounds is INIT_ROUNDS when not given, for budget rho and T
// rounds: the rounds' worth per 1-way that brings σ_0 = √(T/(2αρ)) down to
// initSigma, between 1 (the paper's σ_0) and 4. Measured on adult
// (docs/aim-performance.md): 4 rounds' worth lowers the error at ε ≤ 1 (σ_0
// ≥ 91) and raises it at ε = 10 (σ_0 = 11), where the rounds' budget
// matters more; the rule gives 4 at ε ≤ 1 and 1 from ε ≈ 2 (σ_0 = 47)
// on adult's 224 rounds. It depends on ρ and T only, not on the data.
func defaultInitRounds(rho float64, T int) float64 {
	s2 := float64(T) / (2 * alpha * rho) // σ_0²
	return min(4, max(1, s2/(initSigma*initSigma)))
}

// initSigmas divides the budget rhoInit among 1-way marginals of the given
// domain sizes: σ_i = c·n_i^(−1/3), with c such that Σ 1/(2σ_i²) = rhoInit.
// That minimises the total expected L1 noise Σ √(2/π)·σ_i·n_i of the
// 1-way answers for the budget (Lagrange: n_i = λ·σ_i^(−3)). With equal
// σ_i (the paper's choice), the 1-way of a 100-value attribute carries 50
// times the L1 noise of a binary one, and on adult at ε = 1 the attributes
// measured only as 1-ways (fnlwgt, capital-*) keep that noise to the end
// (docs/aim-performance.md, Accuracy).
func initSigmas(sizes []int, rhoInit float64) []float64 {
	var sum float64
	for _, n := range sizes {
		sum += math.Pow(float64(n), 2.0/3)
	}
	c := math.Sqrt(sum / (2 * rhoInit))
	out := make([]float64, len(sizes))
	for i, n := range sizes {
		out[i] = c * math.Pow(float64(n), -1.0/3)
	}
	return out
}

// check reports whether the samplers accept every σ and ε the schedule can
// produce. σ_t never exceeds σ_1 except in the last round, which spends the
// remainder: more than (1−α)·ρ after the initialisation (which spends
// INIT_ROUNDS·#1-way/T < 1 of α·ρ), and otherwise at least one round's
// cost, so its σ is at most max(σ_1/√α, 1/√(2α(1−α)ρ)) and its ε at least
// √(8(1−α)·rem) > 0. ε_t only grows from ε_1.
func (s *schedule) check() error {
	maxSigma := max(s.sigma/math.Sqrt(alpha), 1/math.Sqrt(2*alpha*(1-alpha)*s.rho))
	return synth.CheckNoise(append([]float64{s.sigma, maxSigma}, s.init...), []float64{s.eps})
}

// gaussCost is the zCDP cost of a sensitivity-1 Gaussian measurement.
func gaussCost(sigma float64) float64 { return 1 / (2 * sigma * sigma) }

// expCost is the zCDP cost of the exponential mechanism with parameter eps.
func expCost(eps float64) float64 { return eps * eps / 8 }

// next starts a round: it returns the round's σ_t and ε_t, charges them, and
// reports whether this is the last round (step 5a: if less than two rounds'
// worth of budget remains, spend all of it now).
func (s *schedule) next() (sigma, eps float64, last bool) {
	if s.last {
		panic("aim: schedule used after its last round")
	}
	if rem := s.rho - s.used; rem < 2*(gaussCost(s.sigma)+expCost(s.eps)) {
		s.sigma = math.Sqrt(1 / (2 * alpha * rem))
		s.eps = math.Sqrt(8 * (1 - alpha) * rem)
		s.last = true
	}
	s.used += expCost(s.eps) + gaussCost(s.sigma)
	return s.sigma, s.eps, s.last
}

// anneal halves σ and doubles ε for the following rounds (step 5g).
func (s *schedule) anneal() {
	s.sigma /= 2
	s.eps *= 2
}
