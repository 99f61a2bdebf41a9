package noise

import (
	"fmt"
	"math"
	"math/big"
	"math/bits"
)

// The discrete Gaussian sampler accepts σ in [minSigma, maxSigma]: every
// proposal then fits in an int64, and σ² is a normal float64, so the rounding
// check in sigmaSquared is exact.
const (
	minSigma = 0x1p-500
	maxSigma = 0x1p40
)

// DiscreteGaussian samples N_Z(0, sigma²) exactly (Canonne–Kamath–Steinke).
//
// P(x) ∝ exp(−x²/(2σ²)) over the integers, where σ² is the float64 product
// sigma·sigma rounded up (see the package documentation). It panics unless
// 2⁻⁵⁰⁰ ≤ sigma ≤ 2⁴⁰.
func (s *Source) DiscreteGaussian(sigma float64) int64 {
	return s.discreteGaussian(s.params(sigma))
}

// AddDiscreteGaussian adds independent N_Z(0, sigma²) noise to every entry of dst.
// It panics unless 2⁻⁵⁰⁰ ≤ sigma ≤ 2⁴⁰.
func (s *Source) AddDiscreteGaussian(dst []float64, sigma float64) {
	p := s.params(sigma)
	for i := range dst {
		dst[i] += float64(s.discreteGaussian(p))
	}
}

// params returns the sampler parameters for sigma, cached across calls with
// the same sigma.
func (s *Source) params(sigma float64) *dgParams {
	if s.dg == nil {
		s.dg = new(dgParams)
	} else if s.dgSigma == sigma {
		return s.dg
	}
	s.dg.init(sigma) // panics on a bad sigma before it is cached
	s.dgSigma = sigma
	return s.dg
}

// dgParams is σ² = N/D as exact integers, with D a power of two, and the
// scale t = ⌊σ⌋+1 of the discrete Laplace proposal.
type dgParams struct {
	t uint64

	// Fast path, valid when fast: N = n, D = 2^k, b = 2·N·D·t² < 2¹²⁷.
	fast bool
	n    uint64
	k    uint
	b    u128

	// Exact values for the math/big fallback.
	bigN, bigD, bigB, bigT big.Int
}

// sigmaSquared returns the smallest float64 not below the exact square of
// sigma. The residual of a product, σ·σ − fl(σ·σ), is exactly representable,
// so the FMA below computes its sign exactly.
func sigmaSquared(sigma float64) float64 {
	if !(sigma >= minSigma && sigma <= maxSigma) {
		panic("noise: sigma must be in [2^-500, 2^40]")
	}
	v := sigma * sigma
	if math.FMA(sigma, sigma, -v) > 0 {
		v = math.Nextafter(v, math.Inf(1))
	}
	return v
}

func (p *dgParams) init(sigma float64) {
	v := sigmaSquared(sigma)

	// v = m·2^e exactly with m odd.
	frac, exp := math.Frexp(v)
	m := uint64(math.Ldexp(frac, 53))
	e := exp - 53
	tz := bits.TrailingZeros64(m)
	m >>= uint(tz)
	e += tz

	p.bigN.SetUint64(m)
	p.bigD.SetUint64(1)
	if e >= 0 {
		p.bigN.Lsh(&p.bigN, uint(e))
	} else {
		p.bigD.Lsh(&p.bigD, uint(-e))
	}

	// t = ⌊√(N/D)⌋ + 1 = ⌊√⌊N/D⌋⌋ + 1.
	var fl big.Int
	fl.Quo(&p.bigN, &p.bigD)
	p.bigT.Sqrt(&fl)
	p.bigT.Add(&p.bigT, bigOne)
	p.t = p.bigT.Uint64() // σ ≤ 2⁴⁰, so t fits

	p.bigB.Mul(&p.bigT, &p.bigT)
	p.bigB.Mul(&p.bigB, &p.bigN)
	p.bigB.Mul(&p.bigB, &p.bigD)
	p.bigB.Lsh(&p.bigB, 1)

	// Fast path: N and t² in 64 bits, b below 2¹²⁷.
	p.fast = false
	if p.bigN.BitLen() > 63 || p.t >= 1<<32 {
		return
	}
	p.n = p.bigN.Uint64()
	p.k = uint(p.bigD.BitLen() - 1)
	b, ok := mul128(p.n, p.t*p.t).shl(p.k + 1)
	if !ok {
		return
	}
	p.b = b
	p.fast = true
}

// discreteGaussian is CKS Algorithm 3: propose Y from the discrete Laplace
// with scale t and accept with probability exp(−(|Y| − σ²/t)²/(2σ²)). The
// acceptance exponent is γ = (|Y|·D·t − N)² / (2·N·D·t²).
func (s *Source) discreteGaussian(p *dgParams) int64 {
	for {
		y := s.discreteLaplace(p.t)
		ay := uint64(y)
		if y < 0 {
			ay = uint64(-y)
		}
		if a, ok := p.numerator(ay); ok {
			if s.bernoulliExp128(mul128(a, a), p.b) {
				return y
			}
			continue
		}
		if s.acceptBig(p, ay) {
			return y
		}
	}
}

// numerator returns |y·t·2^k − n| when the fast path applies and it fits in
// 64 bits.
func (p *dgParams) numerator(y uint64) (uint64, bool) {
	if !p.fast {
		return 0, false
	}
	hi, yt := bits.Mul64(y, p.t)
	if hi != 0 || (yt != 0 && uint(bits.Len64(yt))+p.k > 64) {
		return 0, false
	}
	yt <<= p.k
	if yt >= p.n {
		return yt - p.n, true
	}
	return p.n - yt, true
}

// acceptBig is the acceptance test of discreteGaussian in math/big.
func (s *Source) acceptBig(p *dgParams, y uint64) bool {
	var sc bigScratch
	var a big.Int
	a.SetUint64(y)
	a.Mul(&a, &p.bigT)
	a.Mul(&a, &p.bigD)
	a.Sub(&a, &p.bigN)
	a.Mul(&a, &a)
	return s.bernoulliExpBig(&a, &p.bigB, &sc)
}

// discreteLaplace samples P(x) ∝ exp(−|x|/t) over the integers (CKS
// Algorithm 2 with s = 1): x = U + t·V with U uniform on [0,t) kept with
// probability exp(−U/t) and V geometric, a random sign, and −0 rejected.
func (s *Source) discreteLaplace(t uint64) int64 {
	for {
		u := s.uniform(t)
		if !s.bernoulliExpUnit64(u, t) {
			continue
		}
		var v uint64
		for s.bernoulliExpMinus1() {
			v++
		}
		hi, tv := bits.Mul64(t, v)
		x := tv + u
		if hi != 0 || x < tv || x > math.MaxInt64 {
			// P(V ≥ 2²³) < exp(−2²³): this cannot happen.
			panic("noise: discrete Laplace draw overflowed")
		}
		neg := s.bit() == 1
		if neg && x == 0 {
			continue
		}
		if neg {
			return -int64(x)
		}
		return int64(x)
	}
}

// CheckSigma reports whether the discrete Gaussian samplers accept sigma.
// Mechanisms call it on every σ they will use while they validate their
// input, before any budget is charged, so that no sampler panics after.
func CheckSigma(sigma float64) error {
	if !(sigma >= minSigma && sigma <= maxSigma) {
		return fmt.Errorf("noise: noise scale σ = %g is outside the sampler's range [2^-500, 2^40]", sigma)
	}
	return nil
}
