package hpd

import (
	"math"
)

// layout places the probability blocks of one mixture component in a
// vector: the group attributes, the size distribution (sizes 1..K), then
// for each slot k the individual attributes.
type layout struct {
	d    *Domain
	gOff []int   // gOff[a]: offset of group attribute a
	sOff int     // offset of the size block (K entries)
	iOff [][]int // iOff[k][b]: offset of individual attribute b in slot k
	L    int     // entries per component
	// blocks lists (offset, size) of every softmax block.
	blocks [][2]int
	// Typed households replace the size block by a spouse block (absent,
	// present) at psOff and a number-of-children block (0..K−2) at ncOff;
	// fixed[i] ≥ 0 pins block i to that code (the relationship attribute
	// of each slot: head, spouse, child).
	typed        bool
	psOff, ncOff int
	fixed        []int
	ts           *typedScratch // valueTyped's buffers (a layout is used by one goroutine)
}

func newLayout(d *Domain) *layout {
	l := &layout{d: d}
	o := 0
	for _, n := range d.Group {
		l.gOff = append(l.gOff, o)
		l.blocks = append(l.blocks, [2]int{o, n})
		o += n
	}
	if d.Typed {
		l.typed = true
		l.psOff = o
		l.blocks = append(l.blocks, [2]int{o, 2})
		o += 2
		l.ncOff = o
		l.blocks = append(l.blocks, [2]int{o, d.K - 1})
		o += d.K - 1
	} else {
		l.sOff = o
		l.blocks = append(l.blocks, [2]int{o, d.K})
		o += d.K
	}
	l.fixed = make([]int, len(l.blocks))
	for i := range l.fixed {
		l.fixed[i] = -1
	}
	l.iOff = make([][]int, d.K)
	for k := range d.K {
		for b, n := range d.Indiv {
			l.iOff[k] = append(l.iOff[k], o)
			fix := -1
			if d.Typed && b == d.Rel {
				fix = d.RelCodes[slotType(k)]
			}
			l.fixed = append(l.fixed, fix)
			l.blocks = append(l.blocks, [2]int{o, n})
			o += n
		}
	}
	l.L = o
	return l
}

// softmax maps logits theta to probabilities p block by block (both M·L).
func (l *layout) softmax(theta, p []float64) {
	for m := 0; m < len(theta); m += l.L {
		for bi, b := range l.blocks {
			t, q := theta[m+b[0]:m+b[0]+b[1]], p[m+b[0]:m+b[0]+b[1]]
			if f := l.fixed[bi]; f >= 0 {
				clear(q)
				q[f] = 1
				continue
			}
			mx := math.Inf(-1)
			for _, x := range t {
				mx = max(mx, x)
			}
			s := 0.0
			for i, x := range t {
				q[i] = math.Exp(x - mx)
				s += q[i]
			}
			for i := range q {
				q[i] /= s
			}
		}
	}
}

// softmaxBack turns gradients gp with respect to p into gradients with
// respect to the logits, in place: dθ_j = p_j (g_j − Σ_k p_k g_k).
func (l *layout) softmaxBack(p, gp []float64) {
	for m := 0; m < len(p); m += l.L {
		for bi, b := range l.blocks {
			q, g := p[m+b[0]:m+b[0]+b[1]], gp[m+b[0]:m+b[0]+b[1]]
			if l.fixed[bi] >= 0 {
				clear(g)
				continue
			}
			s := 0.0
			for i := range q {
				s += q[i] * g[i]
			}
			for i := range q {
				g[i] = q[i] * (g[i] - s)
			}
		}
	}
}

// setAnswers returns the model's answers to every cell of q, per household
// (the expected count divided by the number of households), for the mixture
// p (M·L probabilities).
func (l *layout) setAnswers(p []float64, q *QuerySet) []float64 {
	d := l.d
	nG, nI := q.cells(d)
	if l.typed {
		return l.setAnswersTyped(p, q)
	}
	out := make([]float64, nG*nI)
	M := len(p) / l.L
	pg := make([]float64, nG)
	rk := make([][]float64, d.K)
	for k := range rk {
		rk[k] = make([]float64, nI)
	}
	inner := make([]float64, nI)
	for m := range M {
		c := p[m*l.L : (m+1)*l.L]
		outer(pg, q.G, func(j, v int) float64 { return c[l.gOff[q.G[j]]+v] }, d.Group)
		for k := range d.K {
			outer(rk[k], q.I, func(j, v int) float64 { return c[l.iOff[k][q.I[j]]+v] }, d.Indiv)
		}
		S := c[l.sOff : l.sOff+d.K]
		if q.Kind == IndivLevel {
			// Σ_k P(S ≥ k) r_k
			clear(inner)
			pres := 1.0
			for k := range d.K {
				for i := range inner {
					inner[i] += pres * rk[k][i]
				}
				pres -= S[k]
			}
		} else {
			// 1 − Σ_s S_s Π_{k≤s} (1 − r_k)
			for i := range inner {
				e, t := 1.0, 0.0
				for k := range d.K {
					e *= 1 - rk[k][i]
					t += S[k] * e
				}
				inner[i] = 1 - t
			}
		}
		for g := range nG {
			for i := range nI {
				out[g*nI+i] += pg[g] * inner[i]
			}
		}
	}
	for i := range out {
		out[i] /= float64(M)
	}
	return out
}

// outer fills dst (the product of sizes[attrs[j]]) with the outer product of
// the per-attribute probability vectors val(j, v).
func outer(dst []float64, attrs []int, val func(j, v int) float64, sizes []int) {
	dst[0] = 1
	n := 1
	for j, a := range attrs {
		s := sizes[a]
		// expand in place from the back
		for c := n - 1; c >= 0; c-- {
			x := dst[c]
			for v := s - 1; v >= 0; v-- {
				dst[c*s+v] = x * val(j, v)
			}
		}
		n *= s
	}
}

// query is one measured query: a cell of a set, with its decoded values.
type query struct {
	kind   Kind
	gA, iA []int // attributes
	gV, iV []int // values
	rel    Relation
	i2A    []int // relative's attributes (Q_R)
	i2V    []int
	scale  float64 // loss scale: 1 for Q_G, the expected household size for Q_I
	bound  float64 // largest per-household value: 1 for Q_G, K for Q_I
}

// value returns the model answer of q (per household) and, if gp is
// non-nil, adds coef·∂answer/∂p to gp.
func (l *layout) value(p []float64, q *query, coef float64, gp []float64, rk, e, tt []float64) float64 {
	if l.typed {
		return l.valueTyped(p, q, coef, gp)
	}
	d := l.d
	K := d.K
	M := len(p) / l.L
	total := 0.0
	for m := range M {
		c := p[m*l.L : (m+1)*l.L]
		pG := 1.0
		for j, a := range q.gA {
			pG *= c[l.gOff[a]+q.gV[j]]
		}
		for k := range K {
			r := 1.0
			for j, b := range q.iA {
				r *= c[l.iOff[k][b]+q.iV[j]]
			}
			rk[k] = r
		}
		S := c[l.sOff : l.sOff+K]
		var h, dpG float64
		var g []float64
		if gp != nil {
			g = gp[m*l.L : (m+1)*l.L]
		}
		if q.kind == IndivLevel {
			pres, inner := 1.0, 0.0
			for k := range K {
				e[k] = pres // P(S ≥ k+1)
				inner += pres * rk[k]
				pres -= S[k]
			}
			h, dpG = pG*inner, inner
			if g != nil {
				cum := 0.0
				for k := range K {
					cum += rk[k]
					g[l.sOff+k] += coef * pG * cum
					addSlot(l, g, q, c, k, coef*pG*e[k])
				}
			}
		} else {
			// e[k] = Π_{j≤k}(1−r_j); t = Σ_s S_s e_s
			acc, t := 1.0, 0.0
			for k := range K {
				acc *= 1 - rk[k]
				e[k] = acc
				t += S[k] * acc
			}
			h, dpG = pG*(1-t), 1-t
			if g != nil {
				for k := range K {
					g[l.sOff+k] += coef * pG * (1 - e[k])
				}
				if len(q.iA) > 0 {
					// T_k = S_k + (1−r_{k+1}) T_{k+1}; ∂h/∂r_k = pG·e_{k−1}·T_k
					tt[K-1] = S[K-1]
					for k := K - 2; k >= 0; k-- {
						tt[k] = S[k] + (1-rk[k+1])*tt[k+1]
					}
					prev := 1.0
					for k := range K {
						addSlot(l, g, q, c, k, coef*pG*prev*tt[k])
						prev = e[k]
					}
				}
			}
		}
		total += h
		if g != nil && len(q.gA) > 0 {
			for j, a := range q.gA {
				o := 1.0
				for j2, a2 := range q.gA {
					if j2 != j {
						o *= c[l.gOff[a2]+q.gV[j2]]
					}
				}
				g[l.gOff[a]+q.gV[j]] += coef * dpG * o
			}
		}
	}
	return total / float64(M)
}

// addSlot adds w·∂r_k/∂p to g for slot k.
func addSlot(l *layout, g []float64, q *query, c []float64, k int, w float64) {
	for j, b := range q.iA {
		o := 1.0
		for j2, b2 := range q.iA {
			if j2 != j {
				o *= c[l.iOff[k][b2]+q.iV[j2]]
			}
		}
		g[l.iOff[k][b]+q.iV[j]] += w * o
	}
}

// lossGrad returns Σ_i ((f_i − a_i)/scale_i)² over the measurements and
// writes its gradient with respect to p into gp (zeroed first).
func (l *layout) lossGrad(p []float64, ms []measured, gp []float64) float64 {
	clear(gp)
	K := l.d.K
	rk, e, tt := make([]float64, K), make([]float64, K), make([]float64, K)
	M := float64(len(p) / l.L)
	loss := 0.0
	for i := range ms {
		q := &ms[i].q
		f := l.value(p, q, 0, nil, rk, e, tt)
		r := (f - ms[i].a) / q.scale
		loss += r * r
		l.value(p, q, 2*r/q.scale/M, gp, rk, e, tt)
	}
	return loss
}

// measured is a released noisy answer a (per household) to q.
type measured struct {
	q query
	a float64
}
