package aim

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestScheduleSpendsExactlyRho checks AIM's privacy filter: whatever the
// annealing decisions, the rounds plus initialisation spend exactly ρ
// (spec/aim.md step 5a), each round is charged ε²/8 + 1/(2σ²), and no round
// starts with less budget than it spends.
func TestScheduleSpendsExactlyRho(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2)) // fixed seed: reproducible configurations
	for trial := 0; trial < 2000; trial++ {
		rho := math.Exp(rng.Float64()*16 - 12) // ρ in [6e-6, 55]
		d := 1 + rng.IntN(60)
		oneWay := 1 + rng.IntN(d)
		T := 16 * d
		if rng.IntN(4) == 0 {
			T = oneWay + 1 + rng.IntN(5*d)
		}
		annealP := rng.Float64()
		s, sigma0, err := newSchedule(rho, T, oneWay)
		if err != nil {
			t.Fatal(err)
		}
		// Independent recomputation of the spend.
		spent := float64(oneWay) / (2 * sigma0 * sigma0)
		rounds := 0
		for {
			before := s.used
			sigma, eps, last := s.next()
			cost := eps*eps/8 + 1/(2*sigma*sigma)
			if got := s.used - before; math.Abs(got-cost) > 1e-12*rho {
				t.Fatalf("trial %d round %d: charged %v, want ε²/8+1/(2σ²) = %v", trial, rounds, got, cost)
			}
			if before+cost > rho*(1+1e-12) {
				t.Fatalf("trial %d round %d: round overspends: %v + %v > %v", trial, rounds, before, cost, rho)
			}
			spent += cost
			rounds++
			if last {
				break
			}
			if rounds > 1e6 {
				t.Fatalf("trial %d: no termination", trial)
			}
			if rng.Float64() < annealP {
				s.anneal()
			}
		}
		if math.Abs(spent-rho) > 1e-12*math.Max(1, rho) || math.Abs(s.used-rho) > 1e-12*math.Max(1, rho) {
			t.Fatalf("trial %d (ρ=%v d=%d 1-way=%d T=%d): spent %v (tracked %v), want exactly ρ", trial, rho, d, oneWay, T, spent, s.used)
		}
	}
}

// TestScheduleInitial checks σ_0 and ε_0 against spec/aim.md step 3 and the
// initialisation cost of step 4.
func TestScheduleInitial(t *testing.T) {
	const rho, d = 0.015, 14
	T := 16 * d
	s, sigma0, err := newSchedule(rho, T, d)
	if err != nil {
		t.Fatal(err)
	}
	wantSigma := math.Sqrt(float64(T) / (2 * 0.9 * rho))
	wantEps := math.Sqrt(8 * 0.1 * rho / float64(T))
	if math.Abs(sigma0-wantSigma) > 1e-12*wantSigma || math.Abs(s.eps-wantEps) > 1e-12*wantEps {
		t.Errorf("σ0, ε0 = %v, %v; want %v, %v", sigma0, s.eps, wantSigma, wantEps)
	}
	if want := d / (2 * wantSigma * wantSigma); math.Abs(s.used-want) > 1e-15 {
		t.Errorf("initialisation spent %v, want %v", s.used, want)
	}
	// Without annealing every round costs ρ/T and initialisation costs
	// 0.9·d rounds' worth, so about T − 0.9·d rounds run (the last one takes
	// between one and two rounds' worth).
	s2, _, _ := newSchedule(rho, T, d)
	n := 0
	for {
		n++
		if _, _, last := s2.next(); last {
			break
		}
	}
	remaining := T - d*9/10 // init costs d·α·ρ/T, i.e. 0.9·d rounds
	if n < remaining-2 || n > remaining {
		t.Errorf("without annealing: %d rounds, want about %d", n, remaining)
	}
}

func TestScheduleRejectsTooFewRounds(t *testing.T) {
	if _, _, err := newSchedule(1, 5, 5); err == nil {
		t.Error("T = #1-way accepted; initialisation would spend everything")
	}
}
