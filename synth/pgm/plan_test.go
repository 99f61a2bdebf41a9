package pgm

import (
	"context"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"
)

// simulateOrder returns the cells productElimination sweeps following
// order (each step sums out its attribute and every other one found only
// in the step's factors), or ok = false if the order is not executable:
// it names an attribute already summed out, or leaves one.
func simulateOrder(dom *Domain, scopes []bitset, keep bitset, order []int) (cost float64, ok bool) {
	fs := make([]bitset, len(scopes))
	elim := newBitset(dom.Len())
	for i, s := range scopes {
		fs[i] = s.clone()
		elim.or(s)
	}
	for i := range elim {
		elim[i] &^= keep[i]
	}
	for _, a := range order {
		if !elim.has(a) {
			return 0, false
		}
		u, rest := newBitset(dom.Len()), newBitset(dom.Len())
		var without []bitset
		for _, s := range fs {
			if s.has(a) {
				u.or(s)
			} else {
				rest.or(s)
				without = append(without, s)
			}
		}
		out := u.clone()
		for i := range out {
			out[i] &^= elim[i] &^ rest[i]
			elim[i] &^= u[i] &^ out[i]
		}
		cost += u.cells(dom)
		fs = append(without, out)
	}
	return cost, elim.empty()
}

// TestPlanOptimal checks planOptimal against every order of small random
// elimination problems: its order is executable, costs what it says, and
// no order costs less; nor does any greedy rule.
func TestPlanOptimal(t *testing.T) {
	rng := rand.New(rand.NewPCG(95, 96))
	for trial := range 300 {
		d := 3 + rng.IntN(5)
		dom := randomDomain(t, rng, d, 5)
		var scopes []bitset
		for _, s := range randomSets(rng, d, 2+rng.IntN(4), 3) {
			scopes = append(scopes, bitsetOf(d, s))
		}
		keep := newBitset(d)
		for a := range d {
			if rng.IntN(3) == 0 {
				keep.set(a)
			}
		}
		order, cost, ok := planOptimal(dom, scopes, keep, math.Inf(1))
		elim := newBitset(d)
		for _, s := range scopes {
			elim.or(s)
		}
		for i := range elim {
			elim[i] &^= keep[i]
		}
		if !ok {
			if !elim.empty() {
				t.Fatalf("trial %d: no plan for %v keeping %v", trial, scopes, keep)
			}
			continue
		}
		if got, exec := simulateOrder(dom, scopes, keep, order); !exec || math.Abs(got-cost) > 1e-9*cost {
			t.Fatalf("trial %d: order %v executes %v at cost %v, planned %v", trial, order, exec, got, cost)
		}
		best := math.Inf(1)
		var perm func(rest, order []int)
		perm = func(rest, order []int) {
			if c, ok := simulateOrder(dom, scopes, keep, order); ok {
				best = min(best, c)
				return
			}
			for i, a := range rest {
				r := append(append([]int(nil), rest[:i]...), rest[i+1:]...)
				perm(r, append(order[:len(order):len(order)], a))
			}
		}
		perm(elim.attrs(), nil)
		if math.Abs(best-cost) > 1e-9*best {
			t.Fatalf("trial %d: planned cost %v, best order %v", trial, cost, best)
		}
		for rule := range numRules {
			if _, c, _ := planElimination(dom, scopes, keep, rule); c < cost*(1-1e-9) {
				t.Fatalf("trial %d: rule %d costs %v < optimal %v", trial, rule, c, cost)
			}
		}
	}
}

// planOptimalRef is planOptimal as first written (a state allocated per
// subset, its order copied along): the reference for TestPlanOptimalSame.
func planOptimalRef(dom *Domain, scopes []bitset, keep bitset, limit float64) (order []int, cost float64, ok bool) {
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

// TestPlanOptimalSame: planOptimal gives its reference's order, cost and
// answer, bit for bit, on random problems up to maxOptimalElim attributes
// and with limits that rule some orders out.
func TestPlanOptimalSame(t *testing.T) {
	rng := rand.New(rand.NewPCG(97, 98))
	for trial := range 400 {
		d := 3 + rng.IntN(14)
		dom := randomDomain(t, rng, d, 9)
		var scopes []bitset
		for _, s := range randomSets(rng, d, 2+rng.IntN(8), 4) {
			scopes = append(scopes, bitsetOf(d, s))
		}
		keep := newBitset(d)
		for a := range d {
			if rng.IntN(4) == 0 {
				keep.set(a)
			}
		}
		limit := math.Inf(1)
		if rng.IntN(2) == 0 {
			limit = float64(int(1) << rng.IntN(12))
		}
		o1, c1, ok1 := planOptimal(dom, scopes, keep, limit)
		o2, c2, ok2 := planOptimalRef(dom, scopes, keep, limit)
		if ok1 != ok2 || math.Float64bits(c1) != math.Float64bits(c2) || !slices.Equal(o1, o2) {
			t.Fatalf("trial %d: %v, %v, %v; the reference %v, %v, %v", trial, o1, c1, ok1, o2, c2, ok2)
		}
	}
}

// BenchmarkPlanOptimal plans random problems of 8–12 eliminated attributes.
func BenchmarkPlanOptimal(b *testing.B) {
	rng := rand.New(rand.NewPCG(99, 100))
	type problem struct {
		dom    *Domain
		scopes []bitset
		keep   bitset
	}
	var ps []problem
	for len(ps) < 50 {
		d := 12 + rng.IntN(4)
		dom := randomDomain(b, rng, d, 9)
		var scopes []bitset
		for _, s := range randomSets(rng, d, 6+rng.IntN(4), 3) {
			scopes = append(scopes, bitsetOf(d, s))
		}
		keep := newBitset(d)
		keep.set(rng.IntN(d))
		ps = append(ps, problem{dom, scopes, keep})
	}
	for b.Loop() {
		for _, p := range ps {
			planOptimal(p.dom, p.scopes, p.keep, math.Inf(1))
		}
	}
}

// TestMarginalsOptimalPlan checks marginals computed with the optimal
// plans (forced for every elimination) against brute force.
func TestMarginalsOptimalPlan(t *testing.T) {
	old := minOptimalCost
	minOptimalCost = 0
	t.Cleanup(func() { minOptimalCost = old })
	rng := rand.New(rand.NewPCG(97, 98))
	for trial := range 40 {
		d := 4 + rng.IntN(6)
		m := treeModel(t, rng, d, rng.IntN(5), 3)
		p, _ := normalize(bruteJoint(m.jt, m.potentials()))
		var sets [][]int
		for range 12 {
			sets = append(sets, rng.Perm(d)[:1+rng.IntN(min(d, 4))])
		}
		got, err := m.Marginals(context.Background(), sets)
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range sets {
			brute := bruteMarginal(m.dom, p, s, nil)
			for j := range brute {
				if !near(got[i][j]/1000, brute[j], 1e-9) {
					t.Fatalf("trial %d: marginal %v cell %d = %v, brute force %v", trial, s, j, got[i][j]/1000, brute[j])
				}
			}
		}
	}
}
