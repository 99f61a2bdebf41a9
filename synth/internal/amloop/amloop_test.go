package amloop

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/internal/prodq"
	"github.com/dpsql/dpsql/synth/noise"
	"github.com/dpsql/dpsql/synth/pgm"
)

// fixed is a Model that never changes: one product distribution.
type fixed struct{ p []float64 }

func (f *fixed) Forward() []float64 { return f.p }
func (f *fixed) Backward([]float64) {}
func (f *fixed) Params() []float64  { return f.p }
func (f *fixed) Grads() []float64   { return f.p }
func (f *fixed) Rows() int          { return 1 }

// data: a0 uniform over 2 independent of a1, a2 = a1 (uniform over 3).
func testData() *pgm.Dataset {
	const n = 6000
	cols := make([][]uint16, 3)
	for r := range n {
		cols[0] = append(cols[0], uint16(r%2))
		cols[1] = append(cols[1], uint16((r/2)%3))
		cols[2] = append(cols[2], uint16((r/2)%3))
	}
	dom, _ := pgm.NewDomain([]string{"a", "b", "c"}, []int{2, 3, 3})
	ds, _ := pgm.NewDataset(dom, cols)
	return ds
}

// TestSelectsWorst: against the product of the exact one-way marginals,
// only the marginal over (1, 2) is wrong (its diagonal holds all the mass),
// so at a large ρ the exponential mechanism picks it first; then the other
// two in some order. The targets are the noisy fractions.
func TestSelectsWorst(t *testing.T) {
	p := []float64{0.5, 0.5, 1. / 3, 1. / 3, 1. / 3, 1. / 3, 1. / 3, 1. / 3}
	w := []synth.Marginal{{Attrs: []int{0, 1}, Weight: 1}, {Attrs: []int{1, 2}, Weight: 1}, {Attrs: []int{0, 2}, Weight: 1}}
	for seed := range int64(20) {
		in := &synth.Input{Data: testData(), Workload: w, Rho: 50,
			Noise: noise.Derive([]byte("amloop test secret, 32 bytes long"), seed, "n")}
		updates := 0
		res, st, err := Run(context.Background(), in, Config{Name: "t", Rounds: 5, PerRound: 1, Alpha: 0.5}, w, &fixed{p}, func(context.Context, *State) error {
			updates++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		// T is capped at the 3 marginals; ρ is still spent exactly.
		if len(res.Rounds) != 3 || updates != 3 || math.Abs(res.RhoUsed-50) > 1e-9 {
			t.Fatalf("%d rounds, %d updates, ρ used %v", len(res.Rounds), updates, res.RhoUsed)
		}
		if got := res.Measurements[0].Attrs; got[0] != 1 || got[1] != 2 {
			t.Fatalf("seed %d: first selection %v, want [1 2]", seed, got)
		}
		if math.Abs(st.NHat-6000) > 10 {
			t.Errorf("n̂ = %v, want about 6000", st.NHat)
		}
		for i, tg := range st.Target[0] {
			want := 0.0
			if i/3 == i%3 {
				want = 1. / 3
			}
			if math.Abs(tg-want) > 0.01 {
				t.Errorf("target[%d] = %v, want %v", i, tg, want)
			}
		}
	}
}

func TestSample(t *testing.T) {
	// Two components: (0, 2) and (1, 0) with certainty; RAP-style
	// negative values count as 0.
	l := []int{2, 3}
	p := []float64{1, -0.5, 0, 0, 1, -1, 1, 1, 0, -2}
	rng := noise.Derive([]byte("amloop test secret, 32 bytes long"), 1, "s").Rand()
	for _, rows := range []int{1000, 1001, 1} {
		out := Sample(newLayout(l), p, 2, rows, rng)
		ones, run := 0, 0
		for r := range rows {
			switch {
			case out[0][r] == 0 && out[1][r] == 2:
			case out[0][r] == 1 && out[1][r] == 0:
				ones++
			default:
				t.Fatalf("row %d = (%d, %d), not a component", r, out[0][r], out[1][r])
			}
			if r > 0 && out[0][r] == out[0][r-1] {
				run++
			}
		}
		// Stratified: every component gives ⌊rows/B⌋ rows or one more.
		if ones != rows/2 && ones != rows/2+1 {
			t.Errorf("%d rows: %d from component 1, want %d or %d", rows, ones, rows/2, rows/2+1)
		}
		// In a random order, not grouped by component.
		if rows > 100 && run > rows*3/4 {
			t.Errorf("%d rows: %d equal neighbours, rows grouped by component", rows, run)
		}
	}
	// Component 1 gets the odd row about half the time.
	odd := 0
	for range 400 {
		if Sample(newLayout(l), p, 2, 1, rng)[0][0] == 1 {
			odd++
		}
	}
	if odd < 150 || odd > 250 {
		t.Errorf("the odd row came from component 1 %d times of 400, want about 200", odd)
	}
}

func newLayout(sizes []int) *prodq.Layout { return prodq.NewLayout(sizes) }

// TestSampleBalanced: each component gives ⌊rows/B⌋ rows or one more;
// inside a component every attribute's counts are within one of m times
// its probabilities; over many draws the rows' two-way marginal is the
// mixture's (unbiased), and its spread is below Sample's.
func TestSampleBalanced(t *testing.T) {
	l := newLayout([]int{2, 3})
	// Two smooth components; component 1 has a negative (RAP-style) entry.
	p := []float64{0.3, 0.7, 0.2, 0.5, 0.3, 0.6, 0.4, 0.1, -0.2, 0.9}
	mix := make([]float64, 6) // the mixture's two-way marginal
	for b := range 2 {
		row := p[b*5 : b*5+5]
		s1 := max(row[2], 0) + max(row[3], 0) + max(row[4], 0)
		for u := range 2 {
			for v := range 3 {
				mix[u*3+v] += 0.5 * row[u] * max(row[2+v], 0) / s1
			}
		}
	}
	rng := noise.Derive([]byte("amloop test secret, 32 bytes long"), 2, "s").Rand()
	const rows, draws = 101, 4000
	var mean, varB, varS [6]float64
	for range draws {
		for which, f := range []func() [][]uint16{
			func() [][]uint16 { return SampleBalanced(l, p, 2, rows, rng) },
			func() [][]uint16 { return Sample(l, p, 2, rows, rng) },
		} {
			out := f()
			var c [6]float64
			for r := range rows {
				c[int(out[0][r])*3+int(out[1][r])]++
			}
			for i := range c {
				d := c[i]/rows - mix[i]
				if which == 0 {
					mean[i] += d / draws
					varB[i] += d * d / draws
				} else {
					varS[i] += d * d / draws
				}
			}
		}
	}
	for i := range mean {
		// Bias: the standard error of the mean over the draws is
		// sqrt(var/draws) ≤ 0.05/63; allow 5 of them.
		if se := math.Sqrt(varB[i] / draws); math.Abs(mean[i]) > 5*se+1e-12 {
			t.Errorf("cell %d: mean deviation %.5f, standard error %.5f", i, mean[i], se)
		}
		if varB[i] > varS[i] {
			t.Errorf("cell %d: balanced variance %.2e above Sample's %.2e", i, varB[i], varS[i])
		}
	}
	// Inside a component the one-way counts are balanced: one component,
	// 100 rows of (0.3, 0.7) × (0.2, 0.5, 0.3).
	out := SampleBalanced(l, p[:5], 1, 100, rng)
	var c0, c1 [3]int
	for r := range 100 {
		c0[out[0][r]]++
		c1[out[1][r]]++
	}
	if c0[0] < 29 || c0[0] > 31 || c1[0] < 19 || c1[0] > 21 || c1[1] < 49 || c1[1] > 51 {
		t.Errorf("one-way counts %v %v, want within one of (30, 70) and (20, 50, 30)", c0, c1)
	}
	// A row count below B, and an all-zero block (uniform).
	out = SampleBalanced(l, []float64{1, 0, 0, 0, 0, 0, 1, 1, 0, 0}, 2, 1, rng)
	if len(out[0]) != 1 || out[1][0] > 2 {
		t.Errorf("one row: %v", out)
	}
}

// multinomial draws the counts of m rows from p.
func multinomial(rng *rand.Rand, p []float64, m int) []float64 {
	cum := make([]float64, len(p))
	s := 0.0
	for i, v := range p {
		s += v
		cum[i] = s
	}
	c := make([]float64, len(p))
	for range m {
		i, _ := slices.BinarySearch(cum, rng.Float64()*s)
		c[min(i, len(p)-1)]++
	}
	return c
}

// concentrated returns a marginal of cells cells with half the mass on one
// cell and the rest geometric (like adult's 3-way marginals).
func concentrated(cells int, shift int) []float64 {
	p := make([]float64, cells)
	s := 0.0
	for i := range p {
		p[i] = math.Pow(0.9, float64(i))
		s += p[i]
	}
	for i := range p {
		p[i] *= 0.5 / s
	}
	p[shift%cells] += 0.5
	return p
}

// TestNewPrior: the power is unbiased for Σp² (the plain Σq² of a sample
// of m rows is high by (1 − Σp²)/m), seeded over many samples.
func TestNewPrior(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	p := concentrated(50, 0)
	want := 0.0
	for _, v := range p {
		want += v * v
	}
	const m, trials = 100, 4000
	var power, power2, plain float64
	for range trials {
		pr := NewPrior([][]float64{multinomial(rng, p, m)})
		power += pr.Power[0] / trials
		power2 += pr.Power[0] * pr.Power[0] / trials
		for _, q := range pr.Shape[0] {
			plain += q * q / trials
		}
	}
	se := math.Sqrt((power2 - power*power) / trials)
	t.Logf("mean power %.5f (standard error %.5f), plain Σq² %.5f, Σp² %.5f", power, se, plain, want)
	// Within four standard errors of Σp², while the plain Σq² is high by
	// (1 − Σp²)/m ≈ 6.9e-3, about 8 standard errors.
	if math.Abs(power-want) > 4*se || plain-want < (1-want)/m-4*se {
		t.Errorf("mean power %.5f (standard error %.5f), plain Σq² %.5f, Σp² %.5f", power, se, plain, want)
	}
	if NewPrior([][]float64{{1, 0}}) != nil {
		t.Error("a prior from one row")
	}
}

// TestScaleEstimate: for marginals that each hold half their mass on one
// cell (the large marginals GEM^Pub selects), the least-squares scale
// against a public sample's shapes has a root-mean-square error well below
// the noisy totals' (σ/sqrt(Σ‖q‖²) against σ·sqrt(cells/marginals)), and
// both are unbiased within their standard errors; on flat marginals the
// scale is still unbiased.
func TestScaleEstimate(t *testing.T) {
	const n, sigma, mPub, trials = 30000.0, 400.0, 3000, 200
	for _, tc := range []struct {
		name      string
		p         func(i int) []float64
		marginals int
		gain      float64 // the totals' RMSE over the scale's at least
	}{
		{"concentrated", func(i int) []float64 { return concentrated(400+100*i, i) }, 10, 3},
		{"flat", func(i int) []float64 {
			p := make([]float64, 20)
			for y := range p {
				p[y] = 1. / 20
			}
			return p
		}, 5, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, 4))
			var seLS, seTot, biasLS, biasTot float64
			idx := make([]int, tc.marginals)
			for i := range idx {
				idx[i] = i
			}
			for range trials {
				pub := make([][]float64, tc.marginals)
				noisy := make([][]float64, tc.marginals)
				for i := range pub {
					p := tc.p(i)
					pub[i] = multinomial(rng, p, mPub)
					// The private marginal: n·p exactly, plus Gaussian noise.
					noisy[i] = make([]float64, len(p))
					for y, v := range p {
						noisy[i][y] = n*v + sigma*rng.NormFloat64()
					}
				}
				ls, ok := ScaleEstimate(noisy, idx, NewPrior(pub))
				if !ok {
					t.Fatal("no estimate")
				}
				tot, _ := TotalEstimate(noisy)
				seLS += (ls - n) * (ls - n) / trials
				seTot += (tot - n) * (tot - n) / trials
				biasLS += (ls - n) / trials
				biasTot += (tot - n) / trials
			}
			rmsLS, rmsTot := math.Sqrt(seLS), math.Sqrt(seTot)
			t.Logf("RMSE: scale %.0f, totals %.0f; bias: scale %.0f, totals %.0f", rmsLS, rmsTot, biasLS, biasTot)
			if rmsLS*tc.gain > rmsTot {
				t.Errorf("scale's RMSE %.0f not %v× below the totals' %.0f", rmsLS, tc.gain, rmsTot)
			}
			// Four standard errors of the mean (RMSE/sqrt(trials)).
			if math.Abs(biasLS) > 4*rmsLS/math.Sqrt(trials) {
				t.Errorf("scale biased: %.0f (RMSE %.0f)", biasLS, rmsLS)
			}
		})
	}
}

// TestRetargetGuard: a prior far from the data cannot move n̂ more than
// three standard deviations from the totals' estimate, and a prior that
// matches the data gives n̂ near n.
func TestRetargetGuard(t *testing.T) {
	noisy := [][]float64{{5000, 0, 0, 1000}, {3000, 3000, 0, 0}}
	st := &State{Noisy: noisy, Target: make([][]float64, 2), picked: []int{0, 1}, sigma: 10}
	st.prior = &Prior{Shape: [][]float64{{0, 0, 0, 1}, {0, 0, 1, 0}}, Power: []float64{1, 1}}
	st.retarget()
	tot, v := TotalEstimate(noisy)
	if tot != 6000 || math.Abs(st.NHat-(tot-3*10*math.Sqrt(v))) > 1e-9 {
		t.Errorf("n̂ = %v, totals %v: want the guard's lower end", st.NHat, tot)
	}
	st.prior = NewPrior([][]float64{{500, 0, 0, 100}, {300, 300, 0, 0}})
	st.retarget()
	if math.Abs(st.NHat-6000) > 6000*0.01 || st.Target[0][0] != 5000/st.NHat {
		t.Errorf("n̂ = %v, target %v", st.NHat, st.Target[0][0])
	}
}

// TestPriorMismatch: a prior that does not match the workload is refused
// before anything is measured.
func TestPriorMismatch(t *testing.T) {
	w := []synth.Marginal{{Attrs: []int{0, 1}, Weight: 1}, {Attrs: []int{1, 2}, Weight: 1}}
	in := &synth.Input{Data: testData(), Workload: w, Rho: 1,
		Noise: noise.Derive([]byte("amloop test secret, 32 bytes long"), 1, "n")}
	pr := NewPrior([][]float64{{1, 2, 3, 4, 5, 6}})
	p := []float64{0.5, 0.5, 1. / 3, 1. / 3, 1. / 3, 1. / 3, 1. / 3, 1. / 3}
	res, _, err := Run(context.Background(), in, Config{Name: "t", Rounds: 2, PerRound: 1, Alpha: 0.5, Prior: pr}, w, &fixed{p},
		func(context.Context, *State) error { return nil })
	if err == nil || res.RhoUsed != 0 || len(res.Measurements) != 0 {
		t.Errorf("mismatched prior: err %v, ρ used %v", err, res.RhoUsed)
	}
}
