package pgm

import (
	"math"

	"github.com/dpsql/dpsql/synth/pgm/internal/kernel"
)

// bpWork is the reusable workspace of belief propagation over one junction
// tree. It is not safe for concurrent use.
type bpWork struct {
	jt *junctionTree
	// Per non-root clique v, over sep[v]: the upward message (log), the
	// per-cell shift used for it, the sum of shifted exponentials, and the
	// downward separator marginal.
	msg, shift, acc, down [][]float64
}

func newBPWork(jt *junctionTree) *bpWork {
	k := len(jt.cliques)
	w := &bpWork{jt: jt, msg: make([][]float64, k), shift: make([][]float64, k), acc: make([][]float64, k), down: make([][]float64, k)}
	for v := range k {
		if jt.parent[v] < 0 {
			continue
		}
		n := jt.dom.Cells(jt.sep[v])
		buf := make([]float64, 4*n)
		w.msg[v], w.shift[v], w.acc[v], w.down[v] = buf[:n:n], buf[n:2*n:2*n], buf[2*n:3*n:3*n], buf[3*n:]
	}
	return w
}

// run computes the clique marginals of the model exp(Σ_C theta_C) / Z as
// probabilities (each clique's block of p sums to 1) and returns log Z. theta
// and p are arenas laid out by the junction tree. It does not allocate.
//
// Upward pass (log space, per-separator-cell max shift): the belief of v is
// theta_v plus its children's messages; its message to the parent is the
// logsumexp of the belief over v \ sep(v), and exp(belief − shift) is kept in
// p_v. Downward pass (probabilities): the root's marginal is exp(belief −
// log Z); a child's marginal is its parent's marginal projected on the
// separator times the child's conditional given the separator, which is
// p_v / acc.
func (w *bpWork) run(p, theta []float64) float64 {
	jt := w.jt
	if len(p) != jt.total || len(theta) != jt.total {
		panic("pgm: arena length mismatch")
	}
	var logZ float64
	for _, v := range jt.post {
		b := p[jt.off[v] : jt.off[v]+jt.cells[v]]
		copy(b, theta[jt.off[v]:jt.off[v]+jt.cells[v]])
		for _, c := range jt.children[v] {
			kernel.Expand(b, w.msg[c], jt.downMap[c])
		}
		if jt.parent[v] < 0 {
			mx := kernel.Max(b)
			sum := kernel.ExpShiftTotal(b, mx)
			if sum == 0 {
				logZ = math.Inf(-1)
				continue
			}
			logZ = mx + math.Log(sum)
			kernel.ScaleAll(b, 1/sum)
			continue
		}
		kernel.MaxTo(w.shift[v], b, jt.upMap[v])
		kernel.ExpShiftSum(b, w.acc[v], w.shift[v], jt.upMap[v])
		m := w.msg[v]
		for s := range m {
			if math.IsInf(w.shift[v][s], -1) {
				m[s] = math.Inf(-1)
			} else {
				m[s] = w.shift[v][s] + math.Log(w.acc[v][s])
			}
		}
	}
	for i := len(jt.post) - 2; i >= 0; i-- {
		v := jt.post[i]
		par := jt.parent[v]
		d := w.down[v]
		clear(d)
		kernel.Project(d, p[jt.off[par]:jt.off[par]+jt.cells[par]], jt.downMap[v])
		acc := w.acc[v]
		for s := range d {
			if acc[s] > 0 {
				d[s] /= acc[s]
			} else {
				d[s] = 0
			}
		}
		kernel.Scale(p[jt.off[v]:jt.off[v]+jt.cells[v]], d, jt.upMap[v])
	}
	return logZ
}
