package synth

import "runtime/debug"

// ReleaseMB is the model size (MB) from which ReleaseAfter returns a
// finished run's memory to the operating system.
const ReleaseMB = 8

// ReleaseAfter is called by whoever ran a mechanism once its result has been
// used and dropped: when the model was ReleaseMB or more, it collects and
// returns the freed pages to the system (debug.FreeOSMemory). The collector
// would otherwise keep them mapped, and, with nothing allocating, run no
// collection at all: an idle server held an ε = 10 adult synthesis's 300 MB of
// dead model, snapshots and release buffers, and the next run in the same
// process started on top of them (its peak 390 MB at its first phase, on
// the same trajectory whose first run peaked at 285 MB).
func ReleaseAfter(modelMB float64) {
	if modelMB >= ReleaseMB {
		debug.FreeOSMemory()
	}
}
