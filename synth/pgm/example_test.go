package pgm_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dpsql/dpsql/synth/pgm"
)

// Fit a model to two exact 2-way marginals of a three-attribute table and
// answer a marginal that no measurement covers.
func Example() {
	dom, _ := pgm.NewDomain([]string{"age", "sex", "income"}, []int{3, 2, 2})
	ds, _ := pgm.NewDataset(dom, [][]uint16{
		{0, 0, 1, 1, 2, 2, 2, 1},
		{0, 1, 0, 1, 0, 1, 1, 0},
		{0, 0, 1, 1, 1, 0, 1, 1},
	})
	var meas []pgm.Measurement
	for _, attrs := range [][]int{{0, 1}, {0, 2}} {
		meas = append(meas, pgm.Measurement{Attrs: attrs, Y: ds.MarginalTo(nil, attrs), Sigma: 1})
	}
	m, _ := pgm.Estimate(context.Background(), dom, meas, &pgm.EstimateOptions{Iters: 3000})
	fmt.Println("cliques:", m.Cliques())
	fmt.Println("total:", m.Total())
	// sex × income is not measured: the model makes them independent given
	// age, so the count of (s, i) is Σ_age n(age)·p(s|age)·p(i|age), e.g.
	// 2·½·1 + 3·⅓·⅓ = 4/3 for (0, 0).
	for _, v := range m.Marginal([]int{1, 2}) {
		fmt.Printf("%.3f ", v)
	}
	fmt.Println()
	// Output:
	// cliques: [[0 1] [0 2]]
	// total: 8
	// 1.333 2.667 1.667 2.333
}

// Draw synthetic records from a fitted model.
func ExampleModel_Synthesize() {
	dom, _ := pgm.NewDomain([]string{"a", "b"}, []int{2, 2})
	meas := []pgm.Measurement{{Attrs: []int{0, 1}, Y: []float64{10, 20, 30, 40}, Sigma: 1}}
	m, _ := pgm.Estimate(context.Background(), dom, meas, &pgm.EstimateOptions{Iters: 300})
	cols, _ := m.Synthesize(rand.New(rand.NewPCG(1, 2)), 100)
	ds, _ := pgm.NewDataset(dom, cols)
	fmt.Println(ds.MarginalTo(nil, []int{0, 1}))
	// Output:
	// [10 20 30 40]
}

// ModelSize predicts the junction-tree size of candidate cliques in MB.
func ExampleModelSize() {
	dom, _ := pgm.NewDomain([]string{"a", "b", "c", "d"}, []int{100, 100, 100, 2})
	// The 4-cycle a-b-c-d is triangulated into two cliques of 3 attributes.
	mb := pgm.ModelSize(dom, [][]int{{0, 1}, {1, 2}, {2, 3}, {0, 3}})
	fmt.Printf("%.4f MB\n", mb)
	fmt.Println(math.Round(mb*(1<<20)/8), "cells")
	// Output:
	// 0.3052 MB
	// 40000 cells
}
