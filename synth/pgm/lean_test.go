package pgm

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/dpsql/dpsql/internal/gctest"
)

// TestModelLean: a lean model answers as the model it came from — every
// marginal and the samples bit for bit (they read the marginals only) —
// while its potentials, derived from the marginals, encode a model whose
// answers agree to round-off and warm-start a fit as the original does; and
// holding the lean model alone lets the original's potentials be freed.
func TestModelLean(t *testing.T) {
	ctx := context.Background()
	for seed := range uint64(4) {
		rng := rand.New(rand.NewPCG(seed, 77))
		dom := randomDomain(t, rng, 6, 5)
		sizes := slices.Clone(dom.sizes)
		meas := measure(randomDataset(t, 200, sizes, 1000), dedupe(randomSets(rng, 6, 5, 3)), 5, rng)
		m, err := Estimate(ctx, dom, meas[:len(meas)-1], &EstimateOptions{Iters: 40})
		if err != nil {
			t.Fatal(err)
		}
		lean := m.Lean()
		if lean.theta != nil || &lean.p[0] != &m.p[0] || lean.Lean() != lean || lean.Total() != m.Total() || lean.Size() != m.Size() {
			t.Fatalf("seed %d: lean model holds potentials or not m's marginals", seed)
		}
		for _, attrs := range allSubsets(dom.Len(), 3) {
			if !slices.Equal(lean.Marginal(attrs), m.Marginal(attrs)) {
				t.Fatalf("seed %d: lean marginal %v differs", seed, attrs)
			}
		}
		a, errA := m.Synthesize(rand.New(rand.NewPCG(seed, 1)), 300)
		b, errB := lean.Synthesize(rand.New(rand.NewPCG(seed, 1)), 300)
		if errA != nil || errB != nil || !slices.EqualFunc(a, b, slices.Equal[[]uint16]) {
			t.Fatalf("seed %d: lean samples differ (%v, %v)", seed, errA, errB)
		}
		// Encoded from derived potentials: the same distribution.
		enc, err := lean.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		dec, err := UnmarshalModel(enc)
		if err != nil {
			t.Fatal(err)
		}
		sameMarginals(t, dec, m, allSubsets(dom.Len(), 3), 1e-9, fmt.Sprintf("seed %d: decoded lean model", seed))
		for k := range len(m.Cliques()) {
			if len(lean.Potential(k)) != len(m.Potential(k)) {
				t.Fatalf("seed %d: clique %d potential length differs", seed, k)
			}
		}
		// A warm start from the lean model starts at the same distribution.
		o := func(ws *Model) *EstimateOptions { return &EstimateOptions{Iters: 30, WarmStart: ws} }
		fa, err := Estimate(ctx, dom, meas, o(m))
		if err != nil {
			t.Fatal(err)
		}
		fb, err := Estimate(ctx, dom, meas, o(lean))
		if err != nil {
			t.Fatal(err)
		}
		sameMarginals(t, fb, fa, allSubsets(dom.Len(), 2), 1e-6, fmt.Sprintf("seed %d: fit warm-started from the lean model", seed))
		// Only the lean model kept: the potentials are freed.
		freed := make(chan struct{})
		params := &m.steps[0][0] // the model's parameters: step tables (no arena of potentials)
		if m.theta != nil {
			params = &m.theta[0]
		}
		runtime.AddCleanup(params, func(ch chan struct{}) { close(ch) }, freed)
		m, fa, fb = nil, nil, nil
		if !gctest.Collected(freed) {
			t.Fatalf("seed %d: the potentials are still reachable from the lean model", seed)
		}
		runtime.KeepAlive(lean)
	}
}

// sameMarginals fails t unless got's marginal on every set is want's to
// within tol of want's total in every cell.
func sameMarginals(t *testing.T, got, want *Model, sets [][]int, tol float64, what string) {
	t.Helper()
	for _, attrs := range sets {
		x, y := got.Marginal(attrs), want.Marginal(attrs)
		for i := range x {
			if math.Abs(x[i]-y[i]) > tol*want.Total() {
				t.Fatalf("%s: marginal %v cell %d = %v, want %v", what, attrs, i, x[i], y[i])
			}
		}
	}
}
