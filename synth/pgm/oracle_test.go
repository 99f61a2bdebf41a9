package pgm

import (
	"math"
	"slices"

	"github.com/dpsql/dpsql/synth/pgm/internal/kernel"
)

// This file keeps the engine's first out-of-clique algorithm, variable
// elimination in log space over the whole subtree with materialised
// products, as an independent oracle for the probability-space elimination
// of marginals.go.

// logTables holds, per clique v, log p_v and log p(v | sep(v)) in arena
// layout (0/0 is taken as probability 0).
type logTables struct {
	logP, logCond []float64
}

// logTables computes the model's log tables.
func (m *Model) logTables() *logTables {
	t := &logTables{}
	{
		jt := m.jt
		t.logP = make([]float64, jt.total)
		t.logCond = make([]float64, jt.total)
		for i, x := range m.p {
			t.logP[i] = math.Log(x)
		}
		for v := range jt.cliques {
			pv, lc := jt.block(m.p, v), jt.block(t.logCond, v)
			if jt.parent[v] < 0 {
				copy(lc, jt.block(t.logP, v))
				continue
			}
			ps := make([]float64, m.dom.Cells(jt.sep[v]))
			jt.upRed[v].Sum(ps, pv, make([]float64, jt.upRed[v].Scratch()))
			idx := jt.projMap(v, jt.sep[v])
			for i, x := range pv {
				if x == 0 {
					lc[i] = math.Inf(-1)
				} else {
					lc[i] = math.Log(x / ps[idx[i]])
				}
			}
		}
	}
	return t
}

// eliminateLog computes the probability marginal over the ascending attrs,
// weighted by the evidence, by variable elimination in log space over the
// smallest subtree of the junction tree that holds attrs and the evidence.
// The joint over a connected subtree T with top clique r is
// p_r · Π_{v ∈ T, v ≠ r} p_v / p_sep(v).
func (m *Model) eliminateLog(attrs []int, weight map[int][]float64) factor {
	jt := m.jt
	need := bitsetOf(m.dom.Len(), attrs)
	for a := range weight {
		need.set(a)
	}
	kept, top := jt.subtree(need)
	var fs []factor
	if top >= 0 {
		logs := m.logTables()
		var walk func(v int)
		walk = func(v int) {
			// The factors share the cached tables: variable elimination
			// never writes into its inputs.
			f := factor{attrs: jt.cliques[v], vals: jt.block(logs.logCond, v)}
			if v == top {
				f.vals = jt.block(logs.logP, v)
			}
			fs = append(fs, f)
			for _, c := range jt.children[v] {
				if kept[c] {
					walk(c)
				}
			}
		}
		walk(top)
	}
	for a, w := range weight {
		f := factor{attrs: []int{a}, vals: make([]float64, len(w))}
		for i, x := range w {
			f.vals[i] = math.Log(x)
		}
		fs = append(fs, f)
	}
	out := variableElimination(m.dom, fs, attrs)
	for i, v := range out.vals {
		out.vals[i] = math.Exp(v)
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

// marginalLog is Model.Marginal computed by the oracle: clique projection
// inside one clique, log-space elimination otherwise.
func (m *Model) marginalLog(attrs []int) []float64 {
	sorted := slices.Clone(attrs)
	slices.Sort(sorted)
	var f factor
	if k := m.jt.containing(sorted); k >= 0 {
		f = factor{attrs: sorted, vals: make([]float64, m.dom.Cells(sorted))}
		red := m.jt.reduction(k, sorted)
		red.Sum(f.vals, m.jt.block(m.p, k), make([]float64, red.Scratch()))
	} else {
		f = m.eliminateLog(sorted, nil)
	}
	for i := range f.vals {
		f.vals[i] *= m.total
	}
	if slices.Equal(sorted, attrs) {
		return f.vals
	}
	dims := make([]int, len(attrs))
	for i, a := range attrs {
		dims[i], _ = slices.BinarySearch(sorted, a)
	}
	idx := kernel.Map(m.dom.sizesOf(sorted), dims)
	out := make([]float64, len(f.vals))
	for i, v := range f.vals {
		out[idx[i]] = v
	}
	return out
}
