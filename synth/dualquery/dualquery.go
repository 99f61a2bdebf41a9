// Package dualquery implements DualQuery (Gaboardi, Gallego Arias, Hsu,
// Roth, Wu, ICML 2014; spec pep-gem-mwem-dualquery.md §9) and
// DualQuery+PGM (McKenna, Sheldon, Miklau 2019, App. C.3 / Alg. 5; spec
// private-pgm-and-hierarchical.md I.9).
//
// DualQuery plays the query-release game: the query player runs
// multiplicative weights over Q ∪ Q̄, the cells of the workload's marginals
// and their negations; each round it draws s queries from its distribution
// (the privacy mechanism), the data player best-responds with the record
// maximising the number of drawn queries it satisfies (package oracle),
// and every query's weight is multiplied by exp(η·(q(D) − q(x^t))). The
// release is the multiset of the T best responses.
//
// # Privacy
//
// The data are read once, through the marginal oracle (every workload
// marginal in one call): a fraction COUNT_FRACTION of ρ releases the
// record count n̂ (discrete Gaussian), which normalises the answers,
// q(D) = count/n̂. Drawing from Q^t is then an exponential mechanism with
// exponent u_q = ln w_q + η·Σ_{i<t}(q(D) − q(x^i)), whose sensitivity is
// η(t−1)/n̂ (one record moves each count by at most 1; q̄'s exponent is
// −u_q's up to the prior), so one draw of round t is ε_t = 2η(t−1)/n̂ pure
// DP and ε_t²/8 zCDP. Round 1 is data-independent. The total is
//
//	ρ = s·Σ_{t=1..T} ε_t²/8 = s·η²·(T−1)·T·(2T−1) / (12·n̂²)
//
// (each ε_t is inflated by a relative 1e-9 plus 1e-13 to cover the float
// rounding of exponents; see oracle.Sampler). Of (s, T, η) the user gives
// at most two and the third is derived from ρ as the paper derives its
// fourth parameter from ε: by default T is the largest number of rounds
// the budget affords. docs/dualquery.md compares this charge with the
// paper's pure-ε and advanced-composition bounds.
//
// The best-response oracle sees only the drawn queries, so its quality
// (exact branch and bound up to ORACLE_EXACT_LIMIT, greedy + local search
// beyond) changes accuracy, never privacy. Free attributes, which no
// drawn query touches, take uniformly random values (post-processing
// randomness, [004] Sec. 7's choice for dense data).
//
// # Output
//
// dualquery releases rows: the T records, each repeated ≈ n̂/T times (or
// ROWS/T) so that COUNT queries on the table have the data's scale.
// dualquery_pgm re-simulates the query player on the marginals of a
// graphical model and fits it to the drawn queries by maximum likelihood
// (EstimateCustom with the loss −Σ_t Σ_i log Q^t_μ(q_i^t), gradient by
// hand), and releases the model (COUNT queries are answered from it) with
// rows sampled from it.
package dualquery

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/internal/oracle"
)

// Defaults ([004] Sec. 7's Adult/KDD99 experiments: η = 2, s = 1000).
const (
	DefaultSamples       = 1000
	DefaultEta           = 2.0
	DefaultCountFraction = 0.05
	DefaultMaxRounds     = 2000
	DefaultPGMIters      = 100
	DefaultMaxModelSize  = 2
)

// Slack of the per-draw ε against float rounding of the exponents.
const (
	epsRelSlack = 1e-9
	epsAbsSlack = 1e-13
)

// Options configures DualQuery; zero fields mean defaults or derived.
type Options struct {
	Samples       int     // s
	Rounds        int     // T
	Eta           float64 // η
	CountFraction float64
	MaxRounds     int
	OracleLimit   float64
	PGMIters      int     // dualquery_pgm only
	MaxModelSize  float64 // dualquery_pgm only, MB
	PGM           bool    // estimate a model (dualquery_pgm)
}

func params(pgm bool) synth.Schema {
	s := synth.Schema{
		{Name: "SAMPLES", Kind: synth.Int, Default: "1000 (derived when ROUNDS and ETA are given)", Min: 1, Max: 1e6,
			Doc: "s: queries drawn from the query distribution per round"},
		{Name: "ROUNDS", Kind: synth.Int, Default: "derived from ρ", Min: 1, Max: 1e5,
			Doc: "T: rounds (best-response records); give at most two of SAMPLES, ROUNDS, ETA, the third is derived from ρ"},
		{Name: "ETA", Kind: synth.Float, Default: "2 (derived when SAMPLES and ROUNDS are given)", Min: 1e-6, Max: 100,
			Doc: "η: multiplicative-weights learning rate"},
		{Name: "COUNT_FRACTION", Kind: synth.Float, Default: "0.05", Min: 1e-4, Max: 0.5,
			Doc: "fraction of ρ spent on the noisy record count that normalises the answers"},
		{Name: "MAX_ROUNDS", Kind: synth.Int, Default: "2000", Min: 1, Max: 1e5,
			Doc: "cap on a derived T (run time is linear in T)"},
		{Name: "ORACLE_EXACT_LIMIT", Kind: synth.Float, Default: "1e6", Min: 1, Max: 1e18,
			Doc: "largest product of domain sizes searched exactly by the best-response oracle; beyond it greedy + local search"},
	}
	if pgm {
		s = append(s, synth.Param{Name: "PGM_ITERS", Kind: synth.Int, Default: "100", Min: 1, Max: 1e6,
			Doc: "mirror-descent iterations of the DualQuery-likelihood estimation"},
			synth.Param{Name: "MAX_MODEL_SIZE", Kind: synth.Float, Default: "2", Min: 1e-3,
				Doc: "junction-tree size limit in MB: beyond it the model covers the most drawn workload marginals that fit"})
	}
	return s
}

var (
	schema    = params(false)
	schemaPGM = params(true)
)

// Mechanism is DualQuery (USING dualquery).
type Mechanism struct{}

// PGM is DualQuery+PGM (USING dualquery_pgm).
type PGM struct{}

var (
	_ synth.Mechanism = Mechanism{}
	_ synth.Mechanism = PGM{}
)

// Name returns "dualquery".
func (Mechanism) Name() string { return "dualquery" }

// Summary describes DualQuery in one line.
func (Mechanism) Summary() string {
	return "DualQuery: multiplicative weights over workload cells and their negations, s sampled queries per round, best-response records as the synthetic table"
}

// Output is RowsOnly: the records are the release.
func (Mechanism) Output() synth.Output { return synth.RowsOnly }

// Schema declares the options.
func (Mechanism) Schema() synth.Schema { return schema }

// New parses opts.
func (Mechanism) New(opts []synth.Option) (synth.Runner, error) {
	return parse("dualquery", schema, opts, false)
}

// Name returns "dualquery_pgm".
func (PGM) Name() string { return "dualquery_pgm" }

// Summary describes DualQuery+PGM in one line.
func (PGM) Summary() string {
	return "DualQuery+PGM: the DualQuery run, then a Private-PGM model fitted to the likelihood of its sampled queries"
}

// Output is SyntheticData.
func (PGM) Output() synth.Output { return synth.SyntheticData }

// Schema declares the options.
func (PGM) Schema() synth.Schema { return schemaPGM }

// New parses opts.
func (PGM) New(opts []synth.Option) (synth.Runner, error) {
	return parse("dualquery_pgm", schemaPGM, opts, true)
}

func parse(name string, s synth.Schema, opts []synth.Option, pgm bool) (synth.Runner, error) {
	v, err := s.Parse(name, opts)
	if err != nil {
		return nil, err
	}
	_, hasS := v["SAMPLES"]
	_, hasT := v["ROUNDS"]
	_, hasE := v["ETA"]
	if hasS && hasT && hasE {
		return nil, &synth.OptionError{Mechanism: name, Name: "ETA", Value: v["ETA"], Err: synth.ErrInvalidOption,
			Reason: "give at most two of SAMPLES, ROUNDS and ETA: the third is derived from the budget"}
	}
	return &Options{
		Samples: v.Int("SAMPLES", 0), Rounds: v.Int("ROUNDS", 0), Eta: v.Float("ETA", 0),
		CountFraction: v.Float("COUNT_FRACTION", 0), MaxRounds: v.Int("MAX_ROUNDS", 0),
		OracleLimit: v.Float("ORACLE_EXACT_LIMIT", 0), PGMIters: v.Int("PGM_ITERS", 0),
		MaxModelSize: v.Float("MAX_MODEL_SIZE", 0), PGM: pgm,
	}, nil
}

// DrawEpsilon is the pure-DP ε of one draw in round t (1-based) with
// learning rate eta and normaliser nhat, with the rounding slack.
func DrawEpsilon(t int, eta, nhat float64) float64 {
	if t <= 1 {
		return 0
	}
	return 2*eta*float64(t-1)/nhat*(1+epsRelSlack) + epsAbsSlack
}

// Charge is the zCDP cost of T rounds of s draws: Σ_t s·ε_t²/8.
func Charge(s, T int, eta, nhat float64) float64 {
	var rho float64
	for t := 2; t <= T; t++ {
		e := DrawEpsilon(t, eta, nhat)
		rho += float64(s) * e * e / 8
	}
	return rho
}

// Derive fills in the parameters of o not given, for budget rho and
// normaliser nhat: T (default), s or η, as described on Options. It never
// returns parameters whose Charge exceeds rho.
func Derive(o Options, rho, nhat float64) (s, T int, eta float64) {
	s, T, eta = o.Samples, o.Rounds, o.Eta
	maxT := o.MaxRounds
	if maxT <= 0 {
		maxT = DefaultMaxRounds
	}
	switch {
	case T == 0:
		if s == 0 {
			s = DefaultSamples
		}
		if eta == 0 {
			eta = DefaultEta
		}
		T = 1
		var used float64
		for T < maxT {
			e := DrawEpsilon(T+1, eta, nhat)
			next := used + float64(s)*e*e/8
			if next > rho {
				break
			}
			used, T = next, T+1
		}
	case s == 0:
		if eta == 0 {
			eta = DefaultEta
		}
		per := Charge(1, T, eta, nhat)
		if per == 0 {
			s = DefaultSamples
			break
		}
		if f := math.Floor(rho / per); f >= 1 {
			s = int(min(f, 1e6))
			break
		}
		// Not even one draw per round at the default η: one draw, η
		// derived.
		s = 1
		eta = deriveEta(s, T, rho, nhat)
	default: // η derived from s and T
		eta = deriveEta(s, T, rho, nhat)
	}
	return s, T, eta
}

// deriveEta returns the largest η (up to rounding) with Charge ≤ rho.
func deriveEta(s, T int, rho, nhat float64) float64 {
	if T <= 1 {
		return DefaultEta
	}
	lo, hi := 0.0, 1.0
	for Charge(s, T, hi, nhat) <= rho && hi < 1e6 {
		lo, hi = hi, 2*hi
	}
	for range 200 {
		mid := (lo + hi) / 2
		if Charge(s, T, mid, nhat) <= rho {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// Run runs DualQuery (or DualQuery+PGM) on in.
func (o *Options) Run(ctx context.Context, in *synth.Input) (*synth.Result, error) {
	name := "dualquery"
	if o.PGM {
		name = "dualquery_pgm"
	}
	w, err := in.Check(true)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	frac := o.CountFraction
	if frac <= 0 {
		frac = DefaultCountFraction
	}
	rhoCount := frac * in.Rho
	sigma := math.Sqrt(1 / (2 * rhoCount))
	if err := synth.CheckNoise([]float64{sigma}, nil); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	for _, m := range w {
		if m.Weight > 0 && in.Data.Domain().Cells(m.Attrs) > 1<<26 {
			return nil, fmt.Errorf("%s: %w: the workload marginal on %v has %d cells; DualQuery keeps a weight per cell (at most 2^26 per marginal)",
				name, synth.ErrInvalidInput, m.Attrs, in.Data.Domain().Cells(m.Attrs))
		}
	}
	q := oracle.NewQueries(in.Data.Domain(), w)
	if q.Len() > 1<<27 {
		return nil, fmt.Errorf("%s: %w: the workload has %d cells; DualQuery keeps a weight per cell (at most 2^27)", name, synth.ErrInvalidInput, q.Len())
	}
	res := &synth.Result{}
	fail := func(err error) (*synth.Result, error) {
		res.Model, res.Rows = nil, nil
		return res, fmt.Errorf("%s: %w", name, err)
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}

	answers, n, err := q.Answers(ctx, in.Data)
	if err != nil {
		return fail(err)
	}
	meas, nhat := oracle.NoisyCount(in.Noise, n, sigma, in.Data.Domain().Size(0))
	res.Measurements = append(res.Measurements, meas)
	res.RhoUsed = 1 / (2 * sigma * sigma)
	s, T, eta := Derive(*o, in.Rho-res.RhoUsed, nhat)
	in.Report(synth.Status{Phase: "init", RhoUsed: res.RhoUsed})

	g, err := play(ctx, in, q, answers, nhat, s, T, eta, o.OracleLimit, res)
	if err != nil {
		return fail(err)
	}
	res.Note = fmt.Sprintf("dualquery: T=%d rounds, s=%d, eta=%.4g, n̂=%.0f", T, s, eta, nhat)
	if !o.PGM {
		res.Rows = oracle.Replicate(g.records, in.Data.Domain().Len(), oracle.Rows(in.Rows, nhat))
		in.Report(synth.Status{Phase: "final", Round: T, RhoUsed: res.RhoUsed})
		return res, nil
	}
	iters := o.PGMIters
	if iters <= 0 {
		iters = DefaultPGMIters
	}
	limit := o.MaxModelSize
	if limit <= 0 {
		limit = DefaultMaxModelSize
	}
	model, err := g.estimate(ctx, in, nhat, iters, limit, T, res.RhoUsed)
	if err != nil {
		return fail(fmt.Errorf("estimation: %w", err))
	}
	res.Model = model
	in.Report(synth.Status{Phase: "final", Round: T, RhoUsed: res.RhoUsed, ModelSize: model.Size()})
	if res.Rows, err = synth.Sample(ctx, model, in); err != nil {
		return fail(err)
	}
	return res, nil
}

// game is a played DualQuery run: everything the likelihood of its draws
// needs (all released or public).
type game struct {
	q       *oracle.Queries
	s, T    int
	eta     float64
	records [][]int   // x^1..x^T
	draws   [][]int32 // per round: drawn candidates, 2c (q) or 2c+1 (q̄)
}

// play runs the T rounds, charging res.RhoUsed per round.
func play(ctx context.Context, in *synth.Input, q *oracle.Queries, answers []float64, nhat float64, s, T int, eta, limit float64, res *synth.Result) (*game, error) {
	N := q.Len()
	d := len(q.Sizes)
	a := make([]float64, N)
	for c, v := range answers {
		a[c] = v / nhat
	}
	wmax := slices.Max(q.Weights)
	prior := make([]float64, len(q.Sets))
	for m, wt := range q.Weights {
		prior[m] = math.Log(wt / wmax)
	}
	cnt := make([]int32, N) // records so far in each cell
	u := make([]float64, 2*N)
	var sampler oracle.Sampler
	solver := oracle.NewSolver(q.Sizes, oracle.Options{ExactLimit: limit})
	post := in.Post()
	g := &game{q: q, s: s, T: T, eta: eta}
	weight := map[int32]float64{}
	var keys []int32
	var problem oracle.Problem
	problem.Sizes = q.Sizes
	for t := 1; t <= T; t++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		tf := float64(t - 1)
		for m := range q.Sets {
			pm := prior[m]
			for c := q.Off[m]; c < q.Off[m+1]; c++ {
				v := eta * (tf*a[c] - float64(cnt[c]))
				u[2*c], u[2*c+1] = pm+v, pm-v
			}
		}
		if err := sampler.Reset(u); err != nil {
			return nil, fmt.Errorf("round %d: %w", t, err)
		}
		drawn := make([]int32, s)
		clear(weight)
		for i := range drawn {
			k := int32(sampler.Draw(in.Noise))
			drawn[i] = k
			// q scores 1[x ∈ c]; q̄ scores 1 − 1[x ∈ c], i.e. −1[x ∈ c] up
			// to a constant.
			if k&1 == 0 {
				weight[k>>1]++
			} else {
				weight[k>>1]--
			}
		}
		e := DrawEpsilon(t, eta, nhat)
		res.RhoUsed += float64(s) * e * e / 8
		g.draws = append(g.draws, drawn)

		// Best response, over the merged drawn queries in a fixed order.
		problem.Terms, keys = q.AppendTerms(problem.Terms[:0], weight, keys)
		x := make([]int, d)
		for j := range x {
			x[j] = post.IntN(q.Sizes[j]) // free attributes
		}
		solver.Solve(&problem, x, post)
		g.records = append(g.records, x)
		for m := range q.Sets {
			cnt[q.Cell(m, x)]++
		}
		in.Report(synth.Status{Phase: "round", Round: t, RhoUsed: res.RhoUsed})
	}
	return g, nil
}
