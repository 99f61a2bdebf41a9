//go:build !linux

package pgm

import "runtime"

// osYield lets other goroutines run; see yield_linux.go.
func osYield() { runtime.Gosched() }
