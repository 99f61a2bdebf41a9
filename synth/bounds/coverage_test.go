package bounds

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/aim"
	"github.com/dpsql/dpsql/synth/internal/synthtest"
	"github.com/dpsql/dpsql/synth/noise"
	"github.com/dpsql/dpsql/synth/pgm"
	"github.com/dpsql/dpsql/synth/pgm/pgmcsv"
)

var testSecret = []byte("bounds test secret, not a real one")

// rhoOf is ρ for (ε, δ = 1e-9), from the sanity values of spec/aim.md
// (tight CKS20 conversion).
var rhoOf = map[float64]float64{0.3: 1.4767e-3, 1: 1.4973e-2}

// tally accumulates coverage statistics for one class of marginals.
type tally struct {
	n, covered int
	ratios     []float64 // bound / true error
}

func (t *tally) add(bound, truth float64) {
	t.n++
	if truth <= bound {
		t.covered++
	}
	if truth > 0 {
		t.ratios = append(t.ratios, bound/truth)
	}
}

func (t *tally) coverage() float64 { return float64(t.covered) / float64(t.n) }

func (t *tally) median() float64 {
	if len(t.ratios) == 0 {
		return 0
	}
	r := slices.Clone(t.ratios)
	slices.Sort(r)
	return r[len(r)/2]
}

func (t *tally) String() string {
	if t.n == 0 {
		return "none"
	}
	return fmt.Sprintf("%d/%d covered (%.4f), median bound/true %.2f", t.covered, t.n, t.coverage(), t.median())
}

// coverageRun runs AIM once and adds every workload marginal's bound and
// true normalised error to sup or unsup. It returns the number of rounds
// that measured a coarse twin (a Kronecker measurement).
func coverageRun(t *testing.T, data *pgm.Dataset, w []synth.Marginal, rho float64, seed int64, opts []synth.Option, conf float64, sup, unsup *tally) (twins int) {
	t.Helper()
	r, err := aim.Mechanism{}.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	in := &synth.Input{Data: data, Workload: w, Rho: rho, Noise: noise.Derive(testSecret, seed, "coverage"), Rows: 1}
	ctx := context.Background()
	res, err := r.Run(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	bs, err := Marginals(ctx, FromResult("aim", res, w), conf)
	if err != nil {
		t.Fatal(err)
	}
	if testing.Verbose() {
		t.Logf("seed %d: %d rounds, bounds of %d marginals in %v", seed, len(res.Rounds), len(bs), time.Since(start).Round(time.Millisecond))
	}
	n := float64(data.Rows())
	for _, b := range bs {
		x := data.MarginalTo(nil, b.Attrs)
		xhat := res.Model.Marginal(b.Attrs)
		truth := 0.0
		for i := range x {
			d := x[i]/n - xhat[i]/res.Model.Total()
			if d < 0 {
				d = -d
			}
			truth += d
		}
		if b.Supported {
			sup.add(b.L1, truth)
		} else {
			unsup.add(b.L1, truth)
		}
	}
	for _, m := range res.Measurements {
		if m.Kron != nil && m.Round > 0 {
			twins++
		}
	}
	return twins
}

// TestCoverageChain checks on generated data that the 95% bounds of every
// workload marginal hold at least 95% of the time over repeated AIM runs,
// with AIM's coarse twins (2 bins: every attribute of more than 2 values has
// them, and the selection bound of a round that measured one is on the
// binned marginal) and without.
func TestCoverageChain(t *testing.T) {
	data := synthtest.Chain(3, 5000, []int{4, 3, 5, 2, 6, 3})
	w := synthtest.AllK(6, 2)
	for _, bins := range []int{0, 2} {
		t.Run(fmt.Sprintf("coarse bins %d", bins), func(t *testing.T) {
			opts := []synth.Option{{Name: "PGM_ITERS", Value: 20}, {Name: "FINAL_ITERS", Value: 200}, {Name: "COARSE_BINS", Value: bins}}
			var sup, unsup tally
			runs := 6
			if testing.Short() {
				runs = 2
			}
			twins := 0
			for seed := range runs {
				for _, rho := range []float64{0.01, 0.2} {
					twins += coverageRun(t, data, w, rho, int64(seed), opts, 0.95, &sup, &unsup)
				}
			}
			t.Logf("supported: %v", &sup)
			t.Logf("unsupported: %v", &unsup)
			t.Logf("rounds that measured a coarse twin: %d", twins)
			if bins > 0 && twins == 0 {
				t.Error("no coarse twin was measured")
			}
			checkCoverage(t, &sup, &unsup, 0.95)
		})
	}
}

func checkCoverage(t *testing.T, sup, unsup *tally, conf float64) {
	t.Helper()
	if sup.n == 0 {
		t.Error("no supported marginal")
	}
	for name, ta := range map[string]*tally{"supported": sup, "unsupported": unsup} {
		if ta.n > 0 && ta.coverage() < conf {
			t.Errorf("%s marginals: coverage %.4f below the nominal %.2f (%v)", name, ta.coverage(), conf, ta)
		}
	}
}

// sharedData returns ../shared/data relative to the repository root, or
// skips when it is absent (as in a plain clone).
func sharedData(tb testing.TB, name string) string {
	tb.Helper()
	p := filepath.Join("..", "..", "..", "shared", "data", name)
	if _, err := os.Stat(p); err != nil {
		tb.Skipf("shared data %s not available: %v", name, err)
	}
	return p
}

// TestCoverageAdult is the coverage experiment on adult with real AIM runs.
// By default it makes 2 runs at ε = 1 on the 2-way workload of the first
// six attributes. DPSQL_COVERAGE_RUNS=N makes N runs per ε on the default
// (all 2-way) workload; DPSQL_COVERAGE_EPS (default "0.3,1"),
// DPSQL_COVERAGE_WORKLOAD ("all-2way" or "all-3way") and
// DPSQL_COVERAGE_ITERS ("pgm,final", default "20,300") adjust it.
func TestCoverageAdult(t *testing.T) {
	data, err := pgmcsv.Load(sharedData(t, "adult.csv"), sharedData(t, "adult-domain.json"))
	if err != nil {
		t.Fatal(err)
	}
	d := data.Domain().Len()
	runs, eps := 2, []float64{1}
	w := synthtest.AllK(6, 2)
	if s := os.Getenv("DPSQL_COVERAGE_RUNS"); s != "" {
		if runs, err = strconv.Atoi(s); err != nil || runs < 1 {
			t.Fatalf("DPSQL_COVERAGE_RUNS=%q: want a positive integer", s)
		}
		eps = []float64{0.3, 1}
		w = synthtest.AllK(d, 2)
	}
	if s := os.Getenv("DPSQL_COVERAGE_EPS"); s != "" {
		eps = nil
		for _, f := range strings.Split(s, ",") {
			e, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if _, ok := rhoOf[e]; err != nil || !ok {
				t.Fatalf("DPSQL_COVERAGE_EPS: ε = %q not one of 0.3, 1", f)
			}
			eps = append(eps, e)
		}
	}
	switch s := os.Getenv("DPSQL_COVERAGE_WORKLOAD"); s {
	case "":
	case "all-2way":
		w = synthtest.AllK(d, 2)
	case "all-3way":
		w = synthtest.AllK(d, 3)
	default:
		t.Fatalf("DPSQL_COVERAGE_WORKLOAD=%q: want all-2way or all-3way", s)
	}
	pgmIters, finalIters := 20, 300
	if s := os.Getenv("DPSQL_COVERAGE_ITERS"); s != "" {
		if _, err := fmt.Sscanf(s, "%d,%d", &pgmIters, &finalIters); err != nil {
			t.Fatalf("DPSQL_COVERAGE_ITERS=%q: want pgm,final", s)
		}
	}
	opts := []synth.Option{{Name: "PGM_ITERS", Value: pgmIters}, {Name: "FINAL_ITERS", Value: finalIters}}
	var allSup, allUnsup tally
	for _, e := range eps {
		var sup, unsup tally
		for seed := range runs {
			start := time.Now()
			coverageRun(t, data, w, rhoOf[e], int64(seed), opts, 0.95, &sup, &unsup)
			t.Logf("ε=%v seed %d: %v", e, seed, time.Since(start).Round(time.Second))
		}
		t.Logf("ε=%v, %d runs, %d marginals: supported: %v; unsupported: %v", e, runs, len(w), &sup, &unsup)
		allSup.n += sup.n
		allSup.covered += sup.covered
		allSup.ratios = append(allSup.ratios, sup.ratios...)
		allUnsup.n += unsup.n
		allUnsup.covered += unsup.covered
		allUnsup.ratios = append(allUnsup.ratios, unsup.ratios...)
	}
	t.Logf("all: supported: %v; unsupported: %v", &allSup, &allUnsup)
	checkCoverage(t, &allSup, &allUnsup, 0.95)
}
