package pgm

import (
	"fmt"
	"slices"

	"github.com/dpsql/dpsql/synth/pgm/internal/kernel"
)

// Factored is a mutable exponential-family distribution
//
//	p(x) ∝ exp(Σ_i θ_i[x_{S_i}])
//
// with one log-potential table θ_i per attribute set S_i, held on the
// junction tree of those sets. It is what maximum-entropy projections onto
// measured marginal cells (PEP, MWEM's multiplicative weights) need: their
// solutions are exactly such families, so their state fits in the model's
// cliques instead of a histogram over the whole domain. Unlike Estimate,
// which fits potentials to measurements, the caller sets the potentials and
// Factored only runs inference.
//
// Updates (Add, AddCell) mark the distribution stale; Calibrate runs belief
// propagation, after which SetMarginal answers from the clique marginals.
// A Factored is not safe for concurrent use; Model snapshots it.
type Factored struct {
	jt    *junctionTree
	sets  [][]int
	home  []int     // clique holding set i
	maps  [][]int32 // clique cells of home[i] → cells of set i
	plans []cellPlan
	theta []float64 // log potentials, arena layout
	p     []float64 // clique marginals (probabilities), arena layout
	bp    *bpWork
	logZ  float64
	stale bool
}

// NewFactored returns the uniform distribution (every θ_i zero) over the
// junction tree of sets; each set must be non-empty and ascending.
func NewFactored(dom *Domain, sets [][]int) (*Factored, error) {
	if len(sets) == 0 {
		return nil, fmt.Errorf("pgm: factored model over no sets")
	}
	all := make([][]int, 0, len(sets)+dom.Len())
	for _, s := range sets {
		if len(s) == 0 || !slices.IsSorted(s) {
			return nil, fmt.Errorf("pgm: factored model set %v is empty or not ascending", s)
		}
		all = append(all, s)
	}
	// Every attribute must be covered for the tree to span the domain.
	for a := range dom.Len() {
		all = append(all, []int{a})
	}
	jt, err := newJunctionTree(dom, all, nil)
	if err != nil {
		return nil, err
	}
	f := &Factored{jt: jt, sets: make([][]int, len(sets)), home: make([]int, len(sets)), maps: make([][]int32, len(sets)),
		theta: make([]float64, jt.total), p: make([]float64, jt.total), bp: newBPWork(jt), stale: true}
	for i, s := range sets {
		f.sets[i] = slices.Clone(s)
		f.home[i] = jt.containing(s)
		f.maps[i] = jt.projMap(f.home[i], s)
		f.plans = append(f.plans, newCellPlan(dom, jt.cliques[f.home[i]], s))
	}
	return f, nil
}

// Size is the junction tree's size in MB, as Model.Size.
func (f *Factored) Size() float64 { return float64(f.jt.total) * 8 / (1 << 20) }

// Add adds delta (a table over set i's cells, row-major) to θ_i.
func (f *Factored) Add(i int, delta []float64) {
	if len(delta) != f.jt.dom.Cells(f.sets[i]) {
		panic("pgm: Factored.Add table size mismatch")
	}
	kernel.Expand(f.jt.block(f.theta, f.home[i]), delta, f.maps[i])
	f.stale = true
}

// AddCell adds d to θ_i[cell]. It visits only the clique cells that
// project to that cell (the clique's size over the set's), not the clique.
func (f *Factored) AddCell(i, cell int, d float64) {
	th := f.jt.block(f.theta, f.home[i])
	pl := &f.plans[i]
	off := 0
	for j := len(pl.setSize) - 1; j >= 0; j-- {
		off += (cell % pl.setSize[j]) * pl.setStride[j]
		cell /= pl.setSize[j]
	}
	var buf [16]int
	idx := buf[:0]
	if len(pl.otherSize) > len(buf) {
		idx = make([]int, len(pl.otherSize))
	} else {
		idx = buf[:len(pl.otherSize)]
	}
	for {
		th[off] += d
		k := len(idx) - 1
		for ; k >= 0; k-- {
			idx[k]++
			off += pl.otherStride[k]
			if idx[k] < pl.otherSize[k] {
				break
			}
			off -= idx[k] * pl.otherStride[k]
			idx[k] = 0
		}
		if k < 0 {
			break
		}
	}
	f.stale = true
}

// cellPlan locates a set's cells inside its home clique (row-major, last
// attribute fastest): the strides of the set's attributes, and the sizes
// and strides of the clique's other attributes.
type cellPlan struct {
	setSize, setStride     []int
	otherSize, otherStride []int
}

func newCellPlan(dom *Domain, clique, set []int) cellPlan {
	var pl cellPlan
	stride := 1
	strides := make([]int, len(clique))
	for j := len(clique) - 1; j >= 0; j-- {
		strides[j] = stride
		stride *= dom.Size(clique[j])
	}
	for j, a := range clique {
		if slices.Contains(set, a) {
			continue
		}
		pl.otherSize = append(pl.otherSize, dom.Size(a))
		pl.otherStride = append(pl.otherStride, strides[j])
	}
	for _, a := range set {
		j := slices.Index(clique, a)
		pl.setSize = append(pl.setSize, dom.Size(a))
		pl.setStride = append(pl.setStride, strides[j])
	}
	return pl
}

// Calibrate runs belief propagation on the current potentials.
func (f *Factored) Calibrate() {
	if f.stale {
		f.logZ = f.bp.run(f.p, f.theta)
		f.stale = false
	}
}

// SetMarginal writes the probability marginal of set i (summing to 1) into
// dst (allocated if too short) and returns it. It calibrates first if an
// update is pending.
func (f *Factored) SetMarginal(i int, dst []float64) []float64 {
	f.Calibrate()
	n := f.jt.dom.Cells(f.sets[i])
	if cap(dst) < n {
		dst = make([]float64, n)
	}
	dst = dst[:n]
	clear(dst)
	kernel.Project(dst, f.jt.block(f.p, f.home[i]), f.maps[i])
	return dst
}

// Model returns an immutable snapshot of the distribution scaled to total
// records.
func (f *Factored) Model(total float64) *Model {
	f.Calibrate()
	return &Model{dom: f.jt.dom, jt: f.jt, theta: slices.Clone(f.theta), p: slices.Clone(f.p), logZ: f.logZ, total: total}
}

// View is Model without the copy: the returned model shares f's arenas and
// is valid only until f's next update (Add, AddCell). It saves two arena
// copies where a model is queried and dropped between updates.
func (f *Factored) View(total float64) *Model {
	f.Calibrate()
	return &Model{dom: f.jt.dom, jt: f.jt, theta: f.theta, p: f.p, logZ: f.logZ, total: total}
}
