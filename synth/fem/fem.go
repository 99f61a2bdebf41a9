// Package fem implements FEM, follow-the-perturbed-leader with exponential
// noise (Vietri, Tian, Bun, Steinke, Wu 2020; spec
// pep-gem-mwem-dualquery.md §7), as a baseline next to DualQuery: it
// shares DualQuery's query set Q ∪ Q̄ (the workload's cells and their
// negations) and best-response oracle (package oracle).
//
// Each of T rounds selects one query q̃_t from Q ∪ Q̄ with the exponential
// mechanism, scoring how much the records released so far overshoot it,
// w_m·(n̂·q(D̂_{t−1}) − n·q(D)) (sensitivity max w_m; q̄ scores the
// negative, D̂_0 is uniform), then draws s records
//
//	x_{t,i} = argmin_x Σ_{j≤t} q̃_j(x) + ⟨x, η⟩,   η ~ Exp(σ)^{d'}
//
// with one exponential perturbation (mean σ) per one-hot coordinate. The
// data player never sees the data: only the selections are private, so
// the budget is the count (COUNT_FRACTION·ρ, discrete Gaussian, to
// normalise) plus T selections of ε₀ = sqrt(8·(1−COUNT_FRACTION)·ρ/T),
// each ε₀²/8 zCDP. The perturbations are post-processing randomness. The
// release is the T·s records (each repeated to the released count or
// ROWS).
package fem

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/internal/oracle"
)

// Defaults.
const (
	DefaultRounds        = 30
	DefaultSamples       = 20
	DefaultSigma         = 1.0
	DefaultCountFraction = 0.05
)

// Options configures FEM; zero fields mean defaults.
type Options struct {
	Rounds        int
	Samples       int
	Sigma         float64
	CountFraction float64
	OracleLimit   float64
}

var schema = synth.Schema{
	{Name: "ROUNDS", Kind: synth.Int, Default: "30", Min: 1, Max: 1e5,
		Doc: "T: rounds, each selecting one query with the exponential mechanism"},
	{Name: "SAMPLES", Kind: synth.Int, Default: "20", Min: 1, Max: 1e5,
		Doc: "s: perturbed best responses (records) per round"},
	{Name: "SIGMA", Kind: synth.Float, Default: "1", Min: 1e-6, Max: 1e6,
		Doc: "σ: mean of the exponential perturbation of each one-hot coordinate"},
	{Name: "COUNT_FRACTION", Kind: synth.Float, Default: "0.05", Min: 1e-4, Max: 0.5,
		Doc: "fraction of ρ spent on the noisy record count that normalises the answers"},
	{Name: "ORACLE_EXACT_LIMIT", Kind: synth.Float, Default: "1e6", Min: 1, Max: 1e18,
		Doc: "largest product of domain sizes searched exactly by the best-response oracle; beyond it greedy + local search"},
}

// Mechanism is FEM (USING fem).
type Mechanism struct{}

var _ synth.Mechanism = Mechanism{}

// Name returns "fem".
func (Mechanism) Name() string { return "fem" }

// Summary describes FEM in one line.
func (Mechanism) Summary() string {
	return "FEM: follow-the-perturbed-leader with exponential noise over DualQuery's best-response oracle, T exponential-mechanism query selections"
}

// Output is RowsOnly.
func (Mechanism) Output() synth.Output { return synth.RowsOnly }

// Schema declares the options.
func (Mechanism) Schema() synth.Schema { return schema }

// New parses opts.
func (Mechanism) New(opts []synth.Option) (synth.Runner, error) {
	v, err := schema.Parse("fem", opts)
	if err != nil {
		return nil, err
	}
	return &Options{Rounds: v.Int("ROUNDS", 0), Samples: v.Int("SAMPLES", 0), Sigma: v.Float("SIGMA", 0),
		CountFraction: v.Float("COUNT_FRACTION", 0), OracleLimit: v.Float("ORACLE_EXACT_LIMIT", 0)}, nil
}

// RoundEpsilon is the ε₀ of each selection for the budget rho left after
// the count, over T rounds: T·ε₀²/8 = rho.
func RoundEpsilon(rho float64, T int) float64 { return math.Sqrt(8 * rho / float64(T)) }

// Run runs FEM on in.
func (o *Options) Run(ctx context.Context, in *synth.Input) (*synth.Result, error) {
	w, err := in.Check(true)
	if err != nil {
		return nil, fmt.Errorf("fem: %w", err)
	}
	opt := *o
	if opt.Rounds <= 0 {
		opt.Rounds = DefaultRounds
	}
	if opt.Samples <= 0 {
		opt.Samples = DefaultSamples
	}
	if opt.Sigma <= 0 {
		opt.Sigma = DefaultSigma
	}
	if opt.CountFraction <= 0 {
		opt.CountFraction = DefaultCountFraction
	}
	if opt.Rounds*opt.Samples > synth.MaxRows {
		return nil, fmt.Errorf("fem: %w: ROUNDS·SAMPLES = %d records, at most %d", synth.ErrInvalidInput, opt.Rounds*opt.Samples, synth.MaxRows)
	}
	dom := in.Data.Domain()
	for _, m := range w {
		if m.Weight > 0 && dom.Cells(m.Attrs) > 1<<26 {
			return nil, fmt.Errorf("fem: %w: the workload marginal on %v has %d cells (at most 2^26)", synth.ErrInvalidInput, m.Attrs, dom.Cells(m.Attrs))
		}
	}
	rhoCount := opt.CountFraction * in.Rho
	sigmaCount := math.Sqrt(1 / (2 * rhoCount))
	eps0 := RoundEpsilon(in.Rho-1/(2*sigmaCount*sigmaCount), opt.Rounds)
	if err := synth.CheckNoise([]float64{sigmaCount}, []float64{eps0}); err != nil {
		return nil, fmt.Errorf("fem: %w", err)
	}
	q := oracle.NewQueries(dom, w)
	if q.Len() > 1<<27 {
		return nil, fmt.Errorf("fem: %w: the workload has %d cells (at most 2^27)", synth.ErrInvalidInput, q.Len())
	}
	res := &synth.Result{}
	fail := func(err error) (*synth.Result, error) {
		res.Rows = nil
		return res, fmt.Errorf("fem: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	answers, n, err := q.Answers(ctx, in.Data)
	if err != nil {
		return fail(err)
	}
	meas, nhat := oracle.NoisyCount(in.Noise, n, sigmaCount, dom.Size(0))
	res.Measurements = append(res.Measurements, meas)
	res.RhoUsed = 1 / (2 * sigmaCount * sigmaCount)
	in.Report(synth.Status{Phase: "init", RhoUsed: res.RhoUsed})

	N := q.Len()
	delta := slices.Max(q.Weights)
	// u_c = ε₀/(2Δ)·w_m·(n̂·q(D̂) − count_c) for q, its negative for q̄.
	u := make([]float64, 2*N)
	syn := make([]float64, N) // records so far in each cell
	var sampler oracle.Sampler
	solver := oracle.NewSolver(q.Sizes, oracle.Options{ExactLimit: opt.OracleLimit})
	post := in.Post()
	selected := map[int32]float64{} // cell → weight in the data player's objective
	var keys []int32
	var problem oracle.Problem
	problem.Sizes = q.Sizes
	problem.Unary = make([][]float64, len(q.Sizes))
	for a, sz := range q.Sizes {
		problem.Unary[a] = make([]float64, sz)
	}
	var records [][]int
	for t := 1; t <= opt.Rounds; t++ {
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		done := float64(len(records))
		for m := range q.Sets {
			k := eps0 / (2 * delta) * q.Weights[m]
			cells := float64(q.Off[m+1] - q.Off[m])
			for c := q.Off[m]; c < q.Off[m+1]; c++ {
				est := 1 / cells // D̂_0: uniform
				if done > 0 {
					est = syn[c] / done
				}
				v := k * (nhat*est - answers[c])
				u[2*c], u[2*c+1] = v, -v
			}
		}
		if err := sampler.Reset(u); err != nil {
			return fail(fmt.Errorf("round %d: %w", t, err))
		}
		pick := sampler.Draw(in.Noise)
		res.RhoUsed += eps0 * eps0 / 8
		// Minimising q(x) is maximising −1[x ∈ c]; minimising q̄(x) =
		// 1 − 1[x ∈ c] is maximising +1[x ∈ c].
		if pick&1 == 0 {
			selected[int32(pick>>1)]--
		} else {
			selected[int32(pick>>1)]++
		}
		problem.Terms, keys = q.AppendTerms(problem.Terms[:0], selected, keys)
		for range opt.Samples {
			for a := range problem.Unary {
				for v := range problem.Unary[a] {
					problem.Unary[a][v] = -opt.Sigma * post.ExpFloat64()
				}
			}
			x := make([]int, len(q.Sizes))
			solver.Solve(&problem, x, post)
			records = append(records, x)
		}
		for _, x := range records[len(records)-opt.Samples:] {
			for m := range q.Sets {
				syn[q.Cell(m, x)]++
			}
		}
		in.Report(synth.Status{Phase: "round", Round: t, RhoUsed: res.RhoUsed})
	}
	res.Note = fmt.Sprintf("fem: T=%d rounds, s=%d, sigma=%.4g, eps0=%.4g, n̂=%.0f", opt.Rounds, opt.Samples, opt.Sigma, eps0, nhat)
	res.Rows = oracle.Replicate(records, dom.Len(), oracle.Rows(in.Rows, nhat))
	in.Report(synth.Status{Phase: "final", Round: opt.Rounds, RhoUsed: res.RhoUsed})
	return res, nil
}
