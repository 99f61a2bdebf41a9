// Package privbayes implements PrivBayes (Zhang, Cormode, Procopiuc,
// Srivastava, Xiao, TODS 2017) and PrivBayes+PGM (McKenna, Sheldon,
// Miklau, ICML 2019, Section 4): the same network structure and the same
// noisy marginals, turned into synthetic rows either by PrivBayes' own
// heuristic (truncate, normalise into conditional probability tables,
// sample the Bayesian network) or by Private-PGM estimation, whose model
// then answers queries exactly.
//
// # Structure (GreedyBayes)
//
// The first attribute is drawn uniformly (a data-independent choice). Each
// later step adds one attribute X with a parent set Π among the attributes
// already placed, |Π| = min(k, placed) (smaller only when no set of that
// size keeps the marginal over X ∪ Π within MAX_CELLS cells), chosen by
// the exponential mechanism with score
//
//	s(X, Π) = min(n, N̄) · I(X; Π)
//
// where I is the empirical mutual information (nats) and N̄ = MAX_ROWS a
// public bound. Under add/remove neighbours its sensitivity is at most
//
//	Δ = ln(N̄+1) + 1 + ln(max attribute size)
//
// (docs/pgm-dropin.md has the proof; the plain n·I of the paper has
// sensitivity ln(n+1)+1, which depends on the private n). Each of the d−1
// steps spends ε_s = sqrt(8·β·ρ/(d−1)) (ρ = ε²/8 each), β = STRUCTURE.
// A step with more than MAX_CANDIDATES candidate pairs scores a uniform
// random sample of that many (a data-independent choice). With CHORDAL = 1
// (the default) a parent set must lie inside {X_j} ∪ Π_j of one placed
// node j: the network's moral graph then stays chordal with exactly the
// measured sets as maximal cliques, so Private-PGM's junction tree is no
// larger than the measurements; unrestricted parents (CHORDAL = 0, the
// paper's PrivBayes) make it intractable on wide tables.
//
// # Measurements
//
// The marginals over X_i ∪ Π_i (those not contained in another) are
// measured with the Gaussian mechanism, (1−β)·ρ split equally: L2
// sensitivity 1 each, σ = sqrt(m/(2(1−β)ρ)) for m marginals.
//
// # Estimation
//
// privbayes: each measured table is truncated at 0, each attribute's
// conditional table P(X_i | Π_i) is read from its (projected) table
// (uniform where a parent configuration has no mass), and rows are sampled
// ancestrally. The output is RowsOnly: queries read the sampled rows, as
// in the paper's baseline. privbayes_pgm: Private-PGM on the same
// measurements with the L2 loss (LOSS = 2, the default) or L1 (LOSS = 1),
// SyntheticData.
//
// All data access goes through synth.Data.Marginals, so both run on
// federated tables.
package privbayes

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/noise"
	"github.com/dpsql/dpsql/synth/pgm"
)

// Defaults.
const (
	DefaultDegree        = 2
	DefaultMaxCells      = 1000
	DefaultStructure     = 0.5
	DefaultMaxCandidates = 1000
	DefaultMaxRows       = 1 << 32
	DefaultIters         = 1000
	// MaxModelSize bounds privbayes_pgm's junction tree, in MB.
	MaxModelSize = 1024
	// L1Step is the fixed mirror-descent step of the L1 loss, as a
	// multiple of the smallest σ (the L1 gradient has entries ±1/σ).
	L1Step = 0.01
)

func schema(pgmOpts bool) synth.Schema {
	s := synth.Schema{
		{Name: "DEGREE", Kind: synth.Int, Default: "2", Min: 0, Max: 8,
			Doc: "k, the number of parents of each attribute"},
		{Name: "MAX_CELLS", Kind: synth.Int, Default: "1000", Min: 1, Max: 1 << 24,
			Doc: "largest marginal over an attribute and its parents"},
		{Name: "STRUCTURE", Kind: synth.Float, Default: "0.5", Min: 0.01, Max: 0.99,
			Doc: "fraction β of ρ spent on the structure"},
		{Name: "MAX_CANDIDATES", Kind: synth.Int, Default: "1000", Min: 1, Max: 1e7,
			Doc: "candidate (attribute, parents) pairs scored per step, sampled uniformly beyond"},
		{Name: "MAX_ROWS", Kind: synth.Float, Default: "2^32", Min: 1, Max: 1 << 53,
			Doc: "public bound N̄ in the score min(n, N̄)·I(X; Π)"},
		{Name: "CHORDAL", Kind: synth.Int, Default: "1", Min: 0, Max: 1,
			Doc: "1: parents only from one earlier node's set, so the Private-PGM model is the measured sets; 0: any parents (the paper's PrivBayes)"},
	}
	if pgmOpts {
		s = append(s,
			synth.Param{Name: "ITERS", Kind: synth.Int, Default: "1000", Min: 1, Max: 1e6,
				Doc: "Private-PGM estimation iterations"},
			synth.Param{Name: "LOSS", Kind: synth.Int, Default: "2", Min: 1, Max: 2,
				Doc: "estimation loss: 2 = L2 (accelerated), 1 = L1 (mirror descent, fixed step)"})
	}
	return s
}

// Options configures both mechanisms; zero fields mean defaults.
type Options struct {
	Degree        int
	MaxCells      int
	Structure     float64
	MaxCandidates int
	MaxRows       float64
	Chordal       bool     // restrict parent sets (CHORDAL = 1)
	PGM           bool     // estimate with Private-PGM (privbayes_pgm)
	Iters         int      // PGM only
	Loss          pgm.Loss // PGM only
	degreeSet     bool
}

// Mechanism is PrivBayes.
type Mechanism struct{}

// PGM is PrivBayes+PGM.
type PGM struct{}

var (
	_ synth.Mechanism = Mechanism{}
	_ synth.Mechanism = PGM{}
)

// Name returns "privbayes".
func (Mechanism) Name() string { return "privbayes" }

// Summary describes PrivBayes in one line.
func (Mechanism) Summary() string {
	return "PrivBayes: Bayesian network chosen by the exponential mechanism on mutual information, noisy conditional tables, sampled rows"
}

// Output is RowsOnly.
func (Mechanism) Output() synth.Output { return synth.RowsOnly }

// Schema declares the options.
func (Mechanism) Schema() synth.Schema { return schema(false) }

// New parses opts.
func (Mechanism) New(opts []synth.Option) (synth.Runner, error) {
	return parse("privbayes", opts, false)
}

// Name returns "privbayes_pgm".
func (PGM) Name() string { return "privbayes_pgm" }

// Summary describes PrivBayes+PGM in one line.
func (PGM) Summary() string {
	return "PrivBayes+PGM: PrivBayes' structure and noisy marginals estimated with Private-PGM (L2 or L1); queries answered from the model"
}

// Output is SyntheticData.
func (PGM) Output() synth.Output { return synth.SyntheticData }

// Schema declares the options.
func (PGM) Schema() synth.Schema { return schema(true) }

// New parses opts.
func (PGM) New(opts []synth.Option) (synth.Runner, error) { return parse("privbayes_pgm", opts, true) }

func parse(name string, opts []synth.Option, withPGM bool) (*Options, error) {
	v, err := schema(withPGM).Parse(name, opts)
	if err != nil {
		return nil, err
	}
	_, degreeSet := v["DEGREE"]
	o := &Options{
		Degree:        v.Int("DEGREE", DefaultDegree),
		MaxCells:      v.Int("MAX_CELLS", DefaultMaxCells),
		Structure:     v.Float("STRUCTURE", DefaultStructure),
		MaxCandidates: v.Int("MAX_CANDIDATES", DefaultMaxCandidates),
		MaxRows:       v.Float("MAX_ROWS", DefaultMaxRows),
		Chordal:       v.Int("CHORDAL", 1) == 1,
		PGM:           withPGM,
		Iters:         v.Int("ITERS", DefaultIters),
		degreeSet:     degreeSet,
	}
	if v.Int("LOSS", 2) == 1 {
		o.Loss = pgm.L1
	}
	return o, nil
}

func (o *Options) name() string {
	if o.PGM {
		return "privbayes_pgm"
	}
	return "privbayes"
}

func (o *Options) defaults() Options {
	opt := *o
	if opt.Degree == 0 && !opt.degreeSet {
		opt.Degree = DefaultDegree
	}
	if opt.MaxCells <= 0 {
		opt.MaxCells = DefaultMaxCells
	}
	if !(opt.Structure > 0 && opt.Structure < 1) {
		opt.Structure = DefaultStructure
	}
	if opt.MaxCandidates <= 0 {
		opt.MaxCandidates = DefaultMaxCandidates
	}
	if !(opt.MaxRows >= 1) {
		opt.MaxRows = DefaultMaxRows
	}
	if opt.Iters <= 0 {
		opt.Iters = DefaultIters
	}
	return opt
}

// Sensitivity is Δ of the score min(n, N̄)·I(X; Π) for a domain whose
// largest attribute has maxSize values.
func Sensitivity(maxRows float64, maxSize int) float64 {
	return math.Log1p(maxRows) + 1 + math.Log(float64(max(maxSize, 1)))
}

// Budget returns the selection ε per structure step and the measurement σ
// for d attributes, m measured marginals, budget rho and fraction beta.
func Budget(rho, beta float64, d, m int) (eps, sigma float64) {
	if d > 1 {
		eps = math.Sqrt(8 * beta * rho / float64(d-1))
	} else {
		beta = 0
	}
	return eps, math.Sqrt(float64(m) / (2 * (1 - beta) * rho))
}

// Node is one attribute of the network with its parents (placed before it).
type Node struct {
	Attr    int
	Parents []int
}

// Run runs PrivBayes or PrivBayes+PGM.
func (o *Options) Run(ctx context.Context, in *synth.Input) (*synth.Result, error) {
	name := o.name()
	if _, err := in.Check(false); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	opt := o.defaults()
	dom := in.Data.Domain()
	d := dom.Len()
	maxSize := 0
	for a := range d {
		maxSize = max(maxSize, dom.Size(a))
		if dom.Size(a) > opt.MaxCells {
			return nil, fmt.Errorf("%s: %w: attribute %s has %d values, more than MAX_CELLS = %d", name, synth.ErrInvalidInput, dom.Name(a), dom.Size(a), opt.MaxCells)
		}
	}
	delta := Sensitivity(opt.MaxRows, maxSize)
	// With k = 0 the network is the independent model: no selection, the
	// whole budget measures the 1-way marginals.
	sel := d
	if opt.Degree == 0 {
		sel = 1
	}
	// The number of measured marginals is known only after the structure;
	// check the worst case (d) now, before any cancellation point.
	eps, sigmaMax := Budget(in.Rho, opt.Structure, sel, d)
	if sel > 1 {
		if err := noise.CheckExponential(eps, delta); err != nil {
			return nil, fmt.Errorf("%s: %w: %v (the budget is too small)", name, synth.ErrInvalidInput, err)
		}
	}
	_, sigmaMin := Budget(in.Rho, opt.Structure, sel, 1)
	if err := synth.CheckNoise([]float64{sigmaMin, sigmaMax}, nil); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	res := &synth.Result{}
	fail := func(err error) (*synth.Result, error) {
		res.Model, res.Rows = nil, nil
		return res, fmt.Errorf("%s: %w", name, err)
	}

	nodes, rhoSel, err := greedyBayes(ctx, in, opt, eps, delta)
	res.RhoUsed = rhoSel
	if err != nil {
		return fail(err)
	}
	// Measure the maximal sets among X_i ∪ Π_i.
	var sets [][]int
	for _, nd := range nodes {
		s := append(slices.Clone(nd.Parents), nd.Attr)
		slices.Sort(s)
		sets = append(sets, s)
	}
	measured := maximal(sets)
	if opt.PGM {
		// Unrestricted parents (CHORDAL = 0) can make the junction tree
		// intractable; refuse before the measurements are spent.
		if size := pgm.ModelSize(dom, measured); size > MaxModelSize {
			return fail(fmt.Errorf("the network's junction tree would need %.0f MB, more than %d MB: use CHORDAL = 1 or a smaller DEGREE", size, MaxModelSize))
		}
	}
	_, sigma := Budget(in.Rho, opt.Structure, sel, len(measured))
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	answers, err := in.Data.Marginals(ctx, measured)
	if err != nil {
		return fail(fmt.Errorf("measured marginals: %w", err))
	}
	meas := make([]pgm.Measurement, len(measured))
	for i, s := range measured {
		y := answers[i]
		in.Noise.AddDiscreteGaussian(y, sigma)
		meas[i] = pgm.Measurement{Attrs: s, Y: y, Sigma: sigma}
		res.Measurements = append(res.Measurements, synth.Measurement{Measurement: meas[i], Round: d})
		res.RhoUsed += 1 / (2 * sigma * sigma)
	}
	res.Note = fmt.Sprintf("%s network: %s", name, describe(dom, nodes))
	in.Report(synth.Status{Phase: "round", Round: d, RhoUsed: res.RhoUsed})

	if opt.PGM {
		eo := &pgm.EstimateOptions{Iters: opt.Iters, Progress: in.FinalProgress(d, res.RhoUsed)}
		if opt.Loss == pgm.L1 {
			eo.Loss, eo.Method, eo.StepSize = pgm.L1, pgm.MirrorDescent, L1Step*sigma
		} else {
			eo.Method = pgm.Accelerated
		}
		model, err := pgm.Estimate(ctx, dom, meas, eo)
		if err != nil {
			return fail(fmt.Errorf("estimation: %w", err))
		}
		in.Report(synth.Status{Phase: "final", Round: d, RhoUsed: res.RhoUsed, ModelSize: model.Size()})
		res.Model = model
		if res.Rows, err = synth.Sample(ctx, model, in); err != nil {
			return fail(err)
		}
		return res, nil
	}
	net, err := NewNetwork(dom, nodes, meas)
	if err != nil {
		return fail(err)
	}
	rows := in.Rows
	if rows == 0 {
		rows = clampRows(pgm.EstimateTotal(dom, meas))
	}
	in.Report(synth.Status{Phase: "sample", Round: d, RhoUsed: res.RhoUsed})
	if res.Rows, err = net.Sample(ctx, in, rows); err != nil {
		return fail(err)
	}
	return res, nil
}

// clampRows rounds a released total to a row count in [0, MaxRows].
func clampRows(total float64) int {
	total = math.Round(total)
	switch {
	case !(total > 0):
		return 0
	case total > synth.MaxRows:
		return synth.MaxRows
	}
	return int(total)
}

// maximal drops every sorted set contained in another (and duplicates).
func maximal(sets [][]int) [][]int {
	var out [][]int
	for i, s := range sets {
		covered := false
		for j, t := range sets {
			if i != j && (len(t) > len(s) || (len(t) == len(s) && j < i)) && subset(s, t) {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, s)
		}
	}
	return out
}

// subset reports whether sorted a ⊆ sorted b.
func subset(a, b []int) bool {
	j := 0
	for _, x := range a {
		for j < len(b) && b[j] < x {
			j++
		}
		if j == len(b) || b[j] != x {
			return false
		}
	}
	return true
}

// describe lists the network's first nodes ("b <- a; c <- a,b; …") for
// the ledger note.
func describe(dom *pgm.Domain, nodes []Node) string {
	const shown = 12
	s := ""
	for i, nd := range nodes {
		if i == shown {
			return s + fmt.Sprintf("; … (%d nodes)", len(nodes))
		}
		if i > 0 {
			s += "; "
		}
		s += dom.Name(nd.Attr)
		if len(nd.Parents) > 0 {
			s += " <- "
			for j, p := range nd.Parents {
				if j > 0 {
					s += ","
				}
				s += dom.Name(p)
			}
		}
	}
	return s
}
