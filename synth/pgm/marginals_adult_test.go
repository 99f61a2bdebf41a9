package pgm_test

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/dpsql/dpsql/synth/pgm"
	"github.com/dpsql/dpsql/synth/pgm/pgmbench"
)

// aimLike are 3-way cliques of the kind AIM selects on adult; with the
// benchmark's fixed cliques they make a junction tree of about 1 MB, the
// size of AIM's models in its early rounds, whose 3-way marginals mostly
// span several cliques.
var aimLike = [][]string{
	{"capital-gain", "capital-loss", "income>50K"},
}

var adultModelOnce struct {
	sync.Once
	m   *pgm.Model
	err error
}

// adultModel fits (once per test binary) a model on adult to the benchmark's
// measurements plus the aimLike cliques, or skips without the shared data.
func adultModel(tb testing.TB) *pgm.Model {
	ds := adult(tb)
	o := &adultModelOnce
	o.Do(func() {
		rng := rand.New(rand.NewPCG(3, 3))
		meas, err := pgmbench.Measurements(ds, rng)
		if err != nil {
			o.err = err
			return
		}
		for _, names := range aimLike {
			attrs, err := ds.Domain().Attrs(names...)
			if err != nil {
				o.err = err
				return
			}
			slices.Sort(attrs)
			y := ds.MarginalTo(nil, attrs)
			for i := range y {
				y[i] += pgmbench.Sigma * rng.NormFloat64()
			}
			meas = append(meas, pgm.Measurement{Attrs: attrs, Y: y, Sigma: pgmbench.Sigma})
		}
		o.m, o.err = pgm.Estimate(context.Background(), ds.Domain(), meas, &pgm.EstimateOptions{Iters: 30})
	})
	if o.err != nil {
		tb.Fatal(o.err)
	}
	return o.m
}

// TestMarginalsAdult checks the 3-way marginals of a fitted adult model
// (every sixth: the oracle is slow) against log-space variable
// elimination, to 1e-9 relative per cell.
func TestMarginalsAdult(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: log-space oracle on 364 marginals")
	}
	m := adultModel(t)
	sets := pgmbench.ThreeWay(m.Domain().Len())
	got, err := m.Marginals(context.Background(), sets)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(sets); i += 6 {
		s := sets[i]
		want := pgm.MarginalLog(m, s)
		for j := range want {
			if a, b := got[i][j], want[j]; a != b && math.Abs(a-b) > 1e-9*math.Max(math.Abs(a), math.Abs(b)) {
				t.Fatalf("marginal %v cell %d = %v, log-space oracle %v", s, j, a, b)
			}
		}
	}
}

// BenchmarkScoring3Way computes all 364 3-way marginals of a fitted adult
// model: the batch API, the reused-buffer batch AIM's scoring uses, one
// Marginal per set, and the log-space elimination it replaced.
func BenchmarkScoring3Way(b *testing.B) {
	m := adultModel(b)
	sets := pgmbench.ThreeWay(m.Domain().Len())
	b.Run("Marginals", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := m.MarginalsFunc(context.Background(), sets, func(int, []float64) {}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Visit", func(b *testing.B) {
		// AIM's scoring: the marginals only read, in reused buffers.
		b.ReportAllocs()
		for b.Loop() {
			if err := m.MarginalsVisit(context.Background(), sets, func(int, []float64) {}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Marginal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, s := range sets {
				m.Marginal(s)
			}
		}
	})
	b.Run("LogSpace", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, s := range sets {
				pgm.MarginalLog(m, s)
			}
		}
	})
}
