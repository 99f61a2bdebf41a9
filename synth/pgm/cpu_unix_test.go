//go:build unix

package pgm

import (
	"syscall"
	"time"
)

// cpuTime is the user plus system CPU time of the process so far; the
// benchmarks report it because the benchmark machine is shared.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
