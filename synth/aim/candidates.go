package aim

import (
	"slices"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/internal/marginal"
)

// candidate is one member of the workload's downward closure.
type candidate struct {
	attrs  []int
	key    string  // synth.Key(attrs)
	weight float64 // w_r = Σ_i c_i·|r ∩ r_i|
	// parents are the workload sets that contain attrs (indexes into the
	// workload), used to compute model marginals by projection.
	parents []int
	// coarse, for a coarse twin (coarse.go), bins the marginal on attrs;
	// nil for a candidate measured on its own domain.
	coarse *coarsening
	// twin is the index of a fine candidate's coarse twin, −1 if none.
	twin int
}

// closure returns the downward closure of the workload (every non-empty
// subset of some workload set), smallest sets first, each with its weight
// w_r = Σ_i c_i·|r ∩ r_i| over the whole workload.
func closure(w []synth.Marginal) []candidate {
	var out []candidate
	seen := make(map[string]int)
	for wi, m := range w {
		n := len(m.Attrs)
		for mask := 1; mask < 1<<n; mask++ {
			sub := make([]int, 0, n)
			for i, a := range m.Attrs {
				if mask&(1<<i) != 0 {
					sub = append(sub, a)
				}
			}
			k := synth.Key(sub)
			if j, ok := seen[k]; ok {
				if !slices.Contains(out[j].parents, wi) {
					out[j].parents = append(out[j].parents, wi)
				}
				continue
			}
			seen[k] = len(out)
			out = append(out, candidate{attrs: sub, key: k, parents: []int{wi}, twin: -1})
		}
	}
	for i := range out {
		for _, m := range w {
			out[i].weight += m.Weight * float64(marginal.Intersect(out[i].attrs, m.Attrs))
		}
	}
	slices.SortStableFunc(out, func(a, b candidate) int { return len(a.attrs) - len(b.attrs) })
	return out
}
