package pgm_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/dpsql/dpsql/internal/cputime"
	"github.com/dpsql/dpsql/internal/widegen"
	"github.com/dpsql/dpsql/synth/pgm"
	"github.com/dpsql/dpsql/synth/pgm/pgmbench"
)

// wideSelections are the sets one AIM run on wide30 (ε = 1) selected, in
// order of attribute: fitted together they give its final junction tree
// (2.7 MB, root [0 2 3 6 19] of 242 592 cells, a chain of 6 384-cell
// separators below it), the kind of model over which wide30's late rounds
// score thousands of 3-way candidates.
var wideSelections = [][]int{
	{0, 1, 2}, {0, 1, 4}, {0, 2, 16}, {0, 2, 5}, {0, 3, 18}, {0, 3, 4}, {0, 6, 19}, {0, 7, 18},
	{1, 2, 4}, {1, 4, 13}, {11, 13, 24}, {11, 14, 18}, {11, 15, 26}, {11, 19, 28}, {13, 17, 22},
	{13, 18, 23}, {15, 18, 29}, {2, 3, 6}, {2, 6}, {3, 18, 19}, {3, 19, 20}, {3, 20}, {3, 5, 8},
	{3, 6}, {4, 17, 21}, {4, 5, 9}, {5, 9, 12}, {7, 10, 18}, {8, 25, 27}, {8, 9, 11},
}

var wideModelOnce struct {
	sync.Once
	m    *pgm.Model
	meas []pgm.Measurement
	err  error
}

// wideModel fits (once per test binary) a model to noisy measurements of
// wideSelections and the 1-way marginals on widegen's wide30 table (the
// benchmark's columns and domain, 20 000 rows: scoring's cost depends on the
// model's structure, not on the rows).
func wideModel(tb testing.TB) *pgm.Model {
	o := &wideModelOnce
	o.Do(func() {
		tab, err := widegen.Generate(widegen.Config{Attrs: 30, Rows: 20000, Bins: 38, Seed: 30})
		if err != nil {
			o.err = err
			return
		}
		ds := tab.Data
		rng := rand.New(rand.NewPCG(30, 1))
		var meas []pgm.Measurement
		sets := wideSelections
		for a := range ds.Domain().Len() {
			sets = append(sets, []int{a})
		}
		for _, s := range sets {
			y := ds.MarginalTo(nil, s)
			for i := range y {
				y[i] += pgmbench.Sigma * rng.NormFloat64()
			}
			meas = append(meas, pgm.Measurement{Attrs: s, Y: y, Sigma: pgmbench.Sigma})
		}
		o.meas = meas
		o.m, o.err = pgm.Estimate(context.Background(), ds.Domain(), meas, &pgm.EstimateOptions{Iters: 30})
	})
	if o.err != nil {
		tb.Fatal(o.err)
	}
	return o.m
}

// BenchmarkScoringWide is AIM's scoring on a fixed wide30 model, free of
// the random trajectory a run's CPU follows: All computes every 3-way
// marginal (4 060) in one MarginalsVisit, as the first round and LAZY=0
// do; Lazy computes 1 000 of them in a fixed random order, 32 and then the
// other 968 in one call sharing one Batch, as a lazy round does, and
// Batches32 the same 1 000 in calls of 32, as lazy rounds did before the
// twentieth pass of issue 19. cpu-s/op is the process CPU time per
// iteration: run it with GOMAXPROCS=1.
func BenchmarkScoringWide(b *testing.B) {
	m := wideModel(b)
	sets := pgmbench.ThreeWay(m.Domain().Len())
	ctx := context.Background()
	b.Run("All", func(b *testing.B) {
		b.ReportAllocs()
		defer reportCPU(b)()
		for b.Loop() {
			if err := m.MarginalsVisit(ctx, sets, func(int, []float64) {}); err != nil {
				b.Fatal(err)
			}
		}
	})
	perm := rand.New(rand.NewPCG(1, 2)).Perm(len(sets))[:1000]
	calls := func(sizes ...int) func(b *testing.B) {
		return func(b *testing.B) {
			b.ReportAllocs()
			defer reportCPU(b)()
			for b.Loop() {
				batch := m.NewBatch()
				for lo, k := 0, 0; lo < len(perm); k++ {
					hi := min(lo+sizes[min(k, len(sizes)-1)], len(perm))
					var ss [][]int
					for _, j := range perm[lo:hi] {
						ss = append(ss, sets[j])
					}
					if err := batch.Visit(ctx, ss, func(int, []float64) {}); err != nil {
						b.Fatal(err)
					}
					lo = hi
				}
			}
		}
	}
	b.Run("Lazy", calls(32, len(perm)))
	b.Run("Batches32", calls(32))
}

// reportCPU reports the process CPU time per iteration (cpu-s/op) when
// the returned function is called: on a shared machine the wall time
// (ns/op) measures the load as much as the code.
func reportCPU(b *testing.B) func() {
	c0 := cputime.Process()
	return func() {
		b.ReportMetric((cputime.Process()-c0).Seconds()/float64(b.N), "cpu-s/op")
	}
}

// BenchmarkFitWide is BenchmarkFitSizes on wide30's model: ten
// warm-started iterations of the fit of wideSelections, CPU and wall time
// per iteration.
func BenchmarkFitWide(b *testing.B) {
	m := wideModel(b)
	meas := wideModelOnce.meas
	const iters = 10
	cpu0, t0 := cputime.Process(), time.Now()
	for b.Loop() {
		if _, err := pgm.Estimate(context.Background(), m.Domain(), meas, &pgm.EstimateOptions{Iters: iters, Step: pgm.KeepStep, WarmStart: m}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric((cputime.Process()-cpu0).Seconds()*1e3/float64(b.N*iters), "cpu-ms/iter")
	b.ReportMetric(float64(time.Since(t0))/1e6/float64(b.N*iters), "wall-ms/iter")
}

// BenchmarkSynthesizeWide draws wide30's 200 000 rows from the fixed wide30
// model, as AIM's last step does.
func BenchmarkSynthesizeWide(b *testing.B) {
	m := wideModel(b)
	rng := rand.New(rand.NewPCG(1, 2))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Synthesize(rng, 200000); err != nil {
			b.Fatal(err)
		}
	}
}
