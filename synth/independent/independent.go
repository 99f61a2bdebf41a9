// Package independent implements the Independent baseline: every 1-way
// marginal measured with the Gaussian mechanism using the whole budget, and
// a product model fitted to them.
//
// The d 1-way marginals stacked have L2 sensitivity sqrt(d), so each is
// measured with per-cell noise σ = sqrt(d/(2ρ)) (spec/mst-independent-gaussian.md).
//
// # Options
//
//	PGM_ITERS  int, default 1000: estimation iterations (on adult, 200
//	           iterations leave the workload error 2% higher).
package independent

import (
	"context"
	"fmt"
	"math"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/pgm"
)

// DefaultPGMIters is the default number of estimation iterations.
const DefaultPGMIters = 1000

// Options configures Independent; zero fields mean defaults.
type Options struct {
	PGMIters int
}

var schema = synth.Schema{
	{Name: "PGM_ITERS", Kind: synth.Int, Default: "1000", Min: 1, Max: 1e6,
		Doc: "estimation iterations"},
}

// Mechanism is Independent as a synth.Mechanism.
type Mechanism struct{}

var _ synth.Mechanism = Mechanism{}

// Name returns "independent".
func (Mechanism) Name() string { return "independent" }

// Summary describes Independent in one line.
func (Mechanism) Summary() string {
	return "Independent: all 1-way marginals with the whole budget; attributes sampled independently"
}

// Output is SyntheticData.
func (Mechanism) Output() synth.Output { return synth.SyntheticData }

// Schema declares the options.
func (Mechanism) Schema() synth.Schema { return schema }

// New parses opts.
func (Mechanism) New(opts []synth.Option) (synth.Runner, error) {
	v, err := schema.Parse("independent", opts)
	if err != nil {
		return nil, err
	}
	return &Options{PGMIters: v.Int("PGM_ITERS", 0)}, nil
}

// Run measures every 1-way marginal and samples from the product model.
func (o *Options) Run(ctx context.Context, in *synth.Input) (*synth.Result, error) {
	if _, err := in.Check(false); err != nil {
		return nil, fmt.Errorf("independent: %w", err)
	}
	dom := in.Data.Domain()
	d := dom.Len()
	sigma := math.Sqrt(float64(d) / (2 * in.Rho))
	if err := synth.CheckNoise([]float64{sigma}, nil); err != nil {
		return nil, fmt.Errorf("independent: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return &synth.Result{}, fmt.Errorf("independent: %w", err)
	}
	iters := o.PGMIters
	if iters <= 0 {
		iters = DefaultPGMIters
	}
	res := &synth.Result{}
	meas := make([]pgm.Measurement, d)
	sets := make([][]int, d)
	for a := range sets {
		sets[a] = []int{a}
	}
	ys, err := in.Data.Marginals(ctx, sets)
	if err != nil {
		return &synth.Result{}, fmt.Errorf("independent: true marginals: %w", err)
	}
	for a := 0; a < d; a++ {
		attrs := sets[a]
		y := ys[a]
		in.Noise.AddDiscreteGaussian(y, sigma)
		meas[a] = pgm.Measurement{Attrs: attrs, Y: y, Sigma: sigma}
		res.Measurements = append(res.Measurements, synth.Measurement{Measurement: meas[a]})
	}
	// d marginals, each costing 1/(2·σ²) at sensitivity 1 per marginal:
	// d/(2σ²) = ρ.
	res.RhoUsed = float64(d) / (2 * sigma * sigma)
	in.Report(synth.Status{Phase: "init", RhoUsed: res.RhoUsed})

	model, err := pgm.Estimate(ctx, dom, meas, &pgm.EstimateOptions{Iters: iters, Progress: in.FinalProgress(0, res.RhoUsed)})
	if err != nil {
		return res, fmt.Errorf("independent: estimate: %w", err)
	}
	res.Model = model
	in.Report(synth.Status{Phase: "final", RhoUsed: res.RhoUsed, ModelSize: model.Size()})
	if res.Rows, err = synth.Sample(ctx, model, in); err != nil {
		res.Model = nil
		return res, fmt.Errorf("independent: %w", err)
	}
	return res, nil
}
