// Package amloop is the Adaptive Measurements loop (Liu, Vietri, Wu,
// NeurIPS 2021, Alg. 1, with the marginal trick of App. A.1) that GEM,
// GEM^Pub, RAP and RAPsoftmax share: each round selects K whole workload
// marginals with the exponential mechanism, measures them with discrete
// Gaussian noise, and hands all measurements so far to the mechanism's
// update of its representation, a B × d' mixture of product
// distributions (a Model).
//
// # Privacy
//
// dpsql's neighbours differ by adding or removing one record, and
// measurements are counts (not the paper's fractions of n). With
// ε₀ = sqrt(2ρ/(K·T·(α² + (1−α)²))), each of the K·T selections is the
// exponential mechanism with ε = 2αε₀ on the score
// w_r·max_y |M_r(D)[y] − n_r·q_y(P)|, where n_r = Σ_y M_r(D)[y] and q(P)
// the mixture's normalised marginal: adding or removing a record moves
// that cell's count and n_r by one, and so every term by at most 1, so the
// score's sensitivity is max w_r. It costs (2αε₀)²/8. Each measurement adds
// discrete Gaussian noise of σ = 1/((1−α)ε₀) to every cell (ℓ₂
// sensitivity 1), costing 1/(2σ²). A round costs ρ/T, the run ρ. Already
// measured marginals are no longer candidates (the reference code's −∞
// score); if the workload has fewer than K·T marginals, T (then K) is
// lowered so that every marginal can be measured once and the whole ρ is
// still spent.
//
// The targets the model is fitted to are post-processing: the noisy counts
// divided by n̂, clipped to [0, 1] (the reference code clips). Without a
// prior, n̂ is the inverse-variance weighted mean of the measured
// marginals' noisy totals; with one (GEM^Pub's public table), the
// least-squares scale of the noisy counts against the prior's shapes
// (ScaleEstimate), whose noise does not grow with a marginal's cells.
package amloop

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/internal/prodq"
	"github.com/dpsql/dpsql/synth/pgm"
)

// Model is a trainable mixture of B product distributions over the one-hot
// layout of the domain.
type Model interface {
	// Forward returns the B × d' row-major mixture; the slice may be
	// reused by the next call.
	Forward() []float64
	// Backward sets Grads from dp, the gradient of the loss with respect to
	// the last Forward's mixture (dp may be overwritten).
	Backward(dp []float64)
	Params() []float64
	Grads() []float64
	Rows() int
}

// Config is the loop's shape.
type Config struct {
	Name     string  // mechanism name, for errors
	Rounds   int     // T
	PerRound int     // K, marginals selected per round
	Alpha    float64 // share of ε₀ on selection
	// Prior, if non-nil, gives n̂ as ScaleEstimate against it; its shapes
	// are indexed like the workload and must not depend on the private data.
	Prior *Prior
}

// Prior is a reference distribution for n̂: for each workload marginal
// its normalised shape q (Σ_y q_y = 1) and an unbiased estimate of
// Σ_y p_y², the power of the distribution q estimates.
type Prior struct {
	Shape [][]float64
	Power []float64
}

// NewPrior builds the prior of a sample's workload marginals (counts of
// unit-weight rows, one slice per workload marginal): shape = counts/m and
// power = (m·Σq² − 1)/(m − 1), unbiased for Σp² under multinomial
// sampling of m rows (Σq² alone is biased up by (1 − Σp²)/m, which would
// bias n̂ down by several percent for a flat marginal of a small public
// table). It returns nil if the sample has fewer than two rows.
func NewPrior(counts [][]float64) *Prior {
	pr := &Prior{Shape: make([][]float64, len(counts)), Power: make([]float64, len(counts))}
	for i, c := range counts {
		m := 0.0
		for _, v := range c {
			m += v
		}
		if !(m > 1) {
			return nil
		}
		q, sq := make([]float64, len(c)), 0.0
		for y, v := range c {
			q[y] = v / m
			sq += q[y] * q[y]
		}
		pr.Shape[i] = q
		pr.Power[i] = max((m*sq-1)/(m-1), 0)
	}
	return pr
}

// TotalEstimate is n̂ without a prior: the inverse-variance weighted mean
// of the noisy marginals' totals (all cells have noise σ, so a total's
// variance is σ² times its cells), and that variance in units of σ².
func TotalEstimate(noisy [][]float64) (nHat, variance float64) {
	var num, den float64
	for _, y := range noisy {
		tot := 0.0
		for _, v := range y {
			tot += v
		}
		w := 1 / float64(len(y))
		num += w * tot
		den += w
	}
	return num / den, 1 / den
}

// ScaleEstimate is n̂ as the least-squares scale of the noisy counts ỹ_i
// against the prior's shapes q_i: Σ_i q_i·ỹ_i / Σ_i Σ_y p_y², with the
// power's unbiased estimate in the denominator. With ỹ = n·p + noise of σ
// per cell and q an independent sample of p, it is consistent for n, and
// its noise is σ/sqrt(Σ_i ‖q_i‖²): for a concentrated marginal far below
// the σ·sqrt(cells) of its total. idx maps each noisy marginal to its
// workload index. ok is false if the estimate is not positive and finite.
func ScaleEstimate(noisy [][]float64, idx []int, pr *Prior) (nHat float64, ok bool) {
	var num, den float64
	for i, y := range noisy {
		q := pr.Shape[idx[i]]
		for c, v := range y {
			num += q[c] * v
		}
		den += pr.Power[idx[i]]
	}
	nHat = num / den
	return nHat, nHat > 0 && !math.IsInf(nHat, 0) && !math.IsNaN(nHat)
}

// Budget returns ε₀ and the per-selection ε and per-measurement σ for ρ
// over T rounds of K selections with split α.
func Budget(rho float64, T, K int, alpha float64) (eps0, eps, sigma float64) {
	eps0 = math.Sqrt(2 * rho / (float64(K*T) * (alpha*alpha + (1-alpha)*(1-alpha))))
	return eps0, 2 * alpha * eps0, 1 / ((1 - alpha) * eps0)
}

// Shape returns the rounds and selections per round actually run for a
// workload of m marginals: T·K ≤ m.
func Shape(T, K, m int) (int, int) {
	K = min(K, m)
	return min(T, m/K), K
}

// State is what the update of round t sees.
type State struct {
	In       *synth.Input
	Layout   *prodq.Layout
	Workload []synth.Marginal // canonical
	Model    Model
	Round    int // current round, from 1
	Rounds   int // T actually run

	// Attrs, Noisy and Target are the measured marginals in order: their
	// attribute sets, noisy counts and targets (Noisy/n̂ clipped to [0,1]).
	Attrs  [][]int
	Noisy  [][]float64
	Target [][]float64
	NHat   float64

	// NHatTotal is TotalEstimate's n̂, reported for comparison.
	NHatTotal float64

	Scratch prodq.Scratch
	sigma   float64
	prior   *Prior
	picked  []int // workload index of each measured marginal
}

// Sigma is the standard deviation of every measurement's noise (counts).
func (s *State) Sigma() float64 { return s.sigma }

// Answers writes into dst[i] the mixture p's marginal over Attrs[i] and
// returns dst (grown to len(Attrs)).
func (s *State) Answers(dst [][]float64, p []float64) [][]float64 {
	for len(dst) < len(s.Attrs) {
		dst = append(dst, nil)
	}
	for i, a := range s.Attrs {
		dst[i] = s.Layout.Answer(dst[i], &s.Scratch, p, s.Model.Rows(), a)
	}
	return dst[:len(s.Attrs)]
}

// retarget recomputes n̂ and the targets from the noisy counts. With a
// prior, n̂ is ScaleEstimate, kept within 3 standard deviations of
// TotalEstimate (a guard against a prior far from the data: both are
// post-processing of the measurements and the prior) and replaced by it
// if not positive and finite.
func (s *State) retarget() {
	tot, v := TotalEstimate(s.Noisy)
	s.NHatTotal = tot
	s.NHat = tot
	if s.prior != nil {
		if ls, ok := ScaleEstimate(s.Noisy, s.picked, s.prior); ok {
			sd := 3 * s.sigma * math.Sqrt(v)
			s.NHat = min(max(ls, tot-sd), tot+sd)
		}
	}
	s.NHat = max(s.NHat, 1)
	for i, y := range s.Noisy {
		t := s.Target[i][:0]
		for _, v := range y {
			t = append(t, min(max(v/s.NHat, 0), 1))
		}
		s.Target[i] = t
	}
}

// Update trains the model on the state's targets in round s.Round.
type Update func(ctx context.Context, s *State) error

// Run runs the loop and returns the result with its measurements, rounds
// and ρ used (no rows: the caller samples them) and the final state. On
// error the result holds the ρ spent so far.
func Run(ctx context.Context, in *synth.Input, cfg Config, w []synth.Marginal, model Model, update Update) (*synth.Result, *State, error) {
	dom := in.Data.Domain()
	sizes := make([]int, dom.Len())
	for a := range sizes {
		sizes[a] = dom.Size(a)
	}
	T, K := Shape(cfg.Rounds, cfg.PerRound, len(w))
	_, eps, sigma := Budget(in.Rho, T, K, cfg.Alpha)
	st := &State{In: in, Layout: prodq.NewLayout(sizes), Workload: w, Model: model, Rounds: T, sigma: sigma, prior: cfg.Prior}
	if p := cfg.Prior; p != nil && (len(p.Shape) != len(w) || len(p.Power) != len(w)) {
		return &synth.Result{}, st, fmt.Errorf("%s: prior of %d marginals for a workload of %d", cfg.Name, len(p.Shape), len(w))
	}
	res := &synth.Result{}
	fail := func(err error) (*synth.Result, *State, error) {
		return res, st, fmt.Errorf("%s: %w", cfg.Name, err)
	}
	sets := make([][]int, len(w))
	delta := 0.0
	for i, m := range w {
		sets[i] = m.Attrs
		delta = max(delta, m.Weight)
	}
	truth, err := in.Data.Marginals(ctx, sets)
	if err != nil {
		return fail(fmt.Errorf("true marginals: %w", err))
	}
	totals := make([]float64, len(w))
	for i, x := range truth {
		for _, v := range x {
			totals[i] += v
		}
	}
	measured := make([]bool, len(w))
	scores := make([]float64, len(w))
	var ans []float64
	for t := 1; t <= T; t++ {
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		st.Round = t
		p := model.Forward()
		for i, m := range w {
			if measured[i] {
				scores[i] = math.Inf(-1)
				continue
			}
			ans = st.Layout.Answer(ans, &st.Scratch, p, model.Rows(), m.Attrs)
			e := 0.0
			for y, c := range truth[i] {
				e = max(e, math.Abs(c-totals[i]*ans[y]))
			}
			scores[i] = m.Weight * e
		}
		var selected []int // the round's first selection (all K are in Measurements)
		for range K {
			pick := in.Noise.Exponential(scores, eps, delta)
			scores[pick] = math.Inf(-1)
			measured[pick] = true
			y := slices.Clone(truth[pick])
			in.Noise.AddDiscreteGaussian(y, sigma)
			res.Measurements = append(res.Measurements, synth.Measurement{
				Measurement: pgm.Measurement{Attrs: sets[pick], Y: y, Sigma: sigma}, Round: t, Epsilon: eps})
			res.RhoUsed += eps*eps/8 + 1/(2*sigma*sigma)
			st.Attrs = append(st.Attrs, sets[pick])
			st.Noisy = append(st.Noisy, y)
			st.picked = append(st.picked, pick)
			st.Target = append(st.Target, nil)
			if selected == nil {
				selected = sets[pick]
			}
		}
		st.retarget()
		candidates := 0
		for _, m := range measured {
			if !m {
				candidates++
			}
		}
		res.Rounds = append(res.Rounds, synth.Round{Round: t, Epsilon: eps, Sigma: sigma, Sensitivity: delta,
			Candidates: candidates + K, Selected: selected, RhoUsed: res.RhoUsed})
		if err := update(ctx, st); err != nil {
			return fail(fmt.Errorf("round %d update: %w", t, err))
		}
		in.Report(synth.Status{Phase: "round", Round: t, RhoUsed: res.RhoUsed,
			ModelSize: float64(8*len(model.Params())) / (1 << 20)})
	}
	return res, st, nil
}

// CheckBudget reports whether the samplers accept the loop's parameters
// for this input (call before the first cancellation check).
func CheckBudget(in *synth.Input, cfg Config, w []synth.Marginal) error {
	T, K := Shape(cfg.Rounds, cfg.PerRound, len(w))
	_, eps, sigma := Budget(in.Rho, T, K, cfg.Alpha)
	delta := 0.0
	for _, m := range w {
		delta = max(delta, m.Weight)
	}
	if err := synth.CheckNoise([]float64{sigma}, []float64{eps / delta}); err != nil {
		return fmt.Errorf("%s: %w", cfg.Name, err)
	}
	return nil
}

// Sample draws rows records from the mixture p (B × d' over layout l):
// every component gives ⌊rows/B⌋ rows, rows mod B distinct components
// drawn uniformly one more, in a random order, and each row draws every
// attribute from its component's block, which is normalised first (RAP's
// relaxed rows are clipped at 0; an all-zero block is uniform). Each
// component's expected share is still 1/B, so the rows' expected
// marginals are the mixture's, but the cell counts lose the variance of
// drawing the component per row (stratified sampling), which at large ε
// is a visible part of the released rows' error (docs/gem.md).
// Post-processing: rng is in.Post().
func Sample(l *prodq.Layout, p []float64, B, rows int, rng interface {
	IntN(int) int
	Float64() float64
}) [][]uint16 {
	out := make([][]uint16, len(l.Size))
	for a := range out {
		out[a] = make([]uint16, rows)
	}
	comp := make([]int32, rows)
	for r := range comp {
		comp[r] = int32(r % B)
	}
	// The last rows mod B entries are components 0..rows mod B − 1: give
	// their extra row to distinct uniform components instead.
	if extra := rows % B; extra > 0 {
		for i, b := range distinctComponents(B, extra, rng) {
			comp[rows-extra+i] = int32(b)
		}
	}
	for r := rows - 1; r > 0; r-- {
		k := rng.IntN(r + 1)
		comp[r], comp[k] = comp[k], comp[r]
	}
	for r := range rows {
		b := int(comp[r])
		row := p[b*l.Width : (b+1)*l.Width]
		for a, s := range l.Size {
			blk := row[l.Off[a] : l.Off[a]+s]
			sum := 0.0
			for _, v := range blk {
				sum += max(v, 0)
			}
			if !(sum > 0) {
				out[a][r] = uint16(rng.IntN(s))
				continue
			}
			u := rng.Float64() * sum
			v := 0
			for ; v < s-1; v++ {
				u -= max(blk[v], 0)
				if u < 0 {
					break
				}
			}
			out[a][r] = uint16(v)
		}
	}
	return out
}

// OutRows is the number of rows to sample: in.Rows, or n̂ rounded and
// clamped to synth.MaxRows.
func OutRows(in *synth.Input, nHat float64) int {
	if in.Rows > 0 {
		return in.Rows
	}
	return int(min(math.Round(nHat), synth.MaxRows))
}

// MaxBytes bounds the memory a mechanism may plan for (its matrices and
// the product-query scratch): a request above it is refused before the run.
const MaxBytes = 2 << 30

// ScratchBytes is the memory of the product-query scratch for answering
// and differentiating the workload's marginals on a mixture of B rows:
// the outer product and its gradient (B × c each, c the cells of all but
// the smallest attribute) and the transposed answer.
func ScratchBytes(sizes []int, w []synth.Marginal, B int) float64 {
	worst := 0.0
	for _, m := range w {
		cells, small := 1.0, math.Inf(1)
		for _, a := range m.Attrs {
			cells *= float64(sizes[a])
			small = min(small, float64(sizes[a]))
		}
		worst = max(worst, 8*(2*float64(B)*cells/small+2*cells))
	}
	return worst
}

// CheckMemory refuses a plan of more than MaxBytes.
func CheckMemory(name string, bytes float64) error {
	if bytes > MaxBytes {
		return fmt.Errorf("%s: %w: needs about %.0f MB of memory, above the limit of %d MB (lower BATCH, HIDDEN, LATENT or RELAXED)",
			name, synth.ErrInvalidInput, bytes/(1<<20), MaxBytes>>20)
	}
	return nil
}

// distinctComponents draws n distinct components of B uniformly (the
// first n entries of a random permutation): the ones that give the
// rows mod B extra rows.
func distinctComponents(B, n int, rng interface{ IntN(int) int }) []int {
	perm := make([]int, B)
	for i := range perm {
		perm[i] = i
	}
	for i := range n {
		k := i + rng.IntN(B-i)
		perm[i], perm[k] = perm[k], perm[i]
	}
	return perm[:n]
}

// SampleBalanced is Sample with the draws inside each component balanced:
// a component that gives m rows draws each attribute's m values by
// systematic sampling from its block (one uniform offset, then m points
// 1/m apart through the cumulative distribution), shuffled independently
// per attribute over the component's rows. Every row is still distributed
// as its component's product distribution (the offset and the shuffle make
// each row's value of an attribute a draw from the block, independent
// across attributes), so the rows' expected marginals are the mixture's;
// but each component's one-way counts are within one of m times its
// probabilities, which removes most of the sampling noise inside a
// component that stratification over components leaves (docs/gem.md).
// Post-processing: rng is in.Post().
func SampleBalanced(l *prodq.Layout, p []float64, B, rows int, rng interface {
	IntN(int) int
	Float64() float64
}) [][]uint16 {
	out := make([][]uint16, len(l.Size))
	for a := range out {
		out[a] = make([]uint16, rows)
	}
	count := make([]int, B)
	for b := range count {
		count[b] = rows / B
	}
	if extra := rows % B; extra > 0 {
		for _, b := range distinctComponents(B, extra, rng) {
			count[b]++
		}
	}
	start := 0
	for b, m := range count {
		if m == 0 {
			continue
		}
		row := p[b*l.Width : (b+1)*l.Width]
		for a, s := range l.Size {
			blk := row[l.Off[a] : l.Off[a]+s]
			col := out[a][start : start+m]
			sum := 0.0
			for _, v := range blk {
				sum += max(v, 0)
			}
			if !(sum > 0) {
				for i := range col {
					col[i] = uint16(rng.IntN(s))
				}
				continue
			}
			// Points (u0 + i)/m · sum, i = 0..m−1, through the cumulative sums.
			step := sum / float64(m)
			u := rng.Float64() * step
			v, cum := 0, max(blk[0], 0)
			for i := range col {
				for u >= cum && v < s-1 {
					v++
					cum += max(blk[v], 0)
				}
				col[i] = uint16(v)
				u += step
			}
			for i := m - 1; i > 0; i-- {
				k := rng.IntN(i + 1)
				col[i], col[k] = col[k], col[i]
			}
		}
		start += m
	}
	// Rows in a random order, not grouped by component.
	for r := rows - 1; r > 0; r-- {
		k := rng.IntN(r + 1)
		for a := range out {
			out[a][r], out[a][k] = out[a][k], out[a][r]
		}
	}
	return out
}
