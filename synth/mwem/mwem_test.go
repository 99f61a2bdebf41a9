package mwem

import (
	"context"
	"math"
	"testing"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/internal/synthtest"
	"github.com/dpsql/dpsql/synth/noise"
)

func TestRoundBudget(t *testing.T) {
	for _, rho := range []float64{1e-4, 0.015, 3} {
		for _, T := range []int{1, 14, 100} {
			eps, sigma := RoundBudget(rho, T)
			if got := float64(T) * (eps*eps/8 + 1/(2*sigma*sigma)); math.Abs(got-rho) > 1e-12*rho {
				t.Errorf("ρ=%v T=%d: T rounds cost %v", rho, T, got)
			}
		}
	}
}

func testInput(seed int64) *synth.Input {
	return &synth.Input{
		Data:     synthtest.Chain(5, 3000, []int{4, 3, 5, 2, 4}),
		Workload: synthtest.AllK(5, 2),
		Rho:      0.5,
		Noise:    noise.Derive([]byte("mwem test secret, thirty-two bytes"), seed, "t"),
	}
}

func TestRun(t *testing.T) {
	in := testInput(1)
	r, _ := Mechanism{}.New([]synth.Option{{Name: "ROUNDS", Value: 8}, {Name: "PGM_ITERS", Value: 30}, {Name: "FINAL_ITERS", Value: 200}})
	res, err := r.Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	synthtest.CheckResult(t, synth.SyntheticData, in, res)
	// The model limit (25 MB) admits every 2-way marginal, so all 8 rounds
	// run and spend ρ exactly.
	if len(res.Rounds) != 8 || math.Abs(res.RhoUsed-in.Rho) > 1e-12 {
		t.Errorf("%d rounds, ρ used %v; want 8 and %v", len(res.Rounds), res.RhoUsed, in.Rho)
	}
	if len(res.LastCandidate) != len(in.Workload) {
		t.Errorf("%d last-candidate records, want %d", len(res.LastCandidate), len(in.Workload))
	}
	sets := make([][]int, len(in.Workload))
	for i, m := range in.Workload {
		sets[i] = m.Attrs
	}
	// The chain's adjacent pairs carry the structure; after 8 rounds the
	// error is far below an independent model's (about 0.8 per adjacent
	// pair, 0.3 on average here).
	if e := synthtest.Error(t, in.Data, sets, res.Rows); e > 0.15 {
		t.Errorf("workload error %.4f, want < 0.15", e)
	}
}

func TestCancel(t *testing.T) {
	r, _ := Mechanism{}.New(nil)
	synthtest.CheckCancel(t, r, testInput(2))
}
