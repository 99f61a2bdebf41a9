package pep

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"

	"gonum.org/v1/gonum/mat"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/internal/adaptive"
	"github.com/dpsql/dpsql/synth/noise"
	"github.com/dpsql/dpsql/synth/pgm"
)

// algo is the update rule of the adaptive-measurements loop.
type algo int

const (
	algoPEP  algo = iota // max-entropy projection onto every measurement (Alg. 4)
	algoMWEM             // one multiplicative-weights step (plus past queries)
)

// config is one mechanism's options, validated by New.
type config struct {
	name    string
	algo    algo
	public  bool
	rounds  int
	alpha   float64 // fraction of each round's ε0 spent on selection
	iters   int     // PEP projection iterations per round (T_max)
	tol     float64 // PEP tolerance γ on normalised answers
	past    bool    // MWEM: replay past queries
	cells   bool    // select and measure single cells, not whole marginals
	dense   bool
	maxSize float64 // MB, model engine only
}

// maxCellCandidates bounds the cells single-cell selection chooses among:
// on full adult's ~3·10^7 3-way cells one exact exponential-mechanism draw
// took minutes (see docs/iterative.md).
const maxCellCandidates = 1 << 22

// totalShare is the fraction of ρ spent on the noisy record count N̂ that
// turns count marginals into the normalised answers the paper's algorithms
// use (the paper takes n as public; dpsql does not).
const totalShare = 0.01

// Budget returns the per-round parameters for budget rho over T rounds with
// selection fraction alpha: the noisy total's σ0, the exponential
// mechanism's ε (2·α·ε0, sensitivity 1 on counts) and the measurement σ
// (1/((1−α)·ε0), ℓ2 sensitivity 1 under add/remove), where ε0 =
// sqrt(2ρ'/(T·(α²+(1−α)²))) and ρ' = (1 − totalShare)·ρ ([000] Alg. 1).
// The total costs 1/(2σ0²) and each round ε²/8 + 1/(2σ²); they sum to rho.
func Budget(rho float64, T int, alpha float64) (sigma0, eps, sigma float64) {
	rest := (1 - totalShare) * rho
	eps0 := math.Sqrt(2 * rest / (float64(T) * (alpha*alpha + (1-alpha)*(1-alpha))))
	return math.Sqrt(1 / (2 * totalShare * rho)), 2 * alpha * eps0, 1 / ((1 - alpha) * eps0)
}

// query is one measured marginal cell: θ index, cell, noisy count.
type query struct {
	set, cell int
	y         float64
}

// run is the state of one run.
type run struct {
	cfg    *config
	in     *synth.Input
	dom    *pgm.Domain
	fam    family
	qs     []query
	groups []group // one per measurement
	sets   [][]int // measured sets by family index

	// Noisy-total bookkeeping (inverse-variance weights).
	totW, totWY float64
	total       float64
}

func (r *run) addTotal(y, variance float64) {
	r.totW += 1 / variance
	r.totWY += y / variance
	r.total = max(r.totWY/r.totW, 1)
}

// target is query j's normalised noisy answer, clipped to [0, 1] ([code]).
func (r *run) target(j int) float64 { return min(max(r.qs[j].y/r.total, 0), 1) }

// Run implements synth.Runner.
func (c *config) Run(ctx context.Context, in *synth.Input) (*synth.Result, error) {
	res, err := c.run(ctx, in)
	if err != nil {
		return res, fmt.Errorf("%s: %w", c.name, err)
	}
	return res, nil
}

func (c *config) run(ctx context.Context, in *synth.Input) (*synth.Result, error) {
	w, err := in.Check(true)
	if err != nil {
		return nil, err
	}
	dom := in.Data.Domain()
	sets := make([][]int, len(w))
	maxW := 0.0
	ncand := 0
	for i, m := range w {
		sets[i] = m.Attrs
		maxW = max(maxW, m.Weight)
		if m.Weight > 0 {
			if c.cells {
				ncand += dom.Cells(m.Attrs)
			} else {
				ncand++
			}
		}
	}
	if c.cells && ncand > maxCellCandidates {
		return nil, fmt.Errorf("%w: CELLS = 1 selects among the %d cells of the workload every round, more than %d: the exact exponential mechanism needs about one draw per candidate and cannot be interrupted inside one; use CELLS = 0 (whole marginals) or a smaller workload",
			synth.ErrInvalidInput, ncand, maxCellCandidates)
	}
	// Already-measured candidates are excluded from selection ([code]), so
	// at most ncand rounds can run; the budget is split over those.
	T := min(c.rounds, ncand)
	sigma0, eps, sigma := Budget(in.Rho, T, c.alpha)
	if err := synth.CheckNoise([]float64{sigma0, sigma}, nil); err != nil {
		return nil, err
	}
	if err := noise.CheckExponential(eps, maxW); err != nil {
		return nil, fmt.Errorf("%w: %v (the budget is too small for this many rounds)", synth.ErrInvalidInput, err)
	}
	r := &run{cfg: c, in: in, dom: dom}
	var sup *support
	switch {
	case c.public:
		if in.Public == nil {
			return nil, fmt.Errorf("%w: %s needs a public table (PUBLIC = db.t)", synth.ErrInvalidInput, c.name)
		}
		if err := checkPublic(dom, in.Public.Domain()); err != nil {
			return nil, err
		}
		sup = newSupport(in.Public)
		r.fam = newDense(dom, sup.cols, sup.logBase())
	case c.dense:
		if r.fam, err = newDenseDomain(dom); err != nil {
			return nil, fmt.Errorf("%w: %v", synth.ErrInvalidInput, err)
		}
	default:
		r.fam = newFactored(dom)
	}
	if err := ctx.Err(); err != nil {
		return &synth.Result{}, err
	}

	res := &synth.Result{}
	fail := func(err error) (*synth.Result, error) {
		res.Model, res.Rows, res.Artifact, res.Note = nil, nil, nil, ""
		return res, err
	}
	answers, err := in.Data.Marginals(ctx, sets)
	if err != nil {
		return fail(fmt.Errorf("true marginals: %w", err))
	}
	var n float64
	for _, v := range answers[0] {
		n += v
	}
	y0 := n + float64(in.Noise.DiscreteGaussian(sigma0))
	res.RhoUsed += 1 / (2 * sigma0 * sigma0)
	r.addTotal(y0, sigma0*sigma0)
	in.Report(synth.Status{Phase: "init", RhoUsed: res.RhoUsed, ModelSize: r.fam.size()})

	tracker := adaptive.NewTracker(len(w))
	measuredSet := make([]bool, len(w))
	measuredCell := make([][]bool, len(w))
	var (
		eligible []int
		offs     []int
		scores   []float64
	)
	for t := 1; t <= T; t++ {
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		// Candidates: positive-weight workload marginals not yet measured
		// (whole) that keep the model within its capacity.
		limit := c.maxSize * float64(t) / float64(T)
		eligible = eligible[:0]
		var measured [][]int
		if _, ok := r.fam.(*factoredFamily); ok {
			measured = r.sets
		}
		for i, s := range sets {
			if w[i].Weight == 0 || measuredSet[i] {
				continue
			}
			if measured != nil && !adaptive.ContainedIn(s, measured) && r.fam.sizeWith([][]int{s}) > limit {
				continue
			}
			eligible = append(eligible, i)
		}
		if len(eligible) == 0 {
			continue
		}
		esets := make([][]int, len(eligible))
		for k, i := range eligible {
			esets[k] = sets[i]
		}
		// Scores go to fixed slots: MarginalsFunc calls back concurrently.
		// Cell k·c of eligible marginal k is scores[offs[k]+c]; a measured
		// cell scores −Inf (never selected).
		delta := 0.0
		offs = slices.Grow(offs[:0], len(eligible)+1)[:len(eligible)+1]
		offs[0] = 0
		for k, i := range eligible {
			delta = max(delta, w[i].Weight)
			n := 1
			if c.cells {
				n = dom.Cells(sets[i])
			}
			offs[k+1] = offs[k] + n
		}
		scores = slices.Grow(scores[:0], offs[len(eligible)])[:offs[len(eligible)]]
		err := r.fam.marginals(ctx, esets, func(k int, x []float64) {
			i := eligible[k]
			wt := w[i].Weight
			if c.cells {
				sc := scores[offs[k]:offs[k+1]]
				for cell, v := range x {
					if measuredCell[i] != nil && measuredCell[i][cell] {
						sc[cell] = math.Inf(-1)
					} else {
						sc[cell] = wt * math.Abs(answers[i][cell]-r.total*v)
					}
				}
				return
			}
			worst := 0.0
			for cell, v := range x {
				worst = max(worst, math.Abs(answers[i][cell]-r.total*v))
			}
			scores[k] = wt * worst
		})
		if err != nil {
			return fail(err)
		}
		ncands := 0
		for _, v := range scores {
			if !math.IsInf(v, -1) {
				ncands++
			}
		}
		if ncands == 0 {
			continue
		}
		tracker.Round(t, eligible, nil)
		j := in.Noise.Exponential(scores, eps, delta)
		k := sort.SearchInts(offs, j+1) - 1 // offs[k] ≤ j < offs[k+1]
		pick := cellRef{eligible[k], -1}
		if c.cells {
			pick.cell = j - offs[k]
		}
		s := sets[pick.set]
		idx, err := r.fam.addSet(s)
		if err != nil {
			return fail(err)
		}
		if idx == len(r.sets) {
			r.sets = append(r.sets, s)
		}
		first := len(r.qs)
		m := pgm.Measurement{Attrs: s, Sigma: sigma}
		if pick.cell < 0 {
			m.Y = slices.Clone(answers[pick.set])
			in.Noise.AddDiscreteGaussian(m.Y, sigma)
			var sum float64
			for cell, y := range m.Y {
				r.qs = append(r.qs, query{idx, cell, y})
				sum += y
			}
			r.addTotal(sum, float64(len(m.Y))*sigma*sigma)
			measuredSet[pick.set] = true
		} else {
			y := answers[pick.set][pick.cell] + float64(in.Noise.DiscreteGaussian(sigma))
			m.Y = []float64{y}
			q := make([]float64, dom.Cells(s))
			q[pick.cell] = 1
			m.Query = mat.NewDense(1, len(q), q)
			r.qs = append(r.qs, query{idx, pick.cell, y})
			if measuredCell[pick.set] == nil {
				measuredCell[pick.set] = make([]bool, dom.Cells(s))
			}
			measuredCell[pick.set][pick.cell] = true
		}
		r.groups = append(r.groups, group{first, len(r.qs)})
		res.RhoUsed += eps*eps/8 + 1/(2*sigma*sigma)
		res.Measurements = append(res.Measurements, synth.Measurement{Measurement: m, Round: t, Epsilon: eps})

		switch c.algo {
		case algoPEP:
			if err := r.project(ctx); err != nil {
				return fail(err)
			}
		case algoMWEM:
			if err := r.mw(ctx); err != nil {
				return fail(err)
			}
		}
		res.Rounds = append(res.Rounds, synth.Round{Round: t, Epsilon: eps, Sigma: sigma, Sensitivity: delta,
			Candidates: ncands, Selected: s, RhoUsed: res.RhoUsed, ModelSize: r.fam.size()})
		in.Report(synth.Status{Phase: "round", Round: t, RhoUsed: res.RhoUsed, ModelSize: r.fam.size()})
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	tracker.Fill(res, sets)
	res.Snapshots = nil // no intermediate models are kept (see docs/iterative.md)
	if c.public {
		return r.finishPublic(res, sup)
	}
	model, err := r.model()
	if err != nil {
		return fail(err)
	}
	res.Model = model
	in.Report(synth.Status{Phase: "final", Round: len(res.Rounds), RhoUsed: res.RhoUsed, ModelSize: model.Size()})
	if res.Rows, err = synth.Sample(ctx, model, in); err != nil {
		return fail(err)
	}
	return res, nil
}

// cellRef is a selection candidate: a workload marginal, and a cell of it
// (−1 for the whole marginal).
type cellRef struct{ set, cell int }

// model returns the release model: the family's distribution on the
// junction tree of the measured sets, scaled to the noisy total.
func (r *run) model() (*pgm.Model, error) {
	sets, thetas := r.fam.thetas()
	if len(sets) == 0 {
		return nil, fmt.Errorf("no workload marginal fits MAX_MODEL_SIZE = %v MB", r.cfg.maxSize)
	}
	if g, ok := r.fam.(*factoredFamily); ok {
		return g.f.View(r.total), nil // the run is over: no update follows
	}
	f, err := pgm.NewFactored(r.dom, sets)
	if err != nil {
		return nil, fmt.Errorf("model over the measured sets: %w", err)
	}
	for i, th := range thetas {
		f.Add(i, th)
	}
	return f.Model(r.total), nil
}

// current returns the family's answer to every measured query.
func (r *run) current(dst []float64, margs [][]float64) ([]float64, [][]float64) {
	margs = slices.Grow(margs[:0], len(r.sets))[:len(r.sets)]
	for i := range r.sets {
		margs[i] = r.fam.marginal(i, margs[i])
	}
	dst = slices.Grow(dst[:0], len(r.qs))[:len(r.qs)]
	for j, q := range r.qs {
		dst[j] = margs[q.set][q.cell]
	}
	return dst, margs
}

// clipOffset keeps the projection's targets strictly inside (0, 1) ([code]).
const clipOffset = 1e-6

// project is PEP's update ([000] Alg. 4): up to K times, take the measured
// query with the largest error and I-project onto its constraint, which
// for a 0/1 query is the closed-form step
// λ = ln(a(1−b)/((1−a)b)) on its cell, a the target, b the current answer
// (both clipped to [1e-6, 1−1e-6]); stop early when every error is ≤ γ.
// It warm-starts from D_{t−1}, as the reference code does. A cell that no
// point of a public support falls in cannot be moved by any reweighting;
// it is skipped instead of taking every step (the support is public).
func (r *run) project(ctx context.Context) error {
	var cur []float64
	var margs [][]float64
	for range r.cfg.iters {
		if err := ctx.Err(); err != nil {
			return err
		}
		cur, margs = r.current(cur, margs)
		best, worst := -1, -1.0
		for j, q := range r.qs {
			if e := math.Abs(r.target(j) - cur[j]); e > worst && r.fam.movable(q.set, q.cell) {
				best, worst = j, e
			}
		}
		if best < 0 || worst <= r.cfg.tol {
			return nil
		}
		a := min(max(r.target(best), clipOffset), 1-clipOffset)
		b := min(max(cur[best], clipOffset), 1-clipOffset)
		q := r.qs[best]
		r.fam.addCell(q.set, q.cell, math.Log(a*(1-b)/((1-a)*b)))
	}
	return nil
}

// mw is MWEM's update ([000] §3.2 corrected, [code] pmw-pub): the newly
// measured query (queries first.. of this round; a whole marginal counts
// as one query whose cells are updated together) gets the multiplicative
// weights step D ← D·exp(q·(ã − q(D))/2); with PAST_QUERIES every earlier
// measured query whose error is at least half the new one's gets the same
// step, all computed from the answers at the start of the update (stale,
// as in the reference), so their order does not matter.
func (r *run) mw(ctx context.Context) error {
	cur, _ := r.current(nil, nil)
	errOf := func(g group) float64 {
		e := 0.0
		for j := g.lo; j < g.hi; j++ {
			e = max(e, math.Abs(r.target(j)-cur[j]))
		}
		return e
	}
	step := func(g group) {
		if g.hi-g.lo == 1 {
			q := r.qs[g.lo]
			r.fam.addCell(q.set, q.cell, (r.target(g.lo)-cur[g.lo])/2)
			return
		}
		q := r.qs[g.lo]
		delta := make([]float64, r.dom.Cells(r.sets[q.set]))
		for j := g.lo; j < g.hi; j++ {
			delta[r.qs[j].cell] += (r.target(j) - cur[j]) / 2
		}
		r.fam.add(q.set, delta)
	}
	newest := r.groups[len(r.groups)-1]
	step(newest)
	if r.cfg.past {
		bar := 0.5 * errOf(newest)
		for _, g := range r.groups[:len(r.groups)-1] {
			if err := ctx.Err(); err != nil {
				return err
			}
			if errOf(g) >= bar {
				step(g)
			}
		}
	}
	return nil
}

// group is one measurement's queries, r.qs[lo:hi].
type group struct{ lo, hi int }
