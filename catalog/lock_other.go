//go:build !unix

package catalog

import (
	"os"
	"time"
)

// lockFile does nothing here: bbolt.Open takes the lock, after the file
// was checked.
func lockFile(*os.File, bool, time.Duration) error { return nil }
