package aim

import (
	"context"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/debug"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/internal/adaptive"
	"github.com/dpsql/dpsql/synth/internal/marginal"
	"github.com/dpsql/dpsql/synth/pgm"
)

// collectMB is the model size (MB) from which AIM collects garbage where
// a phase leaves model-sized arrays dead (see run.collect): a smaller
// model's phases leave too little to be worth a collection. From
// synth.ReleaseMB on, the collection also returns the freed pages to the
// operating system (pgm.Estimate does the same before a large fit's arenas).
const collectMB = 2

// sqrt2pi is sqrt(2/π): E|Z| for Z ~ N(0, 1).
var sqrt2pi = math.Sqrt(2 / math.Pi)

// Run runs AIM on in. It satisfies synth.Runner.
func (o *Options) Run(ctx context.Context, in *synth.Input) (*synth.Result, error) {
	w, err := in.Check(true)
	if err != nil {
		return nil, fmt.Errorf("aim: %w", err)
	}
	data := in.Data
	dom := data.Domain()
	opt := o.withDefaults(dom.Len())
	cands := closure(w)

	var oneWay []int // domain sizes of the 1-way candidates, in order
	for _, c := range cands {
		if len(c.attrs) == 1 {
			oneWay = append(oneWay, dom.Size(c.attrs[0]))
		}
	}
	init := opt.InitRounds
	if init <= 0 {
		init = defaultInitRounds(in.Rho, opt.Rounds)
	}
	sched, sigma0, err := newSchedule(in.Rho, opt.Rounds, init, oneWay)
	if err != nil {
		return nil, err
	}
	if err := sched.check(); err != nil {
		return nil, fmt.Errorf("aim: %w", err)
	}

	// True answers of every candidate, computed once and held compactly,
	// in a file once they are large (answerStore).
	store := newAnswerStore(in.TempDir)
	defer store.close()
	nFine := len(cands)
	if err := candidateAnswers(ctx, in, w, cands, store); err != nil {
		// Nothing measured: nothing spent.
		return &synth.Result{}, fmt.Errorf("aim: true marginals: %w", err)
	}
	if cands, err = addTwins(dom, cands, store, opt.CoarseBins); err != nil {
		return &synth.Result{}, fmt.Errorf("aim: true marginals: %w", err)
	}
	store.sealed()
	if testAnswers != nil {
		testAnswers(store)
	}

	wkeys := make([]string, len(w))
	for i, m := range w {
		wkeys[i] = synth.Key(m.Attrs)
	}
	sets := make([][]int, len(cands))
	for i, c := range cands {
		sets[i] = c.attrs
	}
	r := &run{opt: opt, in: in, dom: dom, w: w, wkeys: wkeys, cands: cands, nFine: nFine, sets: sets, answers: store, sched: sched,
		sizer: modelSizer(dom), res: &synth.Result{}}
	return r.loop(ctx, sigma0)
}

// run is the state of one AIM run.
type run struct {
	opt     Options
	in      *synth.Input
	dom     *pgm.Domain
	w       []synth.Marginal // canonical workload
	wkeys   []string         // synth.Key of each workload set
	cands   []candidate
	nFine   int          // cands[nFine:] are coarse twins
	sets    [][]int      // cands[i].attrs (a twin's fine attributes: its model size)
	answers *answerStore // true candidate marginals M_r(D)
	sched   *schedule

	meas     []pgm.Measurement
	res      *synth.Result  // its own allocation: returning it must not keep the run (answers, input) alive
	measured [][]int        // maximal measured sets: the model's cliques
	sizer    adaptive.Sizer // the capacity filter, sizes kept between rounds
	model    *pgm.Model
	tracker  *adaptive.Tracker
}

// measure releases answer i (the true marginal over attrs, binned by
// coarse if non-nil) with discrete Gaussian noise sigma, selected in round
// with parameter eps.
func (r *run) measure(attrs []int, coarse *coarsening, i int, sigma, eps float64, round int) error {
	y, err := r.answers.Expand(i, nil)
	if err != nil {
		return err
	}
	r.in.Noise.AddDiscreteGaussian(y, sigma)
	m := pgm.Measurement{Attrs: attrs, Y: y, Sigma: sigma}
	if coarse != nil {
		m.Kron = coarse.kron()
	}
	r.meas = append(r.meas, m)
	r.res.Measurements = append(r.res.Measurements, synth.Measurement{Measurement: m, Round: round, Epsilon: eps})
	r.measured = adaptive.AddMaximal(r.measured, attrs)
	return nil
}

// modelSizer is the capacity filter over dom's junction-tree sizes.
func modelSizer(dom *pgm.Domain) adaptive.Sizer {
	return adaptive.Sizer{Size: func(cliques [][]int) float64 { return pgm.ModelSize(dom, cliques) }}
}

// filter appends to dst the candidates whose addition keeps the model
// within limit MB, or that lie in one of the model's cliques (the capacity
// filter, each candidate's model size kept until the measured sets change),
// in increasing index order. A coarse twin passes when its fine set does
// and keeps the model within twinLimit: a twin is cheap to measure but adds
// its whole fine set to the model, and at the fine cap the models grow
// several times larger (and slower) for no gain (docs/aim-performance.md).
func (r *run) filter(dst []int, limit, twinLimit float64) []int {
	cliques := r.model.Cliques()
	dst = r.sizer.Filter(dst, r.sets[:r.nFine], r.measured, cliques, limit)
	n := len(dst)
	for _, i := range dst[:n] {
		tw := r.cands[i].twin
		if tw < 0 {
			continue
		}
		if size, ok := r.sizer.SizeOf(i); (ok && size <= twinLimit) || adaptive.ContainedIn(r.sets[i], cliques) {
			dst = append(dst, tw)
		}
	}
	return dst
}

// estimate refits the model to all measurements, warm-started, with the
// line-search rule step. Both the rounds (Options.roundStep) and the final
// fit use pgm.KeepStep: each search starts at the previous fit's last
// step, and tries a larger one only after a run of first-trial
// acceptances, so a warm-started iteration costs ~1.5 belief propagations
// where pgm.GrowStep (4× the last step first) paid ~3. On adult the rounds
// then select, anneal and err as with GrowStep, paired over the same noise
// (docs/aim-performance.md, Issue 19, fourth pass); an earlier attempt at
// KeepStep in the rounds (before lazy selection) made a 30-attribute table
// run more and costlier rounds, measured there too.
func (r *run) estimate(ctx context.Context, iters int, tol float64, step pgm.StepRule, progress func(pgm.EstimateProgress)) error {
	// The previous model is handed over, not kept: Estimate drops it after
	// the warm start and collects, so a model that no round snapshot holds
	// is freed before the new fit's arenas are allocated (peak memory).
	// Nothing else holds its potentials (snapshots and the lazy selection's
	// previous model are lean), so Estimate may start from them in place
	// when the cliques are unchanged, as in the final fit.
	ws := r.model
	r.model = nil
	m, err := pgm.Estimate(ctx, r.dom, r.meas, &pgm.EstimateOptions{Iters: iters, Tol: max(tol, 0), WarmStart: ws, TakeWarmStart: true, Step: step, Progress: progress})
	if err != nil {
		return err
	}
	r.model = m
	if testFitted != nil {
		testFitted(m)
	}
	return nil
}

// Test hooks, nil outside tests: testFitted sees every fitted model,
// testRoundFit is the progress callback of the rounds' fits, testAnswers
// sees the candidates' true answers once they are computed.
var (
	testFitted   func(*pgm.Model)
	testRoundFit func(pgm.EstimateProgress)
	testAnswers  func(*answerStore)
)

// loop runs initialisation, the rounds and the final estimation and
// sampling; on error it returns the partial result.
func (r *run) loop(ctx context.Context, sigma0 []float64) (*synth.Result, error) {
	res := r.res
	fail := func(err error) (*synth.Result, error) {
		res.Model = nil
		res.Rows = nil
		res.RhoUsed = r.sched.used
		return res, fmt.Errorf("aim: %w", err)
	}
	if err := ctx.Err(); err != nil {
		// Nothing measured yet: nothing spent.
		return &synth.Result{}, fmt.Errorf("aim: %w", err)
	}

	// Initialisation: every 1-way candidate, with the noise scales the
	// schedule allotted (in candidate order).
	k := 0
	for i, c := range r.cands[:r.nFine] {
		if len(c.attrs) == 1 {
			if err := r.measure(c.attrs, nil, i, sigma0[k], 0, 0); err != nil {
				return fail(err)
			}
			k++
		}
	}
	if err := r.estimate(ctx, r.opt.PGMIters, 0, pgm.GrowStep, nil); err != nil {
		return fail(fmt.Errorf("initial estimation: %w", err))
	}
	r.in.Report(synth.Status{Phase: "init", RhoUsed: r.sched.used, ModelSize: r.model.Size()})

	r.tracker = adaptive.NewTracker(len(r.cands))
	r.tracker.Compact(r.sets) // a twin's set is its fine set, as in Fill
	if f := spillFile(r.in.TempDir, "snapshots"); f != nil {
		defer dropFile(f)
		r.tracker.SpillTo(f)
	}
	var (
		eligible []int
		scores   []float64
		sc       = newScorer(r)
		lz       *lazyState
	)
	if !r.opt.Eager {
		lz = newLazyState(r)
	}
	for t := 1; ; t++ {
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		prevUsed := r.sched.used
		sigma, eps, last := r.sched.next()
		limit := r.opt.MaxModelSize * r.sched.used / r.sched.rho

		eligible = r.filter(eligible[:0], limit, min(limit, r.opt.CoarseMaxSize*r.sched.used/r.sched.rho))
		if len(eligible) == 0 {
			// Cannot happen: 1-way candidates are always in a clique.
			panic("aim: no eligible candidate")
		}
		delta := 0.0
		for _, i := range eligible {
			delta = max(delta, r.cands[i].weight)
		}
		var (
			k   int
			err error
		)
		if lz == nil {
			if scores, err = sc.scores(ctx, scores, eligible, r.model, sigma); err == nil {
				k = r.in.Noise.Exponential(scores, eps, delta)
			}
		} else {
			k, scores, err = lz.choose(ctx, r, sc, scores, eligible, r.model, sigma, eps, delta)
		}
		if err != nil {
			// Nothing was selected or measured this round.
			r.sched.used = prevUsed
			return fail(fmt.Errorf("round %d selection: %w", t, err))
		}
		pick := eligible[k]
		sel := r.cands[pick]
		// Scoring's tables (the batch's reduced cliques, up to twice the
		// model) are garbage now: collected before the snapshots'
		// compaction and the fit add theirs.
		r.collect()
		r.tracker.Round(t, eligible, r.model)

		before := r.coarseMarginal(sel)
		if err := r.measure(sel.attrs, sel.coarse, pick, sigma, eps, t); err != nil {
			return fail(fmt.Errorf("round %d measurement: %w", t, err))
		}
		r.tracker.Measured(t, sel.attrs)
		if last {
			// Nothing selects again: the candidates' true answers and the
			// scoring state are read no more. Dropped before the last two
			// fits, the largest of the run, they leave those fits' arenas
			// less live heap to be collected against (the answers are
			// most of the live heap on a wide table; TestLastFitsDropAnswers).
			r.answers.close()
			r.answers, sc, lz = nil, nil, nil
		}
		// The drift bounds read only prev's marginals: its lean view lets
		// the fit free its potentials (TestRoundFitFreesPrevious).
		prev := r.model.Lean()
		if err := r.estimate(ctx, r.opt.PGMIters, r.opt.roundTol, r.opt.roundStep, testRoundFit); err != nil {
			return fail(fmt.Errorf("round %d estimation: %w", t, err))
		}
		r.collect()
		if lz != nil && !last {
			if err := lz.advance(ctx, r, prev, r.model); err != nil {
				return fail(fmt.Errorf("round %d: %w", t, err))
			}
			r.collect()
		}
		res.Rounds = append(res.Rounds, synth.Round{
			Round: t, Epsilon: eps, Sigma: sigma, Sensitivity: delta,
			Candidates: len(eligible), Selected: sel.attrs,
			RhoUsed: r.sched.used, ModelSize: r.model.Size(),
		})
		r.in.Report(synth.Status{Phase: "round", Round: t, RhoUsed: r.sched.used, ModelSize: r.model.Size()})
		if last {
			break
		}
		after := r.coarseMarginal(sel)
		if marginal.L1(after, before) <= sqrt2pi*sigma*float64(len(after)) {
			r.sched.anneal()
		}
	}

	// Final estimation and sampling: post-processing only. Like every fit
	// it holds the model's potentials and marginals (no gradient arena:
	// pgm's steps are small tables), here beside the last round's snapshot
	// (up to a model) and the compacted snapshots.
	if err := r.estimate(ctx, r.opt.FinalIters, r.opt.FinalTol, pgm.KeepStep, r.in.FinalProgress(len(res.Rounds), r.sched.used)); err != nil {
		return fail(fmt.Errorf("final estimation: %w", err))
	}
	r.in.Report(synth.Status{Phase: "final", Round: len(res.Rounds), RhoUsed: r.sched.used, ModelSize: r.model.Size()})
	// The model is released lean: the sampler, the answers and the error
	// bounds read its marginals only, and its encoding derives the
	// potentials clique by clique (pgm.Model.AppendBinary), so the
	// potentials' arena, a model size, is freed before the snapshots'
	// compaction, the sampling and the release write instead of being
	// held through them (the same rows and answers, bit for bit; the
	// encoded potentials are the marginals' maximum-likelihood map, the
	// same distribution to round-off).
	r.model = r.model.Lean()
	res.Model = r.model
	r.collect()
	// The rows are drawn before the snapshots come back: the sampler's
	// buffers (a clique's index map and projection, up to 12 bytes a cell
	// of the largest clique) then sit beside the model alone, not also
	// beside the snapshots read back whole because compacting them does
	// not pay. At ε = 10 on adult that lowered the peak of the trajectories
	// that keep such snapshots by 38–59 MB (340 → 281, 315 → 277 MB) and
	// left the others as they were; the rows are the same.
	out, err := synth.Sample(ctx, r.model, r.in)
	if err != nil {
		return fail(err)
	}
	res.Rows = out
	r.collect()
	// The snapshots come back and are compacted one at a time, the garbage
	// of each (its elimination tables) collected before the next
	// (Tracker.Load).
	// A twin is a candidate whenever its fine set is (same attributes, same
	// model size): the fine candidates' last rounds are the twins'.
	if err := r.tracker.Load(r.gc); err != nil {
		return fail(fmt.Errorf("reading back the round snapshots: %w", err))
	}
	r.tracker.Fill(res, r.sets[:r.nFine])
	res.RhoUsed = r.sched.used
	r.in.Report(synth.Status{Phase: "sample", Round: len(res.Rounds), RhoUsed: r.sched.used, ModelSize: r.model.Size()})
	return res, nil
}

// collect runs a collection when the model is collectMB or more. AIM
// calls it where model-sized arrays have just died: after a round's
// selection (scoring's reduced cliques), after its fit (the objective),
// after the lazy selection's drift bound (the previous model's marginals
// over the new tree, its elimination cache) and before sampling. The collector's pacer lets the heap grow to twice
// what was live at the last collection, and a collection that ran while
// such arrays were live set that mark at several models; collected here,
// the next phase's garbage (scoring's tables, the next fit's arenas,
// which Estimate collects before alike) fills their pages instead of
// growing the heap. A collection of these heaps of float arrays costs
// milliseconds; it changes no result.
//
// The collector keeps freed pages mapped and returns them to the system
// only gradually, and a large model's arrays seldom fit the holes that
// the previous ones left. From synth.ReleaseMB on the collection releases
// them: on adult at ε = 10 the peak RSS fell by 22–45 MB on three
// fixed-secret trajectories (347 → 305, 399 → 376, 336 → 291 MB) for
// page faults worth about 1 % of the run's CPU. Below it the pages are
// few and the faults not worth it (a wide table's 2–4 MB models: up to
// 7 % more CPU for under 10 MB).
func (r *run) collect() {
	switch size := r.model.Size(); {
	case size >= synth.ReleaseMB:
		debug.FreeOSMemory()
	case size >= collectMB:
		runtime.GC()
	}
}

// gc is collect without returning pages to the system: for garbage that
// the next allocations of the same phase reuse.
func (r *run) gc() {
	if r.model.Size() >= collectMB {
		runtime.GC()
	}
}

// spillFile returns a new file in dir for what the run spills (what: its
// round snapshots, its true answers), already unlinked where the system
// allows it (so that nothing is left behind if the process dies), or nil
// if dir is empty or the file cannot be made: they then stay in memory.
func spillFile(dir, what string) *os.File {
	if dir == "" {
		return nil
	}
	f, err := os.CreateTemp(dir, ".dpsql-aim-"+what+"-*")
	if err != nil {
		return nil
	}
	os.Remove(f.Name()) // fails on systems that keep open files; removed again at the end
	return f
}

// dropFile closes and removes a file of spillFile's.
func dropFile(f *os.File) {
	f.Close()
	os.Remove(f.Name())
}

// coarseMarginal is the model's marginal as c's measurement observes it.
func (r *run) coarseMarginal(c candidate) []float64 {
	return c.observed(nil, r.model.Marginal(c.attrs))
}
