package noise

import (
	"math"
	"sort"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

// testSecret is a fixed server secret: every statistical test below runs on a
// fixed (secret, seed, label) stream, so its outcome is deterministic and the
// thresholds cannot flake.
var testSecret = []byte("dpsql test secret, 32 bytes long")

func testSource(label string) *Source { return Derive(testSecret, 20260522, label) }

// minPValue is the significance level of the goodness-of-fit tests. With a
// fixed stream a correct sampler passes or fails deterministically; 1e-4
// still rejects samplers that are off by more than sampling error.
const minPValue = 1e-4

// chiSquare tests counts against the probabilities of the same integer
// outcomes. Outcomes are sorted and adjacent ones merged until each bin
// expects at least 20 draws; mass outside want is pooled into one bin.
func chiSquare(t *testing.T, name string, counts map[int64]int, want map[int64]float64, n int) {
	t.Helper()
	keys := make([]int64, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	type bin struct{ obs, exp float64 }
	var (
		bins    []bin
		cur     bin
		covered float64
		seen    int
	)
	for _, k := range keys {
		cur.obs += float64(counts[k])
		cur.exp += want[k] * float64(n)
		covered += want[k]
		seen += counts[k]
		if cur.exp >= 20 {
			bins = append(bins, cur)
			cur = bin{}
		}
	}
	// The leftover mass (tail outcomes and outcomes outside want) joins the
	// last bin.
	cur.obs += float64(n - seen)
	cur.exp += math.Max(0, 1-covered) * float64(n)
	if len(bins) == 0 {
		t.Fatalf("%s: no bin expects 20 draws", name)
	}
	bins[len(bins)-1].obs += cur.obs
	bins[len(bins)-1].exp += cur.exp
	if len(bins) == 1 {
		return // a single outcome: nothing to compare
	}
	var stat float64
	for _, b := range bins {
		stat += (b.obs - b.exp) * (b.obs - b.exp) / b.exp
	}
	p := distuv.ChiSquared{K: float64(len(bins) - 1)}.Survival(stat)
	if p < minPValue {
		t.Errorf("%s: χ²=%.1f with %d bins, p=%.3g < %g", name, stat, len(bins), p, minPValue)
	}
}

// zTest checks that k successes in n trials are consistent with probability
// p: |z| < 5 (two-sided p ≈ 6e-7).
func zTest(t *testing.T, name string, k, n int, p float64) {
	t.Helper()
	sd := math.Sqrt(float64(n) * p * (1 - p))
	mean := float64(n) * p
	if sd == 0 {
		if float64(k) != mean {
			t.Errorf("%s: %d/%d successes, want exactly %v", name, k, n, mean)
		}
		return
	}
	if z := (float64(k) - mean) / sd; math.Abs(z) > 5 {
		t.Errorf("%s: %d/%d successes, want p=%.6g (z=%.2f)", name, k, n, p, z)
	}
}

// discreteGaussianPMF returns P(x) ∝ exp(−x²/(2σ²)) for |x| ≤ 12σ+2; the
// omitted mass is below 1e-30.
func discreteGaussianPMF(sigma2 float64) map[int64]float64 {
	lim := int64(12*math.Sqrt(sigma2)) + 2
	pmf := make(map[int64]float64, 2*lim+1)
	var z float64
	for x := -lim; x <= lim; x++ {
		w := math.Exp(-float64(x) * float64(x) / (2 * sigma2))
		pmf[x] = w
		z += w
	}
	for x := range pmf {
		pmf[x] /= z
	}
	return pmf
}
