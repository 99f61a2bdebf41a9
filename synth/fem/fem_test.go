package fem

import (
	"context"
	"math"
	"testing"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/internal/synthtest"
	"github.com/dpsql/dpsql/synth/noise"
	"github.com/dpsql/dpsql/synth/pgm"
)

func testInput(seed int64, rho float64) *synth.Input {
	return &synth.Input{
		Data:     synthtest.Chain(5, 3000, []int{4, 3, 5, 2, 4}),
		Workload: synthtest.AllK(5, 2),
		Rho:      rho,
		Noise:    noise.Derive([]byte("fem test secret, thirty-two byte"), seed, "t"),
	}
}

// oracleOnly hides the records: the mechanism must read marginals only.
type oracleOnly struct {
	d     *pgm.Dataset
	calls int
}

func (o *oracleOnly) Domain() *pgm.Domain { return o.d.Domain() }
func (o *oracleOnly) Marginals(ctx context.Context, sets [][]int) ([][]float64, error) {
	o.calls++
	return o.d.Marginals(ctx, sets)
}

func TestRun(t *testing.T) {
	in := testInput(1, 0.5)
	d := in.Data.(*pgm.Dataset)
	src := &oracleOnly{d: d}
	in.Data = src
	sets := make([][]int, len(in.Workload))
	for i, m := range in.Workload {
		sets[i] = m.Attrs
	}
	r, err := Mechanism{}.New([]synth.Option{{Name: "ROUNDS", Value: 20}, {Name: "SAMPLES", Value: 10}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if src.calls != 1 {
		t.Errorf("%d marginal-oracle calls, want 1", src.calls)
	}
	// Exact accounting: the count's 1/(2σ²) plus T·ε₀²/8 is ρ.
	sigma := res.Measurements[0].Sigma
	eps0 := RoundEpsilon(in.Rho-1/(2*sigma*sigma), 20)
	if want := 1/(2*sigma*sigma) + 20*eps0*eps0/8; math.Abs(res.RhoUsed-want) > 1e-12 || res.RhoUsed > in.Rho*(1+1e-12) {
		t.Errorf("ρ used %v, want %v (budget %v)", res.RhoUsed, want, in.Rho)
	}
	if res.Model != nil || len(res.Rows) != d.Domain().Len() {
		t.Fatalf("model %v, %d columns", res.Model != nil, len(res.Rows))
	}
	if n := len(res.Rows[0]); math.Abs(float64(n)-3000) > 300 {
		t.Errorf("%d rows, want about 3000", n)
	}
	e := synthtest.Error(t, d, sets, res.Rows)
	t.Logf("workload error %.4f, %s", e, res.Note)
	// The uniform distribution's error on this chain is about 0.99.
	if e > 0.6 {
		t.Errorf("workload error %.4f, want < 0.6", e)
	}
}

func TestRejects(t *testing.T) {
	if _, err := (Mechanism{}).New([]synth.Option{{Name: "SIGMA", Value: 0}}); err == nil {
		t.Error("SIGMA = 0 accepted")
	}
	r, _ := Mechanism{}.New([]synth.Option{{Name: "ROUNDS", Value: 100000}, {Name: "SAMPLES", Value: 100}})
	if _, err := r.Run(context.Background(), testInput(1, 1)); err == nil {
		t.Error("10^7 records accepted")
	}
}

func TestCancel(t *testing.T) {
	r, _ := Mechanism{}.New(nil)
	synthtest.CheckCancel(t, r, testInput(2, 0.5))
}
