package aim

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dpsql/dpsql/synth/internal/synthtest"
	"github.com/dpsql/dpsql/synth/pgm"
)

// bruteBin bins the marginal x over attrs cell by cell, decoding each fine
// cell's values from its index (the last attribute fastest).
func bruteBin(dom *pgm.Domain, attrs []int, maps [][]int, bins int, x []float64) []float64 {
	sizes := make([]int, len(attrs))
	n := 1
	for j, a := range attrs {
		sizes[j] = dom.Size(a)
		if maps[a] != nil {
			sizes[j] = bins
		}
		n *= sizes[j]
	}
	out := make([]float64, n)
	for i, v := range x {
		rest, k, mul := i, 0, 1
		for j := len(attrs) - 1; j >= 0; j-- {
			a := attrs[j]
			d := rest % dom.Size(a)
			rest /= dom.Size(a)
			if maps[a] != nil {
				d = maps[a][d]
			}
			k += d * mul
			mul *= sizes[j]
		}
		out[k] += v
	}
	return out
}

// TestCoarseMaps checks the equal-width bins: only attributes of more than
// bins values are binned, codes are non-decreasing, every bin is used and
// bin sizes differ by at most one.
func TestCoarseMaps(t *testing.T) {
	dom, err := pgm.NewDomain([]string{"a", "b", "c", "d"}, []int{20, 21, 100, 7})
	if err != nil {
		t.Fatal(err)
	}
	for _, bins := range []int{0, 1, 3, 7, 20, 40} {
		maps := coarseMaps(dom, bins)
		for a, m := range maps {
			n := dom.Size(a)
			if (m != nil) != (bins > 0 && n > bins) {
				t.Fatalf("bins %d, attribute of %d values: binned = %v", bins, n, m != nil)
			}
			if m == nil {
				continue
			}
			count := make([]int, bins)
			for v, b := range m {
				if v > 0 && b < m[v-1] {
					t.Fatalf("bins %d: codes decrease at %d", bins, v)
				}
				count[b]++
			}
			if lo, hi := slices.Min(count), slices.Max(count); lo < 1 || hi-lo > 1 {
				t.Fatalf("bins %d over %d values: bin sizes %v", bins, n, count)
			}
		}
	}
}

// TestCoarsening checks apply against the brute force and against the
// Kronecker product of kron's factors (what Private-PGM fits), and that
// binning keeps the total: a twin's measurement has L1 sensitivity 1 (one
// record moves one fine cell, hence one coarse cell, by one).
func TestCoarsening(t *testing.T) {
	dom, err := pgm.NewDomain([]string{"a", "b", "c", "d"}, []int{9, 2, 13, 5})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, attrs := range [][]int{{0}, {1}, {0, 1}, {0, 2}, {1, 3}, {0, 1, 2, 3}, {2, 3}} {
		for _, bins := range []int{1, 2, 4} {
			maps := coarseMaps(dom, bins)
			c := newCoarsening(dom, attrs, maps, bins)
			x := make([]float64, dom.Cells(attrs))
			for i := range x {
				x[i] = float64(rng.IntN(5))
			}
			want := bruteBin(dom, attrs, maps, bins, x)
			got := c.apply([]float64{7, 7}, x)
			kr := pgm.KronMul(c.kron(), c.fine, x, false)
			if !slices.Equal(got, want) || !slices.Equal(kr, want) {
				t.Fatalf("%v, %d bins: apply %v, Kronecker %v, want %v", attrs, bins, got, kr, want)
			}
			// One record added to any fine cell moves the binned marginal by
			// exactly 1 in L1.
			i := rng.IntN(len(x))
			x[i]++
			moved := c.apply(nil, x)
			var d float64
			for k := range moved {
				d += math.Abs(moved[k] - got[k])
			}
			if d != 1 {
				t.Fatalf("%v: a record moved the binned marginal by %v", attrs, d)
			}
		}
	}
}

// TestTwins checks addTwins: a twin for exactly the candidates with a
// binned attribute, after the fine ones, with the fine set's attributes,
// weight and parents, and the binned true marginal as its answer.
func TestTwins(t *testing.T) {
	data := synthtest.Chain(2, 500, []int{4, 3, 5, 2, 6})
	_, _, cands, answers := testCandidates(t, data, synthtest.AllK(5, 2))
	n := len(cands)
	dom := data.Domain()
	maps := coarseMaps(dom, 3)
	all, err := addTwins(dom, slices.Clone(cands), answers, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for i, c := range cands {
		binned := false
		for _, a := range c.attrs {
			binned = binned || dom.Size(a) > 3
		}
		if !binned {
			continue
		}
		if all[i].twin != n+want || cands[i].twin != -1 {
			t.Fatalf("candidate %v: twin index %d, want %d", c.attrs, all[i].twin, n+want)
		}
		tw := all[n+want]
		if tw.twin != -1 || !slices.Equal(tw.attrs, c.attrs) || tw.weight != c.weight || !slices.Equal(tw.parents, c.parents) || tw.coarse == nil || tw.key == c.key {
			t.Fatalf("twin %d of %v: %+v", want, c.attrs, tw)
		}
		if got, exp := answers.expand(n+want), bruteBin(dom, c.attrs, maps, 3, answers.expand(i)); !slices.Equal(got, exp) {
			t.Fatalf("twin of %v: answer %v, want %v", c.attrs, got, exp)
		}
		want++
	}
	if len(all) != n+want || len(answers.cells) != len(all) {
		t.Fatalf("%d candidates after twins, want %d", len(all), n+want)
	}
	if all2, _ := addTwins(dom, slices.Clone(cands), answers, -1); len(all2) != n {
		t.Fatalf("no twins asked: %d candidates, want %d", len(all2), n)
	}
}
