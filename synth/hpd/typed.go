package hpd

// Typed HPD (seed 003 §6, App. A.3): slot 0 is the head (always present),
// slot 1 the spouse (present with probability PS), slots 2.. the children
// (their number NC in 0..K−2). Each slot's relationship attribute is pinned
// (layout.fixed), so every synthetic household has exactly one head and at
// most one spouse. Answers are computed query by query with hand-written
// gradients; with x_j the probability that child slot 2+j matches,
//
//	C(x) = Σ_c NC_c Π_{j<c} (1 − x_j)      (no child matches)
//	∂C/∂x_j = −e_j U_{j+1},  e_j = Π_{j'<j}(1 − x_j'),  U_c = NC_c + (1 − x_c) U_{c+1}.

// typedScratch holds per-call buffers.
type typedScratch struct {
	r1, r2, u, g1, g2, gnc []float64
	buf                    []int
}

func newTypedScratch(K int) *typedScratch {
	return &typedScratch{r1: make([]float64, K), r2: make([]float64, K), gnc: make([]float64, K-1),
		u: make([]float64, K+1), g1: make([]float64, K), g2: make([]float64, K)}
}

// slotProb returns the probability that slot k of component c has the
// values vals of attrs.
func (l *layout) slotProb(c []float64, k int, attrs, vals []int) float64 {
	r := 1.0
	for j, b := range attrs {
		r *= c[l.iOff[k][b]+vals[j]]
	}
	return r
}

// addSlotConds adds w·∂(slotProb)/∂p to g.
func (l *layout) addSlotConds(g, c []float64, k int, attrs, vals []int, w float64) {
	if w == 0 {
		return
	}
	for j, b := range attrs {
		o := 1.0
		for j2, b2 := range attrs {
			if j2 != j {
				o *= c[l.iOff[k][b2]+vals[j2]]
			}
		}
		g[l.iOff[k][b]+vals[j]] += w * o
	}
}

// noChild returns C(x) over the child slots (x = r[2:]) and, if gx is
// non-nil, writes ∂C/∂x_j into gx[2+j] and ∂C/∂NC_c into gnc[c].
func (l *layout) noChild(nc, r []float64, s *typedScratch, gx, gnc []float64) float64 {
	KC := l.d.K - 2
	C, e := 0.0, 1.0
	for c := 0; c <= KC; c++ {
		C += nc[c] * e
		if gnc != nil {
			gnc[c] = e
		}
		if c < KC {
			e *= 1 - r[2+c]
		}
	}
	if gx != nil && KC > 0 {
		s.u[KC] = nc[KC]
		for c := KC - 1; c >= 0; c-- {
			s.u[c] = nc[c] + (1-r[2+c])*s.u[c+1]
		}
		e = 1
		for j := range KC {
			gx[2+j] = -e * s.u[j+1]
			e *= 1 - r[2+j]
		}
	}
	return C
}

// valueTyped is value for typed domains (Q_G, Q_I and Q_R).
func (l *layout) valueTyped(p []float64, q *query, coef float64, gp []float64) float64 {
	d := l.d
	K := d.K
	M := len(p) / l.L
	if l.ts == nil {
		l.ts = newTypedScratch(K)
	}
	s := l.ts
	gnc := s.gnc
	total := 0.0
	for m := range M {
		c := p[m*l.L : (m+1)*l.L]
		var g []float64
		if gp != nil {
			g = gp[m*l.L : (m+1)*l.L]
		}
		pG := 1.0
		for j, a := range q.gA {
			pG *= c[l.gOff[a]+q.gV[j]]
		}
		for k := range K {
			s.r1[k] = l.slotProb(c, k, q.iA, q.iV)
			s.g1[k], s.g2[k] = 0, 0
		}
		PS := c[l.psOff+1]
		nc := c[l.ncOff : l.ncOff+K-1]
		clear(gnc)
		var inner, dPS float64 // inner: value / pG
		switch q.kind {
		case IndivLevel:
			// Σ_k pres_k r_k; pres = (1, PS, P(NC>0), P(NC>1), …)
			inner = s.r1[0] + PS*s.r1[1]
			s.g1[0], s.g1[1], dPS = 1, PS, s.r1[1]
			tail := 1.0 // P(NC > j)
			for j := range K - 2 {
				tail -= nc[j]
				inner += tail * s.r1[2+j]
				s.g1[2+j] = tail
			}
			cum := 0.0 // Σ_{j<c} r_{2+j}
			for n := range K - 1 {
				gnc[n] = cum
				if n < K-2 {
					cum += s.r1[2+n]
				}
			}
		case GroupLevel:
			A, B := 1-s.r1[0], 1-PS*s.r1[1]
			C := l.noChild(nc, s.r1, s, s.g1, gnc)
			inner = 1 - A*B*C
			for j := 2; j < K; j++ {
				s.g1[j] *= -A * B
			}
			for n := range gnc {
				gnc[n] *= -A * B
			}
			s.g1[0], s.g1[1], dPS = B*C, A*PS*C, A*s.r1[1]*C
		default: // RelationLevel
			for k := range K {
				s.r2[k] = l.slotProb(c, k, q.i2A, q.i2V)
			}
			h1, s1, h2, s2 := s.r1[0], s.r1[1], s.r2[0], s.r2[1]
			switch q.rel {
			case MarriedTo:
				inner = PS * (h1*s2 + s1*h2)
				dPS = h1*s2 + s1*h2
				s.g1[0], s.g1[1], s.g2[0], s.g2[1] = PS*s2, PS*h2, PS*s1, PS*h1
			case HasChild:
				C := l.noChild(nc, s.r2, s, s.g2, gnc)
				par := h1 + PS*s1
				inner = par * (1 - C)
				for j := 2; j < K; j++ {
					s.g2[j] *= -par
				}
				for n := range gnc {
					gnc[n] *= -par
				}
				s.g1[0], s.g1[1], dPS = 1-C, PS*(1-C), s1*(1-C)
			case HasParent:
				Y := 1 - (1-h2)*(1-PS*s2)
				X, tail := 0.0, 1.0
				for j := range K - 2 {
					tail -= nc[j]
					X += tail * s.r1[2+j]
					s.g1[2+j] = tail * Y
				}
				cum := 0.0
				for n := range K - 1 {
					gnc[n] = cum * Y
					if n < K-2 {
						cum += s.r1[2+n]
					}
				}
				inner = X * Y
				s.g2[0], s.g2[1], dPS = X*(1-PS*s2), X*(1-h2)*PS, X*(1-h2)*s2
			}
		}
		total += pG * inner
		if g == nil {
			continue
		}
		w := coef * pG
		g[l.psOff+1] += w * dPS
		for n := range gnc {
			g[l.ncOff+n] += w * gnc[n]
		}
		for k := range K {
			l.addSlotConds(g, c, k, q.iA, q.iV, w*s.g1[k])
			if q.kind == RelationLevel {
				l.addSlotConds(g, c, k, q.i2A, q.i2V, w*s.g2[k])
			}
		}
		for j, a := range q.gA {
			o := 1.0
			for j2, a2 := range q.gA {
				if j2 != j {
					o *= c[l.gOff[a2]+q.gV[j2]]
				}
			}
			g[l.gOff[a]+q.gV[j]] += coef * inner * o
		}
	}
	return total / float64(M)
}

// setAnswersTyped answers every cell of q, one query at a time.
func (l *layout) setAnswersTyped(p []float64, q *QuerySet) []float64 {
	nG, nI := q.cells(l.d)
	out := make([]float64, nG*nI)
	mq := q.query(l.d)
	for c := range out {
		q.decodeQuery(l.d, c, &mq)
		out[c] = l.valueTyped(p, &mq, 0, nil)
	}
	return out
}

// query returns a query of q's shape with value buffers (decodeQuery fills
// them).
func (q *QuerySet) query(d *Domain) query {
	return query{kind: q.Kind, rel: q.Rel, gA: q.G, iA: q.I, i2A: q.I2,
		gV: make([]int, len(q.G)), iV: make([]int, len(q.I)), i2V: make([]int, len(q.I2)), scale: 1, bound: 1}
}

// decodeQuery sets mq's values to cell c.
func (q *QuerySet) decodeQuery(d *Domain, c int, mq *query) {
	var small [16]int
	buf := small[:0]
	if n := len(q.I) + len(q.I2); n <= len(small) {
		buf = small[:n]
	} else {
		buf = make([]int, n)
	}
	q.decode(d, c, mq.gV, buf)
	copy(mq.iV, buf[:len(q.I)])
	copy(mq.i2V, buf[len(q.I):])
}

// TruncateTyped applies the typed truncation rule to records already in
// head, spouse, children order: at most K−2 children per household.
func TruncateTyped(d *Domain, r *Records) *Records {
	out := &Records{NG: r.NG, NI: r.NI, G: r.G, Off: []int32{0}}
	for h := range r.Households() {
		n, children := 0, 0
		for p := r.Off[h]; p < r.Off[h+1]; p++ {
			row := r.P[int(p)*r.NI : int(p+1)*r.NI]
			if int(row[d.Rel]) == d.RelCodes[Child] {
				if children == d.K-2 {
					continue
				}
				children++
			}
			out.P = append(out.P, row...)
			n++
		}
		out.Off = append(out.Off, out.Off[h]+int32(n))
	}
	return out
}
