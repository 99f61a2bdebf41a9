// Package prodq answers k-way marginals on a mixture of product
// distributions, and differentiates them: GEM's and RAPsoftmax's "product
// queries" with the marginal trick (Liu, Vietri, Wu, NeurIPS 2021, Def. 3
// and App. A.1).
//
// The mixture is a B × d' row-major matrix P in one-hot space: row b holds
// one probability vector per attribute, attribute a at columns
// [Off[a], Off[a]+Size[a]). The answer of cell y of the marginal over S
// is (1/B) Σ_b Π_{j∈S} P[b, Off[j]+y_j]. A whole marginal is computed in
// one pass: the row-wise outer product A of all attributes but the
// smallest (B × c, c their cells), then one matrix product with the
// smallest attribute's block, P_lastᵀ·A / B, whose inner loop runs along c
// (gonum's kernels are slow along a dimension of 2), and a permutation into
// the requested layout. The
// backward pass is the transpose of the same two steps, so neither
// direction materialises a B × cells tensor.
package prodq

import (
	"fmt"

	"github.com/dpsql/dpsql/synth/internal/nn"
)

// Layout is the one-hot layout of a domain.
type Layout struct {
	Off, Size []int
	Width     int // d' = Σ Size
}

// NewLayout returns the layout of attributes with the given sizes.
func NewLayout(sizes []int) *Layout {
	l := &Layout{Off: make([]int, len(sizes)), Size: append([]int(nil), sizes...)}
	for a, s := range sizes {
		l.Off[a] = l.Width
		l.Width += s
	}
	return l
}

// Cells is the number of cells of the marginal over attrs.
func (l *Layout) Cells(attrs []int) int {
	c := 1
	for _, a := range attrs {
		c *= l.Size[a]
	}
	return c
}

// Scratch holds the buffers of Answer and Backward so that repeated calls
// do not allocate. The zero value is ready; it is not safe for concurrent
// use.
type Scratch struct {
	prods  [][]float64 // prods[i]: B × cells of ord[:i+1] (i ≤ k−2)
	dA     [2][]float64
	t      []float64 // the transposed answer or gradient, internal layout
	ord    []int     // the internal attribute order
	stride []int
	idx    []int
	pos    []int32 // internal cell → attrs' cell
}

func grow(b []float64, n int) []float64 {
	if cap(b) < n {
		return make([]float64, n)
	}
	return b[:n]
}

// outer fills s.prods for the first k−1 attributes of attrs and returns
// the last of them (B × c) with c.
func (l *Layout) outer(s *Scratch, p []float64, rows int, attrs []int) ([]float64, int) {
	k := len(attrs)
	for len(s.prods) < k-1 {
		s.prods = append(s.prods, nil)
	}
	W := l.Width
	a0 := attrs[0]
	n0 := l.Size[a0]
	A := grow(s.prods[0], rows*n0)
	s.prods[0] = A
	for b := range rows {
		copy(A[b*n0:(b+1)*n0], p[b*W+l.Off[a0]:b*W+l.Off[a0]+n0])
	}
	c := n0
	for i := 1; i < k-1; i++ {
		a, n := attrs[i], l.Size[attrs[i]]
		next := grow(s.prods[i], rows*c*n)
		s.prods[i] = next
		for b := range rows {
			src := A[b*c : (b+1)*c]
			pv := p[b*W+l.Off[a] : b*W+l.Off[a]+n]
			dst := next[b*c*n : (b+1)*c*n]
			for u, x := range src {
				d := dst[u*n : (u+1)*n]
				for v, y := range pv {
					d[v] = x * y
				}
			}
		}
		A, c = next, c*n
	}
	return A, c
}

// order returns the internal order of attrs (the smallest attribute moved
// last, so that the matrix products run along the long dimension c of the
// outer product) and, in s.pos, the index in attrs' layout of every
// internal cell v·c + u (v the last attribute's value, u the cell of the
// others).
func (l *Layout) order(s *Scratch, attrs []int) []int {
	k := len(attrs)
	small := k - 1
	for j := k - 2; j >= 0; j-- {
		if l.Size[attrs[j]] < l.Size[attrs[small]] {
			small = j
		}
	}
	s.ord = append(s.ord[:0], attrs[:small]...)
	s.ord = append(s.ord, attrs[small+1:]...)
	s.ord = append(s.ord, attrs[small])
	// stride[j]: the stride in attrs' layout of s.ord[j].
	s.stride = s.stride[:0]
	for _, a := range s.ord {
		st := 1
		for j := k - 1; attrs[j] != a; j-- {
			st *= l.Size[attrs[j]]
		}
		s.stride = append(s.stride, st)
	}
	cells := l.Cells(attrs)
	if cap(s.pos) < cells {
		s.pos = make([]int32, cells)
	}
	s.pos = s.pos[:cells]
	nl := l.Size[s.ord[k-1]]
	c := cells / nl
	idx := s.idx[:0]
	for range k - 1 {
		idx = append(idx, 0)
	}
	s.idx = idx
	base := 0 // attrs' index of internal cell u of the first k−1
	for u := range c {
		for v := range nl {
			s.pos[v*c+u] = int32(base + v*s.stride[k-1])
		}
		for j := k - 2; j >= 0; j-- {
			idx[j]++
			base += s.stride[j]
			if idx[j] < l.Size[s.ord[j]] {
				break
			}
			base -= idx[j] * s.stride[j]
			idx[j] = 0
		}
	}
	return s.ord
}

// Answer writes into dst (grown to the marginal's cells) the marginal over
// attrs (distinct, in the order given, last varying fastest) of the
// mixture p with rows rows, and returns it.
func (l *Layout) Answer(dst []float64, s *Scratch, p []float64, rows int, attrs []int) []float64 {
	cells := l.Cells(attrs)
	dst = grow(dst, cells)
	W := l.Width
	inv := 1 / float64(rows)
	if len(attrs) == 1 {
		a := attrs[0]
		clear(dst)
		for b := range rows {
			row := p[b*W+l.Off[a] : b*W+l.Off[a]+cells]
			for v, x := range row {
				dst[v] += x
			}
		}
		for v := range dst {
			dst[v] *= inv
		}
		return dst
	}
	ord := l.order(s, attrs)
	last := ord[len(ord)-1]
	nl := l.Size[last]
	A, c := l.outer(s, p, rows, ord)
	// Tᵀ = P_lastᵀ·A/B (nl × c): the kernel's inner loop runs along c.
	t := grow(s.t, cells)
	s.t = t
	nn.Gemm(true, false, nl, c, rows, inv, p[l.Off[last]:], W, A, c, 0, t, c)
	for i, x := range t {
		dst[s.pos[i]] = x
	}
	return dst
}

// Backward adds to dp (B × d', like p) the gradient of Σ_y g[y]·ans[y],
// where ans is Answer's marginal over attrs on p.
func (l *Layout) Backward(dp []float64, s *Scratch, p []float64, rows int, attrs []int, g []float64) {
	if len(g) != l.Cells(attrs) {
		panic(fmt.Sprintf("prodq: %d gradient values for %d cells", len(g), l.Cells(attrs)))
	}
	W := l.Width
	inv := 1 / float64(rows)
	k := len(attrs)
	if k == 1 {
		a := attrs[0]
		for b := range rows {
			row := dp[b*W+l.Off[a] : b*W+l.Off[a]+len(g)]
			for v := range row {
				row[v] += inv * g[v]
			}
		}
		return
	}
	ord := l.order(s, attrs)
	last := ord[k-1]
	nl := l.Size[last]
	A, c := l.outer(s, p, rows, ord)
	// Gt (nl × c) is g in the internal layout, transposed.
	gt := grow(s.t, len(g))
	s.t = gt
	for i := range gt {
		gt[i] = g[s.pos[i]]
	}
	// ans = Aᵀ·P_last/B with G = Gtᵀ (c × nl):
	// dP_last += A·G/B and dA = P_last·Gᵀ/B.
	nn.Gemm(false, true, rows, nl, c, inv, A, c, gt, c, 1, dp[l.Off[last]:], W)
	dA := grow(s.dA[0], rows*c)
	s.dA[0] = dA
	nn.Gemm(false, false, rows, c, nl, inv, p[l.Off[last]:], W, gt, c, 0, dA, c)
	// Back through the outer products: A_i[b,(u,v)] = A_{i−1}[b,u]·P_i[b,v].
	for i := k - 2; i >= 1; i-- {
		a, n := ord[i], l.Size[ord[i]]
		prev := s.prods[i-1]
		pc := c / n
		dPrev := grow(s.dA[1], rows*pc)
		s.dA[1] = dPrev
		for b := range rows {
			pv := p[b*W+l.Off[a] : b*W+l.Off[a]+n]
			dpv := dp[b*W+l.Off[a] : b*W+l.Off[a]+n]
			src := prev[b*pc : (b+1)*pc]
			d := dA[b*c : (b+1)*c]
			dst := dPrev[b*pc : (b+1)*pc]
			for u, x := range src {
				du := d[u*n : (u+1)*n]
				acc := 0.0
				for v, y := range pv {
					acc += du[v] * y
					dpv[v] += du[v] * x
				}
				dst[u] = acc
			}
		}
		s.dA[0], s.dA[1] = dPrev, dA
		dA, c = dPrev, pc
	}
	a0 := ord[0]
	for b := range rows {
		row := dp[b*W+l.Off[a0] : b*W+l.Off[a0]+c]
		for v, x := range dA[b*c : (b+1)*c] {
			row[v] += x
		}
	}
}
