package pgm

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestFactoredBrute checks Factored's set marginals and model against the
// joint table exp(Σ θ_i) enumerated cell by cell.
func TestFactoredBrute(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		dom := randomDomain(t, rng, 2+rng.IntN(4), 4)
		sets := randomSets(rng, dom.Len(), 1+rng.IntN(4), 3)
		f, err := NewFactored(dom, sets)
		if err != nil {
			t.Fatal(err)
		}
		thetas := make([][]float64, len(sets))
		for i, s := range sets {
			thetas[i] = make([]float64, dom.Cells(s))
			for c := range thetas[i] {
				thetas[i][c] = rng.NormFloat64()
			}
			f.Add(i, thetas[i])
		}
		// Cell updates must equal adding one-hot tables.
		for range 8 {
			i := rng.IntN(len(sets))
			c := rng.IntN(dom.Cells(sets[i]))
			d := rng.NormFloat64()
			f.AddCell(i, c, d)
			thetas[i][c] += d
		}

		var joint []float64
		var z float64
		forEachCell(dom, func(x []int) {
			var s float64
			for i, set := range sets {
				s += thetas[i][cellIndex(dom, set, x)]
			}
			joint = append(joint, math.Exp(s))
			z += math.Exp(s)
		})
		for i, set := range sets {
			want := make([]float64, dom.Cells(set))
			k := 0
			forEachCell(dom, func(x []int) {
				want[cellIndex(dom, set, x)] += joint[k] / z
				k++
			})
			got := f.SetMarginal(i, nil)
			for c := range want {
				if math.Abs(got[c]-want[c]) > 1e-12 {
					t.Fatalf("seed %d set %v cell %d: %v, want %v", seed, set, c, got[c], want[c])
				}
			}
		}
		all := make([]int, dom.Len())
		for a := range all {
			all[a] = a
		}
		m := f.Model(10)
		got := m.Marginal(all)
		if v := f.View(10).Marginal(all); !slices.Equal(v, got) {
			t.Fatalf("seed %d: View differs from Model", seed)
		}
		for k := range joint {
			if math.Abs(got[k]-10*joint[k]/z) > 1e-10 {
				t.Fatalf("seed %d: model cell %d = %v, want %v", seed, k, got[k], 10*joint[k]/z)
			}
		}
	}
}
