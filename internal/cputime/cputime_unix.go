//go:build unix

// Package cputime reads the process's CPU time, which the benchmarks
// report beside wall time because the benchmark machines are shared.
package cputime

import (
	"syscall"
	"time"
)

// Process is the user plus system CPU time of the process so far.
func Process() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
