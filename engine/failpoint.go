package engine

import (
	"os"
	"sync"
)

// Failpoints are test hooks for crash tests of the real binary. The
// environment variable DPSQL_FAILPOINT names the one that is armed; when it
// is unset (always, in production) every failpoint is a no-op. An armed
// failpoint makes the process exit at once with status failpointExit,
// without any cleanup, as a crash would.
//
//	DPSQL_FAILPOINT=after-reserve  exit right after CREATE SYNTHETIC TABLE's
//	                               budget reservation is durable, before the
//	                               source is read (the ledger keeps the
//	                               charge as spent: a restart shows it)
const failpointEnv = "DPSQL_FAILPOINT"

// failpointExit is the exit status of a process stopped by a failpoint.
const failpointExit = 86

// Failpoint names.
const failpointAfterReserve = "after-reserve"

// armedFailpoint is the failpoint named by DPSQL_FAILPOINT, read once.
var armedFailpoint = sync.OnceValue(func() string { return os.Getenv(failpointEnv) })

// failpoint exits the process if name is the armed failpoint.
func failpoint(name string) {
	if armedFailpoint() == name {
		os.Exit(failpointExit)
	}
}
