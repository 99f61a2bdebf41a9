package marginal

import (
	"math"
	"math/bits"
	"slices"

	"github.com/dpsql/dpsql/synth/pgm"
)

// Compact is a marginal held for a long time, in the fewest bytes its
// cells allow. A table's large marginals are mostly zeros, and their counts
// mostly small: adult's 364 3-way marginals have 20.9 M cells (159 MB as
// float64) and 0.57 M non-zero counts; an adult-like table of 10 M rows has
// 7.8 M non-zero counts in the same cells: 84 MB as dense uint32, 51 MB as
// the smaller of that and (index, uint32) pairs for each marginal, 18 MB as
// below (12 MB at 1 M rows). Counts (every value a whole number in [0, 2³²)), as a data set's
// marginals are, are held exactly:
//
//   - which cells are non-zero: their indexes (4 bytes each) when few are,
//     else a bitmap (one bit per cell), whichever is smaller;
//   - each non-zero count in 2 bytes, those of 65 535 or more in 4 more
//     bytes beside (a table's few large cells).
//
// Other values (fractions) are held densely as float64, or as (index,
// value) pairs when fewer than two thirds of the cells are non-zero. The
// zero value is an empty marginal.
type Compact struct {
	n     int
	dense []float64 // fractions held densely
	idx   []uint32  // the non-zero cells, ascending (pairs)
	bits  []uint64  // bit i%64 of word i/64: cell i is non-zero (bitmap)
	val   []float64 // fractions as pairs: the non-zero values
	cnt   []uint16  // counts: each non-zero cell's count, or bigCount
	big   []uint32  // counts: those of bigCount or more, in cell order
}

// bigCount marks, in cnt, a count held in big.
const bigCount = math.MaxUint16

// CompactOf is NewCompact for an x its caller goes on using (a lent
// buffer): the Compact never holds x itself.
func CompactOf(x []float64) Compact {
	c := NewCompact(x)
	if c.dense != nil {
		c.dense = slices.Clone(x)
	}
	return c
}

// NewCompact returns x as a Compact: counts in the smaller of their two
// forms; fractions sparse below two thirds non-zero (12 bytes a pair
// against 8 a cell), else x itself, not copied.
func NewCompact(x []float64) Compact {
	nz, big := 0, 0
	counts := len(x) <= math.MaxUint32
	for _, v := range x {
		if v != 0 {
			nz++
			counts = counts && v > 0 && v <= math.MaxUint32 && v == math.Trunc(v)
			if v >= bigCount {
				big++
			}
		}
	}
	switch {
	case !counts && (3*nz >= 2*len(x) || len(x) > math.MaxUint32):
		return Compact{n: len(x), dense: x}
	case !counts:
		c := Compact{n: len(x), idx: make([]uint32, 0, nz), val: make([]float64, 0, nz)}
		for i, v := range x {
			if v != 0 {
				c.idx = append(c.idx, uint32(i))
				c.val = append(c.val, v)
			}
		}
		return c
	}
	c := Compact{n: len(x), cnt: make([]uint16, 0, nz)}
	if big > 0 {
		c.big = make([]uint32, 0, big)
	}
	words := (len(x) + 63) / 64
	if 8*words < 4*nz { // a bitmap is smaller than the indexes
		c.bits = make([]uint64, words)
	} else {
		c.idx = make([]uint32, 0, nz)
	}
	for i, v := range x {
		if v == 0 {
			continue
		}
		if c.bits != nil {
			c.bits[i/64] |= 1 << (i % 64)
		} else {
			c.idx = append(c.idx, uint32(i))
		}
		if v >= bigCount {
			c.cnt = append(c.cnt, bigCount)
			c.big = append(c.big, uint32(v))
		} else {
			c.cnt = append(c.cnt, uint16(v))
		}
	}
	return c
}

// Len is the number of cells.
func (c *Compact) Len() int { return c.n }

// Sparse reports whether c holds only its non-zero cells (not a dense
// table of every cell).
func (c *Compact) Sparse() bool { return c.dense == nil && c.n > 0 }

// Bytes is the memory c's cells take.
func (c *Compact) Bytes() int {
	return 8*len(c.dense) + 4*len(c.idx) + 8*len(c.bits) + 8*len(c.val) + 2*len(c.cnt) + 4*len(c.big)
}

// nonZero calls fn with each non-zero cell and its value, in cell order.
func (c *Compact) nonZero(fn func(i int, v float64)) {
	switch {
	case c.dense != nil:
		for i, v := range c.dense {
			if v != 0 {
				fn(i, v)
			}
		}
	case c.val != nil:
		for k, i := range c.idx {
			fn(int(i), c.val[k])
		}
	case c.bits != nil:
		big, k := c.big, 0
		for w, word := range c.bits {
			for word != 0 {
				i := w*64 + bits.TrailingZeros64(word)
				word &= word - 1
				var v float64
				v, big = count(c.cnt[k], big)
				k++
				fn(i, v)
			}
		}
	default:
		big := c.big
		for k, i := range c.idx {
			var v float64
			v, big = count(c.cnt[k], big)
			fn(int(i), v)
		}
	}
}

// count is the count held as c in cnt: c itself, or, if it is bigCount, the
// next of the big counts, which it returns advanced past that one.
func count(c uint16, big []uint32) (float64, []uint32) {
	if c != bigCount {
		return float64(c), big
	}
	return float64(big[0]), big[1:]
}

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
	c.nonZero(func(i int, v float64) { dst[i] = v })
	return dst
}

// L1Total returns ‖c − y‖₁ for a non-negative y whose cells sum to total
// (a model's marginal): for a sparse c, ‖c − y‖₁ = total + Σ_{c_i ≠ 0}(|c_i − y_i| −
// y_i), which reads only y's cells where c is non-zero. It differs from
// the package's L1 by the round-off of Σy against total; a dense c's is
// L1's, bit for bit. It is AIM's scoring loop: no closure, no allocation.
func (c *Compact) L1Total(y []float64, total float64) float64 {
	if len(y) != c.n {
		panic("marginal: length mismatch")
	}
	if c.dense != nil || c.n == 0 {
		return L1(c.dense, y)
	}
	s := total
	switch {
	case c.val != nil:
		for k, i := range c.idx {
			s += math.Abs(c.val[k]-y[i]) - y[i]
		}
	case c.bits != nil:
		cnt, big := c.cnt, c.big
		k := 0
		for w, word := range c.bits {
			if word == 0 {
				continue
			}
			yw := y[w*64 : min(w*64+64, len(y))]
			for word != 0 {
				j := bits.TrailingZeros64(word)
				word &= word - 1
				var v float64
				v, big = count(cnt[k], big)
				k++
				yi := yw[j]
				s += math.Abs(v-yi) - yi
			}
		}
	default:
		cnt, big := c.cnt, c.big
		for k, i := range c.idx {
			var v float64
			v, big = count(cnt[k], big)
			yi := y[i]
			s += math.Abs(v-yi) - yi
		}
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
	c.nonZero(func(f int, v float64) {
		off, rest := 0, f
		for i := len(attrs) - 1; i >= 0; i-- {
			off += (rest % size[i]) * stride[i]
			rest /= size[i]
		}
		dst[off] += v
	})
	return dst
}
