package pgm

import (
	"slices"

	"github.com/dpsql/dpsql/synth/pgm/internal/kernel"
)

// Two-factor product sums as matrix products. Most of a wide table's
// scoring is steps Σ A·B over two tables (72 % of the cells wide30's lazy
// rounds sweep), which productSumLoop walks cell by cell with the tables'
// own strides: rows of 2–38 cells, most read or written across strides.
// Laid out as batches of matrices, the same sums are C[b] = A[b]·B[b] over
// the shared summed attributes, whose rows are unit-stride vector updates
// (kernel.Axpy); relaying the tables costs a pass over each, paid back when
// the product sweeps several times their cells.
//
// The attributes of a two-factor step fall into roles:
//
//	batch: both factors and the result
//	rows:  the first factor and the result
//	cols:  the second factor and the result
//	inner: both factors, summed out
//
// and an attribute of one factor alone that the result drops is summed out
// of that factor while it is relaid. A step with an attribute of neither
// factor stays with productSumLoop.
type contraction struct {
	batch, rows, cols, inner []int
	nb, nr, nc, nk           int
	// relayA, relayB and relayC report which tables are not already laid
	// out as the matrices ([batch][rows][inner], [batch][inner][cols],
	// [batch][rows][cols]).
	relayA, relayB, relayC bool
}

// Cost model (nanoseconds, roughly, measured on wide30's scoring):
// productSumLoop sweeps a cell in about loopCell, and a relay costs about
// that per cell read (twice for one that sums, whose table is cleared
// first); the matrix product costs axpyCell per cell and axpyRow per
// vector update. A step is contracted when its planned cost is below
// productSumLoop's by contractGain (the model is rough: from 0.8 to 2 the
// scoring benchmark's time moved within its noise).
const (
	loopCell     = 1.5
	axpyCell     = 0.3
	axpyRow      = 8
	contractGain = 1.25
	// minContractRow is the shortest result row worth a vector update.
	minContractRow = 8
)

// planContraction returns the roles of a two-factor step over the
// ascending over into out, with the longer of the result's two sides as
// columns (a's and b's roles are swapped then: swapped reports it). ok is
// false when the step has no such form; cheaper reports whether the form
// is planned cheaper than productSumLoop, with its relaid tables within
// the pool of tables (maxPooled): a larger one would be a new allocation
// per step, garbage that raised the scoring benchmark's allocations by
// 80 %.
func planContraction(dom *Domain, a, b factor, over, out []int) (c contraction, swapped, ok, cheaper bool) {
	var sumA, sumB []int
	for _, x := range over {
		ia, ib, io := slices.Contains(a.attrs, x), slices.Contains(b.attrs, x), slices.Contains(out, x)
		switch {
		case ia && ib && io:
			c.batch = append(c.batch, x)
		case ia && io:
			c.rows = append(c.rows, x)
		case ib && io:
			c.cols = append(c.cols, x)
		case ia && ib:
			c.inner = append(c.inner, x)
		case ia:
			sumA = append(sumA, x)
		case ib:
			sumB = append(sumB, x)
		default:
			// An attribute of neither factor: the result broadcasts along
			// it, or the sum counts its cells.
			return c, false, false, false
		}
	}
	c.nb, c.nr, c.nc, c.nk = dom.Cells(c.batch), dom.Cells(c.rows), dom.Cells(c.cols), dom.Cells(c.inner)
	if c.nr > c.nc {
		c.rows, c.cols = c.cols, c.rows
		c.nr, c.nc = c.nc, c.nr
		a, b = b, a
		sumA, sumB = sumB, sumA
		swapped = true
	}
	c.relayA = len(sumA) > 0 || !slices.Equal(a.attrs, slices.Concat(c.batch, c.rows, c.inner))
	c.relayB = len(sumB) > 0 || !slices.Equal(b.attrs, slices.Concat(c.batch, c.inner, c.cols))
	c.relayC = !slices.Equal(out, slices.Concat(c.batch, c.rows, c.cols))
	cost := axpyCell*float64(c.nb)*float64(c.nr)*float64(c.nc)*float64(c.nk) +
		axpyRow*float64(c.nb)*float64(c.nr)*float64(c.nk)
	relay := func(read, write int, summed bool) bool {
		if write > maxPooled {
			return false
		}
		if summed {
			cost += 2 * loopCell * float64(read)
		} else {
			cost += loopCell * float64(read)
		}
		return true
	}
	if c.nc < minContractRow ||
		c.relayA && !relay(len(a.vals), c.nb*c.nr*c.nk, len(sumA) > 0) ||
		c.relayB && !relay(len(b.vals), c.nb*c.nk*c.nc, len(sumB) > 0) ||
		c.relayC && !relay(c.nb*c.nr*c.nc, c.nb*c.nr*c.nc, true) {
		return c, swapped, true, false
	}
	return c, swapped, true, contractGain*cost < loopCell*float64(dom.Cells(over))
}

// contract2 writes Σ_{over \ out} a·b into dst (all zeros, laid out as out)
// as a batch of matrix products when planContraction plans it cheaper, and
// reports whether it did. Each result cell sums its terms in the order of
// the inner attributes' cells: a different rounding from productSumLoop's.
func contract2(dst []float64, dom *Domain, a, b factor, over, out []int) bool {
	c, swapped, ok, cheaper := planContraction(dom, a, b, over, out)
	if !ok || !cheaper {
		return false
	}
	c.run(dst, dom, a, b, swapped, out)
	return true
}

// run computes the contraction c of a and b into dst (all zeros, laid out
// as out), their roles swapped if swapped.
func (c *contraction) run(dst []float64, dom *Domain, a, b factor, swapped bool, out []int) {
	if swapped {
		a, b = b, a
	}
	var bufs []*[]float64
	// relay lays f out as the concatenated attributes (summing out f's
	// others) in a pooled table.
	relay := func(f factor, layout ...[]int) []float64 {
		attrs := slices.Concat(layout...)
		buf := getTable(dom.Cells(attrs))
		bufs = append(bufs, buf)
		if len(attrs) == len(f.attrs) {
			permute(*buf, f.vals, dom, f.attrs, attrs)
			return *buf
		}
		clear(*buf)
		return productSumZeroed(*buf, dom, []factor{f}, slices.Sorted(slices.Values(f.attrs)), attrs).vals
	}
	av, bv, res := a.vals, b.vals, dst
	if c.relayA {
		av = relay(a, c.batch, c.rows, c.inner)
	}
	if c.relayB {
		bv = relay(b, c.batch, c.inner, c.cols)
	}
	if c.relayC {
		buf := getTable(len(dst))
		bufs = append(bufs, buf)
		res = *buf
		clear(res)
	}
	nr, nc, nk := c.nr, c.nc, c.nk
	for t := range c.nb {
		at, bt, ct := av[t*nr*nk:(t+1)*nr*nk], bv[t*nk*nc:(t+1)*nk*nc], res[t*nr*nc:(t+1)*nr*nc]
		for r := range nr {
			row := ct[r*nc : (r+1)*nc]
			for k, x := range at[r*nk : (r+1)*nk] {
				if x != 0 {
					kernel.Axpy(row, x, bt[k*nc:(k+1)*nc])
				}
			}
		}
	}
	if c.relayC {
		permute(dst, res, dom, slices.Concat(c.batch, c.rows, c.cols), out)
	}
	for _, buf := range bufs {
		putTable(buf)
	}
}

// minMergeGain is how many times smaller than the step's sweep the
// product of two of its factors must be for productSumMerged to form it.
const minMergeGain = 8

// productSumMerged is productSumZeroed for three factors or more when two
// of them have a small product: it multiplies those two into one table
// over their attributes, then sums the product of one factor fewer (and
// two factors may be a matrix product). On wide30 the steps of three
// factors were a quarter of scoring's cells, all eliminating an attribute
// that every factor holds, with two factors over nearly the same
// attributes. It reports false, computing nothing, when no pair is small
// enough. The products are regrouped: round-off differs.
func productSumMerged(dst []float64, dom *Domain, fs []factor, over, out []int) bool {
	var u []int // the pair's attributes
	bi, bj, best := -1, -1, dom.Cells(over)/minMergeGain
	for i := range fs {
		for j := i + 1; j < len(fs); j++ {
			ij := unionSorted(fs[i].attrs, fs[j].attrs)
			if c := dom.Cells(ij); c <= best && c <= maxPooled {
				bi, bj, best, u = i, j, c, ij
			}
		}
	}
	if bi < 0 {
		return false
	}
	buf := getTable(best)
	clear(*buf)
	merged := productSumZeroed(*buf, dom, []factor{fs[bi], fs[bj]}, u, u)
	rest := make([]factor, 0, len(fs)-1)
	for k, f := range fs {
		if k != bi && k != bj {
			rest = append(rest, f)
		}
	}
	productSumZeroed(dst, dom, append(rest, merged), over, out)
	putTable(buf)
	return true
}

// unionSorted returns the ascending union of two attribute lists.
func unionSorted(a, b []int) []int {
	u := slices.Concat(a, b)
	slices.Sort(u)
	return slices.Compact(u)
}

// permute writes src, a table over the attributes from, into dst laid
// out as to, a permutation of from: dst is written in order, src read
// along its strides.
func permute(dst, src []float64, dom *Domain, from, to []int) {
	k := len(to)
	if k == 0 {
		dst[0] = src[0]
		return
	}
	sizes := make([]int, k)
	strides := [][]int{make([]int, k), make([]int, k)} // src's, then dst's
	total := 1
	for i, a := range to {
		sizes[i] = dom.sizes[a]
		total *= sizes[i]
	}
	for i, s := k-1, 1; i >= 0; i-- {
		strides[1][i] = s
		s *= sizes[i]
	}
	for j, s := len(from)-1, 1; j >= 0; j-- {
		strides[0][slices.Index(to, from[j])] = s
		s *= dom.sizes[from[j]]
	}
	sizes, strides = coalesce(sizes, strides)
	k = len(sizes)
	n, st := sizes[k-1], strides[0][k-1]
	digit := make([]int, k)
	for o, off := 0, 0; o < total; o += n {
		row := dst[o : o+n]
		if st == 1 {
			copy(row, src[off:off+n])
		} else {
			for i, s := 0, off; i < n; i, s = i+1, s+st {
				row[i] = src[s]
			}
		}
		for d := k - 2; d >= 0; d-- {
			digit[d]++
			off += strides[0][d]
			if digit[d] < sizes[d] {
				break
			}
			off -= strides[0][d] * sizes[d]
			digit[d] = 0
		}
	}
}
