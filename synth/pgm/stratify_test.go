package pgm

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// stratify sorts rows lexicographically by the attributes (first most
// significant) and breaks ties at random.
func TestStratify(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	dom, _ := NewDomain([]string{"a", "b", "c"}, []int{3, 4, 2})
	const rows = 500
	cols := make([][]uint16, 3)
	for i := range cols {
		cols[i] = make([]uint16, rows)
		for r := range cols[i] {
			cols[i][r] = uint16(rng.IntN(dom.Size(i)))
		}
	}
	for _, attrs := range [][]int{nil, {1}, {2, 0}, {0, 1, 2}} {
		order := make([]int32, rows)
		stratify(order, make([]int32, rows), cols, attrs, dom, rng)
		seen := make([]bool, rows)
		for _, r := range order {
			seen[r] = true
		}
		if slices.Contains(seen, false) {
			t.Fatalf("attrs %v: order is not a permutation", attrs)
		}
		for k := 1; k < rows; k++ {
			x, y := order[k-1], order[k]
			for _, b := range attrs {
				if cols[b][x] != cols[b][y] {
					if cols[b][x] > cols[b][y] {
						t.Fatalf("attrs %v: rows %d, %d out of order on %d", attrs, x, y, b)
					}
					break
				}
			}
		}
		again := make([]int32, rows)
		stratify(again, make([]int32, rows), cols, attrs, dom, rng)
		if slices.Equal(order, again) {
			t.Errorf("attrs %v: ties broken the same way twice", attrs)
		}
	}
}

// deal gives every run of consecutive rows each value in proportion to its
// count, within a small discrepancy (a shuffle is off by about the square
// root of the run's expected count), and each row's value is uniform over
// the values dealt.
func TestDeal(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, counts := range [][]int{{1}, {3, 4}, {50, 1, 20, 29}, {500, 300, 150, 40, 9, 1}, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 990}} {
		vals := appendValues(nil, counts)
		g := len(vals)
		rows := make([]int32, g)
		for i := range rows {
			rows[i] = int32(i)
		}
		col := make([]uint16, g)
		worst := 0.0
		for range 20 {
			deal(col, rows, vals, rng)
			for _, m := range []int{1, 2, 5, 17, 100, g} {
				for lo := 0; lo+m <= g; lo += max(1, m/2) {
					n := make([]int, len(counts))
					for _, v := range col[lo : lo+m] {
						n[v]++
					}
					for v, c := range counts {
						worst = max(worst, math.Abs(float64(n[v])-float64(m*c)/float64(g)))
					}
				}
			}
		}
		if worst > 3 {
			t.Errorf("counts %v: a run's count is off by %.2f, want ≤ 3", counts, worst)
		}
	}
	// Uniform per row: over many deals, row k gets value v with frequency
	// c_v/g (4σ binomial bound).
	counts := []int{5, 2, 3}
	vals := []uint16{0, 0, 0, 0, 0, 1, 1, 2, 2, 2}
	rows := make([]int32, len(vals))
	for i := range rows {
		rows[i] = int32(i)
	}
	const runs = 20000
	freq := make([][3]int, len(vals))
	col := make([]uint16, len(vals))
	for range runs {
		deal(col, rows, vals, rng)
		for k, v := range col {
			freq[k][v]++
		}
	}
	for k := range freq {
		for v, c := range counts {
			p := float64(c) / float64(len(vals))
			if got := float64(freq[k][v]) / runs; math.Abs(got-p) > 4*math.Sqrt(p*(1-p)/runs) {
				t.Errorf("row %d gets %d with frequency %.4f, want %.4f", k, v, got, p)
			}
		}
	}
}

// Two attributes independent in the model: the sample's joint counts are
// within a few records of rows·p(a)·p(b) in every cell, where independent
// draws would be off by about √(rows·p(a)·p(b)) (here ≈ 7).
func TestSynthesizeStratified(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	dom, _ := NewDomain([]string{"a", "b"}, []int{4, 6})
	m := normalModel(t, rng, dom, [][]int{{0}, {1}}, 0.3, 1)
	const rows = 2400
	pa, pb := m.Marginal([]int{0}), m.Marginal([]int{1})
	for run := range 5 {
		cols, err := m.Synthesize(rand.New(rand.NewPCG(uint64(run), 9)), rows)
		if err != nil {
			t.Fatal(err)
		}
		got := sampleCounts(t, dom, cols, []int{0, 1})
		for i := range 4 {
			for j := range 6 {
				want := rows * pa[i] * pb[j]
				if d := math.Abs(got[i*6+j] - want); d > 4 {
					t.Fatalf("run %d: cell (%d, %d) = %v, want %.1f ± 4", run, i, j, got[i*6+j], want)
				}
			}
		}
	}
}

// Two attributes with the same parent and independent given it, generated
// after attributes that order the rows completely (three of 38 values): the
// stratification by those puts the rows in nearly the same order for both,
// and one dealing sequence would tie their values together. Their joint
// given the parent must be as the model says, within a few records.
func TestSynthesizeSiblingsIndependent(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	dom, _ := NewDomain([]string{"l1", "l2", "l3", "c", "a", "b"}, []int{38, 38, 38, 2, 4, 6})
	m := normalModel(t, rng, dom, [][]int{{0, 3}, {1, 3}, {2, 3}, {3, 4}, {3, 5}}, 0.5, 1)
	const rows = 6000
	joint := m.Marginal([]int{3, 4, 5})
	for run := range 20 {
		cols, err := m.Synthesize(rand.New(rand.NewPCG(uint64(run), 10)), rows)
		if err != nil {
			t.Fatal(err)
		}
		got := sampleCounts(t, dom, cols, []int{3, 4, 5})
		var l1 float64
		for i, p := range joint {
			l1 += math.Abs(got[i]/rows - p)
		}
		// Independent draws give E‖·‖₁ ≈ Σ √(2·p/(π·rows)) ≈ 0.04 here;
		// dealt in sibling blocks, within a few records (≈ 0.005); one
		// dealing sequence for both siblings gave 1.07 in some draws.
		if l1 > 0.02 {
			t.Errorf("run %d: the (c, a, b) joint is off by %.4f in L1, want ≤ 0.02", run, l1)
		}
	}
}

// The three-gap walk visits every position once, in increasing order of
// its point k·weyl + u (mod 2⁶⁴), against a sort of the points.
func TestWeylWalk(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, g := range []int{2, 3, 4, 5, 7, 8, 13, 21, 34, 35, 55, 89, 100, 144, 1000, 4181, 10007} {
		for range 8 {
			u := rng.Uint64()
			switch rng.IntN(4) { // the wrap-around's edges too
			case 0:
				u = 0
			case 1:
				u = 1<<64 - weyl // position 1's point is 0
			}
			want := make([]int, g)
			for k := range want {
				want[k] = k
			}
			point := func(k int) uint64 { return uint64(k)*weyl + u }
			slices.SortFunc(want, func(a, b int) int { return cmp.Compare(point(a), point(b)) })
			k, up, down := weylWalk(g, u)
			for j := range g {
				if k != want[j] {
					t.Fatalf("g = %d, u = %#x: rank %d is position %d, want %d", g, u, j, k, want[j])
				}
				k = weylNext(k, g, up, down)
			}
			if k != want[0] {
				t.Fatalf("g = %d, u = %#x: the walk wraps to %d, want %d", g, u, k, want[0])
			}
		}
	}
}
