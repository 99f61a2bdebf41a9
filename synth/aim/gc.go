package aim

import (
	"runtime/debug"
	"sync"
)

// runGCPercent is the collector's GOGC while AIM runs. The default 100 lets
// the heap grow to twice what the last collection left live before the
// next one, and AIM's scoring and drift bounds fill that headroom with
// short-lived tables every round: the peak was about twice the live heap
// (docs/aim-performance.md, "Issue 19, fourth pass: memory"). At 50 the
// peak is 1.5 × the live heap. Unlike a memory limit, a GOGC cannot make
// the collector run back to back when the live heap is large (it always
// leaves half the live heap of headroom): collections are more frequent
// in proportion, and AIM's heap is mostly pointer-free arrays, cheap to
// mark.
const runGCPercent = 50

// gcHold is the process-wide GOGC change: held by every running AIM run,
// set by the first and restored by the last (the setting is global).
var gcHold struct {
	sync.Mutex
	runs  int
	saved int  // GOGC before the first run
	set   bool // this package lowered it
}

// holdGCPercent lowers GOGC to runGCPercent for a run and returns the
// function that ends the hold. A process that already runs with a lower
// GOGC, or with the collector off, is left alone.
func holdGCPercent() (release func()) {
	gcHold.Lock()
	defer gcHold.Unlock()
	if gcHold.runs == 0 {
		prev := debug.SetGCPercent(runGCPercent)
		gcHold.saved, gcHold.set = prev, true
		if prev < 0 || prev <= runGCPercent {
			debug.SetGCPercent(prev)
			gcHold.set = false
		}
	}
	gcHold.runs++
	return func() {
		gcHold.Lock()
		defer gcHold.Unlock()
		if gcHold.runs--; gcHold.runs == 0 && gcHold.set {
			debug.SetGCPercent(gcHold.saved)
			gcHold.set = false
		}
	}
}
