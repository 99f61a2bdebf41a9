package pgm

import (
	"context"
	"math"
	"math/rand/v2"
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
		dom, scopes, keep := randomElimination(t, rng, d, 5, 2+rng.IntN(4), 3, 3)
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

// TestPlanOptimalLarge checks planOptimal on problems too large to
// enumerate, up to maxOptimalElim attributes and with limits that rule
// some orders out: its order is executable and costs what it says, and
// without a limit no greedy rule costs less.
func TestPlanOptimalLarge(t *testing.T) {
	rng := rand.New(rand.NewPCG(97, 98))
	planned := 0
	for range 400 {
		dom, scopes, keep := randomElimination(t, rng, 3+rng.IntN(14), 9, 2+rng.IntN(8), 4, 4)
		limit := math.Inf(1)
		if rng.IntN(2) == 0 {
			limit = float64(int(1) << rng.IntN(12))
		}
		order, cost, ok := planOptimal(dom, scopes, keep, limit)
		if !ok {
			continue
		}
		planned++
		if got, exec := simulateOrder(dom, scopes, keep, order); !exec || math.Abs(got-cost) > 1e-9*cost {
			t.Fatalf("%v keeping %v: order %v executes %v at cost %v, planned %v", scopes, keep, order, exec, got, cost)
		}
		if !math.IsInf(limit, 1) {
			continue
		}
		for rule := range numRules {
			if _, c, _ := planElimination(dom, scopes, keep, rule); c < cost*(1-1e-9) {
				t.Fatalf("%v keeping %v: rule %d costs %v < optimal %v", scopes, keep, rule, c, cost)
			}
		}
	}
	if planned < 200 {
		t.Fatalf("only %d of 400 problems planned", planned)
	}
}

// randomElimination returns a random domain of d attributes (sizes up to
// maxSize), sets scopes of up to setSize attributes, and attributes to
// keep, each with probability 1/keepOneIn.
func randomElimination(t testing.TB, rng *rand.Rand, d, maxSize, sets, setSize, keepOneIn int) (*Domain, []bitset, bitset) {
	dom := randomDomain(t, rng, d, maxSize)
	var scopes []bitset
	for _, s := range randomSets(rng, d, sets, setSize) {
		scopes = append(scopes, bitsetOf(d, s))
	}
	keep := newBitset(d)
	for a := range d {
		if rng.IntN(keepOneIn) == 0 {
			keep.set(a)
		}
	}
	return dom, scopes, keep
}

// BenchmarkPlanOptimal plans random problems of up to 15 attributes, about
// one in twelve kept.
func BenchmarkPlanOptimal(b *testing.B) {
	rng := rand.New(rand.NewPCG(99, 100))
	type problem struct {
		dom    *Domain
		scopes []bitset
		keep   bitset
	}
	var ps []problem
	for len(ps) < 50 {
		dom, scopes, keep := randomElimination(b, rng, 12+rng.IntN(4), 9, 6+rng.IntN(4), 3, 12)
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
