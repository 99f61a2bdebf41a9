package pgm

import (
	"math"
	"slices"

	"github.com/dpsql/dpsql/synth/pgm/internal/kernel"
	"gonum.org/v1/gonum/mat"
)

// compiled is a measurement bound to the junction-tree clique that holds it,
// with its buffers. Its marginal is projected from the smallest table that
// contains it: an earlier (larger) measurement of the same clique, or the
// clique itself.
type compiled struct {
	clique int
	src    int           // index of the source measurement, -1 for the clique
	idx    *kernel.Tiled // source → attrs map; nil when the source has the same attributes
	// With run ≥ minRun (measurements projected from their clique): the
	// source's trailing axes, run cells, are all kept, so each run of the
	// source maps to a contiguous run of attrs' table, at outer[r]·run
	// for run r; gradChunk then adds runs (Axpy) instead of gathering.
	run   int
	outer []int32
	red   *kernel.Reduction // source → attrs reduction; nil with idx
	c     float64           // 1/σ
	q     *mat.Dense
	kq    *kronOp // Kronecker query (Measurement.Kron), or nil
	y     []float64
	x     []float64 // projected marginal (probabilities)
	xAcc  []float64 // x at the last accepted point (see accept)
	gOwn  []float64 // c·Qᵀr at the point of the last grad call (real measurements)
	r     []float64 // c·(Q·total·x − y)
	g     []float64 // gradient over attrs, accumulated from dependants
	// Once initSteps is called (see there): for real measurements, the sum
	// of the accepted steps along gOwn (step) and that sum plus the step
	// being tried (try); for every measurement, try plus its dependants'
	// acc broadcast (acc), which a clique's potentials add up.
	step, try, acc []float64
	orig           int       // index in the fit's measurements; -1 for an intermediate
	pseudo         bool      // an unmeasured intermediate table: no loss of its own
	byBP           bool      // projected by a bound bpWork's propagation (bind), not by valueBP
	own            []float64 // Qᵀ r (dense queries only)
	qx             *mat.VecDense
	xv             *mat.VecDense
	xvAcc          *mat.VecDense
	ov             *mat.VecDense
	rv             *mat.VecDense
}

// objective evaluates a loss over clique marginals.
type objective struct {
	jt    *junctionTree
	meas  []compiled // in evaluation order: by clique, larger sets first
	loss  Loss
	total float64
	team  team
	red   []float64 // reduction scratch
	// bySrc[k] lists the measurements projected from clique k itself, in
	// the order their gradients are added into the clique's.
	bySrc [][]int
}

func newObjective(jt *junctionTree, meas []Measurement, loss Loss, total float64) *objective {
	o := &objective{jt: jt, loss: loss, total: total}
	nreal := len(meas)
	meas = append(slices.Clip(meas), intermediates(jt, meas)...)
	scratch := 0
	order := make([]int, len(meas))
	clique := make([]int, len(meas))
	for i, m := range meas {
		order[i] = i
		clique[i] = jt.containing(m.Attrs)
	}
	cells := func(i int) int { return jt.dom.Cells(meas[i].Attrs) }
	slices.SortStableFunc(order, func(a, b int) int {
		if clique[a] != clique[b] {
			return clique[a] - clique[b]
		}
		return cells(b) - cells(a)
	})
	o.meas = make([]compiled, len(meas))
	for pos, i := range order {
		m := meas[i]
		k := clique[i]
		n := jt.dom.Cells(m.Attrs)
		cm := compiled{clique: k, src: -1, orig: -1, q: m.Query, y: m.Y, x: make([]float64, n), xAcc: make([]float64, n), r: make([]float64, len(m.Y)), g: make([]float64, n)}
		if i < nreal {
			cm.c = 1 / m.Sigma
			cm.gOwn = make([]float64, n)
			cm.orig = i
		} else {
			cm.pseudo = true
		}
		srcAttrs := jt.cliques[k]
		for j := pos - 1; j >= 0 && o.meas[j].clique == k; j-- {
			a := meas[order[j]].Attrs
			if jt.dom.Cells(a) < jt.dom.Cells(srcAttrs) && isSubset(m.Attrs, a) {
				cm.src, srcAttrs = j, a
			}
		}
		if !slices.Equal(srcAttrs, m.Attrs) {
			sizes, keep := jt.dom.sizesOf(srcAttrs), positions(srcAttrs, m.Attrs)
			// A tiled map, not a full one: the objective has one per
			// measured set, and full int32 maps were three times the
			// model on adult at ε = 3 (57 MB against 19 MB).
			cm.idx = kernel.NewTiled(sizes, keep, tileCells)
			if cm.src < 0 {
				cm.run, cm.outer = runsOf(sizes, keep)
			}
			cm.red = kernel.NewReduction(sizes, keep)
			scratch = max(scratch, cm.red.Scratch())
		}
		if m.Kron != nil {
			cm.kq = newKronOp(m.Kron, jt.dom.sizesOf(m.Attrs))
			cm.own = make([]float64, n)
			cm.qx = mat.NewVecDense(len(m.Y), nil)
		}
		if m.Query != nil {
			cm.own = make([]float64, n)
			cm.xv = mat.NewVecDense(n, cm.x)
			cm.xvAcc = mat.NewVecDense(n, cm.xAcc)
			cm.qx = mat.NewVecDense(len(m.Y), nil)
			cm.ov = mat.NewVecDense(n, cm.own)
			cm.rv = mat.NewVecDense(len(m.Y), cm.r)
		}
		o.meas[pos] = cm
	}
	o.red = make([]float64, scratch)
	o.bySrc = make([][]int, len(jt.cliques))
	for i := len(o.meas) - 1; i >= 0; i-- {
		if m := &o.meas[i]; m.src < 0 {
			o.bySrc[m.clique] = append(o.bySrc[m.clique], i)
		}
	}
	return o
}

// intermediates returns unmeasured tables worth projecting once per clique
// so that several measurements are reduced from them instead of from the
// clique: for each clique whose measurements need at least two sweeps, the
// clique minus the attribute that the most of those measurements lack (ties
// to the larger attribute).
func intermediates(jt *junctionTree, meas []Measurement) []Measurement {
	var out []Measurement
	for k, cl := range jt.cliques {
		// The measurements of k that no other measurement of k contains.
		var top [][]int
		for _, m := range meas {
			if jt.containing(m.Attrs) != k || len(m.Attrs) == len(cl) {
				continue
			}
			inside := false
			for _, o := range meas {
				if len(o.Attrs) > len(m.Attrs) && len(o.Attrs) < len(cl) && isSubset(m.Attrs, o.Attrs) {
					inside = true
					break
				}
			}
			if !inside && !slices.ContainsFunc(top, func(t []int) bool { return slices.Equal(t, m.Attrs) }) {
				top = append(top, m.Attrs)
			}
		}
		if len(top) < 2 {
			continue
		}
		best, bestCount := -1, 1
		for _, a := range cl {
			n := 0
			for _, t := range top {
				if !slices.Contains(t, a) {
					n++
				}
			}
			if n > bestCount || (n == bestCount && best >= 0 && jt.dom.sizes[a] > jt.dom.sizes[best]) {
				best, bestCount = a, n
			}
		}
		if best < 0 {
			continue
		}
		t := slices.DeleteFunc(slices.Clone(cl), func(x int) bool { return x == best })
		if !slices.ContainsFunc(meas, func(m Measurement) bool { return slices.Equal(m.Attrs, t) }) {
			out = append(out, Measurement{Attrs: t})
		}
	}
	return out
}

// isSubset reports whether the ascending a is a subset of the ascending b.
func isSubset(a, b []int) bool {
	j := 0
	for _, x := range a {
		for j < len(b) && b[j] < x {
			j++
		}
		if j == len(b) || b[j] != x {
			return false
		}
	}
	return true
}

// source returns the table measurement m is projected from.
func (o *objective) source(p []float64, m *compiled) []float64 {
	if m.src < 0 {
		return o.jt.block(p, m.clique)
	}
	return o.meas[m.src].x
}

// value returns the loss at the clique marginals p (probabilities; the loss
// sees total·p) and keeps the residuals for grad.
func (o *objective) value(p []float64) float64 { return o.valueOf(p, false) }

// valueBP is value after a propagation by a bpWork bound to o (bind),
// which has projected the measurements marked byBP already.
func (o *objective) valueBP(p []float64) float64 { return o.valueOf(p, true) }

func (o *objective) valueOf(p []float64, bp bool) float64 {
	var loss float64
	for i := range o.meas {
		m := &o.meas[i]
		switch {
		case bp && m.byBP:
		case m.red == nil:
			copy(m.x, o.source(p, m))
		default:
			m.red.SumPar(m.x, o.source(p, m), o.red, o.team.split)
		}
		if m.pseudo {
			continue
		}
		qx := m.x
		if m.kq != nil {
			qx = m.kq.apply(m.qx.RawVector().Data, m.x, false)
		} else if m.q != nil {
			m.qx.MulVec(m.q, m.xv)
			qx = m.qx.RawVector().Data
		}
		t, c := o.total, m.c
		if len(qx) != len(m.r) || len(m.y) != len(m.r) {
			panic("pgm: measurement shape mismatch")
		}
		var s float64
		if o.loss == L1 {
			for j := range m.r {
				d := c * (t*qx[j] - m.y[j])
				m.r[j] = d
				s += math.Abs(d)
			}
			loss += s
			continue
		}
		for j := range m.r {
			d := c * (t*qx[j] - m.y[j])
			m.r[j] = d
			s += d * d
		}
		loss += 0.5 * s
	}
	return loss
}

// grad writes into dst (an arena) the gradient of the loss with respect to
// the unnormalised clique marginals, at the point of the last value call.
// Gradients flow back along the projection tree: each measurement's
// gradient is broadcast into its source.
func (o *objective) grad(dst []float64) {
	o.gradTables()
	for k := range o.jt.cliques {
		b := o.jt.block(dst, k)
		o.team.run(len(b), 1, func(lo, hi, _ int) { o.gradChunk(k, b[lo:hi], lo) })
	}
}

// gradTables is grad's first part: every measurement's gradient over its
// own attributes (small tables), each accumulated into the intermediate
// table it is projected from; what remains is the broadcast of the
// measurements projected from cliques (gradChunk), which a fused
// propagation does chunk by chunk while the clique is in cache.
func (o *objective) gradTables() {
	for i := range o.meas {
		clear(o.meas[i].g)
	}
	o.gradOwn(true)
}

// gradOwn sets every real measurement's own gradient gOwn (c·Qᵀr at the
// point of the last value call); with accumulate, also g as gradTables
// does. A mirror-descent fit needs gOwn only: its step tables accumulate
// themselves (trialSteps).
func (o *objective) gradOwn(accumulate bool) {
	for i := len(o.meas) - 1; i >= 0; i-- {
		m := &o.meas[i]
		if !m.pseudo {
			if o.loss == L1 {
				for j, d := range m.r {
					m.r[j] = sign(d)
				}
			}
			own := m.r
			if m.kq != nil {
				own = m.kq.apply(m.own, m.r, true)
			} else if m.q != nil {
				m.ov.MulVec(m.q.T(), m.rv)
				own = m.own
			}
			for j, v := range own {
				m.gOwn[j] = m.c * v
			}
			if accumulate {
				kernel.Axpy(m.g, 1, m.gOwn)
			}
		}
		if m.src < 0 || !accumulate {
			continue
		}
		o.addToSource(m, o.meas[m.src].g, m.g)
	}
}

// addToSource adds x, a table over m's attributes, broadcast into to, the
// table of m's source.
func (o *objective) addToSource(m *compiled, to, x []float64) {
	if m.idx == nil {
		kernel.Axpy(to, 1, x)
		return
	}
	o.team.run(len(to), 1, func(lo, hi, _ int) { m.idx.Expand(to[lo:hi], x, lo) })
}

// gradChunk writes into dst the cells [lo, lo+len(dst)) of clique k's
// gradient, from the tables of the last gradTables call: zero plus each
// measurement projected from the clique, broadcast, in grad's order (the
// same sums, bit for bit, however the clique is chunked).
func (o *objective) gradChunk(k int, dst []float64, lo int) {
	clear(dst)
	o.addChunk(k, dst, lo, func(m *compiled) []float64 { return m.g })
}

// potentialChunk writes into dst the cells [lo, lo+len(dst)) of clique k's
// potentials at the trial step: base (the cells of the fit's starting
// potentials; nil for none) plus each acc table broadcast (see
// initSteps). With dst and base the same cells it adds in place.
func (o *objective) potentialChunk(k int, dst, base []float64, lo int) {
	if len(dst) == 0 {
		return
	}
	switch {
	case base == nil:
		clear(dst)
	case &dst[0] != &base[0]:
		copy(dst, base)
	}
	o.addChunk(k, dst, lo, func(m *compiled) []float64 { return m.acc })
}

// addChunk adds into dst the cells [lo, lo+len(dst)) of the broadcast of
// table(m) for each measurement m projected from clique k, in bySrc order.
func (o *objective) addChunk(k int, dst []float64, lo int, table func(m *compiled) []float64) {
	if len(dst) == 0 {
		return
	}
	for _, i := range o.bySrc[k] {
		m := &o.meas[i]
		g := table(m)
		switch {
		case m.idx == nil:
			kernel.Axpy(dst, 1, g[lo:lo+len(dst)])
		case m.run >= minRun:
			// dst[i] += g[idx[lo+i]] run by run: the same additions
			// (Axpy by 1 adds x exactly as Expand does).
			for at := 0; at < len(dst); {
				r, off := (lo+at)/m.run, (lo+at)%m.run
				n := min(m.run-off, len(dst)-at)
				base := int(m.outer[r])*m.run + off
				kernel.Axpy(dst[at:at+n], 1, g[base:base+n])
				at += n
			}
		default:
			m.idx.Expand(dst, g, lo)
		}
	}
}

// minRun is the shortest run gradChunk adds with Axpy rather than
// gathering through the index map: a call costs what gathering a few dozen
// cells does. Tests lower it.
var minRun = 64

// runsOf returns, for the map from a table over sizes to its sub-table
// over the ascending positions keep, the cells of the table's longest
// suffix of axes that are all kept (run) and, per run of the table, the
// index of its run in the sub-table (the map of the other axes, 4 bytes
// per run); 0 and nil when runs are shorter than minRun.
func runsOf(sizes, keep []int) (run int, outer []int32) {
	n, t := len(sizes), 0
	run = 1
	for t < len(keep) && keep[len(keep)-1-t] == n-1-t {
		run *= sizes[n-1-t]
		t++
	}
	if t == 0 || run < minRun {
		return 0, nil
	}
	return run, kernel.Map(sizes[:n-t], keep[:len(keep)-t])
}

// initSteps starts a fit's steps. Mirror descent moves the potentials
// along the gradient, and the gradient is a sum of broadcast tables: each
// real measurement's own gradient (gOwn), added into the table it is
// projected from (an intermediate or a larger measurement of its clique)
// and so on up to the clique. So the potentials after any steps are the
// starting ones (a fit from scratch: none) plus the same structure over
// the summed steps, step_m = −Σ_t α_t·gOwn_{m,t}: a table per measurement.
// A fit keeps those tables instead of arenas: it tries a step a by
// trialSteps(a) (step + a·gOwn, accumulated into acc up to the cliques'
// tables), forms each clique's potentials piece by piece while it
// propagates (potentialChunk), and never writes an arena of potentials,
// unless it started from one (applySteps). warm holds starting steps by
// measurement index (nil entries: zero); entries are taken, not copied.
func (o *objective) initSteps(warm [][]float64) {
	for i := range o.meas {
		m := &o.meas[i]
		m.acc = make([]float64, len(m.g))
		if m.pseudo {
			continue
		}
		if m.orig < len(warm) && len(warm[m.orig]) == len(m.g) {
			m.step = warm[m.orig]
		} else {
			m.step = make([]float64, len(m.g))
		}
		m.try = make([]float64, len(m.g))
	}
}

// trialSteps sets every try table to the accepted steps plus a times the
// own gradient of the last gradTables call, and the acc tables to them
// accumulated as gradTables accumulates the gradients.
func (o *objective) trialSteps(a float64) {
	for i := range o.meas {
		m := &o.meas[i]
		if m.pseudo {
			clear(m.acc)
			continue
		}
		if a == 0 {
			copy(m.try, m.step)
		} else {
			kernel.AxpyTo(m.try, m.step, a, m.gOwn)
		}
		copy(m.acc, m.try)
	}
	for i := len(o.meas) - 1; i >= 0; i-- {
		m := &o.meas[i]
		if m.src < 0 {
			continue
		}
		o.addToSource(m, o.meas[m.src].acc, m.acc)
	}
}

// acceptSteps makes the try tables the accepted steps.
func (o *objective) acceptSteps() {
	for i := range o.meas {
		if m := &o.meas[i]; !m.pseudo {
			m.step, m.try = m.try, m.step
		}
	}
}

// steps returns the accepted step tables by measurement index (real
// measurements only), for a later fit's warm start.
func (o *objective) steps(n int) [][]float64 {
	out := make([][]float64, n)
	for i := range o.meas {
		if m := &o.meas[i]; !m.pseudo {
			out[m.orig] = m.step
		}
	}
	return out
}

// applySteps adds the accepted steps into theta (the fit's starting
// potentials) in the arithmetic in which potentialChunk formed the
// accepted trial's potentials: theta is then bit for bit the potentials
// whose marginals the fit last accepted.
func (o *objective) applySteps(theta []float64) {
	o.trialSteps(0)
	o.formPotentials(theta, theta)
}

// formPotentials writes the potentials at the trial step into the arena
// dst, clique by clique (potentialChunk): base plus the acc tables
// broadcast; base nil for none, or dst itself to add in place.
func (o *objective) formPotentials(dst, base []float64) {
	for k := range o.bySrc {
		d := o.jt.block(dst, k)
		var b []float64
		if base != nil {
			b = o.jt.block(base, k)
		}
		o.team.run(len(d), 1, func(lo, hi, _ int) {
			var piece []float64
			if b != nil {
				piece = b[lo:hi]
			}
			o.potentialChunk(k, d[lo:hi], piece, lo)
		})
	}
}

// accept makes the marginals of the last value call the accepted point
// that dirDot measures from.
func (o *objective) accept() {
	for i := range o.meas {
		m := &o.meas[i]
		m.x, m.xAcc = m.xAcc, m.x
		m.xv, m.xvAcc = m.xvAcc, m.xv
	}
}

// dirDot returns ⟨∇L, p − p'⟩ for the gradient ∇L of the last grad call
// (an arena), p the accepted point and p' that of the last value call,
// without touching the arenas: the gradient is a sum of measurement
// gradients broadcast into cliques, and broadcasting is the adjoint of
// projecting, so ⟨∇L, p⟩ = Σ_m ⟨c·Qᵀr_m, proj_m p⟩, and value has already
// projected both points.
func (o *objective) dirDot() float64 {
	var s float64
	for i := range o.meas {
		m := &o.meas[i]
		if m.pseudo {
			continue
		}
		s += kernel.DotDiff(m.gOwn, m.xAcc, m.x)
	}
	return s
}

func sign(x float64) float64 {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}
