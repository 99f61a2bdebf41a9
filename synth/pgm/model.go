package pgm

import (
	"fmt"
	"math"
	"slices"

	"github.com/dpsql/dpsql/synth/pgm/internal/kernel"
)

// Model is a fitted graphical model over a junction tree: log-space
// potentials on the maximal cliques, the clique marginals they induce, and
// the number of records the model stands for. A Model is immutable once
// returned and safe for concurrent use.
type Model struct {
	dom   *Domain
	jt    *junctionTree
	theta []float64 // log potentials, arena layout; nil for a lean model (see Lean)
	p     []float64 // clique marginals as probabilities, arena layout
	logZ  float64
	total float64
	// step is the line-search step the fit that made the model accepted
	// last (0 if unknown): a KeepStep fit warm-started from the model
	// starts its first search there instead of at the full step.
	step float64
	// steps, for a model that mirror descent fitted without an arena of
	// potentials, are its parameters: a table over stepSets[i] per
	// measurement i of the fit (objective.initSteps), from which a later
	// fit of more measurements starts. Such a model has no theta; its
	// potentials, where asked for, are formed from the tables as its fit
	// formed them (potentials).
	steps    [][]float64
	stepSets [][]int
}

// stepsFor returns m's step tables as the warm start of a fit of meas
// over dom (their tables, not copies), or nil unless m has step tables
// for a prefix of meas.
func (m *Model) stepsFor(dom *Domain, meas []Measurement) [][]float64 {
	if m.steps == nil || len(m.stepSets) > len(meas) || !m.dom.Equal(dom) {
		return nil
	}
	for i, set := range m.stepSets {
		if !slices.Equal(set, meas[i].Attrs) || len(m.steps[i]) != dom.Cells(set) {
			return nil
		}
	}
	return slices.Clone(m.steps)
}

// newModel runs belief propagation on theta (which the model keeps).
func newModel(jt *junctionTree, theta []float64, total float64) *Model {
	m := &Model{dom: jt.dom, jt: jt, theta: theta, p: make([]float64, jt.total), total: total}
	m.logZ = newBPWork(jt).run(m.p, theta)
	return m
}

// Domain of the model.
func (m *Model) Domain() *Domain { return m.dom }

// Cliques are the maximal cliques of the junction tree, each ascending, in
// lexicographic order. The result is a copy.
func (m *Model) Cliques() [][]int {
	out := make([][]int, len(m.jt.cliques))
	for i, c := range m.jt.cliques {
		out[i] = slices.Clone(c)
	}
	return out
}

// Total is the number of records the model stands for.
func (m *Model) Total() float64 { return m.total }

// Size is the model's size in MB (Σ clique cells × 8 bytes / 2^20).
func (m *Model) Size() float64 { return float64(m.jt.total) * 8 / (1 << 20) }

// LogZ is the log partition function of the potentials.
func (m *Model) LogZ() float64 { return m.logZ }

// Potential returns a copy of the log potential of clique k (in the order of
// Cliques). A lean model's potentials are derived from its marginals (see
// Lean); a model fitted from step tables forms all of them from its tables
// on each call.
func (m *Model) Potential(k int) []float64 {
	return slices.Clone(m.potentials()[m.jt.off[k] : m.jt.off[k]+m.jt.cells[k]])
}

// Lean returns a model that answers exactly as m — the same marginals,
// total and samples, which all read the clique marginals — without m's log
// potentials: it shares m's marginals and junction tree and holds no arena
// of its own, half of m's. Kept instead of m (AIM's round snapshots for the
// error bounds, the previous model its lazy selection bounds the drift
// from), it lets m's potentials be freed with m. Potential, MarshalBinary
// and a warm start from a lean model use potentials derived from the
// marginals (the junction tree's maximum-likelihood map: the same
// distribution, to round-off); LogZ stays m's. Lean of a nil or lean model
// is that model.
func (m *Model) Lean() *Model {
	if m == nil || m.theta == nil && m.steps == nil {
		return m
	}
	return &Model{dom: m.dom, jt: m.jt, p: m.p, logZ: m.logZ, total: m.total, step: m.step}
}

// leanLogFloor replaces log 0 in the potentials derived for a lean model:
// exp of it is 0 in float64 even after the shifts of belief propagation,
// and unlike −∞ it cannot meet another −∞ in a difference (NaN).
const leanLogFloor = -1e4

// potentials returns m's log potentials. A model fitted without an arena
// of potentials forms them from its step tables, as its fit did, bit for
// bit (a new arena on each call); a lean model's are derived from its
// marginals on each call (a new arena).
func (m *Model) potentials() []float64 {
	if m.theta != nil {
		return m.theta
	}
	if m.steps != nil {
		meas := make([]Measurement, len(m.stepSets))
		for i, a := range m.stepSets {
			meas[i] = Measurement{Attrs: a, Sigma: 1}
		}
		o := newObjective(m.jt, meas, L2, m.total)
		o.initSteps(slices.Clone(m.steps)) // read, not written: trialSteps(0) copies them
		o.trialSteps(0)
		theta := make([]float64, m.jt.total)
		o.formPotentials(theta, nil)
		return theta
	}
	theta := make([]float64, m.jt.total)
	mle(theta, m.jt, m.p)
	for i, x := range theta {
		if x < leanLogFloor {
			theta[i] = leanLogFloor
		}
	}
	return theta
}

// clique returns clique k's block of an arena.
func (jt *junctionTree) block(arena []float64, k int) []float64 {
	return arena[jt.off[k] : jt.off[k]+jt.cells[k] : jt.off[k]+jt.cells[k]]
}

// Marginal returns the expected count marginal over attrs (sums to Total),
// by clique projection when attrs lies in one clique, by variable
// elimination otherwise. attrs must be distinct attributes; the layout
// follows their order (the last varies fastest).
func (m *Model) Marginal(attrs []int) []float64 {
	return m.MarginalWhere(attrs, nil)
}

// MarginalWhere is Marginal with evidence: weight[a][v] multiplies the
// probability of attribute a taking value v (e.g. a 0/1 indicator of a set
// of allowed values) before attributes outside attrs are summed out.
// Weights must be finite and non-negative (elimination multiplies
// probabilities, so products of weights must stay finite); a signed query is the difference of two weighted ones. The count where
// a ∈ S and b = v is MarginalWhere(nil, {a: 1_S, b: e_v})[0]; the sum of a
// over the records is MarginalWhere(nil, {a: [0, 1, 2, …]})[0].
func (m *Model) MarginalWhere(attrs []int, weight map[int][]float64) []float64 {
	n := m.dom.Len()
	for i, a := range attrs {
		if a < 0 || a >= n || slices.Contains(attrs[:i], a) {
			panic(fmt.Sprintf("pgm: invalid marginal attributes %v", attrs))
		}
	}
	for a, w := range weight {
		if a < 0 || a >= n || len(w) != m.dom.sizes[a] {
			panic(fmt.Sprintf("pgm: weight for attribute %d has %d entries", a, len(w)))
		}
		for _, x := range w {
			if !(x >= 0) || math.IsInf(x, 1) {
				panic(fmt.Sprintf("pgm: weight for attribute %d is not finite and non-negative", a))
			}
		}
	}
	return m.marginal(attrs, weight, nil, nil)
}

// marginal is MarginalWhere on checked arguments; cache may be nil. The
// result is written into dst when writesInto(attrs) and dst is large
// enough.
func (m *Model) marginal(attrs []int, weight map[int][]float64, cache *reduceCache, dst []float64) []float64 {
	if !writesInto(attrs) {
		dst = nil // the table is transposed into a new one below
	}
	sorted := slices.Clone(attrs)
	slices.Sort(sorted)
	var f factor
	if k := m.jt.containing(sorted); k >= 0 && len(weight) == 0 {
		f = factor{attrs: sorted, vals: resize(dst, m.dom.Cells(sorted))}
		red := m.jt.reduction(k, sorted)
		red.Sum(f.vals, m.jt.block(m.p, k), make([]float64, red.Scratch()))
	} else {
		f = m.eliminate(sorted, weight, cache, dst)
	}
	for i := range f.vals {
		f.vals[i] *= m.total
	}
	if slices.Equal(sorted, attrs) {
		return f.vals
	}
	// Transpose from ascending order to the caller's order: dims[i] is the
	// position in sorted of attrs[i].
	dims := make([]int, len(attrs))
	for i, a := range attrs {
		dims[i], _ = slices.BinarySearch(sorted, a)
	}
	// idx maps a cell of the sorted table to the caller's layout: the
	// caller's table is row-major over attrs, i.e. over sorted dims in the
	// order dims.
	idx := kernel.Map(m.dom.sizesOf(sorted), dims)
	out := make([]float64, len(f.vals))
	for i, v := range f.vals {
		out[idx[i]] = v
	}
	return out
}

// writesInto reports whether marginal computes the marginal over attrs in
// its dst: when attrs is ascending. Otherwise the table is transposed into
// a new one, and a buffer passed as dst is left unused.
func writesInto(attrs []int) bool { return slices.IsSorted(attrs) }

// sizesOf returns the sizes of attrs.
func (d *Domain) sizesOf(attrs []int) []int {
	s := make([]int, len(attrs))
	for i, a := range attrs {
		s[i] = d.sizes[a]
	}
	return s
}
