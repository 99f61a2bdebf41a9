package pgm

// This file is the public API contract of the engine. The bodies are filled in
// by the implementation files; signatures here are what synth/ codes against.

import (
	"context"
	"errors"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

var errNotImplemented = errors.New("pgm: not implemented")

// Measurement is one noisy linear measurement of a marginal:
// Y = Q·M_Attrs(D) + noise, with per-entry noise standard deviation Sigma.
type Measurement struct {
	Attrs []int
	// Query is the Q matrix (rows × Cells(Attrs)); nil means the identity,
	// i.e. Y is the noisy marginal itself.
	Query *mat.Dense
	Y     []float64
	Sigma float64
}

// Method selects the estimation algorithm.
type Method int

const (
	// MirrorDescent is entropic mirror descent with Armijo line search.
	MirrorDescent Method = iota
	// Accelerated is the accelerated proximal (dual averaging) variant.
	Accelerated
)

// Loss selects the estimation loss.
type Loss int

const (
	// L2 is ½‖(Qμ−y)/σ‖².
	L2 Loss = iota
	// L1 is ‖(Qμ−y)/σ‖₁ (needs a fixed StepSize with MirrorDescent).
	L1
)

// EstimateOptions configures Estimate; the zero value means defaults.
type EstimateOptions struct {
	Iters    int     // iterations; default 1000
	Tol      float64 // stop when the relative loss decrease is below Tol; 0 = run all Iters
	Method   Method
	Loss     Loss
	StepSize float64 // initial/constant step; 0 = default
	// Total is the number of records; ≤ 0 means estimate it from the
	// measurements by inverse-variance weighting.
	Total float64
	// WarmStart, if non-nil, initialises the potentials from a previous model
	// (its cliques must be covered by the new junction tree).
	WarmStart *Model
	// ExtraCliques are added to the model structure even if not measured.
	ExtraCliques [][]int
}

// Estimate fits a graphical model to the measurements. It honours ctx
// cancellation between iterations.
func Estimate(ctx context.Context, dom *Domain, meas []Measurement, opts *EstimateOptions) (*Model, error) {
	return nil, errNotImplemented
}

// EstimateTotal estimates the record count from the measurements by
// inverse-variance weighting (at least 1).
func EstimateTotal(dom *Domain, meas []Measurement) float64 { panic(errNotImplemented) }

// ModelSize is the size in MB (Σ cells × 8 bytes / 2^20) of the junction tree
// that the given cliques induce. It is cheap enough to call for every
// candidate of every AIM round.
func ModelSize(dom *Domain, cliques [][]int) float64 { panic(errNotImplemented) }

// Model is a fitted graphical model over a junction tree.
type Model struct{}

// Domain of the model.
func (m *Model) Domain() *Domain { panic(errNotImplemented) }

// Cliques are the maximal cliques of the junction tree.
func (m *Model) Cliques() [][]int { panic(errNotImplemented) }

// Total is the number of records the model stands for.
func (m *Model) Total() float64 { panic(errNotImplemented) }

// Size is the model's size in MB.
func (m *Model) Size() float64 { panic(errNotImplemented) }

// Marginal returns the expected count marginal over attrs (sums to Total),
// by clique projection when attrs lies in one clique, by variable
// elimination otherwise.
func (m *Model) Marginal(attrs []int) []float64 { panic(errNotImplemented) }

// MarginalWhere is Marginal with evidence: weight[a][v] multiplies the
// probability of attribute a taking value v (e.g. a 0/1 indicator of a set
// of allowed values) before attributes outside attrs are summed out.
func (m *Model) MarginalWhere(attrs []int, weight map[int][]float64) []float64 {
	panic(errNotImplemented)
}

// Synthesize draws rows records by randomized rounding along the junction
// tree and returns them column-major. rng is post-processing randomness.
func (m *Model) Synthesize(rng *rand.Rand, rows int) ([][]uint16, error) {
	return nil, errNotImplemented
}

// MarshalBinary encodes the model in a versioned binary format.
func (m *Model) MarshalBinary() ([]byte, error) { return nil, errNotImplemented }

// UnmarshalModel decodes a model written by MarshalBinary.
func UnmarshalModel(b []byte) (*Model, error) { return nil, errNotImplemented }
