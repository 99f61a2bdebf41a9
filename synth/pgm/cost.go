package pgm

import (
	"math"
	"slices"
)

// MarginalCost returns, in table cells swept, what Marginal(attrs) costs,
// planned without computing it: the cells of the clique that holds attrs,
// or for a set spread over several cliques, the cells of the cliques it
// reduces plus the sweep of the elimination plan Marginal would follow
// (the same walk over the junction tree, branch conditionals and
// elimination rules, on the factors' scopes only; the branch conditionals'
// own cost is not counted). On a large model a few sets spread over wide
// separators cost thousands of times the others; callers that must bound
// their work, such as a benchmark's error evaluation, use this to tell
// them apart.
func (m *Model) MarginalCost(attrs []int) float64 {
	m.checkSets([][]int{attrs})
	sorted := slices.Sorted(slices.Values(attrs))
	if k := m.jt.containing(sorted); k >= 0 {
		return float64(m.jt.cells[k])
	}
	return m.eliminationCost(sorted, newReduceCache(m.jt, 0)) // the cache for its subtree unions
}

// eliminationCost is MarginalCost of the ascending attrs by elimination
// (whether or not a clique holds them), with cache's subtree unions.
func (m *Model) eliminationCost(sorted []int, cache *reduceCache) float64 {
	jt := m.jt
	n := m.dom.Len()
	need := bitsetOf(n, sorted)
	kept, top := jt.subtree(need)
	var scopes []bitset
	var cost float64
	keep := newBitset(n)
	var walk func(v int)
	walk = func(v int) {
		jt.keepAt(keep, need, kept, top, v)
		s := newBitset(n)
		for _, a := range jt.cliques[v] {
			if keep.has(a) {
				s.set(a)
			}
		}
		scopes = append(scopes, s)
		cost += float64(jt.cells[v])
		for _, c := range jt.children[v] {
			if !kept[c] {
				continue
			}
			if a := m.branchAttr(c, need, cache); a >= 0 && m.narrowest(c, a, cache) == c && m.branchFits(c, a, cache) {
				b := bitsetOf(n, jt.sep[c])
				b.set(a)
				scopes = append(scopes, b)
				continue
			}
			walk(c)
		}
	}
	walk(top)
	limit := float64(max(4*jt.total, 4*m.dom.Cells(sorted), 1<<22))
	best, fallback := math.Inf(1), math.Inf(1)
	for rule := range numRules {
		_, c, peak := planElimination(m.dom, scopes, need, rule)
		if peak.cells(m.dom) <= limit {
			best = min(best, c)
		} else {
			// Marginal then conditions on an attribute of the peak and
			// repeats the elimination per value: at least this much.
			fallback = min(fallback, c)
		}
	}
	if best >= minOptimalCost {
		if _, c, ok := planOptimal(m.dom, scopes, need, limit); ok {
			best = min(best, c)
		}
	}
	if math.IsInf(best, 1) {
		best = fallback
	}
	return cost + best
}

// branchFits reports whether branchConditional(c, a) is within
// maxBranchCells at every clique of its path (it then returns ok).
func (m *Model) branchFits(c, a int, cache *reduceCache) bool {
	jt := m.jt
	for v := c; ; v = cache.child(jt, v, a) {
		if float64(m.dom.Cells(jt.sep[v]))*float64(m.dom.sizes[a]) > maxBranchCells {
			return false
		}
		if jt.sets[v].has(a) {
			return true
		}
	}
}
