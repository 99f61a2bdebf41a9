// Package heapgoal bounds what the Go heap may grow by between two
// collections to a fixed headroom rather than a fixed fraction of the live
// heap.
//
// The collector's target, GOGC, lets the heap grow by GOGC % of what was
// live at the last collection. At the default, 100, a process whose live
// heap is a 60 MB model and its tables peaks at twice that; at 25 it peaks
// at 1.25 × but collects four times as often, which costs a small heap (a
// synthesis at ε = 1, 20–30 MB live, of which much is short-lived tables)
// a quarter more CPU. Start sets GOGC after every collection so that the
// growth allowed is about headroom bytes: 100 × headroom / live, within
// [minPercent, maxPercent]. A small heap keeps the default; a large one is
// held near what is live.
package heapgoal

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// Percent returns the GOGC that lets a heap with live bytes grow by about
// headroom bytes, within [lo, hi].
func Percent(live, headroom uint64, lo, hi int) int {
	if live == 0 {
		return hi
	}
	p := float64(headroom) / float64(live) * 100
	return int(min(max(p, float64(lo)), float64(hi)))
}

// sentinel is allocated for one collection cycle: its cleanup runs once
// a collection has found it unreachable. Large enough not to share a tiny
// allocation block, whose cleanups may never run.
type sentinel struct{ _ [32]byte }

// Start makes GOGC follow the live heap after every collection (see the
// package comment) until the returned stop is called, and sets it once
// now. It overrides any GOGC set before; callers that honour the
// environment's GOGC do not call it when one is set.
func Start(headroom uint64, minPercent, maxPercent int) (stop func()) {
	var stopped atomic.Bool
	adjust := func() {
		// A sample per call: cleanups may run on several goroutines.
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		metrics.Read(sample)
		var live uint64
		if sample[0].Value.Kind() == metrics.KindUint64 {
			live = sample[0].Value.Uint64()
		}
		debug.SetGCPercent(Percent(live, headroom, minPercent, maxPercent))
	}
	var arm func()
	arm = func() {
		s := new(sentinel)
		runtime.AddCleanup(s, func(struct{}) {
			if stopped.Load() {
				return
			}
			adjust()
			arm()
		}, struct{}{})
	}
	adjust()
	arm()
	return func() { stopped.Store(true) }
}
