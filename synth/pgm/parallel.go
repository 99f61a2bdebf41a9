package pgm

import (
	"runtime"
	"sync/atomic"
	"time"

	"github.com/dpsql/dpsql/internal/par"
)

// chunkCells is the least work (in table cells) given to one chunk of a
// split kernel: a chunk costs one atomic claim and, when it runs on a helper,
// a cache-line transfer, so a few thousand cells amortise it. Tests lower it
// to exercise the chunked paths on small tables.
var chunkCells = 4096

// maxParts bounds the chunks of one range (callers keep per-chunk results in
// fixed arrays).
const maxParts = 16

// team splits the kernels of one computation into chunks. run's split
// depends only on the table sizes, never on the number of cores or on
// scheduling, so results (including the order of floating-point sums over
// chunks) are the same on every machine; split's ranges, which may differ
// without a pool, change no result. Without a pool the calling goroutine
// runs every chunk; with one, spinning helpers claim chunks too.
//
// Goroutine-per-kernel hand-offs were tried first: waking an idle P costs
// tens of microseconds, and one BP pass over the adult benchmark model runs
// about fifteen kernels of 10–200 µs, so splitting made it slower. The pool
// keeps its helpers spinning for the length of an estimation, so a hand-off
// costs a store and a cache miss.
type team struct{ p *pool }

// parts returns how many chunks a range of n cells is split into.
func (t team) parts(n int) int {
	return max(1, min(maxParts, n/chunkCells))
}

// run calls f(lo, hi, part) for the parts(n) contiguous chunks of [0, n),
// possibly concurrently, and returns when all have finished. Chunk bounds
// are multiples of align (the last chunk ends at n).
func (t team) run(n, align int, f func(lo, hi, part int)) {
	k := t.parts(n)
	step := (n/k + align - 1) / align * align
	if k == 1 {
		f(0, n, 0)
		return
	}
	t.do(k, func(c int) {
		hi := n
		if c < k-1 {
			hi = min((c+1)*step, n)
		}
		f(min(c*step, n), hi, c)
	})
}

// split runs f over contiguous ranges of [0, n), chunked by the amount of
// work cells; it is a kernel.Par. Its callers' results do not depend on the
// ranges (each index's work is its own), so without a pool f runs once over
// [0, n): a reduction split into columns one or two wide would otherwise
// run as that many chains of dependent additions, one after the other.
func (t team) split(cells, n int, f func(lo, hi int)) {
	k := min(t.parts(cells), n)
	if k <= 1 || t.p == nil {
		f(0, n)
		return
	}
	t.do(k, func(c int) { f(c*n/k, (c+1)*n/k) })
}

// do runs chunk(0..k-1), on the pool's helpers too when there is a pool.
func (t team) do(k int, chunk func(int)) {
	if t.p == nil {
		for c := range k {
			chunk(c)
		}
		return
	}
	t.p.do(k, chunk)
}

// A pool is a set of helper goroutines that stay on spinning between the
// jobs of one long computation (an estimation), so that splitting a kernel
// costs about a microsecond instead of a goroutine wake-up. Helpers that find
// nothing to do for spinFor park until the next job. A pool is used by one
// goroutine at a time and must be stopped.
//
// Protocol: word holds the job generation (high 32 bits), an open flag and
// the number of helpers inside the job (low 16 bits). The owner writes the
// job while no helper is inside and the job is closed, then opens it; a
// helper joins with a CAS that requires the job open, claims chunks from
// left, and leaves by decrementing the count. The owner claims chunks too,
// closes the job and waits for the count to reach zero, so every chunk has
// run when do returns, and a helper that is slow to be scheduled never
// delays the owner: the owner does its chunks itself.
type pool struct {
	word atomic.Uint64
	// left holds the unclaimed chunks [lo, hi) as hi<<32 | lo: the owner
	// claims from the bottom and helpers from the top, so that each core
	// keeps working on the same part of a table from kernel to kernel and
	// finds it in its own cache.
	left     atomic.Uint64
	sleepers atomic.Int32
	wake     chan struct{}
	helpers  int

	// The current job, written by the owner only while it is closed and
	// empty.
	chunk func(int)

	// catch holds a helper's panic until the owner raises it again.
	catch par.Catcher
}

const (
	poolOpen   = 1 << 16
	poolStop   = 1 << 17
	poolActive = 1<<16 - 1
	poolGen    = 32
)

// spinFor is how long an idle helper spins before it parks.
const spinFor = 200 * time.Microsecond

// maxHelpers bounds a pool's helpers. The split kernels stream tables
// larger than a core's L2 and are bound by memory bandwidth: on the 2-core
// benchmark machine a second core cuts an iteration by about a quarter, not
// a half, so on a large machine more spinners would mostly burn cores that
// other queries could use.
const maxHelpers = 3

// minPoolCells is the least model size (cells of all cliques) that a fit
// splits across cores. A pool's presence turns off BP's single-core fused
// passes, and its helpers spin between kernels; on a small model the
// kernels are too short to pay for either. Ten warm-started iterations on
// 2 cores, CPU / wall per iteration, without a pool and with one: a 0.9 MB
// model (adult at ε = 1) 1.1–1.2 / 0.95–1.06 ms and 1.6–2.0 / 0.93–1.12;
// wide30's 2.7 MB model 2.1–2.3 / 1.9–2.1 and 3.0–3.6 / 1.6–2.0. From 13
// MB (adult at ε = 3 and 10) a pool takes 30–40 % off the wall time for
// 0–20 % more CPU (docs/aim-performance.md, "Issue 19, twenty-third pass").
var minPoolCells = 1 << 20 // a variable so that tests can pool small fits

// newPoolFor returns newPool() for a fit over a model of cells cells, or
// nil when the model is too small to split (minPoolCells).
func newPoolFor(cells int) *pool {
	if cells < minPoolCells {
		return nil
	}
	return newPool()
}

// newPool starts a pool with one helper per extra core, at most maxHelpers
// (none on one core, in which case it returns nil).
func newPool() *pool {
	h := min(runtime.GOMAXPROCS(0)-1, maxHelpers)
	if h <= 0 {
		return nil
	}
	p := &pool{wake: make(chan struct{}, h), helpers: h}
	for range h {
		go p.helper()
	}
	return p
}

// stop ends the helpers; the pool must not be used afterwards. It is a
// no-op on a nil pool.
func (p *pool) stop() {
	if p == nil {
		return
	}
	for {
		w := p.word.Load()
		if p.word.CompareAndSwap(w, w|poolStop) {
			break
		}
	}
	close(p.wake)
}

func (p *pool) do(k int, chunk func(int)) {
	p.chunk = chunk
	p.left.Store(uint64(k) << 32)
	w := p.word.Load()
	gen := (w>>poolGen + 1) << poolGen
	p.word.Store(gen | poolOpen | w&poolStop)
	if p.sleepers.Load() > 0 {
		for range p.helpers {
			select {
			case p.wake <- struct{}{}:
			default:
			}
		}
	}
	p.claim(true)
	for {
		w := p.word.Load()
		if p.word.CompareAndSwap(w, w&^poolOpen) {
			break
		}
	}
	for spins := 0; p.word.Load()&poolActive != 0; spins++ {
		if spins%64 == 63 {
			// A helper holding a chunk may be waiting for this P or
			// this core.
			runtime.Gosched()
			osYield()
		}
	}
	p.chunk = nil
	p.catch.Repanic()
}

// claim runs chunks of the current job until none is left, from the bottom
// for the owner and from the top for helpers.
func (p *pool) claim(owner bool) {
	for {
		l := p.left.Load()
		lo, hi := l&(1<<32-1), l>>32
		if lo >= hi {
			return
		}
		c, next := lo, l+1
		if !owner {
			c, next = hi-1, l-1<<32
		}
		if p.left.CompareAndSwap(l, next) {
			p.chunk(int(c))
		}
	}
}

// helperClaim is a helper's claim(false): a panic in a chunk is recorded
// for the owner, which raises it again in its own goroutine once the job is
// done, instead of ending the process.
func (p *pool) helperClaim() {
	defer p.catch.Recover()
	p.claim(false)
}

func (p *pool) helper() {
	var last uint64 // generation of the last job joined
	idleSince := time.Now()
	for spins := 0; ; spins++ {
		w := p.word.Load()
		if w&poolStop != 0 {
			return
		}
		if w&poolOpen != 0 && w>>poolGen != last {
			if p.word.CompareAndSwap(w, w+1) {
				last = w >> poolGen
				p.helperClaim()
				p.word.Add(^uint64(0)) // leave
				idleSince, spins = time.Now(), 0
			}
			continue
		}
		if spins%64 != 63 {
			continue
		}
		if time.Since(idleSince) < spinFor {
			// Let other goroutines and other processes run: on a busy
			// machine the owner may be waiting for this core.
			runtime.Gosched()
			osYield()
			continue
		}
		// Park. The owner opens a job and then reads sleepers; this
		// helper counts itself and then reads word: one of the two sees
		// the other (atomics are sequentially consistent), so no job is
		// missed. A stale token only costs a spurious wake-up.
		p.sleepers.Add(1)
		if w := p.word.Load(); w&poolStop == 0 && (w&poolOpen == 0 || w>>poolGen == last) {
			if _, ok := <-p.wake; !ok {
				return
			}
		}
		p.sleepers.Add(-1)
		idleSince, spins = time.Now(), 0
	}
}
