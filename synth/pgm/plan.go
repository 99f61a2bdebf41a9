package pgm

import "math/bits"

// Optimal elimination plans. The greedy rules of planElimination look one
// step ahead; on a wide table's expensive queries (a large clique whose
// separators lead to the query's attributes) eliminating the cheapest
// attribute first can join a query attribute to a large separator early and
// cost several times the best order. The cost of variable elimination after
// eliminating a set of attributes depends only on that set, so the best
// order is a shortest path over subsets: affordable for the few attributes
// such a query eliminates, and run only when the greedy plan is expensive.

// maxOptimalElim bounds the attributes planOptimal searches over (2^k
// states).
const maxOptimalElim = 14

// minOptimalCost is the greedy cost (cells) from which an elimination
// searches for the optimal order: the search costs up to a few
// milliseconds.
var minOptimalCost = float64(1 << 20)

// planOptimal returns the order of least cost (cells swept) that
// productElimination can follow, with every intermediate table within limit
// cells, or ok = false when the attributes are too many (or the domain
// wider than 64 attributes) or no order keeps within limit.
func planOptimal(dom *Domain, scopes []bitset, keep bitset, limit float64) (order []int, cost float64, ok bool) {
	if dom.Len() > 64 {
		return nil, 0, false
	}
	var elim uint64
	fs := make([]uint64, len(scopes))
	for i, s := range scopes {
		fs[i] = s[0]
		elim |= s[0]
	}
	elim &^= keep[0]
	if elim == 0 || bits.OnesCount64(elim) > maxOptimalElim {
		return nil, 0, false
	}
	cells := func(m uint64) float64 {
		c := 1.0
		for ; m != 0; m &= m - 1 {
			c *= float64(dom.sizes[bits.TrailingZeros64(m)])
		}
		return c
	}
	type state struct {
		cost   float64
		scopes []uint64
		order  []int
	}
	// states by the attributes still to eliminate; a step removes at
	// least one, so visiting by decreasing count sees every state after
	// all its predecessors.
	states := map[uint64]*state{elim: {scopes: fs}}
	byCount := make([][]uint64, bits.OnesCount64(elim)+1)
	byCount[len(byCount)-1] = []uint64{elim}
	for cnt := len(byCount) - 1; cnt > 0; cnt-- {
		for _, e := range byCount[cnt] {
			st := states[e]
			for m := e; m != 0; m &= m - 1 {
				a := bits.TrailingZeros64(m)
				bit := uint64(1) << a
				var u, rest uint64
				for _, s := range st.scopes {
					if s&bit != 0 {
						u |= s
					} else {
						rest |= s
					}
				}
				out := u &^ (e &^ rest)
				if cells(out) > limit {
					continue
				}
				c := st.cost + cells(u)
				ne := e &^ (u &^ out)
				if nx, seen := states[ne]; seen && nx.cost <= c {
					continue
				} else if !seen {
					byCount[bits.OnesCount64(ne)] = append(byCount[bits.OnesCount64(ne)], ne)
				}
				var ns []uint64
				for _, s := range st.scopes {
					if s&bit == 0 {
						ns = append(ns, s)
					}
				}
				states[ne] = &state{cost: c, scopes: append(ns, out), order: append(st.order[:len(st.order):len(st.order)], a)}
			}
		}
	}
	final, ok := states[0]
	if !ok {
		return nil, 0, false
	}
	return final.order, final.cost, true
}
