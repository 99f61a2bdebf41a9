package heapgoal

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	const mb = 1 << 20
	for _, tt := range []struct {
		name     string
		live     uint64
		headroom uint64
		want     int
	}{
		{"nothing live", 0, 16 * mb, 100},
		{"small heap: the default", 8 * mb, 16 * mb, 100},
		{"headroom equal to the heap", 16 * mb, 16 * mb, 100},
		{"a heap of twice the headroom", 32 * mb, 16 * mb, 50},
		{"wide30's heap", 64 * mb, 16 * mb, 25},
		{"adult ε = 10's heap: the floor", 200 * mb, 16 * mb, 25},
	} {
		if got := Percent(tt.live, tt.headroom, 25, 100); got != tt.want {
			t.Errorf("%s: Percent(%d MB live) = %d, want %d", tt.name, tt.live/mb, got, tt.want)
		}
	}
}

// gogc reads the collector's current target.
func gogc() int64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// TestStartFollowsLiveHeap checks that after a collection GOGC is what
// Percent gives for the live heap, as it grows and after it shrinks, and
// that stop leaves it alone.
func TestStartFollowsLiveHeap(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	const headroom = 4 << 20
	stop := Start(headroom, 10, 100)
	defer stop()
	await := func(want func(int64) bool) int64 {
		var got int64
		for range 50 {
			runtime.GC()
			time.Sleep(10 * time.Millisecond) // the cleanup runs on its own goroutine
			if got = gogc(); want(got) {
				break
			}
		}
		return got
	}
	held := make([]byte, 64<<20) // 64 MB live: 4 MB of headroom is 6 %, the floor
	for i := range held {
		held[i] = byte(i)
	}
	if got := await(func(p int64) bool { return p == 10 }); got != 10 {
		t.Fatalf("with 64 MB live GOGC = %d, want the floor 10", got)
	}
	runtime.KeepAlive(held)
	held = nil
	if got := await(func(p int64) bool { return p > 10 }); got <= 10 {
		t.Fatalf("after freeing 64 MB GOGC stayed %d", got)
	}
	stop()
	debug.SetGCPercent(77)
	if got := await(func(p int64) bool { return p != 77 }); got != 77 {
		t.Fatalf("after stop GOGC moved to %d", got)
	}
}
