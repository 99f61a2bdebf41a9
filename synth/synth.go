package synth

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/dpsql/dpsql/synth/noise"
	"github.com/dpsql/dpsql/synth/pgm"
	"gonum.org/v1/gonum/mat"
)

// Mechanism is a differentially private synthesizer. Implementations are
// stateless values; the registry lists them.
type Mechanism interface {
	// Name is the mechanism's SQL name, lower case ("aim").
	Name() string
	// Summary is a one-line description for SHOW MECHANISMS.
	Summary() string
	// Output says what Run produces.
	Output() Output
	// Schema declares the options New accepts.
	Schema() Schema
	// New validates opts against Schema and returns a configured runner.
	// Errors wrap ErrUnknownOption or ErrInvalidOption.
	New(opts []Option) (Runner, error)
}

// Runner is a mechanism with its options fixed.
type Runner interface {
	// Run spends at most in.Rho on in.Data. See the package documentation for
	// the privacy and cancellation contract.
	Run(ctx context.Context, in *Input) (*Result, error)
}

// Output is the kind of release a mechanism makes.
type Output int

const (
	// SyntheticData means Run returns a model and synthetic rows.
	SyntheticData Output = iota
	// AnswersOnly means Run returns only noisy workload answers
	// (Result.Measurements), no model and no rows.
	AnswersOnly
	// RowsOnly means Run returns synthetic rows (and its measurements) but
	// no graphical model: the mechanism's representation is a generator or
	// a set of records (GEM, RAP, DualQuery). Queries on its table are
	// answered from the rows. Result.Artifact may hold the representation.
	RowsOnly
)

// String returns "synthetic data" or "answers only".
func (o Output) String() string {
	switch o {
	case SyntheticData:
		return "synthetic data"
	case AnswersOnly:
		return "answers only"
	case RowsOnly:
		return "synthetic rows"
	}
	return "unknown output"
}

// Marginal is one workload entry: a marginal query over Attrs (attribute
// indexes into the data's domain) with a non-negative weight.
type Marginal struct {
	Attrs  []int
	Weight float64
	// Kron, if non-nil, narrows the entry to the linear queries
	// Q = Kron[0] ⊗ … ⊗ Kron[k−1] on the marginal over Attrs (seed 001,
	// App. B): Kron[j] has Domain.Size(Attrs[j]) columns and acts on
	// attribute Attrs[j]; a nil factor is the identity. A prefix-range
	// workload on a binned attribute is the lower-triangular all-ones
	// factor; a WHERE condition on an attribute not grouped by is a single
	// 0/1 row. Kron nil means the marginal itself. A mechanism that does
	// not read Kron measures the whole marginal over Attrs, which answers
	// every such query (the fallback); see docs/pgm-dropin.md.
	Kron []*mat.Dense
}

// Input is everything a Runner needs. The caller owns it; runners do not
// modify it.
type Input struct {
	// Data is the sensitive table, read through its marginals only (see
	// Data). The engine passes a *Cache, so that each marginal is read
	// from the source once per synthesis.
	Data Data
	// Workload is the analyst's marginal workload. Mechanisms that are
	// workload-agnostic (MST, Independent) ignore it.
	Workload []Marginal
	// Rho is the zCDP budget reserved by the caller; it must be positive.
	Rho float64
	// Noise is the source of all privacy noise and private selections. It
	// must be fresh (noise.NewSource) for every release.
	Noise *noise.Source
	// PostNoise, if non-nil, is the randomness of post-processing that reads
	// released values only (sampling rows from the fitted model). It may be
	// derived from a user's SEED to make that step reproducible; nil means
	// Noise.
	PostNoise *noise.Source
	// Rows is the number of synthetic rows to draw; 0 means the model's
	// estimated total.
	Rows int
	// Public, if non-nil, is a public table over the same domain as Data
	// (the PUBLIC = db.t option): its records may be read freely, at no
	// privacy cost. Only mechanisms that accept public data get it (see
	// PublicMechanism).
	Public *pgm.Dataset
	// Progress, if non-nil, is called after every round (and after the
	// initial and final phases). It must be cheap and must not block.
	Progress func(Status)
	// TempDir, if not empty, is a directory where a mechanism may keep,
	// in files it removes, what it need not hold in memory (AIM's true
	// answers, read a candidate at a time, and its earlier rounds'
	// snapshots, read at the end of the run); empty keeps everything in
	// memory.
	TempDir string
}

// Status is a progress report.
type Status struct {
	Phase     string  // "init", "round", "final", "sample"
	Round     int     // current round (0 during init)
	RhoUsed   float64 // ρ consumed so far
	ModelSize float64 // current model size in MB (0 if no model yet)
	// Iter and Iters report the final estimation while it runs: Phase
	// "final", Iter of Iters iterations done. Iters is 0 in every other
	// report, including the "final" one made when the estimation is over.
	Iter, Iters int
}

// FinalProgress returns the progress callback (pgm.EstimateOptions) of a
// mechanism's final estimation, which reports it as Phase "final"
// statuses with its iterations; nil if in.Progress is nil. round and
// rhoUsed are the values of the report that follows the estimation.
func (in *Input) FinalProgress(round int, rhoUsed float64) func(pgm.EstimateProgress) {
	if in.Progress == nil {
		return nil
	}
	return func(p pgm.EstimateProgress) {
		in.Progress(Status{Phase: "final", Round: round, RhoUsed: rhoUsed, ModelSize: p.ModelSize,
			Iter: p.Iter, Iters: max(p.Iters, 1)})
	}
}

// Measurement is one released noisy measurement: Y = Q·M_Attrs(D) + noise
// with per-entry standard deviation Sigma.
type Measurement struct {
	pgm.Measurement
	// Round is the round that took it; 0 is the initialisation.
	Round int
	// Epsilon is the ε of the exponential-mechanism selection that chose
	// Attrs in this round, 0 if Attrs was not privately selected.
	Epsilon float64
	// Coarse, if non-nil, says the measurement is over a coarsened domain:
	// Coarse[j][v] is the coarse code of value v of attribute Attrs[j], and
	// Y = Q·M where M is the marginal over the coarse codes (MST's domain
	// compression). Nil means the data's own domain.
	Coarse [][]int
}

// Round records one adaptive round: what the exponential mechanism selected
// and with which parameters. It is what uncertainty quantification needs.
type Round struct {
	Round       int
	Epsilon     float64 // ε_t of the selection
	Sigma       float64 // σ_t of the measurement
	Sensitivity float64 // Δ, the score sensitivity (max candidate weight)
	Candidates  int     // |C_t|, the number of candidates after filtering
	Selected    []int   // the selected attribute set r_t
	RhoUsed     float64 // cumulative ρ after this round
	ModelSize   float64 // size in MB of the model fitted after this round
}

// CandidateRound is the last round in which Attrs was a selection
// candidate; Round is 0 if it never was.
type CandidateRound struct {
	Attrs []int
	Round int
}

// Snapshot is the model p̂_{Round−1} that round Round scored its candidates
// against (its pre-measurement model), or what error bounds read of it. A
// nil Model and no Marginals means the uniform distribution with total 1
// (MWEM+PGM's first round, before any measurement).
type Snapshot struct {
	Round int
	Model *pgm.Model
	// Marginals, set when Model is nil, are the model's marginals that the
	// error bounds read: those of the candidates whose last candidate round
	// this is and of the round's measured set. A mechanism keeps them
	// instead of the model when they are smaller (AIM at large ε keeps a
	// snapshot for most rounds, each a model the size of the final one).
	Marginals []SnapshotMarginal
}

// SnapshotMarginal is one marginal of a snapshot's model: the expected
// counts over Attrs (ascending; the last varies fastest).
type SnapshotMarginal struct {
	Attrs []int
	X     []float64
}

// Marginal returns the snapshot model's marginal over attrs (ascending) and
// whether the snapshot has it: any set when it holds the model, the stored
// ones otherwise. The result must not be modified.
func (s *Snapshot) Marginal(attrs []int) ([]float64, bool) {
	if s.Model != nil {
		return s.Model.Marginal(attrs), true
	}
	for _, m := range s.Marginals {
		if slices.Equal(m.Attrs, attrs) {
			return m.X, true
		}
	}
	return nil, false
}

// Result is what a Runner releases. All of it is differentially private.
type Result struct {
	// Model is the final fitted model (nil for AnswersOnly mechanisms).
	Model *pgm.Model
	// Measurements are all released measurements in the order taken. For
	// AnswersOnly mechanisms they are the answers, one per workload
	// marginal.
	Measurements []Measurement
	// Rounds are the adaptive rounds in order (nil for non-adaptive
	// mechanisms).
	Rounds []Round
	// LastCandidate gives, for every selection candidate (which includes
	// every workload marginal of an adaptive mechanism), the last round in
	// which it was a candidate.
	LastCandidate []CandidateRound
	// Snapshots holds p̂_{t−1} for exactly the rounds t that are some
	// candidate's last candidate round, in increasing round order.
	Snapshots []Snapshot
	// Rows are the synthetic records, column-major codes over the data's
	// domain (nil for AnswersOnly mechanisms).
	Rows [][]uint16
	// RhoUsed is the zCDP budget actually consumed.
	RhoUsed float64
	// Note, if set, is a one-line diagnostic computed from released values
	// only (e.g. the best-mixture error of a public-data mechanism); the
	// engine appends it to the ledger note.
	Note string
	// Artifact, if set, is the mechanism's own representation of the
	// release in its own versioned encoding (GEM's generator weights,
	// RAP's relaxed table), stored with the release. It must be a function
	// of released values only.
	Artifact []byte
}

// PublicUse says how a mechanism uses public data.
type PublicUse int

const (
	// PublicNone: the mechanism does not take public data; PUBLIC = is
	// refused.
	PublicNone PublicUse = iota
	// PublicOptional: the mechanism uses public data if given.
	PublicOptional
	// PublicRequired: the mechanism needs public data; running it without
	// PUBLIC = is refused.
	PublicRequired
)

// PublicMechanism is implemented by a Mechanism that takes public data
// (Input.Public). Mechanisms that do not implement it take none.
type PublicMechanism interface {
	PublicData() PublicUse
}

// PublicUseOf returns how m uses public data.
func PublicUseOf(m Mechanism) PublicUse {
	if p, ok := m.(PublicMechanism); ok {
		return p.PublicData()
	}
	return PublicNone
}

// Post returns the generator of post-processing randomness: PostNoise's,
// or Noise's when PostNoise is nil. Never use it for privacy noise.
func (in *Input) Post() *rand.Rand {
	if in.PostNoise != nil {
		return in.PostNoise.Rand()
	}
	return in.Noise.Rand()
}

// Report sends s to in.Progress if it is set.
func (in *Input) Report(s Status) {
	if in.Progress != nil {
		in.Progress(s)
	}
}

// MaxRows bounds the rows Sample draws, whether asked for or estimated: the
// rows of a synthetic table are built in memory.
const MaxRows = 1 << 22

// Sample draws the synthetic rows of a fitted model: in.Rows records, or the
// model's rounded total when in.Rows is 0. It is post-processing and uses
// in.Post.
//
// The model's total is a noisy estimate: under heavy noise it can be far
// larger than the data, so it is clamped to MaxRows (a released value, so
// the clamp is post-processing too). It stops with ctx's error between
// attributes (pgm.Model.SynthesizeContext): millions of rows take seconds
// an attribute.
func Sample(ctx context.Context, m *pgm.Model, in *Input) ([][]uint16, error) {
	rows := in.Rows
	if rows == 0 {
		total := math.Round(m.Total())
		switch {
		case !(total > 0): // also NaN
			rows = 0
		case total > MaxRows:
			rows = MaxRows
		default:
			rows = int(total)
		}
	}
	out, err := m.SynthesizeContext(ctx, in.Post(), rows)
	if err != nil {
		return nil, fmt.Errorf("synthesize %d rows: %w", rows, err)
	}
	return out, nil
}
