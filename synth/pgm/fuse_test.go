package pgm

import (
	"context"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// TestEstimateFusedMatchesSeparate: runFused forms each trial's potentials
// from the step tables piece by piece in the propagation, and the upward
// pass reduces cliques block by block (upPiece) or streams their rows
// (upStreamed), and the downward pass reduces separator marginals and the
// objective's projections piece by piece (finalize), leaving cliques
// unscaled when nothing else reads them (materialize); the fits must equal
// those of the separate passes (the trial's potentials in an arena, and
// fuseUp and fuseDown off) bit for bit, on one core or several —
// potentials, marginals, log Z, step and stats — whatever the chunks,
// tiles, pieces, block bound, step rule, stopping rule and warm start.
func TestEstimateFusedMatchesSeparate(t *testing.T) {
	rng := rand.New(rand.NewPCG(91, 92))
	type layout struct{ chunk, tile, piece, block, procs int }
	layouts := []layout{{4096, 1024, 2048, 1 << 15, 1}, {2, 3, 5, 1 << 15, 1}, {3, 1, 1, 4, 1}, {7, 2, 4096, 16, 1}, {1, 5, 64, 1, 1}, {2, 3, 5, 1 << 15, 2}, {3, 2, 7, 64, 3}}
	blocked, upStreams, pieced, split, streamed, narrowed, lazy := 0, 0, 0, 0, 0, 0, 0
	for trial := range 10 {
		dom := randomDomain(t, rng, 6, 5+4*(trial%2)) // larger tables stream rows
		sets := dedupe(randomSets(rng, 6, 8, 3))
		if trial == 8 {
			// A clique whose one measurement needs two reduction steps
			// ([1 3]; with two, both would come from an intermediate),
			// one whose measurement streams rows of 300 cells ([5]), and
			// a root [5 6] above [4 5], whose upward pass streams them.
			var err error
			if dom, err = NewDomain([]string{"a", "b", "c", "d", "e", "f", "g"}, []int{3, 4, 20, 15, 2, 300, 14}); err != nil {
				t.Fatal(err)
			}
			sets = [][]int{{0, 1, 2, 3}, {1, 3}, {3, 4}, {4, 5}, {5}, {5, 6}}
		}
		if trial == 9 {
			// Cliques [a b] and [b c] joined by b, four cells wide and
			// the last axis of [a b]: a separator marginal of b taken
			// from [a b] is one block of 500 narrow rows
			// (kernel.Reduction.Narrow).
			var err error
			if dom, err = NewDomain([]string{"a", "b", "c", "d"}, []int{500, 4, 30, 3}); err != nil {
				t.Fatal(err)
			}
			sets = [][]int{{0, 1}, {1, 2}, {1}, {2, 3}, {3}}
		}
		ds := randomDataset(t, uint64(100+trial), slices.Clone(dom.sizes), 1500)
		meas := measure(ds, sets, 10, rng)
		warm, err := Estimate(context.Background(), dom, meas[:len(meas)/2], &EstimateOptions{Iters: 20, Step: KeepStep})
		if err != nil {
			t.Fatal(err)
		}
		opts := []EstimateOptions{
			{Iters: 30},
			{Iters: 40, Step: KeepStep},
			{Iters: 40, Step: KeepStep, WarmStart: warm},
			{Iters: 300, Tol: 1e-4, Step: KeepStep},
			{Iters: 25, Loss: L1, StepSize: 0.01},
		}
		for oi, o := range opts {
			fit := func(fuse bool, l layout) (*Model, EstimateStats) {
				defer func(f, u, d, z bool, c, tl, p, b, mp int) {
					fuseGrad, fuseUp, fuseDown, fuseLazy, chunkCells, tileCells, fuseCells, maxUpBlock, minPoolCells = f, u, d, z, c, tl, p, b, mp
				}(fuseGrad, fuseUp, fuseDown, fuseLazy, chunkCells, tileCells, fuseCells, maxUpBlock, minPoolCells)
				fuseGrad, fuseUp, fuseDown, fuseLazy, chunkCells, tileCells, fuseCells, maxUpBlock, minPoolCells = fuse, fuse, fuse, fuse, l.chunk, l.tile, l.piece, l.block, 0
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(l.procs))
				var st EstimateStats
				oo := o
				oo.Stats = &st
				m, err := Estimate(context.Background(), dom, meas, &oo)
				if err != nil {
					t.Fatal(err)
				}
				return m, st
			}
			for _, l := range layouts {
				if trial == 8 && (l.piece == 1 || oi == 3) {
					continue // one-cell pieces and 300 iterations: slow on its tables
				}
				want, wst := fit(false, l)
				{
					got, gst := fit(true, l)
					if l.block > 1 {
						func() {
							defer func(b int) { maxUpBlock = b }(maxUpBlock)
							maxUpBlock = l.block
							w := newBPWork(got.jt)
							for _, n := range w.upBlock {
								if n > 0 {
									blocked++
								}
							}
							w.bind(newObjective(got.jt, meas, o.Loss, got.total))
							for _, z := range w.lazy {
								if z {
									lazy++
								}
							}
							for _, u := range w.up {
								if u != nil {
									upStreams++
								}
							}
							for _, f := range w.fin {
								for _, it := range f.items {
									pieced++
									if it.rest != nil {
										split++
									}
									if it.first != nil && it.first.Streams() {
										streamed++
									}
									if it.narrow != nil {
										narrowed++
									}
								}
							}
						}()
					}
					if gst != wst || gst.Iters == 0 {
						t.Fatalf("trial %d options %d layout %v: stats %+v, separate passes %+v", trial, oi, l, gst, wst)
					}
					if math.Float64bits(got.step) != math.Float64bits(want.step) || math.Float64bits(got.logZ) != math.Float64bits(want.logZ) {
						t.Fatalf("trial %d options %d layout %v: step, log Z %v %v, separate passes %v %v", trial, oi, l, got.step, got.logZ, want.step, want.logZ)
					}
					gth, wth := got.potentials(), want.potentials()
					if len(wth) != len(want.p) || (got.theta == nil) != (want.theta == nil) {
						t.Fatalf("trial %d options %d layout %v: %d potentials for %d cells", trial, oi, l, len(wth), len(want.p))
					}
					for i := range wth {
						if math.Float64bits(gth[i]) != math.Float64bits(wth[i]) || math.Float64bits(got.p[i]) != math.Float64bits(want.p[i]) {
							t.Fatalf("trial %d options %d layout %v: cell %d θ, p = %v, %v; separate passes %v, %v", trial, oi, l, i, gth[i], got.p[i], wth[i], want.p[i])
						}
					}
					for i := range want.steps {
						if !slices.Equal(got.steps[i], want.steps[i]) {
							t.Fatalf("trial %d options %d layout %v: step table %d differs from the separate passes'", trial, oi, l, i)
						}
					}
				}
			}
		}
	}
	if blocked == 0 || upStreams == 0 || pieced == 0 || split == 0 || streamed == 0 || narrowed == 0 || lazy == 0 {
		t.Fatalf("%d upward passes went block by block, %d streamed; %d downward reductions piece by piece (%d of several steps, %d streamed, %d narrow); %d lazy cliques",
			blocked, upStreams, pieced, split, streamed, narrowed, lazy)
	}
}
