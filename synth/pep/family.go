package pep

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/dpsql/dpsql/synth/pgm"
)

// family is the distribution D_t = base(x)·exp(Σ_i θ_i[x_{S_i}]) / Z that
// MWEM and PEP update, with one log-potential table θ_i per measured
// attribute set S_i. Both algorithms only ever add to θ (a multiplicative
// update of D restricted to one marginal cell, or to a whole marginal), so
// the state is the tables; engines differ in how they compute marginals.
type family interface {
	// addSet makes the ascending set s a measured set with θ = 0 and
	// returns its index (its existing index if it is one already).
	addSet(s []int) (int, error)
	// addCell adds d to θ_i[cell].
	addCell(i, cell int, d float64)
	// add adds delta (over set i's cells) to θ_i.
	add(i int, delta []float64)
	// movable reports whether some point of the support lies in the cell
	// (always, for a full-domain family).
	movable(i, cell int) bool
	// marginal writes the probability marginal of measured set i into dst.
	marginal(i int, dst []float64) []float64
	// marginals calls f with the probability marginal of each of sets.
	marginals(ctx context.Context, sets [][]int, f func(k int, x []float64)) error
	// size is the state's size in MB (the junction tree's for the model
	// engine); sizeWith predicts it after adding sets.
	size() float64
	sizeWith(sets [][]int) float64
	// thetas returns the measured sets and their tables (not copies).
	thetas() ([][]int, [][]float64)
}

// tables is the part of every family that holds the sets and θ.
type tables struct {
	dom   *pgm.Domain
	sets  [][]int
	theta [][]float64
}

func (t *tables) find(s []int) int {
	return slices.IndexFunc(t.sets, func(x []int) bool { return slices.Equal(x, s) })
}

func (t *tables) thetas() ([][]int, [][]float64) { return t.sets, t.theta }

// factoredFamily is the model engine: the family as a graphical model on
// the junction tree of the measured sets (pgm.Factored), with uniform base.
type factoredFamily struct {
	tables
	f *pgm.Factored // nil before the first set
}

func newFactored(dom *pgm.Domain) *factoredFamily {
	return &factoredFamily{tables: tables{dom: dom}}
}

func (g *factoredFamily) addSet(s []int) (int, error) {
	if i := g.find(s); i >= 0 {
		return i, nil
	}
	sets := append(slices.Clone(g.sets), slices.Clone(s))
	f, err := pgm.NewFactored(g.dom, sets)
	if err != nil {
		return 0, fmt.Errorf("model over the measured sets: %w", err)
	}
	for i, th := range g.theta {
		f.Add(i, th)
	}
	g.f, g.sets = f, sets
	g.theta = append(g.theta, make([]float64, g.dom.Cells(s)))
	return len(g.sets) - 1, nil
}

func (g *factoredFamily) addCell(i, cell int, d float64) {
	g.theta[i][cell] += d
	g.f.AddCell(i, cell, d)
}

func (g *factoredFamily) add(i int, delta []float64) {
	for c, d := range delta {
		g.theta[i][c] += d
	}
	g.f.Add(i, delta)
}

func (g *factoredFamily) movable(int, int) bool { return true }

func (g *factoredFamily) marginal(i int, dst []float64) []float64 { return g.f.SetMarginal(i, dst) }

func (g *factoredFamily) marginals(ctx context.Context, sets [][]int, f func(int, []float64)) error {
	if g.f == nil {
		for k, s := range sets {
			f(k, uniform(g.dom.Cells(s)))
		}
		return nil
	}
	return g.f.View(1).MarginalsFunc(ctx, sets, f)
}

func (g *factoredFamily) size() float64 {
	if g.f == nil {
		return 0
	}
	return g.f.Size()
}

func (g *factoredFamily) sizeWith(sets [][]int) float64 {
	all := slices.Concat(g.sets, sets)
	for a := range g.dom.Len() {
		all = append(all, []int{a})
	}
	return pgm.ModelSize(g.dom, all)
}

// denseFamily is the explicit engine: a weight per point of a support (the
// whole domain, or the distinct rows of a public table), with the measured
// sets' marginals kept up to date. A cell update touches only the points in
// that cell (bucketed per set), so PEP's projection steps cost the cell's
// size, not the support's.
type denseFamily struct {
	tables
	cols    [][]uint16  // the support, column-major: cols[a][x]
	logBase []float64   // log base weight per point
	w       []float64   // base·exp(Σθ), scaled by an arbitrary constant
	z       float64     // Σ w
	cell    [][]int32   // cell of each point in each measured set
	bucket  [][]int32   // points of set i ordered by cell
	start   [][]int32   // bucket[i][start[i][c]:start[i][c+1]] are the points of cell c
	marg    [][]float64 // Σ w per cell of each measured set
	dirty   bool        // w and marg must be recomputed from θ
}

// maxDense bounds the points of a dense support.
const maxDense = 1 << 22

// newDenseDomain is the dense family over the whole domain, uniform base.
func newDenseDomain(dom *pgm.Domain) (*denseFamily, error) {
	n := 1.0
	for a := range dom.Len() {
		n *= float64(dom.Size(a))
	}
	if n > maxDense {
		return nil, fmt.Errorf("the domain has %.4g cells, more than the dense engine's limit of %d (leave DENSE = 0 to use the graphical-model engine)", n, maxDense)
	}
	np := int(n)
	cols := make([][]uint16, dom.Len())
	for a := range cols {
		cols[a] = make([]uint16, np)
	}
	// Row-major enumeration: the last attribute varies fastest.
	stride := np
	for a := range dom.Len() {
		s := dom.Size(a)
		stride /= s
		for x := range np {
			cols[a][x] = uint16((x / stride) % s)
		}
	}
	return newDense(dom, cols, make([]float64, np)), nil
}

// newDense is the dense family over the points cols with log base weights
// logBase (kept).
func newDense(dom *pgm.Domain, cols [][]uint16, logBase []float64) *denseFamily {
	g := &denseFamily{tables: tables{dom: dom}, cols: cols, logBase: logBase, w: make([]float64, len(logBase))}
	g.recompute()
	return g
}

func (g *denseFamily) points() int { return len(g.logBase) }

// cellsOf writes the cell of every point in set s into dst.
func (g *denseFamily) cellsOf(s []int, dst []int32) []int32 {
	dst = slices.Grow(dst[:0], g.points())[:g.points()]
	clear(dst)
	for _, a := range s {
		size, col := int32(g.dom.Size(a)), g.cols[a]
		for x := range dst {
			dst[x] = dst[x]*size + int32(col[x])
		}
	}
	return dst
}

func (g *denseFamily) addSet(s []int) (int, error) {
	if i := g.find(s); i >= 0 {
		return i, nil
	}
	g.sync()
	n := g.dom.Cells(s)
	cell := g.cellsOf(s, nil)
	start := make([]int32, n+1)
	for _, c := range cell {
		start[c+1]++
	}
	for c := range n {
		start[c+1] += start[c]
	}
	bucket := make([]int32, len(cell))
	next := slices.Clone(start[:n])
	for x, c := range cell {
		bucket[next[c]] = int32(x)
		next[c]++
	}
	m := make([]float64, n)
	for x, c := range cell {
		m[c] += g.w[x]
	}
	g.sets = append(g.sets, slices.Clone(s))
	g.theta = append(g.theta, make([]float64, n))
	g.cell = append(g.cell, cell)
	g.bucket = append(g.bucket, bucket)
	g.start = append(g.start, start)
	g.marg = append(g.marg, m)
	return len(g.sets) - 1, nil
}

func (g *denseFamily) addCell(i, cell int, d float64) {
	g.theta[i][cell] += d
	if g.dirty {
		return
	}
	f := math.Exp(d) - 1
	if f < -0.9 {
		// Shrinking a cell tenfold would cancel most of the marginal
		// sums it feeds and lose their relative precision: recompute.
		g.dirty = true
		return
	}
	for _, x := range g.bucket[i][g.start[i][cell]:g.start[i][cell+1]] {
		dw := g.w[x] * f
		g.w[x] += dw
		g.z += dw
		for j, cj := range g.cell {
			g.marg[j][cj[x]] += dw
		}
	}
	// Keep the scale of w in range; rounding drift is reset by recompute.
	if g.z > 1e200 || g.z < 1e-200 || math.IsInf(f, 0) {
		g.dirty = true
	}
}

func (g *denseFamily) movable(i, cell int) bool { return g.start[i][cell+1] > g.start[i][cell] }

func (g *denseFamily) add(i int, delta []float64) {
	for c, d := range delta {
		g.theta[i][c] += d
	}
	g.dirty = true
}

// recompute sets w, z and the set marginals from θ, normalised so that the
// largest weight is 1.
func (g *denseFamily) recompute() {
	lw := g.w // reuse as log weights first
	copy(lw, g.logBase)
	for i, c := range g.cell {
		th := g.theta[i]
		for x, cx := range c {
			lw[x] += th[cx]
		}
	}
	mx := math.Inf(-1)
	for _, v := range lw {
		mx = max(mx, v)
	}
	g.z = 0
	for x, v := range lw {
		g.w[x] = math.Exp(v - mx)
		g.z += g.w[x]
	}
	for i, c := range g.cell {
		m := g.marg[i]
		clear(m)
		for x, cx := range c {
			m[cx] += g.w[x]
		}
	}
	g.dirty = false
}

func (g *denseFamily) sync() {
	if g.dirty {
		g.recompute()
	}
}

func (g *denseFamily) marginal(i int, dst []float64) []float64 {
	g.sync()
	dst = slices.Grow(dst[:0], len(g.marg[i]))[:len(g.marg[i])]
	for c, v := range g.marg[i] {
		dst[c] = v / g.z
	}
	return dst
}

func (g *denseFamily) marginals(ctx context.Context, sets [][]int, f func(int, []float64)) error {
	g.sync()
	var cell []int32
	for k, s := range sets {
		if err := ctx.Err(); err != nil {
			return err
		}
		cell = g.cellsOf(s, cell)
		m := make([]float64, g.dom.Cells(s))
		for x, c := range cell {
			m[c] += g.w[x]
		}
		for c := range m {
			m[c] /= g.z
		}
		f(k, m)
	}
	return nil
}

// probs returns the normalised weight of every point.
func (g *denseFamily) probs() []float64 {
	g.sync()
	p := make([]float64, len(g.w))
	for x, v := range g.w {
		p[x] = v / g.z
	}
	return p
}

func (g *denseFamily) size() float64 {
	return float64(g.points()) * 8 * float64(2+len(g.sets)) / (1 << 20)
}

func (g *denseFamily) sizeWith([][]int) float64 { return g.size() }

// uniform is the uniform probability table of n cells.
func uniform(n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = 1 / float64(n)
	}
	return x
}
