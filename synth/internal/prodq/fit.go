package prodq

import (
	"fmt"
	"math"

	"github.com/dpsql/dpsql/synth/internal/nn"
)

// FitScratch holds the buffers of FitLoss. The zero value is ready; it is
// not safe for concurrent use.
type FitScratch struct {
	// GramCells: marginals of at least this many cells (and two or more
	// attributes) take the Gram form; 0 means DefaultGramCells(rows).
	GramCells int

	sc          Scratch
	ans, g      []float64
	gram, dgram [][]float64 // per attribute: rows × rows Gram matrix and its gradient
	used        []bool
	gramForm    []bool
	tp, t1      []float64
	others      []int
	sv          [][]float64 // per-row contractions S_i
	ov          [][]float64 // per-row outer products O_i
}

// DefaultGramCells is the size from which a marginal's squared error is
// cheaper in the Gram form for a mixture of rows rows: the direct form
// costs about 3·rows·cells multiply-adds, the Gram form 2·rows·cells plus
// about rows²·(k + 2) for the Hadamard products and its share of the
// per-attribute Gram matrices (2·rows²·size each, shared by all
// marginals).
// Above MaxGramRows rows the Gram form is off (its matrices take
// 16·rows² bytes per attribute).
func DefaultGramCells(rows int) int {
	if rows > MaxGramRows {
		return math.MaxInt
	}
	return 32 * rows
}

// MaxGramRows is the largest mixture for which DefaultGramCells allows the
// Gram form.
const MaxGramRows = 1500

// MaxGramBytes caps the Gram matrices' memory: once the attributes in the
// Gram form would take more, further marginals take the direct form.
const MaxGramBytes = 512 << 20

// FitBytes is the memory FitLoss's Gram form may take with the default
// threshold: two rows × rows matrices per attribute, at most MaxGramBytes.
func FitBytes(rows, attributes int) float64 {
	if rows > MaxGramRows {
		return 0
	}
	return min(16*float64(rows)*float64(rows)*float64(attributes), MaxGramBytes)
}

// FitLoss returns Σ_m Σ_y (q_m[y] − t[m][y])² over every cell y of the
// marginals over attrs[m] (layout as in Answer) of the mixture p with rows
// rows and dense targets t[m], and adds its gradient with respect to p to
// dp. It equals summing the squares of Answer's errors and calling
// Backward with twice them (the direct form, used for small marginals),
// up to rounding.
//
// Large marginals take the Gram form: Σ_y q_y² = (1/B²) Σ_{b,b'} Π_{j∈r}
// G_j[b,b'] with G_j = P_j·P_jᵀ the B × B Gram matrix of attribute j's
// block (computed once per call for all marginals), whose gradient flows
// back as ∂/∂P_j = 2·dG_j·P_j; and the cross term Σ_y q_y t_y with its
// gradient in two matrix products of B·cells each (t contracted with the
// largest attribute's block, then with the outer product of the others),
// instead of the direct form's three (answer, and the two of Backward).
func (l *Layout) FitLoss(dp []float64, s *FitScratch, p []float64, rows int, attrs [][]int, t [][]float64) float64 {
	if len(t) != len(attrs) {
		panic(fmt.Sprintf("prodq: %d targets for %d marginals", len(t), len(attrs)))
	}
	B, W := rows, l.Width
	minCells := s.GramCells
	if minCells <= 0 {
		minCells = DefaultGramCells(rows)
	}
	nA := len(l.Size)
	for len(s.gram) < nA {
		s.gram = append(s.gram, nil)
		s.dgram = append(s.dgram, nil)
	}
	if cap(s.used) < nA {
		s.used = make([]bool, nA)
	}
	s.used = s.used[:nA]
	clear(s.used)
	if cap(s.gramForm) < len(attrs) {
		s.gramForm = make([]bool, len(attrs))
	}
	s.gramForm = s.gramForm[:len(attrs)]
	anyGram := false
	maxUsed, nUsed := max(1, int(MaxGramBytes/(16*float64(B)*float64(B)))), 0
	for m, a := range attrs {
		cells := l.Cells(a)
		if len(t[m]) != cells {
			panic(fmt.Sprintf("prodq: %d target values for %d cells", len(t[m]), cells))
		}
		s.gramForm[m] = len(a) >= 2 && cells >= minCells
		if s.gramForm[m] {
			add := 0
			for _, j := range a {
				if !s.used[j] {
					add++
				}
			}
			if nUsed+add > maxUsed {
				s.gramForm[m] = false
				continue
			}
			nUsed += add
			anyGram = true
			for _, j := range a {
				s.used[j] = true
			}
		}
	}
	if anyGram {
		for j, u := range s.used {
			if !u {
				continue
			}
			s.gram[j] = grow(s.gram[j], B*B)
			s.dgram[j] = grow(s.dgram[j], B*B)
			clear(s.dgram[j])
			nn.Gemm(false, true, B, B, l.Size[j], 1, p[l.Off[j]:], W, p[l.Off[j]:], W, 0, s.gram[j], B)
		}
	}
	inv := 1 / float64(B)
	loss := 0.0
	for m, a := range attrs {
		tm := t[m]
		if !s.gramForm[m] {
			s.ans = l.Answer(s.ans, &s.sc, p, B, a)
			s.g = grow(s.g, len(tm))
			for y, v := range s.ans {
				e := v - tm[y]
				loss += e * e
				s.g[y] = 2 * e
			}
			l.Backward(dp, &s.sc, p, B, a, s.g)
			continue
		}
		sq := 0.0
		for _, v := range tm {
			sq += v * v
		}
		loss += sq + l.fitGram(s, a, B, inv*inv) + l.fitCross(dp, s, p, B, a, tm, -2*inv)
	}
	if anyGram {
		for j, u := range s.used {
			if u {
				// ∂/∂P_j of Σ dG_j[b,b']·G_j[b,b'], G_j = P_j·P_jᵀ, dG_j symmetric.
				nn.Gemm(false, false, B, l.Size[j], B, 2, s.dgram[j], B, p[l.Off[j]:], W, 1, dp[l.Off[j]:], W)
			}
		}
	}
	return loss
}

// fitGram returns coef·Σ_{b,b'} Π_{j∈a} G_j[b,b'] and adds its gradient
// with respect to every G_j to dG_j.
func (l *Layout) fitGram(s *FitScratch, a []int, B int, coef float64) float64 {
	n := B * B
	sum := 0.0
	switch len(a) {
	case 2:
		g0, g1 := s.gram[a[0]][:n], s.gram[a[1]][:n]
		d0, d1 := s.dgram[a[0]][:n], s.dgram[a[1]][:n]
		for i := range g0 {
			x, y := g0[i], g1[i]
			sum += x * y
			d0[i] += coef * y
			d1[i] += coef * x
		}
	case 3:
		g0, g1, g2 := s.gram[a[0]][:n], s.gram[a[1]][:n], s.gram[a[2]][:n]
		d0, d1, d2 := s.dgram[a[0]][:n], s.dgram[a[1]][:n], s.dgram[a[2]][:n]
		for i := range g0 {
			x, y, z := g0[i], g1[i], g2[i]
			cx, xy := coef*x, x*y
			sum += xy * z
			d0[i] += coef * y * z
			d1[i] += cx * z
			d2[i] += coef * xy
		}
	default:
		for i := range n {
			// Prefix products left to right, suffix products right to left.
			suf := 1.0
			for k := len(a) - 1; k >= 0; k-- {
				pre := 1.0
				for _, j := range a[:k] {
					pre *= s.gram[j][i]
				}
				s.dgram[a[k]][i] += coef * pre * suf
				suf *= s.gram[a[k]][i]
			}
			sum += suf
		}
	}
	return coef * sum
}

// fitCross returns coef·Σ_b Σ_y t_y Π_{j∈a} P[b, y_j] and adds its
// gradient to dp. With a1 the largest attribute of a and z the cell of the
// others: T1 = P_{a1}·t (B × c', t as n1 × c') gives, row by row, the
// others' gradients by reverse-mode contraction of T1[b] with their
// blocks, and a1's gradient is X·tᵀ with X the row-wise outer product of
// the others' blocks (B × c').
func (l *Layout) fitCross(dp []float64, s *FitScratch, p []float64, B int, a []int, t []float64, coef float64) float64 {
	W := l.Width
	i1 := 0
	for i, j := range a {
		if l.Size[j] > l.Size[a[i1]] {
			i1 = i
		}
	}
	a1, n1 := a[i1], l.Size[a[i1]]
	cells := len(t)
	c := cells / n1
	// t as n1 × c': original index (hi·n1 + v)·L + lo, z = hi·L + lo.
	L := 1
	for _, j := range a[i1+1:] {
		L *= l.Size[j]
	}
	H := c / L
	s.tp = grow(s.tp, cells)
	for hi := range H {
		for v := range n1 {
			copy(s.tp[v*c+hi*L:v*c+hi*L+L], t[(hi*n1+v)*L:(hi*n1+v)*L+L])
		}
	}
	s.others = append(append(s.others[:0], a[:i1]...), a[i1+1:]...)
	r := len(s.others)
	s.t1 = grow(s.t1, B*c)
	nn.Gemm(false, false, B, c, n1, 1, p[l.Off[a1]:], W, s.tp, c, 0, s.t1, c)
	for len(s.sv) <= r {
		s.sv = append(s.sv, nil)
		s.ov = append(s.ov, nil)
	}
	// sv[i] holds S_i (cells of others[:i]), ov[i] O_i (the same size).
	size := c
	for i := r; i >= 0; i-- {
		s.sv[i] = grow(s.sv[i], size)
		s.ov[i] = grow(s.ov[i], size)
		if i > 0 {
			size /= l.Size[s.others[i-1]]
		}
	}
	sum := 0.0
	for b := range B {
		row := p[b*W : (b+1)*W]
		drow := dp[b*W : (b+1)*W]
		copy(s.sv[r], s.t1[b*c:(b+1)*c])
		for i := r; i >= 1; i-- {
			o := s.others[i-1]
			m := l.Size[o]
			pv := row[l.Off[o] : l.Off[o]+m]
			src, dst := s.sv[i], s.sv[i-1]
			for u := range dst {
				acc := 0.0
				for v, x := range src[u*m : (u+1)*m] {
					acc += x * pv[v]
				}
				dst[u] = acc
			}
		}
		sum += s.sv[0][0]
		s.ov[0][0] = 1
		for i := 1; i <= r; i++ {
			o := s.others[i-1]
			m := l.Size[o]
			pv := row[l.Off[o] : l.Off[o]+m]
			dpv := drow[l.Off[o] : l.Off[o]+m]
			prev, src, next := s.ov[i-1], s.sv[i], s.ov[i]
			for u, w := range prev {
				if w == 0 {
					continue
				}
				cw := coef * w
				for v, x := range src[u*m : (u+1)*m] {
					dpv[v] += cw * x
				}
			}
			if i < r {
				for u, w := range prev {
					for v, x := range pv {
						next[u*m+v] = w * x
					}
				}
			}
		}
	}
	// X: the outer product of the others' blocks, others' order, last
	// fastest (outer builds all but the last attribute it is given).
	X, _ := l.outer(&s.sc, p, B, append(s.others, a1))
	nn.Gemm(false, true, B, n1, c, coef, X, c, s.tp, c, 1, dp[l.Off[a1]:], W)
	return coef * sum
}
