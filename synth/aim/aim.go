package aim

import (
	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/pgm"
)

// Defaults. The estimation iterations were chosen by measurement on adult
// (ε = 1, all 3-way marginals, 5 seeds each): 50 per round anneals too
// early (the under-converged model barely moves, ~19 rounds, mean error
// 0.199); 100 per round gives ~25 rounds and 0.185; a final estimation of
// 2500 instead of 1000 iterations changes nothing (0.184).
const (
	DefaultMaxModelSize = 80
	DefaultPGMIters     = 100
	DefaultFinalIters   = 1000
	// DefaultFinalTol stops the final estimation once the loss falls by
	// less than this fraction per iteration (pgm.EstimateOptions.Tol, over
	// pgm.TolWindow iterations). The loss left by then is fitting the noise:
	// measured in docs/aim-performance.md (Speed: estimation).
	DefaultFinalTol = 1e-3
	// DefaultCoarseBins is the number of bins of a coarse twin's large
	// attributes (coarse.go), measured on adult in docs/aim-performance.md
	// (Issue 19, third pass).
	DefaultCoarseBins = 20
	// DefaultCoarseMaxSize is the model size (MB, at the whole budget, as
	// MaxModelSize) up to which coarse twins are candidates (measured in
	// docs/aim-performance.md, Issue 19, third pass).
	DefaultCoarseMaxSize = 2
)

// Options configures AIM. The zero value of a field means its default.
type Options struct {
	MaxModelSize float64 // S_max in MB
	Rounds       int     // T; 0 means 16·d
	PGMIters     int     // estimation iterations per round
	FinalIters   int     // iterations of the final estimation
	// FinalTol stops the final estimation early (pgm.EstimateOptions.Tol);
	// negative runs all FinalIters.
	FinalTol   float64
	InitRounds float64 // budget of the 1-way initialisation, in rounds' worth per 1-way marginal; 0: defaultInitRounds
	// CoarseBins bins, in a candidate's coarse twin, every attribute of more
	// values into this many equal-width bins; negative adds no twins.
	CoarseBins int
	// CoarseMaxSize is MaxModelSize for the coarse twins: a twin is a
	// candidate only while its fine set keeps the model within it.
	CoarseMaxSize float64
	// Eager scores every eligible candidate every round instead of
	// selecting lazily from bounds (lazy.go); the selection has the same
	// distribution either way.
	Eager bool

	// roundStep is the line-search rule of the rounds' fits; the zero
	// value means pgm.KeepStep. Tests set pgm.GrowStep, the rule before
	// docs/aim-performance.md's fourth pass, to compare.
	roundStep pgm.StepRule
	roundTol  float64
}

var schema = synth.Schema{
	{Name: "MAX_MODEL_SIZE", Kind: synth.Float, Default: "80", Min: 1e-3,
		Doc: "junction-tree size limit S_max in MB; reached when the whole budget is spent"},
	{Name: "ROUNDS", Kind: synth.Int, Default: "16·d", Min: 1, Max: 1e5,
		Doc: "T: sets the initial per-round budget ρ/T; the number of rounds adapts"},
	{Name: "PGM_ITERS", Kind: synth.Int, Default: "100", Min: 1, Max: 1e6,
		Doc: "estimation iterations per round, warm-started"},
	{Name: "FINAL_ITERS", Kind: synth.Int, Default: "1000", Min: 1, Max: 1e6,
		Doc: "iterations of the final estimation before sampling"},
	{Name: "FINAL_TOL", Kind: synth.Float, Default: "1e-3", Min: 0, Max: 1,
		Doc: "stop the final estimation when the loss falls by less than this fraction per iteration; 0 runs all FINAL_ITERS"},
	{Name: "INIT_ROUNDS", Kind: synth.Float, Default: "1–4 by ρ", Min: 0.01, Max: 1e4,
		Doc: "budget of the 1-way initialisation in rounds' worth (α·ρ/ROUNDS) per 1-way marginal, shared σ_i ∝ n_i^(−1/3); the paper's is 1 at equal σ"},
	{Name: "COARSE_BINS", Kind: synth.Int, Default: "20", Min: 0, Max: 1e6,
		Doc: "each candidate with an attribute of more values also has a coarse twin, that attribute in this many equal-width bins; 0: no twins"},
	{Name: "COARSE_MAX_SIZE", Kind: synth.Float, Default: "2", Min: 1e-3,
		Doc: "MAX_MODEL_SIZE for the coarse twins (MB): a twin is a candidate while its attributes keep the model within this size"},
	{Name: "LAZY", Kind: synth.Int, Default: "1", Min: 0, Max: 1,
		Doc: "1: score only the candidates that can still win, from exact bounds (same selection distribution); 0: score every candidate every round"},
}

// Mechanism is AIM as a synth.Mechanism.
type Mechanism struct{}

var _ synth.Mechanism = Mechanism{}

// Name returns "aim".
func (Mechanism) Name() string { return "aim" }

// Summary describes AIM in one line.
func (Mechanism) Summary() string {
	return "AIM: adaptive, workload-aware selection of marginals measured with Gaussian noise, fitted with Private-PGM"
}

// Output is SyntheticData.
func (Mechanism) Output() synth.Output { return synth.SyntheticData }

// Schema declares AIM's options.
func (Mechanism) Schema() synth.Schema { return schema }

// New parses opts into Options.
func (Mechanism) New(opts []synth.Option) (synth.Runner, error) {
	v, err := schema.Parse("aim", opts)
	if err != nil {
		return nil, err
	}
	tol := v.Float("FINAL_TOL", 0)
	if _, given := v["FINAL_TOL"]; given && tol == 0 {
		tol = -1 // FINAL_TOL = 0: no early stop
	}
	bins := v.Int("COARSE_BINS", 0)
	if _, given := v["COARSE_BINS"]; given && bins == 0 {
		bins = -1 // COARSE_BINS = 0: no twins
	}
	return &Options{
		MaxModelSize:  v.Float("MAX_MODEL_SIZE", 0),
		Rounds:        v.Int("ROUNDS", 0),
		PGMIters:      v.Int("PGM_ITERS", 0),
		FinalIters:    v.Int("FINAL_ITERS", 0),
		FinalTol:      tol,
		InitRounds:    v.Float("INIT_ROUNDS", 0),
		CoarseBins:    bins,
		CoarseMaxSize: v.Float("COARSE_MAX_SIZE", 0),
		Eager:         v.Int("LAZY", 1) == 0,
	}, nil
}

// withDefaults returns o with zero fields replaced by defaults for d
// attributes.
func (o Options) withDefaults(d int) Options {
	if o.MaxModelSize <= 0 {
		o.MaxModelSize = DefaultMaxModelSize
	}
	if o.Rounds <= 0 {
		o.Rounds = 16 * d
	}
	if o.PGMIters <= 0 {
		o.PGMIters = DefaultPGMIters
	}
	if o.FinalIters <= 0 {
		o.FinalIters = DefaultFinalIters
	}
	if o.FinalTol == 0 {
		o.FinalTol = DefaultFinalTol
	}
	if o.CoarseBins == 0 {
		o.CoarseBins = DefaultCoarseBins
	}
	if o.CoarseMaxSize <= 0 {
		o.CoarseMaxSize = DefaultCoarseMaxSize
	}
	if o.roundStep == pgm.ResetStep {
		o.roundStep = pgm.KeepStep
	}
	return o
}
