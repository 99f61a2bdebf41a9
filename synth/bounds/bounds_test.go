package bounds

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/aim"
	"github.com/dpsql/dpsql/synth/internal/synthtest"
	"github.com/dpsql/dpsql/synth/noise"
	"github.com/dpsql/dpsql/synth/pgm"
)

// Simulations use math/rand with fixed seeds: nothing here is released.

// maxRate is the largest failure rate a simulation of trials trials may
// show for a bound with nominal failure probability lambda: four binomial
// standard deviations above λ, so a correct bound fails this check with
// probability below 1e-4.
func maxRate(lambda float64, trials int) float64 {
	return lambda + 4*math.Sqrt(lambda*(1-lambda)/float64(trials))
}

func TestL1NoiseBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const trials = 20000
	for _, n := range []int{1, 3, 40, 400} {
		for _, lambda := range []float64{0.05, 0.3} {
			a := l1NoiseBound(n, lambda)
			// Never above the Gaussian-concentration bound, never below
			// the mean sqrt(2/π)·n.
			nf := float64(n)
			if conc := sqrt2pi*nf + math.Sqrt(2*nf*math.Log(1/lambda)); a > conc*(1+1e-12) {
				t.Errorf("n=%d λ=%v: %v above the concentration bound %v", n, lambda, a, conc)
			}
			if a <= sqrt2pi*nf {
				t.Errorf("n=%d λ=%v: %v not above the mean %v", n, lambda, a, sqrt2pi*nf)
			}
			fail := 0
			for range trials {
				s := 0.0
				for range n {
					s += math.Abs(rng.NormFloat64())
				}
				if s >= a {
					fail++
				}
			}
			if r := float64(fail) / trials; r > maxRate(lambda, trials) {
				t.Errorf("n=%d λ=%v: P(Σ|Z| ≥ %v) ≈ %v > λ", n, lambda, a, r)
			}
		}
	}
	// n = 1 has a closed form to compare with: Chernoff can only be
	// looser than the exact quantile Φ⁻¹(1 − λ/2).
	if a, q := l1NoiseBound(1, 0.05), zTwoSided(0.05); a < q {
		t.Errorf("n=1: bound %v below the exact quantile %v", a, q)
	}
}

func TestFoldedMean(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, m := range []float64{0, 0.3, -1, 2.5, 10} {
		const trials = 200000
		s := 0.0
		for range trials {
			s += math.Abs(m + rng.NormFloat64())
		}
		mc := s / trials
		// Standard error of the Monte Carlo mean is below 1/sqrt(trials).
		if got := foldedMean(m); math.Abs(got-mc) > 5/math.Sqrt(trials) {
			t.Errorf("foldedMean(%v) = %v, Monte Carlo %v", m, got, mc)
		}
		if got := foldedMean(m); got < math.Abs(m) {
			t.Errorf("foldedMean(%v) = %v < |m|", m, got)
		}
		if m >= 0 {
			if inv := invFoldedMean(foldedMean(m)); math.Abs(inv-m) > 1e-9*(1+m) {
				t.Errorf("invFoldedMean(foldedMean(%v)) = %v", m, inv)
			}
		}
	}
	if got := invFoldedMean(0.5); got != 0 {
		t.Errorf("invFoldedMean below sqrt(2/π) = %v, want 0", got)
	}
}

// TestSignalBound checks the folded-normal bound on ‖μ‖₁ from one noisy
// observation, for signals that are spread, concentrated, mixed and zero
// (the concentrated case is where the Jensen step is tight).
func TestSignalBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const trials = 20000
	sigma := 3.0
	signals := map[string]func(n int) []float64{
		"zero":   func(n int) []float64 { return make([]float64, n) },
		"spread": func(n int) []float64 { return constant(n, 2*sigma) },
		"one": func(n int) []float64 {
			x := make([]float64, n)
			x[0] = 50 * sigma
			return x
		},
		"mixed": func(n int) []float64 {
			r := rand.New(rand.NewPCG(7, uint64(n)))
			x := make([]float64, n)
			for i := range x {
				x[i] = sigma * r.ExpFloat64() * float64(1-2*(i%2))
			}
			return x
		},
	}
	for name, gen := range signals {
		for _, n := range []int{1, 10, 200} {
			mu := gen(n)
			l1 := 0.0
			for _, v := range mu {
				l1 += math.Abs(v)
			}
			lambda := 0.05
			fail := 0
			for range trials {
				o := 0.0
				for _, v := range mu {
					o += math.Abs(v + sigma*rng.NormFloat64())
				}
				b := signalBound(o, sigma, n, lambda)
				if plain := o + sigma*math.Sqrt(2*float64(n)*math.Log(1/lambda)); b > plain*(1+1e-12) {
					t.Fatalf("%s n=%d: bound %v above the plain bound %v", name, n, b, plain)
				}
				if l1 > b {
					fail++
				}
			}
			if r := float64(fail) / trials; r > maxRate(lambda, trials) {
				t.Errorf("%s n=%d: ‖μ‖₁ = %v exceeded its bound in %v of trials > λ = %v", name, n, l1, r, lambda)
			}
		}
	}
}

func constant(n int, v float64) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = v
	}
	return x
}

// TestExponentialGuarantee checks the selection inequality q_r ≤ q_{r_t} +
// (2Δ/ε)·log((|C|−1)/λ₁) for every candidate r by sampling the exponential
// mechanism's exact distribution.
func TestExponentialGuarantee(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	const trials = 20000
	cases := []struct {
		name   string
		scores []float64
		eps    float64
	}{
		{"flat", []float64{0, 0, 0, 0, 0}, 0.1},
		{"one high", []float64{100, 0, 0, 0, 0, 0, 0, 0}, 0.05},
		{"spread", []float64{-50, -10, 0, 5, 20, 40, 41}, 0.2},
		{"two", []float64{3, 1}, 1},
	}
	delta, lam1 := 2.0, 0.05
	for _, c := range cases {
		p := make([]float64, len(c.scores))
		z := 0.0
		for i, q := range c.scores {
			p[i] = math.Exp(c.eps * q / (2 * delta))
			z += p[i]
		}
		gap := 2 * delta / c.eps * math.Log(float64(len(c.scores)-1)/lam1)
		fail := make([]int, len(c.scores))
		for range trials {
			u, sel := rng.Float64()*z, 0
			for u > p[sel] && sel < len(p)-1 {
				u -= p[sel]
				sel++
			}
			for r, q := range c.scores {
				if q > c.scores[sel]+gap {
					fail[r]++
				}
			}
		}
		for r, f := range fail {
			if rate := float64(f) / trials; rate > maxRate(lam1, trials) {
				t.Errorf("%s: candidate %d beat the selection by more than the gap in %v of trials", c.name, r, rate)
			}
		}
	}
}

// smallRelease fits a model to measurements of the true marginals of data
// (plus Gaussian noise from rng) on the given sets, and wraps it as an AIM
// release with no rounds.
func smallRelease(t *testing.T, data *pgm.Dataset, sets [][]int, sigmas []float64, rng *rand.Rand, model *pgm.Model) *Release {
	t.Helper()
	var meas []synth.Measurement
	var pm []pgm.Measurement
	for i, s := range sets {
		y := data.MarginalTo(nil, s)
		for c := range y {
			y[c] += sigmas[i] * rng.NormFloat64()
		}
		m := pgm.Measurement{Attrs: s, Y: y, Sigma: sigmas[i]}
		pm = append(pm, m)
		meas = append(meas, synth.Measurement{Measurement: m})
	}
	if model == nil {
		var err error
		model, err = pgm.Estimate(context.Background(), data.Domain(), pm, &pgm.EstimateOptions{Iters: 200})
		if err != nil {
			t.Fatal(err)
		}
	}
	w := make([]synth.Marginal, len(sets))
	for i, s := range sets {
		w[i] = synth.Marginal{Attrs: s, Weight: 1}
	}
	return &Release{Mechanism: "aim", Model: model, Workload: w, Measurements: meas}
}

// TestSupportedCoverage simulates the supported case with pure Gaussian
// noise: two overlapping measurements of different scales support the
// 1-way marginal of their shared attribute and the 2-way marginal of one of
// them. The combined estimate's L1 error must stay under its bound, and
// every cell's interval must cover the cell, at least at the nominal rate;
// so must the full bound of Marginals on the model.
func TestSupportedCoverage(t *testing.T) {
	data := synthtest.Chain(11, 2000, []int{3, 4, 5})
	sets := [][]int{{0, 1}, {1, 2}}
	sigmas := []float64{4, 9}
	rng := rand.New(rand.NewPCG(10, 11))
	base := smallRelease(t, data, sets, sigmas, rng, nil)
	ctx := context.Background()
	const trials = 4000
	for _, conf := range []float64{0.95, 0.8} {
		lambda := 1 - conf
		for _, attrs := range [][]int{{1}, {0, 1}, {2}} {
			truth := data.MarginalTo(nil, attrs)
			var failL1, failCell, cells int
			for range trials {
				rel := smallRelease(t, data, sets, sigmas, rng, base.Model)
				a, err := Analyze(rel)
				if err != nil {
					t.Fatal(err)
				}
				ybar, sd, _, ok := a.combined(attrs)
				if !ok {
					t.Fatalf("%v not supported", attrs)
				}
				l1 := 0.0
				for c := range ybar {
					l1 += math.Abs(ybar[c] - truth[c])
				}
				if l1 > sd*l1NoiseBound(len(ybar), lambda) {
					failL1++
				}
				cb, sup, err := Cells(ctx, rel, attrs, conf)
				if err != nil || !sup {
					t.Fatalf("Cells(%v): supported %v, %v", attrs, sup, err)
				}
				for c, b := range cb {
					cells++
					if truth[c] < b.Lower || truth[c] > b.Upper {
						failCell++
					}
				}
			}
			if r := float64(failL1) / trials; r > maxRate(lambda, trials) {
				t.Errorf("conf %v, %v: L1 bound failed in %v of trials", conf, attrs, r)
			}
			if r := float64(failCell) / float64(cells); r > maxRate(lambda, trials) {
				t.Errorf("conf %v, %v: cell intervals failed in %v of cells", conf, attrs, r)
			}
		}
	}
	// The 1-way marginal of attribute 1 is supported by both measurements:
	// its per-cell variance is the inverse of the summed precisions.
	a, err := Analyze(base)
	if err != nil {
		t.Fatal(err)
	}
	_, sd, _, _ := a.combined([]int{1})
	want := 1 / math.Sqrt(1/(16*3.0)+1/(81*5.0))
	if math.Abs(sd-want) > 1e-12*want {
		t.Errorf("σ̄ of the shared attribute = %v, want %v", sd, want)
	}
}

// TestMarginalsModelCoverage checks the full supported bound of Marginals
// (model error on the normalised scale, total included) by simulation.
func TestMarginalsModelCoverage(t *testing.T) {
	data := synthtest.Chain(12, 3000, []int{3, 4, 2})
	sets := [][]int{{0, 1}, {1, 2}, {0}, {2}}
	sigmas := []float64{10, 10, 30, 30}
	rng := rand.New(rand.NewPCG(12, 13))
	ctx := context.Background()
	const trials = 300
	fail, total := 0, 0
	n := float64(data.Rows())
	for range trials {
		rel := smallRelease(t, data, sets, sigmas, rng, nil)
		bs, err := Marginals(ctx, rel, 0.9)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range bs {
			if !b.Supported {
				t.Fatalf("%v not supported", b.Attrs)
			}
			x := data.MarginalTo(nil, b.Attrs)
			xhat := rel.Model.Marginal(b.Attrs)
			e := 0.0
			for c := range x {
				e += math.Abs(x[c]/n - xhat[c]/rel.Model.Total())
			}
			total++
			if e > b.L1 {
				fail++
			}
		}
	}
	if r := float64(fail) / float64(total); r > maxRate(0.1, trials) {
		t.Errorf("Marginals' bounds failed in %v of marginals", r)
	}
}

func aimRelease(t *testing.T) (*Release, *pgm.Dataset) {
	t.Helper()
	data := synthtest.Chain(4, 3000, []int{4, 3, 5, 2, 6})
	w := synthtest.AllK(5, 2)
	r, err := aim.Mechanism{}.New([]synth.Option{{Name: "PGM_ITERS", Value: 20}, {Name: "FINAL_ITERS", Value: 100}})
	if err != nil {
		t.Fatal(err)
	}
	in := &synth.Input{Data: data, Workload: w, Rho: 0.02, Noise: noise.Derive(testSecret, 1, "release"), Rows: 1}
	res, err := r.Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return FromResult("aim", res, w), data
}

func TestErrors(t *testing.T) {
	rel, _ := aimRelease(t)
	ctx := context.Background()
	mst := *rel
	mst.Mechanism = "mst"
	_, err := Marginals(ctx, &mst, 0.95)
	if !errors.Is(err, ErrNoBounds) || !strings.Contains(err.Error(), "no bounds for mechanism mst") {
		t.Errorf("Marginals on MST: %v, want ErrNoBounds", err)
	}
	if _, _, err := Cells(ctx, &mst, []int{0}, 0.95); !errors.Is(err, ErrNoBounds) {
		t.Errorf("Cells on MST: %v, want ErrNoBounds", err)
	}
	for _, conf := range []float64{0, 1, -0.5, math.NaN()} {
		if _, err := Marginals(ctx, rel, conf); !errors.Is(err, ErrInvalid) {
			t.Errorf("confidence %v: %v, want ErrInvalid", conf, err)
		}
	}
	for _, attrs := range [][]int{nil, {0, 0}, {5}, {-1}} {
		if _, _, err := Cells(ctx, rel, attrs, 0.95); !errors.Is(err, ErrInvalid) {
			t.Errorf("Cells(%v): %v, want ErrInvalid", attrs, err)
		}
	}
	// A 3-way set is outside the 2-way workload's closure and was not
	// measured (AIM measures candidates only).
	if _, _, err := Cells(ctx, rel, []int{0, 1, 2}, 0.95); !errors.Is(err, ErrUncovered) {
		t.Errorf("Cells on a 3-way set: %v, want ErrUncovered", err)
	} else if want := fmt.Sprintf("(%s, %s, %s)", rel.Model.Domain().Name(0), rel.Model.Domain().Name(1), rel.Model.Domain().Name(2)); !strings.Contains(err.Error(), want) {
		t.Errorf("Cells on a 3-way set: %v, want the columns named %s", err, want)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Marginals(cctx, rel, 0.95); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Marginals: %v", err)
	}
}

// TestCellsLayout checks that Cells follows the requested attribute order
// and agrees with the model and with Marginals on supported-ness.
func TestCellsLayout(t *testing.T) {
	rel, _ := aimRelease(t)
	ctx := context.Background()
	bs, err := Marginals(ctx, rel, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 10 {
		t.Fatalf("%d bounds, want one per 2-way marginal (10)", len(bs))
	}
	sawSup, sawUnsup := false, false
	for _, b := range bs {
		if b.L1 <= 0 || b.L1 > 2 {
			t.Errorf("%v: L1 bound %v outside (0, 2]", b.Attrs, b.L1)
		}
		fwd, sup, err := Cells(ctx, rel, b.Attrs, 0.95)
		if err != nil {
			t.Fatal(err)
		}
		if sup != b.Supported {
			t.Errorf("%v: Cells supported %v, Marginals %v", b.Attrs, sup, b.Supported)
		}
		sawSup = sawSup || sup
		sawUnsup = sawUnsup || !sup
		rev := []int{b.Attrs[1], b.Attrs[0]}
		back, _, err := Cells(ctx, rel, rev, 0.95)
		if err != nil {
			t.Fatal(err)
		}
		est := rel.Model.Marginal(rev)
		n0, n1 := rel.Model.Domain().Size(b.Attrs[0]), rel.Model.Domain().Size(b.Attrs[1])
		for i := range n0 {
			for j := range n1 {
				f, r := fwd[i*n1+j], back[j*n0+i]
				if f != r {
					t.Errorf("%v cell (%d,%d): %+v, reversed order gives %+v", b.Attrs, i, j, f, r)
				}
				if r.Estimate != est[j*n0+i] {
					t.Errorf("%v: estimate %v, model %v", rev, r.Estimate, est[j*n0+i])
				}
				if r.Lower < 0 || r.Lower > r.Upper {
					t.Errorf("%v: interval [%v, %v]", rev, r.Lower, r.Upper)
				}
			}
		}
	}
	if !sawSup || !sawUnsup {
		t.Errorf("want both kinds of marginal in this release: supported seen %v, unsupported seen %v", sawSup, sawUnsup)
	}
}

// TestAnalysisReuse checks that one Analysis answers like fresh ones at
// every confidence, concurrently, and that bounds grow with the confidence.
func TestAnalysisReuse(t *testing.T) {
	rel, _ := aimRelease(t)
	ctx := context.Background()
	a, err := Analyze(rel)
	if err != nil {
		t.Fatal(err)
	}
	confs := []float64{0.5, 0.8, 0.95, 0.99, 0.999}
	got := make([][]MarginalBound, len(confs))
	done := make(chan error, len(confs))
	for i, c := range confs {
		go func() {
			var err error
			got[i], err = a.Marginals(ctx, c)
			done <- err
		}()
	}
	for range confs {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range confs {
		fresh, err := Marginals(ctx, rel, c)
		if err != nil {
			t.Fatal(err)
		}
		for k := range fresh {
			if fresh[k].L1 != got[i][k].L1 || fresh[k].Supported != got[i][k].Supported || fresh[k].Round != got[i][k].Round {
				t.Errorf("confidence %v, %v: reused %+v, fresh %+v", c, fresh[k].Attrs, got[i][k], fresh[k])
			}
			if i > 0 && got[i][k].L1 < got[i-1][k].L1 {
				t.Errorf("%v: bound %v at confidence %v below %v at %v", fresh[k].Attrs, got[i][k].L1, c, got[i-1][k].L1, confs[i-1])
			}
		}
	}
}

// TestCellsClipNegative checks that a supported cell whose combined
// estimate lies far below 0 gets the interval [0, 0], not one whose upper
// end is negative, and that every interval is [max(0, lo), max(0, hi)] of
// the Gaussian interval computed here from the measurement alone.
func TestCellsClipNegative(t *testing.T) {
	data := synthtest.Chain(13, 500, []int{3, 4})
	rng := rand.New(rand.NewPCG(13, 14))
	const sigma = 2.0
	rel := smallRelease(t, data, [][]int{{0, 1}}, []float64{sigma}, rng, nil)
	y := rel.Measurements[0].Y
	y[0], y[5] = -1000, -1 // far below 0, and just below 0 (the interval straddles it)
	const conf = 0.9
	cells, sup, err := Cells(context.Background(), rel, []int{0, 1}, conf)
	if err != nil || !sup {
		t.Fatalf("Cells: supported %v, %v", sup, err)
	}
	h := zTwoSided(1-conf) * sigma
	for c, b := range cells {
		lo, hi := max(0, y[c]-h), max(0, y[c]+h)
		if b.Lower != lo || b.Upper != hi {
			t.Errorf("cell %d (y = %v): [%v, %v], want [%v, %v]", c, y[c], b.Lower, b.Upper, lo, hi)
		}
		if b.Lower < 0 || b.Lower > b.Upper {
			t.Errorf("cell %d: interval [%v, %v]", c, b.Lower, b.Upper)
		}
	}
	if b := cells[0]; b.Lower != 0 || b.Upper != 0 {
		t.Errorf("cell measured at -1000: [%v, %v], want [0, 0]", b.Lower, b.Upper)
	}
	if b := cells[5]; b.Lower != 0 || !(b.Upper > 0) {
		t.Errorf("cell measured at -1: [%v, %v], want [0, > 0]", b.Lower, b.Upper)
	}
}

// TestCompactSnapshots: a snapshot kept as the marginals the bounds read
// (the candidates whose last round it is and the round's measured set, as
// AIM keeps them at large ε) gives the same bounds as the model, and one
// that lacks a marginal the bounds need is refused, not read as zero.
func TestCompactSnapshots(t *testing.T) {
	rel, _ := aimRelease(t)
	ctx := context.Background()
	want, err := Marginals(ctx, rel, 0.9)
	if err != nil {
		t.Fatal(err)
	}
	measured := map[int][]int{}
	for _, m := range rel.Measurements {
		if m.Round > 0 {
			measured[m.Round] = m.Attrs
		}
	}
	compact := *rel
	compact.Snapshots = slices.Clone(rel.Snapshots)
	n := 0
	for k, s := range compact.Snapshots {
		if s.Model == nil {
			continue
		}
		ms := []synth.SnapshotMarginal{{Attrs: measured[s.Round], X: s.Model.Marginal(measured[s.Round])}}
		for _, c := range rel.LastCandidate {
			if c.Round == s.Round {
				ms = append(ms, synth.SnapshotMarginal{Attrs: c.Attrs, X: s.Model.Marginal(c.Attrs)})
			}
		}
		compact.Snapshots[k] = synth.Snapshot{Round: s.Round, Marginals: ms}
		n++
	}
	if n == 0 {
		t.Fatal("no model snapshot to compact")
	}
	got, err := Marginals(ctx, &compact, 0.9)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("bounds from compacted snapshots differ:\n got %+v\nwant %+v", got, want)
	}
	// Drop every snapshot's marginal of its measured set: the bounds of the
	// unsupported marginals need it.
	for k, s := range compact.Snapshots {
		compact.Snapshots[k].Marginals = slices.DeleteFunc(slices.Clone(s.Marginals), func(m synth.SnapshotMarginal) bool {
			return slices.Equal(m.Attrs, measured[s.Round])
		})
	}
	unsupported := 0
	for _, b := range want {
		if !b.Supported && b.Round > 0 {
			unsupported++
			if _, _, err := Cells(ctx, &compact, b.Attrs, 0.9); !errors.Is(err, ErrInvalid) {
				t.Errorf("Cells(%v) without the snapshot's measured marginal: %v, want ErrInvalid", b.Attrs, err)
			}
		}
	}
	if unsupported == 0 {
		t.Error("no unsupported marginal in the case")
	}
}
