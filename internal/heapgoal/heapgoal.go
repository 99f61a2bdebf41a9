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
// [MinPercent, MaxPercent]. A small heap keeps the default; a large one is
// held near what is live.
//
// The runtime also keeps the pages a collection freed mapped until its
// background scavenger, paced at about 1 % of the CPU and sparing pages it
// found densely used, returns them: on a 60 MB heap that churns large
// tables, 15–20 MB. With a RetainPercent, Start also sets the memory limit
// (debug.SetMemoryLimit) to that percentage of the heap goal, never below
// RetainFloor: past it the runtime returns freed pages as the heap grows
// again. Below the floor nothing changes, as releasing pages and faulting
// them back costs a small heap CPU for memory it does not need.
package heapgoal

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
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

// Limit returns the memory limit that lets a heap with live bytes, whose
// collector target is percent (GOGC), keep retainPercent % of its goal
// (live plus its growth), and at least floor bytes.
func Limit(live uint64, percent, retainPercent int, floor uint64) uint64 {
	goal := live + live*uint64(percent)/100
	return max(goal*uint64(retainPercent)/100, floor)
}

// Options configure Start.
type Options struct {
	// Headroom is what the heap may grow by between two collections: GOGC
	// is set to 100 × Headroom / live, within [MinPercent, MaxPercent].
	Headroom               uint64
	MinPercent, MaxPercent int
	// RetainPercent, if positive, sets the memory limit after every
	// collection to Limit(live, GOGC, RetainPercent, RetainFloor) (see the
	// package comment); zero leaves the limit alone.
	RetainPercent int
	RetainFloor   uint64
}

// sentinel is allocated for one collection cycle: its cleanup runs once
// a collection has found it unreachable. Large enough not to share a tiny
// allocation block, whose cleanups may never run.
type sentinel struct{ _ [32]byte }

// Start makes GOGC (and, with o.RetainPercent, the memory limit) follow
// the live heap after every collection (see the package comment) until
// the returned stop is called, and sets them once now. It overrides any
// GOGC or memory limit set before; callers that honour the environment's
// GOGC or GOMEMLIMIT do not call it, or leave RetainPercent zero, when one
// is set. stop restores the memory limit that was set before Start (GOGC
// stays where it was last set).
func Start(o Options) (stop func()) {
	var (
		mu      sync.Mutex
		stopped bool
	)
	before := debug.SetMemoryLimit(-1)
	adjust := func() bool {
		// A sample per call: cleanups may run on several goroutines.
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		metrics.Read(sample)
		var live uint64
		if sample[0].Value.Kind() == metrics.KindUint64 {
			live = sample[0].Value.Uint64()
		}
		pct := Percent(live, o.Headroom, o.MinPercent, o.MaxPercent)
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return false
		}
		debug.SetGCPercent(pct)
		if o.RetainPercent > 0 {
			debug.SetMemoryLimit(int64(min(Limit(live, pct, o.RetainPercent, o.RetainFloor), math.MaxInt64)))
		}
		return true
	}
	var arm func()
	arm = func() {
		s := new(sentinel)
		runtime.AddCleanup(s, func(struct{}) {
			if adjust() {
				arm()
			}
		}, struct{}{})
	}
	adjust()
	arm()
	return func() {
		mu.Lock()
		defer mu.Unlock()
		if !stopped && o.RetainPercent > 0 {
			debug.SetMemoryLimit(before)
		}
		stopped = true
	}
}
