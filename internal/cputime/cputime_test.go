package cputime

import (
	"runtime"
	"testing"
)

// Busy work advances the process's CPU time (on platforms that measure it).
func TestProcessAdvances(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" || runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skip("not measured on", runtime.GOOS)
	}
	start := Process()
	x := 0.0
	for i := 0; Process()-start <= 0 && i < 1e10; i++ {
		x += float64(i)
	}
	if Process() <= start {
		t.Errorf("CPU time did not advance (%v)", x)
	}
}
