//go:build unix

package catalog

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// lockFile takes an exclusive (or shared) flock on f, retrying until
// timeout. It is the lock bbolt takes, on the same open file description,
// so bbolt's own attempt succeeds and another process's fails.
func lockFile(f *os.File, exclusive bool, timeout time.Duration) error {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	deadline := time.Now().Add(timeout)
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EINTR):
			continue
		case !errors.Is(err, syscall.EWOULDBLOCK):
			return fmt.Errorf("catalog: lock %s: %w", f.Name(), err)
		case time.Now().After(deadline):
			return fmt.Errorf("catalog: %s is in use by another dpsql process (no lock after %v): %w", f.Name(), timeout, ErrLocked)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
