package pgm

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// eliminateCells is the oracle for treeCells: the cells of eliminate's
// maximal cliques for order.
func eliminateCells(dom *Domain, sets []bitset, order []int) float64 {
	_, maxi := eliminate(dom, sets, order)
	var total float64
	for _, m := range maxi {
		total += m.cells(dom)
	}
	return total
}

func bitsets(dom *Domain, sets [][]int) []bitset {
	bs, err := attrSets(dom, sets)
	if err != nil {
		panic(err) // the tests' sets are over their domains
	}
	return bs
}

// TestTreeCells checks the one-word tree size against eliminate's cliques
// for random graphs and orders.
func TestTreeCells(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 300 {
		d := 1 + rng.IntN(14)
		dom := randomDomain(t, rng, d, 6)
		bs := bitsets(dom, randomSets(rng, d, 1+rng.IntN(12), 4))
		g := newOrderGraph(dom, bs)
		for range 5 {
			order := rng.Perm(d)
			if got, want := g.treeCells(order), eliminateCells(dom, bs, order); got != want {
				t.Fatalf("trial %d: order %v: %g cells, eliminate gives %g", trial, order, got, want)
			}
		}
	}
}

func TestMoveTo(t *testing.T) {
	src := []int{0, 1, 2, 3, 4}
	for _, tt := range []struct {
		i, j int
		want []int
	}{
		{0, 4, []int{1, 2, 3, 4, 0}},
		{4, 0, []int{4, 0, 1, 2, 3}},
		{1, 3, []int{0, 2, 3, 1, 4}},
		{3, 1, []int{0, 3, 1, 2, 4}},
		{2, 2, []int{0, 1, 2, 3, 4}},
	} {
		dst := make([]int, len(src))
		moveTo(dst, src, tt.i, tt.j)
		if !slices.Equal(dst, tt.want) {
			t.Errorf("move %d to %d: %v, want %v", tt.i, tt.j, dst, tt.want)
		}
	}
}

// wideGraph is the measured graph of a 30-attribute AIM run at its 30th
// round (the 1-way sets and the 27 distinct sets of its 30 selections),
// where greedy elimination's tree
// is 676 461 cells and eliminating in the order greedy found one round
// later gives 433 869.
func wideGraph(tb testing.TB) (*Domain, [][]int) {
	sizes := []int{6, 38, 7, 38, 2, 7, 38, 38, 3, 4, 5, 2, 8, 8, 6, 38, 6, 6, 2, 4, 38, 38, 5, 38, 38, 5, 5, 7, 8, 5}
	names := make([]string, len(sizes))
	for i := range names {
		names[i] = "a" + strconv.Itoa(i)
	}
	dom, err := NewDomain(names, sizes)
	if err != nil {
		tb.Fatal(err)
	}
	var sets [][]int
	for a := range sizes {
		sets = append(sets, []int{a})
	}
	for _, s := range strings.Split("8 25 27;5 9 12;13 17 22;0 2 16;13 18 23;7 10 11;0 1 11;0 2 5;8 9 11;1 4 13;"+
		"4 19 28;0 3 4;11 13 24;4 17 21;0 7 18;15 18 29;4 15 26;1 2 18;0 6 19;8 14 18;3 5 8;4 5 9;3 19 20;0 1 2;"+
		"3 20;2 6 11;3 6", ";") {
		var set []int
		for _, f := range strings.Fields(s) {
			v, _ := strconv.Atoi(f)
			set = append(set, v)
		}
		sets = append(sets, set)
	}
	return dom, sets
}

// TestSearchOrder: the searched tree is never larger than its starts',
// and on the wide graph it finds the smaller tree greedy missed.
func TestSearchOrder(t *testing.T) {
	dom, sets := wideGraph(t)
	bs := bitsets(dom, sets)
	greedy, _ := eliminate(dom, bs, nil)
	if c := eliminateCells(dom, bs, greedy); c != 676461 {
		t.Fatalf("greedy's tree has %g cells, want 676461", c)
	}
	if c := eliminateCells(dom, bs, searchOrder(dom, bs, greedy)); c > 433869 {
		t.Errorf("searched tree has %g cells, want at most 433869", c)
	}

	rng := rand.New(rand.NewPCG(7, 8))
	smaller := 0
	for trial := range 200 {
		d := 2 + rng.IntN(16)
		dom := randomDomain(t, rng, d, 12)
		bs := bitsets(dom, append(randomSets(rng, d, d+rng.IntN(2*d), 3), allSingles(d)...))
		greedy, _ := eliminate(dom, bs, nil)
		other := rng.Perm(d)
		got := searchOrder(dom, bs, other, greedy)
		g, o, s := eliminateCells(dom, bs, greedy), eliminateCells(dom, bs, other), eliminateCells(dom, bs, got)
		if s > g || s > o {
			t.Fatalf("trial %d: searched tree %g cells, starts %g and %g", trial, s, o, g)
		}
		if g >= minOrderSearch && s < g {
			smaller++
		}
	}
	if smaller == 0 {
		t.Error("no random graph got a smaller tree than greedy's: the search is not exercised")
	}
	t.Logf("%d of 200 random graphs got a smaller tree than greedy's", smaller)
}

func allSingles(d int) [][]int {
	out := make([][]int, d)
	for a := range d {
		out[a] = []int{a}
	}
	return out
}

// TestSearchOrderSmallOrWide: a small tree, and a domain over 64
// attributes, keep the first start.
func TestSearchOrderSmallOrWide(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, d := range []int{5, 70} {
		dom := randomDomain(t, rng, d, 2)
		bs := bitsets(dom, allSingles(d))
		start := rng.Perm(d)
		if got := searchOrder(dom, bs, start); !slices.Equal(got, start) {
			t.Errorf("%d attributes: order %v, want the start %v", d, got, start)
		}
	}
}

// TestFitOrderSameModel: a fit over the searched tree is the fit over
// greedy's, to round-off (the potentials stay in the span of the measured
// sets' functions whatever the cliques).
func TestFitOrderSameModel(t *testing.T) {
	dom, sets := wideGraph(t)
	ds := randomDataset(t, 11, slices.Clone(dom.sizes), 3000)
	rng := rand.New(rand.NewPCG(12, 13))
	meas := measure(ds, sets, 5, rng)
	// The domain names of randomDataset differ from wideGraph's.
	dom = ds.dom
	fit := func(search bool, warm *Model, meas []Measurement) *Model {
		t.Helper()
		defer func(s bool) { searchOrders = s }(searchOrders)
		searchOrders = search
		m, err := Estimate(context.Background(), dom, meas, &EstimateOptions{Iters: 30, WarmStart: warm})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	searched, greedy := fit(true, nil, meas), fit(false, nil, meas)
	if searched.jt.total >= greedy.jt.total {
		t.Fatalf("searched tree %d cells, greedy's %d: the search is not exercised", searched.jt.total, greedy.jt.total)
	}
	probe := append(slices.Clone(sets), []int{1, 3, 7}, []int{2, 20, 29}, []int{0, 15, 24})
	for _, s := range probe {
		a, b := searched.marginal(s, nil, nil, nil), greedy.marginal(s, nil, nil, nil)
		for i := range a {
			if math.Abs(a[i]-b[i]) > 1e-6*searched.total {
				t.Fatalf("marginal %v cell %d: %v over the searched tree, %v over greedy's", s, i, a[i], b[i])
			}
		}
	}
	// A refit of the same sets keeps its warm start's tree, so that the
	// fit can start from its potentials in place.
	if refit := fit(true, searched, meas); !sameCliques(refit.jt, searched.jt) {
		t.Errorf("a warm-started refit of the same sets has cliques %v, its warm start %v", refit.jt.cliques, searched.jt.cliques)
	}
}

// BenchmarkFitOrder is the search a fit of the wide graph's sets pays:
// greedy's order and its improvement (about a millisecond; AIM fits about
// 45 times a run).
func BenchmarkFitOrder(b *testing.B) {
	dom, sets := wideGraph(b)
	for b.Loop() {
		fitOrder(dom, sets, nil)
	}
}

// TestImproveStopsAtItsBudget: improve measures no more orders than it is
// given: none leaves the start, and the wide graph needs more than one
// pass's worth to reach its smaller tree.
func TestImproveStopsAtItsBudget(t *testing.T) {
	dom, sets := wideGraph(t)
	bs := bitsets(dom, sets)
	greedy, _ := eliminate(dom, bs, nil)
	g := newOrderGraph(dom, bs)
	size := g.treeCells(greedy)
	if o, s := g.improve(slices.Clone(greedy), size, 0); !slices.Equal(o, greedy) || s != size {
		t.Errorf("no budget: order %v (%g cells), want the start %v (%g)", o, s, greedy, size)
	}
	_, one := g.improve(slices.Clone(greedy), size, 30*29)
	_, all := g.improve(slices.Clone(greedy), size, 1<<20)
	if !(all < one && one <= size) || all > 433869 {
		t.Errorf("one pass: %g cells, unbounded: %g, start %g", one, all, size)
	}
}
