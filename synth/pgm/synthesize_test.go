package pgm

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// sampleCounts counts the synthetic records on attrs (ascending).
func sampleCounts(t *testing.T, dom *Domain, cols [][]uint16, attrs []int) []float64 {
	t.Helper()
	ds, err := NewDataset(dom, cols)
	if err != nil {
		t.Fatal(err)
	}
	return ds.MarginalTo(nil, attrs)
}

func TestSynthesizeRoundingBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for trial := range 60 {
		d := 1 + rng.IntN(6)
		m := randomModel(t, rng, d, 1)
		rows := 1 + rng.IntN(3000)
		cols, err := m.Synthesize(rand.New(rand.NewPCG(uint64(trial), 1)), rows)
		if err != nil {
			t.Fatal(err)
		}
		jt := m.jt
		scale := float64(rows) / m.total
		// The first attribute: within 1 of rows·p.
		first := []int{jt.order[d-1]}
		got := sampleCounts(t, m.dom, cols, first)
		want := m.Marginal(first)
		for i := range got {
			if math.Abs(got[i]-scale*want[i]) >= 1+1e-9 {
				t.Fatalf("trial %d: first attribute cell %d = %v, want %v ± 1", trial, i, got[i], scale*want[i])
			}
		}
		// Every later attribute a with conditioning set S:
		// |n(s,v) − n(s)·p(v|s)| < 1, and the family marginal satisfies
		// |n(s,v) − rows·p(s,v)| < 1 + p(v|s)·|n(s) − rows·p(s)|.
		for i := d - 2; i >= 0; i-- {
			a := jt.order[i]
			var cond []int
			for _, b := range jt.order[i+1:] {
				if jt.adjacent(a, b) {
					cond = append(cond, b)
				}
			}
			slices.Sort(cond)
			ordered := append(slices.Clone(cond), a) // cond then a: a varies fastest
			joint := sampleMarginalOrdered(m.dom, cols, ordered)
			model := m.Marginal(ordered)
			ns := sampleMarginalOrdered(m.dom, cols, cond)
			modelS := m.Marginal(cond)
			na := m.dom.Size(a)
			for s := range ns {
				for v := range na {
					pvs := 0.0
					if modelS[s] > 0 {
						pvs = model[s*na+v] / modelS[s]
					}
					n := joint[s*na+v]
					if math.Abs(n-ns[s]*pvs) >= 1+1e-9 {
						t.Fatalf("trial %d attr %d: n(s,v) = %v, n(s)·p(v|s) = %v", trial, a, n, ns[s]*pvs)
					}
					bound := 1 + pvs*math.Abs(ns[s]-scale*modelS[s])
					if math.Abs(n-scale*model[s*na+v]) >= bound+1e-9 {
						t.Fatalf("trial %d attr %d: family cell off by %v, bound %v", trial, a, math.Abs(n-scale*model[s*na+v]), bound)
					}
				}
			}
		}
	}
}

// sampleMarginalOrdered counts the synthetic records on attrs in the given
// order (last varies fastest).
func sampleMarginalOrdered(dom *Domain, cols [][]uint16, attrs []int) []float64 {
	out := make([]float64, dom.Cells(attrs))
	for r := range cols[0] {
		i := 0
		for _, a := range attrs {
			i = i*dom.Size(a) + int(cols[a][r])
		}
		out[i]++
	}
	return out
}

func TestSynthesizeUnbiased(t *testing.T) {
	// Averaged over seeds, every clique marginal of the sample converges to
	// the model's: randomized rounding keeps expected counts exact.
	rng := rand.New(rand.NewPCG(15, 16))
	dom := randomDomain(t, rng, 5, 3)
	jt, err := newJunctionTree(dom, [][]int{{0, 1}, {1, 2}, {2, 3}, {0, 3}, {3, 4}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	theta := make([]float64, jt.total)
	for i := range theta {
		theta[i] = rng.NormFloat64()
	}
	m := newModel(jt, theta, 1)
	const rows, runs = 101, 400
	sums := make([][]float64, len(jt.cliques))
	sq := make([][]float64, len(jt.cliques))
	for run := range runs {
		cols, err := m.Synthesize(rand.New(rand.NewPCG(uint64(run), 2)), rows)
		if err != nil {
			t.Fatal(err)
		}
		for k, c := range jt.cliques {
			got := sampleCounts(t, dom, cols, c)
			if sums[k] == nil {
				sums[k] = make([]float64, len(got))
				sq[k] = make([]float64, len(got))
			}
			for i, v := range got {
				sums[k][i] += v
				sq[k][i] += v * v
			}
		}
	}
	for k, c := range jt.cliques {
		want := m.Marginal(c)
		for i := range want {
			mean := sums[k][i] / runs
			sd := math.Sqrt(math.Max(sq[k][i]/runs-mean*mean, 0))
			// Five standard errors of the mean (false alarm ≈ 6e-7 per cell
			// under normality), plus 0.05 for cells with almost no spread.
			if math.Abs(mean-rows*want[i]) > 5*sd/math.Sqrt(runs)+0.05 {
				t.Errorf("clique %v cell %d: mean count %v, want %v", c, i, mean, rows*want[i])
			}
		}
	}
}

func TestRoundCounts(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	var r rounder // reused, as Synthesize does
	for range 1000 {
		n := 1 + rng.IntN(8)
		w := make([]float64, n)
		for i := range w {
			if rng.IntN(4) > 0 {
				w[i] = rng.Float64()
			}
		}
		g := rng.IntN(50)
		counts := make([]int, n)
		r.counts(counts, w, g, rng)
		sum, total := 0, 0.0
		for _, x := range w {
			total += x
		}
		for i, c := range counts {
			sum += c
			share := float64(g) / float64(n)
			if total > 0 {
				share = float64(g) * w[i] / total
			}
			if math.Abs(float64(c)-share) >= 1 {
				t.Fatalf("counts(%v, %d) cell %d = %d, share %v", w, g, i, c, share)
			}
		}
		if sum != g {
			t.Fatalf("counts(%v, %d) allocates %d", w, g, sum)
		}
	}
}

func TestSynthesizeEdges(t *testing.T) {
	rng := rand.New(rand.NewPCG(37, 38))
	m := randomModel(t, rng, 3, 10)
	if _, err := m.Synthesize(nil, 5); err == nil {
		t.Error("Synthesize without a random source succeeded")
	}
	if _, err := m.Synthesize(rng, -1); err == nil {
		t.Error("Synthesize of -1 rows succeeded")
	}
	cols, err := m.Synthesize(rng, 0)
	if err != nil || len(cols) != 3 || len(cols[0]) != 0 {
		t.Errorf("Synthesize of 0 rows = %v, %v", cols, err)
	}
	// The same seed gives the same records.
	a, _ := m.Synthesize(rand.New(rand.NewPCG(1, 1)), 100)
	b, _ := m.Synthesize(rand.New(rand.NewPCG(1, 1)), 100)
	if !slices.EqualFunc(a, b, slices.Equal) {
		t.Error("Synthesize is not reproducible from its seed")
	}
}

// TestSynthesizeAllocs bounds the memory Synthesize allocates besides the
// rows: the largest clique's index map and projection and the largest
// separator's group offsets, once. A map and a projection per attribute
// were a model's size of garbage or more, and buffers grown attribute by
// attribute the sum of their sizes, allocated after the final fit, where
// AIM's live heap is largest. Cliques of 20³ and 20⁴ cells: growing from
// the smaller to the larger clique allocates 12 bytes × 20³ (96 KB) beyond
// the bound of 12 × 20⁴ + 16 × 20³ and 48 KB.
func TestSynthesizeAllocs(t *testing.T) {
	sizes := []int{20, 20, 20, 20, 20, 20}
	dom, err := NewDomain([]string{"a", "b", "c", "d", "e", "f"}, sizes)
	if err != nil {
		t.Fatal(err)
	}
	for _, cliques := range [][][]int{{{0, 1, 2}, {2, 3, 4, 5}}, {{0, 1, 2, 3}, {3, 4, 5}}} {
		m := normalModel(t, rand.New(rand.NewPCG(71, 72)), dom, cliques, 1, 1000)
		const rows = 200
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		before := ms.TotalAlloc
		cols, err := m.Synthesize(rand.New(rand.NewPCG(1, 2)), rows)
		if err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&ms)
		allocated := ms.TotalAlloc - before
		if bound := uint64(12*20*20*20*20 + 16*20*20*20 + 48<<10); allocated > bound {
			t.Errorf("cliques %v: Synthesize of %d rows allocated %d bytes, want at most %d (the largest clique's map and projection, its separator's offsets, and the rows)", cliques, rows, allocated, bound)
		}
		if len(cols) != 6 || len(cols[0]) != rows {
			t.Fatalf("Synthesize returned %d columns of %d rows", len(cols), len(cols[0]))
		}
	}
}

// A cancelled synthesis stops before drawing an attribute and says why.
func TestSynthesizeContextCancelled(t *testing.T) {
	dom, err := NewDomain([]string{"a", "b", "c"}, []int{3, 4, 2})
	if err != nil {
		t.Fatal(err)
	}
	m := normalModel(t, rand.New(rand.NewPCG(3, 4)), dom, [][]int{{0, 1}, {1, 2}}, 0.5, 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cols, err := m.SynthesizeContext(ctx, rand.New(rand.NewPCG(1, 2)), 100)
	if !errors.Is(err, context.Canceled) || cols != nil {
		t.Fatalf("cancelled synthesis returned %d columns and error %v, want none and context.Canceled", len(cols), err)
	}
	if cols, err = m.SynthesizeContext(context.Background(), rand.New(rand.NewPCG(1, 2)), 100); err != nil || len(cols) != 3 {
		t.Fatalf("synthesis returned %d columns and error %v", len(cols), err)
	}
}
