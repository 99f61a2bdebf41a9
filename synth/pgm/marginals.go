package pgm

import (
	"container/list"
	"context"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"sync"

	"github.com/dpsql/dpsql/internal/par"
	"github.com/dpsql/dpsql/synth/pgm/internal/kernel"
)

// This file answers marginals outside one clique by variable elimination in
// probability space over the smallest subtree of the junction tree that
// holds the query (Koller & Friedman §10.3): the joint over a connected
// subtree T with top clique r is p_r · Π_{v ∈ T, v ≠ r} p(v | sep(v)), every
// factor a probability or a conditional probability, so every product and
// every partial sum lies in [0, 1]: no logarithm, no exponential, no
// overflow, and a zero stays exactly zero (0/0 is taken as 0 in the
// conditionals, as the cell has probability 0 anyway).
//
// Each clique's factor is first reduced to the attributes the query needs
// from it (the query's, its separators within T): p_v summed down to them,
// then divided by its separator marginal (summing commutes with that
// division), so the model keeps no table beyond its clique marginals.
// Those reductions are cached across the sets of one Marginals call, as sets
// that share a subtree share them. The reduced factors are then combined by greedy elimination
// (smallest combined table first), each step a fused product-and-sum that
// never materialises the product.

// reduceCache holds reduced clique factors and branch conditionals shared by
// the sets of one Marginals call, up to a budget of cells.
type reduceCache struct {
	mu     sync.Mutex
	tables map[string][]float64
	budget int // cells still allowed
	// pairs are pair routes' tables (pair.go) and shared elimination
	// steps, kept in pairOrder (least recently used first) within pairMax
	// cells, of which pairBudget are left; credit is what triples that
	// wanted an uncomputed table spent.
	pairs               map[string]*list.Element // of *pairEntry
	pairOrder           *list.List
	pairMax, pairBudget int
	credit              map[string]float64
	wanted              map[string]int     // by announce
	costs               map[string]float64 // plannedCost's
	// routed counts the triples computed by a pair route, fresh those
	// among them whose table was computed for them.
	routed, fresh int
	// stepHits and stepMisses count the shared elimination steps found in
	// the cache and computed (for tests and traces).
	stepHits, stepMisses int
	// below[v] is the union of the cliques of v's subtree (v included).
	below []bitset
	// large are result tables above maxPooled that MarginalsVisit calls
	// sharing this cache reuse (largeTables).
	large largeTables
}

// largeTables are the result tables above maxPooled cells that the visits
// sharing one reduceCache reuse: they go with the cache (a call, or a
// Batch: an AIM round), where the process-wide pool would keep the
// largest through every fit until the next scoring. Allocated per visit,
// adult's large triples made 128 MB of garbage a run at ε = 1, 40 % of
// the run's, and a third of its collections. It holds at most one table
// per goroutine visiting at once.
type largeTables struct {
	mu   sync.Mutex
	free [][]float64
}

// get returns a free table of at least n cells (nil if none: the visit
// allocates one).
func (l *largeTables) get(n int) []float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	best, small := -1, -1 // the smallest table that fits, the smallest
	for i, t := range l.free {
		if cap(t) >= n && (best < 0 || cap(t) < cap(l.free[best])) {
			best = i
		}
		if small < 0 || cap(t) < cap(l.free[small]) {
			small = i
		}
	}
	if best < 0 {
		if small >= 0 {
			// None is large enough: the smallest goes, so that the
			// table about to be allocated takes its place.
			l.free = slices.Delete(l.free, small, small+1)
		}
		return nil
	}
	t := l.free[best]
	l.free = slices.Delete(l.free, best, best+1)
	return t
}

// put returns t to the free tables.
func (l *largeTables) put(t []float64) {
	l.mu.Lock()
	l.free = append(l.free, t)
	l.mu.Unlock()
}

func newReduceCache(jt *junctionTree, budget int) *reduceCache {
	c := &reduceCache{tables: make(map[string][]float64), budget: budget,
		pairs: make(map[string]*list.Element), pairOrder: list.New(), credit: make(map[string]float64), wanted: make(map[string]int), costs: make(map[string]float64)}
	if budget > 0 {
		// Pair tables are small (a pair and a separator); a budget
		// below a few tables would drop them before their triples come,
		// and one of twice a large model would double the memory
		// scoring holds besides the model. Shared elimination steps
		// (productEliminationCached) are kept within the same budget,
		// the reduced cliques' (2 × the model's cells): on wide30 the
		// steps its triples repeat are the root clique's sweeps, each
		// near the root's size.
		// Models above 16 MB had half the 32 MB cap, 16 MB, which kept
		// AIM at ε = 3 (19.6 MB models) within 4 × the model + 100 MB;
		// they keep it: halved again, adult at ε = 10 ran 10 % slower
		// on a fixed-noise trajectory. Below, the cap is twice the model
		// (the reduction budget) up to 8 MB (pairMidBudget), then the
		// model's own size.
		c.pairMax = min(max(budget, pairMinBudget), max(pairMidBudget, budget/2), pairMaxBudget)
		c.pairBudget = c.pairMax
	}
	if jt != nil {
		c.below = make([]bitset, len(jt.cliques))
		for _, v := range jt.post {
			c.below[v] = jt.sets[v].clone()
			for _, w := range jt.children[v] {
				c.below[v].or(c.below[w])
			}
		}
	}
	return c
}

func (c *reduceCache) get(key string) ([]float64, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.tables[key]
	return t, ok
}

func (c *reduceCache) put(key string, t []float64) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.tables[key]; !ok && len(t) <= c.budget {
		c.tables[key] = t
		c.budget -= len(t)
	}
}

// reduceKey identifies the reduction of clique v (as the subtree's top or
// not) to the members of keep.
func reduceKey(v int, top bool, keep bitset) string {
	b := make([]byte, 0, 9+8*len(keep))
	b = fmt.Appendf(b, "%d/%t", v, top)
	for _, w := range keep {
		for s := 0; s < 64; s += 8 {
			b = append(b, byte(w>>s))
		}
	}
	return string(b)
}

// keepAt sets keep to what clique v of the subtree (kept, top) keeps for a
// query over need: need and what v shares with its neighbours in the
// subtree.
func (jt *junctionTree) keepAt(keep, need bitset, kept []bool, top, v int) {
	clear(keep)
	keep.or(need)
	if v != top {
		for _, a := range jt.sep[v] {
			keep.set(a)
		}
	}
	for _, c := range jt.children[v] {
		if kept[c] {
			for _, a := range jt.sep[c] {
				keep.set(a)
			}
		}
	}
}

// subtree marks the cliques of the smallest subtree that holds the needed
// attributes and returns its top clique, or -1 if nothing is needed.
func (jt *junctionTree) subtree(need bitset) (kept []bool, top int) {
	k := len(jt.cliques)
	kept = make([]bool, k)
	nkept := make([]int, k) // kept children
	for _, v := range jt.post {
		keep := nkept[v] > 0
		for _, a := range jt.cliques[v] {
			if need.has(a) && !slices.Contains(jt.sep[v], a) {
				keep = true
			}
		}
		kept[v] = keep
		if keep && jt.parent[v] >= 0 {
			nkept[jt.parent[v]]++
		}
	}
	top = jt.root
	for {
		// Move the top down while it has a single kept child and adds
		// nothing needed beyond that child's separator.
		if nkept[top] != 1 {
			break
		}
		var child int
		for _, c := range jt.children[top] {
			if kept[c] {
				child = c
			}
		}
		extra := false
		for _, a := range jt.cliques[top] {
			if need.has(a) && !slices.Contains(jt.sep[child], a) {
				extra = true
			}
		}
		if extra {
			break
		}
		kept[top] = false
		top = child
	}
	if !kept[top] {
		return kept, -1
	}
	return kept, top
}

// eliminate computes the probability marginal over the ascending attrs,
// weighted by the evidence, over the smallest subtree that holds attrs and
// the evidence. cache may be nil.
func (m *Model) eliminate(attrs []int, weight map[int][]float64, cache *reduceCache, dst []float64) factor {
	if cache == nil {
		// A cache that stores nothing, so that a set alone is computed
		// as in a batch, to the bit (but for pair routes, whose choice
		// depends on the tables cached).
		cache = newReduceCache(m.jt, 0)
	}
	if len(attrs) == 3 && len(weight) == 0 {
		if f, ok := m.viaPair(attrs, cache, dst); ok {
			return f
		}
	}
	return m.eliminateDirect(attrs, weight, cache, dst)
}

// eliminateDirect is eliminate without pair routes; cache must not be nil.
func (m *Model) eliminateDirect(attrs []int, weight map[int][]float64, cache *reduceCache, dst []float64) factor {
	jt := m.jt
	n := m.dom.Len()
	need := bitsetOf(n, attrs)
	for a := range weight {
		need.set(a)
	}
	kept, top := jt.subtree(need)
	var fs []factor
	if top >= 0 {
		keep := newBitset(n)
		var walk func(v int)
		walk = func(v int) {
			jt.keepAt(keep, need, kept, top, v)
			fs = append(fs, m.reduceClique(v, v == top, keep, cache))
			for _, c := range jt.children[v] {
				if !kept[c] {
					continue
				}
				if a := m.branchAttr(c, need, cache); a >= 0 && m.narrowest(c, a, cache) == c {
					if f, ok := m.branchConditional(c, a, cache); ok {
						fs = append(fs, f)
						continue
					}
				}
				walk(c)
			}
		}
		walk(top)
	}
	for a, w := range weight {
		fs = append(fs, factor{attrs: []int{a}, vals: w})
	}
	// The intermediate tables of one elimination are bounded by a few
	// times the model's size or the result's, and by 2^22 cells (32 MB)
	// for small models.
	limit := float64(max(4*jt.total, 4*m.dom.Cells(attrs), 1<<22))
	return productEliminationCached(m.dom, fs, attrs, limit, dst, cache)
}

// branchAttr returns the one needed attribute that the subtree of the kept
// child c holds outside sep(c), or -1 if there are several. Such a branch contributes only P(a | sep(c)) to the product (the
// junction tree's separators make a independent of the rest given sep(c)),
// and that conditional is the same for every query whose subtree reaches c
// for a alone: branchConditional computes it once per Marginals call. On
// a wide table thousands of 3-way queries share each such branch, which
// variable elimination otherwise recomputed along the whole path for each.
func (m *Model) branchAttr(c int, need bitset, cache *reduceCache) int {
	found := -1
	below := cache.below[c]
	for i, w := range need {
		w &= below[i]
		for w != 0 {
			a := i*64 + bits.TrailingZeros64(w)
			w &= w - 1
			if slices.Contains(m.jt.sep[c], a) {
				continue
			}
			if found >= 0 {
				return -1
			}
			found = a
		}
	}
	return found
}

// narrowest returns the clique with the smallest separator (the first one
// of those) on the path from c down to the nearest clique holding a. The
// branch is replaced by its conditional there: a conditional on a wider
// separator higher up would cost more than eliminating the cliques down to
// the narrow one with the rest of the query.
func (m *Model) narrowest(c, a int, cache *reduceCache) int {
	jt := m.jt
	best, bestCells := c, math.Inf(1)
	for v := c; ; {
		if cells := float64(m.dom.Cells(jt.sep[v])); cells < bestCells {
			best, bestCells = v, cells
		}
		if jt.sets[v].has(a) {
			return best
		}
		v = cache.child(jt, v, a)
	}
}

// child returns the child of v whose subtree holds a (a ∉ v).
func (c *reduceCache) child(jt *junctionTree, v, a int) int {
	for _, x := range jt.children[v] {
		if c.below[x].has(a) {
			return x
		}
	}
	panic("pgm: attribute not below clique")
}

// maxBranchCells bounds a branch conditional's table: one over a large
// separator could cost more than the elimination it replaces.
const maxBranchCells = 1 << 20

// branchConditional returns P(a | sep(c)) as a factor over sep(c) ∪ {a}
// (ascending), where a ∉ sep(c) lies in the subtree of clique c, from the
// cache when it is there; ok is false if the table would exceed
// maxBranchCells. It follows the path from c down to the nearest clique
// holding a: P(a | S_c) = Σ_{S_w \ S_c} p(S_c ∪ S_w | S_c) · P(a | S_w) for
// the child w on that path (a is independent of S_c given S_w). The
// result must not be modified.
func (m *Model) branchConditional(c, a int, cache *reduceCache) (factor, bool) {
	jt := m.jt
	n := m.dom.Len()
	scope := bitsetOf(n, jt.sep[c])
	scope.set(a)
	if scope.cells(m.dom) > maxBranchCells {
		return factor{}, false
	}
	attrs := scope.attrs()
	key := fmt.Sprintf("b%d/%d", c, a)
	if t, ok := cache.get(key); ok {
		return factor{attrs: attrs, vals: t, key: key}, true
	}
	var f factor
	if jt.sets[c].has(a) {
		f = m.reduceClique(c, false, scope, cache)
	} else {
		w := cache.child(jt, c, a)
		sub, ok := m.branchConditional(w, a, cache)
		if !ok {
			return factor{}, false
		}
		keep := bitsetOf(n, jt.sep[c])
		for _, b := range jt.sep[w] {
			keep.set(b)
		}
		cond := m.reduceClique(c, false, keep, cache)
		over := keep.clone()
		over.set(a)
		f = productSum(m.dom, []factor{cond, sub}, over.attrs(), attrs)
	}
	cache.put(key, f.vals)
	return factor{attrs: attrs, vals: f.vals, key: key}, true
}

// reduceClique returns clique v's factor (p_v if v is the subtree's top,
// p(v | sep(v)) otherwise) summed down to the members of keep that v holds,
// which include sep(v) unless v is the top; it comes from the cache when it
// is there. The result must not be modified.
func (m *Model) reduceClique(v int, top bool, keep bitset, cache *reduceCache) factor {
	jt := m.jt
	c := jt.cliques[v]
	sub := keep.within(c)
	if top && len(sub) == len(c) {
		return factor{attrs: c, vals: jt.block(m.p, v), key: fmt.Sprintf("t%d", v)}
	}
	var key string
	if cache != nil {
		key = reduceKey(v, top, bitsetOf(m.dom.Len(), sub))
		if t, ok := cache.get(key); ok {
			return factor{attrs: sub, vals: t, key: key}
		}
	}
	out := make([]float64, m.dom.Cells(sub))
	if len(sub) == len(c) {
		copy(out, jt.block(m.p, v))
	} else {
		red := kernel.NewReduction(jt.sizesOf(c), positions(c, sub))
		sumPooled(red, out, jt.block(m.p, v))
	}
	if !top {
		sep := jt.sep[v]
		dims := positions(sub, sep)
		ps := getTable(m.dom.Cells(sep))
		defer putTable(ps)
		red := kernel.NewReduction(m.dom.sizesOf(sub), dims)
		sumPooled(red, *ps, out)
		// Each cell's separator cell from a tiled map, in cell order: a
		// full map was 4 bytes a cell of garbage per call, a third of
		// what scoring and the drift bounds allocated at ε = 10.
		kernel.NewTiled(m.dom.sizesOf(sub), dims, tileCells).Each(0, len(out), func(at, base int, idx []int32) {
			for j, s0 := range idx {
				i := at + j
				if s := (*ps)[base+int(s0)]; s > 0 {
					out[i] /= s
				} else {
					out[i] = 0
				}
			}
		})
	}
	if cache != nil {
		cache.put(key, out)
	}
	return factor{attrs: sub, vals: out, key: key}
}

// productElimination sums every attribute outside keep (ascending) out of the
// product of the probability-space factors fs and returns the result over
// keep. Each step takes an attribute and sums it out of the product of the
// factors that hold it, together with every other attribute found only in
// those factors, in one fused pass. The order is the cheapest (in cells
// swept) of a few greedy rules, planned on the factors' scopes before any
// arithmetic, among those whose intermediate tables stay within limit
// cells. When none does, it conditions on the largest attribute of the
// largest intermediate table: it sums the eliminations of the factors
// restricted to each of its values. That bounds the workspace but repeats,
// for every value, the part of the elimination that does not involve the
// attribute, so it is a fallback for limits that ordinary queries stay
// within. The factors are not modified.
func productElimination(dom *Domain, fs []factor, keep []int, limit float64) factor {
	return productEliminationInto(dom, fs, keep, limit, nil)
}

// productEliminationInto is productElimination with the result written
// into dst when it is large enough (else into a new table).
func productEliminationInto(dom *Domain, fs []factor, keep []int, limit float64, dst []float64) factor {
	return productEliminationCached(dom, fs, keep, limit, dst, nil)
}

// productEliminationCached is productEliminationInto sharing steps through
// cache (which may be nil). A step whose factors all have keys is named
// after them and its result (see shareStep); when cache holds that name the
// step is not computed again. The same factors in the same order give the
// same table to the bit, so sharing changes no result.
func productEliminationCached(dom *Domain, fs []factor, keep []int, limit float64, dst []float64, cache *reduceCache) factor {
	n := dom.Len()
	keepSet := bitsetOf(n, keep)
	scopes := make([]bitset, len(fs))
	for i, f := range fs {
		scopes[i] = bitsetOf(n, f.attrs)
	}
	var (
		order, minOrder []int
		peak            bitset
		best, minPeak   = math.Inf(1), math.Inf(1)
	)
	for rule := range numRules {
		o, cost, pk := planElimination(dom, scopes, keepSet, rule)
		if c := pk.cells(dom); c <= limit && cost < best {
			order, best = o, cost
		} else if order == nil && c < minPeak {
			minOrder, minPeak, peak = o, c, pk
		}
	}
	if best >= minOptimalCost {
		if o, cost, ok := planOptimal(dom, scopes, keepSet, limit); ok && cost < best {
			order, best = o, cost
		}
	}
	if order == nil {
		// Condition on the largest eliminated attribute of the peak.
		b := -1
		for _, a := range peak.attrs() {
			if !keepSet.has(a) && (b < 0 || dom.sizes[a] > dom.sizes[b]) {
				b = a
			}
		}
		if b < 0 || dom.sizes[b] == 1 {
			order = minOrder // the peak holds only the query's attributes
		} else {
			res := factor{attrs: keep, vals: resize(dst, dom.Cells(keep))}
			clear(res.vals)
			sub := make([]factor, len(fs))
			for x := range dom.sizes[b] {
				for i, f := range fs {
					sub[i] = restrict(dom, f, b, x)
				}
				r := productElimination(dom, sub, keep, limit)
				for i, v := range r.vals {
					res.vals[i] += v
				}
			}
			return res
		}
	}
	fs = slices.Clone(fs)
	owned := make(map[*float64]*[]float64) // the steps' tables, by first cell
	elim := newBitset(n)
	for _, s := range scopes {
		elim.or(s)
	}
	for _, a := range keep {
		elim.clear(a)
	}
	for _, a := range order {
		u := newBitset(n)
		var with, without []factor
		for _, f := range fs {
			if slices.Contains(f.attrs, a) {
				with = append(with, f)
				for _, b := range f.attrs {
					u.set(b)
				}
			} else {
				without = append(without, f)
			}
		}
		out := u.clone()
		for _, b := range u.attrs() {
			if elim.has(b) && !slices.ContainsFunc(without, func(f factor) bool { return slices.Contains(f.attrs, b) }) {
				out.clear(b)
				elim.clear(b)
			}
		}
		oa := out.attrs()
		var res factor
		key := ""
		if cache != nil && cache.pairMax > 0 && shareStep(u.cells(dom), dom.Cells(oa)) {
			key = stepKey(with, oa)
		}
		if key != "" {
			if t, ok := cache.getPair(key); ok {
				res = factor{attrs: oa, vals: t, key: key}
				cache.countStep(true)
			} else {
				cache.countStep(false)
				res = productSum(dom, with, u.attrs(), oa)
				res.key = key
				cache.putPair(key, res.vals)
			}
		} else {
			buf := getTable(dom.Cells(oa))
			res = productSumInto(*buf, dom, with, u.attrs(), oa)
			owned[&(*buf)[0]] = buf
		}
		fs = append(without, res)
		// The step's own tables are consumed: reuse them.
		for _, f := range with {
			if b, ok := owned[&f.vals[0]]; ok {
				delete(owned, &f.vals[0])
				putTable(b)
			}
		}
	}
	// Attributes of keep that no factor mentions are uniform (this happens
	// only for an empty model query): they need no factor, the product
	// broadcasts.
	res := productSumInto(resize(dst, dom.Cells(keep)), dom, fs, keep, keep)
	for _, b := range owned {
		putTable(b)
	}
	return res
}

// countStep records a shareable step, found in the cache (hit) or not.
func (c *reduceCache) countStep(hit bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if hit {
		c.stepHits++
	} else {
		c.stepMisses++
	}
}

// shareStep reports whether an elimination step sweeping sweep cells into
// a table of out cells is worth keeping for other queries of the call:
// large enough that the lookup costs little beside it, and reducing (a
// table nearly the sweep's size costs as much to keep as to recompute).
func shareStep(sweep float64, out int) bool {
	return sweep >= minShareSweep && float64(out) <= sweep/2
}

// minShareSweep is the sweep (cells) from which a step is shared. A
// variable so that tests can share the steps of small models.
var minShareSweep = float64(1 << 12)

// stepKey names the step that sums the product of with down to out, or
// returns "" when a factor has no key.
func stepKey(with []factor, out []int) string {
	n := 2 + 8*len(out)
	for _, f := range with {
		if f.key == "" {
			return ""
		}
		n += len(f.key) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, 's', '(')
	for _, f := range with {
		b = append(b, f.key...)
		b = append(b, ',')
	}
	b = append(b, ')')
	for _, a := range out {
		b = strconv.AppendInt(b, int64(a), 10)
		b = append(b, '.')
	}
	return string(b)
}

// tables recycles the intermediate tables of eliminations (scoring runs
// thousands a round; allocating each made most of AIM's garbage).
var tables = sync.Pool{New: func() any { return new([]float64) }}

// maxPooled bounds the tables kept for reuse (1 MB): a pooled table counts
// as live heap until the pool is cleared, and the few large tables would
// raise the heap's high-water mark by more than their garbage did.
const maxPooled = 1 << 17

// putTable returns b to the pool if it is small enough.
func putTable(b *[]float64) {
	if cap(*b) <= maxPooled {
		tables.Put(b)
	}
}

// getTable returns a pooled table of n cells (contents undefined).
func getTable(n int) *[]float64 {
	b := tables.Get().(*[]float64)
	if cap(*b) < n {
		*b = make([]float64, n)
	}
	*b = (*b)[:n]
	return b
}

// sumPooled is red.Sum(dst, src, scratch) with the scratch from the pool of
// tables (getTable) rather than a new one per reduction.
func sumPooled(red *kernel.Reduction, dst, src []float64) {
	scratch := getTable(red.Scratch())
	red.Sum(dst, src, *scratch)
	putTable(scratch)
}

// resize returns buf with length n, reusing its storage when it can (the
// contents are not kept).
func resize(buf []float64, n int) []float64 {
	if cap(buf) < n {
		return make([]float64, n)
	}
	return buf[:n]
}

// Elimination rules: the attribute whose step sweeps the fewest cells, whose
// step leaves the smallest table, or whose step shrinks the tables most.
const (
	minSweep = iota
	minResult
	minGrowth
	numRules
)

// planElimination returns the order in which productElimination eliminates
// the attributes outside keep from factors with the given scopes under rule,
// and the cells it sweeps. Attributes summed out alongside another are not
// listed.
func planElimination(dom *Domain, scopes []bitset, keep bitset, rule int) (order []int, cost float64, peak bitset) {
	n := dom.Len()
	scopes = slices.Clone(scopes)
	elim := newBitset(n)
	for _, s := range scopes {
		elim.or(s)
	}
	for i := range elim {
		elim[i] &^= keep[i]
	}
	peak = newBitset(n)
	u, out, rest := newBitset(n), newBitset(n), newBitset(n)
	// step fills u (the union of the scopes holding a), rest (the union of
	// the others) and out (u less what is summed out with a).
	step := func(a int) {
		clear(u)
		clear(rest)
		for _, s := range scopes {
			if s.has(a) {
				u.or(s)
			} else {
				rest.or(s)
			}
		}
		copy(out, u)
		for i := range out {
			out[i] &^= elim[i] &^ rest[i]
		}
	}
	for !elim.empty() {
		best, bestCost := -1, math.Inf(1)
		for _, a := range elim.attrs() {
			step(a)
			var cost float64
			switch rule {
			case minSweep:
				cost = u.cells(dom)
			case minResult:
				cost = out.cells(dom)
			case minGrowth:
				cost = out.cells(dom)
				for _, s := range scopes {
					if s.has(a) {
						cost -= s.cells(dom)
					}
				}
			}
			if cost < bestCost {
				best, bestCost = a, cost
			}
		}
		step(best)
		order = append(order, best)
		cost += u.cells(dom)
		if out.cells(dom) > peak.cells(dom) {
			copy(peak, out)
		}
		k := 0
		for _, s := range scopes {
			if !s.has(best) {
				scopes[k] = s
				k++
			}
		}
		scopes = append(scopes[:k], out.clone())
		for i := range elim {
			elim[i] &^= u[i] &^ out[i]
		}
	}
	return order, cost, peak
}

// restrict returns f with attribute b fixed to x (f itself if it does not
// hold b).
func restrict(dom *Domain, f factor, b, x int) factor {
	p, ok := slices.BinarySearch(f.attrs, b)
	if !ok {
		return f
	}
	inner := 1
	for _, a := range f.attrs[p+1:] {
		inner *= dom.sizes[a]
	}
	size := dom.sizes[b]
	out := factor{attrs: slices.Delete(slices.Clone(f.attrs), p, p+1), vals: make([]float64, len(f.vals)/size)}
	for o, i := 0, x*inner; i < len(f.vals); o, i = o+inner, i+size*inner {
		copy(out.vals[o:o+inner], f.vals[i:i+inner])
	}
	return out
}

// productSum returns Σ_{over \ out} Π fs as a factor over out ⊆ over, where
// over (ascending) holds every attribute of fs. It allocates only the result.
func productSum(dom *Domain, fs []factor, over, out []int) factor {
	// make zeroes the table: clearing it again was a fifth of scoring's
	// product sums at ε = 10.
	return productSumZeroed(make([]float64, dom.Cells(out)), dom, fs, over, out)
}

// productSumInto is productSum into vals (of the result's length; cleared
// here).
func productSumInto(dst []float64, dom *Domain, fs []factor, over, out []int) factor {
	clear(dst)
	return productSumZeroed(dst, dom, fs, over, out)
}

// productSumZeroed is productSumInto for a dst that is all zeros.
func productSumZeroed(dst []float64, dom *Domain, fs []factor, over, out []int) factor {
	res := factor{attrs: out, vals: dst}
	k := len(over)
	if k == 0 {
		p := 1.0
		for _, f := range fs {
			p *= f.vals[0]
		}
		res.vals[0] = p
		return res
	}
	if len(fs) == 2 && contract2(dst, dom, fs[0], fs[1], over, out) {
		return res
	}
	if len(fs) >= 3 && productSumMerged(dst, dom, fs, over, out) {
		return res
	}
	// Strides in the natural (ascending) order of over: nat[j][p] is
	// factor j's stride along over[p], nat[len(fs)] the result's.
	nat := make([][]int, len(fs)+1)
	natOf := func(attrs []int) []int {
		st := make([]int, k)
		s := 1
		for j := len(attrs) - 1; j >= 0; j-- {
			p, _ := slices.BinarySearch(over, attrs[j])
			st[p] = s
			s *= dom.sizes[attrs[j]]
		}
		return st
	}
	for j, f := range fs {
		nat[j] = natOf(f.attrs)
	}
	nat[len(fs)] = natOf(out)
	// Loop order: the outer dimensions in the tables' row-major order, and
	// innermost the one whose rows are cheapest per cell (innerCost): on a
	// wide table's eliminations the largest dimension, innermost before,
	// was often one that every table strides across, writing a table of
	// millions of cells tens of kilobytes apart per step.
	cells := make([]int, len(fs)+1)
	for j, f := range fs {
		cells[j] = len(f.vals)
	}
	cells[len(fs)] = len(dst)
	inner, best := 0, math.Inf(1)
	for p := range k {
		if c := innerCost(nat, cells, p, dom.sizes[over[p]]); c < best {
			inner, best = p, c
		}
	}
	dims := make([]int, 0, k)
	for p := range k {
		if p != inner {
			dims = append(dims, p)
		}
	}
	dims = append(dims, inner)
	sizes := make([]int, k)
	for i, d := range dims {
		sizes[i] = dom.sizes[over[d]]
	}
	// strides[j][i] is the stride of factor j along loop dimension i;
	// strides[len(fs)] is the result's.
	strides := make([][]int, len(fs)+1)
	vals := make([][]float64, len(fs))
	for j := range nat {
		st := make([]int, 0, k)
		for _, d := range dims {
			st = append(st, nat[j][d])
		}
		strides[j] = st
		if j < len(fs) {
			vals[j] = fs[j].vals
		}
	}
	sizes, strides = coalesce(sizes, strides)
	productSumLoop(res.vals, vals, strides, sizes)
	return res
}

// coalesce merges each loop dimension into the next inner one when every
// table steps through both as through one dimension (its stride along the
// outer is the inner stride times the inner size, 0 included): the loop
// then visits the same cells in the same order, in longer rows under a
// shallower odometer. Short rows made the odometer and the fixed
// factors' product a third of wide30's scoring. It rewrites sizes and
// strides in place and returns them shortened.
func coalesce(sizes []int, strides [][]int) ([]int, [][]int) {
	k := len(sizes)
	w := k - 1 // the merged dimension being grown, written at w
	for i := k - 2; i >= 0; i-- {
		merge := true
		for _, st := range strides {
			if st[i] != st[w]*sizes[w] {
				merge = false
				break
			}
		}
		if merge {
			sizes[w] *= sizes[i]
			continue
		}
		w--
		sizes[w] = sizes[i]
		for _, st := range strides {
			st[w] = st[i]
		}
	}
	for j, st := range strides {
		strides[j] = st[w:]
	}
	return sizes[w:], strides
}

// innerCost is the estimated cost per cell (in nanoseconds, roughly) of
// productSumLoop with dimension p (of the given size) innermost, from the
// strides nat (the result's last). A row costs about 40 ns of overhead
// (the odometer, the fixed factors' product, the call), spread over its
// cells; per cell each varying table costs a read, cheap when contiguous,
// dear when every read is on another cache line; the result is read and
// written, or summed in a register when the row is summed out. Measured
// on wide30's eliminations, the innermost dimension changed a step's
// time by up to 20× (a stride-1 dimension of 38 against a strided one of
// 2), and the largest dimension was not the best one.
func innerCost(nat [][]int, cells []int, p, size int) float64 {
	access := func(st, cells int) float64 {
		switch {
		case st == 0:
			return 0
		case st == 1:
			return 0.5
		case cells <= 1<<15:
			return 1 // the table stays in L2
		case st < 8:
			return 1.5
		}
		return 4
	}
	c := 40 / float64(size)
	for j, st := range nat[:len(nat)-1] {
		c += access(st[p], cells[j])
	}
	if os := nat[len(nat)-1][p]; os == 0 {
		c += 0.3
	} else {
		c += 2 * access(os, cells[len(nat)-1])
	}
	return c
}

// productSumLoop runs dst[o] += Π_j vals[j][off_j] over the row-major cells of
// a table of the given sizes, the offsets following strides (the last row
// is dst's).
//
// The factors that do not vary along the innermost dimension (stride 0)
// are multiplied once per inner loop rather than once per cell, and an
// inner loop whose constant part is 0 is skipped: on adult's 3-way scoring
// most inner loops have one or more such factors. That regroups the
// product, so a cell can differ from the plain left-to-right product by
// round-off.
func productSumLoop(dst []float64, vals [][]float64, strides [][]int, sizes []int) {
	k := len(sizes)
	nf := len(vals)
	last := sizes[k-1]
	ls := make([]int, nf+1)
	for j := range ls {
		ls[j] = strides[j][k-1]
	}
	os := ls[nf]
	// The rows of the second innermost dimension run in a loop of their
	// own (one row when there is none): a row then costs an addition per
	// table instead of the odometer's carries, and the fixed factors that
	// do not vary along it are multiplied once for all of them.
	mid, ms := 1, make([]int, nf+1)
	if k >= 2 {
		mid = sizes[k-2]
		for j := range ms {
			ms[j] = strides[j][k-2]
		}
	}
	// vary lists the factors with a non-zero inner stride; of the others,
	// fixedMid those varying along the second dimension, fixed the rest.
	var vary, fixed, fixedMid []int
	for j := range nf {
		switch {
		case ls[j] != 0:
			vary = append(vary, j)
		case ms[j] != 0:
			fixedMid = append(fixedMid, j)
		default:
			fixed = append(fixed, j)
		}
	}
	off := make([]int, nf+1)
	row := make([]int, nf+1)
	digit := make([]int, k)
	for {
		c0 := 1.0
		for _, j := range fixed {
			c0 *= vals[j][off[j]]
		}
		if c0 != 0 {
			copy(row, off)
			for range mid {
				c := c0
				for _, j := range fixedMid {
					c *= vals[j][row[j]]
				}
				if c != 0 {
					productSumRow(dst, row[nf], os, last, c, vals, row, ls, vary)
				}
				for j, s := range ms {
					row[j] += s
				}
			}
		}
		// Odometer over the dimensions outside the last two.
		d := k - 3
		for ; d >= 0; d-- {
			digit[d]++
			for j := range off {
				off[j] += strides[j][d]
			}
			if digit[d] < sizes[d] {
				break
			}
			for j := range off {
				off[j] -= strides[j][d] * sizes[d]
			}
			digit[d] = 0
		}
		if d < 0 {
			return
		}
	}
}

// productSumRow is productSumLoop's inner loop: dst[o+i·os] += c·Π_{j ∈
// vary} vals[j][off[j]+i·ls[j]] for i < n (summed into dst[o] when os is
// 0, in a register).
func productSumRow(dst []float64, o, os, n int, c float64, vals [][]float64, off, ls, vary []int) {
	var sum float64
	switch len(vary) {
	case 0:
		if os == 0 {
			sum = c * float64(n)
		} else {
			for i := range n {
				dst[o+i*os] += c
			}
		}
	case 1:
		a, sa := vals[vary[0]][off[vary[0]]:], ls[vary[0]]
		a = a[:(n-1)*sa+1]
		if os == 0 {
			for i := range n {
				sum += a[i*sa]
			}
			sum *= c
		} else if os == 1 && sa == 1 {
			d := dst[o : o+n]
			a = a[:n]
			for i := range d {
				d[i] += c * a[i]
			}
		} else {
			d := dst[o : o+(n-1)*os+1]
			for i, ia, id := 0, 0, 0; i < n; i, ia, id = i+1, ia+sa, id+os {
				d[id] += c * a[ia]
			}
		}
	case 2:
		a, sa := vals[vary[0]][off[vary[0]]:], ls[vary[0]]
		b, sb := vals[vary[1]][off[vary[1]]:], ls[vary[1]]
		a, b = a[:(n-1)*sa+1], b[:(n-1)*sb+1]
		if os == 0 {
			for i, ia, ib := 0, 0, 0; i < n; i, ia, ib = i+1, ia+sa, ib+sb {
				sum += a[ia] * b[ib]
			}
			sum *= c
		} else {
			d := dst[o : o+(n-1)*os+1]
			for i, ia, ib, id := 0, 0, 0, 0; i < n; i, ia, ib, id = i+1, ia+sa, ib+sb, id+os {
				d[id] += c * a[ia] * b[ib]
			}
		}
	case 3:
		// As the default case, spelled out (the same products in the
		// same order): the pair tables of wide tables' 3-way marginals
		// spend most of their time here.
		a, sa := vals[vary[0]][off[vary[0]]:], ls[vary[0]]
		b, sb := vals[vary[1]][off[vary[1]]:], ls[vary[1]]
		e, se := vals[vary[2]][off[vary[2]]:], ls[vary[2]]
		a, b, e = a[:(n-1)*sa+1], b[:(n-1)*sb+1], e[:(n-1)*se+1]
		if os == 0 {
			for i, ia, ib, ie := 0, 0, 0, 0; i < n; i, ia, ib, ie = i+1, ia+sa, ib+sb, ie+se {
				sum += c * a[ia] * b[ib] * e[ie]
			}
		} else {
			d := dst[o : o+(n-1)*os+1]
			for i, ia, ib, ie, id := 0, 0, 0, 0, 0; i < n; i, ia, ib, ie, id = i+1, ia+sa, ib+sb, ie+se, id+os {
				d[id] += c * a[ia] * b[ib] * e[ie]
			}
		}
	default:
		for i := range n {
			p := c
			for _, j := range vary {
				p *= vals[j][off[j]+i*ls[j]]
			}
			if os == 0 {
				sum += p
			} else {
				dst[o+i*os] += p
			}
		}
	}
	if os == 0 {
		dst[o] += sum
	}
}

// Marginals returns Marginal(sets[i]) for every set (each in the order
// given, as Marginal lays it out). It computes the sets on GOMAXPROCS
// goroutines and shares the reduced clique tables between sets whose
// subtrees overlap (their cache is bounded by the model's size and freed on
// return). It returns ctx's error if cancelled.
func (m *Model) Marginals(ctx context.Context, sets [][]int) ([][]float64, error) {
	out := make([][]float64, len(sets))
	err := m.MarginalsFunc(ctx, sets, func(i int, x []float64) { out[i] = x })
	if err != nil {
		return nil, err
	}
	return out, nil
}

// MarginalsFunc calls f(i, Marginal(sets[i])) for every set, concurrently
// from up to GOMAXPROCS goroutines (f must be safe for that), sharing work
// as Marginals does; f owns the slice it is given. Only the marginals being
// handed to f are held at once, so memory stays bounded by the model size
// plus GOMAXPROCS marginals and their elimination workspace. It stops early
// and returns ctx's error if ctx is cancelled.
func (m *Model) MarginalsFunc(ctx context.Context, sets [][]int, f func(i int, x []float64)) error {
	return m.marginalsEach(ctx, sets, false, f)
}

// MarginalsVisit is MarginalsFunc for callers that only read each
// marginal during f: x is valid until f returns, after which its storage
// is reused for another set. Scoring thousands of candidates then
// allocates a few buffers instead of every candidate's table.
func (m *Model) MarginalsVisit(ctx context.Context, sets [][]int, f func(i int, x []float64)) error {
	return m.marginalsEach(ctx, sets, true, f)
}

// marginalsEach is MarginalsFunc, and MarginalsVisit when reuse is set.
func (m *Model) marginalsEach(ctx context.Context, sets [][]int, reuse bool, f func(i int, x []float64)) error {
	return m.marginalsCached(ctx, sets, reuse, newReduceCache(m.jt, 2*m.jt.total), f)
}

// Batch shares MarginalsVisit's work (the reduced cliques and branch
// conditionals) across several calls on one model, for callers that ask
// for marginals a few at a time, as AIM's lazy selection does. Its cache
// is bounded as one call's is and freed with the Batch.
type Batch struct {
	m     *Model
	cache *reduceCache
}

// NewBatch returns a Batch over m.
func (m *Model) NewBatch() *Batch {
	return &Batch{m: m, cache: newReduceCache(m.jt, 2*m.jt.total)}
}

// Visit is m.MarginalsVisit sharing the Batch's cache.
func (b *Batch) Visit(ctx context.Context, sets [][]int, f func(i int, x []float64)) error {
	return b.m.marginalsCached(ctx, sets, true, b.cache, f)
}

// marginalsCached is marginalsEach with the given cache.
func (m *Model) marginalsCached(ctx context.Context, sets [][]int, reuse bool, cache *reduceCache, f func(i int, x []float64)) error {
	m.checkSets(sets)
	m.announce(sets, cache)
	order := m.cacheOrder(sets, cache)
	err := par.For(ctx, len(sets), 0, func(k int) {
		i := order[k]
		if !reuse {
			f(i, m.marginal(sets[i], nil, cache, nil))
			return
		}
		if n := m.dom.Cells(sets[i]); n > maxPooled && writesInto(sets[i]) {
			x := m.marginal(sets[i], nil, cache, cache.large.get(n))
			f(i, x)
			cache.large.put(x)
			return
		}
		buf := visitBufs.Get().(*[]float64)
		x := m.marginal(sets[i], nil, cache, *buf)
		f(i, x)
		if cap(x) > cap(*buf) && cap(x) <= maxPooled {
			*buf = x
		}
		visitBufs.Put(buf)
	})
	if err != nil {
		return fmt.Errorf("pgm: marginals: %w", err)
	}
	return nil
}

// cacheOrder returns the order in which to compute sets: grouped by the
// junction-tree subtree that answers each (its top and its cliques), so
// that sets sharing reduced cliques, elimination steps and pair tables
// come one after another while those are in the cache. On wide30 this
// order swept 7–8 % fewer cells than the callers' with the 16 MB pair
// cache (docs/aim-performance.md, "Issue 19, thirteenth pass"). The
// results do not depend on the order beyond round-off (which cached
// tables a set finds).
func (m *Model) cacheOrder(sets [][]int, cache *reduceCache) []int {
	order := make([]int, len(sets))
	for i := range order {
		order[i] = i
	}
	if cache.pairMax <= 0 || len(sets) < 3 {
		return order
	}
	n := m.dom.Len()
	keys := make([][]int, len(sets)) // top, then the subtree's cliques
	for i, s := range sets {
		kept, top := m.jt.subtree(bitsetOf(n, s))
		key := []int{top}
		for v, k := range kept {
			if k {
				key = append(key, v)
			}
		}
		keys[i] = key
	}
	slices.SortStableFunc(order, func(a, b int) int { return slices.Compare(keys[a], keys[b]) })
	return order
}

// visitBufs are MarginalsVisit's result buffers. One pool for the process:
// a pool per call would keep every call's buffers until the collector
// clears pools (two cycles later), and with little garbage that is many
// rounds of scoring. Only buffers of at most maxPooled cells are kept, as
// for the elimination tables: the pool held the largest marginal ever
// visited (adult's fnlwgt × capital-gain × capital-loss, 10^6 cells, 8 MB)
// through every fit between two scorings, where a collection counted it as
// live and let the heap grow by twice its size (TestVisitBuffersNotRetained).
// A larger table comes from the cache's largeTables, which go with the
// cache.
var visitBufs = sync.Pool{New: func() any { return new([]float64) }}

// checkSets panics on a set with an attribute out of range or repeated.
func (m *Model) checkSets(sets [][]int) {
	n := m.dom.Len()
	for _, s := range sets {
		for i, a := range s {
			if a < 0 || a >= n || slices.Contains(s[:i], a) {
				panic(fmt.Sprintf("pgm: invalid marginal attributes %v", s))
			}
		}
	}
}
