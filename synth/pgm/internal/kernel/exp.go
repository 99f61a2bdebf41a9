package kernel

import "math"

// expTable[j] = 2^(j/64), j = 0..63, correctly rounded.
var expTable = func() (t [64]float64) {
	for j := range t {
		t[j] = math.Exp2(float64(j) / 64)
	}
	return t
}()

const (
	expInvL = 64 / math.Ln2
	// ln2/64 split as in fdlibm: the high part has 32 significant bits, so
	// n·expL1 is exact for |n| < 2^21.
	expL1    = 6.93147180369123816490e-01 / 64
	expL2    = 1.90821492927058770002e-10 / 64
	expShift = 0x1.8p52 // adding it rounds to an integer
	// Below expMin the result underflows to a subnormal or zero, and above
	// expMax the exponent add would overflow: both go to math.Exp, except
	// (expMax, expLimit], where math.Exp on amd64 wrongly returns +Inf
	// (it overflows from about 709.09) and expHigh scales in two steps.
	expMin   = -708.0
	expMax   = 709.0
	expLimit = 709.782712893384 // ln(MaxFloat64)
)

// Exp returns e^x within 2 ulps of math.Exp (checked by the tests), faster for
// the arguments belief propagation produces (x ≤ 0 after max shifting): it
// reduces x = (64k + j)·ln2/64 + r with |r| ≤ ln2/128, looks 2^(j/64) up and
// evaluates e^r − 1 by a degree-5 Taylor polynomial (truncation < 4e-17).
// Arguments outside [-708, 709.79], NaN and ±Inf are passed to math.Exp.
func Exp(x float64) float64 {
	if !(x >= expMin && x <= expMax) {
		if x > expMax && x <= expLimit {
			return expHigh(x)
		}
		return math.Exp(x)
	}
	t := x*expInvL + expShift
	n := int64(math.Float64bits(t)) & (1<<51 - 1) // low bits hold round(x·64/ln2) mod 2^51
	if n >= 1<<50 {
		n -= 1 << 51
	}
	kn := t - expShift
	r := (x - kn*expL1) - kn*expL2
	q := r * (1 + r*(0.5+r*(1.0/6+r*(1.0/24+r*(1.0/120))))) // e^r − 1
	tj := expTable[n&63]
	k := n >> 6
	return math.Float64frombits(math.Float64bits(tj+tj*q) + uint64(k)<<52)
}

// expHigh is Exp's fast path for x in (expMax, expLimit], where 2^k is 2^1023
// or 2^1024: it scales by 2^(k-1), then by 2.
func expHigh(x float64) float64 {
	t := x*expInvL + expShift
	n := int64(math.Float64bits(t)) << 13 >> 13
	kn := t - expShift
	r := (x - kn*expL1) - kn*expL2
	q := r * (1 + r*(0.5+r*(1.0/6+r*(1.0/24+r*(1.0/120)))))
	tj := expTable[n&63]
	return math.Float64frombits(math.Float64bits(tj+tj*q)+uint64(n>>6-1)<<52) * 2
}
