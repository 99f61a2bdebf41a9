package pep

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/internal/synthtest"
	"github.com/dpsql/dpsql/synth/noise"
	"github.com/dpsql/dpsql/synth/pgm"
)

func TestBudget(t *testing.T) {
	for _, rho := range []float64{1.7e-4, 0.0144, 3} {
		for _, T := range []int{1, 30, 200} {
			for _, alpha := range []float64{0.1, 0.5, 0.9} {
				s0, eps, s := Budget(rho, T, alpha)
				got := 1/(2*s0*s0) + float64(T)*(eps*eps/8+1/(2*s*s))
				if math.Abs(got-rho) > 1e-12*rho {
					t.Errorf("ρ=%v T=%d α=%v: spends %v", rho, T, alpha, got)
				}
				// The split follows [000]: selection (αε0)²/2, measurement ((1−α)ε0)²/2.
				if r := (eps / 2 / alpha) * (1 - alpha); math.Abs(r*s-1) > 1e-12 {
					t.Errorf("ρ=%v T=%d α=%v: ε and σ not from one ε0", rho, T, alpha)
				}
			}
		}
	}
}

// randomDomain returns d attributes with sizes in [2, maxSize].
func randomDomain(t *testing.T, rng *rand.Rand, d, maxSize int) *pgm.Domain {
	names := make([]string, d)
	sizes := make([]int, d)
	for i := range d {
		names[i] = fmt.Sprintf("a%d", i)
		sizes[i] = 2 + rng.IntN(maxSize-1)
	}
	dom, err := pgm.NewDomain(names, sizes)
	if err != nil {
		t.Fatal(err)
	}
	return dom
}

// joint returns the full joint distribution of a model (row-major).
func joint(m *pgm.Model) []float64 {
	all := make([]int, m.Domain().Len())
	for a := range all {
		all[a] = a
	}
	x := m.Marginal(all)
	for i := range x {
		x[i] /= m.Total()
	}
	return x
}

// TestEnginesAgree is the oracle test: on small random domains, the
// projection run on the graphical-model engine gives the same
// distribution as on the explicit histogram, to 1e-6.
func TestEnginesAgree(t *testing.T) {
	for seed := range uint64(12) {
		rng := rand.New(rand.NewPCG(seed, 11))
		dom := randomDomain(t, rng, 3+rng.IntN(3), 4)
		dense, err := newDenseDomain(dom)
		if err != nil {
			t.Fatal(err)
		}
		fams := []family{dense, newFactored(dom)}
		runs := make([]*run, 2)
		for e, fam := range fams {
			runs[e] = &run{cfg: &config{iters: 40}, dom: dom, fam: fam}
			runs[e].addTotal(1, 1)
		}
		// Random measured sets and noisy targets, some infeasible.
		for range 2 + rng.IntN(4) {
			perm := rng.Perm(dom.Len())[:1+rng.IntN(3)]
			slices.Sort(perm)
			ys := make([]float64, dom.Cells(perm))
			for c := range ys {
				ys[c] = rng.Float64() * 2 / float64(len(ys))
			}
			for _, r := range runs {
				idx, err := r.fam.addSet(perm)
				if err != nil {
					t.Fatal(err)
				}
				if idx == len(r.sets) {
					r.sets = append(r.sets, perm)
				}
				first := len(r.qs)
				for c, y := range ys {
					r.qs = append(r.qs, query{idx, c, y})
				}
				r.groups = append(r.groups, group{first, len(r.qs)})
				if err := r.project(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
		}
		// MWEM steps too (whole-set updates).
		for _, r := range runs {
			r.cfg.past = true
			if err := r.mw(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		var ms [2]*pgm.Model
		for e, r := range runs {
			if ms[e], err = r.model(); err != nil {
				t.Fatal(err)
			}
		}
		a, b := joint(ms[0]), joint(ms[1])
		for i := range a {
			if math.Abs(a[i]-b[i]) > 1e-6 {
				t.Fatalf("seed %d cell %d: dense %v, model %v", seed, i, a[i], b[i])
			}
		}
	}
}

// TestProjectionExact: one projection step onto a single 0/1 constraint
// meets it exactly ([000] App. C.2), and is the closed-form I-projection.
func TestProjectionExact(t *testing.T) {
	dom, _ := pgm.NewDomain([]string{"a", "b"}, []int{3, 4})
	g, _ := newDenseDomain(dom)
	r := &run{cfg: &config{iters: 1}, dom: dom, fam: g}
	r.addTotal(100, 1)
	i, _ := g.addSet([]int{0, 1})
	r.sets = [][]int{{0, 1}}
	r.qs = []query{{i, 5, 30}}
	if err := r.project(context.Background()); err != nil {
		t.Fatal(err)
	}
	m := g.marginal(i, nil)
	if math.Abs(m[5]-0.3) > 1e-12 {
		t.Errorf("after one step q(D) = %v, want 0.3", m[5])
	}
	// The rest keeps its relative weights (uniform).
	for c, v := range m {
		if c != 5 && math.Abs(v-0.7/11) > 1e-12 {
			t.Errorf("cell %d = %v, want %v", c, v, 0.7/11)
		}
	}
}

func input(seed int64, rho float64) *synth.Input {
	return &synth.Input{
		Data:     synthtest.Chain(5, 4000, []int{4, 3, 5, 2, 4}),
		Workload: synthtest.AllK(5, 3),
		Rho:      rho,
		Noise:    noise.Derive([]byte("pep test secret, thirty-two bytes"), seed, "t"),
	}
}

func opts(kv ...any) []synth.Option {
	var o []synth.Option
	for i := 0; i < len(kv); i += 2 {
		o = append(o, synth.Option{Name: kv[i].(string), Value: kv[i+1]})
	}
	return o
}

func workloadSets(in *synth.Input) [][]int {
	sets := make([][]int, len(in.Workload))
	for i, m := range in.Workload {
		sets[i] = m.Attrs
	}
	return sets
}

// maxError is the paper's metric: the largest normalised error over every
// cell of every workload marginal.
func maxError(t *testing.T, in *synth.Input, rows [][]uint16) float64 {
	syn, err := pgm.NewDataset(in.Data.Domain(), rows)
	if err != nil {
		t.Fatal(err)
	}
	sets := workloadSets(in)
	truth, _ := in.Data.Marginals(context.Background(), sets)
	e := 0.0
	for k, s := range sets {
		n := 0.0
		for _, v := range truth[k] {
			n += v
		}
		y := syn.MarginalTo(nil, s)
		for c := range y {
			e = max(e, math.Abs(truth[k][c]/n-y[c]/float64(syn.Rows())))
		}
	}
	return e
}

func TestRun(t *testing.T) {
	cases := []struct {
		m    synth.Mechanism
		o    []synth.Option
		maxE float64
	}{
		{PEP{}, opts("ROUNDS", 10), 0.05},
		{PEP{}, opts("ROUNDS", 10, "DENSE", 1), 0.05},
		{PEP{}, opts("ROUNDS", 40, "CELLS", 1), 0.08},
		{PMW{}, opts("ROUNDS", 40), 0.12},
		{PMW{}, opts("ROUNDS", 10, "CELLS", 0, "DENSE", 1), 0.2},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s%v", c.m.Name(), c.o), func(t *testing.T) {
			in := input(1, 1)
			res := synthtest.MustRun(t, c.m, c.o, in)
			synthtest.CheckResult(t, synth.SyntheticData, in, res)
			if math.Abs(res.RhoUsed-in.Rho) > 1e-12 {
				t.Errorf("ρ used %v, want %v", res.RhoUsed, in.Rho)
			}
			e := maxError(t, in, res.Rows)
			t.Logf("max error %.4f", e)
			if e > c.maxE {
				t.Errorf("max error %.4f, want ≤ %v", e, c.maxE)
			}
		})
	}
}

// TestPEPBeatsMWEM: at equal budget and rounds, PEP's projection onto all
// measurements fits the workload better than one MW step per round
// (averaged over seeds; the paper's main low-dimensional finding).
func TestPEPBeatsMWEM(t *testing.T) {
	var pep, mw float64
	for seed := range int64(3) {
		o := opts("ROUNDS", 10, "CELLS", 0)
		pep += maxError(t, input(seed, 0.1), synthtest.MustRun(t, PEP{}, o, input(seed, 0.1)).Rows)
		mw += maxError(t, input(seed, 0.1), synthtest.MustRun(t, PMW{}, o, input(seed, 0.1)).Rows)
	}
	t.Logf("PEP %.4f MWEM %.4f", pep/3, mw/3)
	if pep >= mw {
		t.Errorf("mean max error: PEP %.4f, MWEM %.4f; want PEP lower", pep/3, mw/3)
	}
}

func TestCancel(t *testing.T) {
	for _, m := range []synth.Mechanism{PEP{}, PMW{}, PMWPub{}, PEPPub{}} {
		r, _ := m.New(opts("ROUNDS", 5))
		synthtest.CheckCancel(t, r, publicInput(2, 1))
	}
}

// TestPreflight: a run under an already-cancelled context validates, then
// stops before reading data or spending.
func TestPreflight(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r, _ := PEP{}.New(nil)
	res, err := r.Run(ctx, input(1, 1))
	if !errors.Is(err, context.Canceled) || res == nil || res.RhoUsed != 0 {
		t.Fatalf("cancelled: %v, %+v", err, res)
	}
	// A dense request over too large a domain is refused before that.
	big := input(1, 1)
	names, sizes := make([]string, 12), make([]int, 12)
	cols := make([][]uint16, 12)
	for i := range names {
		names[i], sizes[i] = fmt.Sprint("a", i), 10
	}
	dom, _ := pgm.NewDomain(names, sizes)
	big.Data, _ = pgm.NewDataset(dom, cols)
	big.Workload = synthtest.AllK(12, 1)
	r, _ = PEP{}.New(opts("DENSE", 1))
	if _, err := r.Run(ctx, big); err == nil || errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "dense") {
		t.Errorf("dense over 10^12 cells: %v", err)
	}
}

func TestOptions(t *testing.T) {
	for _, bad := range [][]synth.Option{
		opts("ALPHA", 1), opts("ALPHA", 0), opts("ROUNDS", 0), opts("CELLS", 2), opts("TOLERANCE", -1), opts("NOPE", 1),
	} {
		if _, err := (PEP{}).New(bad); err == nil {
			t.Errorf("PEP accepted %v", bad)
		}
	}
	if _, err := (PMWPub{}).New(opts("DENSE", 1)); err == nil {
		t.Error("pmw_pub accepted DENSE")
	}
}

// TestPastQueries: replaying past queries improves MWEM ([000] App. D.6).
func TestPastQueries(t *testing.T) {
	var with, without float64
	for seed := range int64(3) {
		with += maxError(t, input(seed, 0.2), synthtest.MustRun(t, PMW{}, opts("ROUNDS", 30, "PAST_QUERIES", 1), input(seed, 0.2)).Rows)
		without += maxError(t, input(seed, 0.2), synthtest.MustRun(t, PMW{}, opts("ROUNDS", 30, "PAST_QUERIES", 0), input(seed, 0.2)).Rows)
	}
	t.Logf("max error with past queries %.4f, without %.4f", with/3, without/3)
	if with >= without {
		t.Errorf("past queries did not help: %.4f vs %.4f", with/3, without/3)
	}
}

// marginalsOnly hides every method of its data but the marginal oracle, as
// a federated source does.
type marginalsOnly struct{ d synth.Data }

func (m marginalsOnly) Domain() *pgm.Domain { return m.d.Domain() }
func (m marginalsOnly) Marginals(ctx context.Context, sets [][]int) ([][]float64, error) {
	return m.d.Marginals(ctx, sets)
}

// TestMarginalsOnly: every mechanism runs on a source that answers
// marginals only, and none implements synth.RecordMechanism.
func TestMarginalsOnly(t *testing.T) {
	for _, m := range []synth.Mechanism{PEP{}, PMW{}, PMWPub{}, PEPPub{}} {
		if _, ok := m.(synth.RecordMechanism); ok {
			t.Errorf("%s needs records", m.Name())
		}
		in := publicInput(4, 0.5)
		in.Data = marginalsOnly{in.Data}
		res := synthtest.MustRun(t, m, opts("ROUNDS", 5), in)
		if len(res.Rows) != 5 || len(res.Rows[0]) == 0 {
			t.Errorf("%s: no rows", m.Name())
		}
	}
}

// TestTooManyCells: single-cell selection over more than maxCellCandidates
// cells is refused before anything is spent (the engine's preflight).
func TestTooManyCells(t *testing.T) {
	names, sizes := make([]string, 6), make([]int, 6)
	for i := range names {
		names[i], sizes[i] = fmt.Sprint("a", i), 60
	}
	dom, _ := pgm.NewDomain(names, sizes)
	data, _ := pgm.NewDataset(dom, make([][]uint16, 6))
	in := &synth.Input{Data: data, Workload: synthtest.AllK(6, 3), Rho: 1,
		Noise: noise.Derive([]byte("pep test secret, thirty-two bytes"), 1, "t")}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, m := range []synth.Mechanism{PMW{}, PEP{}} {
		r, _ := m.New(opts("CELLS", 1))
		if _, err := r.Run(ctx, in); err == nil || !strings.Contains(err.Error(), "CELLS = 0") {
			t.Errorf("%s over 20·216000 cells: %v", m.Name(), err)
		}
	}
	r, _ := PMW{}.New(opts("CELLS", 0))
	if _, err := r.Run(ctx, in); !errors.Is(err, context.Canceled) {
		t.Errorf("whole marginals: %v, want to pass validation", err)
	}
}
