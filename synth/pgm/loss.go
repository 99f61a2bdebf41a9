package pgm

import (
	"math"

	"github.com/dpsql/dpsql/synth/pgm/internal/kernel"
	"gonum.org/v1/gonum/mat"
)

// compiled is a measurement bound to the junction-tree clique that holds it,
// with its buffers.
type compiled struct {
	clique int
	idx    []int32 // clique → attrs map; nil when attrs is the clique
	c      float64 // 1/σ
	q      *mat.Dense
	y      []float64
	x      []float64 // projected unnormalised marginal
	qx     *mat.VecDense
	xv     *mat.VecDense
	r      []float64 // c·(Q x − y)
	g      []float64 // gradient over attrs
	gv     *mat.VecDense
	rv     *mat.VecDense
}

// objective evaluates a loss over clique marginals.
type objective struct {
	jt    *junctionTree
	meas  []compiled
	loss  Loss
	total float64
}

func newObjective(jt *junctionTree, meas []Measurement, loss Loss, total float64) *objective {
	o := &objective{jt: jt, loss: loss, total: total, meas: make([]compiled, len(meas))}
	for i, m := range meas {
		k := jt.containing(m.Attrs)
		n := jt.dom.Cells(m.Attrs)
		cm := compiled{clique: k, c: 1 / m.Sigma, q: m.Query, y: m.Y, x: make([]float64, n), r: make([]float64, len(m.Y)), g: make([]float64, n)}
		if len(m.Attrs) != len(jt.cliques[k]) {
			cm.idx = jt.projMap(k, m.Attrs)
		}
		if m.Query != nil {
			cm.xv = mat.NewVecDense(n, cm.x)
			cm.qx = mat.NewVecDense(len(m.Y), nil)
			cm.gv = mat.NewVecDense(n, cm.g)
			cm.rv = mat.NewVecDense(len(m.Y), cm.r)
		}
		o.meas[i] = cm
	}
	return o
}

// value returns the loss at the clique marginals p (probabilities; the loss
// sees total·p) and keeps the residuals for grad.
func (o *objective) value(p []float64) float64 {
	var loss float64
	for i := range o.meas {
		m := &o.meas[i]
		blk := o.jt.block(p, m.clique)
		if m.idx == nil {
			copy(m.x, blk)
		} else {
			clear(m.x)
			kernel.Project(m.x, blk, m.idx)
		}
		qx := m.x
		if m.q != nil {
			m.qx.MulVec(m.q, m.xv)
			qx = m.qx.RawVector().Data
		}
		t, c := o.total, m.c
		if len(qx) != len(m.r) || len(m.y) != len(m.r) {
			panic("pgm: measurement shape mismatch")
		}
		var s float64
		for j := range m.r {
			d := c * (t*qx[j] - m.y[j])
			m.r[j] = d
			if o.loss == L1 {
				s += math.Abs(d)
			} else {
				s += d * d
			}
		}
		if o.loss == L1 {
			loss += s
		} else {
			loss += 0.5 * s
		}
	}
	return loss
}

// grad writes into dst (an arena) the gradient of the loss with respect to
// the unnormalised clique marginals, at the point of the last value call.
func (o *objective) grad(dst []float64) {
	clear(dst)
	for i := range o.meas {
		m := &o.meas[i]
		if o.loss == L1 {
			for j, d := range m.r {
				m.r[j] = sign(d)
			}
		}
		if m.q != nil {
			m.gv.MulVec(m.q.T(), m.rv)
		} else {
			copy(m.g, m.r)
		}
		blk := o.jt.block(dst, m.clique)
		c := m.c
		if m.idx == nil {
			kernel.Axpy(blk, c, m.g)
			continue
		}
		for j := range m.g {
			m.g[j] *= c
		}
		kernel.Expand(blk, m.g, m.idx)
	}
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
