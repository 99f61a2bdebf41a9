// Package marginal holds small kernels on flat marginal vectors that the
// mechanisms share: projection to a subset of attributes, L1 distance and
// attribute-set algebra.
package marginal

import "github.com/dpsql/dpsql/synth/pgm"

// ProjectTo sums the marginal x over attrs down to sub (a sorted subset of
// attrs) and writes it into dst, which is resized if too small, and returns
// it. Marginals are row-major with the last attribute varying fastest.
func ProjectTo(dst []float64, dom *pgm.Domain, attrs []int, x []float64, sub []int) []float64 {
	n := dom.Cells(sub)
	if cap(dst) < n {
		dst = make([]float64, n)
	}
	dst = dst[:n]
	clear(dst)
	if len(x) != dom.Cells(attrs) {
		panic("marginal: marginal length does not match its attributes")
	}
	var strideBuf, sizeBuf, idxBuf [16]int
	stride, size := projection(strideBuf[:0], sizeBuf[:0], dom, attrs, sub)
	idx := idxBuf[:0]
	for range attrs {
		idx = append(idx, 0)
	}
	off := 0
	last := len(attrs) - 1
	for _, v := range x {
		dst[off] += v
		// Odometer increment, last attribute fastest.
		for i := last; i >= 0; i-- {
			idx[i]++
			off += stride[i]
			if idx[i] < size[i] {
				break
			}
			off -= stride[i] * size[i]
			idx[i] = 0
		}
	}
	return dst
}

// projection appends to stride and size, for each of attrs, its stride in
// the projection onto sub (a sorted subset of attrs; 0 if it is summed out)
// and its domain size.
func projection(stride, size []int, dom *pgm.Domain, attrs, sub []int) ([]int, []int) {
	for _, a := range attrs {
		size = append(size, dom.Size(a))
		stride = append(stride, 0)
	}
	s, j := 1, len(sub)-1
	for i := len(attrs) - 1; i >= 0; i-- {
		if j >= 0 && sub[j] == attrs[i] {
			stride[i] = s
			s *= size[i]
			j--
		}
	}
	if j >= 0 {
		panic("marginal: sub is not a subset of attrs")
	}
	return stride, size
}

// L1 returns ‖x − y‖₁.
func L1(x, y []float64) float64 {
	if len(x) != len(y) {
		panic("marginal: length mismatch")
	}
	var s float64
	for i := range x {
		d := x[i] - y[i]
		if d < 0 {
			d = -d
		}
		s += d
	}
	return s
}

// Subset reports whether the sorted set a is a subset of the sorted set b.
func Subset(a, b []int) bool {
	j := 0
	for _, x := range a {
		for j < len(b) && b[j] < x {
			j++
		}
		if j == len(b) || b[j] != x {
			return false
		}
		j++
	}
	return true
}

// Intersect returns |a ∩ b| for sorted sets.
func Intersect(a, b []int) int {
	n, i, j := 0, 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] < b[j]:
			i++
		case a[i] > b[j]:
			j++
		default:
			n++
			i++
			j++
		}
	}
	return n
}
