package bounds

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/dpsql/dpsql/internal/par"
	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/internal/marginal"
	"github.com/dpsql/dpsql/synth/pgm"
)

// DefaultConfidence is the confidence used when none is given.
const DefaultConfidence = 0.95

// totalShare is the fraction of λ = 1 − confidence spent on the record
// count N in the normalised bounds of Marginals.
const totalShare = 0.1

var (
	// ErrNoBounds is wrapped by the error for a release whose mechanism
	// has no error bounds ("no bounds for mechanism mst").
	ErrNoBounds = errors.New("no bounds")
	// ErrUncovered is wrapped by the error of Cells for an attribute set
	// that was neither measured nor ever a selection candidate.
	ErrUncovered = errors.New("no bound for this marginal")
	// ErrInvalid is wrapped by the errors for a malformed release or
	// argument.
	ErrInvalid = errors.New("invalid bounds input")
)

// Release is what the bounds are derived from: the final model and the
// parts of a synth.Result that record how it was made. Everything in it is
// differentially private, so the server may store it and the bounds are
// post-processing.
type Release struct {
	// Mechanism is the mechanism's registry name; only "aim" has bounds.
	Mechanism string
	// Model is the final model, whose answers the bounds are about.
	Model *pgm.Model
	// Workload is the workload the mechanism was run with (in any form
	// synth.CanonicalWorkload accepts: it is canonicalised as AIM does).
	Workload      []synth.Marginal
	Measurements  []synth.Measurement
	Rounds        []synth.Round
	LastCandidate []synth.CandidateRound
	Snapshots     []synth.Snapshot
	// Note is the result's note (synth.Result.Note); it tells old hdmm_pgm
	// releases, which stored least-squares marginals, from current ones.
	Note string
}

// FromResult is the Release of a mechanism's result.
func FromResult(mechanism string, res *synth.Result, workload []synth.Marginal) *Release {
	return &Release{
		Mechanism:     mechanism,
		Model:         res.Model,
		Workload:      workload,
		Measurements:  res.Measurements,
		Rounds:        res.Rounds,
		LastCandidate: res.LastCandidate,
		Snapshots:     res.Snapshots,
		Note:          res.Note,
	}
}

// MarginalBound is the error bound of one workload marginal.
type MarginalBound struct {
	Attrs  []int   // the marginal's attributes, ascending
	Weight float64 // its workload weight
	// L1 bounds ‖M_r(D)/N − M_r(p̂)/N̂‖₁, the L1 error of the model's
	// normalised marginal (each side divided by its own total), at the
	// requested confidence; it is at most 2, the trivial bound.
	L1 float64
	// Supported marginals are contained in a measured set; the bound of the
	// others comes from the exponential mechanism's guarantee.
	Supported bool
	// Round is, for a supported marginal, the last round that measured a
	// superset of it; for an unsupported one, the last round in which it
	// was a candidate. It is 0 for an unsupported marginal that never was a
	// candidate, whose L1 is then the trivial 2.
	Round int
}

// CellBound is a confidence interval for one cell of a marginal, on the
// count scale.
type CellBound struct {
	Estimate float64 // the model's expected count
	// Lower and Upper are the ends of the interval for the true count.
	// Counts are never negative, so the interval is clipped to [0, ∞):
	// 0 ≤ Lower ≤ Upper, and an interval wholly below 0 (a cell measured
	// far negative) becomes [0, 0]. Clipping never uncovers a count.
	Lower, Upper float64
}

// Marginals is Analyze followed by Analysis.Marginals.
func Marginals(ctx context.Context, rel *Release, confidence float64) ([]MarginalBound, error) {
	a, err := Analyze(rel)
	if err != nil {
		return nil, err
	}
	return a.Marginals(ctx, confidence)
}

// Cells is Analyze followed by Analysis.Cells.
func Cells(ctx context.Context, rel *Release, attrs []int, confidence float64) (cells []CellBound, supported bool, err error) {
	a, err := Analyze(rel)
	if err != nil {
		return nil, false, err
	}
	return a.Cells(ctx, attrs, confidence)
}

// Analysis holds what the bounds of a release need, computed once: the
// expensive part of a bound (model marginals, their distances to the
// measurements and to the snapshots) does not depend on the confidence, so
// keep one Analysis per release to answer many requests. It is safe for
// concurrent use.
type Analysis struct {
	// measuredOnly: only measured marginals have bounds (see measuredOnly).
	measuredOnly bool
	model        *pgm.Model
	dom          *pgm.Domain
	w            []synth.Marginal // canonical workload
	meas         []synth.Measurement
	// kron are the Kronecker measurements (hdmm_pgm's strategies).
	kron []*kronMeas
	// selected[t] is the measurement taken in round t ≥ 1.
	selected map[int]*synth.Measurement
	rounds   map[int]*synth.Round
	last     map[string]int // synth.Key(attrs) → last candidate round
	snaps    map[int]*synth.Snapshot
	// total is the inverse-variance estimate of N from the measurements,
	// totalSD its standard deviation.
	total, totalSD float64

	mu       sync.Mutex
	margs    map[string][]float64 // synth.Key(attrs) → model marginal (Query)
	stats    map[string]*stats    // synth.Key(attrs) → its statistics
	observed map[int]float64      // round t → ‖y_t − M_{r_t}(p̂_{t−1})‖₁
}

// stats are the confidence-independent parts of one marginal's bound.
type stats struct {
	err       error // ErrUncovered, or a malformed release
	supported bool
	round     int
	n         int // cells
	// Supported: ‖M_r(p̂) − ȳ_r‖₁ and σ̄_r.
	dist, sd float64
	// kron: supported by a Kronecker measurement only, whose estimate's
	// error has mean L1 norm meanAbs and Lipschitz constant lip (kronMeas.marginal).
	kron         bool
	meanAbs, lip float64
	// Unsupported: ‖M_r(p̂_{t−1}) − M_r(p̂)‖₁ and ‖y_t − M_{r_t}(p̂_{t−1})‖₁.
	drift, observed float64
}

// measuredOnly lists the mechanisms whose releases get the bounds of
// supported marginals only: their identity measurements are Gaussian like
// AIM's, so the supported-marginal bound holds for any model, but their
// selection score is not AIM's, so unmeasured marginals get no bound
// (ErrUncovered, the trivial 2 in Marginals). See docs/iterative.md.
//
// hdmm_pgm and privbayes_pgm are in the same position: their measurements
// are Gaussian (hdmm_pgm's Kronecker ones with their exact σ), taken on
// sets fixed before the noise is drawn (the public workload; PrivBayes'
// network, chosen by the exponential mechanism before any measurement),
// and their models are fitted to them (docs/pgm-dropin.md).
var measuredOnly = map[string]bool{"pep": true, "pmw": true, "hdmm_pgm": true, "privbayes_pgm": true}

// Analyze indexes rel for bound computations. It fails with ErrNoBounds for
// mechanisms other than AIM and with ErrInvalid for a malformed release.
func Analyze(rel *Release) (*Analysis, error) {
	partial := measuredOnly[strings.ToLower(rel.Mechanism)]
	if !strings.EqualFold(rel.Mechanism, "aim") && !partial {
		return nil, fmt.Errorf("%w for mechanism %s", ErrNoBounds, rel.Mechanism)
	}
	if rel.Model == nil {
		return nil, fmt.Errorf("bounds: %w: no model", ErrInvalid)
	}
	dom := rel.Model.Domain()
	w, err := synth.CanonicalWorkload(dom.Len(), rel.Workload)
	if err != nil {
		return nil, fmt.Errorf("bounds: %w: workload: %w", ErrInvalid, err)
	}
	a := &Analysis{
		model: rel.Model, dom: dom, w: w,
		selected: map[int]*synth.Measurement{},
		rounds:   map[int]*synth.Round{},
		last:     map[string]int{},
		snaps:    map[int]*synth.Snapshot{},
		stats:    map[string]*stats{},
		observed: map[int]float64{},
		margs:    map[string][]float64{},
	}
	prec := 0.0 // Σ 1/Var of the per-measurement total estimates
	for i := range rel.Measurements {
		m := &rel.Measurements[i]
		if m.Kron != nil && m.Query == nil && m.Coarse == nil {
			k, err := a.addKron(m)
			if err != nil {
				return nil, fmt.Errorf("bounds: %w: measurement %d on %v: %w", ErrInvalid, i, m.Attrs, err)
			}
			// Its estimate of N, if 1ᵀ is in the strategy's row space.
			if y, sd, ok := k.query(nil, nil); ok && sd > 0 {
				a.total += y / (sd * sd)
				prec += 1 / (sd * sd)
			}
			if m.Round > 0 {
				// AIM's coarse twins: a selected Kronecker measurement.
				a.selected[m.Round] = m
			}
			continue
		}
		if m.Query != nil || m.Coarse != nil {
			continue // AIM measures identities only
		}
		if len(m.Attrs) == 0 || len(m.Y) != dom.Cells(m.Attrs) || !(m.Sigma > 0) {
			return nil, fmt.Errorf("bounds: %w: measurement %d on %v is malformed", ErrInvalid, i, m.Attrs)
		}
		a.meas = append(a.meas, *m)
		v := m.Sigma * m.Sigma * float64(len(m.Y))
		a.total += sum(m.Y) / v
		prec += 1 / v
	}
	if strings.EqualFold(rel.Mechanism, "hdmm_pgm") && len(a.kron) == 0 && strings.Contains(rel.Note, "non-identity factors") {
		// Before release v3, hdmm_pgm stored A⁺y for its non-identity
		// strategies, whose cells are correlated: no sound bound here.
		return nil, fmt.Errorf("%w for this hdmm_pgm table: it was released before its Kronecker measurements were stored (recreate it)", ErrNoBounds)
	}
	if prec == 0 && partial {
		return nil, fmt.Errorf("%w for mechanism %s with single-cell measurements (CELLS = 1)", ErrNoBounds, rel.Mechanism)
	}
	if prec == 0 {
		return nil, fmt.Errorf("bounds: %w: no measurements", ErrInvalid)
	}
	a.measuredOnly = partial
	for i := range a.meas {
		if r := a.meas[i].Round; r > 0 {
			a.selected[r] = &a.meas[i]
		}
	}
	a.total /= prec
	a.totalSD = math.Sqrt(1 / prec)
	for i := range rel.Rounds {
		a.rounds[rel.Rounds[i].Round] = &rel.Rounds[i]
	}
	for _, c := range rel.LastCandidate {
		a.last[synth.Key(c.Attrs)] = c.Round
	}
	for i := range rel.Snapshots {
		if s := &rel.Snapshots[i]; s.Model != nil || s.Marginals != nil {
			a.snaps[s.Round] = s
		}
	}
	return a, nil
}

func checkConfidence(confidence float64) error {
	if !(confidence > 0 && confidence < 1) {
		return fmt.Errorf("bounds: %w: confidence %v is not in (0, 1)", ErrInvalid, confidence)
	}
	return nil
}

// Marginals returns the error bound of every marginal of the workload
// (canonical order: attribute sets ascending, duplicates merged) at the
// given confidence in (0, 1). Each bound holds with at least that
// probability on its own; they are not simultaneous. See the package
// documentation for the derivation. The first call computes the model
// marginals the bounds need, on all cores.
func (a *Analysis) Marginals(ctx context.Context, confidence float64) ([]MarginalBound, error) {
	if err := checkConfidence(confidence); err != nil {
		return nil, err
	}
	sets := make([][]int, len(a.w))
	for i, m := range a.w {
		sets[i] = m.Attrs
	}
	st, err := a.statsOf(ctx, sets)
	if err != nil {
		return nil, err
	}
	lambda := 1 - confidence
	lamN := totalShare * lambda
	lamR := lambda - lamN
	// |N − N̂| ≤ slack with probability 1 − λ_N.
	slack := math.Abs(a.total-a.model.Total()) + zTwoSided(lamN)*a.totalSD
	out := make([]MarginalBound, 0, len(a.w))
	for i, m := range a.w {
		s := st[i]
		if s.err != nil && !errors.Is(s.err, ErrUncovered) {
			return nil, s.err
		}
		l1 := 2.0
		if s.err == nil {
			b := a.countBound(m.Attrs, s, lamR)
			if den := a.model.Total() - slack; den > 0 {
				l1 = min(2, (b+slack)/den)
			}
		}
		out = append(out, MarginalBound{Attrs: m.Attrs, Weight: m.Weight, L1: l1, Supported: s.supported, Round: s.round})
	}
	return out, nil
}

// Cells returns a confidence interval for every cell of the marginal on
// attrs (distinct attributes in any order; the cells follow that order, the
// last attribute varying fastest, as pgm.Model.Marginal lays them out).
// Each interval covers its cell's true count with at least the given
// probability (per cell, not simultaneously). supported says whether the
// intervals come from measurements or, for an unsupported marginal, from
// its L1 bound. An attribute set that was neither measured nor a selection
// candidate has no bound (ErrUncovered).
func (a *Analysis) Cells(ctx context.Context, attrs []int, confidence float64) (cells []CellBound, supported bool, err error) {
	if err := checkConfidence(confidence); err != nil {
		return nil, false, err
	}
	if err := a.checkAttrs(attrs); err != nil {
		return nil, false, err
	}
	sorted := slices.Clone(attrs)
	slices.Sort(sorted)
	st, err := a.statsOf(ctx, [][]int{sorted})
	if err != nil {
		return nil, false, err
	}
	s := st[0]
	if s.err != nil {
		return nil, false, s.err
	}
	lambda := 1 - confidence
	est := a.model.Marginal(attrs)
	cells = make([]CellBound, len(est))
	if s.kron {
		y, sd, _, _ := a.kronMarginal(sorted)
		y, sd = reorder(a.dom, sorted, y, attrs), reorder(a.dom, sorted, sd, attrs)
		z := zTwoSided(lambda)
		for i, e := range est {
			cells[i] = countInterval(e, y[i]-z*sd[i], y[i]+z*sd[i])
		}
		return cells, true, nil
	}
	if s.supported {
		ybar, sd, _, _ := a.combined(sorted)
		ybar = reorder(a.dom, sorted, ybar, attrs)
		h := zTwoSided(lambda) * sd
		for i, e := range est {
			cells[i] = countInterval(e, ybar[i]-h, ybar[i]+h)
		}
		return cells, true, nil
	}
	b := a.countBound(sorted, s, lambda)
	for i, e := range est {
		cells[i] = countInterval(e, e-b, e+b)
	}
	return cells, false, nil
}

// countInterval is the cell bound of estimate e with interval [lo, hi]
// intersected with the possible counts: [max(0, lo), max(0, hi)]. A true
// count is ≥ 0, so it lies in the clipped interval whenever it lies in
// [lo, hi].
func countInterval(e, lo, hi float64) CellBound {
	return CellBound{Estimate: e, Lower: max(0, lo), Upper: max(0, hi)}
}

// statsOf returns the statistics of the sorted attribute sets, computing
// the missing ones in parallel.
func (a *Analysis) statsOf(ctx context.Context, sets [][]int) ([]*stats, error) {
	out := make([]*stats, len(sets))
	var todo []int
	a.mu.Lock()
	for i, s := range sets {
		if st, ok := a.stats[synth.Key(s)]; ok {
			out[i] = st
		} else {
			todo = append(todo, i)
		}
	}
	a.mu.Unlock()
	if err := par.For(ctx, len(todo), 0, func(k int) { out[todo[k]] = a.compute(sets[todo[k]]) }); err != nil {
		return nil, fmt.Errorf("bounds: %w", err)
	}
	a.mu.Lock()
	for _, i := range todo {
		a.stats[synth.Key(sets[i])] = out[i]
	}
	a.mu.Unlock()
	return out, nil
}

// names spells an attribute set by its column names, for error messages.
func (a *Analysis) names(attrs []int) string {
	out := make([]string, len(attrs))
	for i, x := range attrs {
		out[i] = a.dom.Name(x)
	}
	return "(" + strings.Join(out, ", ") + ")"
}

// compute derives the statistics of a sorted attribute set.
func (a *Analysis) compute(attrs []int) *stats {
	s := &stats{n: a.dom.Cells(attrs)}
	xhat := a.model.Marginal(attrs)
	if ybar, sd, round, ok := a.combined(attrs); ok {
		s.supported, s.round, s.dist, s.sd = true, round, marginal.L1(xhat, ybar), sd
		return s
	}
	if y, sd, lip, ok := a.kronMarginal(attrs); ok {
		s.supported, s.kron, s.dist, s.lip = true, true, marginal.L1(xhat, y), lip
		for _, v := range sd {
			s.meanAbs += sqrt2pi * v
		}
		return s
	}
	if a.measuredOnly {
		s.err = fmt.Errorf("bounds: %w: the marginal on %s was not measured; for this mechanism only measured marginals (and their subsets) have bounds", ErrUncovered, a.names(attrs))
		return s
	}
	t := a.last[synth.Key(attrs)]
	if t == 0 {
		s.err = fmt.Errorf("bounds: %w: the marginal on %s was neither measured nor a selection candidate", ErrUncovered, a.names(attrs))
		return s
	}
	rd, meas, snap := a.rounds[t], a.selected[t], a.snaps[t]
	if rd == nil || meas == nil || snap == nil || !slices.Equal(rd.Selected, meas.Attrs) || !(rd.Epsilon > 0) || !(rd.Sensitivity > 0) {
		s.err = fmt.Errorf("bounds: %w: round %d (last candidate round of %s) is not recorded with its measurement and snapshot", ErrInvalid, t, a.names(attrs))
		return s
	}
	// A snapshot kept as marginals has those of the candidates whose last
	// round it is and of the round's measured set.
	lacks := func() *stats {
		s.err = fmt.Errorf("bounds: %w: the snapshot of round %d (last candidate round of %s) lacks the marginals it needs", ErrInvalid, t, a.names(attrs))
		return s
	}
	prev, ok := snap.Marginal(attrs)
	if !ok {
		return lacks()
	}
	s.round = t
	s.drift = marginal.L1(prev, xhat)
	a.mu.Lock()
	o, ok := a.observed[t]
	a.mu.Unlock()
	if !ok {
		prevMeas, ok := snap.Marginal(meas.Attrs)
		if !ok {
			s.round = 0
			return lacks()
		}
		o = marginal.L1(meas.Y, a.observe(meas, prevMeas))
		a.mu.Lock()
		a.observed[t] = o
		a.mu.Unlock()
	}
	s.observed = o
	return s
}

// observe returns what measurement m observes of x, the marginal on
// m.Attrs: x itself, or (⊗ m.Kron)·x for a Kronecker measurement (an AIM
// coarse twin, whose selection score was on the binned marginal).
func (a *Analysis) observe(m *synth.Measurement, x []float64) []float64 {
	if m.Kron == nil {
		return x
	}
	sizes := make([]int, len(m.Attrs))
	for j, v := range m.Attrs {
		sizes[j] = a.dom.Size(v)
	}
	return pgm.KronMul(m.Kron, sizes, x, false)
}

// addKron indexes a Kronecker measurement.
func (a *Analysis) addKron(m *synth.Measurement) (*kronMeas, error) {
	if len(m.Attrs) == 0 || len(m.Kron) != len(m.Attrs) || !(m.Sigma > 0) || !slices.IsSorted(m.Attrs) {
		return nil, errors.New("malformed Kronecker measurement")
	}
	sizes := make([]int, len(m.Attrs))
	for j, x := range m.Attrs {
		if x < 0 || x >= a.dom.Len() {
			return nil, fmt.Errorf("attribute %d", x)
		}
		sizes[j] = a.dom.Size(x)
	}
	k, err := newKronMeas(m, sizes)
	if err != nil {
		return nil, err
	}
	a.kron = append(a.kron, k)
	return k, nil
}

func (a *Analysis) checkAttrs(attrs []int) error {
	if len(attrs) == 0 {
		return fmt.Errorf("bounds: %w: no attributes", ErrInvalid)
	}
	for i, x := range attrs {
		if x < 0 || x >= a.dom.Len() || slices.Contains(attrs[:i], x) {
			return fmt.Errorf("bounds: %w: attributes %v", ErrInvalid, attrs)
		}
	}
	return nil
}

// combined returns the inverse-variance combination ȳ_r of every
// measurement of a superset of attrs (sorted), summed down to attrs, with its
// per-cell standard deviation σ̄_r and the last round among those
// measurements; ok is false when no measurement contains attrs.
func (a *Analysis) combined(attrs []int) (ybar []float64, sd float64, round int, ok bool) {
	n := a.dom.Cells(attrs)
	var buf []float64
	prec := 0.0
	for i := range a.meas {
		m := &a.meas[i]
		if !marginal.Subset(attrs, m.Attrs) {
			continue
		}
		if ybar == nil {
			ybar = make([]float64, n)
		}
		// Summing n_{r_i}/n_r independent cells: variance σ_i²·n_{r_i}/n_r.
		v := m.Sigma * m.Sigma * float64(len(m.Y)) / float64(n)
		buf = marginal.ProjectTo(buf, a.dom, m.Attrs, m.Y, attrs)
		for c, y := range buf {
			ybar[c] += y / v
		}
		prec += 1 / v
		round = max(round, m.Round)
	}
	if prec == 0 {
		return nil, 0, 0, false
	}
	for c := range ybar {
		ybar[c] /= prec
	}
	return ybar, math.Sqrt(1 / prec), round, true
}

// candWeight is AIM's candidate weight w_r = Σ_i c_i·|r ∩ r_i|.
func (a *Analysis) candWeight(attrs []int) float64 {
	w := 0.0
	for _, m := range a.w {
		w += m.Weight * float64(marginal.Intersect(attrs, m.Attrs))
	}
	return w
}

// countBound bounds ‖M_r(D) − M_r(p̂)‖₁ for sorted attrs with statistics s
// (no error) with probability at least 1 − lambda.
func (a *Analysis) countBound(attrs []int, s *stats, lambda float64) float64 {
	if s.kron {
		// Gaussian concentration of the L1 norm of a correlated Gaussian
		// vector: ‖e‖₁ ≤ E‖e‖₁ + L·sqrt(2·log(1/λ)).
		return s.dist + s.meanAbs + s.lip*math.Sqrt(2*math.Log(1/lambda))
	}
	if s.supported {
		return s.dist + s.sd*l1NoiseBound(s.n, lambda)
	}
	return a.selectionBound(attrs, s, lambda) + s.drift
}

// selectionBound bounds ‖M_r(D) − M_r(p̂_{t−1})‖₁ for a candidate r of
// round t = s.round that was not measured, with probability at least
// 1 − lambda (λ₁ = λ₂ = λ/2).
func (a *Analysis) selectionBound(attrs []int, s *stats, lambda float64) float64 {
	lam1, lam2 := lambda/2, lambda/2
	rd, meas := a.rounds[s.round], a.selected[s.round]
	wr := a.candWeight(attrs)
	if !(wr > 0) {
		return math.Inf(1) // a zero-weight candidate's score says nothing
	}
	nt := len(meas.Y)
	lt := signalBound(s.observed, meas.Sigma, nt, lam2) // ‖M_{r_t}(D) − M_{r_t}(p̂_{t−1})‖₁
	qt := a.candWeight(meas.Attrs) * (lt - sqrt2pi*rd.Sigma*float64(nt))
	others := max(1, float64(rd.Candidates-1))
	gap := 2 * rd.Sensitivity / rd.Epsilon * math.Log(others/lam1)
	return max(0, sqrt2pi*rd.Sigma*float64(s.n)+(qt+gap)/wr)
}

// zTwoSided is Φ⁻¹(1 − λ/2).
func zTwoSided(lambda float64) float64 {
	return stdNormal.Quantile(1 - lambda/2)
}

func sum(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s
}

// reorder lays out x, a marginal over sorted, over order (the same
// attributes in another order).
func reorder(dom *pgm.Domain, sorted []int, x []float64, order []int) []float64 {
	if slices.Equal(sorted, order) {
		return x
	}
	k := len(order)
	// stride[j] is the stride in x of order[j].
	stride := make([]int, k)
	s := 1
	for i := len(sorted) - 1; i >= 0; i-- {
		j := slices.Index(order, sorted[i])
		stride[j] = s
		s *= dom.Size(sorted[i])
	}
	out := make([]float64, len(x))
	idx := make([]int, k)
	src := 0
	for i := range out {
		out[i] = x[src]
		for j := k - 1; j >= 0; j-- {
			idx[j]++
			src += stride[j]
			if idx[j] < dom.Size(order[j]) {
				break
			}
			src -= stride[j] * idx[j]
			idx[j] = 0
		}
	}
	return out
}
