package aim

import (
	"context"
	"errors"
	"math"
	"runtime"
	"slices"
	"sync"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dpsql/dpsql/internal/gctest"
	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/independent"
	"github.com/dpsql/dpsql/synth/internal/synthtest"
	"github.com/dpsql/dpsql/synth/noise"
	"github.com/dpsql/dpsql/synth/pgm"
)

var testSecret = []byte("aim test secret, not a real one!")

func testInput(seed int64) *synth.Input {
	data := synthtest.Chain(1, 3000, []int{4, 3, 5, 2, 6})
	return &synth.Input{
		Data:     data,
		Workload: synthtest.AllK(5, 2),
		Rho:      0.5,
		Noise:    noise.Derive(testSecret, seed, "aim"),
	}
}

// TestRun checks a full AIM run: result invariants, that ρ is spent exactly
// and matches the released measurements and selections, that the rounds
// follow the schedule, and that AIM beats Independent on strongly
// correlated data.
func TestRun(t *testing.T) {
	in := testInput(1)
	var reports []synth.Status
	in.Progress = func(s synth.Status) { reports = append(reports, s) }
	res := synthtest.MustRun(t, Mechanism{}, []synth.Option{{Name: "PGM_ITERS", Value: 20}, {Name: "FINAL_ITERS", Value: 300}}, in)
	synthtest.CheckResult(t, synth.SyntheticData, in, res)
	if math.Abs(res.RhoUsed-in.Rho) > 1e-12 {
		t.Errorf("ρ used %v, want exactly %v", res.RhoUsed, in.Rho)
	}
	// Recompute the spend from what was released: every measurement is a
	// sensitivity-1 Gaussian, every round one exponential mechanism.
	var spent float64
	for _, m := range res.Measurements {
		spent += 1 / (2 * m.Sigma * m.Sigma)
	}
	for _, rd := range res.Rounds {
		spent += rd.Epsilon * rd.Epsilon / 8
	}
	if math.Abs(spent-in.Rho) > 1e-9*in.Rho {
		t.Errorf("released measurements and selections cost %v, want %v", spent, in.Rho)
	}
	if got, want := len(res.Measurements), 5+len(res.Rounds); got != want {
		t.Errorf("%d measurements, want 5 one-way + %d rounds", got, len(res.Rounds))
	}
	if len(res.Rounds) == 0 || len(reports) < len(res.Rounds) {
		t.Errorf("%d rounds, %d progress reports", len(res.Rounds), len(reports))
	}
	if len(res.LastCandidate) != 5+10 {
		t.Errorf("%d last-candidate records, want one per candidate (15)", len(res.LastCandidate))
	}
	if len(res.Snapshots) == 0 {
		t.Error("no snapshot kept")
	}

	ind, _ := independent.Mechanism{}.New(nil)
	in2 := testInput(1)
	ires, err := ind.Run(context.Background(), in2)
	if err != nil {
		t.Fatal(err)
	}
	sets := make([][]int, len(in.Workload))
	for i, m := range in.Workload {
		sets[i] = m.Attrs
	}
	ea := synthtest.Error(t, in.Data, sets, res.Rows)
	ei := synthtest.Error(t, in.Data, sets, ires.Rows)
	t.Logf("workload error: AIM %.4f, Independent %.4f (%d rounds)", ea, ei, len(res.Rounds))
	// The chain's 2-way dependence costs an independent model about 0.8 of
	// L1 per pair; AIM measures the pairs directly.
	if ea > ei/2 {
		t.Errorf("AIM error %.4f not well below Independent's %.4f", ea, ei)
	}
}

// TestRunCoarse checks a run with coarse twins (3 bins: the attributes of
// 4, 5 and 6 values are binned): ρ is spent exactly and matches the
// released σ's and ε's (a twin's measurement has sensitivity 1, so it costs
// 1/(2σ²) like any other), twins are measured as Kronecker queries of the
// right shape on their fine attributes, and the model is fitted to them.
func TestRunCoarse(t *testing.T) {
	measured := 0 // twins over all seeds
	for _, seed := range []int64{1, 2, 3} {
		in := testInput(seed)
		res := synthtest.MustRun(t, Mechanism{}, []synth.Option{{Name: "PGM_ITERS", Value: 20}, {Name: "FINAL_ITERS", Value: 300}, {Name: "COARSE_BINS", Value: 3}}, in)
		synthtest.CheckResult(t, synth.SyntheticData, in, res)
		var spent float64
		twins := 0
		dom := in.Data.Domain()
		for _, m := range res.Measurements {
			spent += 1 / (2 * m.Sigma * m.Sigma)
			if m.Kron == nil {
				continue
			}
			twins++
			if m.Round == 0 {
				t.Errorf("seed %d: a 1-way initial measurement is coarse", seed)
			}
			cells := 1
			for j, a := range m.Attrs {
				if f := m.Kron[j]; f == nil {
					cells *= dom.Size(a)
				} else if rows, cols := f.Dims(); rows != 3 || cols != dom.Size(a) || dom.Size(a) <= 3 {
					t.Fatalf("seed %d: factor %d×%d on an attribute of %d values", seed, rows, cols, dom.Size(a))
				} else {
					cells *= 3
				}
			}
			if len(m.Y) != cells {
				t.Errorf("seed %d: twin on %v has %d values, want %d", seed, m.Attrs, len(m.Y), cells)
			}
		}
		for _, rd := range res.Rounds {
			spent += rd.Epsilon * rd.Epsilon / 8
		}
		if math.Abs(spent-in.Rho) > 1e-9*in.Rho || res.RhoUsed > in.Rho*(1+1e-12) {
			t.Errorf("seed %d: released measurements and selections cost %v (reported %v), want %v", seed, spent, res.RhoUsed, in.Rho)
		}
		if len(res.LastCandidate) != 5+10 {
			t.Errorf("seed %d: %d last-candidate records, want one per fine candidate (15)", seed, len(res.LastCandidate))
		}
		// The release stores the twins' Kronecker factors.
		blob, err := synth.MarshalRelease(res)
		if err != nil {
			t.Fatal(err)
		}
		back, err := synth.UnmarshalRelease(blob)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range res.Measurements {
			b := back.Measurements[i]
			if len(b.Kron) != len(m.Kron) || !slices.Equal(b.Y, m.Y) {
				t.Fatalf("seed %d: measurement %d on %v did not survive the release", seed, i, m.Attrs)
			}
			for j, f := range m.Kron {
				if (f == nil) != (b.Kron[j] == nil) || (f != nil && !mat.Equal(f, b.Kron[j])) {
					t.Fatalf("seed %d: measurement %d: factor %d did not survive the release", seed, i, j)
				}
			}
		}
		t.Logf("seed %d: %d rounds, %d twins measured", seed, len(res.Rounds), twins)
		measured += twins
	}
	// Whether a seed selects a twin depends on its trajectory; the checks
	// above need some to be selected.
	if measured == 0 {
		t.Error("no coarse twin measured in any seed")
	}
}

func TestCancel(t *testing.T) {
	r, _ := Mechanism{}.New(nil)
	synthtest.CheckCancel(t, r, testInput(2))
}

func TestRunRejectsBadInput(t *testing.T) {
	r, _ := Mechanism{}.New(nil)
	for _, mod := range []func(*synth.Input){
		func(in *synth.Input) { in.Workload = nil },
		func(in *synth.Input) { in.Rho = 0 },
		func(in *synth.Input) { in.Noise = nil },
		func(in *synth.Input) { in.Workload = []synth.Marginal{{Attrs: []int{9}, Weight: 1}} },
	} {
		in := testInput(3)
		mod(in)
		if _, err := r.Run(context.Background(), in); !errors.Is(err, synth.ErrInvalidInput) {
			t.Errorf("err = %v, want ErrInvalidInput", err)
		}
	}
	// ROUNDS too small for the 1-way initialisation.
	r, _ = Mechanism{}.New([]synth.Option{{Name: "ROUNDS", Value: 5}})
	if _, err := r.Run(context.Background(), testInput(3)); err == nil {
		t.Error("ROUNDS = #1-way accepted")
	}
}

// finalData is a Data whose collection the test can see.
type finalData struct{ synth.Data }

// TestResultReleasesInput: the result AIM returns does not keep its input
// reachable — the engine holds the result while it writes the release, and
// the input's cache holds every true marginal of the workload (at 10 M
// federated rows, 109 MB of a 292 MB live heap during the write).
func TestResultReleasesInput(t *testing.T) {
	in := testInput(5)
	data := &finalData{Data: synth.NewCache(in.Data)}
	freed := make(chan struct{})
	runtime.SetFinalizer(data, func(*finalData) { close(freed) })
	in.Data = data
	res := synthtest.MustRun(t, Mechanism{}, []synth.Option{{Name: "PGM_ITERS", Value: 5}, {Name: "FINAL_ITERS", Value: 20}}, in)
	in, data = nil, nil
	if !gctest.Collected(freed) {
		t.Error("the input was still reachable from the result")
	}
	runtime.KeepAlive(res)
}

// TestRunRoundStep runs AIM with the rounds' fits on pgm.KeepStep (the
// default) and on pgm.GrowStep over the same noise seeds: both releases are
// valid and spend ρ exactly, and KeepStep, which pays about half the belief
// propagations per iteration, fits the rounds as well — its mean workload
// error over the seeds is within 10% of GrowStep's.
func TestRunRoundStep(t *testing.T) {
	if d := (Options{}).withDefaults(5); d.roundStep != pgm.KeepStep {
		t.Fatalf("default round step %v, want KeepStep", d.roundStep)
	}
	var errs [2]float64
	for i, step := range []pgm.StepRule{pgm.KeepStep, pgm.GrowStep} {
		for _, seed := range []int64{1, 2, 3} {
			in := testInput(seed)
			o := Options{PGMIters: 50, FinalIters: 300, roundStep: step}
			res, err := o.Run(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			synthtest.CheckResult(t, synth.SyntheticData, in, res)
			if math.Abs(res.RhoUsed-in.Rho) > 1e-12 {
				t.Errorf("step %v seed %d: ρ used %v, want %v", step, seed, res.RhoUsed, in.Rho)
			}
			sets := make([][]int, len(in.Workload))
			for j, m := range in.Workload {
				sets[j] = m.Attrs
			}
			e := synthtest.Error(t, in.Data, sets, res.Rows)
			t.Logf("step %v seed %d: %d rounds, error %.4f", step, seed, len(res.Rounds), e)
			errs[i] += e / 3
		}
	}
	if errs[0] > 1.1*errs[1] {
		t.Errorf("mean error with KeepStep rounds %.4f, GrowStep %.4f", errs[0], errs[1])
	}
}

// TestRoundFitFreesPrevious: a round's fit starts from the previous model
// and replaces it, and nothing may keep that model (its potentials and
// marginals, two model sizes) alive through the fit — not the round
// snapshots kept for the error bounds, not the lazy selection's drift
// bound, which need only its marginals (pgm.Model.Lean). A cleanup on
// every fitted model records when it is freed; in the middle of each round's
// fit (progress at iteration 50) the previous model must already be
// collectable. It fails if the snapshot or the lazy state hold the model.
func TestRoundFitFreesPrevious(t *testing.T) {
	for _, lazy := range []string{"1", "0"} {
		t.Run("LAZY="+lazy, func(t *testing.T) {
			var (
				mu      sync.Mutex
				freed   []chan struct{} // per fitted model, closed when it is freed
				checked = -1            // the last fit checked
				fits    int             // round fits checked
				held    []int
			)
			testFitted = func(m *pgm.Model) {
				ch := make(chan struct{})
				mu.Lock()
				freed = append(freed, ch)
				mu.Unlock()
				runtime.AddCleanup(m, func(ch chan struct{}) { close(ch) }, ch)
			}
			testRoundFit = func(p pgm.EstimateProgress) {
				mu.Lock()
				n := len(freed) // this fit's warm start is model n−1
				mu.Unlock()
				if p.Iter == 0 || checked == n {
					return
				}
				checked = n
				fits++
				if !gctest.Collected(freed[n-1]) {
					held = append(held, n-1)
				}
			}
			defer func() { testFitted, testRoundFit = nil, nil }()
			in := testInput(3)
			res := synthtest.MustRun(t, Mechanism{}, []synth.Option{{Name: "PGM_ITERS", Value: 60}, {Name: "FINAL_ITERS", Value: 50}, {Name: "LAZY", Value: lazy}}, in)
			if fits < 3 || fits != len(res.Rounds) {
				t.Fatalf("%d round fits checked, %d rounds", fits, len(res.Rounds))
			}
			if len(held) > 0 {
				t.Errorf("the previous model was still reachable during %d of %d round fits (models %v)", len(held), fits, held)
			}
			if len(res.Snapshots) == 0 {
				t.Error("no snapshot kept")
			}
		})
	}
}

// TestLastFitsDropAnswers checks that the candidates' true answers are
// freed before the final fit ends: once the last round has selected,
// nothing reads them, and they were held (through the run's state) through
// the last round's fit and the final one, the largest of the run. The
// check runs at the "final" progress report, after the final fit.
func TestLastFitsDropAnswers(t *testing.T) {
	freed := make(chan struct{})
	testAnswers = func(s *answerStore) {
		if s.f != nil || len(s.mem) == 0 {
			t.Fatal("the answers of this small run are not held in memory")
		}
		runtime.AddCleanup(&s.mem[0], func(ch chan struct{}) { close(ch) }, freed)
	}
	defer func() { testAnswers = nil }()
	in := testInput(3)
	checked, held := false, false
	in.Progress = func(s synth.Status) {
		if s.Phase != "final" {
			return
		}
		checked = true
		held = !gctest.Collected(freed)
	}
	synthtest.MustRun(t, Mechanism{}, []synth.Option{{Name: "PGM_ITERS", Value: 30}, {Name: "FINAL_ITERS", Value: 30}}, in)
	if !checked {
		t.Fatal("no final progress report")
	}
	if held {
		t.Error("the candidates' answers were still reachable when the final fit ended")
	}
}
