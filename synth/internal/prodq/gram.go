package prodq

import (
	"fmt"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/dpsql/dpsql/synth/internal/nn"
)

// Sparse is a marginal's target restricted to its non-zero cells: Idx are
// cell indices in the marginal's layout (last attribute fastest), Val the
// values. Cells not listed are 0.
type Sparse struct {
	Idx []int32
	Val []float64
	// SumSq is Σ Val², the loss's constant term.
	SumSq float64
}

// Set fills s from a dense target, keeping the cells whose value is above
// tau (tau ≤ 0 keeps every non-zero cell), and returns s.
func (s *Sparse) Set(dense []float64, tau float64) *Sparse {
	s.Idx, s.Val, s.SumSq = s.Idx[:0], s.Val[:0], 0
	for y, v := range dense {
		if v != 0 && v > tau {
			s.Idx = append(s.Idx, int32(y))
			s.Val = append(s.Val, v)
			s.SumSq += v * v
		}
	}
	return s
}

// GramScratch holds the buffers of SquaredLoss. The zero value is ready; it
// is not safe for concurrent use.
type GramScratch struct {
	gramSet
	col  []int
	gram []bool // per marginal: Gram form (else dense)
	used []bool
	ans  []float64
	sc   Scratch
}

// gramSet holds the per-attribute B × B Gram matrices G_j = P_j·P_jᵀ of a
// mixture's blocks and their gradients, upper triangles only (both are
// symmetric), with the mixture transposed so that every kernel runs along
// B, even for a two-valued attribute.
type gramSet struct {
	g, dg   [][]float64 // per attribute: B × B Gram matrix and its gradient
	pt, dpt []float64   // W × B: p transposed and its gradient
	xs, ds  [][]float64 // one marginal's factors and their gradients (hadamard)
}

// form transposes p (B × W) into pt, clears dpt and forms G_j with its
// gradient cleared for every used attribute j.
func (s *gramSet) form(l *Layout, p []float64, B int, used []bool) {
	W := l.Width
	for len(s.g) < len(l.Size) {
		s.g = append(s.g, nil)
		s.dg = append(s.dg, nil)
	}
	s.pt = grow(s.pt, W*B)
	s.dpt = grow(s.dpt, W*B)
	for b := range B {
		for c, x := range p[b*W : (b+1)*W] {
			s.pt[c*B+b] = x
		}
	}
	clear(s.dpt)
	for j, u := range used {
		if !u {
			continue
		}
		// The upper triangle of G_j = (P_jᵀ)ᵀ·P_jᵀ, from the transposed
		// block, whose rows are contiguous.
		s.g[j] = grow(s.g[j], B*B)
		s.dg[j] = grow(s.dg[j], B*B)
		clear(s.dg[j])
		blas64.Implementation().Dsyrk(blas.Upper, blas.Trans, B, l.Size[j], 1, s.pt[l.Off[j]*B:], B, 0, s.g[j], B)
	}
}

// backprop adds to dp the gradient accumulated in dG_j (and in dpt):
// ∂/∂P_j of Σ dG_j[b,b']·G_j[b,b'] with G_j = P_j·P_jᵀ and dG_j symmetric
// (its upper triangle mirrored) is 2·dG_j·P_j, written transposed as
// 2·P_jᵀ·dG_j.
func (s *gramSet) backprop(l *Layout, dp []float64, B int, used []bool) {
	W := l.Width
	for j, u := range used {
		if !u {
			continue
		}
		dg := s.dg[j]
		for b := range B {
			for c := b + 1; c < B; c++ {
				dg[c*B+b] = dg[b*B+c]
			}
		}
		nn.Gemm(false, false, l.Size[j], B, B, 2, s.pt[l.Off[j]*B:], B, dg, B, 1, s.dpt[l.Off[j]*B:], B)
	}
	for c := range W {
		for b, x := range s.dpt[c*B : (c+1)*B] {
			dp[b*W+c] += x
		}
	}
}

// DenseCells is the size up to which SquaredLoss computes a marginal's
// quadratic term from its cells (Answer and Backward, about 5·B·cells
// operations) rather than from the Gram matrices (about 8·B²·|r| for the
// marginal, plus the 4·B²·d_j of forming and differentiating each Gram
// matrix it needs).
func DenseCells(B, k int) int { return denseFactor * B * k }

// denseFactor scales DenseCells (tests set it to force either form).
var denseFactor = 1

// Forms sets dst[m] (grown to len(attrs)) to whether SquaredLoss computes
// marginal m's quadratic term in Gram form, and returns dst. A marginal is
// in Gram form when it has more than DenseCells(B, |r|) cells, unless
// answering all such marginals' cells would cost less than the Gram
// matrices they need (small domains: then every marginal is dense). The
// choice depends only on the shapes, never on the data.
func (l *Layout) Forms(dst []bool, B int, attrs [][]int) []bool {
	return l.forms(dst, make([]bool, len(l.Size)), B, attrs)
}

// forms is Forms with the scratch seen (one flag per attribute; left set
// to the attributes whose Gram matrix is needed).
func (l *Layout) forms(dst, seen []bool, B int, attrs [][]int) []bool {
	dst = grow8(dst, len(attrs))
	clear(seen)
	var gramOps, denseOps float64 // of the marginals put in Gram form
	for m, a := range attrs {
		dst[m] = l.Cells(a) > DenseCells(B, len(a))
		if !dst[m] {
			continue
		}
		gramOps += 8 * float64(B*B*len(a))
		denseOps += 5 * float64(B*l.Cells(a))
		for _, j := range a {
			if !seen[j] {
				seen[j] = true
				gramOps += 4 * float64(B*B*l.Size[j])
			}
		}
	}
	if denseOps < gramOps && denseFactor > 0 {
		clear(dst)
		clear(seen)
	}
	return dst
}

// SquaredLoss returns Σ_m w·Σ_y (q_m[y] − t_m[y])² over every cell y of
// the marginals over attrs[m] of the mixture p (rows × d'), with t_m the
// sparse targets, and adds its gradient with respect to p to dp.
//
// Σ_y q_y² is computed without the cells: for the mixture
// q_y = (1/B) Σ_b Π_{j∈r} P_j[b, y_j], Σ_y q_y² = (1/B²) Σ_{b,b'} Π_{j∈r}
// G_j[b,b'] with G_j = P_j·P_jᵀ, the B × B Gram matrix of attribute j's
// block (computed once for all marginals): O(B²·|r|) per marginal instead
// of O(B·cells), and its gradient flows back as ∂/∂P_j = 2·dG_j·P_j (dG_j
// is symmetric). The cross term −2 Σ_y q_y t_y visits only the listed
// cells: O(B·|r|) each.
func (l *Layout) SquaredLoss(dp []float64, s *GramScratch, p []float64, rows int, attrs [][]int, t []Sparse, w float64) float64 {
	if len(t) != len(attrs) {
		panic(fmt.Sprintf("prodq: %d targets for %d marginals", len(t), len(attrs)))
	}
	B := rows
	s.used = grow8(s.used, len(l.Size))
	s.gram = l.forms(s.gram, s.used, B, attrs)
	s.form(l, p, B, s.used)
	inv := 1 / float64(B)
	quad := w * inv * inv
	loss := 0.0
	for m, a := range attrs {
		if !s.gram[m] {
			// Dense: the residual q − t on every cell, gradient 2w(q − t).
			r := l.Answer(s.ans, &s.sc, p, B, a)
			s.ans = r
			for i, y := range t[m].Idx {
				r[y] -= t[m].Val[i]
			}
			for y, e := range r {
				loss += w * e * e
				r[y] = 2 * w * e
			}
			l.Backward(dp, &s.sc, p, B, a, r)
			continue
		}
		loss += w * t[m].SumSq
		loss += s.term(a, B, quad)
		loss += l.crossTerm(s, a, B, &t[m], -2*w*inv)
	}
	s.backprop(l, dp, B, s.used)
	return loss
}

// term returns coef·Σ_{b,b'} Π_{j∈a} G_j[b,b'] and adds its gradient
// to the dG_j, both over the upper triangle only (G_j and dG_j are
// symmetric): an off-diagonal entry counts twice in the sum, and dG_j's
// entry is the derivative with respect to the symmetric pair.
func (s *gramSet) term(a []int, B int, coef float64) float64 {
	s.xs, s.ds = s.xs[:0], s.ds[:0]
	for range a {
		s.xs, s.ds = append(s.xs, nil), append(s.ds, nil)
	}
	sum := 0.0
	for b := range B {
		lo, hi := b*B+b, (b+1)*B
		diag := 1.0
		for k, j := range a {
			s.xs[k], s.ds[k] = s.g[j][lo:hi], s.dg[j][lo:hi]
			diag *= s.g[j][lo]
		}
		sum += 2*hadamard(s.xs, s.ds, coef) - diag
	}
	return coef * sum
}

// crossTerm returns coef·Σ_{y∈t} t_y·Σ_b Π_{j∈a} P[b, y_j] and adds its
// gradient to dpt (p transposed).
func (l *Layout) crossTerm(s *GramScratch, a []int, B int, t *Sparse, coef float64) float64 {
	k := len(a)
	s.col = growInt(s.col, k)
	s.xs, s.ds = s.xs[:0], s.ds[:0]
	for range a {
		s.xs, s.ds = append(s.xs, nil), append(s.ds, nil)
	}
	sum := 0.0
	for i, y := range t.Idx {
		r := int(y)
		for j := k - 1; j >= 0; j-- {
			sz := l.Size[a[j]]
			c := l.Off[a[j]] + r%sz
			r /= sz
			s.xs[j], s.ds[j] = s.pt[c*B:(c+1)*B], s.dpt[c*B:(c+1)*B]
		}
		c := coef * t.Val[i]
		sum += c * hadamard(s.xs, s.ds, c)
	}
	return sum
}

// hadamard returns Σ_i Π_j x[j][i] over vectors of one length and adds
// c·Π_{l≠j} x[l][i] to d[j][i]: the value and gradient of a product of
// factors, specialised for the one to three factors of most marginals.
func hadamard(x, d [][]float64, c float64) float64 {
	sum := 0.0
	switch len(x) {
	case 1:
		x0 := x[0]
		d0 := d[0][:len(x0)]
		for i, u := range x0 {
			sum += u
			d0[i] += c
		}
	case 2:
		x0 := x[0]
		x1, d0, d1 := x[1][:len(x0)], d[0][:len(x0)], d[1][:len(x0)]
		for i, u := range x0 {
			v := x1[i]
			sum += u * v
			d0[i] += c * v
			d1[i] += c * u
		}
	case 3:
		x0 := x[0]
		x1, x2 := x[1][:len(x0)], x[2][:len(x0)]
		d0, d1, d2 := d[0][:len(x0)], d[1][:len(x0)], d[2][:len(x0)]
		for i, u := range x0 {
			v, z := x1[i], x2[i]
			uv := u * v
			sum += uv * z
			d0[i] += c * v * z
			d1[i] += c * u * z
			d2[i] += c * uv
		}
	default:
		for i := range x[0] {
			// Prefix products left to right, the suffix right to left.
			suf := 1.0
			for k := len(x) - 1; k >= 0; k-- {
				pre := 1.0
				for _, xj := range x[:k] {
					pre *= xj[i]
				}
				d[k][i] += c * pre * suf
				suf *= x[k][i]
			}
			sum += suf
		}
	}
	return sum
}

func grow8(b []bool, n int) []bool {
	if cap(b) < n {
		return make([]bool, n)
	}
	return b[:n]
}

func growInt(b []int, n int) []int {
	if cap(b) < n {
		return make([]int, n)
	}
	return b[:n]
}
