package pgm

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// checkRunningIntersection verifies that the cliques containing any attribute
// form a connected subtree, that every attribute is covered, and that every
// input set lies in some clique.
func checkRunningIntersection(t *testing.T, jt *junctionTree, sets [][]int) {
	t.Helper()
	for _, s := range sets {
		if jt.containing(s) < 0 {
			t.Fatalf("set %v not covered by cliques %v", s, jt.cliques)
		}
	}
	for a := range jt.dom.Len() {
		// Count cliques with a whose parent lacks a: exactly one per subtree.
		tops := 0
		for v := range jt.cliques {
			if !jt.sets[v].has(a) {
				continue
			}
			if p := jt.parent[v]; p < 0 || !jt.sets[p].has(a) {
				tops++
			}
		}
		if tops != 1 {
			t.Fatalf("attribute %d spans %d disconnected subtrees of %v", a, tops, jt.cliques)
		}
	}
	for i := range jt.cliques {
		for j := range jt.cliques {
			if i != j && jt.sets[i].subsetOf(jt.sets[j]) {
				t.Fatalf("clique %v is inside %v", jt.cliques[i], jt.cliques[j])
			}
		}
	}
}

func TestBeliefPropagationBruteForce(t *testing.T) {
	t.Run("serial", func(t *testing.T) { testBPBruteForce(t, team{}) })
	t.Run("parallel", func(t *testing.T) {
		// Split even tiny tables into chunks run by three goroutines.
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(3))
		defer func(n, m int) { chunkCells, tileCells = n, m }(chunkCells, tileCells)
		chunkCells = 2
		tileCells = 3 // tiles of the index maps end inside chunks too
		p := newPool()
		defer p.stop()
		testBPBruteForce(t, team{p})
	})
}

func testBPBruteForce(t *testing.T, tm team) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 200 {
		d := 1 + rng.IntN(6)
		dom := randomDomain(t, rng, d, 4)
		sets := randomSets(rng, d, rng.IntN(6), 3)
		jt, err := newJunctionTree(dom, sets, nil)
		if err != nil {
			t.Fatal(err)
		}
		checkRunningIntersection(t, jt, sets)
		theta := make([]float64, jt.total)
		for i := range theta {
			theta[i] = rng.NormFloat64() * 3
			if rng.IntN(10) == 0 && trial%2 == 0 {
				theta[i] = math.Inf(-1) // structural zeros
			}
		}
		wantP, wantLogZ := normalize(bruteJoint(jt, theta))
		p := make([]float64, jt.total)
		w := newBPWork(jt)
		w.team = tm
		logZ := w.run(p, theta)
		if math.IsNaN(wantLogZ) { // every cell has probability 0
			if !math.IsInf(logZ, -1) {
				t.Fatalf("trial %d: logZ = %v for an all-zero model, want -Inf", trial, logZ)
			}
			continue
		}
		// Tolerance: BP and the oracle sum the same ≤ 4^6 terms in different
		// orders; 1e-9 leaves ample room for that rounding.
		if !near(logZ, wantLogZ, 1e-9) {
			t.Fatalf("trial %d: logZ = %v, want %v (cliques %v)", trial, logZ, wantLogZ, jt.cliques)
		}
		for k, c := range jt.cliques {
			want := bruteMarginal(dom, wantP, c, nil)
			got := jt.block(p, k)
			for i := range want {
				if !near(got[i], want[i], 1e-9) {
					t.Fatalf("trial %d: clique %v cell %d = %v, want %v", trial, c, i, got[i], want[i])
				}
			}
		}
	}
}

func TestModelSize(t *testing.T) {
	dom, _ := NewDomain([]string{"a", "b", "c", "d"}, []int{2, 3, 4, 5})
	tests := []struct {
		cliques [][]int
		cells   int
	}{
		{nil, 2 + 3 + 4 + 5},
		{[][]int{{0, 1}}, 6 + 4 + 5},
		{[][]int{{0, 1}, {1, 2}}, 6 + 12 + 5},
		// A 4-cycle a-b-c-d-a needs one chord: eliminating b creates the
		// smallest factor {a,b,c} (2·3·4 = 24 against 30 for a, 60 for c and
		// 40 for d), which leaves the triangle {a,c,d} (40).
		{[][]int{{0, 1}, {1, 2}, {2, 3}, {0, 3}}, 24 + 40},
		{[][]int{{0, 1, 2, 3}}, 120},
	}
	for _, tt := range tests {
		want := float64(tt.cells) * 8 / (1 << 20)
		if got := ModelSize(dom, tt.cliques); got != want {
			t.Errorf("ModelSize(%v) = %v, want %v", tt.cliques, got, want)
		}
		jt, err := newJunctionTree(dom, tt.cliques, nil)
		if err != nil {
			t.Fatal(err)
		}
		if jt.total != tt.cells {
			t.Errorf("junction tree of %v has %d cells (%v), want %d", tt.cliques, jt.total, jt.cliques, tt.cells)
		}
	}
}

func TestJunctionTreeOrder(t *testing.T) {
	// A given elimination order must reproduce the same cliques.
	rng := rand.New(rand.NewPCG(5, 6))
	for range 50 {
		d := 2 + rng.IntN(7)
		dom := randomDomain(t, rng, d, 4)
		sets := randomSets(rng, d, 1+rng.IntN(6), 4)
		jt, err := newJunctionTree(dom, sets, nil)
		if err != nil {
			t.Fatal(err)
		}
		again, err := newJunctionTree(dom, jt.cliques, jt.order)
		if err != nil {
			t.Fatal(err)
		}
		if len(again.cliques) != len(jt.cliques) {
			t.Fatalf("rebuilt cliques %v, want %v", again.cliques, jt.cliques)
		}
		for i := range jt.cliques {
			if !slices.Equal(again.cliques[i], jt.cliques[i]) {
				t.Fatalf("rebuilt cliques %v, want %v", again.cliques, jt.cliques)
			}
		}
	}
	dom, _ := NewDomain([]string{"a", "b"}, []int{2, 2})
	if _, err := newJunctionTree(dom, nil, []int{0, 0}); err == nil {
		t.Error("order with a repeated attribute accepted")
	}
}

// TestModelSize64MatchesGeneric: the one-word, incremental ModelSize
// gives exactly eliminate's size on random domains of up to 64 attributes
// (large sizes too, where the float cell counts round), for random
// clique sets as AIM builds them (measured sets plus one candidate).
func TestModelSize64MatchesGeneric(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	for trial := range 200 {
		n := 1 + rng.IntN(64)
		maxSize := 2 + rng.IntN(6)
		if trial%4 == 0 {
			maxSize = 2 + rng.IntN(5000)
		}
		dom := randomDomain(t, rng, n, maxSize)
		var cliques [][]int
		for range rng.IntN(2 * n) {
			perm := rng.Perm(n)[:1+rng.IntN(min(n, 4))]
			slices.Sort(perm)
			cliques = append(cliques, perm)
		}
		got, want := modelSize64(dom, cliques), modelSizeGeneric(dom, cliques)
		if got != want {
			t.Fatalf("trial %d (%d attributes, %d cliques): %v MB, generic %v MB", trial, n, len(cliques), got, want)
		}
	}
}
