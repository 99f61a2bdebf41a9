package oracle

import (
	"testing"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/pgm"
)

// TestAppendTerms: one term per non-zero cell, in cell order, with the
// cell's attributes and values, whatever the map's iteration order.
func TestAppendTerms(t *testing.T) {
	dom, err := pgm.NewDomain([]string{"a", "b", "c"}, []int{2, 3, 2})
	if err != nil {
		t.Fatal(err)
	}
	q := NewQueries(dom, []synth.Marginal{{Attrs: []int{0}, Weight: 1}, {Attrs: []int{1, 2}, Weight: 1}})
	// Cells: 0-1 are a=0,1; 2-7 are (b, c) with c fastest.
	weights := map[int32]float64{7: -2, 1: 0.5, 4: 0, 3: 1}
	for range 5 {
		terms, _ := q.AppendTerms(nil, weights, nil)
		want := []Term{
			{Attrs: []int{0}, Vals: []int{1}, Weight: 0.5},
			{Attrs: []int{1, 2}, Vals: []int{0, 1}, Weight: 1},
			{Attrs: []int{1, 2}, Vals: []int{2, 1}, Weight: -2},
		}
		if len(terms) != len(want) {
			t.Fatalf("%d terms, want %d: %v", len(terms), len(want), terms)
		}
		for i := range want {
			g, w := terms[i], want[i]
			if g.Weight != w.Weight || len(g.Vals) != len(w.Vals) || len(g.Attrs) != len(w.Attrs) {
				t.Fatalf("term %d = %+v, want %+v", i, g, w)
			}
			for j := range w.Vals {
				if g.Vals[j] != w.Vals[j] || g.Attrs[j] != w.Attrs[j] {
					t.Fatalf("term %d = %+v, want %+v", i, g, w)
				}
			}
		}
	}
}
