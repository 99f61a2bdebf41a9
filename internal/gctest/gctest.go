// Package gctest lets tests check that an object is no longer reachable:
// they attach a cleanup that closes a channel, drop their references, and
// ask Collected.
package gctest

import (
	"runtime"
	"time"
)

// Collected reports whether the object whose cleanup closes freed is
// collected within a few collection cycles. One cycle is not always enough
// on a loaded machine: a finished worker goroutine may not yet have
// returned (its frame still holds the object), and cleanups run on their own
// goroutine, which may wait for a core. An object something keeps survives
// every cycle.
func Collected(freed <-chan struct{}) bool {
	for range 5 {
		runtime.GC()
		select {
		case <-freed:
			return true
		case <-time.After(time.Second):
		}
	}
	return false
}
