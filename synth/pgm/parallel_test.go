package pgm

import (
	"math"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dpsql/dpsql/internal/par"
	"github.com/dpsql/dpsql/synth/pgm/internal/kernel"
)

// TestPoolRunsEveryChunkOnce runs many jobs of varied sizes through a pool
// (with helpers spinning, parked and woken) and checks that every chunk ran
// exactly once and had finished when do returned.
func TestPoolRunsEveryChunkOnce(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	p := newPool()
	if p == nil {
		t.Fatal("no pool with 4 procs")
	}
	defer p.stop()
	var counts [maxParts]atomic.Int32
	for job := range 3000 {
		k := 1 + job%maxParts
		p.do(k, func(c int) {
			if job%7 == 0 {
				time.Sleep(time.Microsecond) // let helpers take some chunks
			}
			counts[c].Add(1)
		})
		for c := range maxParts {
			want := int32(0)
			if c < k {
				want = 1
			}
			if got := counts[c].Swap(0); got != want {
				t.Fatalf("job %d (%d chunks): chunk %d ran %d times", job, k, c, got)
			}
		}
		if job%1000 == 999 {
			time.Sleep(2 * spinFor) // helpers park; the next job wakes them
		}
	}
}

// TestPoolCarriesAChunkPanicToTheOwner makes one chunk of every job panic:
// whether the owner or a helper ran it, do must panic in the owner's
// goroutine, where the engine recovers it, and never end the process from
// a helper's.
func TestPoolCarriesAChunkPanicToTheOwner(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	fromHelper := 0
	for job := range 200 {
		p := newPool()
		func() {
			defer p.stop()
			defer func() {
				v := recover()
				if v == nil {
					t.Fatalf("job %d: do returned although a chunk panicked", job)
				}
				if _, ok := v.(*par.Panic); ok {
					fromHelper++
				}
			}()
			p.do(maxParts, func(c int) {
				if c == maxParts-1 { // helpers claim from the top
					panic("chunk failed")
				}
				time.Sleep(time.Microsecond)
			})
		}()
	}
	t.Logf("%d of 200 panics came from a helper", fromHelper)
}

// pooledTeam returns a team with a pool of helpers on two cores and chunks
// of at least cells, all undone when the test ends.
func pooledTeam(t *testing.T, cells int) team {
	t.Helper()
	saved, procs := chunkCells, runtime.GOMAXPROCS(2)
	chunkCells = cells
	p := newPool()
	t.Cleanup(func() {
		p.stop()
		chunkCells = saved
		runtime.GOMAXPROCS(procs)
	})
	return team{p}
}

// TestTeamChunks checks the chunk bounds of run and split: contiguous,
// covering, aligned, and independent of the pool.
func TestTeamChunks(t *testing.T) {
	for _, tm := range []team{{}, pooledTeam(t, 3)} {
		for n := 0; n < 80; n++ {
			for _, align := range []int{1, 4} {
				var seen [80]atomic.Int32
				parts := tm.parts(n)
				var used [maxParts]atomic.Int32
				tm.run(n, align, func(lo, hi, part int) {
					if part < 0 || part >= parts || lo > hi || (lo%align != 0 && lo != n) {
						t.Errorf("n=%d align=%d: chunk %d = [%d, %d)", n, align, part, lo, hi)
						return
					}
					used[part].Add(1)
					for i := lo; i < hi; i++ {
						seen[i].Add(1)
					}
				})
				for i := range n {
					if seen[i].Load() != 1 {
						t.Fatalf("n=%d align=%d: cell %d covered %d times", n, align, i, seen[i].Load())
					}
				}
				for c := range parts {
					if used[c].Load() != 1 {
						t.Fatalf("n=%d: chunk %d ran %d times", n, c, used[c].Load())
					}
				}
			}
			var seen [80]atomic.Int32
			tm.split(n*5, n, func(lo, hi int) {
				for i := lo; i < hi; i++ {
					seen[i].Add(1)
				}
			})
			for i := range n {
				if seen[i].Load() != 1 {
					t.Fatalf("split n=%d: index %d covered %d times", n, i, seen[i].Load())
				}
			}
		}
	}
}

// TestSplitRangesChangeNoResult: a reduction run through split gives the
// same bits with a pool (up to maxParts ranges) as without one (a single
// range), for narrow separators, whose columns the pool splits one or two
// wide, and wide ones, sums and maxima alike.
func TestSplitRangesChangeNoResult(t *testing.T) {
	pooled := pooledTeam(t, 64)
	rng := rand.New(rand.NewPCG(61, 62))
	cases := []struct {
		sizes, keep []int
	}{
		{[]int{300, 2}, []int{1}},        // one block, two columns
		{[]int{500, 1}, []int{1}},        // one block, one column
		{[]int{40, 30, 3}, []int{2}},     // one block, three columns
		{[]int{7, 40, 24}, []int{0, 2}},  // several blocks
		{[]int{600, 40}, []int{1}},       // one block, wide
		{[]int{5, 9, 8, 6}, []int{1, 3}}, // two steps
	}
	for _, c := range cases {
		r := kernel.NewReduction(c.sizes, c.keep)
		src := make([]float64, r.In())
		for i := range src {
			src[i] = rng.NormFloat64() * 1e3
		}
		for _, isMax := range []bool{false, true} {
			got := [2][]float64{make([]float64, r.Out()), make([]float64, r.Out())}
			for k, tm := range []team{{}, pooled} {
				scratch := make([]float64, r.Scratch())
				if isMax {
					r.MaxPar(got[k], src, scratch, tm.split)
				} else {
					r.SumPar(got[k], src, scratch, tm.split)
				}
			}
			for i := range got[0] {
				if math.Float64bits(got[0][i]) != math.Float64bits(got[1][i]) {
					t.Fatalf("%v keep %v max %v: cell %d = %v without a pool, %v with one", c.sizes, c.keep, isMax, i, got[0][i], got[1][i])
				}
			}
		}
	}
}

// TestPoolOnlyForLargeFits: a fit splits across cores only from
// minPoolCells on, and never on one core.
func TestPoolOnlyForLargeFits(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	for _, tc := range []struct {
		cells int
		want  bool
	}{{0, false}, {minPoolCells - 1, false}, {minPoolCells, true}, {4 * minPoolCells, true}} {
		p := newPoolFor(tc.cells)
		if got := p != nil; got != tc.want {
			t.Errorf("newPoolFor(%d) pooled %v, want %v", tc.cells, got, tc.want)
		}
		p.stop()
	}
	runtime.GOMAXPROCS(1)
	if p := newPoolFor(4 * minPoolCells); p != nil {
		p.stop()
		t.Error("a pool on one core")
	}
}
