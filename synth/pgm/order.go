package pgm

import (
	"math/bits"
	"slices"
)

// Searching the elimination order of a fitted model's junction tree.
//
// Greedy min-size elimination (jtree.go, spec I.5) can miss a much smaller
// triangulation: over the sets a 30-attribute AIM run had measured by its
// 30th round its tree was 676 k cells (5.2 MB), where eliminating the same
// graph in another order gives 434 k (the order greedy found once one more
// set was measured), and inference, scoring and memory all scale with the
// tree; the run then held the larger tree for ten rounds.
// The order affects only efficiency: a model fitted by mirror descent from
// zero (or from a warm start fitted so) has potentials in the span of the
// measured sets' functions whatever the cliques, so it is the same
// distribution over any triangulation of the measured graph, to round-off.
//
// searchOrder improves a starting order by moving one attribute at a time
// to another place (first improvement, passes until none improves, within
// maxOrderPasses), measuring each order by the cells of the tree it gives.
// On one-word attribute sets an order is measured in about 0.4 µs on a
// 30-attribute domain, a pass over its 870 moves in 0.3 ms and a fit's
// whole search in about 1 ms (BenchmarkFitOrder); domains over 64
// attributes keep their starting order.
// AIM's size filter (ModelSize) keeps greedy's size, an upper bound on the
// searched one: which candidates are eligible does not change.

// searchOrders turns the search off (greedy's order alone) for tests.
var searchOrders = true

// maxOrderPasses bounds searchOrder's passes over the moves.
const maxOrderPasses = 8

// minOrderSearch is the tree size (cells) from which searchOrder searches:
// below it a tree costs little whatever its order.
const minOrderSearch = 1 << 12

// orderEvalCells bounds the search's effort by the tree it improves: each
// start measures at most max(n², cells/orderEvalCells) orders (n the
// attributes: one pass over the moves), about 3 ns a cell of the tree at
// 0.4 µs an order, the cost of one or two belief propagations over it,
// where a fit runs tens. Wide30's 676 k-cell tree allows 5.3 k orders a
// start; its search used about 2.6 k.
const orderEvalCells = 128

// orderGraph is the measured graph on one-word attribute sets (a bitset
// of at most 64 attributes is one word): adj[a] is a's neighbours.
type orderGraph struct {
	dom *Domain
	adj []uint64
	// Scratch for treeCells.
	nb, cl []uint64
}

// newOrderGraph returns the graph of sets over dom, or nil when dom has
// more than 64 attributes.
func newOrderGraph(dom *Domain, sets []bitset) *orderGraph {
	n := dom.Len()
	if n > 64 {
		return nil
	}
	g := &orderGraph{dom: dom, adj: make([]uint64, n), nb: make([]uint64, n), cl: make([]uint64, 0, n)}
	for _, s := range sets {
		if len(s) == 0 {
			continue // an empty domain
		}
		m := s[0]
		for r := m; r != 0; r &= r - 1 {
			a := bits.TrailingZeros64(r)
			g.adj[a] |= m &^ (1 << uint(a))
		}
	}
	return g
}

// treeCells returns the cells of the junction tree that eliminating the
// graph in order gives: the sum over the maximal cliques {v} ∪ (v's
// neighbours when v is eliminated), as eliminate computes them. A clique
// can only lie inside one eliminated before it (which held v as a
// neighbour), and no two are equal.
func (g *orderGraph) treeCells(order []int) float64 {
	nb := g.nb
	copy(nb, g.adj)
	cl := g.cl[:0]
	for _, v := range order {
		m := nb[v]
		cl = append(cl, m|1<<uint(v))
		for r := m; r != 0; r &= r - 1 {
			u := bits.TrailingZeros64(r)
			nb[u] = (nb[u] | m) &^ (1<<uint(u) | 1<<uint(v))
		}
	}
	var total float64
	for i, c := range cl {
		maximal := true
		for _, d := range cl[:i] {
			if c&^d == 0 {
				maximal = false
				break
			}
		}
		if maximal {
			total += bitset{c}.cells(g.dom)
		}
	}
	g.cl = cl
	return total
}

// searchOrder returns the order, among starts and what moving one
// attribute of each to another place leads to, whose tree has the fewest
// cells; ties keep the earlier start. Each start must be an order of
// dom's attributes. It returns starts[0] when the graph has more than 64
// attributes, and the smallest start when its tree is small.
func searchOrder(dom *Domain, sets []bitset, starts ...[]int) []int {
	g := newOrderGraph(dom, sets)
	if g == nil {
		return starts[0]
	}
	sizes := make([]float64, len(starts))
	first := 0 // the smallest start
	for k, s := range starts {
		sizes[k] = g.treeCells(s)
		if sizes[k] < sizes[first] {
			first = k
		}
	}
	if sizes[first] < minOrderSearch {
		return starts[first]
	}
	var (
		best     []int
		bestSize float64
	)
	n := len(starts[0])
	evals := max(n*n, int(min(sizes[first]/orderEvalCells, 1<<30)))
	for k, s := range starts {
		o, size := g.improve(slices.Clone(s), sizes[k], evals)
		if best == nil || size < bestSize {
			best, bestSize = o, size
		}
	}
	return best
}

// improve moves single attributes of order (whose tree has size cells)
// while that shrinks the tree, measuring at most evals orders, and returns
// the order and its size.
func (g *orderGraph) improve(order []int, size float64, evals int) ([]int, float64) {
	n := len(order)
	trial := make([]int, n)
	for range maxOrderPasses {
		improved := false
		for i := range n {
			for j := range n {
				if i == j {
					continue
				}
				if evals--; evals < 0 {
					return order, size
				}
				moveTo(trial, order, i, j)
				if s := g.treeCells(trial); s < size {
					order, trial = trial, order
					size, improved = s, true
				}
			}
		}
		if !improved {
			break
		}
	}
	return order, size
}

// moveTo writes into dst the order src with its i-th attribute moved to
// position j.
func moveTo(dst, src []int, i, j int) {
	a := src[i]
	if i < j {
		copy(dst, src[:i])
		copy(dst[i:], src[i+1:j+1])
		dst[j] = a
		copy(dst[j+1:], src[j+1:])
	} else {
		copy(dst, src[:j])
		dst[j] = a
		copy(dst[j+1:], src[j:i])
		copy(dst[i+1:], src[i+1:])
	}
}

// fitOrder returns the elimination order of a fit's junction tree over
// sets: searchOrder from the previous fit's order (warm, if any) and from
// greedy's, the warm one first so that it wins ties: a refit of the same
// graph keeps its tree and starts from its potentials in place, and a
// grown graph eliminated in the old order keeps every old clique inside a
// new one, which AIM's drift bounds read cheaply. It returns nil, leaving
// the choice to newJunctionTree, when a set is not over dom.
func fitOrder(dom *Domain, sets [][]int, warm *Model) []int {
	if !searchOrders {
		return nil
	}
	bs, err := attrSets(dom, sets)
	if err != nil {
		return nil
	}
	greedy, _ := eliminate(dom, bs, nil)
	if warm != nil && warm.jt != nil && warm.dom.Equal(dom) {
		return searchOrder(dom, bs, warm.jt.order, greedy)
	}
	return searchOrder(dom, bs, greedy)
}
