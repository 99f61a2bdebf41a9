package pgm

import (
	"math/bits"
	"slices"
)

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
//
// It is a search over the sets of attributes still to eliminate, visited by
// decreasing count so that every state is final before it is expanded; a
// state keeps its best cost, its factors' scopes and the step that reached
// it, and the order is read back along those steps. AIM plans thousands of
// candidates a round on wide tables, so the states live in two flat slices
// rather than one allocation each.
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
		cost     float64
		lo, hi   int // its scopes: pool[lo:hi]
		from     int // the state it was reached from (-1 for the start)
		attr     int // the attribute eliminated to reach it
		elimLeft uint64
	}
	sts := []state{{elimLeft: elim, hi: len(fs), from: -1, attr: -1}}
	pool := append(make([]uint64, 0, 8*len(fs)), fs...)
	index := make(map[uint64]int, 64)
	index[elim] = 0
	byCount := make([][]int, bits.OnesCount64(elim)+1)
	byCount[len(byCount)-1] = []int{0}
	for cnt := len(byCount) - 1; cnt > 0; cnt-- {
		for _, si := range byCount[cnt] {
			// Final: only states with fewer attributes left are
			// written while it is expanded (sts and pool may move).
			st := sts[si]
			e := st.elimLeft
			for m := e; m != 0; m &= m - 1 {
				a := bits.TrailingZeros64(m)
				bit := uint64(1) << a
				var u, rest uint64
				for _, s := range pool[st.lo:st.hi] {
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
				ni, seen := index[ne]
				if seen && sts[ni].cost <= c {
					continue
				}
				lo := len(pool)
				for _, s := range pool[st.lo:st.hi] {
					if s&bit == 0 {
						pool = append(pool, s)
					}
				}
				pool = append(pool, out)
				next := state{cost: c, lo: lo, hi: len(pool), from: si, attr: a, elimLeft: ne}
				if seen {
					sts[ni] = next
					continue
				}
				index[ne] = len(sts)
				byCount[bits.OnesCount64(ne)] = append(byCount[bits.OnesCount64(ne)], len(sts))
				sts = append(sts, next)
			}
		}
	}
	fi, ok := index[0]
	if !ok {
		return nil, 0, false
	}
	for i := fi; sts[i].from >= 0; i = sts[i].from {
		order = append(order, sts[i].attr)
	}
	slices.Reverse(order)
	return order, sts[fi].cost, true
}
