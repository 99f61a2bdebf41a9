package kernel

import (
	"math"
	"slices"
)

// Reduction sums (or maximises) a row-major table over some of its axes,
// giving the sub-table over the kept axes in their original order. It works
// axis-run by axis-run with contiguous loops instead of an index map, so it
// has no scatter and no loop-carried dependence through memory. A Reduction
// is immutable and safe for concurrent use.
type Reduction struct {
	steps []step
	in    int // cells of the input table
	out   int // cells of the result
}

// step reduces a table viewed as outer × s × inner over its middle axis.
type step struct{ outer, s, inner int }

// NewReduction plans the reduction of a table with the given axis sizes onto
// the axes keep (ascending positions).
func NewReduction(sizes []int, keep []int) *Reduction {
	r := &Reduction{in: 1, out: 1}
	type axis struct {
		size int
		kept bool
	}
	axes := make([]axis, 0, len(sizes))
	for d, s := range sizes {
		r.in *= s
		k := slices.Contains(keep, d) || s == 1
		if k {
			r.out *= s
		}
		// Merge runs of axes that are all kept or all dropped.
		if n := len(axes); n > 0 && axes[n-1].kept == k {
			axes[n-1].size *= s
			continue
		}
		axes = append(axes, axis{s, k})
	}
	// Drop the largest run first so that later steps read less.
	for {
		best := -1
		for i, a := range axes {
			if !a.kept && (best < 0 || a.size > axes[best].size) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		outer, inner := 1, 1
		for _, a := range axes[:best] {
			outer *= a.size
		}
		for _, a := range axes[best+1:] {
			inner *= a.size
		}
		r.steps = append(r.steps, step{outer, axes[best].size, inner})
		// Remove the run and merge its kept neighbours.
		axes = slices.Delete(axes, best, best+1)
		if best > 0 && best < len(axes) {
			axes[best-1].size *= axes[best].size
			axes = slices.Delete(axes, best, best+1)
		}
	}
	return r
}

// In is the number of input cells; Out the number of output cells.
func (r *Reduction) In() int  { return r.in }
func (r *Reduction) Out() int { return r.out }

// Scratch is the scratch length Sum and Max need.
func (r *Reduction) Scratch() int {
	if len(r.steps) < 2 {
		return 0
	}
	// Intermediate results alternate between two halves of the scratch.
	return 2 * (r.in / r.steps[0].s)
}

// Sum writes into dst the sums of src over the dropped axes:
//
//	dst[:] = 0; for i := range src { dst[idx[i]] += src[i] }
//
// where idx is the Map of the same axes. scratch must hold Scratch() cells.
func (r *Reduction) Sum(dst, src, scratch []float64) { r.apply(dst, src, scratch, false) }

// Max is Sum with max instead of +; an empty reduction gives -Inf.
func (r *Reduction) Max(dst, src, scratch []float64) { r.apply(dst, src, scratch, true) }

// Par runs f over disjoint ranges [lo, hi) covering [0, n), possibly
// concurrently, and returns when all have finished; cells is the amount of
// work, for deciding how many ranges to use.
type Par func(cells, n int, f func(lo, hi int))

// SumPar is Sum with its first (largest) step split by par.
func (r *Reduction) SumPar(dst, src, scratch []float64, par Par) {
	r.applyPar(dst, src, scratch, false, par)
}

// MaxPar is Max with its first (largest) step split by par.
func (r *Reduction) MaxPar(dst, src, scratch []float64, par Par) {
	r.applyPar(dst, src, scratch, true, par)
}

func (r *Reduction) apply(dst, src, scratch []float64, isMax bool) {
	r.applyPar(dst, src, scratch, isMax, nil)
}

func (r *Reduction) applyPar(dst, src, scratch []float64, isMax bool, par Par) {
	if len(src) != r.in || len(dst) != r.out {
		panic(errLength)
	}
	if len(r.steps) == 0 {
		copy(dst, src)
		return
	}
	cur := src
	half := len(scratch) / 2
	for i, st := range r.steps {
		var next []float64
		switch {
		case i == len(r.steps)-1:
			next = dst
		case i%2 == 0:
			next = scratch[:st.outer*st.inner]
		default:
			next = scratch[half : half+st.outer*st.inner]
		}
		switch {
		case i > 0 || par == nil || (st.outer == 1 && st.inner < 16):
			// One block of fewer than 16 columns: reduceAxis's
			// accumulators per column (reduceSmall) beat the columns split
			// among workers, each a chain of dependent additions
			// (reduceColumns), and give the result Sum and SumNarrow give.
			reduceAxis(next, cur, st, isMax)
		case st.outer > 1:
			// Blocks of the outer axis write disjoint parts of next. (The
			// closures capture copies, so that the variables of the loop,
			// which they would otherwise move to the heap, stay on the
			// stack when par is nil.)
			in, out, from, to := st.s*st.inner, st.inner, cur, next
			par(len(from), st.outer, func(lo, hi int) {
				reduceAxis(to[lo*out:hi*out], from[lo*in:hi*in], step{hi - lo, st.s, st.inner}, isMax)
			})
		default:
			// One block: columns of the s × inner matrix are disjoint.
			from, to := cur, next
			par(len(from), st.inner, func(lo, hi int) {
				reduceColumns(to[lo:hi], from, st.s, st.inner, lo, isMax)
			})
		}
		cur = next
	}
}

// reduceAxis reduces src (outer × s × inner) over its middle axis into dst
// (outer × inner).
func reduceAxis(dst, src []float64, st step, isMax bool) {
	if len(src) != st.outer*st.s*st.inner || len(dst) != st.outer*st.inner {
		panic(errLength)
	}
	reduceAxisArch(dst, src, st, isMax)
}

// reduceAxisGo is reduceAxis in Go, the reference for the assembly: with
// inner < 16 a maximum skips NaNs; otherwise (and in reduceColumns) a NaN in
// the first row of a block is kept and NaNs in the other rows are skipped.
func reduceAxisGo(dst, src []float64, st step, isMax bool) {
	inner, s := st.inner, st.s
	for o := range st.outer {
		d := dst[o*inner : (o+1)*inner]
		base := src[o*s*inner : (o+1)*s*inner]
		switch {
		case inner < 16:
			// Few outputs per block: reduce each in registers, with four
			// independent accumulators to hide the add latency.
			for i := range d {
				if isMax {
					d[i] = stridedMax(base[i:], s, inner)
				} else {
					d[i] = stridedSum(base[i:], s, inner)
				}
			}
		case isMax:
			copy(d, base[:inner])
			for j := 1; j < s; j++ {
				row := base[j*inner : (j+1)*inner]
				row = row[:len(d)]
				for i, v := range row {
					if v > d[i] {
						d[i] = v
					}
				}
			}
		default:
			copy(d, base[:inner])
			for j := 1; j < s; j++ {
				row := base[j*inner : (j+1)*inner]
				row = row[:len(d)]
				for i, v := range row {
					d[i] += v
				}
			}
		}
	}
}

// reduceColumns reduces columns [lo, lo+len(dst)) of the s × inner matrix
// src into dst.
func reduceColumns(dst, src []float64, s, inner, lo int, isMax bool) {
	reduceColumnsArch(dst, src, s, inner, lo, isMax)
}

func reduceColumnsGo(dst, src []float64, s, inner, lo int, isMax bool) {
	hi := lo + len(dst)
	copy(dst, src[lo:hi])
	for j := 1; j < s; j++ {
		row := src[j*inner+lo : j*inner+hi]
		row = row[:len(dst)]
		for i, v := range row {
			if isMax {
				if v > dst[i] {
					dst[i] = v
				}
			} else {
				dst[i] += v
			}
		}
	}
}

// stridedSum is Σ_{j<n} x[j·stride].
func stridedSum(x []float64, n, stride int) float64 {
	var a0, a1, a2, a3 float64
	j, k := 0, 0
	for ; j+3 < n; j += 4 {
		a0 += x[k]
		a1 += x[k+stride]
		a2 += x[k+2*stride]
		a3 += x[k+3*stride]
		k += 4 * stride
	}
	for ; j < n; j++ {
		a0 += x[k]
		k += stride
	}
	return (a0 + a1) + (a2 + a3)
}

// stridedMax is max_{j<n} x[j·stride] (-Inf for n = 0). NaNs are skipped.
func stridedMax(x []float64, n, stride int) float64 {
	m0, m1 := math.Inf(-1), math.Inf(-1)
	j, k := 0, 0
	for ; j+1 < n; j += 2 {
		if v := x[k]; v > m0 {
			m0 = v
		}
		if v := x[k+stride]; v > m1 {
			m1 = v
		}
		k += 2 * stride
	}
	if j < n {
		if v := x[k]; v > m0 {
			m0 = v
		}
	}
	return math.Max(m0, m1)
}

// Blocks reports whether r is a single step over two or more blocks: the
// table is a sequence of blocks of block cells, each reduced on its own to
// inner cells of the result (block i to result cells [i·inner, (i+1)·inner)).
// SumBlocks and MaxBlocks then reduce any run of whole blocks, so a caller
// can reduce a table block by block while each is in cache.
func (r *Reduction) Blocks() (block, inner int, ok bool) {
	if len(r.steps) != 1 || r.steps[0].outer < 2 {
		return 0, 0, false
	}
	st := r.steps[0]
	return st.s * st.inner, st.inner, true
}

// SumBlocks is Sum over a run of whole blocks (see Blocks): src holds the
// blocks and dst their results, as Sum computes them, bit for bit.
func (r *Reduction) SumBlocks(dst, src []float64) { r.blocks(dst, src, false) }

// MaxBlocks is Max over a run of whole blocks (see SumBlocks).
func (r *Reduction) MaxBlocks(dst, src []float64) { r.blocks(dst, src, true) }

func (r *Reduction) blocks(dst, src []float64, isMax bool) {
	if len(r.steps) != 1 {
		panic(errLength)
	}
	st := r.steps[0]
	n := st.s * st.inner
	if len(src)%n != 0 {
		panic(errLength)
	}
	reduceAxis(dst, src, step{len(src) / n, st.s, st.inner}, isMax)
}

// Rows reports whether r is a single step over one block whose rows (of
// inner cells, inner ≥ 16) are summed in order: SumRows then reduces the
// table row run by row run, in order, with Sum's arithmetic.
func (r *Reduction) Rows() (inner int, ok bool) {
	if len(r.steps) != 1 || r.steps[0].outer != 1 || r.steps[0].inner < 16 {
		return 0, false
	}
	return r.steps[0].inner, true
}

// SumRows adds the whole rows src (see Rows) into dst in order; first
// means src starts at row 0, which dst then takes as is. Run over the rows
// of the table in order, it leaves Sum's result in dst, bit for bit.
func (r *Reduction) SumRows(dst, src []float64, first bool) {
	inner := r.steps[0].inner
	if len(r.steps) != 1 || len(src)%inner != 0 || len(dst) != inner {
		panic(errLength)
	}
	if first && len(src) > 0 {
		copy(dst, src[:inner])
		src = src[inner:]
	}
	for ; len(src) > 0; src = src[inner:] {
		axpy(dst, 1, src[:inner])
	}
}

// Split returns r as its first step and the rest (nil when r has one step
// or none): rest.Sum of first.Sum's result is r.Sum's result, bit for bit,
// so a caller can run the first step piece by piece (Blocks, Rows) over a
// table and the rest, over the smaller intermediate, once at the end.
func (r *Reduction) Split() (first, rest *Reduction) {
	if len(r.steps) < 2 {
		return r, nil
	}
	st := r.steps[0]
	mid := r.in / st.s
	first = &Reduction{steps: r.steps[:1:1], in: r.in, out: mid}
	rest = &Reduction{steps: r.steps[1:], in: mid, out: r.out}
	return first, rest
}

// minStreamRow is the least row length (cells) that SumStream accepts:
// it makes one kernel call per row segment, and below this the calls cost
// more than the sweep they save.
const minStreamRow = 256

// Streams reports whether r is a single step whose rows are long enough
// for SumStream (at least minStreamRow cells; the row-wise path of
// reduceAxis and reduceColumns, which adds each block's rows in order).
func (r *Reduction) Streams() bool {
	return len(r.steps) == 1 && r.steps[0].inner >= minStreamRow
}

// SumStream adds src, the cells [lo, lo+len(src)) of the table, into dst,
// r's whole result: the cells of a block's first row are copied, the
// others added. Given every cell of the table once, in order, in pieces of
// any length, it leaves Sum's result in dst, bit for bit.
func (r *Reduction) SumStream(dst, src []float64, lo int) { r.stream(dst, src, lo, false) }

// MaxStream is SumStream with max instead of +: Max's result, bit for bit.
func (r *Reduction) MaxStream(dst, src []float64, lo int) { r.stream(dst, src, lo, true) }

// maxIntoGo sets d[i] to x[i] where x[i] > d[i]: the comparison of
// reduceAxisGo and reduceColumnsGo, which the assembly matches (NaNs after
// the first row skipped).
func maxIntoGo(d, x []float64) {
	x = x[:len(d)]
	for i, v := range x {
		if v > d[i] {
			d[i] = v
		}
	}
}

func (r *Reduction) stream(dst, src []float64, lo int, isMax bool) {
	if !r.Streams() || len(dst) != r.out || lo < 0 || lo+len(src) > r.in {
		panic(errLength)
	}
	st := r.steps[0]
	inner, block := st.inner, st.s*st.inner
	for len(src) > 0 {
		o, rem := lo/block, lo%block
		row, col := rem/inner, rem%inner
		n := min(len(src), inner-col)
		d := dst[o*inner+col : o*inner+col+n]
		switch {
		case row == 0:
			copy(d, src[:n])
		case isMax:
			maxInto(d, src[:n])
		default:
			axpy(d, 1, src[:n])
		}
		src, lo = src[n:], lo+n
	}
}
