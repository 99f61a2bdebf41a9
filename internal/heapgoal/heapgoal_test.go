package heapgoal

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

// TestPercentAndLimit: the GOGC and memory limit set for a live heap, with
// a headroom of 16 MB in [25, 100] and 125 % of the goal, at least 80 MB.
func TestPercentAndLimit(t *testing.T) {
	const mb = 1 << 20
	for _, tt := range []struct {
		name    string
		live    uint64
		percent int
		limitMB float64
	}{
		{"nothing live", 0, 100, 80},
		{"small heap: the default", 8 * mb, 100, 80},
		{"headroom equal to the heap", 16 * mb, 100, 80},
		{"a heap of twice the headroom", 32 * mb, 50, 80},
		{"wide30's heap: 1.25 × an 80 MB goal", 64 * mb, 25, 100},
		{"adult ε = 10's heap: the floor, 1.25 × 250 MB", 200 * mb, 25, 312.5},
	} {
		p := Percent(tt.live, 16*mb, 25, 100)
		if p != tt.percent {
			t.Errorf("%s: Percent(%d MB live) = %d, want %d", tt.name, tt.live/mb, p, tt.percent)
		}
		if got := Limit(tt.live, p, 125, 80*mb); got != uint64(tt.limitMB*mb) {
			t.Errorf("%s: Limit(%d MB, %d) = %.2f MB, want %.2f MB", tt.name, tt.live/mb, p, float64(got)/mb, tt.limitMB)
		}
	}
}

// gogc reads the collector's current target.
func gogc() int64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// TestStartFollowsLiveHeap checks that after a collection GOGC and the
// memory limit are what Percent and Limit give for the live heap, as it
// grows and after it shrinks, and that stop restores the limit and leaves
// GOGC alone.
func TestStartFollowsLiveHeap(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	const (
		mb       = 1 << 20
		headroom = 4 * mb
		floor    = 32 * mb
	)
	before := debug.SetMemoryLimit(-1)
	stop := Start(Options{Headroom: headroom, MinPercent: 10, MaxPercent: 100, RetainPercent: 125, RetainFloor: floor})
	defer stop()
	await := func(want func(p, limit int64) bool) (int64, int64) {
		var p, limit int64
		for range 50 {
			runtime.GC()
			time.Sleep(10 * time.Millisecond) // the cleanup runs on its own goroutine
			if p, limit = gogc(), debug.SetMemoryLimit(-1); want(p, limit) {
				break
			}
		}
		return p, limit
	}
	held := make([]byte, 64*mb) // 64 MB live: 4 MB of headroom is 6 %, the floor
	for i := range held {
		held[i] = byte(i)
	}
	// The goal is 1.1 × the live heap (64 MB and the test's own), the
	// limit 1.25 × that.
	lo, hi := int64(1.25*1.1*64*mb), int64(1.25*1.1*72*mb)
	p, limit := await(func(p, limit int64) bool { return p == 10 && limit >= lo && limit <= hi })
	if p != 10 {
		t.Fatalf("with 64 MB live GOGC = %d, want the floor 10", p)
	}
	if limit < lo || limit > hi {
		t.Fatalf("with 64 MB live the memory limit is %.1f MB, want 1.25 × the goal, in [%.1f, %.1f] MB", float64(limit)/mb, float64(lo)/mb, float64(hi)/mb)
	}
	runtime.KeepAlive(held)
	held = nil
	p, limit = await(func(p, limit int64) bool { return p > 10 && limit == floor })
	if p <= 10 {
		t.Fatalf("after freeing 64 MB GOGC stayed %d", p)
	}
	if limit != floor {
		t.Fatalf("after freeing 64 MB the memory limit is %.1f MB, want the floor %d MB", float64(limit)/mb, floor/mb)
	}
	stop()
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Fatalf("after stop the memory limit is %d, want %d as before Start", got, before)
	}
	debug.SetGCPercent(77)
	if p, limit := await(func(p, limit int64) bool { return p != 77 || limit != before }); p != 77 || limit != before {
		t.Fatalf("after stop GOGC moved to %d, the limit to %d", p, limit)
	}
}
