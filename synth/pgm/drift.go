package pgm

import (
	"context"
	"fmt"
	"math"

	"github.com/dpsql/dpsql/synth/pgm/internal/kernel"
)

// Drift bounds how far every marginal of a model moved from an earlier
// model, without computing the marginals: AIM's lazy selection scores only
// the candidates whose score could still win, and needs an exact upper
// bound on each of the others.
//
// The bound. If P and Q both factorise on one junction tree, then for any
// connected subtree T with top clique r and cliques added top-down,
// P_T = p_r · Π p(C_v | S_v), and one step of the telescoping sum gives
// ‖P_{k} − Q_{k}‖₁ ≤ ‖P_{k−1} − Q_{k−1}‖₁ + ‖p_{C_v} − q_{C_v}‖₁ + ‖p_{S_v} − q_{S_v}‖₁
// (write P_{k−1}·p(C|S) − Q_{k−1}·q(C|S) through Q_{k−1}·p(C|S), and
// Σ_s q(s)‖p(·|s) − q(·|s)‖₁ ≤ ‖p_C − q_C‖₁ + ‖p_S − q_S‖₁). A marginal over
// attributes inside T is a function of P_T, so its L1 change is at most the
// sum over T (data processing). The later model m factorises on its own
// tree; the earlier one does too when each of its cliques lies inside one
// of m's (its Markov graph is then a subgraph of m's chordal graph), which
// is what AIM's growing measured sets give in practice; NewDrift reports
// when it does not.
//
// The sum is taken over the cliques reduced to what the query needs from
// each (its attributes there and the subtree's separators): attributes
// private to one clique can be summed out of it without changing the
// tree's product form, and a reduced table moves less than the whole
// clique. The reduced changes are cached by clique and kept attributes.
type Drift struct {
	m     *Model
	q     [][]float64 // per clique of m: old's marginal over it (probabilities)
	cd    []float64   // per clique of m: ‖Δp_C‖₁ (probabilities)
	sd    []float64   // per clique of m: ‖Δp_S‖₁ of its separator (0 for the root)
	total float64     // |N̂_m − N̂_old|
	// reduced caches ‖Δp‖₁ of a clique reduced to a subset (by reduceKey).
	reduced map[string]float64
	keep    bitset
	pa, qa  []float64 // reduction buffers
}

// driftSlack is added (relative to the model's total) to every bound: the
// sums above are rounded, and so are the scores they bound.
const driftSlack = 1e-9

// NewDrift returns the drift of m from old, or ok = false when old does not
// factorise on m's junction tree (a clique of old lies in none of m's) or
// the models have different domains. It computes old's marginal over each
// of m's cliques (variable elimination for the cliques old does not hold),
// so it costs about one scoring pass over m's cliques. It returns ctx's
// error if cancelled.
func NewDrift(ctx context.Context, old, m *Model) (d *Drift, ok bool, err error) {
	if !old.dom.Equal(m.dom) {
		return nil, false, nil
	}
	for _, c := range old.jt.cliques {
		if m.jt.containing(c) < 0 {
			return nil, false, nil
		}
	}
	jt := m.jt
	d = &Drift{m: m, q: make([][]float64, len(jt.cliques)), cd: make([]float64, len(jt.cliques)), sd: make([]float64, len(jt.cliques)),
		total: math.Abs(m.total - old.total), reduced: make(map[string]float64), keep: newBitset(m.dom.Len())}
	cache := newReduceCache(old.jt, 2*old.jt.total)
	for v, c := range jt.cliques {
		if err := ctx.Err(); err != nil {
			return nil, false, fmt.Errorf("pgm: drift: %w", err)
		}
		q := old.marginal(c, nil, cache, nil)
		if old.total > 0 {
			for i := range q {
				q[i] /= old.total
			}
		}
		d.q[v] = q
		p := jt.block(m.p, v)
		for i, x := range p {
			d.cd[v] += math.Abs(x - q[i])
		}
		if sep := jt.sep[v]; jt.parent[v] >= 0 {
			red := kernel.NewReduction(jt.sizesOf(c), positions(c, sep))
			ps := make([]float64, m.dom.Cells(sep))
			qs := make([]float64, len(ps))
			scratch := make([]float64, red.Scratch())
			red.Sum(ps, p, scratch)
			red.Sum(qs, q, scratch)
			for i, x := range ps {
				d.sd[v] += math.Abs(x - qs[i])
			}
		}
	}
	return d, true, nil
}

// Bound returns an upper bound on ‖m.Marginal(attrs) − old.Marginal(attrs)‖₁
// (count space: the marginals sum to the models' totals) for the models
// NewDrift was given. attrs must be distinct attributes.
func (d *Drift) Bound(attrs []int) float64 {
	m := d.m
	jt := m.jt
	var sum float64
	if len(attrs) > 0 {
		need := bitsetOf(m.dom.Len(), attrs)
		kept, top := jt.subtree(need)
		if top >= 0 {
			// The kept cliques below top form a connected subtree; a
			// kept clique that is not below top lies above it and
			// adds nothing the query needs.
			for _, v := range jt.post {
				if !kept[v] || !d.below(v, top) {
					continue
				}
				clear(d.keep)
				d.keep.or(need)
				if v != top {
					for _, a := range jt.sep[v] {
						d.keep.set(a)
					}
					sum += d.sd[v]
				}
				for _, c := range jt.children[v] {
					if kept[c] {
						for _, a := range jt.sep[c] {
							d.keep.set(a)
						}
					}
				}
				sum += d.reducedChange(v)
			}
		}
	}
	return m.total*sum + d.total + driftSlack*(m.total+1)
}

// reducedChange returns ‖Δp‖₁ of clique v reduced to its members in d.keep.
func (d *Drift) reducedChange(v int) float64 {
	jt := d.m.jt
	c := jt.cliques[v]
	var sub []int
	for _, a := range c {
		if d.keep.has(a) {
			sub = append(sub, a)
		}
	}
	if len(sub) == len(c) {
		return d.cd[v]
	}
	key := reduceKey(v, false, bitsetOf(d.m.dom.Len(), sub))
	if x, ok := d.reduced[key]; ok {
		return x
	}
	red := kernel.NewReduction(jt.sizesOf(c), positions(c, sub))
	n := d.m.dom.Cells(sub)
	d.pa, d.qa = resize(d.pa, n), resize(d.qa, n)
	scratch := make([]float64, red.Scratch())
	red.Sum(d.pa, jt.block(d.m.p, v), scratch)
	red.Sum(d.qa, d.q[v], scratch)
	var x float64
	for i, p := range d.pa {
		x += math.Abs(p - d.qa[i])
	}
	d.reduced[key] = x
	return x
}

// below reports whether clique v lies in the subtree of clique top.
func (d *Drift) below(v, top int) bool {
	jt := d.m.jt
	for ; v >= 0; v = jt.parent[v] {
		if v == top {
			return true
		}
	}
	return false
}
