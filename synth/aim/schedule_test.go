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
		sizes := make([]int, oneWay)
		for i := range sizes {
			sizes[i] = 1 + rng.IntN(200)
		}
		init := []float64{1, 4, 0.3 + 10*rng.Float64()}[rng.IntN(3)]
		T := 16 * d
		if rng.IntN(4) == 0 {
			T = int(min(init, 1)*float64(oneWay)) + 1 + rng.IntN(5*d)
		}
		annealP := rng.Float64()
		s, sigma0, err := newSchedule(rho, T, init, sizes)
		if err != nil {
			t.Fatal(err)
		}
		// Independent recomputation of the spend.
		var spent float64
		for _, sg := range sigma0 {
			spent += 1 / (2 * sg * sg)
		}
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
			t.Fatalf("trial %d (ρ=%v d=%d 1-way=%d init=%v T=%d): spent %v (tracked %v), want exactly ρ", trial, rho, d, oneWay, init, T, spent, s.used)
		}
	}
}

// TestScheduleInitial checks σ_0 and ε_0 against spec/aim.md step 3, and
// the initialisation's cost: INIT_ROUNDS rounds' worth per 1-way marginal
// (with INIT_ROUNDS = 1 and equal sizes, the spec's step 4 exactly).
func TestScheduleInitial(t *testing.T) {
	const rho, d = 0.015, 14
	T := 16 * d
	wantSigma := math.Sqrt(float64(T) / (2 * 0.9 * rho))
	wantEps := math.Sqrt(8 * 0.1 * rho / float64(T))
	equal := make([]int, d)
	for i := range equal {
		equal[i] = 7
	}
	adult := []int{85, 9, 100, 16, 7, 15, 6, 5, 2, 100, 100, 99, 42, 2}
	for _, tc := range []struct {
		init  float64
		sizes []int
	}{{1, equal}, {4, equal}, {1, adult}, {4, adult}} {
		s, sigmas, err := newSchedule(rho, T, tc.init, tc.sizes)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(s.sigma-wantSigma) > 1e-12*wantSigma || math.Abs(s.eps-wantEps) > 1e-12*wantEps {
			t.Errorf("σ1, ε1 = %v, %v; want %v, %v", s.sigma, s.eps, wantSigma, wantEps)
		}
		if want := tc.init * d / (2 * wantSigma * wantSigma); math.Abs(s.used-want) > 1e-15 {
			t.Errorf("init %v: initialisation spent %v, want %v", tc.init, s.used, want)
		}
		if tc.sizes[0] == 7 {
			// Equal sizes: equal σ, σ_1/√INIT_ROUNDS.
			for _, sg := range sigmas {
				if want := wantSigma / math.Sqrt(tc.init); math.Abs(sg-want) > 1e-12*want {
					t.Errorf("init %v: σ = %v, want %v", tc.init, sg, want)
				}
			}
		}
		// Without annealing every round costs α·ρ/T/α = ρ/T and the
		// initialisation costs 0.9·init·d rounds' worth, so about T −
		// 0.9·init·d rounds run (the last one takes between one and two
		// rounds' worth).
		n := 0
		for {
			n++
			if _, _, last := s.next(); last {
				break
			}
		}
		remaining := T - int(tc.init*d*9/10)
		if n < remaining-2 || n > remaining {
			t.Errorf("init %v without annealing: %d rounds, want about %d", tc.init, n, remaining)
		}
	}
}

// TestInitSigmasMinimiseL1 checks initSigmas: the budget is spent exactly,
// and moving budget between any two 1-way marginals (finite differences
// both ways) cannot lower the total expected L1 noise Σ σ_i·n_i, while the
// equal split the paper uses is worse on unequal sizes.
func TestInitSigmasMinimiseL1(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 200; trial++ {
		sizes := make([]int, 1+rng.IntN(20))
		for i := range sizes {
			sizes[i] = 1 + rng.IntN(300)
		}
		rhoInit := math.Exp(rng.Float64()*10 - 8)
		sg := initSigmas(sizes, rhoInit)
		var cost, l1 float64
		for i, s := range sg {
			cost += 1 / (2 * s * s)
			l1 += s * float64(sizes[i])
		}
		if math.Abs(cost-rhoInit) > 1e-12*rhoInit {
			t.Fatalf("trial %d: spent %v, want %v", trial, cost, rhoInit)
		}
		if len(sizes) < 2 {
			continue
		}
		i, j := rng.IntN(len(sizes)), rng.IntN(len(sizes)-1)
		if j >= i {
			j++
		}
		ci, cj := 1/(2*sg[i]*sg[i]), 1/(2*sg[j]*sg[j])
		for _, h := range []float64{-0.01, 0.01} {
			d := h * min(ci, cj) // moved budget, keeps both costs positive
			si, sj := 1/math.Sqrt(2*(ci+d)), 1/math.Sqrt(2*(cj-d))
			moved := l1 - sg[i]*float64(sizes[i]) - sg[j]*float64(sizes[j]) + si*float64(sizes[i]) + sj*float64(sizes[j])
			if moved < l1*(1-1e-12) {
				t.Fatalf("trial %d: moving %v of budget from %d to %d lowers Σσn from %v to %v", trial, d, j, i, l1, moved)
			}
		}
		eq := math.Sqrt(float64(len(sizes)) / (2 * rhoInit))
		var l1eq float64
		for _, n := range sizes {
			l1eq += eq * float64(n)
		}
		if l1eq < l1*(1-1e-12) {
			t.Fatalf("trial %d: equal split Σσn %v below the optimum's %v", trial, l1eq, l1)
		}
	}
}

func TestScheduleRejectsTooFewRounds(t *testing.T) {
	if _, _, err := newSchedule(1, 5, 1, []int{2, 2, 2, 2, 2}); err == nil {
		t.Error("T = #1-way accepted; initialisation would spend everything")
	}
	if _, _, err := newSchedule(1, 2, 0.3, []int{2, 2, 2, 2, 2, 2, 2}); err == nil {
		t.Error("T < INIT_ROUNDS·#1-way accepted")
	}
	// INIT_ROUNDS is capped at T/(2·#1-way), not below 1: a few rounds
	// asked for keep working as in the paper.
	for _, tc := range []struct {
		T          int
		init, want float64
	}{{6, 4, 1}, {21, 4, 2.1}, {80, 4, 4}, {80, 0.5, 0.5}, {8, 0.5, 0.5}} {
		s, _, err := newSchedule(1, tc.T, tc.init, []int{2, 2, 2, 2, 2})
		if err != nil {
			t.Errorf("T = %d, INIT_ROUNDS = %v rejected: %v", tc.T, tc.init, err)
			continue
		}
		if want := tc.want * 5 * alpha / float64(tc.T); math.Abs(s.used-want) > 1e-12 {
			t.Errorf("T = %d, INIT_ROUNDS = %v: initialisation spent %v, want %v rounds' worth (%v)", tc.T, tc.init, s.used, tc.want, want)
		}
	}
}

// TestDefaultInitRounds checks the default 1-way budget: 4 rounds' worth at
// small ρ, 1 at large, in between σ_0 divided by √k is initSigma, and
// never more as ρ grows.
func TestDefaultInitRounds(t *testing.T) {
	for _, tc := range []struct {
		rho  float64
		T    int
		want float64
	}{
		{0.00017714, 224, 4}, // adult, ε = 0.1
		{0.014973, 224, 4},   // ε = 1
		{0.12058, 224, 1},    // ε = 3
		{1.0908, 224, 1},     // ε = 10
		{0.056131, 224, 224 / (2 * alpha * 0.056131) / (initSigma * initSigma)}, // ε = 2: 1.1
	} {
		if got := defaultInitRounds(tc.rho, tc.T); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("ρ = %v, T = %d: %v rounds' worth, want %v", tc.rho, tc.T, got, tc.want)
		}
	}
	prev := math.Inf(1)
	for rho := 1e-4; rho < 10; rho *= 1.1 {
		k := defaultInitRounds(rho, 224)
		if k > prev || k < 1 || k > 4 {
			t.Fatalf("ρ = %v: %v rounds' worth after %v", rho, k, prev)
		}
		if k > 1 && k < 4 {
			if s := math.Sqrt(224/(2*alpha*rho)) / math.Sqrt(k); math.Abs(s-initSigma) > 1e-9 {
				t.Fatalf("ρ = %v: σ_0/√k = %v, want %v", rho, s, initSigma)
			}
		}
		prev = k
	}
}
