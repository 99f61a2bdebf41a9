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
	dom *Domain
	// jt is m's junction tree, or one over the cliques of both models
	// when old's do not nest in m's (both models factorise on it).
	jt    *junctionTree
	p, q  [][]float64 // per clique of jt: m's and old's marginals (probabilities)
	cd    []float64   // per clique of jt: ‖p_C − q_C‖₁
	n     float64     // N̂_m
	total float64     // |N̂_m − N̂_old|
	// reduced caches ‖Δp‖₁ of a clique reduced to a subset (by reduceKey).
	reduced map[string]float64
	keep    bitset
	pa, qa  []float64 // reduction buffers
}

// driftSlack is added (relative to the model's total) to every bound: the
// sums above are rounded, and so are the scores they bound.
const driftSlack = 1e-9

// maxDriftGrowth bounds the common junction tree NewDrift builds when
// old's cliques do not nest in m's, relative to m's size: a larger one
// would cost more than scoring every candidate.
const maxDriftGrowth = 2

// NewDrift returns the drift of m from old, or ok = false when the models
// have different domains or no common junction tree of reasonable size
// exists. The tree is m's when each of old's cliques lies in one of m's
// (then old factorises on it too); otherwise it is the junction tree of
// both models' cliques, if at most maxDriftGrowth times m's size. It
// computes both models' marginals over that tree's cliques (variable
// elimination for the cliques a model does not hold): about one scoring
// pass over the cliques. It returns ctx's error if cancelled.
func NewDrift(ctx context.Context, old, m *Model) (d *Drift, ok bool, err error) {
	if !old.dom.Equal(m.dom) {
		return nil, false, nil
	}
	jt := m.jt
	nested := true
	for _, c := range old.jt.cliques {
		if jt.containing(c) < 0 {
			nested = false
			break
		}
	}
	if !nested {
		both := append(append([][]int(nil), m.jt.cliques...), old.jt.cliques...)
		if jt, err = newJunctionTree(m.dom, both, nil); err != nil {
			return nil, false, fmt.Errorf("pgm: drift: %w", err)
		}
		if float64(jt.total) > maxDriftGrowth*float64(m.jt.total) {
			return nil, false, nil
		}
	}
	k := len(jt.cliques)
	d = &Drift{dom: m.dom, jt: jt, p: make([][]float64, k), q: make([][]float64, k), cd: make([]float64, k),
		n: m.total, total: math.Abs(m.total - old.total), reduced: make(map[string]float64), keep: newBitset(m.dom.Len())}
	oldCache := newReduceCache(old.jt, 2*old.jt.total)
	newCache := newReduceCache(m.jt, 2*m.jt.total)
	prob := func(x *Model, c []int, cache *reduceCache) []float64 {
		t := x.marginal(c, nil, cache, nil)
		if x.total > 0 {
			for i := range t {
				t[i] /= x.total
			}
		}
		return t
	}
	for v, c := range jt.cliques {
		if err := ctx.Err(); err != nil {
			return nil, false, fmt.Errorf("pgm: drift: %w", err)
		}
		d.q[v] = prob(old, c, oldCache)
		if nested {
			d.p[v] = jt.block(m.p, v)
		} else {
			d.p[v] = prob(m, c, newCache)
		}
		for i, x := range d.p[v] {
			d.cd[v] += math.Abs(x - d.q[v][i])
		}
	}
	return d, true, nil
}

// Bound returns an upper bound on ‖m.Marginal(attrs) − old.Marginal(attrs)‖₁
// (count space: the marginals sum to the models' totals) for the models
// NewDrift was given. attrs must be distinct attributes.
func (d *Drift) Bound(attrs []int) float64 {
	jt := d.jt
	var sum float64
	if len(attrs) > 0 {
		need := bitsetOf(d.dom.Len(), attrs)
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
				}
				for _, c := range jt.children[v] {
					if kept[c] {
						for _, a := range jt.sep[c] {
							d.keep.set(a)
						}
					}
				}
				sum += d.change(v, v == top)
			}
		}
	}
	return d.n*sum + d.total + driftSlack*(d.n+1)
}

// change returns clique v's term of the bound for the clique reduced to
// its members in d.keep (K): ‖p_K − q_K‖₁ for the top, and for the others
// Σ_s q(s)·‖p(·|s) − q(·|s)‖₁ over K given the separator S ⊆ K, the exact
// telescoping step (at most ‖Δp_K‖₁ + ‖Δp_S‖₁). Where p(s) = 0 the new
// model's conditional does not matter (its joint is 0 there) and old's is
// used, so the term is 0; where q(s) = 0 its weight is 0.
func (d *Drift) change(v int, top bool) float64 {
	jt := d.jt
	c := jt.cliques[v]
	var sub []int
	for _, a := range c {
		if d.keep.has(a) {
			sub = append(sub, a)
		}
	}
	if top && len(sub) == len(c) {
		return d.cd[v]
	}
	key := reduceKey(v, top, bitsetOf(d.dom.Len(), sub))
	if x, ok := d.reduced[key]; ok {
		return x
	}
	n := d.dom.Cells(sub)
	d.pa, d.qa = resize(d.pa, n), resize(d.qa, n)
	if len(sub) == len(c) {
		copy(d.pa, d.p[v])
		copy(d.qa, d.q[v])
	} else {
		red := kernel.NewReduction(jt.sizesOf(c), positions(c, sub))
		scratch := make([]float64, red.Scratch())
		red.Sum(d.pa, d.p[v], scratch)
		red.Sum(d.qa, d.q[v], scratch)
	}
	var x float64
	if top {
		for i, p := range d.pa {
			x += math.Abs(p - d.qa[i])
		}
	} else {
		sep := jt.sep[v]
		dims := positions(sub, sep)
		ns := d.dom.Cells(sep)
		ps, qs := make([]float64, ns), make([]float64, ns)
		red := kernel.NewReduction(d.dom.sizesOf(sub), dims)
		scratch := make([]float64, red.Scratch())
		red.Sum(ps, d.pa, scratch)
		red.Sum(qs, d.qa, scratch)
		idx := kernel.Map(d.dom.sizesOf(sub), dims)
		per := make([]float64, ns) // Σ_x |p(x|s) − q(x|s)| per s
		for i, p := range d.pa {
			s := idx[i]
			if ps[s] > 0 && qs[s] > 0 {
				per[s] += math.Abs(p/ps[s] - d.qa[i]/qs[s])
			}
		}
		for s, w := range per {
			x += qs[s] * w
		}
	}
	d.reduced[key] = x
	return x
}

// below reports whether clique v lies in the subtree of clique top.
func (d *Drift) below(v, top int) bool {
	jt := d.jt
	for ; v >= 0; v = jt.parent[v] {
		if v == top {
			return true
		}
	}
	return false
}
