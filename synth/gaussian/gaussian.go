// Package gaussian implements the Gaussian baseline: every workload marginal
// is answered directly with discrete Gaussian noise, with no model and no
// synthetic data.
//
// The budget is split to minimise the expected weighted L1 error
// Σ c_i·n_i·σ_i·sqrt(2/π) subject to Σ 1/(2σ_i²) = ρ. By Lagrange,
// σ_i ∝ (c_i·n_i)^(−1/3), that is
//
//	1/σ_i² = 2ρ·(c_i·n_i)^(2/3) / Σ_j (c_j·n_j)^(2/3),
//
// which for uniform weights is the PrivSyn allocation σ_i ∝ n_i^(−1/3) of
// spec/mst-independent-gaussian.md. Marginals of weight 0 are not measured.
//
// It has no options.
package gaussian

import (
	"context"
	"fmt"
	"math"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/pgm"
)

// Mechanism is the Gaussian baseline as a synth.Mechanism.
type Mechanism struct{}

var _ synth.Mechanism = Mechanism{}

// Name returns "gaussian".
func (Mechanism) Name() string { return "gaussian" }

// Summary describes the mechanism in one line.
func (Mechanism) Summary() string {
	return "Gaussian: each workload marginal answered with Gaussian noise (σ ∝ n^(-1/3)); answers only, no synthetic data"
}

// Output is AnswersOnly.
func (Mechanism) Output() synth.Output { return synth.AnswersOnly }

// Schema is empty.
func (Mechanism) Schema() synth.Schema { return nil }

// New accepts no options.
func (Mechanism) New(opts []synth.Option) (synth.Runner, error) {
	if _, err := synth.Schema(nil).Parse("gaussian", opts); err != nil {
		return nil, err
	}
	return runner{}, nil
}

type runner struct{}

// Sigmas returns the per-marginal noise scales for a workload (canonical,
// cells[i] = n_i) under budget rho; weight-0 marginals get +Inf.
func Sigmas(rho float64, w []synth.Marginal, cells []int) []float64 {
	var z float64
	for i, m := range w {
		z += math.Pow(m.Weight*float64(cells[i]), 2.0/3)
	}
	sig := make([]float64, len(w))
	for i, m := range w {
		if m.Weight == 0 {
			sig[i] = math.Inf(1)
			continue
		}
		prec := 2 * rho * math.Pow(m.Weight*float64(cells[i]), 2.0/3) / z // 1/σ²
		sig[i] = 1 / math.Sqrt(prec)
	}
	return sig
}

// Run answers every workload marginal of positive weight.
func (runner) Run(ctx context.Context, in *synth.Input) (*synth.Result, error) {
	w, err := in.Check(true)
	if err != nil {
		return nil, fmt.Errorf("gaussian: %w", err)
	}
	dom := in.Data.Domain()
	cells := make([]int, len(w))
	sets := make([][]int, 0, len(w))
	for i, m := range w {
		cells[i] = dom.Cells(m.Attrs)
		if m.Weight > 0 {
			sets = append(sets, m.Attrs)
		}
	}
	sigmas := Sigmas(in.Rho, w, cells)
	var used []float64
	for i, m := range w {
		if m.Weight > 0 {
			used = append(used, sigmas[i])
		}
	}
	if err := synth.CheckNoise(used, nil); err != nil {
		return nil, fmt.Errorf("gaussian: %w", err)
	}
	answers, err := in.Data.Marginals(ctx, sets)
	if err != nil {
		return &synth.Result{}, fmt.Errorf("gaussian: %w", err)
	}
	res := &synth.Result{}
	k := 0
	for i, m := range w {
		if m.Weight == 0 {
			continue
		}
		y := answers[k]
		k++
		in.Noise.AddDiscreteGaussian(y, sigmas[i])
		res.Measurements = append(res.Measurements, synth.Measurement{
			Measurement: pgm.Measurement{Attrs: m.Attrs, Y: y, Sigma: sigmas[i]},
		})
		res.RhoUsed += 1 / (2 * sigmas[i] * sigmas[i])
	}
	in.Report(synth.Status{Phase: "final", RhoUsed: res.RhoUsed})
	return res, nil
}
