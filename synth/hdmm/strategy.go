package hdmm

import (
	"math"
	"strconv"

	"gonum.org/v1/gonum/mat"
)

// MaxFactorSize is the largest attribute for which a strategy other than
// the identity is considered (the choice takes an SVD of the factor).
const MaxFactorSize = 1024

// Factor is the strategy chosen for one attribute of one workload marginal.
type Factor struct {
	Kind string     // "identity", "hierarchical b=…", "workload"
	A    *mat.Dense // the strategy matrix; nil for the identity
	Pinv *mat.Dense // A⁺; nil for the identity
	// Sens2 is the largest squared column norm of A (its squared L2
	// sensitivity on one record); Err is ‖W·A⁺‖²_F, the workload's
	// variance per unit noise variance.
	Sens2, Err float64
}

// Identity returns the identity strategy for workload factor w (nil = the
// identity workload) on an attribute of n values.
func Identity(w *mat.Dense, n int) Factor {
	e := float64(n)
	if w != nil {
		e = mat.Norm(w, 2) // Frobenius
		e *= e
	}
	return Factor{Kind: "identity", Sens2: 1, Err: e}
}

// Hierarchical returns the b-ary tree of ranges over n ordered values, all
// levels from the leaves up to the root, as rows of a 0/1 matrix.
func Hierarchical(n, b int) *mat.Dense {
	type rng struct{ lo, hi int } // [lo, hi)
	level := make([]rng, n)
	for i := range n {
		level[i] = rng{i, i + 1}
	}
	all := append([]rng(nil), level...)
	for len(level) > 1 {
		var next []rng
		for i := 0; i < len(level); i += b {
			j := min(i+b, len(level))
			next = append(next, rng{level[i].lo, level[j-1].hi})
		}
		all = append(all, next...)
		level = next
	}
	a := mat.NewDense(len(all), n, nil)
	for i, r := range all {
		for v := r.lo; v < r.hi; v++ {
			a.Set(i, v, 1)
		}
	}
	return a
}

// Prefix returns the n×n prefix-range workload: row z counts values ≤ z.
func Prefix(n int) *mat.Dense {
	p := mat.NewDense(n, n, nil)
	for z := range n {
		for v := 0; v <= z; v++ {
			p.Set(z, v, 1)
		}
	}
	return p
}

// Pinv is the Moore–Penrose pseudo-inverse of a.
func Pinv(a *mat.Dense) *mat.Dense {
	var svd mat.SVD
	r, c := a.Dims()
	if !svd.Factorize(a, mat.SVDThin) {
		panic("hdmm: SVD failed")
	}
	var u, v mat.Dense
	svd.UTo(&u)
	svd.VTo(&v)
	s := svd.Values(nil)
	tol := float64(max(r, c)) * s[0] * 1e-12
	// A⁺ = V·S⁺·Uᵀ
	vs := mat.DenseCopyOf(&v)
	for j, x := range s {
		inv := 0.0
		if x > tol {
			inv = 1 / x
		}
		for i := range c {
			vs.Set(i, j, vs.At(i, j)*inv)
		}
	}
	var p mat.Dense
	p.Mul(vs, u.T())
	return &p
}

// Choose returns the strategy for workload factor w on an attribute of n
// values that minimises Sens2·Err, the factor's share of the expected
// squared workload error at fixed ρ: the identity, a hierarchy of
// branching 2, 4, 8 or 16, or w itself (best for few queries, e.g. one
// WHERE condition). w nil (the marginal itself) takes the identity.
func Choose(w *mat.Dense, n int) Factor {
	best := Identity(w, n)
	if w == nil || n > MaxFactorSize || n == 1 {
		return best
	}
	try := func(kind string, a *mat.Dense) {
		p := Pinv(a)
		// a must answer w exactly: w·a⁺·a = w.
		var wp, back mat.Dense
		wp.Mul(w, p)
		back.Mul(&wp, a)
		if !mat.EqualApprox(&back, w, 1e-8) {
			return
		}
		e := mat.Norm(&wp, 2)
		f := Factor{Kind: kind, A: a, Pinv: p, Sens2: maxColNorm2(a), Err: e * e}
		if f.Sens2*f.Err < best.Sens2*best.Err*(1-1e-9) {
			best = f
		}
	}
	for _, b := range []int{2, 4, 8, 16} {
		if b < n {
			try("hierarchical b="+strconv.Itoa(b), Hierarchical(n, b))
		}
	}
	if r, _ := w.Dims(); r <= 4*n && isBinary(w) {
		try("workload", mat.DenseCopyOf(w))
	}
	return best
}

func maxColNorm2(a *mat.Dense) float64 {
	r, c := a.Dims()
	m := 0.0
	for j := range c {
		s := 0.0
		for i := range r {
			s += a.At(i, j) * a.At(i, j)
		}
		m = max(m, s)
	}
	return m
}

// isBinary reports whether every entry is 0 or 1: the discrete Gaussian
// needs integer-valued queries.
func isBinary(a *mat.Dense) bool {
	r, c := a.Dims()
	for i := range r {
		for j := range c {
			if v := a.At(i, j); v != 0 && v != 1 {
				return false
			}
		}
	}
	return true
}

// Allocate returns the noise scales σ_c minimising Σ w_c²·σ_c²·T_c (the
// expected weighted squared workload error) subject to the zCDP budget
// Σ Δ_c²/(2σ_c²) = ρ: by Lagrange, σ_c² = K·Δ_c/(w_c·√T_c) with
// K = Σ_c w_c·Δ_c·√T_c / (2ρ). Δ_c² = sens2[c], T_c = errs[c]; every
// weight must be positive.
func Allocate(rho float64, weights, sens2, errs []float64) []float64 {
	var k float64
	for c, w := range weights {
		k += w * math.Sqrt(sens2[c]) * math.Sqrt(errs[c])
	}
	k /= 2 * rho
	sig := make([]float64, len(weights))
	for c, w := range weights {
		sig[c] = math.Sqrt(k * math.Sqrt(sens2[c]) / (w * math.Sqrt(errs[c])))
	}
	return sig
}

// QueryStd returns, for every query of the entry's workload W_C = ⊗ W_j
// (row-major over the factors' rows), the standard deviation of its LLS
// answer W_C·A_C⁺·y_C: σ_C·∏_j ‖(W_j A_j⁺)_{i_j,·}‖₂, since the noise is
// independent with variance σ_C² per measured query. The answers are
// unbiased, so z·QueryStd is a two-sided Gaussian confidence interval:
// the error bounds of range (and any factored) queries under hdmm_lls.
// w is the entry's workload factors (nil entries, or w nil, mean the
// identity).
func (p *Plan) QueryStd(w []*mat.Dense, sizes []int) []float64 {
	norms := make([][]float64, len(p.Factors))
	for j, f := range p.Factors {
		var wf *mat.Dense
		if w != nil {
			wf = w[j]
		}
		switch {
		case wf == nil && f.Pinv == nil:
			norms[j] = ones(sizes[j])
		case f.Pinv == nil:
			norms[j] = rowNorms(wf)
		case wf == nil:
			norms[j] = rowNorms(f.Pinv)
		default:
			var m mat.Dense
			m.Mul(wf, f.Pinv)
			norms[j] = rowNorms(&m)
		}
	}
	out := []float64{p.Sigma}
	for _, nj := range norms {
		next := make([]float64, 0, len(out)*len(nj))
		for _, v := range out {
			for _, x := range nj {
				next = append(next, v*x)
			}
		}
		out = next
	}
	return out
}

func ones(n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = 1
	}
	return x
}

func rowNorms(m *mat.Dense) []float64 {
	r, c := m.Dims()
	out := make([]float64, r)
	for i := range r {
		s := 0.0
		for j := range c {
			s += m.At(i, j) * m.At(i, j)
		}
		out[i] = math.Sqrt(s)
	}
	return out
}
