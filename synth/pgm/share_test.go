package pgm

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSharedSteps checks that sharing elimination steps between the
// queries of a call (productEliminationCached) changes no marginal: on
// random tree models, every 3-set and some 4-sets computed in batches with
// every step shared are bit for bit the marginals computed with no step
// shared, and agree with brute force; and steps were found in the cache.
func TestSharedSteps(t *testing.T) {
	rng := rand.New(rand.NewPCG(95, 96))
	ctx := context.Background()
	hits := 0
	for trial := range 10 {
		d := 7 + rng.IntN(5)
		m := treeModel(t, rng, d, 3+rng.IntN(5), 3)
		p, _ := normalize(bruteJoint(m.jt, m.potentials()))
		sets := triples(rng, d)
		for range 20 {
			sets = append(sets, rng.Perm(d)[:4])
		}
		visit := func(share float64) ([][]float64, *reduceCache) {
			old := minShareSweep
			minShareSweep = share
			defer func() { minShareSweep = old }()
			out := make([][]float64, len(sets))
			b := m.NewBatch()
			for lo := 0; lo < len(sets); lo += 9 {
				hi := min(lo+9, len(sets))
				err := b.Visit(ctx, sets[lo:hi], func(i int, x []float64) { out[lo+i] = slices.Clone(x) })
				if err != nil {
					t.Fatal(err)
				}
			}
			return out, b.cache
		}
		shared, cache := visit(0)
		plain, _ := visit(math.Inf(1))
		hits += cache.stepHits
		for i, s := range sets {
			if !slices.Equal(shared[i], plain[i]) {
				t.Fatalf("trial %d: set %v: shared steps %v, none shared %v", trial, s, shared[i], plain[i])
			}
			brute := bruteMarginal(m.dom, p, s, nil)
			for j := range brute {
				if !near(shared[i][j]/1000, brute[j], 1e-9) {
					t.Fatalf("trial %d: set %v cell %d = %v, brute force %v", trial, s, j, shared[i][j], brute[j]*1000)
				}
			}
		}
	}
	if hits == 0 {
		t.Fatal("no step was found in the cache: the test does not exercise sharing")
	}
	t.Logf("%d steps found in the cache", hits)
}

// TestPairBudget checks the scoring cache's budget for shared steps and
// pair tables against a model's size (cells): the reduction budget (2 ×
// the model) within [1 MB, 8 MB], or up to the model's own size within
// 16 MB.
func TestPairBudget(t *testing.T) {
	for _, tt := range []struct{ model, want int }{
		{1 << 10, pairMinBudget},           // a small model: the floor
		{pairMinBudget / 2, pairMinBudget}, // 2 × its cells: the floor
		{1 << 16, pairMinBudget},           // 0.5 MB: 2 × its cells, the floor
		{1 << 17, 2 << 17},                 // 1 MB: 2 × its cells
		{1 << 18, 2 << 18},                 // 2 MB: 2 × its cells
		{1 << 19, pairMidBudget},           // 4 MB: 2 × its cells, the 8 MB cap
		{3 << 18, pairMidBudget},           // 6 MB: the 8 MB cap
		{pairMidBudget, pairMidBudget},     // 8 MB
		{pairMidBudget + 1000, pairMidBudget + 1000},
		{pairMaxBudget, pairMaxBudget},
		{1 << 23, pairMaxBudget}, // ε = 10's models
	} {
		if got := newReduceCache(nil, 2*tt.model).pairMax; got != tt.want {
			t.Errorf("model of %d cells: pair budget %d, want %d", tt.model, got, tt.want)
		}
	}
	if got := newReduceCache(nil, 0).pairMax; got != 0 {
		t.Errorf("no budget: pair budget %d, want 0", got)
	}
}

// TestPairCacheDropsLeastRecentlyUsed checks the pair cache's eviction: a
// table read since it was kept outlives an older one that was not.
func TestPairCacheDropsLeastRecentlyUsed(t *testing.T) {
	c := newReduceCache(nil, 0)
	c.pairMax, c.pairBudget = 30, 30
	table := func(v float64) []float64 { return slices.Repeat([]float64{v}, 10) }
	c.putPair("a", table(1))
	c.putPair("b", table(2))
	c.putPair("c", table(3))
	if _, ok := c.getPair("a"); !ok {
		t.Fatal("a dropped while the cache had room")
	}
	c.putPair("d", table(4)) // drops b, the least recently used
	for _, tt := range []struct {
		key  string
		kept bool
	}{{"a", true}, {"b", false}, {"c", true}, {"d", true}} {
		got, ok := c.getPair(tt.key)
		if ok != tt.kept {
			t.Errorf("%s kept = %v, want %v", tt.key, ok, tt.kept)
		}
		if ok && got[0] != float64(tt.key[0]-'a'+1) {
			t.Errorf("%s holds %v", tt.key, got[0])
		}
	}
	if c.pairBudget != 0 || c.pairOrder.Len() != 3 || len(c.pairs) != 3 {
		t.Errorf("budget left %d, %d tables listed, %d mapped; want 0, 3, 3", c.pairBudget, c.pairOrder.Len(), len(c.pairs))
	}
	c.putPair("big", make([]float64, 31)) // beyond the whole budget: not kept, nothing dropped
	if _, ok := c.getPair("big"); ok || len(c.pairs) != 3 {
		t.Errorf("a table above the budget was kept or dropped others (%d tables)", len(c.pairs))
	}
}

// TestCacheOrder checks the order in which a caching call computes its
// sets: a permutation that puts the sets answered by the same subtree
// together, and one call over all sets gives every set's marginal at its
// own index, as brute force does.
func TestCacheOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(97, 98))
	ctx := context.Background()
	for trial := range 6 {
		d := 7 + rng.IntN(5)
		m := treeModel(t, rng, d, 3+rng.IntN(5), 3)
		sets := triples(rng, d)
		rng.Shuffle(len(sets), func(i, j int) { sets[i], sets[j] = sets[j], sets[i] })
		order := m.cacheOrder(sets, newReduceCache(m.jt, 2*m.jt.total))
		for i, k := range slices.Sorted(slices.Values(order)) {
			if k != i {
				t.Fatalf("trial %d: order %v is not a permutation of %d sets", trial, order, len(sets))
			}
		}
		seen := make(map[string]bool)
		last := ""
		for _, i := range order {
			kept, top := m.jt.subtree(bitsetOf(d, sets[i]))
			key := fmt.Sprint(top, kept)
			if key != last && seen[key] {
				t.Fatalf("trial %d: the sets of subtree %s are not together", trial, key)
			}
			seen[key], last = true, key
		}
		if len(seen) < 2 {
			t.Fatalf("trial %d: all %d sets on one subtree: the test orders nothing", trial, len(sets))
		}
		p, _ := normalize(bruteJoint(m.jt, m.potentials()))
		done := make([]bool, len(sets))
		err := m.MarginalsVisit(ctx, sets, func(i int, x []float64) {
			done[i] = true
			brute := bruteMarginal(m.dom, p, sets[i], nil)
			for j := range brute {
				if !near(x[j]/1000, brute[j], 1e-9) {
					t.Errorf("trial %d: set %v cell %d = %v, brute force %v", trial, sets[i], j, x[j], brute[j]*1000)
					return
				}
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if i := slices.Index(done, false); i >= 0 {
			t.Fatalf("trial %d: set %v not visited", trial, sets[i])
		}
	}
}
