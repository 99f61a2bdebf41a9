package aim

import (
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
