package qfactors

import (
	"testing"

	"gonum.org/v1/gonum/mat"
)

func TestMerge(t *testing.T) {
	prefix := mat.NewDense(1, 3, []float64{1, 1, 0})
	other := mat.NewDense(1, 3, []float64{1, 0, 0})
	ident := mat.NewDense(1, 2, []float64{1, 0})
	tests := []struct {
		name     string
		a, b     []*mat.Dense
		nilOut   bool
		rows0    int // rows of factor 0 of the result
		sameAsA  bool
		stackedA bool
	}{
		{name: "whole marginal absorbs", a: nil, b: []*mat.Dense{prefix, nil}, nilOut: true},
		{name: "equal factors", a: []*mat.Dense{prefix, nil}, b: []*mat.Dense{mat.DenseCopyOf(prefix), nil}, sameAsA: true},
		{name: "one attribute differs: stacked", a: []*mat.Dense{prefix, ident}, b: []*mat.Dense{other, ident}, rows0: 2},
		{name: "two attributes differ: whole marginal", a: []*mat.Dense{prefix, ident}, b: []*mat.Dense{other, nil}, nilOut: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Merge(tt.a, tt.b)
			switch {
			case tt.nilOut:
				if got != nil {
					t.Errorf("Merge = %v, want nil", got)
				}
			case tt.sameAsA:
				if len(got) != len(tt.a) || got[0] != tt.a[0] {
					t.Errorf("Merge = %v, want a", got)
				}
			default:
				if r, _ := got[0].Dims(); r != tt.rows0 || got[1] != tt.a[1] {
					t.Errorf("Merge factor 0 has %d rows, want %d", r, tt.rows0)
				}
			}
		})
	}
}
