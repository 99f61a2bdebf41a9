// Package mwem implements MWEM+PGM (McKenna, Sheldon, Miklau, ICML 2019,
// Section 4): MWEM's select–measure–update loop with the multiplicative
// weights update replaced by Private-PGM estimation on all measurements so
// far.
//
// Each of T rounds spends ρ/T: the exponential mechanism (fraction 1−α,
// ε = sqrt(8·(1−α)·ρ/T)) picks the workload marginal with the largest score
// c_r·(‖M_r(D) − M_r(p̂)‖₁ − n_r) (sensitivity max c_r; the n_r penalty is
// the reference implementation's), and the Gaussian mechanism (fraction α,
// σ = sqrt(T/(2·α·ρ))) measures it; α = 0.9. As in the reference, round t
// only considers marginals that keep the model below MAX_MODEL_SIZE·t/T MB
// (or lie inside a current clique); a round with no such marginal is
// skipped and its budget left unspent. Before the first measurement the
// model is uniform with total 1.
//
// # Options
//
//	ROUNDS          int, default d (the number of attributes): T.
//	MAX_MODEL_SIZE  float, MB, default 25.
//	PGM_ITERS       int, default 100: estimation iterations per round,
//	                warm-started.
//	FINAL_ITERS     int, default 1000: iterations of the final estimation.
package mwem

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/internal/adaptive"
	"github.com/dpsql/dpsql/synth/internal/marginal"
	"github.com/dpsql/dpsql/synth/pgm"
)

// Defaults.
const (
	DefaultMaxModelSize = 25
	DefaultPGMIters     = 100
	DefaultFinalIters   = 1000
)

// alpha is the fraction of each round's budget spent on measurement.
const alpha = 0.9

// Options configures MWEM+PGM; zero fields mean defaults.
type Options struct {
	Rounds       int // T; 0 means d
	MaxModelSize float64
	PGMIters     int
	FinalIters   int
}

var schema = synth.Schema{
	{Name: "ROUNDS", Kind: synth.Int, Default: "d", Min: 1, Max: 1e5,
		Doc: "number of rounds T; each spends ρ/T"},
	{Name: "MAX_MODEL_SIZE", Kind: synth.Float, Default: "25", Min: 1e-3,
		Doc: "junction-tree size limit in MB, reached in the last round"},
	{Name: "PGM_ITERS", Kind: synth.Int, Default: "100", Min: 1, Max: 1e6,
		Doc: "estimation iterations per round, warm-started"},
	{Name: "FINAL_ITERS", Kind: synth.Int, Default: "1000", Min: 1, Max: 1e6,
		Doc: "iterations of the final estimation before sampling"},
}

// Mechanism is MWEM+PGM as a synth.Mechanism.
type Mechanism struct{}

var _ synth.Mechanism = Mechanism{}

// Name returns "mwem".
func (Mechanism) Name() string { return "mwem" }

// Summary describes MWEM+PGM in one line.
func (Mechanism) Summary() string {
	return "MWEM+PGM: T rounds of exponential-mechanism selection of the worst workload marginal and Gaussian measurement, fitted with Private-PGM"
}

// Output is SyntheticData.
func (Mechanism) Output() synth.Output { return synth.SyntheticData }

// Schema declares the options.
func (Mechanism) Schema() synth.Schema { return schema }

// New parses opts.
func (Mechanism) New(opts []synth.Option) (synth.Runner, error) {
	v, err := schema.Parse("mwem", opts)
	if err != nil {
		return nil, err
	}
	return &Options{
		Rounds:       v.Int("ROUNDS", 0),
		MaxModelSize: v.Float("MAX_MODEL_SIZE", 0),
		PGMIters:     v.Int("PGM_ITERS", 0),
		FinalIters:   v.Int("FINAL_ITERS", 0),
	}, nil
}

// RoundBudget returns the per-round selection ε and measurement σ for
// budget rho over T rounds; each round costs ε²/8 + 1/(2σ²) = rho/T.
func RoundBudget(rho float64, T int) (eps, sigma float64) {
	return math.Sqrt(8 * (1 - alpha) * rho / float64(T)), math.Sqrt(float64(T) / (2 * alpha * rho))
}

// Run runs MWEM+PGM on in.
func (o *Options) Run(ctx context.Context, in *synth.Input) (*synth.Result, error) {
	w, err := in.Check(true)
	if err != nil {
		return nil, fmt.Errorf("mwem: %w", err)
	}
	dom := in.Data.Domain()
	opt := *o
	if opt.Rounds <= 0 {
		opt.Rounds = dom.Len()
	}
	if opt.MaxModelSize <= 0 {
		opt.MaxModelSize = DefaultMaxModelSize
	}
	if opt.PGMIters <= 0 {
		opt.PGMIters = DefaultPGMIters
	}
	if opt.FinalIters <= 0 {
		opt.FinalIters = DefaultFinalIters
	}
	res := &synth.Result{}
	fail := func(err error) (*synth.Result, error) {
		res.Model, res.Rows = nil, nil
		return res, fmt.Errorf("mwem: %w", err)
	}

	eps, sigma := RoundBudget(in.Rho, opt.Rounds)
	if err := synth.CheckNoise([]float64{sigma}, []float64{eps}); err != nil {
		return nil, fmt.Errorf("mwem: %w", err)
	}

	sets := make([][]int, len(w))
	for i, m := range w {
		sets[i] = m.Attrs
	}
	answers, err := in.Data.Marginals(ctx, sets)
	if err != nil {
		return fail(fmt.Errorf("true marginals: %w", err))
	}

	sizer := adaptive.Sizer{Size: func(cliques [][]int) float64 { return pgm.ModelSize(dom, cliques) }}
	tracker := adaptive.NewTracker(len(w))
	var (
		model    *pgm.Model
		meas     []pgm.Measurement
		measured [][]int
		eligible []int
		scores   []float64
	)
	for t := 1; t <= opt.Rounds; t++ {
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		limit := opt.MaxModelSize * float64(t) / float64(opt.Rounds)
		var free [][]int
		if model != nil {
			free = model.Cliques()
		}
		eligible = sizer.Filter(eligible[:0], sets, measured, free, limit)
		if len(eligible) == 0 {
			continue
		}
		delta := 0.0
		for _, i := range eligible {
			delta = max(delta, w[i].Weight)
		}
		scores = slices.Grow(scores[:0], len(eligible))[:len(eligible)]
		var err error
		if model != nil {
			// One batch: the model's reduced cliques are shared between
			// the sets, and only the marginals being scored are held.
			esets := make([][]int, len(eligible))
			for k, i := range eligible {
				esets[k] = sets[i]
			}
			err = model.MarginalsFunc(ctx, esets, func(k int, xhat []float64) {
				i := eligible[k]
				scores[k] = w[i].Weight * (marginal.L1(answers[i], xhat) - float64(len(xhat)))
			})
		} else {
			for k, i := range eligible {
				xhat := uniform(len(answers[i]))
				scores[k] = w[i].Weight * (marginal.L1(answers[i], xhat) - float64(len(xhat)))
			}
		}
		if err != nil {
			return fail(err)
		}
		tracker.Round(t, eligible, model)
		pick := eligible[in.Noise.Exponential(scores, eps, delta)]

		y := slices.Clone(answers[pick])
		in.Noise.AddDiscreteGaussian(y, sigma)
		m := pgm.Measurement{Attrs: sets[pick], Y: y, Sigma: sigma}
		meas = append(meas, m)
		measured = adaptive.AddMaximal(measured, sets[pick])
		res.Measurements = append(res.Measurements, synth.Measurement{Measurement: m, Round: t, Epsilon: eps})
		res.RhoUsed += eps*eps/8 + 1/(2*sigma*sigma)

		model, err = pgm.Estimate(ctx, dom, meas, &pgm.EstimateOptions{Iters: opt.PGMIters, WarmStart: model})
		if err != nil {
			return fail(fmt.Errorf("round %d estimation: %w", t, err))
		}
		res.Rounds = append(res.Rounds, synth.Round{
			Round: t, Epsilon: eps, Sigma: sigma, Sensitivity: delta, Candidates: len(eligible),
			Selected: sets[pick], RhoUsed: res.RhoUsed, ModelSize: model.Size(),
		})
		in.Report(synth.Status{Phase: "round", Round: t, RhoUsed: res.RhoUsed, ModelSize: model.Size()})
	}
	if model == nil {
		return fail(fmt.Errorf("no workload marginal fits MAX_MODEL_SIZE = %v MB", opt.MaxModelSize))
	}
	model, err = pgm.Estimate(ctx, dom, meas, &pgm.EstimateOptions{Iters: opt.FinalIters, WarmStart: model,
		Progress: in.FinalProgress(len(res.Rounds), res.RhoUsed)})
	if err != nil {
		return fail(fmt.Errorf("final estimation: %w", err))
	}
	res.Model = model
	tracker.Fill(res, sets)
	in.Report(synth.Status{Phase: "final", Round: len(res.Rounds), RhoUsed: res.RhoUsed, ModelSize: model.Size()})
	if res.Rows, err = synth.Sample(ctx, model, in); err != nil {
		return fail(err)
	}
	return res, nil
}

// uniform is the marginal of the uniform distribution with total 1.
func uniform(n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = 1 / float64(n)
	}
	return x
}
