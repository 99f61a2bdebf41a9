package planner

import (
	"testing"

	"gonum.org/v1/gonum/mat"
)

// Range conditions on a binned column compile to prefix/range rows over
// its bins; several thresholds on one set stack into one factor.
func TestKronRanges(t *testing.T) {
	dom := testDomain()
	w, err := Compile([]WorkloadQuery{
		{Text: "SELECT sex, COUNT(*) FROM t WHERE inc < 50 GROUP BY sex", Weight: 1},
		{Text: "SELECT sex, COUNT(*) FROM t WHERE inc < 75 GROUP BY sex", Weight: 1},
		{Text: "SELECT race, COUNT(*) FROM t WHERE inc >= 25 AND inc < 75 GROUP BY race", Weight: 1},
		{Text: "SELECT race, inc, COUNT(*) FROM t WHERE inc < 50 GROUP BY race, inc", Weight: 1},
		{Text: "SELECT sex, COUNT(*) FROM t WHERE sex = 'F' OR age < 3 GROUP BY sex", Weight: 1},
	}, src, dom)
	if err != nil {
		t.Fatal(err)
	}
	ms := w.Marginals()
	if len(ms) != 3 {
		t.Fatalf("%d marginals: %v", len(ms), ms)
	}
	n := dom.Columns[3].Size()
	// inc's codes: bins [0,25), [25,50), [50,75), [75,100] (then NULL if
	// nullable): prefix rows over the bins.
	want := mat.NewDense(2, n, nil)
	for b := range 2 {
		want.Set(0, b, 1)
	}
	for b := range 3 {
		want.Set(1, b, 1)
	}
	if k := ms[0].Kron; k == nil || k[0] != nil || !mat.Equal(k[1], want) {
		t.Errorf("sex × inc prefixes: %v, want [nil, %v]", k, mat.Formatted(want))
	}
	// The range [25, 75) (bins 1 and 2) and, on the same set, race and inc
	// grouped with inc < 50 (unit rows of bins 0 and 1) differ in inc's
	// factor only: the rows stack.
	rng := mat.NewDense(3, n, nil)
	rng.Set(0, 1, 1)
	rng.Set(0, 2, 1)
	rng.Set(1, 0, 1)
	rng.Set(2, 1, 1)
	if k := ms[1].Kron; k == nil || k[0] != nil || !mat.Equal(k[1], rng) {
		t.Errorf("race × inc: %v, want [nil, %v]", k, mat.Formatted(rng))
	}
	// A predicate across columns has no Kronecker form: the whole marginal.
	if ms[2].Kron != nil {
		t.Errorf("OR across columns: Kron %v, want nil", ms[2].Kron)
	}
}
