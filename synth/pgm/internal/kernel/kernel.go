// Package kernel holds the allocation-free inner loops of the pgm engine:
// scatter and gather over precomputed index maps between a factor and one of
// its sub-factors, and max-shifted exponentials.
//
// An index map idx for a table over attributes C and a sub-table over S ⊆ C
// has one entry per cell of C: idx[i] is the cell of S that cell i of C
// projects to. Every kernel documents its reference loop; lengths are checked
// once on entry and mismatches panic.
//
// On amd64 the hot kernels run in assembly, with AVX-512 (kernel_amd64.s)
// or else AVX2 and FMA (kernel_avx2_amd64.s); the Go loops in this file are
// the reference they are tested against and the implementation everywhere
// else (and with the purego build tag). The
// assembly versions are equal to the references bit for bit except where a
// kernel's comment says otherwise (sums may be reassociated, exponentials
// are within 2 ulps of math.Exp rather than equal to Exp).
package kernel

import "math"

const errLength = "kernel: length mismatch"

// Expand adds the sub-table src into dst by broadcasting:
//
//	for i := range dst { dst[i] += src[idx[i]] }
func Expand(dst, src []float64, idx []int32) {
	if len(idx) != len(dst) {
		panic(errLength)
	}
	expand(dst, src, idx)
}

func expandGo(dst, src []float64, idx []int32) {
	for i := range dst {
		dst[i] += src[idx[i]]
	}
}

// Project sums src into the sub-table dst (the adjoint of Expand):
//
//	for i := range src { dst[idx[i]] += src[i] }
func Project(dst, src []float64, idx []int32) {
	if len(idx) != len(src) {
		panic(errLength)
	}
	for i, v := range src {
		dst[idx[i]] += v
	}
}

// MaxTo writes the per-cell maximum of src over the cells that project to
// each cell of dst; dst is overwritten:
//
//	dst[:] = -Inf; for i := range src { dst[idx[i]] = max(dst[idx[i]], src[i]) }
func MaxTo(dst, src []float64, idx []int32) {
	if len(idx) != len(src) {
		panic(errLength)
	}
	for i := range dst {
		dst[i] = math.Inf(-1)
	}
	for i, v := range src {
		j := idx[i]
		if v > dst[j] {
			dst[j] = v
		}
	}
}

// ExpShiftSum replaces x by its exponential shifted by the per-cell shift of
// its projection, and accumulates the projected sums into acc (which is
// overwritten). Cells whose shift is -Inf become 0:
//
//	acc[:] = 0; for i := range x { x[i] = exp(x[i] - shift[idx[i]]); acc[idx[i]] += x[i] }
func ExpShiftSum(x, acc, shift []float64, idx []int32) {
	if len(idx) != len(x) || len(acc) != len(shift) {
		panic(errLength)
	}
	clear(acc)
	for i, v := range x {
		j := idx[i]
		s := shift[j]
		if math.IsInf(s, -1) {
			x[i] = 0
			continue
		}
		e := Exp(v - s)
		x[i] = e
		acc[j] += e
	}
}

// ExpShiftGather replaces x by its exponential shifted by the shift of its
// projection; cells whose shift is -Inf become 0:
//
//	for i := range x { x[i] = exp(x[i] - shift[idx[i]]) }
//
// The assembly version's exp is within 2 ulps of math.Exp (so is Exp's).
func ExpShiftGather(x, shift []float64, idx []int32) {
	if len(idx) != len(x) {
		panic(errLength)
	}
	expShiftGather(x, shift, idx)
}

func expShiftGatherGo(x, shift []float64, idx []int32) {
	for i, v := range x {
		s := shift[idx[i]]
		if s == math.Inf(-1) {
			x[i] = 0
			continue
		}
		if d := v - s; d >= expMin && d <= expMax {
			// Exp's fast path inlined by hand, as in ExpShiftTotal.
			t := d*expInvL + expShift
			n := int64(math.Float64bits(t)) << 13 >> 13 // round(d·64/ln2), sign-extended from 51 bits
			kn := t - expShift
			r := (d - kn*expL1) - kn*expL2
			q := r * (1 + r*(0.5+r*(1.0/6+r*(1.0/24+r*(1.0/120)))))
			tj := expTable[n&63]
			x[i] = math.Float64frombits(math.Float64bits(tj+tj*q) + uint64(n>>6)<<52)
		} else {
			x[i] = Exp(d)
		}
	}
}

// Scale multiplies x by the per-cell factor of its projection:
//
//	for i := range x { x[i] *= f[idx[i]] }
func Scale(x, f []float64, idx []int32) {
	if len(idx) != len(x) {
		panic(errLength)
	}
	scale(x, f, idx)
}

func scaleGo(x, f []float64, idx []int32) {
	for i := range x {
		x[i] *= f[idx[i]]
	}
}

// LogSumExp returns log Σ exp(x[i]), subtracting the maximum first. It is
// -Inf for an empty x or when every entry is -Inf.
func LogSumExp(x []float64) float64 {
	m := math.Inf(-1)
	for _, v := range x {
		if v > m {
			m = v
		}
	}
	if math.IsInf(m, 0) {
		return m
	}
	var s float64
	for _, v := range x {
		s += math.Exp(v - m)
	}
	return m + math.Log(s)
}

// Max returns the largest entry of x (-Inf when x is empty); NaNs are
// skipped. The assembly version may return -0 where this loop returns +0 or
// the reverse (they compare equal).
func Max(x []float64) float64 { return maxOf(x) }

func maxGo(x []float64) float64 {
	m := math.Inf(-1)
	for _, v := range x {
		if v > m {
			m = v
		}
	}
	return m
}

// ExpShiftTotal replaces x by exp(x - s), in place, and returns the sum of
// the new entries:
//
//	for i := range x { x[i] = exp(x[i] - s); sum += x[i] }
//
// With s = -Inf every entry becomes 0. The assembly version's exp is within
// 2 ulps of math.Exp and its sum is accumulated in another order.
func ExpShiftTotal(x []float64, s float64) float64 {
	if math.IsInf(s, -1) {
		clear(x)
		return 0
	}
	return expShiftTotal(x, s)
}

func expShiftTotalGo(x []float64, s float64) float64 {
	var sum float64
	for i, v := range x {
		d := v - s
		var e float64
		if d >= expMin && d <= expMax {
			// Exp's fast path, inlined by hand (too large for the
			// compiler's inliner): the same arithmetic, bit for bit.
			t := d*expInvL + expShift
			n := int64(math.Float64bits(t)) << 13 >> 13 // round(d·64/ln2), sign-extended from 51 bits
			kn := t - expShift
			r := (d - kn*expL1) - kn*expL2
			q := r * (1 + r*(0.5+r*(1.0/6+r*(1.0/24+r*(1.0/120)))))
			tj := expTable[n&63]
			e = math.Float64frombits(math.Float64bits(tj+tj*q) + uint64(n>>6)<<52)
		} else {
			e = Exp(d)
		}
		x[i] = e
		sum += e
	}
	return sum
}

// ScaleAll is `for i := range x { x[i] *= a }`.
func ScaleAll(x []float64, a float64) { scaleAll(x, a) }

func scaleAllGo(x []float64, a float64) {
	for i := range x {
		x[i] *= a
	}
}

// ExpShift replaces x by exp(x - s), in place:
//
//	for i := range x { x[i] = exp(x[i] - s) }
//
// With s = -Inf every entry becomes 0. The assembly version's exp is within
// 2 ulps of math.Exp.
func ExpShift(x []float64, s float64) {
	if math.IsInf(s, -1) {
		clear(x)
		return
	}
	expShiftInPlace(x, s)
}

func expShiftGo(x []float64, s float64) {
	for i, v := range x {
		x[i] = Exp(v - s)
	}
}

// Axpy is `for i := range y { y[i] += a * x[i] }`, rounded as AxpyTo.
func Axpy(y []float64, a float64, x []float64) {
	if len(x) != len(y) {
		panic(errLength)
	}
	axpy(y, a, x)
}

func axpyGo(y []float64, a float64, x []float64) {
	for i := range y {
		y[i] += float64(a * x[i]) // the conversion forbids fusing (GOAMD64=v3)
	}
}

// AxpyTo is `for i := range dst { dst[i] = y[i] + a*x[i] }`.
//
// The product and the sum are rounded separately (no fused multiply-add, even
// where the compiler may fuse), in the assembly version too, so all give the
// same bits.
func AxpyTo(dst []float64, y []float64, a float64, x []float64) {
	if len(x) != len(dst) || len(y) != len(dst) {
		panic(errLength)
	}
	axpyTo(dst, y, a, x)
}

func axpyToGo(dst []float64, y []float64, a float64, x []float64) {
	for i := range dst {
		dst[i] = y[i] + float64(a*x[i])
	}
}

// DotDiff is Σ g[i]·(x[i] − y[i]). The assembly version sums in another
// order, with fused multiply-adds.
func DotDiff(g, x, y []float64) float64 {
	if len(x) != len(g) || len(y) != len(g) {
		panic(errLength)
	}
	return dotDiff(g, x, y)
}

func dotDiffGo(g, x, y []float64) float64 {
	var s float64
	for i := range g {
		s += g[i] * (x[i] - y[i])
	}
	return s
}

// Map returns the index map from the table over the attributes with the given
// sizes to the sub-table over the dimensions dims (ascending positions into
// sizes); the sub-table is row-major in that order. It allocates; call it
// when planning, not in loops.
func Map(sizes []int, dims []int) []int32 {
	n := 1
	for _, s := range sizes {
		n *= s
	}
	idx := make([]int32, n)
	MapTo(idx, sizes, dims)
	return idx
}

// MapTo is Map writing into idx, which must have the table's cell count.
func MapTo(idx []int32, sizes []int, dims []int) {
	k := len(sizes)
	// stride[d] is the step of the sub-table index when dimension d advances.
	var strideBuf, digitBuf [16]int
	stride, digit := strideBuf[:0], digitBuf[:0]
	if k > len(strideBuf) {
		stride, digit = make([]int, 0, k), make([]int, 0, k)
	}
	stride, digit = stride[:k], digit[:k]
	clear(stride)
	clear(digit)
	s := 1
	for j := len(dims) - 1; j >= 0; j-- {
		stride[dims[j]] = s
		s *= sizes[dims[j]]
	}
	if k == 0 {
		if len(idx) != 1 {
			panic(errLength)
		}
		idx[0] = 0
		return
	}
	last := k - 1
	n, inner, innerStride := len(idx), sizes[last], stride[last]
	cur := 0
	for i := 0; i < n; i += inner {
		for x := range inner {
			idx[i+x] = int32(cur + x*innerStride)
		}
		// Advance the odometer over dimensions 0..last-1.
		for d := last - 1; d >= 0; d-- {
			digit[d]++
			cur += stride[d]
			if digit[d] < sizes[d] {
				break
			}
			cur -= digit[d] * stride[d]
			digit[d] = 0
		}
	}
}
