package pgm

import (
	"math"
	"math/rand/v2"
	"testing"
)

// normalModel returns the model of the given total with normal log
// potentials of standard deviation scale on the junction tree of sets over
// dom.
func normalModel(t testing.TB, rng *rand.Rand, dom *Domain, sets [][]int, scale, total float64) *Model {
	t.Helper()
	jt, err := newJunctionTree(dom, sets, nil)
	if err != nil {
		t.Fatal(err)
	}
	theta := make([]float64, jt.total)
	for i := range theta {
		theta[i] = rng.NormFloat64() * scale
	}
	return newModel(jt, theta, total)
}

// randomModel returns a model with random potentials over random cliques.
func randomModel(t testing.TB, rng *rand.Rand, d int, total float64) *Model {
	t.Helper()
	dom := randomDomain(t, rng, d, 4)
	sets := randomSets(rng, d, rng.IntN(6), 3)
	jt, err := newJunctionTree(dom, sets, nil)
	if err != nil {
		t.Fatal(err)
	}
	theta := make([]float64, jt.total)
	for i := range theta {
		theta[i] = rng.NormFloat64() * 2
		if rng.IntN(15) == 0 {
			theta[i] = math.Inf(-1)
		}
	}
	m := newModel(jt, theta, total)
	if math.IsInf(m.logZ, -1) {
		theta[0] = 0
		for i := range theta {
			theta[i] = 0
		}
		m = newModel(jt, theta, total)
	}
	return m
}

func TestMarginalBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := range 150 {
		d := 1 + rng.IntN(6)
		m := randomModel(t, rng, d, 1000)
		p, _ := normalize(bruteJoint(m.jt, m.potentials()))
		// Any subset, in random order, including cross-clique ones.
		k := rng.IntN(d + 1)
		attrs := rng.Perm(d)[:k]
		var w map[int][]float64
		if trial%3 == 0 {
			w = map[int][]float64{}
			for range 1 + rng.IntN(2) {
				a := rng.IntN(d)
				wa := make([]float64, m.dom.Size(a))
				for i := range wa {
					wa[i] = float64(rng.IntN(2)) // an indicator of a value set
				}
				w[a] = wa
			}
		}
		want := bruteMarginal(m.dom, p, attrs, w)
		got := m.MarginalWhere(attrs, w)
		if len(got) != len(want) {
			t.Fatalf("trial %d: marginal over %v has %d cells, want %d", trial, attrs, len(got), len(want))
		}
		for i := range want {
			// 1e-9 relative to the total: same sums in another order.
			if !near(got[i]/1000, want[i], 1e-9) {
				t.Fatalf("trial %d: marginal %v (weights %v, cliques %v) cell %d = %v, want %v",
					trial, attrs, w, m.jt.cliques, i, got[i]/1000, want[i])
			}
		}
	}
}

func TestMarginalWhereCountQuery(t *testing.T) {
	// "count where a ∈ S and b = v" on an explicit independent model.
	dom, _ := NewDomain([]string{"a", "b", "c"}, []int{3, 2, 2})
	jt, err := newJunctionTree(dom, [][]int{{0, 1}, {1, 2}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	theta := make([]float64, jt.total) // uniform: every cell has probability 1/12
	m := newModel(jt, theta, 120)
	got := m.MarginalWhere(nil, map[int][]float64{0: {1, 0, 1}, 1: {0, 1}})
	// |{a ∈ {0,2}}| · |{b = 1}| · |c| = 2·1·2 cells of 10 records each.
	if len(got) != 1 || !near(got[0], 40, 1e-12) {
		t.Errorf("count where a∈{0,2}, b=1 = %v, want 40", got)
	}
	all := m.Marginal(nil)
	if len(all) != 1 || !near(all[0], 120, 1e-12) {
		t.Errorf("Marginal(nil) = %v, want [120]", all)
	}
}

func TestMarginalConcurrent(t *testing.T) {
	// Models are safe for concurrent use, including the lazily built tables
	// of variable elimination (run with -race).
	rng := rand.New(rand.NewPCG(35, 36))
	dom := randomDomain(t, rng, 5, 3)
	jt, err := newJunctionTree(dom, [][]int{{0, 1}, {1, 2}, {2, 3}, {3, 4}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	theta := make([]float64, jt.total)
	for i := range theta {
		theta[i] = rng.NormFloat64()
	}
	m := newModel(jt, theta, 10)
	want := m.Marginal([]int{0, 4}) // computed before the tables exist
	m2 := newModel(jt, theta, 10)
	done := make(chan []float64)
	for range 4 {
		go func() { done <- m2.Marginal([]int{0, 4}) }()
	}
	for range 4 {
		got := <-done
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("concurrent Marginal cell %d = %v, want %v", i, got[i], want[i])
			}
		}
	}
}
