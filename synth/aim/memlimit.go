package aim

import (
	"math"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// memLimit keeps the Go runtime's soft memory limit near what a run needs
// while it lasts. The pacer lets the heap grow to twice the live data
// between collections, and a large AIM run's live data is several models
// (the fit's three arenas, the model it replaces, the round snapshots), so
// without a limit the peak was twice that: on adult at ε = 3, 246–250 MB
// resident for a 19 MB model (docs/aim-performance.md, issue 19 third
// pass). The heap is nearly all float arrays with nothing to scan, so the
// extra collections a limit causes cost little CPU.
//
// The limit is process-wide, so a run sets it only when nobody else has:
// not when the operator set one (GOMEMLIMIT), and not while another run
// holds it. It is 4 × the model + 64 MB (the bound on the resident
// set is 4 × the model + the data + 100 MB, and the binary and runtime take
// ~50 MB of that outside the heap), and never below 1.1 × the live heap of
// the last collection + 16 MB. When a fit's live data exceeds it the
// collector runs more often, within the runtime's cap of half the CPU;
// measured, the run's CPU did not change (same document).
type memLimit struct {
	owned bool
	prev  int64
}

var (
	memLimitMu    sync.Mutex
	memLimitOwned bool
)

// memLimitSlack is the part of the limit not proportional to the model: the
// runtime's own memory, the data, the candidates' answers, scoring buffers.
const memLimitSlack = 64 << 20

// acquireMemLimit takes the limit if it is free.
func acquireMemLimit() *memLimit {
	memLimitMu.Lock()
	defer memLimitMu.Unlock()
	l := &memLimit{}
	if memLimitOwned {
		return l
	}
	if prev := debug.SetMemoryLimit(-1); prev == math.MaxInt64 {
		l.owned, l.prev = true, prev
		memLimitOwned = true
	}
	return l
}

// set adjusts the limit for a fit of a model of modelMB megabytes.
func (l *memLimit) set(modelMB float64) {
	if l == nil || !l.owned {
		return
	}
	model := modelMB * (1 << 20)
	limit := 4*model + memLimitSlack
	limit = max(limit, 1.1*liveHeap()+16<<20)
	debug.SetMemoryLimit(int64(min(limit, math.MaxInt64/2)))
}

// release restores the limit the run found.
func (l *memLimit) release() {
	if l == nil || !l.owned {
		return
	}
	memLimitMu.Lock()
	defer memLimitMu.Unlock()
	debug.SetMemoryLimit(l.prev)
	l.owned = false
	memLimitOwned = false
}

var liveSample = []metrics.Sample{{Name: "/gc/heap/live:bytes"}}

// liveHeap returns the heap marked live by the last collection, in bytes.
func liveHeap() float64 {
	memLimitMu.Lock()
	defer memLimitMu.Unlock()
	metrics.Read(liveSample)
	if liveSample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return float64(liveSample[0].Value.Uint64())
}
