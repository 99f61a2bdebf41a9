package bounds

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/gonum/mat"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/hdmm"
	"github.com/dpsql/dpsql/synth/internal/marginal"
)

// kronMeas is a released Kronecker measurement y = (⊗ A_j)·x + z, z iid
// N(0, σ²) (hdmm_pgm), with the pseudo-inverses of its factors.
type kronMeas struct {
	m     *synth.Measurement
	sizes []int        // attribute sizes of m.Attrs
	rows  []int        // rows of each factor
	pinv  []*mat.Dense // A_j⁺; nil for an identity factor
}

func newKronMeas(m *synth.Measurement, sizes []int) (*kronMeas, error) {
	k := &kronMeas{m: m, sizes: sizes, rows: make([]int, len(sizes)), pinv: make([]*mat.Dense, len(sizes))}
	want := 1
	for j, f := range m.Kron {
		k.rows[j] = sizes[j]
		if f != nil {
			r, c := f.Dims()
			if c != sizes[j] {
				return nil, fmt.Errorf("factor %d has %d columns for %d values", j, c, sizes[j])
			}
			k.rows[j], k.pinv[j] = r, hdmm.Pinv(f)
		}
		want *= k.rows[j]
	}
	if len(m.Y) != want {
		return nil, fmt.Errorf("%d values for %d queries", len(m.Y), want)
	}
	return k, nil
}

// through returns c = q·A_j⁺ (q a 1×n row), and whether q lies in the row
// space of A_j, i.e. c·y_j estimates q·x without bias: c·A_j = q.
func (k *kronMeas) through(j int, q *mat.Dense) (*mat.Dense, bool) {
	if k.pinv[j] == nil {
		return q, true
	}
	var c, back mat.Dense
	c.Mul(q, k.pinv[j])
	back.Mul(&c, k.m.Kron[j])
	return &c, mat.EqualApprox(&back, q, 1e-8)
}

// kronOps builds, for the marginal on sub (sorted, ⊆ m.Attrs), the
// estimator B = ⊗ B_j with B_j = A_j⁺ on a kept attribute (it must have
// full column rank) and 1ᵀA_j⁺ on a summed one (1ᵀ must be in A_j's row
// space); ok is false when the strategy does not determine the marginal.
func (k *kronMeas) kronOps(sub []int) (ops []*mat.Dense, ok bool) {
	ops = make([]*mat.Dense, len(k.sizes))
	for j, a := range k.m.Attrs {
		n := k.sizes[j]
		if slices.Contains(sub, a) {
			if k.pinv[j] == nil {
				continue // identity
			}
			var back mat.Dense
			back.Mul(k.pinv[j], k.m.Kron[j])
			if !mat.EqualApprox(&back, eye(n), 1e-8) {
				return nil, false
			}
			ops[j] = k.pinv[j]
			continue
		}
		c, ok := k.through(j, ones(n))
		if !ok {
			return nil, false
		}
		ops[j] = c
	}
	return ops, true
}

// marginal is the unbiased estimate of the marginal on sub from k, the
// standard deviation of each of its cells, and L, the Lipschitz constant
// of the noise's map to the L1 norm of the estimate's error: the error is
// B·z with z ~ N(0, σ²I), and ‖B·z‖₁ ≤ √n·‖B‖₂·‖z‖₂ with the spectral
// norm of a Kronecker product the product of the factors'.
func (k *kronMeas) marginal(sub []int) (y, sd []float64, lip float64, ok bool) {
	ops, ok := k.kronOps(sub)
	if !ok {
		return nil, nil, 0, false
	}
	y = kronApply(ops, k.rows, k.m.Y)
	norms := make([][]float64, len(ops))
	spec := 1.0
	for j, b := range ops {
		if b == nil {
			norms[j] = onesVec(k.sizes[j])
			continue
		}
		norms[j] = rowNorms(b)
		spec *= spectral(b)
	}
	sd = kronOuter(k.m.Sigma, norms)
	return y, sd, k.m.Sigma * math.Sqrt(float64(len(y))) * spec, true
}

// query is the unbiased estimate of the query ⊗ q_j over sub (sorted,
// ⊆ m.Attrs; q[i] is the 1×n row of sub[i], summed attributes get 1ᵀ) and
// its standard deviation σ·∏‖q_j A_j⁺‖₂; ok is false when the query is
// not in the strategy's row space.
func (k *kronMeas) query(sub []int, q []*mat.Dense) (est, sd float64, ok bool) {
	cs := make([]*mat.Dense, len(k.sizes))
	sd = k.m.Sigma
	for j, a := range k.m.Attrs {
		qj := ones(k.sizes[j])
		if i := slices.Index(sub, a); i >= 0 {
			qj = q[i]
		}
		c, ok := k.through(j, qj)
		if !ok {
			return 0, 0, false
		}
		cs[j] = c
		sd *= mat.Norm(c, 2)
	}
	return kronApply(cs, k.rows, k.m.Y)[0], sd, true
}

// kronApply is (⊗ ops_j)·x for x laid out over rows (nil = identity).
func kronApply(ops []*mat.Dense, rows []int, x []float64) []float64 {
	cur := x
	dims := slices.Clone(rows)
	for j, op := range ops {
		if op == nil {
			continue
		}
		r, _ := op.Dims()
		left, right := 1, 1
		for i := range j {
			left *= dims[i]
		}
		for i := j + 1; i < len(dims); i++ {
			right *= dims[i]
		}
		next := make([]float64, left*r*right)
		for l := range left {
			for o := range r {
				for i := range dims[j] {
					w := op.At(o, i)
					if w == 0 {
						continue
					}
					src := cur[(l*dims[j]+i)*right : (l*dims[j]+i+1)*right]
					dst := next[(l*r+o)*right : (l*r+o+1)*right]
					for t, v := range src {
						dst[t] += w * v
					}
				}
			}
		}
		cur, dims[j] = next, r
	}
	return cur
}

// kronOuter is s·(⊗ v_j) as a flat vector, row-major.
func kronOuter(s float64, vs [][]float64) []float64 {
	out := []float64{s}
	for _, v := range vs {
		next := make([]float64, 0, len(out)*len(v))
		for _, a := range out {
			for _, b := range v {
				next = append(next, a*b)
			}
		}
		out = next
	}
	return out
}

func eye(n int) *mat.Dense {
	m := mat.NewDense(n, n, nil)
	for i := range n {
		m.Set(i, i, 1)
	}
	return m
}

func ones(n int) *mat.Dense {
	return mat.NewDense(1, n, onesVec(n))
}

func onesVec(n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = 1
	}
	return x
}

func rowNorms(m *mat.Dense) []float64 {
	r, _ := m.Dims()
	out := make([]float64, r)
	for i := range r {
		out[i] = mat.Norm(m.RowView(i), 2)
	}
	return out
}

// spectral is the largest singular value of m.
func spectral(m *mat.Dense) float64 {
	var svd mat.SVD
	if !svd.Factorize(m, mat.SVDNone) {
		return mat.Norm(m, 2) // Frobenius: never smaller
	}
	return svd.Values(nil)[0]
}

// QueryBound is a confidence interval for one linear counting query.
type QueryBound struct {
	// Estimate is the model's answer (an expected count).
	Estimate float64
	// Lower and Upper bound the true count, clipped to [0, ∞) as in
	// CellBound.
	Lower, Upper float64
	// Error bounds |true count − Estimate| at the same confidence.
	Error float64
	// Supported: the interval comes from unbiased estimates from the
	// measurements (exact Gaussian standard deviation); otherwise from
	// the L1 bound of the marginal.
	Supported bool
}

// Query returns a confidence interval for the counting query
// q = ⊗ q_j on the marginal over attrs (distinct attributes, ascending):
// q[j] is a 0/1 (or any real) weight per value of attrs[j], for example a
// unit row for a grouped attribute and a prefix for `income <= x`. The
// interval covers the true count with at least the given probability.
//
// Supported: every measurement that contains attrs and whose query space
// contains q (identity measurements always do; a Kronecker strategy when
// q_j·A_j⁺·A_j = q_j) gives an unbiased Gaussian estimate of q·x with a
// known standard deviation; they are independent and are combined by
// inverse variance into ŷ with deviation s, and the interval is ŷ ± h with
// h = z·s + ½ (halfWidth), z = Φ⁻¹(1 − λ/2). The error bound of the
// model's answer is |Estimate − ŷ| + h (triangle inequality). Unsupported (AIM's
// candidates): |q·(x − x̂)| ≤ max|q_c|·‖x − x̂‖₁ ≤ max|q_c|·B with B the
// count bound of the marginal at λ.
func (a *Analysis) Query(ctx context.Context, attrs []int, q [][]float64, confidence float64) (QueryBound, error) {
	if err := checkConfidence(confidence); err != nil {
		return QueryBound{}, err
	}
	if err := a.checkAttrs(attrs); err != nil {
		return QueryBound{}, err
	}
	if !slices.IsSorted(attrs) || len(q) != len(attrs) {
		return QueryBound{}, fmt.Errorf("bounds: %w: query attributes %v must ascend, with one weight row each", ErrInvalid, attrs)
	}
	rows := make([]*mat.Dense, len(q))
	sizes := make([]int, len(attrs))
	qmax := 1.0
	for j, x := range attrs {
		sizes[j] = a.dom.Size(x)
		if len(q[j]) != sizes[j] {
			return QueryBound{}, fmt.Errorf("bounds: %w: %d weights for %s's %d values", ErrInvalid, len(q[j]), a.dom.Name(x), sizes[j])
		}
		m := 0.0
		for _, v := range q[j] {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return QueryBound{}, fmt.Errorf("bounds: %w: weight %v", ErrInvalid, v)
			}
			m = max(m, math.Abs(v))
		}
		qmax *= m
		rows[j] = mat.NewDense(1, sizes[j], slices.Clone(q[j]))
	}
	st, err := a.statsOf(ctx, [][]int{attrs})
	if err != nil {
		return QueryBound{}, err
	}
	s := st[0]
	est := kronApply(rows, sizes, a.modelMarginal(attrs))[0]
	lambda := 1 - confidence

	// Unbiased, independent estimates of q·x, combined by inverse variance.
	var num, prec float64
	if ybar, sd, _, ok := a.combined(attrs); ok {
		v := sd
		for _, r := range rows {
			v *= mat.Norm(r, 2)
		}
		if v > 0 {
			num += kronApply(rows, sizes, ybar)[0] / (v * v)
			prec += 1 / (v * v)
		}
	}
	for _, k := range a.kron {
		if !marginal.Subset(attrs, k.m.Attrs) {
			continue
		}
		if y, sd, ok := k.query(attrs, rows); ok && sd > 0 {
			num += y / (sd * sd)
			prec += 1 / (sd * sd)
		}
	}
	if prec > 0 {
		yhat, h := num/prec, halfWidth(lambda, math.Sqrt(1/prec))
		return QueryBound{Estimate: est, Lower: max(0, yhat-h), Upper: max(0, yhat+h),
			Error: math.Abs(est-yhat) + h, Supported: true}, nil
	}
	if s.err != nil && a.measuredOnly {
		for _, k := range a.kron {
			if marginal.Subset(attrs, k.m.Attrs) {
				return QueryBound{}, fmt.Errorf("bounds: %w: this query on %s is not determined by the measurements of that set (their Kronecker strategies do not span it)", ErrUncovered, a.names(attrs))
			}
		}
	}
	if s.err != nil {
		return QueryBound{}, s.err
	}
	// No measurement answers q itself: the marginal's L1 bound.
	b := qmax * a.countBound(attrs, s, lambda)
	return QueryBound{Estimate: est, Lower: max(0, est-b), Upper: max(0, est+b), Error: b, Supported: false}, nil
}

// halfWidth is the half-width of the two-sided interval at level λ for an
// estimate with deviation sd: z·sd + ½, z = Φ⁻¹(1 − λ/2). The ½ is a
// continuity correction for the discrete Gaussian noise: for one noisy
// count X ~ N_Z(0, σ²), P(|X| > z·σ + ½) = 2·P(X ≥ ⌊z·σ + ½⌋ + 1) ≤
// 2·P(σ·Z ≥ z·σ) = λ whenever z ≥ 1 (confidence ≥ 0.69): the tail sum of
// the convex e^{−k²/2σ²} is at most its integral from half a step before,
// and the discrete normaliser is at least σ·√(2π). Without it a single
// count's interval at σ = 10, 80% fails 21% of the time, not 20%. For
// sums and least-squares combinations of many counts the Gaussian
// approximation is close and the ½ is slack.
func halfWidth(lambda, sd float64) float64 { return zTwoSided(lambda)*sd + 0.5 }

// modelMarginal is the model's marginal on sorted attrs, computed once.
func (a *Analysis) modelMarginal(attrs []int) []float64 {
	key := synth.Key(attrs)
	a.mu.Lock()
	m, ok := a.margs[key]
	a.mu.Unlock()
	if ok {
		return m
	}
	m = a.model.Marginal(attrs)
	a.mu.Lock()
	if len(a.margs) > 1024 {
		a.margs = map[string][]float64{}
	}
	a.margs[key] = m
	a.mu.Unlock()
	return m
}

// kronMarginal is the best unbiased estimate of the marginal on sorted
// attrs from a single Kronecker measurement (smallest total variance; the
// variances are public, so choosing by them keeps the guarantee).
func (a *Analysis) kronMarginal(attrs []int) (y, sd []float64, lip float64, ok bool) {
	best := math.Inf(1)
	for _, k := range a.kron {
		if !marginal.Subset(attrs, k.m.Attrs) {
			continue
		}
		ky, ksd, kl, kok := k.marginal(attrs)
		if !kok {
			continue
		}
		v := 0.0
		for _, s := range ksd {
			v += s * s
		}
		if v < best {
			best, y, sd, lip, ok = v, ky, ksd, kl, true
		}
	}
	return y, sd, lip, ok
}

// answersMechanisms are the answers-only mechanisms whose released
// measurements carry iid Gaussian noise of their stated σ (identity, or
// hdmm_lls's Kronecker strategies), so that MeasuredQuery applies.
var answersMechanisms = map[string]bool{"gaussian": true, "hdmm_lls": true}

// Measured bounds the answers an answers-only table gives from one of its
// released measurements (NewMeasured; MeasuredQuery).
type Measured struct {
	k     *kronMeas
	sizes []int
}

// NewMeasured prepares the bounds of the answers from ms[k], one of the
// measurements of an answers-only release (as released: hdmm_lls's
// Kronecker y with its strategy, or a plain noisy marginal); sizes are the
// domain's attribute sizes, note is the release's note, which tells
// hdmm_lls releases from before the Kronecker measurements were stored.
// It fails with ErrNoBounds for mechanisms whose measurements are not iid
// Gaussian of their stated σ.
func NewMeasured(mechanism, note string, ms []synth.Measurement, k int, sizes []int) (*Measured, error) {
	mech := strings.ToLower(mechanism)
	if !answersMechanisms[mech] {
		return nil, fmt.Errorf("%w for mechanism %s", ErrNoBounds, mechanism)
	}
	if k < 0 || k >= len(ms) {
		return nil, fmt.Errorf("bounds: %w: measurement %d of %d", ErrInvalid, k, len(ms))
	}
	m := &ms[k]
	if mech == "hdmm_lls" && !slices.ContainsFunc(ms, func(m synth.Measurement) bool { return m.Kron != nil }) &&
		strings.Contains(note, "non-identity factors") {
		return nil, fmt.Errorf("%w for this hdmm_lls table: it was released before its Kronecker measurements were stored (recreate it)", ErrNoBounds)
	}
	if m.Query != nil || m.Coarse != nil || !(m.Sigma > 0) || !slices.IsSorted(m.Attrs) {
		return nil, fmt.Errorf("bounds: %w: measurement on %v", ErrInvalid, m.Attrs)
	}
	msizes := make([]int, len(m.Attrs))
	for j, a := range m.Attrs {
		if a < 0 || a >= len(sizes) {
			return nil, fmt.Errorf("bounds: %w: attribute %d", ErrInvalid, a)
		}
		msizes[j] = sizes[a]
	}
	mm := *m
	if mm.Kron == nil {
		mm.Kron = make([]*mat.Dense, len(m.Attrs)) // the identity strategy
	}
	km, err := newKronMeas(&mm, msizes)
	if err != nil {
		return nil, fmt.Errorf("bounds: %w: %w", ErrInvalid, err)
	}
	return &Measured{k: km, sizes: sizes}, nil
}

// Query bounds the answer to the counting query ⊗ q_j on attrs
// (ascending, a subset of the measurement's; q as in Analysis.Query). The
// answer is the least-squares estimate ŷ = q·A⁺·y (for a plain marginal,
// the sum of its cells), which is unbiased with deviation
// s = σ·∏‖q_j A_j⁺‖₂ (hdmm.Plan.QueryStd), clipped at 0 as the engine
// clips counts: Estimate = max(0, ŷ). The interval is ŷ ± h (h = z·s + ½,
// halfWidth) clipped at 0, and Error = h bounds |true − Estimate|
// (clipping at 0 only moves toward a count, which is never negative).
func (m *Measured) Query(attrs []int, q [][]float64, confidence float64) (QueryBound, error) {
	if err := checkConfidence(confidence); err != nil {
		return QueryBound{}, err
	}
	if !slices.IsSorted(attrs) || len(q) != len(attrs) || !marginal.Subset(attrs, m.k.m.Attrs) {
		return QueryBound{}, fmt.Errorf("bounds: %w: query on %v from the measurement on %v", ErrInvalid, attrs, m.k.m.Attrs)
	}
	rows := make([]*mat.Dense, len(q))
	for j, a := range attrs {
		if len(q[j]) != m.sizes[a] {
			return QueryBound{}, fmt.Errorf("bounds: %w: %d weights for attribute %d of %d values", ErrInvalid, len(q[j]), a, m.sizes[a])
		}
		rows[j] = mat.NewDense(1, m.sizes[a], slices.Clone(q[j]))
	}
	yhat, sd, ok := m.k.query(attrs, rows)
	if !ok {
		return QueryBound{}, fmt.Errorf("bounds: %w: this query is not determined by the released measurement (its Kronecker strategy does not span it)", ErrUncovered)
	}
	h := halfWidth(1-confidence, sd)
	return QueryBound{Estimate: max(0, yhat), Lower: max(0, yhat-h), Upper: max(0, yhat+h), Error: h, Supported: true}, nil
}

// MeasuredQuery is NewMeasured followed by Measured.Query.
func MeasuredQuery(mechanism, note string, ms []synth.Measurement, k int, sizes []int, attrs []int, q [][]float64, confidence float64) (QueryBound, error) {
	m, err := NewMeasured(mechanism, note, ms, k, sizes)
	if err != nil {
		return QueryBound{}, err
	}
	return m.Query(attrs, q, confidence)
}
