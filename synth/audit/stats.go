package audit

import (
	"math"
	"sort"

	"gonum.org/v1/gonum/stat/distuv"
)

// ClopperPearsonLower is the one-sided Clopper–Pearson lower confidence
// bound at level 1−alpha for a binomial proportion with k successes in n
// trials: the p with P[Bin(n, p) ≥ k] = alpha, the alpha-quantile of
// Beta(k, n−k+1); 0 when k = 0.
func ClopperPearsonLower(k, n int, alpha float64) float64 {
	checkBinomial(k, n, alpha)
	if k == 0 {
		return 0
	}
	return distuv.Beta{Alpha: float64(k), Beta: float64(n - k + 1)}.Quantile(alpha)
}

// ClopperPearsonUpper is the one-sided Clopper–Pearson upper confidence
// bound at level 1−alpha: the p with P[Bin(n, p) ≤ k] = alpha, the
// (1−alpha)-quantile of Beta(k+1, n−k); 1 when k = n.
func ClopperPearsonUpper(k, n int, alpha float64) float64 {
	checkBinomial(k, n, alpha)
	if k == n {
		return 1
	}
	return distuv.Beta{Alpha: float64(k + 1), Beta: float64(n - k)}.Quantile(1 - alpha)
}

func checkBinomial(k, n int, alpha float64) {
	if n <= 0 || k < 0 || k > n || !(alpha > 0 && alpha < 1) {
		panic("audit: Clopper–Pearson bound needs 0 ≤ k ≤ n, n > 0 and 0 < alpha < 1")
	}
}

// EpsilonLowerBound is the ε that an event S witnesses: a mechanism that is
// (ε, δ)-DP has P[S|X] ≤ e^ε·P[S|Y] + δ for neighbours X, Y, so with pLo a
// lower confidence bound on P[S|X] and qHi an upper one on P[S|Y],
// ε ≥ ln((pLo − δ)/qHi). It returns 0 when the event witnesses nothing
// (pLo ≤ δ) and +Inf when qHi = 0.
func EpsilonLowerBound(pLo, qHi, delta float64) float64 {
	return max(0, logRatio(pLo, qHi, delta))
}

// logRatio is ln((pLo − δ)/qHi), −Inf when pLo ≤ δ. Unlike
// EpsilonLowerBound it keeps ordering events that witness nothing, so that
// the threshold search picks the one nearest to witnessing something.
func logRatio(pLo, qHi, delta float64) float64 {
	if pLo-delta <= 0 {
		return math.Inf(-1)
	}
	return math.Log((pLo - delta) / qHi)
}

// bounds caches Clopper–Pearson bounds for one sample size: the threshold
// search asks for the same counts many times.
type bounds struct {
	n     int
	alpha float64
	lo    map[int]float64
	hi    map[int]float64
}

func newBounds(n int, alpha float64) *bounds {
	return &bounds{n: n, alpha: alpha, lo: map[int]float64{}, hi: map[int]float64{}}
}

func (b *bounds) lower(k int) float64 {
	v, ok := b.lo[k]
	if !ok {
		v = ClopperPearsonLower(k, b.n, b.alpha)
		b.lo[k] = v
	}
	return v
}

func (b *bounds) upper(k int) float64 {
	v, ok := b.hi[k]
	if !ok {
		v = ClopperPearsonUpper(k, b.n, b.alpha)
		b.hi[k] = v
	}
	return v
}

// event is a threshold event on a statistic: T ≥ Threshold (Below false) or
// T < Threshold (Below true). Favours says on which dataset of the pair the
// event is claimed to be likelier: 1 for the second (the neighbour with the
// target row), 0 for the first.
type event struct {
	Stat      int
	Threshold float64
	Below     bool
	Favours   int
}

// holds reports whether t is in the event.
func (e event) holds(t float64) bool {
	if e.Below {
		return t < e.Threshold
	}
	return t >= e.Threshold
}

// count is how many of xs lie in e.
func (e event) count(xs []float64) int {
	k := 0
	for _, x := range xs {
		if e.holds(x) {
			k++
		}
	}
	return k
}

// bestEvent searches the threshold events on the samples a (first dataset)
// and b (second dataset, same length) of statistic stat for the one whose
// Clopper–Pearson lower bound on ε is largest, in either direction. It
// returns that event and its logRatio on these samples (which are then
// spent: the event must be evaluated on fresh samples). Thresholds lie
// halfway between consecutive distinct sample values, so that a value that
// is the same in exact arithmetic but differs by a rounding error on fresh
// samples falls on the same side. With a single distinct value there is no
// threshold: the event is T ≥ +Inf, which witnesses nothing.
func bestEvent(stat int, a, b []float64, delta float64, cb *bounds) (event, float64) {
	n := len(a)
	sa, sb := sortedCopy(a), sortedCopy(b)
	vals := append(append([]float64(nil), sa...), sb...)
	sort.Float64s(vals)
	best, bestEps := event{Stat: stat, Threshold: math.Inf(1)}, math.Inf(-1)
	found := false
	for i := 1; i < len(vals); i++ {
		if vals[i-1] == vals[i] {
			continue
		}
		t := vals[i-1] + (vals[i]-vals[i-1])/2
		// Counts of T ≥ t; those of T < t are the complements.
		ka := n - sort.SearchFloat64s(sa, t)
		kb := n - sort.SearchFloat64s(sb, t)
		for _, c := range [...]struct {
			below   bool
			favours int
			kx, ky  int
		}{
			{false, 0, ka, kb}, {false, 1, kb, ka},
			{true, 0, n - ka, n - kb}, {true, 1, n - kb, n - ka},
		} {
			if eps := logRatio(cb.lower(c.kx), cb.upper(c.ky), delta); !found || eps > bestEps {
				best, bestEps, found = event{Stat: stat, Threshold: t, Below: c.below, Favours: c.favours}, eps, true
			}
		}
	}
	return best, bestEps
}

func sortedCopy(xs []float64) []float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s
}
