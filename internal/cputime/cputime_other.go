//go:build !unix

// Package cputime reads the process's CPU time, which the benchmarks
// report beside wall time because the benchmark machines are shared.
package cputime

import "time"

// Process is not measured on this platform: it is 0.
func Process() time.Duration { return 0 }
