package independent

import (
	"context"
	"math"
	"testing"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/internal/synthtest"
	"github.com/dpsql/dpsql/synth/noise"
)

func testInput() *synth.Input {
	return &synth.Input{
		Data:  synthtest.Chain(3, 2000, []int{5, 3, 4, 2}),
		Rho:   0.2,
		Noise: noise.Derive([]byte("independent test secret, thirty-two bytes"), 1, "t"),
		Rows:  1500,
	}
}

func TestRun(t *testing.T) {
	in := testInput()
	r, _ := Mechanism{}.New(nil)
	res, err := r.Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	synthtest.CheckResult(t, synth.SyntheticData, in, res)
	d := in.Data.Domain().Len()
	if len(res.Measurements) != d || math.Abs(res.RhoUsed-in.Rho) > 1e-12 {
		t.Errorf("%d measurements, ρ used %v; want %d and %v", len(res.Measurements), res.RhoUsed, d, in.Rho)
	}
	for _, m := range res.Measurements {
		if want := math.Sqrt(float64(d) / (2 * in.Rho)); math.Abs(m.Sigma-want) > 1e-12*want {
			t.Errorf("σ = %v, want sqrt(d/(2ρ)) = %v", m.Sigma, want)
		}
	}
	// The 1-way marginals of the rows are close to the data's: with σ ≈ 3.2
	// on counts of 2000 the error per attribute is a few percent.
	var sets [][]int
	for a := range d {
		sets = append(sets, []int{a})
	}
	if e := synthtest.Error(t, in.Data, sets, res.Rows); e > 0.08 {
		t.Errorf("1-way error %v, want < 0.08", e)
	}
}

func TestCancel(t *testing.T) {
	r, _ := Mechanism{}.New(nil)
	synthtest.CheckCancel(t, r, testInput())
}
