package nn

import "math"

// Adam is the Adam optimiser (Kingma & Ba) with PyTorch's defaults
// β₁ = 0.9, β₂ = 0.999, ε = 1e-8 and bias correction.
type Adam struct {
	Beta1, Beta2, Eps float64
	m, v              []float64
	t                 int
}

// NewAdam returns an optimiser for n parameters.
func NewAdam(n int) *Adam {
	return &Adam{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, m: make([]float64, n), v: make([]float64, n)}
}

// Reset forgets the moments (GEM starts a fresh optimiser every round).
func (a *Adam) Reset() {
	clear(a.m)
	clear(a.v)
	a.t = 0
}

// Step moves params against grads with learning rate lr.
func (a *Adam) Step(params, grads []float64, lr float64) {
	a.t++
	c1 := 1 - math.Pow(a.Beta1, float64(a.t))
	c2 := 1 - math.Pow(a.Beta2, float64(a.t))
	step := lr / c1
	sc2 := 1 / math.Sqrt(c2)
	b1, b2 := a.Beta1, a.Beta2
	m, v := a.m[:len(params)], a.v[:len(params)]
	for i, g := range grads[:len(params)] {
		m[i] = b1*m[i] + (1-b1)*g
		v[i] = b2*v[i] + (1-b2)*g*g
		params[i] -= step * m[i] / (math.Sqrt(v[i])*sc2 + a.Eps)
	}
}

// Cosine is the cosine-annealed learning rate of step i of n, from lr down
// to lrMin (PyTorch's CosineAnnealingLR with T_max = n).
func Cosine(lr, lrMin float64, i, n int) float64 {
	if n <= 0 {
		return lr
	}
	return lrMin + (lr-lrMin)*(1+math.Cos(math.Pi*float64(i)/float64(n)))/2
}

// EMA updates ema ← β·ema + (1−β)·x in place.
func EMA(ema, x []float64, beta float64) {
	for i, v := range x[:len(ema)] {
		ema[i] = beta*ema[i] + (1-beta)*v
	}
}
