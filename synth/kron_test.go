package synth

import (
	"testing"

	"gonum.org/v1/gonum/mat"
)

// Query factors follow their attributes when a set is sorted, and entries
// on one set merge: stacked rows when they differ in one factor, the whole
// marginal otherwise.
func TestCanonicalWorkloadKron(t *testing.T) {
	row := func(v ...float64) *mat.Dense { return mat.NewDense(1, len(v), v) }
	le1, le2 := row(1, 1, 0), row(1, 0, 0)
	w, err := CanonicalWorkload(3, []Marginal{
		{Attrs: []int{2, 0}, Weight: 1, Kron: []*mat.Dense{le1, nil}},
		{Attrs: []int{0, 2}, Weight: 2, Kron: []*mat.Dense{nil, le2}},
		{Attrs: []int{1, 2}, Weight: 1, Kron: []*mat.Dense{le1, nil}},
		{Attrs: []int{1, 2}, Weight: 1, Kron: []*mat.Dense{nil, le1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(w) != 2 || w[0].Kron == nil || w[0].Kron[0] != nil || w[0].Weight != 3 {
		t.Fatalf("merged entry %+v", w[0])
	}
	if r, _ := w[0].Kron[1].Dims(); r != 2 || w[0].Kron[1].At(0, 1) != 1 || w[0].Kron[1].At(1, 1) != 0 {
		t.Errorf("stacked factor %v", mat.Formatted(w[0].Kron[1]))
	}
	if w[1].Kron != nil {
		t.Errorf("entries differing in two factors merged to %v, want the whole marginal", w[1].Kron)
	}
	if _, err := CanonicalWorkload(3, []Marginal{{Attrs: []int{0, 1}, Weight: 1, Kron: []*mat.Dense{nil}}}); err == nil {
		t.Error("a workload entry with a missing factor was accepted")
	}
}
