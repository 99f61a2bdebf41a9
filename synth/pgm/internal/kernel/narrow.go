package kernel

// Narrow reductions, streamed. A single step whose blocks have fewer than
// 16 columns (inner < 16) is summed by Sum in a few accumulators per block
// (reduceSmall), not row after row, so neither SumStream nor SumRows can
// carry it from piece to piece. SumNarrow can: it keeps those accumulators
// between calls, each adding its cells in the order Sum does, and
// FinishNarrow folds them as Sum folds them, so the result is Sum's, bit
// for bit. The accumulators and their fold depend on the implementation:
//
//   - the Go reference (reduceAxisGo, stridedSum): four per column, row j in
//     accumulator j mod 4 and the last s mod 4 rows in accumulator 0, folded
//     as (a0 + a1) + (a2 + a3);
//   - AVX-512 with 1, 2, 4 or 8 columns (REDUCE_SMALL): the block is one run
//     of cells in four vectors of 8 lanes, cell i in lane i mod 32 up to
//     the last whole 32 and in lane i mod 8 after it, folded vector-wise as
//     (v0 + v1) + (v2 + v3), then halves into halves down to the columns;
//   - AVX-512 with other widths: rows in two sets, even and odd, folded as
//     even + odd.
//
// AVX2 folds differently again; Narrow reports false there.

// narrow layouts.
const (
	narrowNone  = iota
	narrowRows4 // Go: four row accumulators
	narrowRun32 // AVX-512, 1, 2, 4 or 8 columns: 32 lanes along the run
	narrowRows2 // AVX-512, other widths: even and odd rows
)

// narrowLayout returns how Sum accumulates r's blocks and the accumulators
// per block, or narrowNone when r is not narrow or SumNarrow cannot follow
// the implementation in use.
func (r *Reduction) narrowLayout() (layout, width int) {
	if len(r.steps) != 1 || r.steps[0].inner >= 16 {
		return narrowNone, 0
	}
	st := r.steps[0]
	if st.outer <= 0 || st.s <= 0 || st.inner <= 0 {
		return narrowNone, 0
	}
	switch narrowImpl() {
	case narrowRows4:
		return narrowRows4, 4 * st.inner
	case narrowRun32:
		if in := st.inner; in&(in-1) == 0 && in <= 8 {
			return narrowRun32, 32
		}
		return narrowRows2, 2 * st.inner
	}
	return narrowNone, 0
}

// Narrow reports whether SumNarrow can stream r (see above), and the
// accumulator cells it needs.
func (r *Reduction) Narrow() (acc int, ok bool) {
	layout, w := r.narrowLayout()
	if layout == narrowNone {
		return 0, false
	}
	return r.steps[0].outer * w, true
}

// SumNarrow adds src, the cells [lo, lo+len(src)) of the table, into acc,
// Narrow's accumulators, which must be zero before the table's first cell.
// Given every cell once, in order, in pieces of any length, it leaves in acc
// what FinishNarrow turns into Sum's result.
func (r *Reduction) SumNarrow(acc, src []float64, lo int) {
	layout, w := r.narrowLayout() // w: accumulators per block
	if layout == narrowNone || len(acc) != r.steps[0].outer*w || lo < 0 || lo+len(src) > r.in {
		panic(errLength)
	}
	st := r.steps[0]
	inner, s := st.inner, st.s
	block := s * inner
	for len(src) > 0 {
		o, i := lo/block, lo%block
		m := min(len(src), block-i)
		a, x := acc[o*w:(o+1)*w], src[:m]
		switch layout {
		case narrowRun32:
			// Whole groups of 32 cells go through addRun32; the cells
			// before the first and after the last, one by one.
			main := block &^ 31
			for len(x) > 0 && i%32 != 0 && i < main {
				a[i%32] += x[0]
				x, i = x[1:], i+1
			}
			if i < main {
				g := min(len(x), main-i) &^ 31
				addRun32(a, x[:g])
				x, i = x[g:], i+g
			}
			for len(x) > 0 && i < main {
				a[i%32] += x[0]
				x, i = x[1:], i+1
			}
			for _, v := range x {
				a[i%8] += v
				i++
			}
		case narrowRows2:
			for _, v := range x {
				j, c := i/inner, i%inner
				a[(j%2)*inner+c] += v
				i++
			}
		case narrowRows4:
			s4 := s &^ 3
			for _, v := range x {
				j, c := i/inner, i%inner
				k := j % 4
				if j >= s4 {
					k = 0
				}
				a[k*inner+c] += v
				i++
			}
		}
		src, lo = src[m:], lo+m
	}
}

// FinishNarrow writes into dst, r's whole result, what SumNarrow left in
// acc: Sum's result, bit for bit.
func (r *Reduction) FinishNarrow(dst, acc []float64) {
	layout, w := r.narrowLayout()
	if layout == narrowNone || len(acc) != r.steps[0].outer*w || len(dst) != r.out {
		panic(errLength)
	}
	st := r.steps[0]
	inner := st.inner
	for o := range st.outer {
		a, d := acc[o*w:(o+1)*w], dst[o*inner:(o+1)*inner]
		switch layout {
		case narrowRows4:
			for c := range d {
				d[c] = (a[c] + a[inner+c]) + (a[2*inner+c] + a[3*inner+c])
			}
		case narrowRows2:
			for c := range d {
				d[c] = a[c] + a[inner+c]
			}
		case narrowRun32:
			var v [8]float64
			for l := range v {
				v[l] = (a[l] + a[8+l]) + (a[16+l] + a[24+l])
			}
			for width := 8; width > inner; width /= 2 {
				for l := range width / 2 {
					v[l] += v[l+width/2]
				}
			}
			copy(d, v[:inner])
		}
	}
}

// addRun32Go adds x, whole groups of 32 cells, into a[0:32] lane by lane.
func addRun32Go(a, x []float64) {
	a = a[:32]
	for ; len(x) >= 32; x = x[32:] {
		g := x[:32]
		for l := range a {
			a[l] += g[l]
		}
	}
}
