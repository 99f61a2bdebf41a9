package pgm

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// randomFactor returns a factor over a random subset of d attributes, in
// a random order (elimination steps hand factors whose attributes are not
// ascending), with a quarter of its cells 0.
func randomFactor(rng *rand.Rand, dom *Domain, d int) factor {
	var attrs []int
	for _, a := range rng.Perm(d) {
		if rng.IntN(3) > 0 {
			attrs = append(attrs, a)
		}
	}
	vals := make([]float64, dom.Cells(attrs))
	for i := range vals {
		if rng.IntN(4) > 0 {
			vals[i] = rng.Float64()
		}
	}
	return factor{attrs: attrs, vals: vals}
}

// TestContractionBruteForce runs every two-factor step that has a matrix
// form, whatever its planned cost, against the sum cell by cell: factors
// in any attribute order, results in any order, with batch, row, column,
// inner and factor-private summed attributes, roles swapped or not, and
// each table relaid or used as it is.
func TestContractionBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	var ran, swaps, direct [2]int // [0]: not, [1]: yes
	for trial := 0; trial < 3000; trial++ {
		d := 1 + rng.IntN(5)
		dom := randomDomain(t, rng, d, 9)
		a, b := randomFactor(rng, dom, d), randomFactor(rng, dom, d)
		if trial%5 == 0 {
			// Layouts that need no relay: ascending factors and result.
			slices.Sort(a.attrs)
			slices.Sort(b.attrs)
		}
		inAny := func(x int) bool { return slices.Contains(a.attrs, x) || slices.Contains(b.attrs, x) }
		var over, out []int
		for x := range d {
			if inAny(x) {
				over = append(over, x)
				if rng.IntN(2) == 0 {
					out = append(out, x)
				}
			}
		}
		if trial%5 != 0 {
			rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
		}
		c, swapped, ok, _ := planContraction(dom, a, b, over, out)
		if !ok {
			continue
		}
		got := make([]float64, dom.Cells(out))
		c.run(got, dom, a, b, swapped, out)
		want := bruteProductSum(dom, []factor{a, b}, over, out)
		for i := range want {
			if w := want[i]; !near(got[i], w, 1e-12) {
				t.Fatalf("trial %d: cell %d = %v, want %v (a %v, b %v, out %v, roles %+v, swapped %v)",
					trial, i, got[i], w, a.attrs, b.attrs, out, c, swapped)
			}
		}
		ran[1]++
		swaps[boolIndex(swapped)]++
		direct[boolIndex(!c.relayA && !c.relayB && !c.relayC)]++
	}
	if ran[1] < 1000 || swaps[0] == 0 || swaps[1] == 0 || direct[0] == 0 || direct[1] == 0 {
		t.Fatalf("the trials did not cover the forms: ran %d, swapped %v, unrelaid %v", ran[1], swaps, direct)
	}
}

func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestContractionRefusesBroadcast checks that a step with an attribute of
// neither factor (broadcast into the result, or counted by the sum) keeps
// productSumLoop.
func TestContractionRefusesBroadcast(t *testing.T) {
	dom, err := NewDomain([]string{"a", "b", "c"}, []int{9, 9, 9})
	if err != nil {
		t.Fatal(err)
	}
	a := factor{attrs: []int{0}, vals: make([]float64, 9)}
	b := factor{attrs: []int{1}, vals: make([]float64, 9)}
	for _, out := range [][]int{{0, 1, 2}, {0, 1}} {
		if _, _, ok, _ := planContraction(dom, a, b, []int{0, 1, 2}, out); ok {
			t.Errorf("out %v: a matrix form for an attribute of neither factor", out)
		}
	}
}

// TestPermute checks permute against the cell-by-cell relabelling, for
// every permutation of up to four attributes.
func TestPermute(t *testing.T) {
	rng := rand.New(rand.NewPCG(63, 64))
	for trial := range 300 {
		d := 1 + rng.IntN(4)
		dom := randomDomain(t, rng, d, 7)
		from := rng.Perm(d)
		to := rng.Perm(d)
		src := make([]float64, dom.Cells(from))
		for i := range src {
			src[i] = float64(i)
		}
		got := make([]float64, len(src))
		permute(got, src, dom, from, to)
		forEachCell(dom, func(x []int) {
			if w := src[cellIndex(dom, from, x)]; got[cellIndex(dom, to, x)] != w {
				t.Fatalf("trial %d: from %v to %v: cell %v = %v, want %v", trial, from, to, x, got[cellIndex(dom, to, x)], w)
			}
		})
	}
}

// TestProductSumMergedBruteForce checks steps of three and four factors
// that productSumMerged takes (two factors over few attributes beside a
// wide one) against the sum cell by cell.
func TestProductSumMergedBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(65, 66))
	merged := 0
	for trial := range 400 {
		d := 3 + rng.IntN(3)
		dom := randomDomain(t, rng, d, 8)
		var fs []factor
		for range 3 + rng.IntN(2) {
			fs = append(fs, randomFactor(rng, dom, d))
		}
		var over []int
		for x := range d {
			if slices.ContainsFunc(fs, func(f factor) bool { return slices.Contains(f.attrs, x) }) {
				over = append(over, x)
			}
		}
		var out []int
		for _, x := range over {
			if rng.IntN(2) == 0 {
				out = append(out, x)
			}
		}
		got := make([]float64, dom.Cells(out))
		if productSumMerged(got, dom, fs, over, out) {
			merged++
		} else {
			productSumZeroed(got, dom, fs, over, out)
		}
		want := bruteProductSum(dom, fs, over, out)
		for i := range want {
			if !near(got[i], want[i], 1e-12) {
				t.Fatalf("trial %d: cell %d = %v, want %v (factors %v, out %v)", trial, i, got[i], want[i], len(fs), out)
			}
		}
	}
	if merged < 50 {
		t.Fatalf("only %d of 400 steps were merged", merged)
	}
}
