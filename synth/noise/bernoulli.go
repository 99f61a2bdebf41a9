package noise

import (
	"math/big"
	"math/bits"
)

// This file holds the exact Bernoulli trials every sampler is built from
// (Canonne–Kamath–Steinke 2020, Algorithms 1 and 2). A probability is always
// a ratio of integers and every decision compares integers with uniformly
// random integers or bits, so no rounding ever happens.

// bernoulliRat64 returns true with probability n/d, for n ≤ d, d > 0.
func (s *Source) bernoulliRat64(n, d uint64) bool { return s.uniform(d) < n }

// bernoulliExpUnit64 returns true with probability exp(−n/d) for
// 0 ≤ n/d ≤ 1, d > 0 (CKS Algorithm 1, first case): with K counting up from
// 1, draw Bernoulli(γ/K) until one fails; the result is whether K is odd.
func (s *Source) bernoulliExpUnit64(n, d uint64) bool {
	k := uint64(1)
	// Bernoulli(n/(dK)) is (U₂ = 0) ∧ (U₁ < n) with U₂ uniform on [0,K) and
	// U₁ uniform on [0,d): U₂·d+U₁ is uniform on [0,dK) and below n iff both
	// hold, as n ≤ d. This avoids forming d·K.
	for s.uniform(k) == 0 && s.bernoulliRat64(n, d) {
		k++
	}
	return k&1 == 1
}

// bernoulliExpMinus1 returns true with probability exp(−1).
func (s *Source) bernoulliExpMinus1() bool { return s.bernoulliExpUnit64(1, 1) }

// bernoulliExp64 returns true with probability exp(−n/d), d > 0 (CKS
// Algorithm 1): one exp(−1) trial per whole unit of n/d, then the fraction.
func (s *Source) bernoulliExp64(n, d uint64) bool {
	for q := n / d; q > 0; q-- {
		if !s.bernoulliExpMinus1() {
			return false
		}
	}
	return s.bernoulliExpUnit64(n%d, d)
}

// u128 is an unsigned 128-bit integer.
type u128 struct{ hi, lo uint64 }

func mul128(x, y uint64) u128 {
	hi, lo := bits.Mul64(x, y)
	return u128{hi, lo}
}

func (x u128) less(y u128) bool { return x.hi < y.hi || (x.hi == y.hi && x.lo < y.lo) }

func (x u128) sub(y u128) u128 {
	lo, borrow := bits.Sub64(x.lo, y.lo, 0)
	hi, _ := bits.Sub64(x.hi, y.hi, borrow)
	return u128{hi, lo}
}

func (x u128) shl1() u128 { return u128{x.hi<<1 | x.lo>>63, x.lo << 1} }

func (x u128) isZero() bool { return x.hi|x.lo == 0 }

// shl returns x<<k and whether no set bit was shifted out past bit 126, so
// the result is below 2¹²⁷.
func (x u128) shl(k uint) (u128, bool) {
	if x.isZero() {
		return x, true
	}
	if k >= 127 {
		return u128{}, false
	}
	var lz int
	if x.hi != 0 {
		lz = bits.LeadingZeros64(x.hi)
	} else {
		lz = 64 + bits.LeadingZeros64(x.lo)
	}
	if uint(lz) < k+1 {
		return u128{}, false
	}
	switch {
	case k == 0:
		return x, true
	case k >= 64:
		return u128{x.lo << (k - 64), 0}, true
	default:
		return u128{x.hi<<k | x.lo>>(64-k), x.lo << k}, true
	}
}

// bernoulliRat128 returns true with probability r/b for r < b < 2¹²⁷. It
// compares the binary expansion of r/b, produced lazily by long division,
// with uniformly random bits; it uses two bits on average.
func (s *Source) bernoulliRat128(r, b u128) bool {
	for !r.isZero() {
		r = r.shl1()
		p := !r.less(b)
		if p {
			r = r.sub(b)
		}
		if u := s.bit() == 1; u != p {
			return p // the first differing bit decides U < r/b
		}
	}
	return false // r/b's expansion ended with U's bits equal so far: U ≥ r/b
}

// bernoulliExp128 returns true with probability exp(−a/b) for 0 < b < 2¹²⁷.
func (s *Source) bernoulliExp128(a, b u128) bool {
	for !a.less(b) {
		a = a.sub(b)
		if !s.bernoulliExpMinus1() {
			return false
		}
	}
	k := uint64(1)
	for s.uniform(k) == 0 && s.bernoulliRat128(a, b) {
		k++
	}
	return k&1 == 1
}

// bigScratch is working storage for the math/big fallbacks.
type bigScratch struct {
	q, r, t big.Int
}

// bernoulliRatBig returns true with probability r/b for 0 ≤ r < b; it
// overwrites sc.t.
func (s *Source) bernoulliRatBig(r, b *big.Int, sc *bigScratch) bool {
	x := sc.t.Set(r)
	for x.Sign() != 0 {
		x.Lsh(x, 1)
		p := x.Cmp(b) >= 0
		if p {
			x.Sub(x, b)
		}
		if u := s.bit() == 1; u != p {
			return p
		}
	}
	return false
}

// bernoulliExpBig returns true with probability exp(−a/b) for a ≥ 0, b > 0.
func (s *Source) bernoulliExpBig(a, b *big.Int, sc *bigScratch) bool {
	sc.q.QuoRem(a, b, &sc.r)
	for sc.q.Sign() > 0 {
		if !s.bernoulliExpMinus1() {
			return false
		}
		sc.q.Sub(&sc.q, bigOne)
	}
	k := uint64(1)
	for s.uniform(k) == 0 && s.bernoulliRatBig(&sc.r, b, sc) {
		k++
	}
	return k&1 == 1
}

var bigOne = big.NewInt(1)
