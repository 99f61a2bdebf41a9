package pgm

import (
	"math/rand/v2"
	"testing"
)

// TestMarginalCost: a set inside a clique costs that clique's cells (the
// projection Marginal does); on a chain {0,1} – {1,2} the set {0,2} costs
// the top clique's reduction plus one elimination step over all three
// attributes, whichever clique is the root.
func TestMarginalCost(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 20 {
		m := treeModel(t, rng, 6, 4, 5)
		for _, c := range m.Cliques() {
			if got, want := m.MarginalCost(c), float64(m.dom.Cells(c)); got != want {
				t.Errorf("MarginalCost(%v) = %v, want its clique's %v cells", c, got, want)
			}
		}
	}
	for _, sizes := range [][]int{{3, 4, 5}, {7, 2, 3}, {2, 30, 2}} {
		dom, err := NewDomain([]string{"a", "b", "c"}, sizes)
		if err != nil {
			t.Fatal(err)
		}
		jt, err := newJunctionTree(dom, [][]int{{0, 1}, {1, 2}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		m := newModel(jt, make([]float64, jt.total), 1)
		n0, n1, n2 := float64(sizes[0]), float64(sizes[1]), float64(sizes[2])
		got := m.MarginalCost([]int{2, 0})
		if got != n0*n1+n0*n1*n2 && got != n1*n2+n0*n1*n2 {
			t.Errorf("sizes %v: MarginalCost({0,2}) = %v, want %v or %v", sizes, got, n0*n1+n0*n1*n2, n1*n2+n0*n1*n2)
		}
	}
}
