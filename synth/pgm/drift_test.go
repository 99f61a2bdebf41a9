package pgm

import (
	"context"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/dpsql/dpsql/synth/pgm/internal/kernel"
)

// TestDriftBound checks Drift.Bound against the exact L1 change of every
// marginal of up to three attributes, between random models on random
// junction trees where the later tree's cliques cover the earlier's (the
// later model measures the earlier sets and more), with unrelated
// potentials, nearby potentials and equal ones.
func TestDriftBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	ctx := context.Background()
	checked, uncovered := 0, 0
	for trial := range 80 {
		d := 3 + rng.IntN(6)
		dom := randomDomain(t, rng, d, 4)
		sets := randomSets(rng, d, 1+rng.IntN(4), 3)
		for a := range d - 1 {
			if rng.IntN(2) == 0 {
				sets = append(sets, []int{a, a + 1})
			}
		}
		oldJT, err := newJunctionTree(dom, sets, nil)
		if err != nil {
			t.Fatal(err)
		}
		more := append(append([][]int(nil), sets...), randomSets(rng, d, 1+rng.IntN(2), 3)...)
		if trial%4 == 3 {
			// A later tree unrelated to the earlier one.
			more = randomSets(rng, d, 2+rng.IntN(3), 3)
		}
		newJT, err := newJunctionTree(dom, more, nil)
		if err != nil {
			t.Fatal(err)
		}
		randTheta := func(jt *junctionTree, scale float64) []float64 {
			th := make([]float64, jt.total)
			for i := range th {
				th[i] = rng.NormFloat64() * scale
			}
			return th
		}
		old := newModel(oldJT, randTheta(oldJT, 1.5), 1000)
		mode := trial % 3
		var m *Model
		switch mode {
		case 0: // unrelated
			m = newModel(newJT, randTheta(newJT, 1.5), 900+200*rng.Float64())
		case 1, 2: // old's potentials carried over (+ a small change in mode 1)
			th := make([]float64, newJT.total)
			if err := warmStart(th, newJT, old); err != nil {
				t.Fatal(err)
			}
			if mode == 1 {
				for i := range th {
					th[i] += 0.05 * rng.NormFloat64()
				}
			}
			m = newModel(newJT, th, 1000)
		}
		covered := true
		for _, c := range oldJT.cliques {
			covered = covered && newJT.containing(c) >= 0
		}
		dr, ok, err := NewDrift(ctx, old, m)
		if err != nil || (covered && !ok) {
			t.Fatalf("trial %d: NewDrift ok=%v err=%v, covered %v (old cliques %v, new %v)", trial, ok, err, covered, oldJT.cliques, newJT.cliques)
		}
		// DriftBounds, which holds one clique's marginals at a time, gives
		// the same bounds bit for bit, on the sets it is asked for.
		subsets := allSubsets(d, 3)
		streamed := make([]float64, len(subsets))
		want := func(i int) bool { return i%3 != 1 }
		sok, err := DriftBounds(ctx, old, m, subsets, want, streamed)
		if err != nil || sok != ok {
			t.Fatalf("trial %d: DriftBounds ok=%v err=%v, NewDrift ok=%v", trial, sok, err, ok)
		}
		if !ok {
			continue
		}
		for i, s := range subsets {
			if want(i) && streamed[i] != dr.Bound(s) {
				t.Fatalf("trial %d: DriftBounds %v = %v, Bound %v", trial, s, streamed[i], dr.Bound(s))
			}
			if !want(i) && streamed[i] != 0 {
				t.Fatalf("trial %d: DriftBounds wrote %v for %v, not asked for", trial, streamed[i], s)
			}
		}
		checkChangeRef(t, dr, subsets)
		checked++
		if !covered {
			uncovered++
		}
		for _, s := range allSubsets(d, 3) {
			a, b := m.Marginal(s), old.Marginal(s)
			var l1 float64
			for i := range a {
				l1 += math.Abs(a[i] - b[i])
			}
			bound := dr.Bound(s)
			if l1 > bound {
				t.Fatalf("trial %d (mode %d): ‖Δ marginal %v‖₁ = %v > bound %v (cliques %v)", trial, mode, s, l1, bound, newJT.cliques)
			}
			if mode == 2 && covered && bound > 1e-5 {
				t.Fatalf("trial %d: equal models, bound %v on %v", trial, bound, s)
			}
		}
	}
	if checked < 60 || uncovered < 5 {
		t.Fatalf("%d of 80 trials bounded, %d of them on a common tree of both models' cliques", checked, uncovered)
	}
}

// TestDriftCommonTree checks the bound on a pair whose trees do not nest
// (old's 3-way clique is split in the later tree): it is bounded on a tree
// of both models' cliques, and exceeds the exact change of every marginal.
func TestDriftCommonTree(t *testing.T) {
	dom, err := NewDomain([]string{"a", "b", "c"}, []int{2, 3, 2})
	if err != nil {
		t.Fatal(err)
	}
	oldJT, _ := newJunctionTree(dom, [][]int{{0, 1, 2}}, nil)
	newJT, _ := newJunctionTree(dom, [][]int{{0, 1}, {1, 2}}, nil)
	rng := rand.New(rand.NewPCG(63, 64))
	th := func(n int) []float64 {
		x := make([]float64, n)
		for i := range x {
			x[i] = rng.NormFloat64()
		}
		return x
	}
	old := newModel(oldJT, th(oldJT.total), 10)
	m := newModel(newJT, th(newJT.total), 10)
	d, ok, err := NewDrift(context.Background(), old, m)
	if !ok || err != nil {
		t.Fatalf("NewDrift ok=%v err=%v, want a common tree", ok, err)
	}
	for _, s := range allSubsets(3, 3) {
		a, b := m.Marginal(s), old.Marginal(s)
		var l1 float64
		for i := range a {
			l1 += math.Abs(a[i] - b[i])
		}
		if l1 > d.Bound(s) {
			t.Fatalf("‖Δ marginal %v‖₁ = %v > bound %v", s, l1, d.Bound(s))
		}
	}
}

// allSubsets returns every non-empty ascending subset of 0..d-1 with at most
// k attributes.
func allSubsets(d, k int) [][]int {
	var out [][]int
	var rec func(start int, cur []int)
	rec = func(start int, cur []int) {
		if len(cur) > 0 {
			out = append(out, append([]int(nil), cur...))
		}
		if len(cur) == k {
			return
		}
		for a := start; a < d; a++ {
			rec(a+1, append(cur, a))
		}
	}
	rec(0, nil)
	return out
}

// checkChangeRef compares every clique term the bounds of sets read
// (Drift.change, which reads the clique marginals in place and each cell's
// separator cell through a tiled map) with changeRef, the same sums over
// copies and a full index map, bit for bit, with tiles that end inside rows
// too.
func checkChangeRef(t *testing.T, d *Drift, sets [][]int) {
	t.Helper()
	defer func(n int) { tileCells = n }(tileCells)
	for _, tile := range []int{3, 1024} {
		tileCells = tile
		for _, s := range sets {
			need := bitsetOf(d.dom.Len(), s)
			kept, top := d.jt.subtree(need)
			for v := range d.jt.cliques {
				if top < 0 || !kept[v] || !d.below(v, top) {
					continue
				}
				d.setKeep(need, kept, v, top)
				clear(d.reduced)
				got, want := d.change(v, v == top), changeRef(d, v, v == top)
				if math.Float64bits(got) != math.Float64bits(want) {
					t.Fatalf("set %v clique %v (tile %d): term %v, reference %v", s, d.jt.cliques[v], tile, got, want)
				}
			}
		}
	}
	clear(d.reduced)
}

// changeRef is Drift.change as first written: the reduced (or copied)
// marginals and a full map from each cell to its separator cell.
func changeRef(d *Drift, v int, top bool) float64 {
	jt := d.jt
	c := jt.cliques[v]
	sub := d.keep.within(c)
	if top && len(sub) == len(c) {
		return d.cd[v]
	}
	n := d.dom.Cells(sub)
	pa, qa := make([]float64, n), make([]float64, n)
	if len(sub) == len(c) {
		copy(pa, d.p[v])
		copy(qa, d.q[v])
	} else {
		red := kernel.NewReduction(jt.sizesOf(c), positions(c, sub))
		scratch := make([]float64, red.Scratch())
		red.Sum(pa, d.p[v], scratch)
		red.Sum(qa, d.q[v], scratch)
	}
	var x float64
	if top {
		for i, p := range pa {
			x += math.Abs(p - qa[i])
		}
		return x
	}
	sep := jt.sep[v]
	dims := positions(sub, sep)
	ns := d.dom.Cells(sep)
	ps, qs := make([]float64, ns), make([]float64, ns)
	red := kernel.NewReduction(d.dom.sizesOf(sub), dims)
	scratch := make([]float64, red.Scratch())
	red.Sum(ps, pa, scratch)
	red.Sum(qs, qa, scratch)
	idx := kernel.Map(d.dom.sizesOf(sub), dims)
	per := make([]float64, ns)
	for i, p := range pa {
		s := idx[i]
		if ps[s] > 0 && qs[s] > 0 {
			per[s] += math.Abs(p/ps[s] - qa[i]/qs[s])
		}
	}
	for s, w := range per {
		x += qs[s] * w
	}
	return x
}

// TestDriftBoundsAllocs: DriftBounds reuses its reduction buffers from
// clique to clique and set to set. A scratch table per reduction was most
// of the garbage between AIM's rounds at ε = 10 (50–60 MB per call on
// adult), which raised the heap's peak. Here a call allocated 1.6 times
// the model's bytes with a scratch per reduction, 0.8 times with them
// reused (the tables of both models' elimination caches).
func TestDriftBoundsAllocs(t *testing.T) {
	ctx := context.Background()
	sizes := []int{6, 6, 6, 6, 2, 6, 6, 2}
	names := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	dom, err := NewDomain(names, sizes)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(81, 82))
	old := normalModel(t, rng, dom, [][]int{{0, 1, 2, 3, 4}, {3, 4, 5, 6}, {6, 7}}, 1, 1000)
	m := normalModel(t, rng, dom, [][]int{{0, 1, 2, 3, 4}, {2, 3, 4, 5, 6}, {5, 6, 7}}, 1, 1000)
	sets := allSubsets(8, 3)
	dst := make([]float64, len(sets))
	all := func(int) bool { return true }
	if _, err := DriftBounds(ctx, old, m, sets, all, dst); err != nil { // warm the kernels' plans
		t.Fatal(err)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.TotalAlloc
	ok, err := DriftBounds(ctx, old, m, sets, all, dst)
	if err != nil || !ok {
		t.Fatalf("DriftBounds ok=%v err=%v", ok, err)
	}
	runtime.ReadMemStats(&ms)
	const model = 8 * (6*6*6*6*2 + 6*6*6*2*6*6 + 6*6*2) // bytes of m's cliques
	allocated := ms.TotalAlloc - before
	if bound := uint64(model * 6 / 5); allocated > bound {
		t.Errorf("DriftBounds over %d sets allocated %d bytes, want at most %d", len(sets), allocated, bound)
	}
}
