package dualquery

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/pgm"
)

// Loss is the negative log-likelihood of a DualQuery run's draws as a
// function of the workload marginals μ of a candidate distribution
// (McKenna et al. 2019, Alg. 5): the query player is re-simulated with
// q(D) replaced by q(μ), without the best responses, which are released.
//
// The model covers a subset S of the workload marginals (all of them when
// they fit the model-size limit; otherwise the most drawn ones that fit),
// and the loss is the likelihood of the draws that fell in S conditioned
// on falling in S — for S = every marginal, exactly Alg. 5's likelihood:
//
//	L(μ) = Σ_{t=2..T} [ s_t·log Z_t(μ) − Σ_{i: c_i ∈ S} ±v_{c_i}^t(μ) ] + const
//	v_c^t(μ) = η·((t−1)·μ_c − cnt_c^t),  Z_t = Σ_{c ∈ S} w_c (e^{v_c^t} + e^{−v_c^t})
//
// with cnt_c^t the records x^1..x^{t−1} in cell c, w_c the workload-weight
// prior, s_t the draws of round t in S, and + for a drawn q, − for a drawn
// q̄. Round 1 does not depend on μ and is left out. L is convex in μ
// (log-sum-exp of affine functions minus affine ones). Its gradient, by
// hand:
//
//	∂L/∂μ_c = Σ_t η(t−1)·[ s_t·(P_t(c) − P_t(c̄)) − (n_t(c) − n_t(c̄)) ]
//
// with n_t the draws of round t and P_t the re-simulated distribution on S.
type Loss struct {
	g    *game
	sel  []int   // the marginals in S
	sets [][]int // their attributes
	off  []int   // local cell offsets of S's marginals
	w    []float64
	// Per round t (index t−1): the draws in S as local cell<<1|negated.
	draws [][]int32
	cells [][]int32 // per record: its local cell in each marginal of S
	// scratch
	mu, b, bi, r, ri, ep, em []float64
	cnt                      []int32
	ex, exi                  []float64 // e^{−ηk}, e^{ηk}
}

// newLoss builds the loss over the marginals sel of g's workload.
func newLoss(g *game, sel []int) *Loss {
	q := g.q
	l := &Loss{g: g, sel: sel, off: []int{0}}
	wmax := slices.Max(q.Weights)
	local := map[int]int{} // global marginal → position in sel
	for k, m := range sel {
		local[m] = k
		l.sets = append(l.sets, q.Sets[m])
		n := q.Off[m+1] - q.Off[m]
		l.off = append(l.off, l.off[k]+n)
		for range n {
			l.w = append(l.w, q.Weights[m]/wmax)
		}
	}
	N := l.off[len(sel)]
	for _, drawn := range g.draws {
		var in []int32
		for _, d := range drawn {
			c := int(d >> 1)
			m := int(q.Marg[c])
			if k, ok := local[m]; ok {
				in = append(in, int32(l.off[k]+c-q.Off[m])<<1|d&1)
			}
		}
		l.draws = append(l.draws, in)
	}
	for _, x := range g.records {
		cs := make([]int32, len(sel))
		for k, m := range sel {
			cs[k] = int32(l.off[k] + q.Cell(m, x) - q.Off[m])
		}
		l.cells = append(l.cells, cs)
	}
	l.mu, l.b, l.bi, l.r, l.ri, l.ep, l.em = make([]float64, N), make([]float64, N), make([]float64, N),
		make([]float64, N), make([]float64, N), make([]float64, N), make([]float64, N)
	l.cnt = make([]int32, N)
	l.ex, l.exi = make([]float64, g.T+1), make([]float64, g.T+1)
	for k := range l.ex {
		l.ex[k] = math.Exp(-g.eta * float64(k))
		l.exi[k] = math.Exp(g.eta * float64(k))
	}
	return l
}

// Sets implements pgm.CustomLoss.
func (l *Loss) Sets() [][]int { return l.sets }

// Eval implements pgm.CustomLoss.
func (l *Loss) Eval(x, grad [][]float64) float64 {
	g := l.g
	eta := g.eta
	for k := range l.sets {
		copy(l.mu[l.off[k]:l.off[k+1]], x[k])
		clear(grad[k])
	}
	// The products e^{±η(t−1)μ_c} are carried from round to round (one
	// multiply each) instead of exponentiated; when η·T could overflow
	// them, the exponentials are taken directly with a shift.
	direct := eta*float64(g.T) > 600
	for c, v := range l.mu {
		l.b[c] = math.Exp(eta * v)
		l.bi[c] = 1 / l.b[c]
		l.r[c], l.ri[c] = 1, 1
	}
	clear(l.cnt)
	var loss float64
	for t := 1; t <= g.T; t++ {
		if t >= 2 {
			tf := float64(t - 1)
			var z, shift float64
			if direct {
				for c, v := range l.mu {
					shift = max(shift, math.Abs(eta*(tf*v-float64(l.cnt[c]))))
				}
			}
			for c := range l.mu {
				var ep, em float64
				if direct {
					v := eta * (tf*l.mu[c] - float64(l.cnt[c]))
					ep, em = l.w[c]*math.Exp(v-shift), l.w[c]*math.Exp(-v-shift)
				} else {
					l.r[c] *= l.b[c]
					l.ri[c] *= l.bi[c]
					k := l.cnt[c]
					ep, em = l.w[c]*l.r[c]*l.ex[k], l.w[c]*l.ri[c]*l.exi[k]
				}
				l.ep[c], l.em[c] = ep, em
				z += ep + em
			}
			drawn := l.draws[t-1]
			st := float64(len(drawn))
			if st > 0 {
				loss += st * (math.Log(z) + shift)
				f := eta * tf * st / z
				for k := range l.sets {
					gk := grad[k]
					off := l.off[k]
					for j := range gk {
						gk[j] += f * (l.ep[off+j] - l.em[off+j])
					}
				}
			}
			for _, d := range drawn {
				c := int(d >> 1)
				v := eta * (tf*l.mu[c] - float64(l.cnt[c]))
				sign := 1.0
				if d&1 == 1 {
					sign = -1
				}
				loss -= sign * v
				k, _ := slices.BinarySearch(l.off, c+1)
				grad[k-1][c-l.off[k-1]] -= sign * eta * tf
			}
		}
		for _, c := range l.cells[t-1] {
			l.cnt[c]++
		}
	}
	return loss
}

// modelMarginals picks S: every workload marginal if the model over all of
// them is within limit MB; otherwise first, smallest first, the marginals
// that cover an attribute no earlier one covers (an attribute in no
// marginal of S would be uniform in the model), then the rest in
// decreasing order of their draws (ties by workload order), each kept if
// the model stays within limit.
// The draws are released, so this is post-processing.
func (g *game) modelMarginals(dom *pgm.Domain, limit float64) []int {
	q := g.q
	all := make([]int, len(q.Sets))
	for m := range all {
		all[m] = m
	}
	if pgm.ModelSize(dom, q.Sets) <= limit {
		return all
	}
	n := make([]int, len(q.Sets))
	for _, drawn := range g.draws {
		for _, d := range drawn {
			n[q.Marg[d>>1]]++
		}
	}
	slices.SortStableFunc(all, func(a, b int) int { return n[b] - n[a] })
	var sel []int
	var cliques [][]int
	taken := make([]bool, len(q.Sets))
	covered := make([]bool, dom.Len())
	try := func(m int) {
		if !taken[m] && pgm.ModelSize(dom, append(cliques, q.Sets[m])) <= limit {
			cliques = append(cliques, q.Sets[m])
			sel = append(sel, m)
			taken[m] = true
			for _, a := range q.Sets[m] {
				covered[a] = true
			}
		}
	}
	// Coverage first, smallest marginals first (the most drawn ones are
	// the largest and would exhaust the limit before every attribute is
	// covered).
	small := slices.Clone(all)
	slices.SortStableFunc(small, func(a, b int) int { return dom.Cells(q.Sets[a]) - dom.Cells(q.Sets[b]) })
	for _, m := range small {
		if slices.ContainsFunc(q.Sets[m], func(a int) bool { return !covered[a] }) {
			try(m)
		}
	}
	for _, m := range all {
		try(m)
	}
	slices.Sort(sel)
	return sel
}

// estimate fits the model to the draws' likelihood. The fit starts from a
// model of the records themselves (an L2 fit of S's marginals of the
// records, mixed 9:1 with the uniform distribution, scaled to n̂): the
// likelihood is convex, so the start changes only how many iterations
// reach a good fit, and the records are released (post-processing).
func (g *game) estimate(ctx context.Context, in *synth.Input, nhat float64, iters int, limit float64, round int, rhoUsed float64) (*pgm.Model, error) {
	dom := in.Data.Domain()
	sel := g.modelMarginals(dom, limit)
	loss := newLoss(g, sel)
	meas := make([]pgm.Measurement, len(sel))
	T := float64(len(g.records))
	for k, m := range sel {
		n := loss.off[k+1] - loss.off[k]
		y := make([]float64, n)
		for i := range y {
			y[i] = 0.1 * nhat / float64(n)
		}
		for _, cs := range loss.cells {
			y[int(cs[k])-loss.off[k]] += 0.9 * nhat / T
		}
		meas[k] = pgm.Measurement{Attrs: g.q.Sets[m], Y: y, Sigma: 1}
	}
	start, err := pgm.Estimate(ctx, dom, meas, &pgm.EstimateOptions{Iters: initIters, Total: nhat})
	if err != nil {
		return nil, fmt.Errorf("initial model from the records: %w", err)
	}
	return pgm.EstimateCustom(ctx, dom, loss, &pgm.EstimateOptions{
		Iters: iters, Total: nhat, WarmStart: start, Progress: in.FinalProgress(round, rhoUsed),
	})
}

// initIters is the number of iterations of the initial fit to the records.
const initIters = 50
