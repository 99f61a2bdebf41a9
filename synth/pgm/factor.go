package pgm

import (
	"math"
	"slices"

	"github.com/dpsql/dpsql/synth/pgm/internal/kernel"
)

// factor is a dense table over an ascending attribute set, row-major, used
// by variable elimination. Values are in log space unless stated.
type factor struct {
	attrs []int
	vals  []float64
}

// union returns the ascending union of ascending slices.
func union(a, b []int) []int {
	out := make([]int, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || (i < len(a) && a[i] < b[j]):
			out = append(out, a[i])
			i++
		case i == len(a) || b[j] < a[i]:
			out = append(out, b[j])
			j++
		default:
			out = append(out, a[i])
			i++
			j++
		}
	}
	return out
}

// logProduct returns Σ fs broadcast over the union of their attributes (the
// product of the factors in log space).
func logProduct(dom *Domain, fs []factor) factor {
	var attrs []int
	for _, f := range fs {
		attrs = union(attrs, f.attrs)
	}
	out := factor{attrs: attrs, vals: make([]float64, dom.Cells(attrs))}
	sizes := dom.sizesOf(attrs)
	for _, f := range fs {
		kernel.Expand(out.vals, f.vals, kernel.Map(sizes, positions(attrs, f.attrs)))
	}
	return out
}

// logSumOut returns the log-space marginal of f with attribute a summed out
// (logsumexp, shifted by the per-cell maximum).
func logSumOut(dom *Domain, f factor, a int) factor {
	keep := slices.DeleteFunc(slices.Clone(f.attrs), func(x int) bool { return x == a })
	idx := kernel.Map(dom.sizesOf(f.attrs), positions(f.attrs, keep))
	n := dom.Cells(keep)
	mx := make([]float64, n)
	acc := make([]float64, n)
	kernel.MaxTo(mx, f.vals, idx)
	tmp := slices.Clone(f.vals)
	kernel.ExpShiftSum(tmp, acc, mx, idx)
	out := factor{attrs: keep, vals: make([]float64, n)}
	for s := range out.vals {
		if math.IsInf(mx[s], -1) {
			out.vals[s] = math.Inf(-1)
		} else {
			out.vals[s] = mx[s] + math.Log(acc[s])
		}
	}
	return out
}

// variableElimination sums every attribute outside keep (ascending) out of
// the log-space product of fs, eliminating greedily the attribute whose
// combined factor is smallest, and returns the log-space result over keep.
func variableElimination(dom *Domain, fs []factor, keep []int) factor {
	fs = slices.Clone(fs)
	var all []int
	for _, f := range fs {
		all = union(all, f.attrs)
	}
	elim := slices.DeleteFunc(all, func(a int) bool { _, ok := slices.BinarySearch(keep, a); return ok })
	for len(elim) > 0 {
		best, bestCost := -1, math.Inf(1)
		for i, a := range elim {
			var u []int
			for _, f := range fs {
				if _, ok := slices.BinarySearch(f.attrs, a); ok {
					u = union(u, f.attrs)
				}
			}
			cost := 1.0
			for _, b := range u {
				cost *= float64(dom.sizes[b])
			}
			if cost < bestCost {
				best, bestCost = i, cost
			}
		}
		a := elim[best]
		elim = slices.Delete(elim, best, best+1)
		var with, without []factor
		for _, f := range fs {
			if _, ok := slices.BinarySearch(f.attrs, a); ok {
				with = append(with, f)
			} else {
				without = append(without, f)
			}
		}
		fs = append(without, logSumOut(dom, logProduct(dom, with), a))
	}
	// Attributes of keep that no factor mentions are uniform: add a zero
	// log factor over them so the result spans keep.
	fs = append(fs, factor{attrs: keep, vals: make([]float64, dom.Cells(keep))})
	return logProduct(dom, fs)
}
