package marginal

import (
	"math"

	"github.com/dpsql/dpsql/synth/pgm"
)

// Compact is a marginal held for a long time: densely, or as its non-zero
// cells when that is smaller. A table's large marginals are mostly zeros
// (adult's 364 3-way marginals have 20.9 M cells, 159 MB as float64, and
// 0.57 M non-zero counts, 6.5 MB as (index, value) pairs). The zero value
// is an empty marginal.
type Compact struct {
	n     int
	dense []float64 // the marginal, if held densely
	idx   []uint32  // else its non-zero cells, ascending
	val   []float64 // and their values
}

// NewCompact returns x as a Compact: sparse when fewer than two thirds of
// its cells are non-zero (12 bytes per non-zero against 8 per cell), else
// x itself (not copied).
func NewCompact(x []float64) Compact {
	nz := 0
	for _, v := range x {
		if v != 0 {
			nz++
		}
	}
	if 3*nz >= 2*len(x) || len(x) > math.MaxUint32 {
		return Compact{n: len(x), dense: x}
	}
	c := Compact{n: len(x), idx: make([]uint32, 0, nz), val: make([]float64, 0, nz)}
	for i, v := range x {
		if v != 0 {
			c.idx = append(c.idx, uint32(i))
			c.val = append(c.val, v)
		}
	}
	return c
}

// Len is the number of cells.
func (c *Compact) Len() int { return c.n }

// Sparse reports whether c holds only its non-zero cells.
func (c *Compact) Sparse() bool { return c.dense == nil && c.n > 0 }

// Expand writes the marginal into dst (resized if too small) and returns
// it.
func (c *Compact) Expand(dst []float64) []float64 {
	if cap(dst) < c.n {
		dst = make([]float64, c.n)
	}
	dst = dst[:c.n]
	if c.dense != nil {
		copy(dst, c.dense)
		return dst
	}
	clear(dst)
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
	if c.dense != nil || c.n == 0 {
		return L1(c.dense, y)
	}
	s := total
	for k, i := range c.idx {
		s += math.Abs(c.val[k]-y[i]) - y[i]
	}
	return s
}

// ProjectTo is ProjectTo for the marginal c over attrs.
func (c *Compact) ProjectTo(dst []float64, dom *pgm.Domain, attrs []int, sub []int) []float64 {
	if c.dense != nil || c.n == 0 {
		return ProjectTo(dst, dom, attrs, c.dense, sub)
	}
	n := dom.Cells(sub)
	if cap(dst) < n {
		dst = make([]float64, n)
	}
	dst = dst[:n]
	clear(dst)
	if c.n != dom.Cells(attrs) {
		panic("marginal: marginal length does not match its attributes")
	}
	var strideBuf, sizeBuf [16]int
	stride, size := projection(strideBuf[:0], sizeBuf[:0], dom, attrs, sub)
	for k, f := range c.idx {
		off, rest := 0, int(f)
		for i := len(attrs) - 1; i >= 0; i-- {
			off += (rest % size[i]) * stride[i]
			rest /= size[i]
		}
		dst[off] += c.val[k]
	}
	return dst
}
