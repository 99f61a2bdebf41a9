package pep

import (
	"context"
	"errors"
	"testing"

	"github.com/dpsql/dpsql/synth/bounds"
	"github.com/dpsql/dpsql/synth/internal/marginal"
	"github.com/dpsql/dpsql/synth/internal/synthtest"
)

// TestBounds: a PEP release gets the supported-marginal bounds of
// synth/bounds for its measured marginals (and they hold), the trivial
// bound for the rest; single-cell releases get none.
func TestBounds(t *testing.T) {
	ctx := context.Background()
	misses, checked := 0, 0
	for seed := range int64(10) {
		in := input(seed, 0.05)
		res := synthtest.MustRun(t, PEP{}, opts("ROUNDS", 4), in)
		a, err := bounds.Analyze(bounds.FromResult("pep", res, in.Workload))
		if err != nil {
			t.Fatal(err)
		}
		mb, err := a.Marginals(ctx, 0.9)
		if err != nil {
			t.Fatal(err)
		}
		sets := workloadSets(in)
		truth, _ := in.Data.Marginals(ctx, sets)
		supported := 0
		for i, b := range mb {
			if !b.Supported {
				if b.L1 != 2 {
					t.Errorf("unmeasured %v: bound %v, want 2", b.Attrs, b.L1)
				}
				continue
			}
			supported++
			x := truth[i]
			n := 0.0
			for _, v := range x {
				n += v
			}
			xhat := res.Model.Marginal(b.Attrs)
			for c := range x {
				x[c] /= n
				xhat[c] /= res.Model.Total()
			}
			checked++
			if marginal.L1(x, xhat) > b.L1 {
				misses++
			}
		}
		if supported != 4 {
			t.Errorf("seed %d: %d supported marginals, want the 4 measured", seed, supported)
		}
	}
	// Each bound holds with probability ≥ 0.9 (and is conservative).
	if misses > checked/5 {
		t.Errorf("%d of %d supported bounds missed", misses, checked)
	}
	in := input(1, 0.05)
	res := synthtest.MustRun(t, PMW{}, opts("ROUNDS", 4, "CELLS", 1), in)
	if _, err := bounds.Analyze(bounds.FromResult("pmw", res, in.Workload)); !errors.Is(err, bounds.ErrNoBounds) {
		t.Errorf("single-cell release: %v, want ErrNoBounds", err)
	}
}
