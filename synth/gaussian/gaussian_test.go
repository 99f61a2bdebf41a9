package gaussian

import (
	"context"
	"math"
	"testing"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/internal/synthtest"
	"github.com/dpsql/dpsql/synth/noise"
)

// TestSigmas checks the allocation: it spends exactly ρ, and no feasible
// perturbation (moving budget between two marginals) lowers the expected
// weighted L1 error Σ c_i·n_i·σ_i — the optimality the package documents.
func TestSigmas(t *testing.T) {
	w := []synth.Marginal{{Weight: 1}, {Weight: 2}, {Weight: 0.5}, {Weight: 1}}
	cells := []int{4, 100, 36, 1000}
	const rho = 0.3
	sig := Sigmas(rho, w, cells)
	cost := func(sig []float64) (spent, loss float64) {
		for i, s := range sig {
			spent += 1 / (2 * s * s)
			loss += w[i].Weight * float64(cells[i]) * s
		}
		return
	}
	spent, loss := cost(sig)
	if math.Abs(spent-rho) > 1e-12 {
		t.Errorf("spent %v, want %v", spent, rho)
	}
	for i := range sig {
		for j := range sig {
			if i == j {
				continue
			}
			for _, f := range []float64{0.9, 0.99, 1.01, 1.1} {
				// Scale marginal i's budget share by f, give the difference to j.
				p := make([]float64, len(sig))
				for k, s := range sig {
					p[k] = 1 / (2 * s * s)
				}
				d := p[i] * (f - 1)
				if p[j]-d <= 0 {
					continue
				}
				p[i] += d
				p[j] -= d
				alt := make([]float64, len(sig))
				for k := range p {
					alt[k] = 1 / math.Sqrt(2*p[k])
				}
				if _, l := cost(alt); l < loss*(1-1e-12) {
					t.Errorf("moving budget %d→%d (×%v) lowers the loss: %v < %v", j, i, f, l, loss)
				}
			}
		}
	}
	// Uniform weights: the spec's σ_i ∝ n_i^(−1/3).
	u := []synth.Marginal{{Weight: 1}, {Weight: 1}}
	s := Sigmas(rho, u, []int{8, 64})
	if r := s[0] / s[1]; math.Abs(r-2) > 1e-12 {
		t.Errorf("σ ratio %v for n = 8, 64; want (64/8)^(1/3) = 2", r)
	}
}

func TestRun(t *testing.T) {
	data := synthtest.Chain(2, 500, []int{3, 4, 2})
	in := &synth.Input{
		Data:     data,
		Workload: []synth.Marginal{{Attrs: []int{1, 0}, Weight: 1}, {Attrs: []int{2}, Weight: 0}, {Attrs: []int{0, 1, 2}, Weight: 1}},
		Rho:      0.1,
		Noise:    noise.Derive([]byte("gaussian test secret, thirty-two bytes"), 1, "t"),
	}
	r, err := Mechanism{}.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	synthtest.CheckResult(t, synth.AnswersOnly, in, res)
	if math.Abs(res.RhoUsed-in.Rho) > 1e-12 {
		t.Errorf("ρ used %v, want %v", res.RhoUsed, in.Rho)
	}
	if len(res.Measurements) != 2 {
		t.Fatalf("%d answers, want 2 (the weight-0 marginal is not measured)", len(res.Measurements))
	}
	// The noise is integer and its size is consistent with σ: the
	// normalised squared error over all cells averages to about 1.
	var z2 float64
	var n int
	for _, m := range res.Measurements {
		x := data.MarginalTo(nil, m.Attrs)
		for i := range x {
			d := m.Y[i] - x[i]
			if d != math.Trunc(d) {
				t.Fatalf("non-integer noise %v", d)
			}
			z2 += d * d / (m.Sigma * m.Sigma)
			n++
		}
	}
	// 36 cells; E = 1, sd of the mean ≈ sqrt(2/36) ≈ 0.24: allow 4 sd.
	if m := z2 / float64(n); m < 0.05 || m > 2 {
		t.Errorf("mean squared standardised noise %v, want about 1", m)
	}
	if _, err := (Mechanism{}).New([]synth.Option{{Name: "ROUNDS", Value: 1}}); err == nil {
		t.Error("option accepted by a mechanism with none")
	}
}
