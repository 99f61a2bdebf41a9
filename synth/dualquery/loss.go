package dualquery

import (
	"context"
	"math"
	"slices"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/pgm"
)

// Loss is the negative log-likelihood of a DualQuery run's draws as a
// function of the workload marginals μ of a candidate distribution
// (McKenna et al. 2019, Alg. 5): the query player is re-simulated with
// q(D) replaced by q(μ), without the best responses, which are released:
//
//	L(μ) = Σ_{t=2..T} [ s·log Z_t(μ) − Σ_i log w_i − Σ_i ±v_{c_i}^t(μ) ]
//	v_c^t(μ) = η·((t−1)·μ_c − cnt_c^t),  Z_t = Σ_c w_c (e^{v_c^t} + e^{−v_c^t})
//
// with cnt_c^t the records x^1..x^{t−1} in cell c, w_c the workload weight
// prior and + for a drawn q, − for a drawn q̄. Round 1 does not depend on
// μ and is left out. L is convex in μ (log-sum-exp of affine functions
// minus affine ones). Its gradient is written by hand:
//
//	∂L/∂μ_c = Σ_t η(t−1)·[ s·(P_t(c) − P_t(c̄)) − (n_t(c) − n_t(c̄)) ]
//
// with n_t the draws of round t.
type Loss struct {
	g     *game
	w     []float64 // prior weight per cell
	logw  []float64 // per marginal
	// scratch
	mu, b, bi, r, ri, ep, em []float64
	cnt                      []int32
	ex, exi                  []float64 // e^{−ηk}, e^{ηk}
}

func newLoss(g *game) *Loss {
	q := g.q
	N := q.Len()
	l := &Loss{g: g, w: make([]float64, N), logw: make([]float64, len(q.Sets))}
	wmax := slices.Max(q.Weights)
	for m, wt := range q.Weights {
		l.logw[m] = math.Log(wt / wmax)
		for c := q.Off[m]; c < q.Off[m+1]; c++ {
			l.w[c] = wt / wmax
		}
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
func (l *Loss) Sets() [][]int { return l.g.q.Sets }

// Eval implements pgm.CustomLoss.
func (l *Loss) Eval(x, grad [][]float64) float64 {
	g, q := l.g, l.g.q
	eta, s := g.eta, float64(g.s)
	// Flatten μ and clear the gradient.
	for m := range q.Sets {
		copy(l.mu[q.Off[m]:q.Off[m+1]], x[m])
		clear(grad[m])
	}
	// The products e^{±η(t−1)μ_c} are carried from round to round
	// (one multiply each) instead of exponentiated: η(t−1)μ ≤ η(T−1) stays
	// far from overflow for the rounds a budget affords (checked below).
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
			var z float64
			var shift float64
			if direct {
				shift = 0
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
			loss += s * (math.Log(z) + shift)
			f := eta * tf * s / z
			for m := range q.Sets {
				gm := grad[m]
				off := q.Off[m]
				for j := range gm {
					c := off + j
					gm[j] += f * (l.ep[c] - l.em[c])
				}
			}
			for _, k := range g.draws[t-1] {
				c := int(k >> 1)
				m := int(q.Marg[c])
				v := eta * (tf*l.mu[c] - float64(l.cnt[c]))
				sign := 1.0
				if k&1 == 1 {
					sign = -1
				}
				loss -= l.logw[m] + sign*v
				grad[m][c-q.Off[m]] -= sign * eta * tf
			}
		}
		x := g.records[t-1]
		for m := range q.Sets {
			l.cnt[q.Cell(m, x)]++
		}
	}
	return loss
}

// estimate fits the model to the draws' likelihood.
func (g *game) estimate(ctx context.Context, in *synth.Input, nhat float64, iters, round int, rhoUsed float64) (*pgm.Model, error) {
	return pgm.EstimateCustom(ctx, in.Data.Domain(), newLoss(g), &pgm.EstimateOptions{
		Iters: iters, Total: nhat, Progress: in.FinalProgress(round, rhoUsed),
	})
}
