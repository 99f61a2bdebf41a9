package oracle

import (
	"errors"
	"math"
	"math/bits"
	"slices"
)

// Bits is a source of uniformly random 64-bit words: the privacy noise
// source (*noise.Source) in the mechanisms.
type Bits interface{ Uint64() uint64 }

// Sampler draws i with probability ∝ exp(u_i) for float64 exponents u (the
// exponential mechanism with its scaling folded into u).
//
// The draw is exact for the exponents it is given, in the sense of
// synth/noise: every decision compares uniformly random bits with the
// exact binary expansion of a float64 or with a uniform integer, never a
// rounded probability. It is a two-stage rejection sampler. With M = max u
// and x_i = M − u_i ≥ 0 (rounded once), candidates are bucketed by level
// k = ⌊x_i⌋; a level is drawn with probability ∝ n_k·e^{−k} (n_k its size),
// a member uniformly, and the member is kept with probability
// e^{−(x_i−k)} ≥ e^{−1}. The level draw is itself a rejection from the
// uniform over the occupied levels, kept with probability
// exp(−(s* − s_k)), s_k = ln n_k − k; ln n_k is the one rounded quantity
// (relative error ≤ 2⁻⁵²), which perturbs each probability by a factor
// within exp(±2⁻⁴⁸). Callers absorb that, and the rounding of u, in the
// slack of their privacy accounting.
//
// Each draw costs O(levels) expected work in the worst case and O(1)
// typically; Reset costs O(n). A Sampler is not safe for concurrent use.
type Sampler struct {
	x       []float64 // M − u_i
	members []int32   // candidates grouped by level
	start   []int32   // members of occupied level l: members[start[l]:start[l+1]]
	level   []float64 // level number k of occupied level l
	score   []float64 // ln n_k − k
	best    float64
	count   []int32 // scratch: candidates per level
}

// ErrNoCandidate is returned by Reset when no exponent is finite.
var ErrNoCandidate = errors.New("oracle: no candidate has a finite exponent")

// maxDenseLevels bounds the level table of the counting sort; beyond it
// candidates are sorted by level.
const maxDenseLevels = 1 << 22

// Reset prepares draws from P(i) ∝ exp(u[i]). u is read now only.
// Exponents −Inf are never drawn; NaN or +Inf is an error.
func (s *Sampler) Reset(u []float64) error {
	M := math.Inf(-1)
	for _, v := range u {
		if math.IsNaN(v) || math.IsInf(v, 1) {
			return errors.New("oracle: exponent is NaN or +Inf")
		}
		M = max(M, v)
	}
	if math.IsInf(M, -1) {
		return ErrNoCandidate
	}
	n := len(u)
	s.x = slices.Grow(s.x[:0], n)[:n]
	maxLevel := 0.0
	finite := 0
	for i, v := range u {
		if math.IsInf(v, -1) {
			s.x[i] = math.Inf(1)
			continue
		}
		x := M - v
		s.x[i] = x
		maxLevel = max(maxLevel, math.Floor(x))
		finite++
	}
	s.members = slices.Grow(s.members[:0], finite)[:finite]
	s.start = s.start[:0]
	s.level = s.level[:0]
	s.score = s.score[:0]
	if maxLevel < maxDenseLevels {
		L := int(maxLevel) + 1
		s.count = slices.Grow(s.count[:0], L+1)[:L+1]
		clear(s.count)
		for _, x := range s.x {
			if !math.IsInf(x, 1) {
				s.count[int(x)+1]++
			}
		}
		for k := 1; k <= L; k++ {
			s.count[k] += s.count[k-1]
		}
		// count[k] is now the start of level k; fill members.
		for i, x := range s.x {
			if !math.IsInf(x, 1) {
				k := int(x)
				s.members[s.count[k]] = int32(i)
				s.count[k]++
			}
		}
		// count[k] is now the end of level k.
		prev := int32(0)
		for k := range L {
			if s.count[k] > prev {
				s.start = append(s.start, prev)
				s.level = append(s.level, float64(k))
			}
			prev = s.count[k]
		}
	} else {
		j := 0
		for i, x := range s.x {
			if !math.IsInf(x, 1) {
				s.members[j] = int32(i)
				j++
			}
		}
		slices.SortFunc(s.members, func(a, b int32) int {
			ka, kb := math.Floor(s.x[a]), math.Floor(s.x[b])
			switch {
			case ka < kb:
				return -1
			case ka > kb:
				return 1
			}
			return 0
		})
		for j, i := range s.members {
			k := math.Floor(s.x[i])
			if j == 0 || k != s.level[len(s.level)-1] {
				s.start = append(s.start, int32(j))
				s.level = append(s.level, k)
			}
		}
	}
	s.start = append(s.start, int32(finite))
	s.best = math.Inf(-1)
	for l, k := range s.level {
		sc := math.Log(float64(s.start[l+1]-s.start[l])) - k
		s.score = append(s.score, sc)
		s.best = max(s.best, sc)
	}
	return nil
}

// Draw returns one index drawn from the distribution of the last Reset.
func (s *Sampler) Draw(src Bits) int {
	L := uint64(len(s.level))
	for {
		var l int
		for {
			l = int(uniform(src, L))
			if BernoulliExp(src, s.best-s.score[l]) {
				break
			}
		}
		lo, hi := s.start[l], s.start[l+1]
		i := s.members[lo+int32(uniform(src, uint64(hi-lo)))]
		// x − ⌊x⌋ is exact in float64.
		if BernoulliExp(src, s.x[i]-s.level[l]) {
			return int(i)
		}
	}
}

// uniform returns an integer uniform on [0, n), n > 0, exactly (Lemire's
// multiply-and-reject).
func uniform(src Bits, n uint64) uint64 {
	hi, lo := bits.Mul64(src.Uint64(), n)
	if lo < n {
		thresh := -n % n
		for lo < thresh {
			hi, lo = bits.Mul64(src.Uint64(), n)
		}
	}
	return hi
}

// Bernoulli returns true with probability f (clamped to [0, 1]), exactly:
// it compares random bits with the binary expansion of f.
func Bernoulli(src Bits, f float64) bool {
	if !(f > 0) {
		return false
	}
	if f >= 1 {
		return true
	}
	for {
		r := src.Uint64()
		for b := 63; b >= 0; b-- {
			f *= 2 // exact for f < 1
			d := f >= 1
			if d {
				f-- // exact for f in [1, 2)
			}
			if u := r>>uint(b)&1 == 1; u != d {
				return d // the first differing bit decides U < f
			}
			if f == 0 {
				return false // U ≥ f from here on
			}
		}
	}
}

// BernoulliExp returns true with probability exp(−y) for y ≥ 0, exactly
// (Canonne–Kamath–Steinke 2020, Algorithm 1): one exp(−1) trial per whole
// unit of y, then exp(−f) for the fraction f by counting up K until a
// Bernoulli(f/K) fails and returning whether K is odd. A NaN or negative y
// is treated as 0.
func BernoulliExp(src Bits, y float64) bool {
	if !(y > 0) {
		return true
	}
	for y >= 1 {
		if !bernoulliExpFrac(src, 1) {
			return false
		}
		if y < 1<<53 {
			y--
		} else {
			// y−1 rounds to y: the remaining probability is below
			// e^{−2^53}; keep trying whole units (a failure is certain
			// in practice, and each trial is exact).
			continue
		}
	}
	return bernoulliExpFrac(src, y)
}

// bernoulliExpFrac returns true with probability exp(−f), f in [0, 1].
func bernoulliExpFrac(src Bits, f float64) bool {
	k := uint64(1)
	for uniform(src, k) == 0 && Bernoulli(src, f) {
		k++
	}
	return k&1 == 1
}
