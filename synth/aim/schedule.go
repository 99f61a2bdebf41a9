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
	rho   float64 // total budget
	used  float64 // consumed so far
	sigma float64 // σ_t for the next round
	eps   float64 // ε_t for the next round
	last  bool    // the round just started is the last one
}

// newSchedule starts a schedule for budget rho with T rounds, after the
// initialisation measured oneWay 1-way marginals with noise sigma0 (which it
// returns). T must exceed oneWay so that initialisation leaves budget.
func newSchedule(rho float64, T, oneWay int) (s *schedule, sigma0 float64, err error) {
	if T <= oneWay {
		return nil, 0, fmt.Errorf("aim: ROUNDS = %d must exceed the number of 1-way marginals (%d)", T, oneWay)
	}
	s = &schedule{
		rho:   rho,
		sigma: math.Sqrt(float64(T) / (2 * alpha * rho)),
		eps:   math.Sqrt(8 * (1 - alpha) * rho / float64(T)),
	}
	s.used = float64(oneWay) * gaussCost(s.sigma)
	return s, s.sigma, nil
}

// check reports whether the samplers accept every σ and ε the schedule can
// produce. σ_t never exceeds σ_1 except in the last round, which spends the
// remainder: more than (1−α)·ρ after the initialisation (which spends
// oneWay/T < 1 of α·ρ), and otherwise at least one round's cost, so its σ is
// at most max(σ_1/√α, 1/√(2α(1−α)ρ)) and its ε at least √(8(1−α)·rem) >
// 0. ε_t only grows from ε_1.
func (s *schedule) check() error {
	maxSigma := max(s.sigma/math.Sqrt(alpha), 1/math.Sqrt(2*alpha*(1-alpha)*s.rho))
	return synth.CheckNoise([]float64{s.sigma, maxSigma}, []float64{s.eps})
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
