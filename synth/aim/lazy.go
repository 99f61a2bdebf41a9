package aim

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/dpsql/dpsql/synth/pgm"
)

// Lazy selection. A round's exponential mechanism needs every eligible
// candidate's score, and on a wide table computing them (4 060 3-way model
// marginals, most by variable elimination) is nearly all of AIM's time. The
// selection is nearly argmax-sharp, though: ε/(2Δ) makes a score a few
// hundred counts below the best all but impossible to pick. So the scores
// are computed lazily, with the same distribution:
//
//   - each candidate keeps an upper bound on its L1 distance ‖y − x̂‖₁: the
//     exact value from the last round that computed it, plus, for every
//     refit since, pgm.Drift's bound on how far its model marginal moved
//     (‖x̂_new − x̂_old‖₁ bounds the change of ‖y − x̂‖₁);
//   - a round computes exactly the candidates whose bounded score could be
//     within lazyMargin/c of the best exact score (c = ε/(2Δ)): the likely
//     winners first, then all the others in one parallel batch;
//   - noise.ExponentialLazy samples the mechanism over all eligible
//     candidates with those bounds, computing any other candidate that its
//     rejection step cannot decide from the bound (rare: such a candidate
//     has relative weight < e^−lazyMargin).
//
// The selected candidate is distributed exactly as the plain mechanism's,
// so the privacy analysis is unchanged. Running time depends on the data
// (so did the plain scorer's, through the model); nothing about it is
// released.

// lazyMargin is how far (in units of 1/c, i.e. of the mechanism's log
// weight) below the best exact score a bound must lie to be left
// uncomputed before sampling.
const lazyMargin = 5

// lazyFirst is the number of likely winners computed first, before the
// candidates to compute are chosen by their bounds (see choose).
const lazyFirst = 32

// lazyWindow is how many past models are kept for direct bounds: a
// candidate computed against one of them is bounded by its drift to the
// current model, besides the sum of the rounds' drifts (the refits move
// cliques back and forth, and the sum counts every move).
//
// 1 (none kept): a window of 4 gave no measurable speed on wide30 and held up
// to four models, against the memory bound of 4 × the model.
const lazyWindow = 1

// lazyState is the candidates' bounds across rounds.
type lazyState struct {
	l1    []float64 // per candidate: upper bound on ‖y − x̂‖₁ (valid where known)
	known []bool    // l1 is a bound against the current model
	exact []bool    // l1 is the exact value against the current model
	rows  float64   // ‖y‖₁ (the data's rows), for the trivial bound
	// at and base are each candidate's last exact distance and the index
	// of the model it was computed against (models count refits);
	// snaps are the recent models by index.
	at    []int
	base  []float64
	model int
	snaps []lazySnap
	// Counters for the progress trace and tests.
	computed, sampled int
}

// lazySnap is a past model and its index.
type lazySnap struct {
	index int
	m     *pgm.Model
}

func newLazyState(r *run) *lazyState {
	n := len(r.cands)
	z := &lazyState{l1: make([]float64, n), known: make([]bool, n), exact: make([]bool, n),
		at: make([]int, n), base: make([]float64, n)}
	z.rows = r.answers.rows
	return z
}

// set records candidate i's exact distance against the current model.
func (z *lazyState) set(i int, l1 float64) {
	z.l1[i], z.known[i], z.exact[i] = l1, true, true
	z.at[i], z.base[i] = z.model, l1
}

// advance moves the bounds from model old to its refit m: each known
// bound grows by the candidate's drift bound, or all are forgotten when
// pgm.NewDrift cannot bound the change. A candidate last computed against
// one of the recent models keeps the smaller of that and its last exact
// distance plus its drift from that model.
func (z *lazyState) advance(ctx context.Context, r *run, old, m *pgm.Model) error {
	clear(z.exact)
	z.snaps = append(z.snaps, lazySnap{z.model, old})
	z.model++
	if len(z.snaps) > lazyWindow {
		z.snaps = append(z.snaps[:0], z.snaps[len(z.snaps)-lazyWindow:]...)
	}
	// pgm.DriftBounds gives NewDrift's bounds holding one clique's
	// marginals at a time: the Drift's copies of the models' marginals
	// were up to four models live after the refit.
	drift := make([]float64, len(z.l1))
	ok, err := pgm.DriftBounds(ctx, old, m, r.sets, func(i int) bool { return z.known[i] }, drift)
	if err != nil {
		return err
	}
	if !ok {
		clear(z.known)
		z.snaps = z.snaps[:0] // a later model cannot be bounded from them either
		return nil
	}
	for i := range z.l1 {
		if z.known[i] {
			z.l1[i] += drift[i]
		}
	}
	// Direct bounds from the older snapshots (the newest is old itself).
	for _, s := range z.snaps[:len(z.snaps)-1] {
		d, ok, err := pgm.NewDrift(ctx, s.m, m)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		for i := range z.l1 {
			if z.known[i] && z.at[i] == s.index {
				z.l1[i] = min(z.l1[i], z.base[i]+d.Bound(r.sets[i]))
			}
		}
	}
	if lazyWindow <= 1 {
		clear(z.snaps) // nothing older than old is kept: do not hold old through the next fit
		z.snaps = z.snaps[:0]
	}
	return nil
}

// bound returns candidate i's score bound against model with noise sigma.
func (z *lazyState) bound(r *run, i int, total, sigma float64) float64 {
	l1 := z.rows + total
	if z.known[i] {
		l1 = min(l1, z.l1[i])
	}
	return r.lazyScore(i, l1, sigma)
}

// lazyScore is candidate i's score at distance l1 with noise sigma: the
// one formula behind its bound, its exact score and its prior.
func (r *run) lazyScore(i int, l1, sigma float64) float64 {
	return r.cands[i].weight * (l1 - sqrt2pi*sigma*float64(r.answers.Len(i)))
}

// choose runs the round's exponential mechanism over eligible (with
// parameter eps and sensitivity delta) lazily and returns the position in
// eligible of the selected candidate. It scores every candidate with the
// plain scorer instead (the same distribution) when most bounds are
// unknown, as in the first round.
func (z *lazyState) choose(ctx context.Context, r *run, sc *scorer, scores []float64, eligible []int, model *pgm.Model, sigma, eps, delta float64) (int, []float64, error) {
	unknown := 0
	for _, i := range eligible {
		if !z.known[i] {
			unknown++
		}
	}
	if 4*unknown > len(eligible) {
		var err error
		sc.lazy = z
		scores, err = sc.scores(ctx, scores, eligible, model, sigma)
		sc.lazy = nil
		if err != nil {
			return -1, scores, err
		}
		z.computed += len(eligible)
		z.sampled++
		return r.in.Noise.Exponential(scores, eps, delta), scores, nil
	}

	total := model.Total()
	if cap(scores) < len(eligible) {
		scores = make([]float64, len(eligible))
	}
	upper := scores[:len(eligible)]
	best := math.Inf(-1)
	for k, i := range eligible {
		upper[k] = z.bound(r, i, total, sigma)
		if z.exact[i] {
			best = max(best, upper[k])
		}
	}
	batch := model.NewBatch() // the round's computations share reduced cliques and pair tables
	c := eps / (2 * delta)
	exactScore := func(k int) float64 {
		i := eligible[k]
		return r.lazyScore(i, z.l1[i], sigma)
	}
	computeAll := func(ks []int) error {
		if len(ks) == 0 {
			return nil
		}
		if err := z.compute(ctx, r, batch, model.Total(), eligible, ks); err != nil {
			return err
		}
		for _, k := range ks {
			q := exactScore(k)
			if q > upper[k] {
				return fmt.Errorf("the score of %v is above its bound (the values are data and are not shown)", r.sets[eligible[k]])
			}
			upper[k] = q
			best = max(best, q)
		}
		return nil
	}
	// First the likely winners: the candidates whose score was highest
	// when last computed (a bound only where none was). Their exact
	// scores set best close to its final value before the rest are
	// chosen, so that choosing the rest in one batch computes no more
	// candidates than choosing them a few at a time from the highest
	// bound down did.
	prior := make([]float64, len(eligible))
	order := make([]int, len(eligible)) // positions in eligible, highest prior first
	for k, i := range eligible {
		prior[k] = upper[k]
		if z.known[i] {
			prior[k] = r.lazyScore(i, z.base[i], sigma)
		}
		order[k] = k
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(prior[b], prior[a]) })
	var ks []int
	for _, k := range order[:min(lazyFirst, len(order))] {
		if !z.exact[eligible[k]] {
			ks = append(ks, k)
		}
	}
	if err := computeAll(ks); err != nil {
		return -1, scores, err
	}
	// Then every other candidate that could be near the best, in one
	// batch: the model orders its computations so that triples sharing
	// a pair table or an elimination step come together, and shares a
	// table among all the triples that want it. In batches of 32 from
	// the highest bound down, wide30's heavy rounds swept 15–30 % more
	// cells for the same candidates (docs/aim-performance.md, "Issue 19,
	// twentieth pass"). Best only rises as scores are computed, so one
	// batch chosen against the best so far holds every candidate a
	// later choice would.
	ks = ks[:0]
	for k, i := range eligible {
		if !z.exact[i] && upper[k] >= best-lazyMargin/c {
			ks = append(ks, k)
		}
	}
	if err := computeAll(ks); err != nil {
		return -1, scores, err
	}
	pick, err := r.in.Noise.ExponentialLazy(upper, func(k int) (float64, error) {
		if !z.exact[eligible[k]] {
			if err := z.compute(ctx, r, batch, model.Total(), eligible, []int{k}); err != nil {
				return 0, err
			}
		}
		return exactScore(k), nil
	}, eps, delta)
	z.sampled++
	return pick, scores, err
}

// compute sets the exact distances of the candidates at positions ks of
// eligible against the batch's model, whose total is total.
func (z *lazyState) compute(ctx context.Context, r *run, batch *pgm.Batch, total float64, eligible, ks []int) error {
	sets := make([][]int, len(ks))
	for j, k := range ks {
		sets[j] = r.sets[eligible[k]]
	}
	l1 := make([]float64, len(ks))
	var read firstError
	err := batch.Visit(ctx, sets, func(j int, x []float64) {
		i := eligible[ks[j]]
		// A twin's distance is over its bins (binning keeps the total).
		var err error
		l1[j], err = r.answers.L1Total(i, r.cands[i].observed(nil, x), total)
		read.set(err)
	})
	if err == nil {
		err = read.get()
	}
	if err != nil {
		return err
	}
	for j, k := range ks {
		z.set(eligible[k], l1[j])
	}
	z.computed += len(ks)
	return nil
}
