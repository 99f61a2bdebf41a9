package pgm

import (
	"context"
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
// pair tables against a model's size (cells): 4 × the reduction budget
// (2 × the model) within [1 MB, 32 MB], and 16 MB for models above 16 MB.
func TestPairBudget(t *testing.T) {
	for _, tt := range []struct{ model, want int }{
		{1 << 10, pairMinBudget},           // a small model: the floor
		{pairMinBudget / 8, pairMinBudget}, // 8 × its cells: the floor
		{1 << 18, 8 << 18},                 // 8 × its cells
		{1 << 20, pairMaxBudget},           // 8 MB: the cap
		{pairMaxBudget / 2, pairMaxBudget}, // 16 MB: still the cap
		{pairMaxBudget/2 + 1, pairMaxBudget / 2},
		{1 << 23, pairMaxBudget / 2}, // ε = 10's models
	} {
		if got := newReduceCache(nil, 2*tt.model).pairMax; got != tt.want {
			t.Errorf("model of %d cells: pair budget %d, want %d", tt.model, got, tt.want)
		}
	}
	if got := newReduceCache(nil, 0).pairMax; got != 0 {
		t.Errorf("no budget: pair budget %d, want 0", got)
	}
}
