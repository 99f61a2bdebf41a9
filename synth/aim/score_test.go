package aim

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/internal/adaptive"
	"github.com/dpsql/dpsql/synth/internal/marginal"
	"github.com/dpsql/dpsql/synth/internal/synthtest"
	"github.com/dpsql/dpsql/synth/noise"
	"github.com/dpsql/dpsql/synth/pgm"
)

// testCandidates checks an input over data and workload (ρ = 1, test
// noise) and returns it with its workload, AIM's fine candidates and their
// true answers, spilled to a file (spilledStore).
func testCandidates(t *testing.T, data *pgm.Dataset, workload []synth.Marginal) (*synth.Input, []synth.Marginal, []candidate, *answerStore) {
	t.Helper()
	in := &synth.Input{Data: data, Workload: workload, Rho: 1, Noise: noise.Derive(testSecret, 1, "aim")}
	w, err := in.Check(true)
	if err != nil {
		t.Fatal(err)
	}
	cands := closure(w)
	answers := spilledStore(t)
	if err := candidateAnswers(context.Background(), in, w, cands, answers); err != nil {
		t.Fatal(err)
	}
	return in, w, cands, answers
}

// scoreRun returns a run over a 7-attribute chain with the all-3-way
// workload and coarse twins of 3 bins, and models fitted to random sets of
// measured marginals, some coarse (so that the candidates span cliques in
// many ways).
func scoreRun(t *testing.T) (*run, []*pgm.Model) {
	t.Helper()
	ctx := context.Background()
	data := synthtest.Chain(3, 2000, []int{4, 3, 5, 2, 6, 3, 4})
	in, w, cands, answers := testCandidates(t, data, synthtest.AllK(7, 3))
	nFine := len(cands)
	cands, err := addTwins(data.Domain(), cands, answers, 3)
	if err != nil {
		t.Fatal(err)
	}
	r := &run{in: in, dom: data.Domain(), w: w, cands: cands, nFine: nFine, answers: answers, sets: make([][]int, len(cands)), sizer: modelSizer(data.Domain()), res: &synth.Result{}}
	r.wkeys = make([]string, len(w))
	for i, m := range w {
		r.wkeys[i] = synth.Key(m.Attrs)
	}
	for i, c := range cands {
		r.sets[i] = c.attrs
	}
	rng := rand.New(rand.NewPCG(7, 8))
	var models []*pgm.Model
	for range 6 {
		var meas []pgm.Measurement
		for a := range r.dom.Len() {
			meas = append(meas, pgm.Measurement{Attrs: []int{a}, Y: answers.expand(a), Sigma: 10})
		}
		for range 1 + rng.IntN(4) {
			k := rng.IntN(len(cands))
			m := pgm.Measurement{Attrs: cands[k].attrs, Y: answers.expand(k), Sigma: 10}
			if c := cands[k].coarse; c != nil {
				m.Kron = c.kron()
			}
			meas = append(meas, m)
		}
		m, err := pgm.Estimate(ctx, r.dom, meas, &pgm.EstimateOptions{Iters: 30})
		if err != nil {
			t.Fatal(err)
		}
		models = append(models, m)
	}
	return r, models
}

// TestScores checks the scorer (candidates grouped under workload
// supersets, marginals in reused buffers, branches shared) against the
// definition w_r·(‖M_r(D) − M_r(p̂)‖₁ − √(2/π)·σ·n_r) with each model
// marginal computed alone, to round-off, for every candidate and for a
// random half.
func TestScores(t *testing.T) {
	r, models := scoreRun(t)
	sc := newScorer(r)
	rng := rand.New(rand.NewPCG(9, 10))
	const sigma = 3.5
	var scores []float64
	for mi, m := range models {
		all := make([]int, len(r.cands))
		for i := range all {
			all[i] = i
		}
		var half []int
		for i := range all {
			if rng.IntN(2) == 0 {
				half = append(half, i)
			}
		}
		for _, eligible := range [][]int{all, half} {
			var err error
			scores, err = sc.scores(context.Background(), scores, eligible, m, sigma)
			if err != nil {
				t.Fatal(err)
			}
			for k, i := range eligible {
				c := r.cands[i]
				xhat := m.Marginal(c.attrs)
				if c.coarse != nil {
					xhat = bruteBin(r.dom, c.attrs, coarseMaps(r.dom, 3), 3, xhat)
				}
				want := c.weight * (marginal.L1(r.answers.expand(i), xhat) - sqrt2pi*sigma*float64(len(xhat)))
				if got := scores[k]; math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
					t.Fatalf("model %d, candidate %v: score %v, want %v", mi, c.attrs, got, want)
				}
			}
		}
	}
}

// TestFilterCache checks the cached capacity filter (and the twins' tighter
// one) against adaptive.Filter over a sequence of measurements, some inside measured
// sets (sizes kept) and some not (sizes recomputed), at several limits.
func TestFilterCache(t *testing.T) {
	r, models := scoreRun(t)
	rng := rand.New(rand.NewPCG(11, 12))
	sizeOf := func(cliques [][]int) float64 { return pgm.ModelSize(r.dom, cliques) }
	for a := range r.dom.Len() {
		if err := r.measure([]int{a}, nil, a, 5, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	for step := range 12 {
		k := rng.IntN(len(r.cands))
		if err := r.measure(r.cands[k].attrs, r.cands[k].coarse, k, 5, 0.1, step+1); err != nil {
			t.Fatal(err)
		}
		r.model = models[step%len(models)]
		for _, limit := range []float64{0, 0.001, 0.002, 0.005, 1} {
			for _, twinLimit := range []float64{0, 0.001, limit} {
				// Fine candidates within limit, then the twins of those
				// also within twinLimit.
				fine := r.sets[:r.nFine]
				want := adaptive.Filter(nil, fine, r.measured, r.model.Cliques(), limit, sizeOf)
				small := adaptive.Filter(nil, fine, r.measured, r.model.Cliques(), twinLimit, sizeOf)
				for _, i := range slices.Clone(want) {
					if tw := r.cands[i].twin; tw >= 0 && slices.Contains(small, i) {
						want = append(want, tw)
					}
				}
				if got := r.filter(nil, limit, twinLimit); !slices.Equal(got, want) {
					t.Fatalf("step %d, limit %v, twin limit %v: filter %v, want %v", step, limit, twinLimit, got, want)
				}
				if !slices.IsSorted(want) {
					t.Fatalf("eligible %v not in index order", want)
				}
			}
		}
	}
}
