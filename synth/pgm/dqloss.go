package pgm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/dpsql/dpsql/synth/pgm/internal/kernel"
)

// CustomLoss is an estimation loss given as a function of the model's
// marginals over a fixed list of attribute sets, for losses that are not a
// norm of noisy linear measurements: the negative log-likelihood of a
// mechanism whose output depends on the data only through those marginals
// (DualQuery's sampled queries, spec private-pgm-and-hierarchical.md I.2
// and I.9, Algorithm 5).
type CustomLoss interface {
	// Sets are the attribute sets the loss reads, each ascending.
	Sets() [][]int
	// Eval returns the loss at the marginals x (x[i] over Sets()[i], laid
	// out with the last attribute fastest, probabilities summing to 1) and
	// writes its gradient with respect to x[i] into g[i]. The loss must be
	// convex in x for the fit to be a global optimum.
	Eval(x, g [][]float64) float64
}

// EstimateCustom fits a graphical model whose cliques cover loss.Sets() by
// minimising loss over the marginal polytope with entropic mirror descent
// (Algorithm 1) and Armijo backtracking: θ ← θ − α·∇L, with the trial step
// accepted when L(p') ≤ L(p) + ½⟨∇L, p' − p⟩, halved otherwise (at most
// 25 times), and doubled after an accepted step. The first step is
// opts.StepSize, or 1/max|∇L| when it is 0. opts.Total (required, > 0) is
// the record count the model stands for; opts.Iters, Tol, WarmStart,
// ExtraCliques, Stats and Progress act as in Estimate; Method and Loss are
// ignored.
func EstimateCustom(ctx context.Context, dom *Domain, loss CustomLoss, opts *EstimateOptions) (*Model, error) {
	var o EstimateOptions
	if opts != nil {
		o = *opts
	}
	if o.Iters <= 0 {
		o.Iters = 1000
	}
	if !(o.Total > 0) || math.IsInf(o.Total, 0) {
		return nil, fmt.Errorf("pgm: custom-loss estimation needs a positive finite total, got %v", o.Total)
	}
	sets := loss.Sets()
	if len(sets) == 0 {
		return nil, errors.New("pgm: custom loss reads no marginal")
	}
	all := make([][]int, 0, len(sets)+len(o.ExtraCliques))
	for i, s := range sets {
		if err := dom.checkAttrs(s); err != nil {
			return nil, fmt.Errorf("pgm: custom loss set %d: %w", i, err)
		}
		if !slices.IsSorted(s) {
			return nil, fmt.Errorf("pgm: custom loss set %d (%v) is not ascending", i, s)
		}
		all = append(all, s)
	}
	for _, c := range o.ExtraCliques {
		if err := dom.checkAttrs(c); err != nil {
			return nil, fmt.Errorf("pgm: extra clique: %w", err)
		}
		all = append(all, c)
	}
	jt, err := newJunctionTree(dom, all, nil)
	if err != nil {
		return nil, err
	}
	theta := make([]float64, jt.total)
	if ws := o.WarmStart; ws != nil {
		if err := warmStart(theta, jt, ws); err != nil {
			return nil, err
		}
	}
	f := &customObjective{jt: jt, loss: loss, sets: sets}
	for _, s := range sets {
		k := jt.containing(s)
		f.clique = append(f.clique, k)
		f.idx = append(f.idx, jt.projMap(k, s))
		n := dom.Cells(s)
		f.x = append(f.x, make([]float64, n))
		f.xTry = append(f.xTry, make([]float64, n))
		f.g = append(f.g, make([]float64, n))
		f.gTry = append(f.gTry, make([]float64, n))
	}
	var stats EstimateStats
	if err := f.descend(ctx, theta, &o, &stats); err != nil {
		return nil, err
	}
	if o.Stats != nil {
		*o.Stats = stats
	}
	return newModel(jt, theta, o.Total), nil
}

// customObjective evaluates a CustomLoss on clique marginals.
type customObjective struct {
	jt     *junctionTree
	loss   CustomLoss
	sets   [][]int
	clique []int
	idx    [][]int32
	// x, g: marginals and gradient at the accepted point; xTry, gTry at
	// the trial point.
	x, g, xTry, gTry [][]float64
}

// eval projects the clique marginals p onto the sets (into xTry) and
// evaluates the loss and its gradient there (into gTry).
func (f *customObjective) eval(p []float64) float64 {
	for i := range f.sets {
		clear(f.xTry[i])
		kernel.Project(f.xTry[i], f.jt.block(p, f.clique[i]), f.idx[i])
	}
	return f.loss.Eval(f.xTry, f.gTry)
}

// accept makes the trial point the accepted one.
func (f *customObjective) accept() {
	f.x, f.xTry = f.xTry, f.x
	f.g, f.gTry = f.gTry, f.g
}

// scatter writes the accepted gradient, broadcast into the cliques, into
// the arena dst and returns its largest magnitude.
func (f *customObjective) scatter(dst []float64) float64 {
	clear(dst)
	var m float64
	for i := range f.sets {
		kernel.Expand(f.jt.block(dst, f.clique[i]), f.g[i], f.idx[i])
	}
	for _, v := range dst {
		m = max(m, math.Abs(v))
	}
	return m
}

// dirDot returns ⟨∇L, p' − p⟩ for the accepted gradient, p the accepted
// point and p' the trial: broadcasting is the adjoint of projecting, so it
// is Σ_i ⟨g_i, x'_i − x_i⟩.
func (f *customObjective) dirDot() float64 {
	var s float64
	for i := range f.sets {
		s -= kernel.DotDiff(f.g[i], f.x[i], f.xTry[i])
	}
	return s
}

func (f *customObjective) descend(ctx context.Context, theta []float64, o *EstimateOptions, st *EstimateStats) error {
	jt := f.jt
	bp := newBPWork(jt)
	pool := newPoolFor(jt.total)
	defer pool.stop()
	bp.team = team{pool}
	n := jt.total
	p, dL := make([]float64, n), make([]float64, n)
	bp.run(p, theta)
	st.OracleCalls++
	loss := f.eval(p)
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		return fmt.Errorf("pgm: custom loss is %v at the start", loss)
	}
	f.accept()
	st.Loss = loss
	prog := newProgressTicker(o, jt)
	prog.tick(0, loss)
	alpha := o.StepSize
	for i := range o.Iters {
		if i > 0 {
			prog.tick(i, loss)
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("pgm: estimation cancelled: %w", err)
		}
		gmax := f.scatter(dL)
		if gmax == 0 {
			return nil
		}
		if alpha <= 0 {
			alpha = 1 / gmax
		}
		accepted := false
		var newLoss float64
		for range maxHalvings {
			bp.runStep(p, theta, -alpha, dL)
			st.OracleCalls++
			newLoss = f.eval(p)
			if newLoss <= loss+0.5*f.dirDot() {
				accepted = true
				break
			}
			alpha *= 0.5
		}
		if !accepted {
			return nil // converged to working precision
		}
		kernel.AxpyTo(theta, theta, -alpha, dL)
		f.accept()
		prev := loss
		loss = newLoss
		alpha *= 2
		st.Iters++
		st.Loss = loss
		if o.Tol > 0 && prev-loss < o.Tol*math.Abs(prev) {
			return nil
		}
	}
	return nil
}
