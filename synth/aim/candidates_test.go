package aim

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/internal/marginal"
)

// TestClosure checks the downward closure and its weights against a brute
// force over all subsets of the attributes.
func TestClosure(t *testing.T) {
	w := []synth.Marginal{
		{Attrs: []int{0, 1, 2}, Weight: 1},
		{Attrs: []int{1, 2, 4}, Weight: 2.5},
		{Attrs: []int{3}, Weight: 0.5},
	}
	cands := closure(w)
	const d = 5
	got := map[string]float64{}
	for _, c := range cands {
		got[synth.Key(c.attrs)] = c.weight
		for _, p := range c.parents {
			if !marginal.Subset(c.attrs, w[p].Attrs) {
				t.Errorf("parent %v of %v does not contain it", w[p].Attrs, c.attrs)
			}
		}
	}
	want := 0
	for mask := 1; mask < 1<<d; mask++ {
		var sub []int
		for a := 0; a < d; a++ {
			if mask&(1<<a) != 0 {
				sub = append(sub, a)
			}
		}
		in, weight := false, 0.0
		for _, m := range w {
			in = in || marginal.Subset(sub, m.Attrs)
			weight += m.Weight * float64(marginal.Intersect(sub, m.Attrs))
		}
		g, ok := got[synth.Key(sub)]
		if ok != in {
			t.Errorf("%v: in closure = %v, want %v", sub, ok, in)
		}
		if in {
			want++
			if g != weight {
				t.Errorf("%v: weight %v, want %v", sub, g, weight)
			}
		}
	}
	if len(cands) != want {
		t.Errorf("%d candidates, want %d (duplicates?)", len(cands), want)
	}
	for i := 1; i < len(cands); i++ {
		if len(cands[i].attrs) < len(cands[i-1].attrs) {
			t.Fatal("candidates not ordered by size")
		}
	}
}

// TestFilterRespectsCapacity checks step 5c with an independent size
// function: every admitted candidate either keeps the model within the
// limit or lies inside a current clique, and every rejected one does
// neither.
func TestFilterRespectsCapacity(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	sizes := []int{2, 3, 5, 7, 11, 13, 4, 6}
	// A stand-in size: the sum over (deduplicated) cliques of their cells,
	// in "MB". It is monotone in the clique set like the real one.
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
	var w []synth.Marginal
	for i := 0; i < 10; i++ {
		perm := rng.Perm(len(sizes))[:3]
		slices.Sort(perm)
		w = append(w, synth.Marginal{Attrs: perm, Weight: 1})
	}
	cands := closure(w)
	for trial := 0; trial < 200; trial++ {
		var cliques [][]int
		for i := 0; i < rng.IntN(4); i++ {
			cliques = addMaximal(cliques, cands[rng.IntN(len(cands))].attrs)
		}
		free := cliques
		limit := rng.Float64() * 1500
		admitted := filter(nil, cands, cliques, free, limit, size)
		isAdmitted := map[int]bool{}
		for _, i := range admitted {
			isAdmitted[i] = true
		}
		for i, c := range cands {
			fits := size(append(slices.Clone(cliques), c.attrs)) <= limit
			inside := containedIn(c.attrs, free)
			if isAdmitted[i] != (fits || inside) {
				t.Fatalf("trial %d: candidate %v admitted=%v but fits=%v inside=%v (limit %v)",
					trial, c.attrs, isAdmitted[i], fits, inside, limit)
			}
		}
	}
}

func TestAddMaximal(t *testing.T) {
	var s [][]int
	s = addMaximal(s, []int{1})
	s = addMaximal(s, []int{1, 2})
	s = addMaximal(s, []int{2})
	s = addMaximal(s, []int{3})
	s = addMaximal(s, []int{1, 2, 3})
	if len(s) != 1 || !slices.Equal(s[0], []int{1, 2, 3}) {
		t.Errorf("maximal sets %v, want [[1 2 3]]", s)
	}
}
