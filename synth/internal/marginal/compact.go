package marginal

import (
	"math"

	"github.com/dpsql/dpsql/synth/pgm"
)

// Compact is a marginal held for a long time: densely, or as its non-zero
// cells when that is smaller, and in float32 when every value is one
// exactly (counts below 2^24, the usual case), in float64 otherwise. A
// table's large marginals are mostly zeros (adult's 364 3-way marginals have
// 20.9 M cells, 159 MB as float64, and 0.57 M non-zero counts, 4.6 MB as
// (index, float32) pairs); a large table's are dense, and float32 halves
// them. Every method answers exactly what the float64 marginal would. The
// zero value is an empty marginal.
type Compact struct {
	n       int
	dense   []float64 // the marginal, if held densely in float64
	dense32 []float32 // or in float32
	idx     []uint32  // else its non-zero cells, ascending,
	val     []float64 // and their values in float64
	val32   []float32 // or in float32
}

// NewCompact returns x as a Compact. In float32 when exact: sparse when
// fewer than half the cells are non-zero (8 bytes per non-zero against 4 per
// cell), else a dense copy. In float64: sparse when fewer than two thirds are
// non-zero (12 bytes against 8), else x itself (not copied).
func NewCompact(x []float64) Compact {
	nz, exact32 := 0, true
	for _, v := range x {
		if v != 0 {
			nz++
			exact32 = exact32 && float64(float32(v)) == v
		}
	}
	n := len(x)
	switch {
	case n > math.MaxUint32 && exact32, exact32 && 2*nz >= n:
		c := Compact{n: n, dense32: make([]float32, n)}
		for i, v := range x {
			c.dense32[i] = float32(v)
		}
		return c
	case n > math.MaxUint32, !exact32 && 3*nz >= 2*n:
		return Compact{n: n, dense: x}
	}
	c := Compact{n: n, idx: make([]uint32, 0, nz)}
	if exact32 {
		c.val32 = make([]float32, 0, nz)
	} else {
		c.val = make([]float64, 0, nz)
	}
	for i, v := range x {
		if v != 0 {
			c.idx = append(c.idx, uint32(i))
			if exact32 {
				c.val32 = append(c.val32, float32(v))
			} else {
				c.val = append(c.val, v)
			}
		}
	}
	return c
}

// Len is the number of cells.
func (c *Compact) Len() int { return c.n }

// Sparse reports whether c holds only its non-zero cells.
func (c *Compact) Sparse() bool { return c.dense == nil && c.dense32 == nil && c.n > 0 }

// Bytes is the memory c holds its cells in.
func (c *Compact) Bytes() int {
	return 8*(len(c.dense)+len(c.val)) + 4*(len(c.dense32)+len(c.val32)+len(c.idx))
}

// Expand writes the marginal into dst (resized if too small) and returns
// it.
func (c *Compact) Expand(dst []float64) []float64 {
	if cap(dst) < c.n {
		dst = make([]float64, c.n)
	}
	dst = dst[:c.n]
	switch {
	case c.dense != nil:
		copy(dst, c.dense)
		return dst
	case c.dense32 != nil:
		for i, v := range c.dense32 {
			dst[i] = float64(v)
		}
		return dst
	}
	clear(dst)
	if c.val32 != nil {
		for k, i := range c.idx {
			dst[i] = float64(c.val32[k])
		}
		return dst
	}
	for k, i := range c.idx {
		dst[i] = c.val[k]
	}
	return dst
}

// L1Total returns ‖c − y‖₁ for a non-negative y whose cells sum to total
// (a model's marginal): for a sparse c, ‖c − y‖₁ = total + Σ_{c_i ≠ 0}(|c_i − y_i| −
// y_i), which reads only y's cells where c is non-zero. It differs from
// the package's L1 by the round-off of Σy against total.
func (c *Compact) L1Total(y []float64, total float64) float64 {
	if len(y) != c.n {
		panic("marginal: length mismatch")
	}
	switch {
	case c.dense32 != nil:
		return l1Of(c.dense32, y)
	case c.dense != nil || c.n == 0:
		return L1(c.dense, y)
	case c.val32 != nil:
		return sparseL1(c.idx, c.val32, y, total)
	}
	return sparseL1(c.idx, c.val, y, total)
}

// l1Of is L1 for x held in float32.
func l1Of(x []float32, y []float64) float64 {
	y = y[:len(x)]
	var s float64
	for i, v := range x {
		s += math.Abs(float64(v) - y[i])
	}
	return s
}

func sparseL1[T float32 | float64](idx []uint32, val []T, y []float64, total float64) float64 {
	s := total
	for k, i := range idx {
		s += math.Abs(float64(val[k])-y[i]) - y[i]
	}
	return s
}

// ProjectTo is ProjectTo for the marginal c over attrs.
func (c *Compact) ProjectTo(dst []float64, dom *pgm.Domain, attrs []int, sub []int) []float64 {
	switch {
	case c.dense32 != nil:
		return projectTo(dst, dom, attrs, c.dense32, sub)
	case c.dense != nil || c.n == 0:
		return ProjectTo(dst, dom, attrs, c.dense, sub)
	case c.val32 != nil:
		return projectSparse(dst, dom, attrs, c.n, c.idx, c.val32, sub)
	}
	return projectSparse(dst, dom, attrs, c.n, c.idx, c.val, sub)
}

func projectSparse[T float32 | float64](dst []float64, dom *pgm.Domain, attrs []int, n int, idx []uint32, val []T, sub []int) []float64 {
	m := dom.Cells(sub)
	if cap(dst) < m {
		dst = make([]float64, m)
	}
	dst = dst[:m]
	clear(dst)
	if n != dom.Cells(attrs) {
		panic("marginal: marginal length does not match its attributes")
	}
	var strideBuf, sizeBuf [16]int
	stride, size := projection(strideBuf[:0], sizeBuf[:0], dom, attrs, sub)
	for k, f := range idx {
		off, rest := 0, int(f)
		for i := len(attrs) - 1; i >= 0; i-- {
			off += (rest % size[i]) * stride[i]
			rest /= size[i]
		}
		dst[off] += float64(val[k])
	}
	return dst
}
