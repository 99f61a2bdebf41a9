// Package hdmm implements workload-optimised Gaussian measurements in the
// manner of HDMM (McKenna, Miklau, Hay, Machanavajjhala, VLDB 2018) with two
// estimators, as compared in seed 001 (Section 4, Fig. 1): hdmm_pgm
// estimates a graphical model from the measurements with Private-PGM, and
// hdmm_lls is the local-least-squares baseline, which inverts each
// measurement on its own marginal.
//
// # Strategy
//
// Every workload entry (a marginal over C with, optionally, a Kronecker
// query set Q = ⊗ W_j on it: prefix ranges on binned attributes, WHERE
// conditions; synth.Marginal.Kron) is measured with its own Kronecker
// strategy A_C = ⊗ A_j, HDMM's OPT_⊗ form. Each A_j is chosen per attribute,
// exactly, from a small family: the identity, b-ary hierarchies of ranges
// (b = 2, 4, 8, 16) and W_j itself, minimising ‖A_j‖²_{1→2}·‖W_j A_j⁺‖²_F
// (the factor's part of the expected squared error; Kronecker products
// multiply both). For plain marginals this is the identity, which is what
// OPT_⊗ returns for a marginal. The noise scales are then allocated across
// the entries in closed form to minimise the expected weighted squared
// workload error Σ w_C²·σ_C²·‖W_C A_C⁺‖²_F under Σ ‖A_C‖²_{1→2}/(2σ_C²) = ρ
// (see Allocate). docs/pgm-dropin.md explains why this, rather than
// HDMM's gradient-based OPT_⊗/OPT_M or ResidualPlanner, was chosen: the
// strategies stay 0/1 (so the exact discrete Gaussian applies, which needs
// integer-valued queries) and range workloads are covered, at the cost of
// not sharing measurements between overlapping workload marginals.
//
// Each measurement is y_C = A_C·x_C + N_Z(0, σ_C²) with x_C the count
// marginal, read through synth.Data.Marginals (so federated tables work).
//
// # Estimators
//
// hdmm_pgm: Private-PGM on all y_C with their Kronecker query matrices
// (pgm.Measurement.Kron), loss L2 (LOSS = 2, default; accelerated proximal
// algorithm as in the paper) or L1 (LOSS = 1; mirror descent with a fixed
// step). Output SyntheticData: a model answering every query.
//
// hdmm_lls: x̂_C = A_C⁺·y_C, per workload marginal, independently: the
// least-squares estimate of that marginal alone (negative and mutually
// inconsistent entries allowed). Output AnswersOnly: one answer per
// workload marginal, from which the engine answers queries on that
// marginal (including its ranges).
//
// Both release, as Result.Measurements, the y_C themselves with their
// Kronecker strategies (pgm.Measurement.Kron) and exact σ_C, so that error
// bounds (synth/bounds) come from what was measured. LeastSquares turns
// them into hdmm_lls's answers x̂_C, which the engine stores and answers
// from.
package hdmm

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/pgm"
	"gonum.org/v1/gonum/mat"
)

// Defaults.
const (
	DefaultIters = 1000
	// DefaultMaxModelSize bounds the junction tree of hdmm_pgm, in MB.
	DefaultMaxModelSize = 1024
	// L1Step is the fixed mirror-descent step of the L1 loss, as a
	// multiple of the smallest σ.
	L1Step = 0.01
)

// Mechanism is HDMM+PGM.
type Mechanism struct{}

// LLS is HDMM with local least squares.
type LLS struct{}

var (
	_ synth.Mechanism = Mechanism{}
	_ synth.Mechanism = LLS{}
)

var pgmSchema = synth.Schema{
	{Name: "ITERS", Kind: synth.Int, Default: "1000", Min: 1, Max: 1e6,
		Doc: "Private-PGM estimation iterations"},
	{Name: "LOSS", Kind: synth.Int, Default: "2", Min: 1, Max: 2,
		Doc: "estimation loss: 2 = L2 (accelerated), 1 = L1 (mirror descent, fixed step)"},
	{Name: "MAX_MODEL_SIZE", Kind: synth.Float, Default: "1024", Min: 1e-6,
		Doc: "refuse a workload whose junction tree would exceed this many MB (checked before any measurement)"},
}

// Name returns "hdmm_pgm".
func (Mechanism) Name() string { return "hdmm_pgm" }

// Summary describes HDMM+PGM in one line.
func (Mechanism) Summary() string {
	return "HDMM+PGM: workload-optimised Kronecker Gaussian measurements (identity/hierarchical per attribute) estimated with Private-PGM"
}

// Output is SyntheticData.
func (Mechanism) Output() synth.Output { return synth.SyntheticData }

// Schema declares the options.
func (Mechanism) Schema() synth.Schema { return pgmSchema }

// New parses opts.
func (Mechanism) New(opts []synth.Option) (synth.Runner, error) {
	v, err := pgmSchema.Parse("hdmm_pgm", opts)
	if err != nil {
		return nil, err
	}
	o := &Options{PGM: true, Iters: v.Int("ITERS", DefaultIters), MaxModelSize: v.Float("MAX_MODEL_SIZE", DefaultMaxModelSize)}
	if v.Int("LOSS", 2) == 1 {
		o.Loss = pgm.L1
	}
	return o, nil
}

// Name returns "hdmm_lls".
func (LLS) Name() string { return "hdmm_lls" }

// Summary describes HDMM+LLS in one line.
func (LLS) Summary() string {
	return "HDMM+LLS: the same measurements, each inverted by least squares on its own marginal; answers only"
}

// Output is AnswersOnly.
func (LLS) Output() synth.Output { return synth.AnswersOnly }

// Schema is empty.
func (LLS) Schema() synth.Schema { return nil }

// New accepts no options.
func (LLS) New(opts []synth.Option) (synth.Runner, error) {
	if _, err := synth.Schema(nil).Parse("hdmm_lls", opts); err != nil {
		return nil, err
	}
	return &Options{}, nil
}

// Options configures a run.
type Options struct {
	PGM          bool
	Iters        int
	Loss         pgm.Loss
	MaxModelSize float64 // MB; 0 means DefaultMaxModelSize
}

// Plan is the strategy of one workload marginal.
type Plan struct {
	Attrs   []int
	Weight  float64
	Factors []Factor
	Sens2   float64 // ‖A_C‖²_{1→2} = ∏ Sens2_j
	Err     float64 // ‖W_C A_C⁺‖²_F = ∏ Err_j
	Sigma   float64
}

// Strategy chooses the measurements of workload w (canonical) on dom and
// allocates rho among them. Entries of weight 0 or with no query are left
// out.
func Strategy(dom *pgm.Domain, w []synth.Marginal, rho float64) []Plan {
	var plans []Plan
	for _, m := range w {
		if m.Weight <= 0 {
			continue
		}
		p := Plan{Attrs: m.Attrs, Weight: m.Weight, Sens2: 1, Err: 1}
		for j, a := range m.Attrs {
			var wf *mat.Dense
			if m.Kron != nil {
				wf = m.Kron[j]
			}
			f := Choose(wf, dom.Size(a))
			p.Factors = append(p.Factors, f)
			p.Sens2 *= f.Sens2
			p.Err *= f.Err
		}
		if p.Err > 0 {
			plans = append(plans, p)
		}
	}
	weights, sens, errs := make([]float64, len(plans)), make([]float64, len(plans)), make([]float64, len(plans))
	for i, p := range plans {
		weights[i], sens[i], errs[i] = p.Weight, p.Sens2, p.Err
	}
	for i, s := range Allocate(rho, weights, sens, errs) {
		plans[i].Sigma = s
	}
	return plans
}

// kron returns the strategy's factors (nil for identities) and whether
// all are identities.
func (p *Plan) kron() (factors []*mat.Dense, identity bool) {
	identity = true
	for _, f := range p.Factors {
		factors = append(factors, f.A)
		identity = identity && f.A == nil
	}
	return factors, identity
}

// cellSigma is the largest standard deviation of a cell of A⁺y: σ·√(max
// over cells of ∏ (A_j⁺A_j⁺ᵀ)_{vv}).
func (p *Plan) cellSigma() float64 {
	v := 1.0
	for _, f := range p.Factors {
		if f.Pinv == nil {
			continue
		}
		r, c := f.Pinv.Dims()
		m := 0.0
		for i := range r {
			s := 0.0
			for j := range c {
				s += f.Pinv.At(i, j) * f.Pinv.At(i, j)
			}
			m = max(m, s)
		}
		v *= m
	}
	return p.Sigma * math.Sqrt(v)
}

// Run measures the workload and estimates.
func (o *Options) Run(ctx context.Context, in *synth.Input) (*synth.Result, error) {
	name := "hdmm_lls"
	if o.PGM {
		name = "hdmm_pgm"
	}
	w, err := in.Check(true)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	dom := in.Data.Domain()
	plans := Strategy(dom, w, in.Rho)
	if len(plans) == 0 {
		return nil, fmt.Errorf("%s: %w: no workload entry with a positive weight and a query", name, synth.ErrInvalidInput)
	}
	sigmas := make([]float64, len(plans))
	sets := make([][]int, len(plans))
	for i, p := range plans {
		sigmas[i], sets[i] = p.Sigma, p.Attrs
	}
	if err := synth.CheckNoise(sigmas, nil); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if o.PGM {
		// The model's cliques follow from the (public) workload alone, so
		// an intractable one is refused before anything is measured.
		limit := o.MaxModelSize
		if limit <= 0 {
			limit = DefaultMaxModelSize
		}
		if size := pgm.ModelSize(dom, sets); size > limit {
			return nil, fmt.Errorf("%s: %w: the workload's marginals make a %.0f MB model, more than MAX_MODEL_SIZE = %v MB (use fewer or smaller overlapping marginals, or hdmm_lls)", name, synth.ErrInvalidInput, size, limit)
		}
	}
	res := &synth.Result{}
	fail := func(err error) (*synth.Result, error) {
		res.Model, res.Rows = nil, nil
		return res, fmt.Errorf("%s: %w", name, err)
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	answers, err := in.Data.Marginals(ctx, sets)
	if err != nil {
		return fail(fmt.Errorf("marginals: %w", err))
	}
	var meas []pgm.Measurement
	var kinds []string
	for i := range plans {
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		p := &plans[i]
		factors, identity := p.kron()
		y := answers[i]
		if !identity {
			y = pgm.KronMul(factors, sizesOf(dom, p.Attrs), y, false)
		}
		in.Noise.AddDiscreteGaussian(y, p.Sigma)
		res.RhoUsed += p.Sens2 / (2 * p.Sigma * p.Sigma)
		m := pgm.Measurement{Attrs: p.Attrs, Y: y, Sigma: p.Sigma}
		if !identity {
			m.Kron = factors
		}
		meas = append(meas, m)
		// What was measured: bounds and later answers are derived from y_C
		// itself, with its exact noise (hdmm_lls's answers by LeastSquares).
		res.Measurements = append(res.Measurements, synth.Measurement{Measurement: m})
		for j, f := range p.Factors {
			if f.A != nil {
				kinds = append(kinds, dom.Name(p.Attrs[j])+": "+f.Kind)
			}
		}
	}
	res.Note = fmt.Sprintf("%s: %d Kronecker measurements", name, len(plans))
	if len(kinds) > 0 {
		res.Note += "; non-identity factors: " + strings.Join(dedupe(kinds), ", ")
	}
	in.Report(synth.Status{Phase: "round", Round: 1, RhoUsed: res.RhoUsed})
	if !o.PGM {
		in.Report(synth.Status{Phase: "final", Round: 1, RhoUsed: res.RhoUsed})
		return res, nil
	}
	iters := o.Iters
	if iters <= 0 {
		iters = DefaultIters
	}
	eo := &pgm.EstimateOptions{Iters: iters, Method: pgm.Accelerated, Progress: in.FinalProgress(1, res.RhoUsed)}
	if o.Loss == pgm.L1 {
		smin := math.Inf(1)
		for _, p := range plans {
			smin = min(smin, p.Sigma)
		}
		eo.Loss, eo.Method, eo.StepSize = pgm.L1, pgm.MirrorDescent, L1Step*smin
	}
	model, err := pgm.Estimate(ctx, dom, meas, eo)
	if err != nil {
		return fail(fmt.Errorf("estimation: %w", err))
	}
	res.Model = model
	in.Report(synth.Status{Phase: "final", Round: 1, RhoUsed: res.RhoUsed, ModelSize: model.Size()})
	if res.Rows, err = synth.Sample(ctx, model, in); err != nil {
		return fail(err)
	}
	return res, nil
}

// LeastSquares returns ms with every Kronecker measurement replaced by its
// local least-squares marginal x̂ = A⁺y (hdmm_lls's answers), with, as σ,
// the largest standard deviation of a cell of x̂ (its cells are
// correlated; synth/bounds works from the Kronecker measurements instead).
// sizes are the attribute sizes of the domain. Other measurements are
// kept as they are, so releases of other mechanisms, and hdmm_lls releases
// from before the Kronecker measurements were stored, pass unchanged.
func LeastSquares(ms []synth.Measurement, sizes []int) ([]synth.Measurement, error) {
	out := make([]synth.Measurement, len(ms))
	for i, m := range ms {
		out[i] = m
		if m.Kron == nil {
			continue
		}
		if len(m.Kron) != len(m.Attrs) || m.Query != nil || m.Coarse != nil {
			return nil, fmt.Errorf("hdmm: measurement %d on %v: malformed Kronecker query", i, m.Attrs)
		}
		p := Plan{Attrs: m.Attrs, Sigma: m.Sigma}
		var pinvs []*mat.Dense
		rows, want := make([]int, len(m.Attrs)), 1
		for j, a := range m.Attrs {
			if a < 0 || a >= len(sizes) {
				return nil, fmt.Errorf("hdmm: measurement %d: attribute %d outside the domain", i, a)
			}
			f := Factor{A: m.Kron[j]}
			rows[j] = sizes[a]
			if f.A != nil {
				if _, c := f.A.Dims(); c != sizes[a] {
					return nil, fmt.Errorf("hdmm: measurement %d: factor %d has %d columns for %d values", i, j, c, sizes[a])
				}
				f.Pinv = Pinv(f.A)
				rows[j], _ = f.A.Dims()
			}
			want *= rows[j]
			pinvs = append(pinvs, f.Pinv)
			p.Factors = append(p.Factors, f)
		}
		if len(m.Y) != want {
			return nil, fmt.Errorf("hdmm: measurement %d on %v: %d values for %d queries", i, m.Attrs, len(m.Y), want)
		}
		out[i].Kron = nil
		out[i].Y = pgm.KronMul(pinvs, rows, m.Y, false)
		out[i].Sigma = p.cellSigma()
	}
	return out, nil
}

func dedupe(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

func sizesOf(dom *pgm.Domain, attrs []int) []int {
	s := make([]int, len(attrs))
	for i, a := range attrs {
		s[i] = dom.Size(a)
	}
	return s
}
