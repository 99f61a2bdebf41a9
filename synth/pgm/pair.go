package pgm

import (
	"fmt"
	"math"
	"slices"
)

// Pair routes for 3-way marginals (docs/aim-performance.md, "Issue 19,
// fourth pass"). On a wide table the expensive 3-way marginals put their
// attributes in different branches of a large clique: the elimination
// sweeps that clique times the query's attributes, once per query. But
// when x's branch leaves the subtree of the other two, y and z, below a
// clique w, x is independent of y and z given sep(w), so
//
//	P(x, y, z) = Σ_{sep(w)} P(y, z, sep(w)) · P(x | sep(w)),
//
// where P(x | sep(w)) is the cached branch conditional and P(y, z, sep(w))
// is an ordinary model marginal, the same for every x whose branch meets
// the pair's subtree through w. Computed once and kept in the call's cache,
// it turns each such triple into one product of two small tables. Whether a
// triple takes a route is decided on planned costs (cells swept): a cached
// table when its product costs less than the direct elimination; an
// uncached one when computing it and the product cost no more than the
// direct elimination, or once the triples that wanted it have spent its
// cost in direct eliminations (so a table is computed only when it pays for
// itself, at most twice over). The result is the same marginal, to
// round-off.

// pairRoute is one way of computing {x} ∪ pair as a product through sep(w).
type pairRoute struct {
	x, w   int
	scope  []int   // pair ∪ sep(w), ascending
	finish float64 // cells swept by the final product
	key    string
}

// maxPairTable bounds a cached pair table (cells: 1 MB, a sixteenth of the
// largest pair budget). A larger one costs nearly a direct elimination to
// compute, and evicts from the cache the shared steps that the direct
// eliminations reuse. With tables up to the whole budget (16 MB), the
// lazy rounds of four fixed wide30 trajectories scored 6, 6, 0 and 9 %
// slower than with this bound, the configurations alternated round by
// round in one process. A quarter of the bound was 0–4 % faster still, and
// four times the bound up to 11 % slower.
const maxPairTable = 1 << 17

// minPairDirect is the planned cost (cells) below which a triple is
// computed directly without looking for a route: the search would cost
// more than it could save.
// A variable so that tests can route small models.
var minPairDirect = float64(1 << 16)

// route returns the route of the ascending 3-set attrs through attribute
// x, if x's branch leaves the subtree of the other two.
func (m *Model) route(attrs []int, x int, cache *reduceCache) (pairRoute, bool) {
	jt := m.jt
	n := m.dom.Len()
	need := newBitset(n)
	for _, a := range attrs {
		if a != x {
			need.set(a)
		}
	}
	kept, top := jt.subtree(need)
	if top < 0 {
		return pairRoute{}, false
	}
	c := -1
	for v, k := range kept {
		if !k {
			continue
		}
		if jt.sets[v].has(x) {
			return pairRoute{}, false // x is in the pair's subtree
		}
		for _, ch := range jt.children[v] {
			if !kept[ch] && cache.below[ch].has(x) {
				c = ch
			}
		}
	}
	if c < 0 {
		return pairRoute{}, false // x lies above the pair's subtree
	}
	w := m.narrowest(c, x, cache)
	if !m.branchFits(w, x, cache) {
		return pairRoute{}, false
	}
	for _, a := range jt.sep[w] {
		need.set(a)
	}
	scope := need.attrs()
	need.set(x)
	var y, z int
	if x == attrs[0] {
		y, z = attrs[1], attrs[2]
	} else if x == attrs[1] {
		y, z = attrs[0], attrs[2]
	} else {
		y, z = attrs[0], attrs[1]
	}
	return pairRoute{x: x, w: w, scope: scope, finish: need.cells(m.dom), key: fmt.Sprintf("p%d/%d/%d", y, z, w)}, true
}

// viaPair computes the probability marginal over the ascending 3-set attrs
// through a pair route into dst when one is cheaper than the direct
// elimination (see above); ok is false when it is not.
func (m *Model) viaPair(attrs []int, cache *reduceCache, dst []float64) (factor, bool) {
	direct := m.plannedCost(attrs, cache)
	if direct < minPairDirect {
		return factor{}, false
	}
	var (
		best     pairRoute
		bestCost = math.Inf(1)
		bestTab  []float64
		pairCost float64
	)
	for _, x := range attrs {
		r, ok := m.route(attrs, x, cache)
		if !ok || r.finish >= direct || cache.pairMax > 0 && m.dom.Cells(r.scope) > min(cache.pairMax, maxPairTable) {
			// A table beyond the budget would be computed for this
			// triple alone and dropped: up to 74 MB of garbage per
			// triple on wide30, which set the heap's peaks. One beyond
			// maxPairTable costs more than it saves.
			continue
		}
		if t, ok := cache.getPair(r.key); ok {
			if r.finish < bestCost {
				best, bestCost, bestTab = r, r.finish, t
			}
			continue
		}
		// A table that other triples of the calls want is shared: each
		// pays its share.
		pc := m.tableCost(r.scope, cache)
		if c := r.finish + pc/float64(max(1, cache.wantedOf(r.key))); c < bestCost {
			best, bestCost, bestTab, pairCost = r, c, nil, pc
		}
	}
	if math.IsInf(bestCost, 1) {
		return factor{}, false
	}
	fresh := bestTab == nil
	if fresh {
		if bestCost > direct && !cache.earn(best.key, direct-best.finish, pairCost, m.dom.Cells(best.scope)) {
			return factor{}, false
		}
		bestTab = m.pairTable(best.scope, cache)
		cache.putPair(best.key, bestTab)
	}
	cond, ok := m.branchConditional(best.w, best.x, cache)
	if !ok {
		return factor{}, false // cannot happen: route checked branchFits
	}
	over := bitsetOf(m.dom.Len(), best.scope)
	over.set(best.x)
	cache.count(fresh)
	f := productSumInto(resize(dst, m.dom.Cells(attrs)), m.dom,
		[]factor{{attrs: best.scope, vals: bestTab}, cond}, over.attrs(), attrs)
	return f, true
}

// tableCost is the planned cost of the probability marginal over the
// ascending scope.
func (m *Model) tableCost(scope []int, cache *reduceCache) float64 {
	if k := m.jt.containing(scope); k >= 0 {
		return float64(m.jt.cells[k])
	}
	return m.plannedCost(scope, cache)
}

// pairTable returns the probability marginal over the ascending scope,
// computed directly (without pair routes) into a new table.
func (m *Model) pairTable(scope []int, cache *reduceCache) []float64 {
	if k := m.jt.containing(scope); k >= 0 {
		out := make([]float64, m.dom.Cells(scope))
		red := m.jt.reduction(k, scope)
		sumPooled(red, out, m.jt.block(m.p, k))
		return out
	}
	return m.eliminateDirect(scope, nil, cache, nil).vals
}

// getPair returns the cached pair table under key, which becomes the most
// recently used.
func (c *reduceCache) getPair(key string) ([]float64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.pairs[key]
	if !ok {
		return nil, false
	}
	c.pairOrder.MoveToBack(e)
	return e.Value.(*pairEntry).vals, true
}

// pairEntry is a cached pair or step table.
type pairEntry struct {
	key  string
	vals []float64
}

// putPair keeps t under key, dropping the least recently used tables
// while the pair budget is exceeded (a dropped table may still be read by
// the worker that got it). Least recently used, not oldest: a step or pair
// table that many sets of a group read stays while the group lasts, and on
// wide30 a scoring call with an 8 MB cache then computed 13 % fewer cells
// of shared steps.
func (c *reduceCache) putPair(key string, t []float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.pairs[key]; ok || len(t) > c.pairMax {
		return
	}
	for c.pairBudget < len(t) {
		old := c.pairOrder.Remove(c.pairOrder.Front()).(*pairEntry)
		c.pairBudget += len(old.vals)
		delete(c.pairs, old.key)
	}
	c.pairs[key] = c.pairOrder.PushBack(&pairEntry{key: key, vals: t})
	c.pairBudget -= len(t)
}

// earn credits the pair table under key with saving (what a triple that
// wanted it paid beyond its product) and reports whether the credit now
// covers the table's cost and a table of cells fits the budget; the credit
// is then spent.
func (c *reduceCache) earn(key string, saving, cost float64, cells int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cells > c.pairMax {
		return false
	}
	c.credit[key] += saving
	if c.credit[key] < cost {
		return false
	}
	delete(c.credit, key)
	return true
}

// count records a routed triple (for tests and traces).
func (c *reduceCache) count(fresh bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.routed++
	if fresh {
		c.fresh++
	}
}

// pairMinBudget and pairMaxBudget bound the pair budget of a caching call
// (cells: 1 and 16 MB); within them it is the call's reduction budget,
// 2 × the model's cells. It was four times that, 8 × the model, until AIM's
// lazy selection computed a round's candidates in one call, whose order
// brings the triples that share a table together: on two wide30
// trajectories with 1.96 and 3.42 MB models, a cache of twice the model
// instead of 8 MB swept 3.5 and 1.6 % more cells at no measurable CPU, and
// the small model's peak fell by 4–5 MB, to 111–113 MB against a bound of
// 119.3 MB; adult at ε = 1 (0.55 MB) swept 2 % more at the same CPU
// (docs/aim-performance.md, "Issue 19, twentieth pass"). The cap was
// 32 MB: on wide30 (4.4 MB models) the cache then held 7 × the model, a
// quarter of the process's peak; at 16 MB, with the sets grouped
// (cacheOrder) and the least recently used dropped, scoring sweeps 9 %
// more cells and wide30's peak fell by about a third with the collector's
// headroom bounded too
// (docs/aim-performance.md, "Issue 19, thirteenth pass"; the fourteenth
// brought it within 4 × the model + the data + 100 MB by returning freed
// pages sooner). The floor was 8 MB: on a small model the
// cache then held up to 20 × the model, the part of a federated synthesis's
// memory that grew from 1 M to 10 M rows (the model AIM picks from ten
// times the signal, 0.36 against 0.8 MB); at 1 MB the peak there fell from
// 120 to 105–112 MB, and adult's small-model runs kept their CPU
// (docs/federated.md, issue 14's ninth pass).
//
// pairMidBudget (8 MB) caps the budget of a model between 4 and 8 MB, and
// a model's own size caps it up to 16 MB: a model of a few MB has the least
// room under 4 × the model + 100 MB. A wide30 trajectory holding a
// 3.31 MB model peaked at 123–126 MB with 16 MB against its 124.7 MB
// bound, and at 114–115 MB with 8 MB, for 4–5 % more CPU (three
// alternated pairs in one process, on two trajectories); adult at ε = 1
// and 3 ran as fast with either (docs/aim-performance.md, "Issue 19,
// eighteenth pass").
const (
	pairMinBudget = 1 << 17
	pairMidBudget = 1 << 20
	pairMaxBudget = 1 << 21
)

// announce counts, for the 3-sets of a call about to be computed, the pair
// tables each could take, so that a table is chosen and computed for the
// triples that share it rather than for the first one alone.
func (m *Model) announce(sets [][]int, cache *reduceCache) {
	if cache.pairMax <= 0 {
		return
	}
	var keys []string
	for _, s := range sets {
		if len(s) != 3 {
			continue
		}
		attrs := []int{s[0], s[1], s[2]}
		slices.Sort(attrs)
		if m.jt.containing(attrs) >= 0 || m.plannedCost(attrs, cache) < minPairDirect {
			continue
		}
		for _, x := range attrs {
			if r, ok := m.route(attrs, x, cache); ok {
				keys = append(keys, r.key)
			}
		}
	}
	cache.mu.Lock()
	defer cache.mu.Unlock()
	for _, k := range keys {
		cache.wanted[k]++
	}
}

// wantedOf returns how many announced triples could take the table under
// key.
func (c *reduceCache) wantedOf(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wanted[key]
}

// plannedCost is eliminationCost, kept in the cache: announce, the
// triples and their pair tables plan the same sets.
func (m *Model) plannedCost(sorted []int, cache *reduceCache) float64 {
	key := string(fmt.Appendf(nil, "%v", sorted))
	cache.mu.Lock()
	c, ok := cache.costs[key]
	cache.mu.Unlock()
	if ok {
		return c
	}
	c = m.eliminationCost(sorted, cache)
	cache.mu.Lock()
	cache.costs[key] = c
	cache.mu.Unlock()
	return c
}
