package pgm

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dpsql/dpsql/synth/pgm/internal/kernel"
)

// naiveLoss is the reference for objective.value and grad: every
// measurement is projected straight from its clique through an index map,
// and its gradient broadcast straight back.
func naiveLoss(jt *junctionTree, meas []Measurement, p []float64, total float64) (float64, []float64) {
	grad := make([]float64, jt.total)
	var loss float64
	for _, m := range meas {
		k := jt.containing(m.Attrs)
		idx := jt.projMap(k, m.Attrs)
		x := make([]float64, jt.dom.Cells(m.Attrs))
		kernel.Project(x, jt.block(p, k), idx)
		g := make([]float64, len(x))
		for j := range x {
			r := (total*x[j] - m.Y[j]) / m.Sigma
			loss += 0.5 * r * r
			g[j] = r / m.Sigma
		}
		kernel.Expand(jt.block(grad, k), g, idx)
	}
	return loss, grad
}

func TestObjectiveAgainstNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(39, 40))
	var pseudo, nested int
	for trial := range 100 {
		d := 2 + rng.IntN(5)
		dom := randomDomain(t, rng, d, 4)
		sets := randomSets(rng, d, 1+rng.IntN(8), 3)
		// Sub-sets of the same cliques make nested and intermediate tables.
		for _, s := range sets[:len(sets):len(sets)] {
			if len(s) > 1 {
				sets = append(sets, s[1:], s[:len(s)-1])
			}
		}
		var meas []Measurement
		for _, s := range sets {
			y := make([]float64, dom.Cells(s))
			for i := range y {
				y[i] = rng.Float64() * 100
			}
			meas = append(meas, Measurement{Attrs: s, Y: y, Sigma: 0.5 + rng.Float64()})
		}
		m := normalModel(t, rng, dom, sets, 1, 1)
		jt, theta, p := m.jt, m.potentials(), m.p
		obj := newObjective(jt, meas, L2, 300)
		for _, m := range obj.meas {
			if m.pseudo {
				pseudo++
			}
			if m.src >= 0 {
				nested++
			}
		}
		got := obj.value(p)
		grad := make([]float64, jt.total)
		for i := range grad {
			grad[i] = math.NaN() // grad must overwrite
		}
		obj.grad(grad)
		want, wantGrad := naiveLoss(jt, meas, p, 300)
		// 1e-9: the same terms summed in another order.
		if !near(got, want, 1e-9) {
			t.Fatalf("trial %d: loss %v, want %v", trial, got, want)
		}
		for i := range grad {
			if !near(grad[i], wantGrad[i], 1e-9) {
				t.Fatalf("trial %d: gradient %d = %v, want %v", trial, i, grad[i], wantGrad[i])
			}
		}
		// The Armijo test's ⟨∇L, p − p'⟩, taken in measurement space,
		// against the arenas.
		obj.accept()
		for i := range theta {
			theta[i] += rng.NormFloat64()
		}
		p2 := make([]float64, jt.total)
		newBPWork(jt).run(p2, theta)
		obj.value(p2)
		var wantDot, scale float64
		for i := range grad {
			wantDot += wantGrad[i] * (p[i] - p2[i])
			scale += math.Abs(wantGrad[i] * (p[i] - p2[i]))
		}
		if gotDot := obj.dirDot(); math.Abs(gotDot-wantDot) > 1e-12*scale {
			t.Fatalf("trial %d: dirDot %v, want %v", trial, gotDot, wantDot)
		}
	}
	if pseudo == 0 || nested == 0 {
		t.Errorf("paths not exercised: %d intermediate tables, %d nested projections", pseudo, nested)
	}
}

// TestGradChunkRuns: gradChunk adds the broadcast of a measurement whose
// kept axes end its clique's run by run (Axpy) instead of gathering
// through its index map; the clique gradient must be the gathered one bit
// for bit, whatever pieces it is asked for in.
func TestGradChunkRuns(t *testing.T) {
	defer func(r int) { minRun = r }(minRun)
	rng := rand.New(rand.NewPCG(71, 72))
	runs := 0
	for trial := range 30 {
		minRun = []int{1, 2, 5}[trial%3]
		d := 3 + rng.IntN(4)
		dom := randomDomain(t, rng, d, 5)
		ds := randomDataset(t, uint64(700+trial), slices.Clone(dom.sizes), 500)
		meas := measure(ds, dedupe(randomSets(rng, d, 2+rng.IntN(4), 3)), 3, rng)
		m := normalModel(t, rng, dom, setsOf(meas), 1, 1)
		jt, p := m.jt, m.p
		obj := newObjective(jt, meas, L2, 500)
		obj.value(p)
		obj.gradTables()
		for k := range jt.cliques {
			want := make([]float64, jt.cells[k])
			for _, i := range obj.bySrc[k] {
				m := &obj.meas[i]
				if m.run > 0 {
					runs++
				}
				if m.idx == nil {
					kernel.Axpy(want, 1, m.g)
				} else {
					m.idx.Expand(want, m.g, 0)
				}
			}
			got := make([]float64, len(want))
			for lo := 0; lo < len(got); {
				hi := min(len(got), lo+1+rng.IntN(40))
				obj.gradChunk(k, got[lo:hi], lo)
				lo = hi
			}
			for i := range want {
				if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
					t.Fatalf("trial %d clique %v cell %d: %v, gathered %v", trial, jt.cliques[k], i, got[i], want[i])
				}
			}
		}
	}
	if runs < 10 {
		t.Fatalf("only %d measurements were broadcast by runs", runs)
	}
}
