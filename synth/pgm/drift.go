package pgm

import (
	"context"
	"fmt"
	"math"
	"slices"

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
	// Buffers change reuses from clique to clique: the reduced marginals,
	// the separator tables and the reductions' scratch (at ε = 10 on adult
	// a new scratch per call was 60 MB of garbage per DriftBounds, most of
	// the heap's growth between AIM's rounds).
	pa, qa, ps, qs, per, scratch []float64
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
	d, src, err := newDriftBase(old, m)
	if d == nil || err != nil {
		return nil, false, err
	}
	for v := range d.jt.cliques {
		if err := ctx.Err(); err != nil {
			return nil, false, fmt.Errorf("pgm: drift: %w", err)
		}
		d.p[v], d.q[v] = src.clique(d, v)
	}
	return d, true, nil
}

// driftSource computes the drift tree's clique marginals of both models.
type driftSource struct {
	old, m             *Model
	nested             bool
	oldCache, newCache *reduceCache
	// reuse: each clique's marginals are written into pbuf and qbuf,
	// which the next clique overwrites (DriftBounds, which drops them
	// after each clique); otherwise each is a new table (NewDrift keeps
	// them all).
	reuse      bool
	pbuf, qbuf []float64
}

// newDriftBase is NewDrift without the clique marginals: the tree, the
// totals and the source of the marginals (nil d when there is no drift).
func newDriftBase(old, m *Model) (*Drift, *driftSource, error) {
	if !old.dom.Equal(m.dom) {
		return nil, nil, nil
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
		var err error
		if jt, err = newJunctionTree(m.dom, both, nil); err != nil {
			return nil, nil, fmt.Errorf("pgm: drift: %w", err)
		}
		if float64(jt.total) > maxDriftGrowth*float64(m.jt.total) {
			return nil, nil, nil
		}
	}
	k := len(jt.cliques)
	d := &Drift{dom: m.dom, jt: jt, p: make([][]float64, k), q: make([][]float64, k), cd: make([]float64, k),
		n: m.total, total: math.Abs(m.total - old.total), reduced: make(map[string]float64), keep: newBitset(m.dom.Len())}
	src := &driftSource{old: old, m: m, nested: nested,
		oldCache: newReduceCache(old.jt, 2*old.jt.total), newCache: newReduceCache(m.jt, 2*m.jt.total)}
	return d, src, nil
}

// clique returns clique v's marginals (probabilities) under m and old and
// sets d.cd[v]. The cliques must be asked for in order: the caches' state,
// which a pair route's choice reads, follows it.
func (s *driftSource) clique(d *Drift, v int) (p, q []float64) {
	prob := func(x *Model, c []int, cache *reduceCache, buf *[]float64) []float64 {
		var dst []float64
		if s.reuse {
			// c is ascending: marginal writes into a large enough dst.
			dst = resize(*buf, d.dom.Cells(c))
		}
		t := x.marginal(c, nil, cache, dst)
		if s.reuse && cap(t) > cap(*buf) {
			*buf = t
		}
		if x.total > 0 {
			for i := range t {
				t[i] /= x.total
			}
		}
		return t
	}
	c := d.jt.cliques[v]
	q = prob(s.old, c, s.oldCache, &s.qbuf)
	if s.nested {
		p = d.jt.block(s.m.p, v)
	} else {
		p = prob(s.m, c, s.newCache, &s.pbuf)
	}
	for i, x := range p {
		d.cd[v] += math.Abs(x - q[i])
	}
	return p, q
}

// DriftBounds writes into dst[i], for every i with want(i), what
// NewDrift(ctx, old, m) and then Bound(sets[i]) give, bit for bit, and
// reports ok as NewDrift does. It holds one clique's marginals of each
// model at a time where the Drift holds all of them: a copy of old's
// marginals over m's tree, and of both models' over a common tree (up to
// twice m's size each) when old's cliques do not nest in m's — several
// models of memory after every refit of AIM's lazy selection.
func DriftBounds(ctx context.Context, old, m *Model, sets [][]int, want func(i int) bool, dst []float64) (ok bool, err error) {
	d, src, err := newDriftBase(old, m)
	if d == nil || err != nil {
		return false, err
	}
	// One clique's marginals at a time, in the same two buffers: a new
	// table per clique added up to a model of garbage per call. They are
	// sized once, by the largest clique: grown clique by clique they were
	// the sum of the sizes they passed through.
	src.reuse = true
	jt := d.jt
	largest := slices.Max(jt.cells)
	src.qbuf = make([]float64, 0, largest)
	if !src.nested {
		src.pbuf = make([]float64, 0, largest)
	}
	k := len(jt.cliques)
	type query struct {
		need bitset
		kept []bool
		top  int
	}
	qs := make([]query, len(sets))
	for i, s := range sets {
		qs[i].top = -1
		if len(s) == 0 || !want(i) {
			continue
		}
		need := bitsetOf(d.dom.Len(), s)
		kept, top := jt.subtree(need)
		qs[i] = query{need, kept, top}
	}
	// in reports whether clique v adds a term to query q's bound.
	in := func(q *query, v int) bool { return q.top >= 0 && q.kept[v] && d.below(v, q.top) }
	terms := make([]float64, len(sets)*k) // terms[i·k+v]: clique v's term of set i
	for v := range jt.cliques {
		if err := ctx.Err(); err != nil {
			return false, fmt.Errorf("pgm: drift: %w", err)
		}
		d.p[v], d.q[v] = src.clique(d, v)
		for i := range qs {
			if q := &qs[i]; in(q, v) {
				d.setKeep(q.need, q.kept, v, q.top)
				terms[i*k+v] = d.change(v, v == q.top)
			}
		}
		d.p[v], d.q[v] = nil, nil
		clear(d.reduced) // its keys name the clique
	}
	// Each bound sums its terms in Bound's order.
	for i := range qs {
		if !want(i) {
			continue
		}
		var sum float64
		for _, v := range jt.post {
			if q := &qs[i]; in(q, v) {
				sum += terms[i*k+v]
			}
		}
		dst[i] = d.n*sum + d.total + driftSlack*(d.n+1)
	}
	return true, nil
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
				d.setKeep(need, kept, v, top)
				sum += d.change(v, v == top)
			}
		}
	}
	return d.n*sum + d.total + driftSlack*(d.n+1)
}

// setKeep sets d.keep to what clique v of the subtree (kept, top) keeps for
// a query over need: need, v's separator unless v is the top, and its kept
// children's separators.
func (d *Drift) setKeep(need bitset, kept []bool, v, top int) {
	jt := d.jt
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
	sub := d.keep.within(c)
	if top && len(sub) == len(c) {
		return d.cd[v]
	}
	key := reduceKey(v, top, bitsetOf(d.dom.Len(), sub))
	if x, ok := d.reduced[key]; ok {
		return x
	}
	// The clique's own marginals when nothing is summed out: copies would
	// be two cliques' worth (up to 80 MB on adult at ε = 10) held through
	// DriftBounds.
	pa, qa := d.p[v], d.q[v]
	if len(sub) != len(c) {
		n := d.dom.Cells(sub)
		d.pa, d.qa = resize(d.pa, n), resize(d.qa, n)
		red := kernel.NewReduction(jt.sizesOf(c), positions(c, sub))
		d.scratch = resize(d.scratch, red.Scratch())
		scratch := d.scratch
		red.Sum(d.pa, d.p[v], scratch)
		red.Sum(d.qa, d.q[v], scratch)
		pa, qa = d.pa, d.qa
	}
	var x float64
	if top {
		for i, p := range pa {
			x += math.Abs(p - qa[i])
		}
	} else {
		sep := jt.sep[v]
		dims := positions(sub, sep)
		ns := d.dom.Cells(sep)
		d.ps, d.qs, d.per = resize(d.ps, ns), resize(d.qs, ns), resize(d.per, ns)
		ps, qs, per := d.ps, d.qs, d.per // per: Σ_x |p(x|s) − q(x|s)| per s
		clear(per)
		red := kernel.NewReduction(d.dom.sizesOf(sub), dims)
		d.scratch = resize(d.scratch, red.Scratch())
		scratch := d.scratch
		red.Sum(ps, pa, scratch)
		red.Sum(qs, qa, scratch)
		// Each cell's separator cell from a tiled map, in cell order: a
		// full map would be 4 bytes a cell of garbage per call.
		kernel.NewTiled(d.dom.sizesOf(sub), dims, tileCells).Each(0, len(pa), func(at, base int, idx []int32) {
			for j, s0 := range idx {
				s, i := base+int(s0), at+j
				if ps[s] > 0 && qs[s] > 0 {
					per[s] += math.Abs(pa[i]/ps[s] - qa[i]/qs[s])
				}
			}
		})
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
