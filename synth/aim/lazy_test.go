package aim

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/dpsql/dpsql/synth/internal/marginal"
	"github.com/dpsql/dpsql/synth/pgm"
)

// lazySequence returns models refitted round after round as measurements
// are added (warm-started, as AIM's rounds are).
func lazySequence(t *testing.T, r *run) []*pgm.Model {
	t.Helper()
	ctx := context.Background()
	var meas []pgm.Measurement
	for a := range r.dom.Len() {
		meas = append(meas, pgm.Measurement{Attrs: []int{a}, Y: r.answers.expand(a), Sigma: 10})
	}
	var models []*pgm.Model
	var prev *pgm.Model
	// A fixed sequence of 3-way (and one 2-way) selections spanning the chain.
	for _, s := range [][]int{nil, {0, 1, 2}, {2, 3, 4}, {1, 5}, {4, 5, 6}, {0, 3, 6}, {1, 2, 3}} {
		if s != nil {
			k := slices.IndexFunc(r.cands, func(c candidate) bool { return c.coarse == nil && slices.Equal(c.attrs, s) })
			meas = append(meas, pgm.Measurement{Attrs: s, Y: r.answers.expand(k), Sigma: 10})
		}
		m, err := pgm.Estimate(ctx, r.dom, meas, &pgm.EstimateOptions{Iters: 30, WarmStart: prev})
		if err != nil {
			t.Fatal(err)
		}
		models = append(models, m)
		prev = m
	}
	return models
}

// exactL1 is ‖M_r(D) − M_r(p̂)‖₁ with the model marginal computed alone.
func exactL1(r *run, i int, m *pgm.Model) float64 {
	return marginal.L1(r.answers.expand(i), r.cands[i].observed(nil, m.Marginal(r.cands[i].attrs)))
}

// TestLazyBounds checks that the bounds carried across refits (exact
// distance once, then the drift bounds added round after round and the
// direct drift from the model it was computed against, never recomputed)
// stay above every candidate's exact distance, and that the direct bound
// makes them no looser than the sum.
func TestLazyBounds(t *testing.T) {
	r, _ := scoreRun(t)
	models := lazySequence(t, r)
	z := newLazyState(r)
	for i := range r.cands {
		z.set(i, exactL1(r, i, models[0]))
	}
	sum := slices.Clone(z.l1) // the bounds by the sum of the rounds' drifts alone
	for step := 1; step < len(models); step++ {
		if err := z.advance(context.Background(), r, models[step-1], models[step]); err != nil {
			t.Fatal(err)
		}
		if d, ok, err := pgm.NewDrift(context.Background(), models[step-1], models[step]); err == nil && ok {
			for i := range sum {
				sum[i] += d.Bound(r.sets[i])
				if z.known[i] && z.l1[i] > sum[i]*(1+1e-12) {
					t.Fatalf("step %d, candidate %v: bound %v looser than the sum %v", step, r.cands[i].attrs, z.l1[i], sum[i])
				}
			}
		}
		known := 0
		for i := range r.cands {
			if !z.known[i] {
				continue
			}
			known++
			if got := exactL1(r, i, models[step]); got > z.l1[i] {
				t.Fatalf("step %d, candidate %v: exact distance %v above its bound %v", step, r.cands[i].attrs, got, z.l1[i])
			}
			if z.exact[i] {
				t.Fatalf("step %d: candidate %v still marked exact after a refit", step, r.cands[i].attrs)
			}
		}
		if known == 0 {
			t.Logf("step %d: drift not bounded (trees do not nest); bounds forgotten", step)
			for i := range r.cands {
				z.set(i, exactL1(r, i, models[step]))
				sum[i] = z.l1[i]
			}
		}
	}
}

// TestLazyChooseDistribution checks that the lazy selection draws the
// exponential mechanism's distribution over the exact scores: many
// independent selections from one state of bounds (a round after a refit,
// bounds from the previous model), against the exact probabilities, with
// ε set so that several candidates carry weight and most are never scored.
func TestLazyChooseDistribution(t *testing.T) {
	r, _ := scoreRun(t)
	models := lazySequence(t, r)
	old, m := models[4], models[5] // a refit whose tree nests the previous one
	const sigma = 3.0
	eligible := make([]int, len(r.cands))
	exact := make([]float64, len(r.cands))
	z0 := newLazyState(r)
	delta := 0.0
	for i := range r.cands {
		eligible[i] = i
		z0.set(i, exactL1(r, i, old))
		c := r.cands[i]
		exact[i] = c.weight * (exactL1(r, i, m) - sqrt2pi*sigma*float64(r.answers.Len(i)))
		delta = max(delta, c.weight)
	}
	if err := z0.advance(context.Background(), r, old, m); err != nil {
		t.Fatal(err)
	}
	if !z0.known[0] {
		t.Fatal("drift not bounded on this sequence; the test needs nested trees")
	}
	// c = ε/(2Δ) such that the best and the third best differ by 1.5
	// units of log weight.
	sorted := slices.Clone(exact)
	slices.Sort(sorted)
	slices.Reverse(sorted)
	c := 1.5 / (sorted[0] - sorted[2])
	eps := 2 * delta * c
	want := make([]float64, len(exact))
	var zsum float64
	for i, q := range exact {
		want[i] = math.Exp(c * (q - sorted[0]))
		zsum += want[i]
	}
	const n = 4000
	counts := make([]int, len(exact))
	sc := newScorer(r)
	computed := 0
	var scores []float64
	for range n {
		z := &lazyState{l1: slices.Clone(z0.l1), known: slices.Clone(z0.known), exact: slices.Clone(z0.exact), rows: z0.rows,
			at: slices.Clone(z0.at), base: slices.Clone(z0.base), model: z0.model, snaps: slices.Clone(z0.snaps)}
		k, s, err := z.choose(context.Background(), r, sc, scores, eligible, m, sigma, eps, delta)
		if err != nil {
			t.Fatal(err)
		}
		scores = s
		counts[eligible[k]]++
		computed += z.computed
	}
	// Pearson's χ² over the candidates expected ≥ 5 times (the rest pooled).
	var chi2, restWant float64
	restGot, df := 0, 0
	for i := range exact {
		e := n * want[i] / zsum
		if e < 5 {
			restWant += e
			restGot += counts[i]
			continue
		}
		d := float64(counts[i]) - e
		chi2 += d * d / e
		df++
	}
	if restWant >= 5 {
		d := float64(restGot) - restWant
		chi2 += d * d / restWant
		df++
	} else if float64(restGot) > restWant+10*math.Sqrt(restWant)+5 {
		t.Fatalf("improbable candidates chosen %d times, expected %.2f", restGot, restWant)
	}
	df--
	if df < 2 {
		t.Fatalf("only %d degrees of freedom: ε too sharp for a distribution test", df)
	}
	// p ≈ 1e-6 for these df.
	if limit := float64(df) + 7*math.Sqrt(2*float64(df)); chi2 > limit {
		t.Fatalf("χ² = %.1f over %d df (limit %.1f): lazy selection does not match the mechanism", chi2, df, limit)
	}
	avg := float64(computed) / n
	t.Logf("%.1f of %d candidates scored per selection, χ² = %.1f over %d df", avg, len(eligible), chi2, df)
	if avg >= float64(len(eligible)) {
		t.Errorf("lazy selection scored %.1f of %d candidates on average", avg, len(eligible))
	}
}

// TestLazyChooseComputesNearBest checks choose's computing before it
// samples: every candidate whose bound was within lazyMargin/c of the best
// score is computed (the one batch after the likely winners leaves none
// that a later choice would have taken), and the rest of the computed
// ones are the likely winners or bounds the best so far did not exclude.
func TestLazyChooseComputesNearBest(t *testing.T) {
	r, _ := scoreRun(t)
	models := lazySequence(t, r)
	old, m := models[4], models[5]
	const sigma = 3.0
	eligible := make([]int, len(r.cands))
	delta := 0.0
	z := newLazyState(r)
	for i := range r.cands {
		eligible[i] = i
		z.set(i, exactL1(r, i, old))
		delta = max(delta, r.cands[i].weight)
	}
	if err := z.advance(context.Background(), r, old, m); err != nil {
		t.Fatal(err)
	}
	bounds := make([]float64, len(eligible))
	exact := make([]float64, len(eligible))
	for k, i := range eligible {
		bounds[k] = z.bound(r, i, m.Total(), sigma)
		exact[k] = r.lazyScore(i, exactL1(r, i, m), sigma)
	}
	slices.Sort(exact)
	slices.Reverse(exact)
	// From several candidates within the margin to the best alone.
	for _, spread := range []float64{1.5, 15, 150} {
		eps := 2 * delta * spread / (exact[0] - exact[2])
		z := &lazyState{l1: slices.Clone(z.l1), known: slices.Clone(z.known), exact: slices.Clone(z.exact), rows: z.rows,
			at: slices.Clone(z.at), base: slices.Clone(z.base), model: z.model}
		if _, _, err := z.choose(context.Background(), r, newScorer(r), nil, eligible, m, sigma, eps, delta); err != nil {
			t.Fatal(err)
		}
		best := math.Inf(-1)
		for k, i := range eligible {
			if z.exact[i] {
				q := r.lazyScore(i, exactL1(r, i, m), sigma)
				if math.Abs(q-r.lazyScore(i, z.l1[i], sigma)) > 1e-6*math.Abs(q)+1e-6 {
					t.Fatalf("ε = %g: candidate %d's recorded distance is not its exact one", eps, k)
				}
				best = max(best, q)
			}
		}
		c := eps / (2 * delta)
		computed, near := 0, 0
		for k, i := range eligible {
			if z.exact[i] {
				computed++
			}
			if bounds[k] >= best-lazyMargin/c {
				near++
				if !z.exact[i] {
					t.Errorf("ε = %g: candidate %v within the margin of the best (bound %g, best %g) was not computed", eps, r.sets[i], bounds[k], best)
				}
			}
		}
		if computed > near+lazyFirst {
			t.Errorf("ε = %g: %d computed, %d within the margin: more than the %d likely winners beyond it", eps, computed, near, lazyFirst)
		}
		t.Logf("ε = %g: %d of %d computed, %d within the margin", eps, computed, len(eligible), near)
	}
}
