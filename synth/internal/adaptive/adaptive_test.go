package adaptive

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/pgm"
)

// TestFilterRespectsCapacity checks AIM step 5c with an independent size
// function: every admitted set either keeps the model within the limit or
// lies inside a current clique, and every rejected one does neither.
func TestFilterRespectsCapacity(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	sizes := []int{2, 3, 5, 7, 11, 13, 4, 6}
	// A stand-in for the junction-tree size: the sum of the cells of the
	// distinct cliques. Like the real one it grows with the clique set.
	size := func(cliques [][]int) float64 {
		seen := map[string]bool{}
		s := 0.0
		for _, c := range cliques {
			if seen[synth.Key(c)] {
				continue
			}
			seen[synth.Key(c)] = true
			n := 1
			for _, a := range c {
				n *= sizes[a]
			}
			s += float64(n)
		}
		return s
	}
	var sets [][]int
	for i := 0; i < 30; i++ {
		perm := rng.Perm(len(sizes))[:1+rng.IntN(3)]
		slices.Sort(perm)
		sets = append(sets, perm)
	}
	for trial := 0; trial < 300; trial++ {
		var cliques [][]int
		for i := 0; i < rng.IntN(4); i++ {
			cliques = AddMaximal(cliques, sets[rng.IntN(len(sets))])
		}
		limit := rng.Float64() * 1500
		admitted := Filter(nil, sets, cliques, cliques, limit, size)
		isAdmitted := map[int]bool{}
		for _, i := range admitted {
			isAdmitted[i] = true
		}
		for i, s := range sets {
			fits := size(append(slices.Clone(cliques), s)) <= limit
			inside := ContainedIn(s, cliques)
			if isAdmitted[i] != (fits || inside) {
				t.Fatalf("trial %d: set %v admitted=%v but fits=%v inside=%v (limit %v)",
					trial, s, isAdmitted[i], fits, inside, limit)
			}
			if isAdmitted[i] && !inside && size(append(slices.Clone(cliques), s)) > limit {
				t.Fatalf("trial %d: admitted %v breaks the limit", trial, s)
			}
		}
	}
}

// TestSizerKeepsSizes: one Sizer across rounds of growing (and in-place
// reused) clique lists admits what a fresh Filter admits, and sizes a
// candidate again only after the cliques change.
func TestSizerKeepsSizes(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	sizes := []int{2, 3, 5, 7, 11, 13}
	calls := 0
	size := func(cliques [][]int) float64 {
		calls++
		s := 0.0
		for _, c := range cliques {
			n := 1
			for _, a := range c {
				n *= sizes[a]
			}
			s += float64(n)
		}
		return s
	}
	var sets [][]int
	for range 20 {
		perm := rng.Perm(len(sizes))[:1+rng.IntN(3)]
		slices.Sort(perm)
		sets = append(sets, perm)
	}
	z := Sizer{Size: size}
	var cliques [][]int
	for round := range 40 {
		if round%3 == 0 {
			cliques = AddMaximal(cliques, sets[rng.IntN(len(sets))])
		}
		limit := rng.Float64() * 600
		want := Filter(nil, sets, cliques, cliques, limit, size)
		calls = 0
		got := z.Filter(nil, sets, cliques, cliques, limit)
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: Sizer admits %v, Filter %v", round, got, want)
		}
		if round%3 != 0 && calls != 0 {
			t.Fatalf("round %d: cliques unchanged, but %d sizes computed again", round, calls)
		}
	}
}

func TestAddMaximal(t *testing.T) {
	var s [][]int
	for _, a := range [][]int{{1}, {1, 2}, {2}, {3}, {1, 2, 3}, {0, 4}} {
		s = AddMaximal(s, a)
	}
	want := [][]int{{1, 2, 3}, {0, 4}}
	if !slices.EqualFunc(s, want, slices.Equal[[]int]) {
		t.Errorf("maximal sets %v, want %v", s, want)
	}
}

// TestTracker checks that only the snapshots of some candidate's last
// round survive, against a direct recomputation.
func TestTracker(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const n, rounds = 12, 40
	models := make([]*pgm.Model, rounds+1)
	for i := range models {
		models[i] = new(pgm.Model)
	}
	tr := NewTracker(n)
	last := make([]int, n)
	for t := 1; t <= rounds; t++ {
		var c []int
		for i := 0; i < n; i++ {
			// Later rounds drop candidates more often.
			if rng.Float64() > float64(t)/rounds*0.8 {
				c = append(c, i)
				last[i] = t
			}
		}
		tr.Round(t, c, models[t-1])
	}
	attrs := make([][]int, n)
	for i := range attrs {
		attrs[i] = []int{i}
	}
	var res synth.Result
	tr.Fill(&res, attrs)
	wantRounds := map[int]bool{}
	for i, cr := range res.LastCandidate {
		if cr.Round != last[i] {
			t.Errorf("candidate %d: last round %d, want %d", i, cr.Round, last[i])
		}
		if last[i] != 0 {
			wantRounds[last[i]] = true
		}
	}
	if len(res.Snapshots) != len(wantRounds) {
		t.Errorf("%d snapshots, want %d", len(res.Snapshots), len(wantRounds))
	}
	for k, s := range res.Snapshots {
		if !wantRounds[s.Round] || s.Model != models[s.Round-1] {
			t.Errorf("snapshot %d: round %d model mismatch or not a last round", k, s.Round)
		}
		if k > 0 && s.Round <= res.Snapshots[k-1].Round {
			t.Error("snapshots out of order")
		}
	}
}

// TestFilterWithModelSize repeats the capacity check with the engine's real
// junction-tree size: whatever Filter admits outside the current cliques
// keeps pgm.ModelSize within the limit.
func TestFilterWithModelSize(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	sizes := []int{30, 20, 50, 40, 10, 60, 25}
	names := []string{"a", "b", "c", "d", "e", "f", "g"}
	dom, err := pgm.NewDomain(names, sizes)
	if err != nil {
		t.Fatal(err)
	}
	size := func(c [][]int) float64 { return pgm.ModelSize(dom, c) }
	var sets [][]int
	for i := 0; i < 40; i++ {
		perm := rng.Perm(len(sizes))[:1+rng.IntN(3)]
		slices.Sort(perm)
		sets = append(sets, perm)
	}
	for trial := 0; trial < 100; trial++ {
		var cliques [][]int
		for i := 0; i < rng.IntN(6); i++ {
			cliques = AddMaximal(cliques, sets[rng.IntN(len(sets))])
		}
		limit := rng.Float64() * 2 // MB; 3-way sets here are up to 0.7 MB
		for _, i := range Filter(nil, sets, cliques, cliques, limit, size) {
			if ContainedIn(sets[i], cliques) {
				continue
			}
			if got := size(append(slices.Clone(cliques), sets[i])); got > limit {
				t.Fatalf("trial %d: admitted %v: model %v MB > limit %v", trial, sets[i], got, limit)
			}
		}
	}
}
