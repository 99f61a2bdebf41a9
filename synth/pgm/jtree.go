package pgm

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sort"

	"github.com/dpsql/dpsql/synth/pgm/internal/kernel"
)

// junctionTree is the structure a model is fitted over. It is built from the
// measured attribute sets by greedy elimination (I.5 of the spec):
//
//  1. every domain attribute is a node; attributes that share a measured set
//     are adjacent;
//  2. the elimination order repeatedly removes the attribute whose
//     elimination creates the smallest factor (product of sizes of it and
//     its current neighbours; ties go to the lowest index), connecting its
//     neighbours (triangulation);
//  3. the maximal cliques are the maximal sets {a} ∪ neighbours(a) met
//     during elimination, sorted lexicographically;
//  4. the tree is a maximum-weight spanning tree of the clique graph with
//     weight |Ci ∩ Cj| (Kruskal, ties by clique index), rooted at its
//     largest clique; messages are collected towards the root and then
//     distributed from it.
type junctionTree struct {
	dom     *Domain
	cliques [][]int // maximal cliques, each ascending; sorted lexicographically
	sets    []bitset
	order   []int // elimination order

	root     int
	parent   []int   // parent clique, -1 for the root
	children [][]int // child cliques
	post     []int   // every clique, children before parents (root last)
	sep      [][]int // separator with the parent (nil for the root)

	// Arena layout: clique k occupies [off[k], off[k]+cells[k]).
	off, cells []int
	total      int

	// upMap[v] maps cells of clique v to cells of sep[v]; downMap[v] maps
	// cells of parent[v] to cells of sep[v] (nil when v is nested). They are
	// tiled: full int32 maps would take half the model's size again, and
	// belief propagation would stream them from memory on every sweep.
	upMap, downMap []*kernel.Tiled
	// upRed[v] reduces clique v to sep[v]; downRed[v] reduces parent[v] to
	// sep[v] (nil when v is nested).
	upRed, downRed []*kernel.Reduction
	// maxScratch is the largest scratch any of those reductions needs.
	maxScratch int
	// sorted[v] lists v's children by decreasing separator size. nest[c] is
	// the sibling listed before c with the smallest separator containing
	// sep[c] (or -1), and nestMap[c] maps that separator to sep[c].
	sorted  [][]int
	nest    []int
	nestMap [][]int32
}

// eliminate runs greedy min-size elimination over sets (which must cover
// every attribute of dom) and returns the order and the maximal cliques.
// If order is non-nil it is used instead of the greedy choice.
func eliminate(dom *Domain, sets []bitset, order []int) ([]int, []bitset) {
	n := dom.Len()
	cur := make([]bitset, 0, len(sets)+n)
	for _, s := range sets {
		cur = append(cur, s.clone())
	}
	remaining := newBitset(n)
	for a := range n {
		remaining.set(a)
		single := newBitset(n)
		single.set(a)
		cur = append(cur, single)
	}
	fixed := order != nil
	if !fixed {
		order = make([]int, 0, n)
	}
	var factors []bitset
	union := newBitset(n)
	for step := range n {
		best := -1
		if fixed {
			best = order[step]
		} else {
			bestCost := math.Inf(1)
			for a := range n {
				if !remaining.has(a) {
					continue
				}
				clear(union)
				for _, c := range cur {
					if c.has(a) {
						union.or(c)
					}
				}
				cost := union.cells(dom)
				if cost < bestCost {
					best, bestCost = a, cost
				}
			}
			order = append(order, best)
		}
		f := newBitset(n)
		k := 0
		for _, c := range cur {
			if c.has(best) {
				f.or(c)
			} else {
				cur[k] = c
				k++
			}
		}
		cur = cur[:k]
		factors = append(factors, f.clone())
		f.clear(best)
		if !f.empty() {
			cur = append(cur, f)
		}
		remaining.clear(best)
	}
	// Keep the maximal factors, dropping duplicates.
	var maxi []bitset
	for i, f := range factors {
		keep := true
		for j, g := range factors {
			if i != j && f.subsetOf(g) && (!g.subsetOf(f) || j < i) {
				keep = false
				break
			}
		}
		if keep {
			maxi = append(maxi, f)
		}
	}
	return order, maxi
}

// ModelSize is the size in MB (Σ cells × 8 bytes / 2^20) of the junction tree
// that the given cliques induce. It is cheap enough to call for every
// candidate of every AIM round.
func ModelSize(dom *Domain, cliques [][]int) float64 {
	for _, c := range cliques {
		dom.mustAttrs(c)
	}
	if dom.Len() <= 64 {
		return modelSize64(dom, cliques)
	}
	return modelSizeGeneric(dom, cliques)
}

// modelSizeGeneric is ModelSize by eliminate.
func modelSizeGeneric(dom *Domain, cliques [][]int) float64 {
	sets := make([]bitset, len(cliques))
	for i, c := range cliques {
		sets[i] = bitsetOf(dom.Len(), c)
	}
	_, maxi := eliminate(dom, sets, nil)
	var cells float64
	for _, m := range maxi {
		cells += m.cells(dom)
	}
	return cells * 8 / (1 << 20)
}

// modelSize64 is ModelSize for domains of at most 64 attributes: eliminate's
// greedy order and maximal cliques, bit for bit, on one-word sets, and
// with each attribute's elimination cost kept between steps. Eliminating
// b merges the sets holding b, so only the costs of the attributes in that
// merged set change; the others are not recomputed. AIM calls ModelSize
// for every candidate of every round, and on a 30-attribute table the
// generic version, recomputing every cost at every step on slice-backed
// sets, took about as long as the round's scoring.
func modelSize64(dom *Domain, cliques [][]int) float64 {
	n := dom.Len()
	cells := func(m uint64) float64 {
		c := 1.0
		for m != 0 {
			c *= float64(dom.sizes[bits.TrailingZeros64(m)])
			m &= m - 1
		}
		return c
	}
	cur := make([]uint64, 0, len(cliques)+n)
	for _, c := range cliques {
		var m uint64
		for _, a := range c {
			m |= 1 << uint(a)
		}
		cur = append(cur, m)
	}
	for a := range n {
		cur = append(cur, 1<<uint(a))
	}
	union := func(a int) uint64 {
		var u uint64
		bit := uint64(1) << uint(a)
		for _, c := range cur {
			if c&bit != 0 {
				u |= c
			}
		}
		return u
	}
	cost := make([]float64, n)
	for a := range n {
		cost[a] = cells(union(a))
	}
	var remaining uint64
	for a := range n {
		remaining |= 1 << uint(a)
	}
	factors := make([]uint64, 0, n)
	for range n {
		best, bestCost := -1, math.Inf(1)
		for a := range n {
			if remaining&(1<<uint(a)) != 0 && cost[a] < bestCost {
				best, bestCost = a, cost[a]
			}
		}
		bit := uint64(1) << uint(best)
		var f uint64
		k := 0
		for _, c := range cur {
			if c&bit != 0 {
				f |= c
			} else {
				cur[k] = c
				k++
			}
		}
		cur = cur[:k]
		factors = append(factors, f)
		f &^= bit
		if f != 0 {
			cur = append(cur, f)
		}
		remaining &^= bit
		for m := f; m != 0; m &= m - 1 {
			a := bits.TrailingZeros64(m)
			cost[a] = cells(union(a))
		}
	}
	var total float64
	for i, f := range factors {
		keep := true
		for j, g := range factors {
			if i != j && f&^g == 0 && (g&^f != 0 || j < i) {
				keep = false
				break
			}
		}
		if keep {
			total += cells(f)
		}
	}
	return total * 8 / (1 << 20)
}

// maxCells bounds the arena so that index maps fit int32.
const maxCells = math.MaxInt32

// attrSets returns sets as bitsets over dom, or the error of the first set
// that is not a set of dom's attributes.
func attrSets(dom *Domain, sets [][]int) ([]bitset, error) {
	bs := make([]bitset, len(sets))
	for i, s := range sets {
		if err := dom.checkAttrs(s); err != nil {
			return nil, err
		}
		bs[i] = bitsetOf(dom.Len(), s)
	}
	return bs, nil
}

// newJunctionTree builds the junction tree of the given attribute sets. If
// order is non-nil it is the elimination order to use.
func newJunctionTree(dom *Domain, sets [][]int, order []int) (*junctionTree, error) {
	bs, err := attrSets(dom, sets)
	if err != nil {
		return nil, err
	}
	if order != nil {
		if len(order) != dom.Len() {
			return nil, fmt.Errorf("pgm: elimination order has %d attributes, want %d", len(order), dom.Len())
		}
		seen := newBitset(dom.Len())
		for _, a := range order {
			if a < 0 || a >= dom.Len() || seen.has(a) {
				return nil, fmt.Errorf("pgm: elimination order %v is not a permutation", order)
			}
			seen.set(a)
		}
	}
	order, maxi := eliminate(dom, bs, order)
	jt := &junctionTree{dom: dom, order: order}
	for _, m := range maxi {
		jt.cliques = append(jt.cliques, m.attrs())
	}
	sort.Slice(jt.cliques, func(i, j int) bool { return slices.Compare(jt.cliques[i], jt.cliques[j]) < 0 })
	k := len(jt.cliques)
	jt.sets = make([]bitset, k)
	jt.off = make([]int, k)
	jt.cells = make([]int, k)
	var total float64
	for i, c := range jt.cliques {
		jt.sets[i] = bitsetOf(dom.Len(), c)
		jt.off[i] = jt.total
		jt.cells[i] = dom.Cells(c)
		total += float64(jt.cells[i])
		if total > maxCells {
			return nil, fmt.Errorf("pgm: junction tree has more than %d cells (%.4g MB)", maxCells, total*8/(1<<20))
		}
		jt.total += jt.cells[i]
	}
	jt.spanningTree()
	jt.plan()
	return jt, nil
}

// spanningTree connects the cliques by a maximum-weight spanning tree and
// roots it at the largest clique.
func (jt *junctionTree) spanningTree() {
	k := len(jt.cliques)
	type edge struct{ i, j, w int }
	var edges []edge
	inter := newBitset(jt.dom.Len())
	for i := range k {
		for j := i + 1; j < k; j++ {
			for w := range inter {
				inter[w] = jt.sets[i][w] & jt.sets[j][w]
			}
			edges = append(edges, edge{i, j, inter.count()})
		}
	}
	sort.SliceStable(edges, func(a, b int) bool { return edges[a].w > edges[b].w })
	uf := make([]int, k)
	for i := range uf {
		uf[i] = i
	}
	find := func(x int) int {
		for uf[x] != x {
			uf[x] = uf[uf[x]]
			x = uf[x]
		}
		return x
	}
	adj := make([][]int, k)
	for _, e := range edges {
		a, b := find(e.i), find(e.j)
		if a == b {
			continue
		}
		uf[a] = b
		adj[e.i] = append(adj[e.i], e.j)
		adj[e.j] = append(adj[e.j], e.i)
	}
	root := 0
	for i := range k {
		if jt.cells[i] > jt.cells[root] {
			root = i
		}
	}
	jt.root = root
	jt.parent = make([]int, k)
	jt.children = make([][]int, k)
	jt.sep = make([][]int, k)
	for i := range jt.parent {
		jt.parent[i] = -2
	}
	jt.parent[root] = -1
	// Iterative DFS gives a pre-order; its reverse has children first.
	pre := make([]int, 0, k)
	stack := []int{root}
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		pre = append(pre, v)
		for _, w := range slices.Backward(adj[v]) {
			if jt.parent[w] == -2 {
				jt.parent[w] = v
				jt.children[v] = append(jt.children[v], w)
				stack = append(stack, w)
			}
		}
	}
	for i := range k {
		slices.Sort(jt.children[i])
	}
	jt.post = slices.Clone(pre)
	slices.Reverse(jt.post)
	for _, v := range pre {
		if p := jt.parent[v]; p >= 0 {
			jt.sep[v] = intersect(jt.cliques[v], jt.cliques[p])
		}
	}
}

// plan precomputes the index maps of every tree edge.
func (jt *junctionTree) plan() {
	k := len(jt.cliques)
	jt.upMap = make([]*kernel.Tiled, k)
	jt.downMap = make([]*kernel.Tiled, k)
	jt.sorted = make([][]int, k)
	jt.nest = make([]int, k)
	jt.nestMap = make([][]int32, k)
	for v := range k {
		kids := slices.Clone(jt.children[v])
		slices.SortStableFunc(kids, func(a, b int) int { return jt.dom.Cells(jt.sep[b]) - jt.dom.Cells(jt.sep[a]) })
		jt.sorted[v] = kids
		for i, c := range kids {
			jt.nest[c] = -1
			best := -1
			for _, o := range kids[:i] {
				if isSubset(jt.sep[c], jt.sep[o]) && (best < 0 || jt.dom.Cells(jt.sep[o]) < jt.dom.Cells(jt.sep[best])) {
					best = o
				}
			}
			if best >= 0 {
				jt.nest[c] = best
				jt.nestMap[c] = kernel.Map(jt.dom.sizesOf(jt.sep[best]), positions(jt.sep[best], jt.sep[c]))
			}
		}
	}
	jt.nest[jt.root] = -1
	jt.upRed = make([]*kernel.Reduction, k)
	jt.downRed = make([]*kernel.Reduction, k)
	for v := range k {
		p := jt.parent[v]
		if p < 0 {
			continue
		}
		jt.upMap[v] = jt.tiledMap(v, jt.sep[v])
		jt.upRed[v] = jt.reduction(v, jt.sep[v])
		jt.maxScratch = max(jt.maxScratch, jt.upRed[v].Scratch())
		if jt.nest[v] < 0 {
			jt.downMap[v] = jt.tiledMap(p, jt.sep[v])
			jt.downRed[v] = jt.reduction(p, jt.sep[v])
			jt.maxScratch = max(jt.maxScratch, jt.downRed[v].Scratch())
		}
	}
}

// projMap returns the index map from clique k to its subset sub.
func (jt *junctionTree) projMap(k int, sub []int) []int32 {
	return kernel.Map(jt.sizesOf(jt.cliques[k]), positions(jt.cliques[k], sub))
}

// tileCells is the least tile of the tiled index maps (kernel.Tiled). Tests
// lower it to exercise tile boundaries on small tables.
var tileCells = kernel.DefaultTile

// tiledMap returns projMap(k, sub) as a kernel.Tiled.
func (jt *junctionTree) tiledMap(k int, sub []int) *kernel.Tiled {
	return kernel.NewTiled(jt.sizesOf(jt.cliques[k]), positions(jt.cliques[k], sub), tileCells)
}

// reduction plans the reduction of clique k to its subset sub.
func (jt *junctionTree) reduction(k int, sub []int) *kernel.Reduction {
	return kernel.NewReduction(jt.sizesOf(jt.cliques[k]), positions(jt.cliques[k], sub))
}

// sizesOf returns the domain sizes of attrs.
func (jt *junctionTree) sizesOf(attrs []int) []int {
	s := make([]int, len(attrs))
	for i, a := range attrs {
		s[i] = jt.dom.sizes[a]
	}
	return s
}

// containing returns the first clique that contains attrs, or -1.
func (jt *junctionTree) containing(attrs []int) int {
	for k, s := range jt.sets {
		ok := true
		for _, a := range attrs {
			if !s.has(a) {
				ok = false
				break
			}
		}
		if ok {
			return k
		}
	}
	return -1
}

// intersect returns a ∩ b for ascending slices.
func intersect(a, b []int) []int {
	out := []int{}
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] < b[j]:
			i++
		case a[i] > b[j]:
			j++
		default:
			out = append(out, a[i])
			i++
			j++
		}
	}
	return out
}

// positions returns the positions in the ascending slice set of the members
// of the ascending slice sub ⊆ set.
func positions(set, sub []int) []int {
	out := make([]int, len(sub))
	j := 0
	for i, a := range sub {
		for set[j] != a {
			j++
		}
		out[i] = j
	}
	return out
}
