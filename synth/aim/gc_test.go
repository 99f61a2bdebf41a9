package aim

import (
	"runtime/debug"
	"testing"
)

// gcPercent reads GOGC (setting it and restoring it).
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// TestHoldGCPercent: runs lower GOGC while any of them runs and the last
// restores it; a lower setting or a disabled collector is left alone.
func TestHoldGCPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	for _, before := range []int{100, 300, runGCPercent, 20, -1} {
		debug.SetGCPercent(before)
		want := runGCPercent
		if before < 0 || before <= runGCPercent {
			want = before
		}
		a := holdGCPercent()
		b := holdGCPercent()
		if got := gcPercent(); got != want {
			t.Errorf("GOGC %d: %d during two runs, want %d", before, got, want)
		}
		a()
		if got := gcPercent(); got != want {
			t.Errorf("GOGC %d: %d after one of two runs ended, want %d", before, got, want)
		}
		b()
		if got := gcPercent(); got != before {
			t.Errorf("GOGC %d: %d after both runs ended, want it restored", before, got)
		}
	}
}
