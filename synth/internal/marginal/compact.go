package marginal

import (
	"math"

	"github.com/dpsql/dpsql/synth/pgm"
)

// Compact is a marginal held for a long time: densely, or as its non-zero
// cells when that is smaller. A table's large marginals are mostly zeros
// (adult's 364 3-way marginals have 20.9 M cells, 159 MB as float64, and
// 0.57 M non-zero counts, 6.5 MB as (index, value) pairs). Counts (every
// value a whole number in [0, 2³²)), as a data set's marginals are, are
// held as uint32, exactly: half the dense table, two thirds of the pairs
// (a wide table's candidates' true answers were most of AIM's live heap;
// docs/aim-performance.md, fourth pass). The zero value is an empty
// marginal.
type Compact struct {
	n      int
	sparse bool
	dense  []float64 // the marginal, if held densely and not as counts
	idx    []uint32  // if sparse: the non-zero cells, ascending
	val    []float64 // and their values, if not counts
	cnt    []uint32  // counts: every cell (dense) or the non-zero ones (sparse)
}

// NewCompact returns x as a Compact: sparse when that takes fewer bytes,
// else dense (x itself, not copied, unless it holds counts). Pairs cost 12
// bytes per non-zero against 8 per cell, so fractions go sparse below two
// thirds non-zero; counts cost 8 against 4, so below one half.
func NewCompact(x []float64) Compact {
	nz := 0
	counts := len(x) <= math.MaxUint32
	for _, v := range x {
		if v != 0 {
			nz++
			counts = counts && v > 0 && v <= math.MaxUint32 && v == math.Trunc(v)
		}
	}
	if (counts && 2*nz >= len(x)) || 3*nz >= 2*len(x) || len(x) > math.MaxUint32 {
		if !counts {
			return Compact{n: len(x), dense: x}
		}
		c := Compact{n: len(x), cnt: make([]uint32, len(x))}
		for i, v := range x {
			c.cnt[i] = uint32(v)
		}
		return c
	}
	c := Compact{n: len(x), sparse: true, idx: make([]uint32, 0, nz)}
	if counts {
		c.cnt = make([]uint32, 0, nz)
	} else {
		c.val = make([]float64, 0, nz)
	}
	for i, v := range x {
		if v != 0 {
			c.idx = append(c.idx, uint32(i))
			if counts {
				c.cnt = append(c.cnt, uint32(v))
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
func (c *Compact) Sparse() bool { return c.sparse }

// value is the k-th stored value of a sparse c.
func (c *Compact) value(k int) float64 {
	if c.val != nil {
		return c.val[k]
	}
	return float64(c.cnt[k])
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
	case !c.sparse:
		for i, v := range c.cnt {
			dst[i] = float64(v)
		}
	default:
		clear(dst)
		for k, i := range c.idx {
			dst[i] = c.value(k)
		}
	}
	return dst
}

// L1Total returns ‖c − y‖₁ for a non-negative y whose cells sum to total
// (a model's marginal): for a sparse c, ‖c − y‖₁ = total + Σ_{c_i ≠ 0}(|c_i − y_i| −
// y_i), which reads only y's cells where c is non-zero. It differs from
// the package's L1 by the round-off of Σy against total; a dense c's is
// L1's, bit for bit.
func (c *Compact) L1Total(y []float64, total float64) float64 {
	if len(y) != c.n {
		panic("marginal: length mismatch")
	}
	switch {
	case c.dense != nil || c.n == 0:
		return L1(c.dense, y)
	case !c.sparse:
		return l1(c.cnt, y)
	}
	s := total
	for k, i := range c.idx {
		v := c.value(k)
		s += math.Abs(v-y[i]) - y[i]
	}
	return s
}

// ProjectTo is ProjectTo for the marginal c over attrs.
func (c *Compact) ProjectTo(dst []float64, dom *pgm.Domain, attrs []int, sub []int) []float64 {
	switch {
	case c.dense != nil || c.n == 0:
		return ProjectTo(dst, dom, attrs, c.dense, sub)
	case !c.sparse:
		return projectTo(dst, dom, attrs, c.cnt, sub) // no float64 copy of the counts
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
		dst[off] += c.value(k)
	}
	return dst
}
