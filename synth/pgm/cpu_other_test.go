//go:build !unix

package pgm

import "time"

// cpuTime is not measured on this platform.
func cpuTime() time.Duration { return 0 }
