package pgm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"slices"
	"time"

	"gonum.org/v1/gonum/mat"
)

// Measurement is one noisy linear measurement of a marginal:
// Y = Q·M_Attrs(D) + noise, with per-entry noise standard deviation Sigma.
// Attrs is ascending; M_Attrs(D) is the count marginal.
type Measurement struct {
	Attrs []int
	// Query is the Q matrix (rows × Cells(Attrs)); nil means the identity,
	// i.e. Y is the noisy marginal itself.
	Query *mat.Dense
	// Kron, if non-nil, is the query as a Kronecker product of one factor
	// per attribute of Attrs (nil = identity), for query sets too large to
	// hold densely (HDMM's strategies); Query must then be nil and Y has
	// ∏ rows(Kron[j]) entries, laid out row-major.
	Kron  []*mat.Dense
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
	Iters int // iterations; default 1000
	// Tol, if positive, stops MirrorDescent when the loss fell by less
	// than Tol·|loss| per iteration on average over the last TolWindow
	// iterations. A window, not one iteration: KeepStep's trial of a
	// larger step can make a single iteration's decrease tiny in the
	// middle of a fit that is still moving. (EstimateCustom compares
	// single iterations.)
	Tol      float64
	Method   Method
	Loss     Loss
	StepSize float64 // initial/constant step; 0 = default
	// Total is the number of records; ≤ 0 means estimate it from the
	// measurements by inverse-variance weighting.
	Total float64
	// WarmStart, if non-nil, initialises the potentials from a previous model
	// over the same domain: each of its cliques' potentials is added to the
	// first new clique containing it (so the start is the previous model when
	// all are covered); potentials of cliques that the new triangulation does
	// not cover are dropped.
	WarmStart *Model
	// TakeWarmStart hands WarmStart over: the caller does not use that
	// model again (nor its potentials through another reference), so when
	// the fit's junction tree has the warm start's cliques Estimate starts
	// from its potentials in place — the same values the copy would hold —
	// instead of allocating a second arena of them while the warm start is
	// still live (AIM's final fit, and any round whose new measurement lies
	// in a clique: TestEstimateTakeWarmStart).
	TakeWarmStart bool
	// ExtraCliques are added to the model structure even if not measured.
	ExtraCliques [][]int
	// Stats, if non-nil, receives a summary of the run.
	Stats *EstimateStats
	// Step selects where each MirrorDescent line search starts.
	Step StepRule
	// Progress, if non-nil, is called as the estimation goes: before the
	// first iteration, then after every ProgressEvery-th iteration or
	// ProgressInterval after the previous call, whichever comes first. It
	// runs on the estimating goroutine, so it must be cheap and must not
	// block.
	Progress func(EstimateProgress)
}

// EstimateProgress is a progress report of Estimate.
type EstimateProgress struct {
	Iter      int     // iterations done
	Iters     int     // iterations asked for (the estimation may stop earlier)
	ModelSize float64 // size in MB of the model being fitted
	Loss      float64 // loss at the current point (MirrorDescent; 0 for Accelerated)
}

// gcCells is the size (cells) from which a warm-started Estimate collects
// garbage before its fit; smaller models are not worth a collection.
const gcCells = 1 << 20

// TolWindow is the number of iterations over which EstimateOptions.Tol
// measures the loss decrease.
const TolWindow = 20

// Throttling of EstimateOptions.Progress.
const (
	ProgressEvery    = 50
	ProgressInterval = 500 * time.Millisecond
)

// progressTicker calls an EstimateOptions.Progress callback, throttled.
type progressTicker struct {
	fn    func(EstimateProgress)
	iters int
	size  float64
	last  time.Time
}

// newProgressTicker returns the ticker of o for a model over jt; its
// methods do nothing when o has no callback.
func newProgressTicker(o *EstimateOptions, jt *junctionTree) *progressTicker {
	return &progressTicker{fn: o.Progress, iters: o.Iters, size: float64(jt.total) * 8 / (1 << 20)}
}

// tick reports done iterations if the throttle allows it (always for 0).
func (p *progressTicker) tick(done int, loss float64) {
	if p.fn == nil {
		return
	}
	now := time.Now()
	if done != 0 && done%ProgressEvery != 0 && now.Sub(p.last) < ProgressInterval {
		return
	}
	p.last = now
	p.fn(EstimateProgress{Iter: done, Iters: p.iters, ModelSize: p.size, Loss: loss})
}

// StepRule selects the first step tried by each Armijo line search of
// MirrorDescent.
type StepRule int

const (
	// ResetStep starts every iteration at StepSize, as the reference
	// implementation does.
	ResetStep StepRule = iota
	// GrowStep starts every iteration at min(StepSize, 4 × the step
	// accepted by the previous one). While the acceptable step grows by less
	// than 4× per iteration this accepts the same steps as ResetStep (the
	// largest StepSize·2^-k passing the Armijo test), with far fewer
	// marginal-oracle calls spent on rejected steps.
	GrowStep
	// KeepStep starts every iteration at the step accepted by the previous
	// one, and tries keepGrowth times that only after a run of iterations
	// that all accepted their first trial; the run needed doubles (up to
	// keepMaxWait) each time such a trial fails and restarts at 1 when one
	// passes. A failed larger trial is followed by the kept step, then by
	// halvings. Where the acceptable step is steady, as it is through most
	// of a warm-started fit, GrowStep pays two rejected trials per
	// iteration (4α and 2α before α) and KeepStep about one per
	// keepMaxWait iterations; the steps differ only while the acceptable
	// step grows.
	KeepStep
)

// keepMaxWait bounds the run of first-trial acceptances after which
// KeepStep tries a larger step.
const keepMaxWait = 64

// keepGrowth is the factor of KeepStep's larger trial. On AIM's large
// ε = 10 models the acceptable step hovers between α and 2α: with a factor
// of 2 the fits cycled through α, α, 2α, then 4α and 2α rejected before
// α (six propagations for four iterations). With √2, over 21 paired
// fixed-noise runs, AIM took 10 % less CPU (58.5 against 65.1 s, −6.6 ±
// 3.2 s) at the same error (0.10803 against 0.10816), and was neutral at
// ε = 1, ε = 3 and on a 30-attribute table (docs/aim-performance.md,
// Issue 19, ninth pass).
const keepGrowth = math.Sqrt2

// keepStep is the state of the KeepStep rule.
type keepStep struct {
	streak int  // consecutive iterations accepted at their first trial
	wait   int  // streak needed before trying a larger step
	grew   bool // the current search started at keepGrowth × the last step
}

// next returns where the next search starts after one that accepted step
// a at its trials-th trial, with max the largest step allowed.
func (k *keepStep) next(a float64, trials int, max float64) float64 {
	if k.wait == 0 {
		k.wait = 1
	}
	if k.grew {
		if trials == 1 {
			k.wait = 1
		} else {
			k.wait = min(2*k.wait, keepMaxWait)
		}
	}
	if trials == 1 {
		k.streak++
	} else {
		k.streak = 0
	}
	k.grew = false
	if k.streak >= k.wait && keepGrowth*a <= max {
		k.streak = 0
		k.grew = true
		return keepGrowth * a
	}
	return a
}

// EstimateStats summarises an Estimate run.
type EstimateStats struct {
	Iters       int     // iterations run
	OracleCalls int     // belief propagations (marginal-oracle calls)
	Loss        float64 // loss at the returned model's marginals (MirrorDescent) or at the averaged marginals (Accelerated)
}

// DefaultStepSize is the initial step of each mirror-descent line search
// when EstimateOptions.StepSize is 0. Steps act on the potentials through the
// gradient with respect to the unnormalised (count) marginals, as in the
// reference implementation.
const DefaultStepSize = 2.0

// maxHalvings bounds the Armijo backtracking of one iteration.
const maxHalvings = 25

// ErrBadMeasurement is wrapped by the errors Estimate returns for malformed
// measurements.
var ErrBadMeasurement = errors.New("pgm: bad measurement")

// Estimate fits a graphical model to the measurements. It honours ctx
// cancellation between iterations.
//
// MirrorDescent takes, at iteration t, theta ← omega − alpha·∇L(mu) where
// mu = Total·marginals(omega) and ∇L is taken with respect to mu; alpha starts
// at StepSize and is halved (at most 25 times) until the Armijo condition
// L(mu) − L(mu') ≥ ½·alpha·⟨∇L, mu − mu'⟩ holds. L1 needs a StepSize and
// then uses it as a constant step without line search.
func Estimate(ctx context.Context, dom *Domain, meas []Measurement, opts *EstimateOptions) (*Model, error) {
	var o EstimateOptions
	if opts != nil {
		o = *opts
	}
	if o.Iters <= 0 {
		o.Iters = 1000
	}
	if err := checkMeasurements(dom, meas); err != nil {
		return nil, err
	}
	if o.Loss != L2 && o.Loss != L1 {
		return nil, fmt.Errorf("pgm: unknown loss %d", o.Loss)
	}
	if o.Loss == L1 && (o.Method != MirrorDescent || o.StepSize <= 0) {
		return nil, errors.New("pgm: the L1 loss is not smooth: use MirrorDescent with a fixed StepSize")
	}
	total := o.Total
	if total <= 0 {
		total = EstimateTotal(dom, meas)
	}
	sets := make([][]int, 0, len(meas)+len(o.ExtraCliques))
	for _, m := range meas {
		sets = append(sets, m.Attrs)
	}
	for _, c := range o.ExtraCliques {
		if err := dom.checkAttrs(c); err != nil {
			return nil, fmt.Errorf("pgm: extra clique: %w", err)
		}
		sets = append(sets, c)
	}
	jt, err := newJunctionTree(dom, sets, fitOrder(dom, sets, o.WarmStart))
	if err != nil {
		return nil, err
	}
	var theta []float64
	var warmStep float64 // the step the warm start's own fit ended with
	inPlace := false
	ws := o.WarmStart
	// A warm-started fit of a large model collects before each arena it
	// allocates while the garbage of the caller's previous phases (a
	// round's scoring, its drift bounds; the warm start's own potentials
	// once copied) could still fill the heap: the pacer lets the heap grow
	// to twice what was live at the last collection before it collects by
	// itself, and the arenas would be added on top. A collection of these
	// heaps of float arrays (nothing to scan) takes about a millisecond.
	collect := ws != nil && jt.total >= gcCells
	// Mirror descent from scratch, or from a model fitted by mirror
	// descent to the first measurements of this fit (AIM's rounds), starts
	// from step tables and needs no arena of potentials
	// (objective.initSteps); the warm start's tables are taken when
	// TakeWarmStart allows, copied otherwise.
	var warm [][]float64
	factored := o.Method == MirrorDescent
	if factored && ws != nil {
		if warm = ws.stepsFor(jt.dom, meas); warm == nil {
			factored = false
		} else if !o.TakeWarmStart {
			for i, t := range warm {
				warm[i] = slices.Clone(t)
			}
		}
	}
	switch {
	case factored:
	case ws != nil && o.TakeWarmStart && ws.theta != nil && ws.dom.Equal(jt.dom) && sameCliques(ws.jt, jt):
		// warmStart would add each clique's potential into a zero arena
		// laid out alike: theta is the warm start's, bit for bit.
		theta, inPlace = ws.theta, true
	default:
		if collect {
			runtime.GC()
		}
		theta = make([]float64, jt.total)
		hugePages(theta)
	}
	if ws != nil {
		if !inPlace && !factored {
			if err := warmStart(theta, jt, ws); err != nil {
				return nil, err
			}
		}
		warmStep = ws.step
		// The fit does not read the previous model again: dropping it here
		// lets a caller that passed its only reference free it.
		o.WarmStart, ws = nil, nil
	}
	if collect {
		// Before the marginals' arena: what the warm start leaves
		// (its potentials when copied, its marginals unless a caller
		// holds them) and what the caller's phases left is garbage. Its
		// pages go back to the system: the collector would keep them
		// mapped, and the new arenas, larger, seldom fit the holes.
		debug.FreeOSMemory()
	}
	obj := newObjective(jt, meas, o.Loss, total)
	pool := newPoolFor(jt.total)
	defer pool.stop()
	obj.team = team{pool}
	var stats EstimateStats
	var end fitEnd
	switch o.Method {
	case MirrorDescent:
		end, err = mirrorDescent(ctx, jt, obj, theta, warm, len(meas), &o, warmStep, &stats)
	case Accelerated:
		err = accelerated(ctx, jt, obj, theta, &o, &stats)
	default:
		return nil, fmt.Errorf("pgm: unknown method %d", o.Method)
	}
	if err != nil {
		return nil, err
	}
	if o.Stats != nil {
		*o.Stats = stats
	}
	var m *Model
	if end.p != nil {
		// Mirror descent returns the marginals of its accepted point,
		// those of theta (or of the step tables) bit for bit: no second
		// propagation, no second arena. Accelerated's are propagated.
		m = &Model{dom: jt.dom, jt: jt, theta: theta, p: end.p, logZ: end.logZ, total: total}
		if end.steps != nil {
			m.steps, m.stepSets = end.steps, make([][]int, len(meas))
			for i, x := range meas {
				m.stepSets[i] = x.Attrs
			}
		}
	} else {
		m = newModel(jt, theta, total)
	}
	m.step = end.step
	return m, nil
}

// checkMeasurements validates shapes and values.
func checkMeasurements(dom *Domain, meas []Measurement) error {
	for i, m := range meas {
		if err := dom.checkAttrs(m.Attrs); err != nil {
			return fmt.Errorf("%w %d: %w", ErrBadMeasurement, i, err)
		}
		n := dom.Cells(m.Attrs)
		rows := n
		if m.Query != nil {
			r, c := m.Query.Dims()
			if c != n {
				return fmt.Errorf("%w %d: query has %d columns, marginal has %d cells", ErrBadMeasurement, i, c, n)
			}
			rows = r
		}
		if m.Kron != nil {
			if m.Query != nil || len(m.Kron) != len(m.Attrs) {
				return fmt.Errorf("%w %d: Kronecker query needs one factor per attribute and no dense query", ErrBadMeasurement, i)
			}
			rows = 1
			for j, f := range m.Kron {
				r, c := dom.Size(m.Attrs[j]), dom.Size(m.Attrs[j])
				if f != nil {
					r, c = f.Dims()
				}
				if c != dom.Size(m.Attrs[j]) {
					return fmt.Errorf("%w %d: Kronecker factor %d has %d columns, attribute has %d values", ErrBadMeasurement, i, j, c, dom.Size(m.Attrs[j]))
				}
				rows *= r
			}
		}
		if len(m.Y) != rows {
			return fmt.Errorf("%w %d: %d answers, want %d", ErrBadMeasurement, i, len(m.Y), rows)
		}
		if !(m.Sigma > 0) || math.IsInf(m.Sigma, 0) {
			return fmt.Errorf("%w %d: sigma %v", ErrBadMeasurement, i, m.Sigma)
		}
		for _, y := range m.Y {
			if math.IsNaN(y) || math.IsInf(y, 0) {
				return fmt.Errorf("%w %d: non-finite answer", ErrBadMeasurement, i)
			}
		}
	}
	return nil
}

// warmStart adds the potentials of ws into theta: each old clique's
// potential goes to the first new clique that contains it, so the
// distribution is unchanged.
func warmStart(theta []float64, jt *junctionTree, ws *Model) error {
	if !ws.dom.Equal(jt.dom) {
		return errors.New("pgm: warm start model has another domain")
	}
	wsTheta := ws.potentials()
	for k, c := range ws.jt.cliques {
		to := jt.containing(c)
		if to < 0 {
			// A new triangulation need not contain every old clique. The
			// warm start is only an initial point, so its potential is
			// dropped rather than failing the fit.
			continue
		}
		// A tiled map: a full one per clique was half the new model's
		// size in garbage, allocated while both models are live.
		jt.tiledMap(to, c).Expand(jt.block(theta, to), ws.jt.block(wsTheta, k), 0)
	}
	return nil
}

// sameCliques reports whether a and b have the same cliques in the same
// order, hence the same arena layout.
func sameCliques(a, b *junctionTree) bool {
	if a.total != b.total || len(a.cliques) != len(b.cliques) {
		return false
	}
	for k, c := range a.cliques {
		if !slices.Equal(c, b.cliques[k]) || a.off[k] != b.off[k] {
			return false
		}
	}
	return true
}

// fitEnd is how mirrorDescent ended: the last accepted step (0 if none
// was) and, when its marginal arena holds the marginals of the returned
// potentials (the last propagation was at them), that arena and log Z.
type fitEnd struct {
	step float64
	p    []float64
	logZ float64
	// steps are the fit's step tables by measurement (mirror descent from
	// no arena of potentials: the model's parameters, see initSteps).
	steps [][]float64
}

// fuseGrad forms each trial's potentials from the step tables inside the
// propagation (bpWork.runFused); tests turn it off to compare with the
// separate passes (the potentials in an arena, then a propagation).
var fuseGrad = true

// minWarmStep × the full step is the least warm step KeepStep starts from.
// A smaller one comes from a fit that ended at working precision, where
// steps no longer change the loss: it says nothing about the new
// measurements' step, and a search that starts there stays where Armijo's
// test passes or fails by the loss's rounding alone, so it may never grow
// back (TestKeepStepMatchesGrowStep has such a fit). AIM's rounds end far
// above it.
const minWarmStep = 0x1p-20

// mirrorDescent runs Algorithm 1 with Armijo backtracking, updating theta.
// warmStep is the last step of the warm start's fit (0 if none). theta,
// the starting potentials, may be nil: the fit then starts from the step
// tables warm (by measurement index, see objective.initSteps) and holds no
// arena of potentials, and the end's steps are the model's parameters;
// otherwise the accepted steps are added into theta when the fit returns.
// The end's p is always set.
func mirrorDescent(ctx context.Context, jt *junctionTree, obj *objective, theta []float64, warm [][]float64, nmeas int, o *EstimateOptions, warmStep float64, st *EstimateStats) (end fitEnd, err error) {
	bp := newBPWork(jt)
	bp.team = obj.team
	bp.bind(obj)
	// One arena of marginals suffices: the loss, its gradient and the
	// Armijo test work from the measurements' projections, which the
	// objective keeps for the accepted point and the trial.
	n := jt.total
	p := make([]float64, n)
	hugePages(p)
	// No gradient arena and, from scratch or from a fit of the same
	// measurements, no arena of potentials: the fit keeps its steps as
	// small tables, one per measurement, and forms each trial's potentials
	// while it propagates (objective.initSteps). Such a fit holds one
	// model-sized arena, p (docs/aim-performance.md, Issue 19, twelfth
	// pass); one from a model's potentials also holds theta, into which
	// the accepted steps are added when it returns.
	obj.initSteps(warm)
	defer func() {
		if err != nil {
			return
		}
		if theta != nil {
			obj.applySteps(theta)
		} else {
			end.steps = obj.steps(nmeas)
		}
	}()
	var trialTheta []float64 // the separate passes' potentials (tests)
	propagate := func() float64 {
		if fuseGrad {
			return bp.runFused(p, theta, 0, nil, obj)
		}
		// The separate passes: the trial's potentials in an arena of
		// their own, then a plain propagation.
		if trialTheta == nil {
			trialTheta = make([]float64, n)
		}
		obj.formPotentials(trialTheta, theta)
		return bp.run(p, trialTheta)
	}
	obj.trialSteps(0)
	logZ := propagate()
	st.OracleCalls++
	loss := obj.valueBP(p)
	obj.accept()
	st.Loss = loss
	step, lineSearch := o.StepSize, o.StepSize <= 0
	if lineSearch {
		step = DefaultStepSize
	}
	alpha := step
	if o.Step == KeepStep && lineSearch && warmStep >= minWarmStep*step {
		// The acceptable step changes little when a measurement is
		// added: start where the previous fit ended rather than halving
		// down from the full step again.
		alpha = min(step, warmStep)
	}
	var last float64 // last accepted step
	var keep keepStep
	prog := newProgressTicker(o, jt)
	prog.tick(0, loss)
	// hist[k%len(hist)] is the loss after k iterations, for Tol.
	var hist [TolWindow + 1]float64
	hist[0] = loss
	for i := range o.Iters {
		if i > 0 {
			prog.tick(i, loss)
		}
		if err := ctx.Err(); err != nil {
			return fitEnd{}, fmt.Errorf("pgm: estimation cancelled: %w", err)
		}
		if loss == 0 {
			bp.materialize(p)
			return fitEnd{step: last, p: p, logZ: logZ}, nil
		}
		obj.gradOwn(false)
		// theta (if any) stays at the starting potentials while the trial
		// steps are tried: the propagation forms them from the step tables.
		var newLoss, trialLogZ float64
		accepted, trials := false, 0
		for range maxHalvings {
			if testTrial != nil {
				testTrial(alpha)
			}
			obj.trialSteps(-alpha)
			trialLogZ = propagate()
			st.OracleCalls++
			trials++
			newLoss = obj.valueBP(p)
			if !lineSearch || (newLoss <= loss && loss-newLoss >= 0.5*alpha*obj.total*obj.dirDot()) {
				accepted = true
				break
			}
			if keep.grew && trials == 1 {
				// KeepStep's larger trial failed: back to the kept step.
				alpha /= keepGrowth
			} else {
				alpha *= 0.5
			}
		}
		if !accepted {
			// No step of 25 halvings decreases the loss enough: the fit
			// has converged to working precision. (The reference takes
			// the last trial step anyway, which can increase the loss.)
			// p holds a rejected trial: propagated again at the accepted
			// steps.
			obj.trialSteps(0)
			logZ = propagate()
			st.OracleCalls++
			bp.materialize(p)
			return fitEnd{step: last, p: p, logZ: logZ}, nil
		}
		logZ = trialLogZ
		obj.accept()
		obj.acceptSteps()
		last = alpha
		switch {
		case !lineSearch:
		case o.Step == GrowStep:
			alpha = min(step, alpha*growFactor)
		case o.Step == KeepStep:
			alpha = keep.next(alpha, trials, step)
		default:
			alpha = step
		}
		loss = newLoss
		st.Iters++
		st.Loss = loss
		hist[st.Iters%len(hist)] = loss
		if o.Tol > 0 && st.Iters >= TolWindow && hist[(st.Iters-TolWindow)%len(hist)]-loss < o.Tol*TolWindow*math.Abs(loss) {
			bp.materialize(p)
			return fitEnd{step: last, p: p, logZ: logZ}, nil
		}
	}
	bp.materialize(p)
	return fitEnd{step: last, p: p, logZ: logZ}, nil
}

// testTrial, nil outside tests, sees the step of every line-search trial
// of mirrorDescent, in order.
var testTrial func(alpha float64)

// accelerated runs Algorithm 2 (accelerated dual averaging) and finishes with
// the junction-tree maximum-likelihood map from the averaged marginals to
// potentials, written into theta.
func accelerated(ctx context.Context, jt *junctionTree, obj *objective, theta []float64, o *EstimateOptions, st *EstimateStats) error {
	K := lipschitz(jt, obj)
	if K == 0 {
		return nil
	}
	bp := newBPWork(jt)
	bp.team = obj.team
	n := jt.total
	buf := make([]float64, 4*n)
	w, v, u, g := buf[:n:n], buf[n:2*n:2*n], buf[2*n:3*n:3*n], buf[3*n:]
	gbar := make([]float64, n)
	bp.run(v, theta)
	copy(w, v)
	prog := newProgressTicker(o, jt)
	for t := 1; t <= o.Iters; t++ {
		prog.tick(t-1, 0)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("pgm: estimation cancelled: %w", err)
		}
		c := 2 / float64(t+1)
		for i := range u {
			u[i] = (1-c)*w[i] + c*v[i]
		}
		obj.value(u)
		obj.grad(g)
		for i := range gbar {
			gbar[i] = (1-c)*gbar[i] + c*g[i]
		}
		s := -float64(t) * float64(t+1) / (4 * K * obj.total)
		for i := range theta {
			theta[i] = s * gbar[i]
		}
		bp.run(v, theta)
		st.OracleCalls++
		st.Iters++
		for i := range w {
			w[i] = (1-c)*w[i] + c*v[i]
		}
	}
	st.Loss = obj.value(w)
	mle(theta, jt, w)
	return nil
}

// mle writes potentials whose model has the given (consistent) clique
// marginals p: log p at the root, log p_v − log p_sep(v) elsewhere, with
// 0/0 taken as 0 probability.
func mle(theta []float64, jt *junctionTree, p []float64) {
	for v := range jt.cliques {
		tv := jt.block(theta, v)
		jt.mleClique(v, p, func(i int, x float64) { tv[i] = x })
	}
}

// mleClique calls put with each cell of clique v's potential in mle's map,
// in cell order: it needs only the clique's marginal and its separator's,
// so a caller that streams the potentials (a lean model's encoding) holds
// no arena of them.
func (jt *junctionTree) mleClique(v int, p []float64, put func(i int, x float64)) {
	pv := jt.block(p, v)
	if jt.parent[v] < 0 {
		for i, x := range pv {
			put(i, math.Log(x))
		}
		return
	}
	ps := make([]float64, jt.dom.Cells(jt.sep[v]))
	t := jt.tiledMap(v, jt.sep[v])
	t.Project(ps, pv)
	t.Each(0, len(pv), func(at, base int, idx []int32) {
		for j, k := range idx {
			if x := pv[at+j]; x <= 0 {
				put(at+j, math.Inf(-1))
			} else {
				put(at+j, math.Log(x/ps[base+int(k)]))
			}
		}
	})
}

// lipschitz returns the smoothness constant of the L2 loss that accelerated
// dual averaging needs, relative to the ℓ1 norm in which the entropy of the
// (full-joint) distribution is 1-strongly convex: with mu = N·p and Hessian
// N²·Σ_m M_mᵀQ_mᵀQ_mM_m/σ_m² in p, the bound is N²·Σ_m max|QᵀQ|/σ_m², because
// every entry of M_mᵀM_m is 0 or 1. The returned K (in count units: the
// update divides by N once more) is Σ_m max|QᵀQ|/σ_m², with max|I| = 1.
//
// The reference implementation instead uses the Euclidean bound
// max over cliques of Σ λmax(QᵀQ)·(cells(clique)/cells(attrs))/σ², which is
// far larger (about 3500× on the adult benchmark), so its steps are tiny
// and 100 iterations barely move the model.
func lipschitz(jt *junctionTree, obj *objective) float64 {
	var k float64
	for i := range obj.meas {
		m := &obj.meas[i]
		e := 1.0
		if m.q != nil {
			e = maxAbsGram(m.q)
		}
		k += e * m.c * m.c
	}
	return k
}

// maxAbsGram returns the largest absolute entry of QᵀQ.
func maxAbsGram(q *mat.Dense) float64 {
	var g mat.Dense
	g.Mul(q.T(), q)
	var m float64
	r, c := g.Dims()
	for i := range r {
		for j := range c {
			m = math.Max(m, math.Abs(g.At(i, j)))
		}
	}
	return m
}

// EstimateTotal estimates the record count from the measurements by
// inverse-variance weighting (at least 1). A measurement qualifies when the
// all-ones vector lies in the row space of its query: Qᵀv = 1 is solved by
// least squares and kept when the residual vanishes; its estimate is v·y with
// variance σ²‖v‖². For the identity, v = 1.
func EstimateTotal(dom *Domain, meas []Measurement) float64 {
	var num, den float64
	for _, m := range meas {
		var est, variance float64
		if m.Kron != nil {
			var ok bool
			if est, variance, ok = kronTotal(dom, m); !ok {
				continue
			}
		} else if m.Query == nil {
			for _, y := range m.Y {
				est += y
			}
			variance = m.Sigma * m.Sigma * float64(len(m.Y))
		} else {
			r, c := m.Query.Dims()
			ones := mat.NewVecDense(c, nil)
			for i := range c {
				ones.SetVec(i, 1)
			}
			var v mat.VecDense
			if err := v.SolveVec(m.Query.T(), ones); err != nil {
				continue
			}
			var chk mat.VecDense
			chk.MulVec(m.Query.T(), &v)
			chk.SubVec(&chk, ones)
			if mat.Norm(&chk, math.Inf(1)) > 1e-8 {
				continue
			}
			est = mat.Dot(&v, mat.NewVecDense(r, m.Y))
			variance = m.Sigma * m.Sigma * mat.Dot(&v, &v)
		}
		if variance <= 0 {
			continue
		}
		num += est / variance
		den += 1 / variance
	}
	if den == 0 {
		return 1
	}
	return math.Max(1, num/den)
}

// growFactor is how much GrowStep lets the first trial step exceed the last
// accepted one. With 4, the accepted steps on the adult benchmark are those
// of ResetStep, bit for bit, at a third of the oracle calls; with 2 they lag
// when the acceptable step grows quickly.
var growFactor = 4.0

// kronTotal is EstimateTotal's estimate from one Kronecker measurement:
// the all-ones vector is in the row space of Q iff it is in that of every
// factor, and then v = ⊗ v_j.
func kronTotal(dom *Domain, m Measurement) (est, variance float64, ok bool) {
	vs := make([]*mat.Dense, len(m.Kron))
	sizes := make([]int, len(m.Kron))
	norm2 := 1.0
	for j, f := range m.Kron {
		n := dom.Size(m.Attrs[j])
		if f == nil {
			sizes[j] = n
			v := mat.NewDense(1, n, nil)
			for i := range n {
				v.Set(0, i, 1)
			}
			vs[j] = v
			norm2 *= float64(n)
			continue
		}
		r, _ := f.Dims()
		sizes[j] = r
		ones := mat.NewVecDense(n, nil)
		for i := range n {
			ones.SetVec(i, 1)
		}
		var v mat.VecDense
		if err := v.SolveVec(f.T(), ones); err != nil {
			return 0, 0, false
		}
		var chk mat.VecDense
		chk.MulVec(f.T(), &v)
		chk.SubVec(&chk, ones)
		if mat.Norm(&chk, math.Inf(1)) > 1e-8 {
			return 0, 0, false
		}
		vs[j] = mat.NewDense(1, r, v.RawVector().Data)
		norm2 *= mat.Dot(&v, &v)
	}
	est = KronMul(vs, sizes, m.Y, false)[0]
	return est, m.Sigma * m.Sigma * norm2, true
}
