package hdmm

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/internal/synthtest"
	"github.com/dpsql/dpsql/synth/noise"
	"github.com/dpsql/dpsql/synth/pgm"
	"gonum.org/v1/gonum/mat"
)

var secret = []byte("hdmm test secret, thirty-two b..")

func denseKron(factors []*mat.Dense, sizes []int) *mat.Dense {
	q := mat.NewDense(1, 1, []float64{1})
	for j, f := range factors {
		if f == nil {
			id := mat.NewDense(sizes[j], sizes[j], nil)
			for i := range sizes[j] {
				id.Set(i, i, 1)
			}
			f = id
		}
		var k mat.Dense
		k.Kronecker(q, f)
		q = &k
	}
	return q
}

func TestHierarchical(t *testing.T) {
	for _, tc := range []struct{ n, b, rows, levels int }{
		{8, 2, 15, 4}, {5, 2, 5 + 3 + 2 + 1, 4}, {16, 4, 21, 3}, {1, 2, 1, 1},
	} {
		h := Hierarchical(tc.n, tc.b)
		r, c := h.Dims()
		if r != tc.rows || c != tc.n {
			t.Errorf("H(%d, %d) is %d×%d, want %d×%d", tc.n, tc.b, r, c, tc.rows, tc.n)
		}
		if s := maxColNorm2(h); s != float64(tc.levels) {
			t.Errorf("H(%d, %d): squared column norm %v, want %d levels", tc.n, tc.b, s, tc.levels)
		}
	}
}

// Choose's criterion Sens2·Err is computed right (against a direct
// computation) and beats or ties the identity; one condition row is
// measured as itself.
func TestChoose(t *testing.T) {
	for _, n := range []int{2, 5, 16, 40} {
		w := Prefix(n)
		f := Choose(w, n)
		id := Identity(w, n)
		if f.Sens2*f.Err > id.Sens2*id.Err {
			t.Errorf("n=%d: %s costs %v, identity %v", n, f.Kind, f.Sens2*f.Err, id.Sens2*id.Err)
		}
		if wantID := float64(n*(n+1)) / 2; math.Abs(id.Err-wantID) > 1e-9 {
			t.Errorf("n=%d: identity error %v, want %v", n, id.Err, wantID)
		}
		if f.A != nil {
			var wp mat.Dense
			wp.Mul(w, Pinv(f.A))
			e := mat.Norm(&wp, 2)
			if math.Abs(e*e-f.Err) > 1e-8*f.Err || f.Sens2 != maxColNorm2(f.A) {
				t.Errorf("n=%d: %s error %v sens %v, direct %v %v", n, f.Kind, f.Err, f.Sens2, e*e, maxColNorm2(f.A))
			}
		}
		t.Logf("prefix n=%d: %s, cost %.1f vs identity %.1f", n, f.Kind, f.Sens2*f.Err, id.Sens2*id.Err)
		if n >= 16 && f.Kind == "identity" {
			t.Errorf("n=%d: prefix ranges measured with the identity", n)
		}
	}
	row := mat.NewDense(1, 6, []float64{1, 1, 1, 0, 0, 0})
	if f := Choose(row, 6); f.Kind != "workload" || math.Abs(f.Err-1) > 1e-9 || f.Sens2 != 1 {
		t.Errorf("one condition row: %s err %v sens %v, want the row itself, 1, 1", f.Kind, f.Err, f.Sens2)
	}
	if f := Choose(nil, 6); f.Kind != "identity" || f.Err != 6 {
		t.Errorf("marginal: %+v", f)
	}
}

// The Kronecker error and sensitivity of a plan are those of the dense
// strategy matrix.
func TestPlanMatchesDense(t *testing.T) {
	dom, _ := pgm.NewDomain([]string{"a", "b", "c"}, []int{3, 9, 2})
	w := []synth.Marginal{{Attrs: []int{0, 1, 2}, Weight: 1, Kron: []*mat.Dense{nil, Prefix(9), mat.NewDense(1, 2, []float64{0, 1})}}}
	plans := Strategy(dom, w, 1)
	p := plans[0]
	factors, _ := p.kron()
	a := denseKron(factors, []int{3, 9, 2})
	wd := denseKron(w[0].Kron, []int{3, 9, 2})
	var wp mat.Dense
	wp.Mul(wd, Pinv(a))
	e := mat.Norm(&wp, 2)
	if math.Abs(e*e-p.Err) > 1e-8*p.Err {
		t.Errorf("plan error %v, dense %v", p.Err, e*e)
	}
	if math.Abs(maxColNorm2(a)-p.Sens2) > 1e-12 {
		t.Errorf("plan sensitivity² %v, dense %v", p.Sens2, maxColNorm2(a))
	}
	if got := p.Sens2 / (2 * p.Sigma * p.Sigma); math.Abs(got-1) > 1e-12 {
		t.Errorf("one plan spends %v of ρ = 1", got)
	}
}

// Allocate meets the budget exactly and is optimal: moving budget between
// two entries only increases the objective.
func TestAllocate(t *testing.T) {
	wts, sens, errs := []float64{1, 2, 0.5}, []float64{1, 4, 9}, []float64{10, 3, 100}
	sig := Allocate(0.7, wts, sens, errs)
	obj := func(s []float64) float64 {
		o := 0.0
		for c := range s {
			o += wts[c] * wts[c] * s[c] * s[c] * errs[c]
		}
		return o
	}
	var rho float64
	for c, s := range sig {
		rho += sens[c] / (2 * s * s)
	}
	if math.Abs(rho-0.7) > 1e-12 {
		t.Fatalf("allocation spends %v of 0.7", rho)
	}
	best := obj(sig)
	for _, f := range []float64{0.9, 1.1} {
		// Shift precision from entry 0 to entry 1 at equal total ρ.
		s := append([]float64(nil), sig...)
		r0 := sens[0] / (2 * s[0] * s[0])
		r1 := sens[1] / (2 * s[1] * s[1])
		nr0 := r0 * f
		nr1 := r1 + r0 - nr0
		s[0], s[1] = math.Sqrt(sens[0]/(2*nr0)), math.Sqrt(sens[1]/(2*nr1))
		if obj(s) < best {
			t.Errorf("moving budget (×%v) lowers the objective: %v < %v", f, obj(s), best)
		}
	}
}

func rangeInput(seed int64, rho float64) *synth.Input {
	return &synth.Input{
		Data: synthtest.Chain(4, 2000, []int{3, 12, 2, 4}),
		Workload: []synth.Marginal{
			{Attrs: []int{0, 1}, Weight: 1, Kron: []*mat.Dense{nil, Prefix(12)}},
			{Attrs: []int{1, 2}, Weight: 1, Kron: []*mat.Dense{Prefix(12), nil}},
			{Attrs: []int{2, 3}, Weight: 1},
		},
		Rho:   rho,
		Noise: noise.Derive(secret, seed, "t"),
	}
}

// LLS answers are unbiased with the predicted variance σ²·‖W A⁺‖²_F per
// workload entry (statistical, seeded).
func TestLLSStatistics(t *testing.T) {
	const runs = 300
	in := rangeInput(0, 0.05)
	w, _ := in.Check(true)
	plans := Strategy(in.Data.Domain(), w, in.Rho)
	truth, _ := in.Data.Marginals(context.Background(), [][]int{{0, 1}, {1, 2}, {2, 3}})
	sizes := [][]int{{3, 12}, {12, 2}, {2, 4}}
	var sq [3]float64
	var bias, sqq [3][]float64
	for run := range runs {
		in := rangeInput(int64(run), 0.05)
		r, _ := LLS{}.New(nil)
		res, err := r.Run(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		if run == 0 {
			synthtest.CheckResult(t, synth.AnswersOnly, in, res)
		}
		ans, err := LeastSquares(res.Measurements, []int{3, 12, 2, 4})
		if err != nil {
			t.Fatal(err)
		}
		for c, m := range ans {
			wx := pgm.KronMul(w[c].Kron, sizes[c], m.Y, false)
			wt := pgm.KronMul(w[c].Kron, sizes[c], truth[c], false)
			if bias[c] == nil {
				bias[c], sqq[c] = make([]float64, len(wx)), make([]float64, len(wx))
			}
			for i := range wx {
				d := wx[i] - wt[i]
				sq[c] += d * d
				bias[c][i] += d
				sqq[c][i] += d * d
			}
		}
	}
	for c, p := range plans {
		want := p.Sigma * p.Sigma * p.Err
		got := sq[c] / runs
		// The sum of many squared Gaussians over 300 runs: ±15% is > 5
		// standard errors for these sizes.
		if math.Abs(got-want) > 0.15*want {
			t.Errorf("entry %d: mean squared workload error %.1f, predicted %.1f", c, got, want)
		}
		// Per query, the predicted standard deviation (the error bound of
		// a range query) matches: ±35% on the variance is > 4 standard
		// errors (√(2/300) ≈ 8% relative) at 300 runs.
		std := p.QueryStd(w[c].Kron, sizes[c])
		if len(std) != len(sqq[c]) {
			t.Fatalf("entry %d: %d query deviations for %d queries", c, len(std), len(sqq[c]))
		}
		for i, s := range std {
			if v := sqq[c][i] / runs; math.Abs(v-s*s) > 0.35*s*s {
				t.Errorf("entry %d query %d: variance %.1f, predicted %.1f", c, i, v, s*s)
			}
		}
		for i, b := range bias[c] {
			// Per query, the mean of 300 errors has sd ≤ √(want/300).
			if math.Abs(b/runs) > 5*math.Sqrt(want/runs) {
				t.Errorf("entry %d query %d: bias %.2f", c, i, b/runs)
			}
		}
	}
}

func TestRunPGMAndLLS(t *testing.T) {
	var errPGM, errLLS float64
	for seed := range 3 {
		for _, m := range []synth.Mechanism{Mechanism{}, LLS{}} {
			in := rangeInput(int64(10+seed), 0.005)
			res := synthtest.MustRun(t, m, nil, in)
			synthtest.CheckResult(t, m.Output(), in, res)
			if math.Abs(res.RhoUsed-in.Rho) > 1e-12 {
				t.Errorf("%s: ρ used %v of %v", m.Name(), res.RhoUsed, in.Rho)
			}
			e := workloadError(t, in, res)
			if m.Name() == "hdmm_pgm" {
				errPGM += e / 3
			} else {
				errLLS += e / 3
			}
		}
	}
	t.Logf("workload error (seed 001 metric): HDMM+PGM %.4f, HDMM+LLS %.4f", errPGM, errLLS)
	if errPGM >= errLLS {
		t.Errorf("HDMM+PGM error %.4f not below HDMM+LLS %.4f at small ρ", errPGM, errLLS)
	}
}

// workloadError is seed 001's metric: the mean over entries of
// ‖W(μ − μ̂)‖₁ / (2‖Wμ‖₁), μ and μ̂ normalised.
func workloadError(t *testing.T, in *synth.Input, res *synth.Result) float64 {
	w, _ := in.Check(true)
	dom := in.Data.Domain()
	var sum float64
	for c, m := range w {
		truth, _ := in.Data.Marginals(context.Background(), [][]int{m.Attrs})
		var est []float64
		if res.Model != nil {
			est = res.Model.Marginal(m.Attrs)
		} else {
			sizes := make([]int, dom.Len())
			for a := range sizes {
				sizes[a] = dom.Size(a)
			}
			ans, err := LeastSquares(res.Measurements, sizes)
			if err != nil {
				t.Fatal(err)
			}
			est = ans[c].Y
		}
		sizes := sizesOf(dom, m.Attrs)
		normalise := func(x []float64) {
			s := 0.0
			for _, v := range x {
				s += v
			}
			for i := range x {
				x[i] /= s
			}
		}
		normalise(truth[0])
		normalise(est)
		wt := pgm.KronMul(kronOrNil(m), sizes, truth[0], false)
		we := pgm.KronMul(kronOrNil(m), sizes, est, false)
		var num, den float64
		for i := range wt {
			num += math.Abs(wt[i] - we[i])
			den += math.Abs(wt[i])
		}
		sum += num / (2 * den)
	}
	return sum / float64(len(w))
}

func kronOrNil(m synth.Marginal) []*mat.Dense {
	if m.Kron != nil {
		return m.Kron
	}
	return make([]*mat.Dense, len(m.Attrs))
}

func TestL1AndCancel(t *testing.T) {
	r, err := Mechanism{}.New([]synth.Option{{Name: "LOSS", Value: 1}, {Name: "ITERS", Value: 200}})
	if err != nil {
		t.Fatal(err)
	}
	in := rangeInput(3, 0.1)
	res, err := r.Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	synthtest.CheckResult(t, synth.SyntheticData, in, res)
	if e := workloadError(t, in, res); e > 0.2 {
		t.Errorf("L1 workload error %.4f", e)
	}
	for _, m := range []synth.Mechanism{Mechanism{}} {
		r, _ := m.New(nil)
		synthtest.CheckCancel(t, r, rangeInput(4, 0.1))
	}
	r, _ = Mechanism{}.New([]synth.Option{{Name: "MAX_MODEL_SIZE", Value: 1e-5}})
	if res, err := r.Run(context.Background(), rangeInput(5, 0.1)); err == nil || res != nil {
		t.Errorf("a model over MAX_MODEL_SIZE: result %v, err %v; want a refusal before any spending", res, err)
	}
	if _, err := (LLS{}).New([]synth.Option{{Name: "ITERS", Value: 3}}); err == nil {
		t.Error("hdmm_lls accepted ITERS")
	}
}

// Both mechanisms release what they measured: y_C with its Kronecker
// strategy and exact σ_C, which survives the release encoding; the noise
// y_C − A_C·x_C has the stated variance (seeded, 200 runs). LeastSquares
// turns them into hdmm_lls's answers A_C⁺·y_C (TestLLSStatistics).
func TestReleasesKronecker(t *testing.T) {
	in := rangeInput(0, 0.05)
	w, _ := in.Check(true)
	dom := in.Data.Domain()
	plans := Strategy(dom, w, in.Rho)
	sets := [][]int{{0, 1}, {1, 2}, {2, 3}}
	truth, _ := in.Data.Marginals(context.Background(), sets)
	const runs = 200
	var sq [3]float64
	var count [3]int
	for run := range runs {
		in := rangeInput(int64(run), 0.05)
		r, _ := Mechanism{}.New([]synth.Option{{Name: "ITERS", Value: 1}})
		res, err := r.Run(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Measurements) != len(plans) {
			t.Fatalf("%d measurements, want %d", len(res.Measurements), len(plans))
		}
		if run == 0 {
			b, err := synth.MarshalRelease(res)
			if err != nil {
				t.Fatal(err)
			}
			dec, err := synth.UnmarshalRelease(b)
			if err != nil {
				t.Fatal(err)
			}
			res.Measurements = dec.Measurements
		}
		for c, m := range res.Measurements {
			p := plans[c]
			if m.Sigma != p.Sigma || !slices.Equal(m.Attrs, p.Attrs) || (m.Kron != nil && len(m.Kron) != len(p.Factors)) {
				t.Fatalf("measurement %d: attrs %v σ %v kron %d, want %v %v %d", c, m.Attrs, m.Sigma, len(m.Kron), p.Attrs, p.Sigma, len(p.Factors))
			}
			for j, f := range p.Factors {
				// An all-identity strategy is released as a plain marginal.
				var k *mat.Dense
				if m.Kron != nil {
					k = m.Kron[j]
				}
				if (f.A == nil) != (k == nil) || (f.A != nil && !mat.Equal(f.A, k)) {
					t.Fatalf("measurement %d factor %d differs from the plan's %s", c, j, f.Kind)
				}
			}
			exact := pgm.KronMul(kronOrNil(synth.Marginal{Attrs: m.Attrs, Kron: m.Kron}), sizesOf(dom, m.Attrs), truth[c], false)
			for i, y := range m.Y {
				d := y - exact[i]
				sq[c] += d * d
				count[c]++
			}
		}
	}
	for c, p := range plans {
		got := math.Sqrt(sq[c] / float64(count[c]))
		// ≥ 4000 squared discrete Gaussians per entry: ±5% on σ is > 4
		// standard errors.
		if math.Abs(got-p.Sigma) > 0.05*p.Sigma {
			t.Errorf("entry %d: noise sd %.3f, stated σ %.3f", c, got, p.Sigma)
		}
	}
}
