package dualquery

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/internal/oracle"
	"github.com/dpsql/dpsql/synth/internal/synthtest"
	"github.com/dpsql/dpsql/synth/noise"
	"github.com/dpsql/dpsql/synth/pgm"
)

func TestChargeClosedForm(t *testing.T) {
	for _, c := range []struct {
		s, T int
		eta, n float64
	}{{1000, 22, 2, 30162}, {35, 47, 0.4, 30162}, {1750, 170, 1.2, 494021}, {1, 1, 1, 10}} {
		got := Charge(c.s, c.T, c.eta, c.n)
		T := float64(c.T)
		want := float64(c.s) * c.eta * c.eta * (T - 1) * T * (2*T - 1) / (12 * c.n * c.n)
		// The slack inflates each ε by 1e-9 relative (and 1e-13).
		if got < want || got > want*(1+1e-8)+1e-20*float64(c.s*c.T) {
			t.Errorf("%+v: charge %v, closed form %v", c, got, want)
		}
	}
}

func TestDerive(t *testing.T) {
	const n = 30000.0
	for _, rho := range []float64{1e-4, 3e-3, 0.05} {
		for _, o := range []Options{
			{},                          // T derived
			{Samples: 50, Eta: 0.4},     // T derived
			{Rounds: 20},                // s derived at the default η
			{Rounds: 20, Eta: 0.5},      // s derived
			{Rounds: 30, Samples: 100},  // η derived
			{Rounds: 4000, Samples: 10}, // η derived, tiny
		} {
			s, T, eta := Derive(o, rho, n)
			got := Charge(s, T, eta, n)
			if got > rho {
				t.Errorf("ρ=%v %+v: (s=%d, T=%d, η=%v) charge %v above the budget", rho, o, s, T, eta, got)
			}
			if s < 1 || T < 1 || !(eta > 0) {
				t.Errorf("ρ=%v %+v: (s=%d, T=%d, η=%v)", rho, o, s, T, eta)
			}
			// The derived parameter is maximal.
			switch {
			case o.Rounds == 0 && T < DefaultMaxRounds:
				if Charge(s, T+1, eta, n) <= rho {
					t.Errorf("ρ=%v %+v: T=%d not maximal", rho, o, T)
				}
			case o.Samples == 0 && o.Rounds != 0 && s < 1e6 && eta == max(o.Eta, DefaultEta):
				if Charge(s+1, T, eta, n) <= rho {
					t.Errorf("ρ=%v %+v: s=%d not maximal", rho, o, s)
				}
			case o.Eta == 0 && o.Rounds != 0 && o.Samples != 0:
				if Charge(s, T, eta*(1+1e-6), n) <= rho {
					t.Errorf("ρ=%v %+v: η=%v not maximal", rho, o, eta)
				}
			}
		}
	}
}

func TestNewRejectsThreeParameters(t *testing.T) {
	_, err := Mechanism{}.New([]synth.Option{{Name: "samples", Value: 10}, {Name: "rounds", Value: 5}, {Name: "eta", Value: 1}})
	if err == nil {
		t.Fatal("SAMPLES, ROUNDS and ETA together accepted")
	}
	if _, err := (PGM{}).New([]synth.Option{{Name: "pgm_iters", Value: 10}, {Name: "rounds", Value: 5}}); err != nil {
		t.Fatal(err)
	}
	if _, err := (Mechanism{}).New([]synth.Option{{Name: "pgm_iters", Value: 10}}); err == nil {
		t.Fatal("PGM_ITERS accepted by dualquery")
	}
}

// smallGame plays a short DualQuery run on a small domain for loss tests.
func smallGame(t *testing.T) (*game, *synth.Input) {
	in := testInput(3, 0.5)
	w, err := in.Check(true)
	if err != nil {
		t.Fatal(err)
	}
	q := oracle.NewQueries(in.Data.Domain(), w)
	ans, n, err := q.Answers(context.Background(), in.Data)
	if err != nil {
		t.Fatal(err)
	}
	g, err := play(context.Background(), in, q, ans, n, 20, 6, 1.5, 0, &synth.Result{})
	if err != nil {
		t.Fatal(err)
	}
	return g, in
}

// The hand-written gradient of the DualQuery likelihood matches central
// finite differences, on both evaluation paths (carried products and
// direct exponentials).
func TestLossGradient(t *testing.T) {
	g, _ := smallGame(t)
	for _, direct := range []bool{false, true} {
		gg := *g
		if direct {
			gg.eta = 700 / float64(g.T) // forces the shifted-exponential path
		}
		l := newLoss(&gg, []int{0, 2, 3, 5, 7})
		r := rand.New(rand.NewPCG(1, 2))
		x := make([][]float64, len(l.sets))
		grad := make([][]float64, len(l.sets))
		for m := range x {
			n := l.off[m+1] - l.off[m]
			x[m] = make([]float64, n)
			grad[m] = make([]float64, n)
			var z float64
			for j := range x[m] {
				x[m][j] = 0.1 + r.Float64()
				z += x[m][j]
			}
			for j := range x[m] {
				x[m][j] /= z
			}
		}
		l.Eval(x, grad)
		scratch := make([][]float64, len(x))
		for m := range scratch {
			scratch[m] = make([]float64, len(x[m]))
		}
		h := 1e-6
		for m := range x {
			for j := range x[m] {
				if r.IntN(4) != 0 {
					continue
				}
				old := x[m][j]
				x[m][j] = old + h
				up := l.Eval(x, scratch)
				x[m][j] = old - h
				down := l.Eval(x, scratch)
				x[m][j] = old
				fd := (up - down) / (2 * h)
				if math.Abs(fd-grad[m][j]) > 1e-4*(1+math.Abs(fd)) {
					t.Fatalf("direct=%v marginal %d cell %d: gradient %v, finite difference %v", direct, m, j, grad[m][j], fd)
				}
			}
		}
	}
}

func testInput(seed int64, rho float64) *synth.Input {
	return &synth.Input{
		Data:     synthtest.Chain(5, 3000, []int{4, 3, 5, 2, 4}),
		Workload: synthtest.AllK(5, 2),
		Rho:      rho,
		Noise:    noise.Derive([]byte("dualquery test secret, 32 bytes!"), seed, "t"),
	}
}

// oracleOnly hides the records: the mechanism must read marginals only.
type oracleOnly struct {
	d     *pgm.Dataset
	calls int
}

func (o *oracleOnly) Domain() *pgm.Domain { return o.d.Domain() }
func (o *oracleOnly) Marginals(ctx context.Context, sets [][]int) ([][]float64, error) {
	o.calls++
	return o.d.Marginals(ctx, sets)
}

// uniformError is the workload error of the uniform distribution, the
// zero-knowledge baseline.
func uniformError(t *testing.T, in *synth.Input, sets [][]int) float64 {
	dom := in.Data.Domain()
	truth, _ := in.Data.Marginals(context.Background(), sets)
	var sum float64
	for k, s := range sets {
		n := 0.0
		for _, v := range truth[k] {
			n += v
		}
		c := float64(dom.Cells(s))
		for _, v := range truth[k] {
			sum += math.Abs(v/n - 1/c)
		}
	}
	return sum / float64(len(sets))
}

func TestRun(t *testing.T) {
	in := testInput(1, 0.5)
	d := in.Data.(*pgm.Dataset)
	src := &oracleOnly{d: d}
	in.Data = src
	sets := make([][]int, len(in.Workload))
	for i, m := range in.Workload {
		sets[i] = m.Attrs
	}
	base := uniformError(t, in, sets)
	var errs [2]float64
	for k, m := range []synth.Mechanism{Mechanism{}, PGM{}} {
		src.calls = 0
		r, err := m.New([]synth.Option{{Name: "SAMPLES", Value: 40}, {Name: "ETA", Value: 1}, {Name: "PGM_ITERS", Value: 200}}[:2+k])
		if err != nil {
			t.Fatal(err)
		}
		res, err := r.Run(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		if src.calls != 1 {
			t.Errorf("%s: %d marginal-oracle calls, want 1", m.Name(), src.calls)
		}
		if !(res.RhoUsed > 0) || res.RhoUsed > in.Rho*(1+1e-12) {
			t.Errorf("%s: ρ used %v of %v", m.Name(), res.RhoUsed, in.Rho)
		}
		// The derived T uses the budget: one more round would not fit.
		if len(res.Rows) != d.Domain().Len() {
			t.Fatalf("%s: %d columns", m.Name(), len(res.Rows))
		}
		if m.Output() == synth.SyntheticData {
			synthtest.CheckResult(t, synth.SyntheticData, in, res)
		} else if res.Model != nil {
			t.Errorf("%s: a rows-only mechanism returned a model", m.Name())
		}
		n := len(res.Rows[0])
		if math.Abs(float64(n)-3000) > 300 {
			t.Errorf("%s: %d rows, want about the 3000 records", m.Name(), n)
		}
		errs[k] = synthtest.Error(t, d, sets, res.Rows)
		t.Logf("%s: workload error %.4f (uniform %.4f), %s", m.Name(), errs[k], base, res.Note)
		if errs[k] > 0.8*base {
			t.Errorf("%s: workload error %.4f, not clearly below the uniform baseline %.4f", m.Name(), errs[k], base)
		}
	}
}

// The privacy accounting is the closed form: count + Σ_t s·ε_t²/8 with the
// run's parameters, which the release note states.
func TestRhoUsedFormula(t *testing.T) {
	in := testInput(5, 0.2)
	r, _ := Mechanism{}.New([]synth.Option{{Name: "ROUNDS", Value: 7}, {Name: "SAMPLES", Value: 30}})
	res, err := r.Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	nhat := math.Max(1, math.Round(res.Measurements[0].Y[0]))
	sigma := res.Measurements[0].Sigma
	count := 1 / (2 * sigma * sigma)
	if math.Abs(count-DefaultCountFraction*in.Rho) > 1e-12 {
		t.Errorf("count charge %v, want %v", count, DefaultCountFraction*in.Rho)
	}
	_, _, eta := Derive(Options{Rounds: 7, Samples: 30}, in.Rho-count, nhat)
	want := count + Charge(30, 7, eta, nhat)
	if math.Abs(res.RhoUsed-want) > 1e-12*in.Rho {
		t.Errorf("ρ used %v, want %v", res.RhoUsed, want)
	}
	// η was derived to spend the budget.
	if math.Abs(res.RhoUsed-in.Rho) > 1e-6*in.Rho {
		t.Errorf("ρ used %v of %v", res.RhoUsed, in.Rho)
	}
}

func TestCancel(t *testing.T) {
	for _, m := range []synth.Mechanism{Mechanism{}, PGM{}} {
		r, _ := m.New(nil)
		synthtest.CheckCancel(t, r, testInput(2, 0.5))
	}
}

// Beyond MAX_MODEL_SIZE the model covers the most drawn marginals that fit
// (the likelihood of the draws conditioned on falling in them) and still
// learns from them.
func TestPGMModelLimit(t *testing.T) {
	in := testInput(4, 0.5)
	r, _ := PGM{}.New([]synth.Option{{Name: "SAMPLES", Value: 40}, {Name: "ETA", Value: 1}, {Name: "MAX_MODEL_SIZE", Value: 0.001}})
	res, err := r.Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	synthtest.CheckResult(t, synth.SyntheticData, in, res)
	if s := res.Model.Size(); s > 0.001 {
		t.Errorf("model %v MB above the limit", s)
	}
	if len(res.Model.Cliques()) == 0 || len(res.Model.Cliques()) >= len(in.Workload) {
		t.Errorf("cliques %v: the limit should keep some but not all of the %d marginals", res.Model.Cliques(), len(in.Workload))
	}
	sets := make([][]int, len(in.Workload))
	for i, m := range in.Workload {
		sets[i] = m.Attrs
	}
	if e, base := synthtest.Error(t, in.Data, sets, res.Rows), uniformError(t, in, sets); e > 0.8*base {
		t.Errorf("workload error %.4f, uniform %.4f", e, base)
	}
}
