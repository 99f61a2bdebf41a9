package pgm

import (
	"runtime"
	"sync"
)

// parMinCells is the table size below which a kernel runs on one goroutine:
// under it the hand-off costs more than it saves. Tests lower it to exercise
// the parallel paths on small tables.
//
// The hand-off (a goroutine per part and a wake-up of an idle P) is dear: on
// a 2-core VM, splitting the 114k-cell root of the adult benchmark in two made
// an estimation iteration 19–21 ms instead of 14.3–15 ms on one goroutine,
// so only tables of at least 2·parMinCells cells are split.
var parMinCells = 1 << 17

// team splits index ranges over up to n goroutines.
type team struct{ n int }

// maxParts bounds the parts of one range (callers keep per-part results in
// fixed arrays).
const maxParts = 64

func newTeam() team { return team{n: max(1, min(maxParts, runtime.GOMAXPROCS(0)))} }

// parts returns how many parts a range of n cells is split into.
func (t team) parts(n int) int {
	return max(1, min(t.n, n/parMinCells))
}

// run calls f(lo, hi, part) for parts(n) contiguous parts of [0, n), on
// separate goroutines, and waits for them. Each part's bounds are multiples
// of align (the last part ends at n).
func (t team) run(n, align int, f func(lo, hi, part int)) {
	k := t.parts(n)
	if k == 1 {
		f(0, n, 0)
		return
	}
	var wg sync.WaitGroup
	step := (n/k + align - 1) / align * align
	for p := range k - 1 {
		lo, hi := min(p*step, n), min((p+1)*step, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(lo, hi, p)
		}()
	}
	f(min((k-1)*step, n), n, k-1)
	wg.Wait()
}

// split runs f over parts(cells) contiguous ranges of [0, n) concurrently;
// it is a kernel.Par.
func (t team) split(cells, n int, f func(lo, hi int)) {
	k := min(t.parts(cells), n)
	if k <= 1 {
		f(0, n)
		return
	}
	var wg sync.WaitGroup
	for p := range k - 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(p*n/k, (p+1)*n/k)
		}()
	}
	f((k-1)*n/k, n)
	wg.Wait()
}
