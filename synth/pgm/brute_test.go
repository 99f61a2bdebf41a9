package pgm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// This file holds the brute-force oracles: the full joint table of a small
// domain, enumerated cell by cell.

// randomDomain returns a domain of d attributes with sizes in [1, maxSize].
func randomDomain(t testing.TB, rng *rand.Rand, d, maxSize int) *Domain {
	t.Helper()
	names := make([]string, d)
	sizes := make([]int, d)
	for i := range d {
		names[i] = fmt.Sprintf("a%d", i)
		sizes[i] = 1 + rng.IntN(maxSize)
	}
	dom, err := NewDomain(names, sizes)
	if err != nil {
		t.Fatal(err)
	}
	return dom
}

// randomSets returns k random ascending attribute sets of 1..maxLen attributes.
func randomSets(rng *rand.Rand, d, k, maxLen int) [][]int {
	var out [][]int
	for range k {
		n := 1 + rng.IntN(maxLen)
		perm := rng.Perm(d)[:min(n, d)]
		slices.Sort(perm)
		out = append(out, perm)
	}
	return out
}

// cellIndex returns the row-major index of x restricted to attrs.
func cellIndex(dom *Domain, attrs []int, x []int) int {
	i := 0
	for _, a := range attrs {
		i = i*dom.Size(a) + x[a]
	}
	return i
}

// forEachCell calls f with every full assignment of dom.
func forEachCell(dom *Domain, f func(x []int)) {
	x := make([]int, dom.Len())
	for {
		f(x)
		a := dom.Len() - 1
		for ; a >= 0; a-- {
			x[a]++
			if x[a] < dom.Size(a) {
				break
			}
			x[a] = 0
		}
		if a < 0 {
			return
		}
	}
}

// bruteJoint returns the log unnormalised joint Σ_k theta_k(x_Ck) over all
// cells of dom, in row-major order over all attributes.
func bruteJoint(jt *junctionTree, theta []float64) []float64 {
	dom := jt.dom
	all := make([]int, dom.Len())
	for i := range all {
		all[i] = i
	}
	out := make([]float64, 0, dom.Cells(all))
	forEachCell(dom, func(x []int) {
		s := 0.0
		for k, c := range jt.cliques {
			s += jt.block(theta, k)[cellIndex(dom, c, x)]
		}
		out = append(out, s)
	})
	return out
}

// bruteMarginal sums the probability joint p (row-major, all attributes),
// weighted by w, onto attrs (in the given order).
func bruteMarginal(dom *Domain, p []float64, attrs []int, w map[int][]float64) []float64 {
	out := make([]float64, dom.Cells(attrs))
	i := 0
	forEachCell(dom, func(x []int) {
		v := p[i]
		for a, wa := range w {
			v *= wa[x[a]]
		}
		out[cellIndex(dom, attrs, x)] += v
		i++
	})
	return out
}

// normalize turns a log joint into probabilities and returns log Z.
func normalize(logJoint []float64) ([]float64, float64) {
	m := math.Inf(-1)
	for _, v := range logJoint {
		m = math.Max(m, v)
	}
	s := 0.0
	for _, v := range logJoint {
		s += math.Exp(v - m)
	}
	logZ := m + math.Log(s)
	p := make([]float64, len(logJoint))
	for i, v := range logJoint {
		p[i] = math.Exp(v - logZ)
	}
	return p, logZ
}

// near reports whether a and b agree to within tol absolutely or relatively.
func near(a, b, tol float64) bool {
	if a == b {
		return true
	}
	return math.Abs(a-b) <= tol*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}
