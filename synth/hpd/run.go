package hpd

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/noise"
)

// Method is one hierarchical synthesizer: hpd_fixed, hpd_gen or mwem.
type Method struct{ name, summary string }

// The methods.
var (
	HPDFixed = Method{"hpd_fixed", "HPD-Fixed: mixture of product distributions over households, fitted by Adam in the adaptive-measurements loop (Liu & Wu 2022)"}
	HPDGen   = Method{"hpd_gen", "HPD-Gen: the HPD produced by a neural generator from Gaussian noise (GEM-style)"}
	MWEM     = Method{"mwem", "MWEM on an explicit histogram over every possible household (small domains only)"}
)

// Methods lists the hierarchical methods.
func Methods() []Method { return []Method{HPDFixed, HPDGen, MWEM} }

// Lookup returns the method called name (case-insensitive).
func Lookup(name string) (Method, error) {
	for _, m := range Methods() {
		if strings.EqualFold(strings.TrimSpace(name), m.name) {
			return m, nil
		}
	}
	return Method{}, fmt.Errorf("hpd: unknown hierarchical mechanism %q (valid: hpd_fixed, hpd_gen, mwem)", name)
}

// Name is the SQL name.
func (m Method) Name() string { return m.name }

// Summary is a one-line description.
func (m Method) Summary() string { return m.summary }

// Schema declares the options.
func (m Method) Schema() synth.Schema {
	s := synth.Schema{
		{Name: "ROUNDS", Kind: synth.Int, Default: "0", Min: 0, Max: 10000, Doc: "adaptive rounds T (one query set, or query, selected and measured per round); 0: from the budget, T = 10 + 120·√ρ within [10, 50] (50 with MARGINALS = 0)"},
		{Name: "ALPHA", Kind: synth.Float, Default: "0.2", Min: 0.01, Max: 0.99, Doc: "share of each round's ε0 spent on selection"},
		{Name: "MARGINALS", Kind: synth.Int, Default: "1", Min: 0, Max: 1, Doc: "1: each round selects and measures a whole query set (all its cells); 0: a single query, as in the paper"},
	}
	switch m.name {
	case "mwem":
		s = append(s, synth.Param{Name: "PASSES", Kind: synth.Int, Default: "10", Min: 1, Max: 1000, Doc: "multiplicative-weights passes over all measurements per round"})
	default:
		s = append(s,
			synth.Param{Name: "COMPONENTS", Kind: synth.Int, Default: "100", Min: 1, Max: 100000, Doc: "mixture components M"},
			m.itersParam(),
			synth.Param{Name: "LR", Kind: synth.Float, Default: strconv.FormatFloat(m.defaultLR(), 'g', -1, 64), Min: 1e-6, Max: 10, Doc: "Adam learning rate"})
		if m.name == "hpd_gen" {
			s = append(s, synth.Param{Name: "HIDDEN", Kind: synth.Int, Default: "64", Min: 1, Max: 4096, Doc: "hidden units of the generator"})
		}
	}
	return s
}

// defaultIters is ITERS' default: 25 Adam steps per round for hpd_fixed;
// 0 (from the rounds) for hpd_gen.
func (m Method) defaultIters() int {
	if m.name == "hpd_gen" {
		return 0
	}
	return 25
}

func (m Method) itersParam() synth.Param {
	p := synth.Param{Name: "ITERS", Kind: synth.Int, Default: strconv.Itoa(m.defaultIters()), Min: 1, Max: 100000, Doc: "Adam steps per round S"}
	if m.name == "hpd_gen" {
		p.Min, p.Doc = 0, "Adam steps per round S; 0: at least 25 and 1250 in all (⌈1250/T⌉)"
	}
	return p
}

// itersFor is the number of Adam steps per round when the run has T
// rounds: ITERS if given, else (hpd_gen) max(25, ⌈1250/T⌉): the shared
// generator, at a small learning rate, needs about 1250 steps in all
// whatever the number of rounds, while the fixed table's fit (per-
// component logits) is as good with 25 per round.
func (r *Runner) itersFor(T int) int {
	if r.iters > 0 {
		return r.iters
	}
	return max(25, (1250+T-1)/max(T, 1))
}

func (m Method) defaultLR() float64 {
	if m.name == "hpd_gen" {
		return 0.01 // the generator's weights are shared by all components
	}
	return 0.05
}

// Runner is a method with its options fixed.
type Runner struct {
	m                    Method
	rounds, comps, iters int
	passes, hidden       int
	alpha, lr            float64
	marginals            bool
}

// New validates opts.
func (m Method) New(opts []synth.Option) (*Runner, error) {
	v, err := m.Schema().Parse(m.name, opts)
	if err != nil {
		return nil, err
	}
	return &Runner{m: m, rounds: v.Int("ROUNDS", 0), alpha: v.Float("ALPHA", 0.2), comps: v.Int("COMPONENTS", 100),
		iters: v.Int("ITERS", m.defaultIters()), lr: v.Float("LR", m.defaultLR()), passes: v.Int("PASSES", 10), hidden: v.Int("HIDDEN", 64), marginals: v.Int("MARGINALS", 1) == 1}, nil
}

// Input is everything a run needs.
type Input struct {
	Domain *Domain
	// Data is the private data, read only through Source.
	Data Source
	// Workload is the query workload; nil means AllKWay(Domain, 3).
	Workload []QuerySet
	// Rho is the zCDP budget (positive).
	Rho float64
	// Noise is the fresh source of all privacy noise.
	Noise *noise.Source
	// PostNoise, if set, drives post-processing (sampling); nil means Noise.
	PostNoise *noise.Source
	// Households is the number of synthetic households; 0 means the noisy
	// household count.
	Households int
	// Progress, if set, gets a status per round.
	Progress func(synth.Status)
}

// setSensitivity returns the L1 and L2 sensitivities of the vector of
// counts of q's candidate cells (those satisfying Where: the only ones
// measured) when one household (at most K persons) is added or removed.
// free(A) is the number of distinct values of attributes A among the
// candidate cells (an attribute fixed by Where has one).
//
//	Q_G: the household adds 1 to each distinct person-value cell it holds:
//	     k = min(K, free(I)) (1 without I): L1 = k, L2 = √k;
//	Q_I: each of ≤ K persons adds 1 to one cell: L1 = L2 = K;
//	Q_R: each of n qualifying persons adds 1 to ≤ r distinct relative cells:
//	     married-to n = 2, r = 1; has-child n = 2, r = min(K−2, free(I2));
//	     has-parent n = K−2, r = min(2, free(I2)): L1 = n·r, L2 = n·√r.
//	     A Where on the person's relationship leaves one qualifying head or
//	     spouse (n = 1: married-to, has-child); one on the relative's
//	     relationship leaves a child one head or one spouse (r = 1:
//	     has-parent).
func setSensitivity(d *Domain, q *QuerySet) (l1, l2 float64) {
	K := d.K
	pinned := func(attr int, group, relative bool) (int, bool) {
		for _, w := range q.Where {
			if w.Attr == attr && w.Group == group && w.Relative == relative {
				return w.Value, true
			}
		}
		return 0, false
	}
	free := func(attrs []int, relative bool) int {
		n := 1
		for _, b := range attrs {
			if _, ok := pinned(b, false, relative); !ok {
				n *= d.Indiv[b]
			}
		}
		return n
	}
	switch q.Kind {
	case GroupLevel:
		k := 1
		if len(q.I) > 0 {
			k = min(K, free(q.I, false))
		}
		return float64(k), math.Sqrt(float64(k))
	case IndivLevel:
		return float64(K), float64(K)
	}
	n2 := free(q.I2, true)
	_, personPinned := pinned(d.Rel, false, false)
	personPinned = personPinned && slices.Contains(q.I, d.Rel)
	relCode, relPinned := pinned(d.Rel, false, true)
	relPinned = relPinned && slices.Contains(q.I2, d.Rel)
	var n, r int
	switch q.Rel {
	case MarriedTo:
		n, r = 2, 1
		if personPinned {
			n = 1
		}
	case HasChild:
		n, r = 2, min(K-2, n2)
		if personPinned {
			n = 1
		}
	default:
		n, r = K-2, min(2, n2)
		if relPinned && relCode != d.RelCodes[Child] {
			r = 1
		}
	}
	n, r = max(n, 1), max(r, 1)
	return float64(n * r), float64(n) * math.Sqrt(float64(r))
}

// Sensitivity returns the L1 and L2 sensitivities with which q's set is
// measured (see setSensitivity).
func (q *QuerySet) Sensitivity(d *Domain) (l1, l2 float64) { return setSensitivity(d, q) }

// Queries returns the number of q's queries: its cells that satisfy Where.
func (q *QuerySet) Queries(d *Domain) int {
	nG, nI := q.cells(d)
	if len(q.Where) == 0 {
		return nG * nI
	}
	vG, vI := make([]int, len(d.Group)), make([]int, 2*len(d.Indiv))
	n := 0
	for c := range nG * nI {
		if q.matches(d, c, vG, vI) {
			n++
		}
	}
	return n
}

// Rounds is the number of adaptive rounds a run at budget ρ plans (fewer if
// the workload has fewer sets or queries).
func (r *Runner) Rounds(rho float64) int { return r.roundsFor(rho) }

// DefaultWorkload is all 3-way Q_G and Q_I query sets, plus, for typed
// households, AllRelations.
func DefaultWorkload(d *Domain) []QuerySet {
	w := AllKWay(d, 3)
	if d.Typed {
		w = append(w, AllRelations(d)...)
	}
	return w
}

// Result is a release.
type Result struct {
	// Households are the synthetic households (household i gets key i+1,
	// its persons consecutive keys): every person in exactly one household,
	// sizes 1..K drawn from the model.
	Households *Records
	// NoisyHouseholds is the released household count.
	NoisyHouseholds float64
	// Measurements are the released noisy answers, in round order.
	Measurements []Measurement
	// RhoUsed is the zCDP budget spent (≤ Input.Rho).
	RhoUsed float64
}

// Measurement is one released noisy count.
type Measurement struct {
	Round int
	Set   int // index into the workload
	Cell  int
	Count float64 // noisy count (households or persons)
	Sigma float64
}

// plan is the privacy plan of a run.
type plan struct {
	rho0, sigma0, rhoRound, eps0, emEps float64
	sigmaG, sigmaI                      float64
}

func (r *Runner) plan(rho float64, K int) (plan, error) { return r.planT(rho, K, r.roundsFor(rho)) }

// roundsFor is the number of rounds T at budget ρ: ROUNDS if given, else
// 10 + 120·√ρ within [10, 50] (public: ρ only). Each round's measurements
// get ρ/T, so few rounds at small ρ keep the noise of each measured set
// below its signal, and more rounds at large ρ measure more sets; the
// constants come from runs on generated households (docs/households.md):
// the best T was about 10 at ε = 0.1, 20 at ε = 0.5 and 1, 35 at ε = 2.
func (r *Runner) roundsFor(rho float64) int {
	if r.rounds > 0 {
		return r.rounds
	}
	if !r.marginals {
		return 50 // the paper's single query per round: the rule was fitted to whole sets
	}
	return int(math.Min(50, math.Max(10, math.Round(10+120*math.Sqrt(rho)))))
}

// planT is the plan for T rounds.
func (r *Runner) planT(rho float64, K, T int) (plan, error) {
	if !(rho > 0) || math.IsInf(rho, 1) {
		return plan{}, fmt.Errorf("hpd: budget ρ = %g must be positive and finite", rho)
	}
	var p plan
	p.rho0 = 0.02 * rho
	p.sigma0 = 1 / math.Sqrt(2*p.rho0)
	p.rhoRound = (rho - p.rho0) / float64(T)
	a := r.alpha
	p.eps0 = math.Sqrt(2 * p.rhoRound / (a*a + (1-a)*(1-a)))
	// noise.Exponential at ε costs ε²/8: ε = 2αε0 costs (αε0)²/2.
	p.emEps = 2 * a * p.eps0
	p.sigmaG = 1 / ((1 - a) * p.eps0)
	p.sigmaI = float64(K) / ((1 - a) * p.eps0)
	for _, s := range []float64{p.sigma0, p.sigmaG, p.sigmaI, p.sigmaG * float64(K*K)} {
		if err := noise.CheckSigma(s); err != nil {
			return plan{}, fmt.Errorf("hpd: %w", err)
		}
	}
	if err := noise.CheckExponential(p.emEps, 1); err != nil {
		return plan{}, fmt.Errorf("hpd: %w", err)
	}
	if err := noise.CheckExponential(p.emEps, float64(K)); err != nil {
		return plan{}, fmt.Errorf("hpd: %w", err)
	}
	return p, nil
}

// spent is the exact ρ of the plan: ρ0 plus T rounds of selection and
// measurement.
func (p plan) spent(T, K int) float64 {
	sel := p.emEps * p.emEps / 8
	meas := 1 / (2 * p.sigmaG * p.sigmaG) // = K²/(2σ_I²)
	return 1/(2*p.sigma0*p.sigma0) + float64(T)*(sel+meas)
}

// Check validates in (domain, workload, budget, and for mwem the universe
// size) without reading data: the engine calls it before charging.
func (r *Runner) Check(in *Input) error {
	if in.Domain == nil || in.Data == nil {
		return fmt.Errorf("hpd: no domain or data")
	}
	if err := in.Domain.Check(); err != nil {
		return err
	}
	for i := range in.Workload {
		if err := in.Workload[i].Validate(in.Domain); err != nil {
			return err
		}
	}
	if in.Households < 0 {
		return fmt.Errorf("hpd: %d households requested", in.Households)
	}
	if r.m.name == "mwem" {
		if in.Domain.Typed {
			return fmt.Errorf("hpd: mwem's explicit universe does not model typed households: use hpd_fixed or hpd_gen")
		}
		if _, err := universeSize(in.Domain); err != nil {
			return err
		}
	}
	_, err := r.plan(in.Rho, in.Domain.K)
	return err
}

// Run synthesizes households.
func (r *Runner) Run(ctx context.Context, in *Input) (*Result, error) {
	if err := r.Check(in); err != nil {
		return nil, err
	}
	if in.Noise == nil {
		return nil, fmt.Errorf("hpd: no noise source")
	}
	d := in.Domain
	K := d.K
	pl, _ := r.plan(in.Rho, K)
	post := in.Noise.Rand()
	if in.PostNoise != nil {
		post = in.PostNoise.Rand()
	}
	report := func(s synth.Status) {
		if in.Progress != nil {
			in.Progress(s)
		}
	}
	report(synth.Status{Phase: "init"})
	recs, err := in.Data.Households(ctx)
	if err != nil {
		return nil, fmt.Errorf("hpd: reading households: %w", err)
	}
	if err := recs.Check(d); err != nil {
		return nil, err
	}
	work := in.Workload
	if work == nil {
		work = DefaultWorkload(d)
	}
	// Exact answers and the candidate queries (cells satisfying Where).
	type cand struct{ set, cell int }
	truth := make([][]float64, len(work))
	var cands []cand
	setCells := make([][]int, len(work)) // candidate cells of each set
	vG, vI := make([]int, len(d.Group)), make([]int, 2*len(d.Indiv))
	for s := range work {
		truth[s] = Answers(d, recs, &work[s])
		for c := range truth[s] {
			if len(work[s].Where) == 0 || work[s].matches(d, c, vG, vI) {
				cands = append(cands, cand{s, c})
				setCells[s] = append(setCells[s], c)
			}
		}
		if s%16 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
	}
	if len(cands) == 0 {
		return nil, fmt.Errorf("hpd: the workload has no query")
	}

	res := &Result{}
	// ρ0: the number of households.
	ng := float64(recs.Households()) + float64(in.Noise.DiscreteGaussian(pl.sigma0))
	ng = max(ng, 1)
	res.NoisyHouseholds = ng
	rhoUsed := 1 / (2 * pl.sigma0 * pl.sigma0)

	chosen := make([]bool, len(cands))
	scores := make([]float64, len(cands))
	model := make([][]float64, len(work))
	var ms []measured
	// T is capped by the number of candidates (public: it depends on the
	// domain and workload only), and ρ split over the rounds that run.
	T := r.roundsFor(in.Rho)
	rounds := min(T, len(cands))
	var chosenSet []bool
	if r.marginals {
		chosenSet = make([]bool, len(work))
		scores = make([]float64, len(work))
		n := 0
		for s := range work {
			if len(setCells[s]) > 0 {
				n++
			}
		}
		rounds = min(T, n)
	}
	if rounds < T {
		if pl, err = r.planT(in.Rho, K, rounds); err != nil {
			return nil, err
		}
	}
	var est estimator
	switch r.m.name {
	case "hpd_fixed":
		est = newFixed(d, r.comps, r.iters, r.lr, post)
	case "hpd_gen":
		est = newGen(d, r.comps, r.itersFor(rounds), r.hidden, r.lr, post)
	default:
		est, err = newExplicit(d, r.passes)
		if err != nil {
			return nil, err
		}
	}
	for t := 1; t <= rounds; t++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if t <= rounds && r.marginals {
			// Whole query sets: score = (L1 error − expected L1 noise) in
			// units of the set's L1 sensitivity (so the exponential
			// mechanism's sensitivity is 1); measure every candidate cell
			// with σ = Δ₂·σ_base.
			c := math.Min(math.Max(est.expectedSize(), 1), float64(K))
			for s := range work {
				if chosenSet[s] || len(setCells[s]) == 0 {
					scores[s] = math.Inf(-1)
					continue
				}
				m := est.answers(&work[s])
				l1 := 0.0
				for _, cell := range setCells[s] {
					l1 += math.Abs(m[cell]*ng - truth[s][cell])
				}
				s1, s2 := setSensitivity(d, &work[s])
				sigma := s2 * pl.sigmaG
				scores[s] = (l1 - math.Sqrt(2/math.Pi)*sigma*float64(len(setCells[s]))) / s1
			}
			s := in.Noise.Exponential(scores, pl.emEps, 1)
			chosenSet[s] = true
			set := &work[s]
			_, s2 := setSensitivity(d, set)
			sigma, bound := s2*pl.sigmaG, 1.0
			if set.Kind != GroupLevel {
				bound = float64(K)
			}
			for _, cell := range setCells[s] {
				y := truth[s][cell] + float64(in.Noise.DiscreteGaussian(sigma))
				res.Measurements = append(res.Measurements, Measurement{Round: t, Set: s, Cell: cell, Count: y, Sigma: sigma})
				mq := set.query(d)
				mq.bound = bound
				set.decodeQuery(d, cell, &mq)
				if set.Kind != GroupLevel {
					mq.scale = c
				}
				ms = append(ms, measured{q: mq, a: math.Min(math.Max(y/ng, 0), bound)})
			}
			if err := est.fit(ctx, ms); err != nil {
				return nil, err
			}
		} else if t <= rounds {
			c := math.Min(math.Max(est.expectedSize(), 1), float64(K))
			for s := range work {
				model[s] = est.answers(&work[s])
			}
			// Scores in persons: Q_G errors (households) times the expected
			// household size c ≤ K, Q_I errors as they are; one household
			// moves any score by at most K.
			for i, q := range cands {
				if chosen[i] {
					scores[i] = math.Inf(-1)
					continue
				}
				e := math.Abs(model[q.set][q.cell]*ng - truth[q.set][q.cell])
				if work[q.set].Kind == GroupLevel {
					e *= c
				}
				scores[i] = e
			}
			i := in.Noise.Exponential(scores, pl.emEps, float64(K))
			chosen[i] = true
			q := cands[i]
			set := &work[q.set]
			// Q_I and Q_R count persons: up to K per household.
			sigma, bound := pl.sigmaG, 1.0
			if set.Kind != GroupLevel {
				sigma, bound = pl.sigmaI, float64(K)
			}
			y := truth[q.set][q.cell] + float64(in.Noise.DiscreteGaussian(sigma))
			res.Measurements = append(res.Measurements, Measurement{Round: t, Set: q.set, Cell: q.cell, Count: y, Sigma: sigma})
			mq := set.query(d)
			mq.bound = bound
			set.decodeQuery(d, q.cell, &mq)
			if set.Kind != GroupLevel {
				mq.scale = c
			}
			ms = append(ms, measured{q: mq, a: math.Min(math.Max(y/ng, 0), bound)})
			if err := est.fit(ctx, ms); err != nil {
				return nil, err
			}
		}
		rhoUsed += pl.emEps*pl.emEps/8 + 1/(2*pl.sigmaG*pl.sigmaG)
		report(synth.Status{Phase: "round", Round: t, RhoUsed: rhoUsed})
	}
	n := in.Households
	if n == 0 {
		n = int(math.Round(ng))
	}
	report(synth.Status{Phase: "sample", Round: rounds, RhoUsed: rhoUsed})
	res.Households = est.sample(n, post)
	res.RhoUsed = rhoUsed
	if rhoUsed > in.Rho*(1+1e-9) {
		return nil, fmt.Errorf("hpd: internal error: spent ρ = %g above the budget %g", rhoUsed, in.Rho)
	}
	res.RhoUsed = math.Min(rhoUsed, in.Rho)
	return res, nil
}
