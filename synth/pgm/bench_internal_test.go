package pgm

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/dpsql/dpsql/internal/cputime"
)

// adultShaped returns the junction tree of the estimation benchmark of
// targets.md on the adult domain (sizes only: no data needed).
func adultShaped(b *testing.B) (*Domain, []Measurement, *junctionTree) {
	dom, err := NewDomain([]string{"age", "workclass", "fnlwgt", "education-num", "marital-status", "occupation",
		"relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country", "income>50K"},
		[]int{85, 9, 100, 16, 7, 15, 6, 5, 2, 100, 100, 99, 42, 2})
	if err != nil {
		b.Fatal(err)
	}
	sets := [][]int{{0, 13}, {3, 13}, {4, 6}, {6, 8}, {1, 5}, {7, 12}, {11, 13}, {9, 13}, {10, 13}, {0, 4}, {3, 5},
		{5, 8}, {0, 11}, {2, 7}, {0, 3, 13}, {4, 6, 8}, {5, 8, 13}, {1, 3, 13}, {7, 8, 12}, {0, 6, 13}}
	for a := range dom.Len() {
		sets = append(sets, []int{a})
	}
	rng := rand.New(rand.NewPCG(1, 1))
	var meas []Measurement
	for _, s := range sets {
		y := make([]float64, dom.Cells(s))
		for i := range y {
			y[i] = 48842/float64(len(y)) + 20*rng.NormFloat64()
		}
		meas = append(meas, Measurement{Attrs: s, Y: y, Sigma: 20})
	}
	jt, err := newJunctionTree(dom, sets, nil)
	if err != nil {
		b.Fatal(err)
	}
	return dom, meas, jt
}

// BenchmarkBP is one belief propagation over the 1.2 MB adult model.
func BenchmarkBP(b *testing.B) {
	_, _, jt := adultShaped(b)
	rng := rand.New(rand.NewPCG(2, 2))
	theta := make([]float64, jt.total)
	for i := range theta {
		theta[i] = rng.NormFloat64()
	}
	p := make([]float64, jt.total)
	w := newBPWork(jt)
	pool := newPool()
	defer pool.stop()
	w.team = team{pool}
	b.ReportAllocs()
	for b.Loop() {
		w.run(p, theta)
	}
}

// BenchmarkLoss is one loss evaluation, and one gradient, on the same model.
func BenchmarkLoss(b *testing.B) {
	_, meas, jt := adultShaped(b)
	p := make([]float64, jt.total)
	newBPWork(jt).run(p, make([]float64, jt.total))
	obj := newObjective(jt, meas, L2, 48842)
	pool := newPool()
	defer pool.stop()
	obj.team = team{pool}
	g := make([]float64, jt.total)
	b.Run("value", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			obj.value(p)
		}
	})
	b.Run("grad", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			obj.grad(g)
		}
	})
}

// BenchmarkModelSize is AIM's per-candidate call: the model size of the
// benchmark's 34 cliques plus one candidate.
func BenchmarkModelSize(b *testing.B) {
	dom, meas, _ := adultShaped(b)
	var cliques [][]int
	for _, m := range meas {
		cliques = append(cliques, m.Attrs)
	}
	cliques = append(cliques, []int{2, 9, 11})
	b.ReportAllocs()
	for b.Loop() {
		ModelSize(dom, cliques)
	}
}

// largeSets are the measured sets of largeShaped, its 1-way sets aside.
var largeSets = [][]int{{0, 9, 13}, {0, 11, 13}, {9, 11, 13}, {0, 10, 13}, {10, 11, 13}, {2, 11, 13}, {0, 2, 13},
	{3, 5, 13}, {4, 6, 8}, {5, 8, 13}, {1, 5, 13}, {7, 12, 13}, {0, 4, 6}, {3, 12, 13}, {0, 3}, {0, 5}}

// largeShaped returns measurements on the adult domain whose junction tree
// is about 40 MB (three cliques of 1.7 M cells around separators of 17 K),
// the size of adult's models at ε = 10; Y is random around a uniform table.
func largeShaped(b *testing.B) (*Domain, []Measurement) {
	dom, _, _ := adultShaped(b)
	return dom, shapedMeasurements(dom, largeSets)
}

// shapedMeasurements returns measurements of sets and of every attribute
// alone, Y random around a uniform table of adult's 48 842 rows.
func shapedMeasurements(dom *Domain, sets [][]int) []Measurement {
	sets = slices.Clone(sets)
	for a := range dom.Len() {
		sets = append(sets, []int{a})
	}
	rng := rand.New(rand.NewPCG(3, 3))
	var meas []Measurement
	for _, s := range sets {
		y := make([]float64, dom.Cells(s))
		for i := range y {
			y[i] = 48842/float64(len(y)) + 5*rng.NormFloat64()
		}
		meas = append(meas, Measurement{Attrs: s, Y: y, Sigma: 5})
	}
	return meas
}

// BenchmarkFitSizes is BenchmarkFitLarge's ten warm-started iterations on
// models of 0.9 to 39 MB (subsets of largeShaped's sets, each with every
// 1-way set), reporting CPU and wall time per iteration: on several cores
// their ratio shows where splitting a fit across them pays (minPoolCells).
func BenchmarkFitSizes(b *testing.B) {
	dom, _, _ := adultShaped(b)
	for _, pick := range [][]int{
		{4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},    // 0.9 MB
		{1, 3, 5, 6, 9, 10, 11, 12, 13, 14, 15},       // 13 MB
		{3, 4, 5, 6, 9, 10, 11, 12, 13, 14, 15},       // 26 MB
		{3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, // 26 MB, other cliques
		nil, // all: 39 MB
	} {
		sets := largeSets
		if pick != nil {
			sets = nil
			for _, i := range pick {
				sets = append(sets, largeSets[i])
			}
		}
		meas := shapedMeasurements(dom, sets)
		warm, err := Estimate(context.Background(), dom, meas, &EstimateOptions{Iters: 20, Step: KeepStep})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("%.1fMB", warm.Size()), func(b *testing.B) {
			const iters = 10
			cpu0, t0 := cputime.Process(), time.Now()
			for b.Loop() {
				if _, err := Estimate(context.Background(), dom, meas, &EstimateOptions{Iters: iters, Step: KeepStep, WarmStart: warm}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cputime.Process()-cpu0)/float64(b.N*iters)/1e6, "cpu-ms/iter")
			b.ReportMetric(float64(time.Since(t0))/float64(b.N*iters)/1e6, "wall-ms/iter")
		})
	}
}

// BenchmarkFitLarge is ten mirror-descent iterations (KeepStep) on the
// 40 MB model of largeShaped, warm-started from a 20-iteration fit of the
// same measurements, as AIM's rounds are: a fixed workload, free of AIM's
// random selections, for the kernels that dominate adult at ε = 10. It
// reports CPU per iteration and the final loss, which a change exact to
// round-off keeps.
func BenchmarkFitLarge(b *testing.B) {

	dom, meas := largeShaped(b)
	warm, err := Estimate(context.Background(), dom, meas, &EstimateOptions{Iters: 20, Step: KeepStep})
	if err != nil {
		b.Fatal(err)
	}
	const iters = 10
	var st EstimateStats
	cpu0 := cputime.Process()
	for b.Loop() {
		if _, err := Estimate(context.Background(), dom, meas, &EstimateOptions{Iters: iters, Step: KeepStep, WarmStart: warm, Stats: &st}); err != nil {
			b.Fatal(err)
		}
	}
	// CPU, not wall: the benchmark machine is shared.
	b.ReportMetric(float64(cputime.Process()-cpu0)/float64(b.N*iters)/1e6, "cpu-ms/iter")
	b.ReportMetric(float64(st.OracleCalls)/iters, "bp/iter")
	b.ReportMetric(st.Loss, "loss")
}
