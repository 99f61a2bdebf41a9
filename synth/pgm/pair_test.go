package pgm

import (
	"context"
	"math/rand/v2"
	"testing"
)

// routeSmall lets pair routes serve the small models of the tests (the
// production threshold leaves cheap triples to the direct elimination).
func routeSmall(t *testing.T) {
	old := minPairDirect
	minPairDirect = 0
	t.Cleanup(func() { minPairDirect = old })
}

// triples returns every 3-set of d attributes, each in a random order.
func triples(rng *rand.Rand, d int) [][]int {
	var out [][]int
	for a := range d {
		for b := a + 1; b < d; b++ {
			for c := b + 1; c < d; c++ {
				s := []int{a, b, c}
				rng.Shuffle(3, func(i, j int) { s[i], s[j] = s[j], s[i] })
				out = append(out, s)
			}
		}
	}
	return out
}

// TestPairRoutes checks 3-way marginals computed through pair routes
// against brute force and the log-space oracle: every triple of random
// tree models, in one batch (tables shared, computed on credit) and alone
// (no cache), and that routes were taken, some from cached tables.
func TestPairRoutes(t *testing.T) {
	routeSmall(t)
	rng := rand.New(rand.NewPCG(91, 92))
	ctx := context.Background()
	routed, fresh := 0, 0
	for trial := range 12 {
		d := 7 + rng.IntN(4)
		m := treeModel(t, rng, d, 3+rng.IntN(5), 3)
		p, _ := normalize(bruteJoint(m.jt, m.potentials()))
		sets := triples(rng, d)
		b := m.NewBatch()
		check := func(how string, s []int, x []float64) {
			brute := bruteMarginal(m.dom, p, s, nil)
			oracle := m.marginalLog(s)
			for j := range brute {
				if !near(x[j]/1000, brute[j], 1e-9) || !relNear(x[j], oracle[j], 1e-9) {
					t.Fatalf("trial %d: %s marginal %v (cliques %v) cell %d = %v, brute force %v, oracle %v",
						trial, how, s, m.jt.cliques, j, x[j], brute[j]*1000, oracle[j])
				}
			}
		}
		for lo := 0; lo < len(sets); lo += 7 {
			hi := min(lo+7, len(sets))
			err := b.Visit(ctx, sets[lo:hi], func(i int, x []float64) { check("batch", sets[lo+i], x) })
			if err != nil {
				t.Fatal(err)
			}
		}
		for _, s := range sets {
			check("single", s, m.Marginal(s))
		}
		routed += b.cache.routed
		fresh += b.cache.fresh
	}
	if routed == 0 || routed == fresh {
		t.Fatalf("%d triples routed, %d of them computing their table: want routes, some from cached tables", routed, fresh)
	}
	t.Logf("%d triples routed, %d computed their table", routed, fresh)
}

// TestPairRoutesDeep is TestPairRoutes on larger trees (oracle only), with
// the batch's tables computed concurrently.
func TestPairRoutesDeep(t *testing.T) {
	routeSmall(t)
	rng := rand.New(rand.NewPCG(93, 94))
	ctx := context.Background()
	routed := 0
	for trial := range 4 {
		d := 13 + rng.IntN(5)
		m := treeModel(t, rng, d, 6+rng.IntN(6), 4)
		sets := triples(rng, d)[:300]
		b := m.NewBatch()
		err := b.Visit(ctx, sets, func(i int, x []float64) {
			want := m.marginalLog(sets[i])
			for j := range want {
				if !relNear(x[j], want[j], 1e-9) {
					t.Errorf("trial %d: marginal %v cell %d = %v, oracle %v", trial, sets[i], j, x[j], want[j])
					return
				}
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		routed += b.cache.routed
	}
	if routed == 0 {
		t.Fatal("no triple routed")
	}
}
