package catalog

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	"go.etcd.io/bbolt"
	bberrors "go.etcd.io/bbolt/errors"

	"github.com/dpsql/dpsql/internal/boltcheck"
)

// Opening the data file.
//
// bbolt.Open initialises a 0-byte file as a new database, and it reads the
// file through unchecked pointers: a truncated file faults in the freelist,
// a damaged page panics or yields garbage. So Open first takes the file's
// lock itself, then classifies the file:
//
//   - missing: a new database (the file is created with O_EXCL);
//   - empty, or failing boltcheck (meta pages, size, every page of the
//     B+tree): a *DamagedError, and the file is left untouched;
//   - otherwise bbolt opens it, through the already locked descriptor,
//     with faults turned into panics and panics into a *DamagedError.
//
// The whole file is read by boltcheck at every open; on a file that passed,
// bbolt never dereferences memory outside it. Records are then protected
// by their checksums (sealed.go) when they are read.

// maxProblems bounds the problems a *DamagedError lists.
const maxProblems = 100

// ErrDamaged is matched (errors.Is) by the *DamagedError that Open and
// OpenReadOnly return for a data file that is empty, truncated or damaged.
var ErrDamaged = errors.New("catalog: data file is damaged")

// DamagedError reports a data file that cannot be used. The file is left
// as it was.
type DamagedError struct {
	Path     string
	Empty    bool     // the file has 0 bytes
	Problems []string // what is wrong, at most 100
	More     int      // problems left out of Problems
}

func (e *DamagedError) Error() string {
	restore := fmt.Sprintf("restore it by copying a backup made by `dpsql backup` to %s, or move it away to start a new, empty database", e.Path)
	if e.Empty {
		return fmt.Sprintf("data file %s is empty (0 bytes): the users, grants, privacy budgets and ledger it should hold are gone, and dpsql will not silently start a new database over it; %s",
			e.Path, restore)
	}
	summary := "unknown damage"
	if len(e.Problems) > 0 {
		summary = e.Problems[0]
		if n := len(e.Problems) - 1 + e.More; n > 0 {
			summary += fmt.Sprintf(" (and %d more problem%s; `dpsql check` lists them)", n, map[bool]string{true: "", false: "s"}[n == 1])
		}
	}
	// One line: the server prints it as its only word before exiting.
	summary = strings.Join(strings.Fields(summary), " ")
	return fmt.Sprintf("data file %s is damaged: %s; %s", e.Path, summary, restore)
}

// Is makes a *DamagedError match ErrDamaged.
func (e *DamagedError) Is(target error) bool { return target == ErrDamaged }

// openLocked opens the data file at path and takes its lock (exclusive, or
// shared if readOnly), waiting at most timeout. created reports that the
// file did not exist and was created empty (never when readOnly).
func openLocked(path string, readOnly bool, timeout time.Duration) (f *os.File, created bool, err error) {
	flag := os.O_RDWR
	if readOnly {
		flag = os.O_RDONLY
	}
	f, err = os.OpenFile(path, flag, 0)
	if errors.Is(err, fs.ErrNotExist) && !readOnly {
		f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		switch {
		case err == nil:
			created = true
		case errors.Is(err, fs.ErrExist): // created meanwhile by another process
			f, err = os.OpenFile(path, flag, 0)
		}
	}
	if err != nil {
		return nil, false, fmt.Errorf("catalog: open data file %s: %w", path, err)
	}
	if err := lockFile(f, !readOnly, timeout); err != nil {
		f.Close()
		if created {
			os.Remove(path)
		}
		return nil, false, err
	}
	return f, created, nil
}

// checkFile classifies the existing, locked data file f.
func checkFile(f *os.File, path string) error {
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("catalog: data file %s: %w", path, err)
	}
	if fi.Size() == 0 {
		return &DamagedError{Path: path, Empty: true}
	}
	r := boltcheck.Check(f, fi.Size(), maxProblems)
	if !r.OK() {
		return &DamagedError{Path: path, Problems: r.Problems, More: r.More}
	}
	return nil
}

// initialMmapSize is the address space bbolt maps at open (see openBolt).
const initialMmapSize = 1 << 30

// openBolt opens the locked data file f with bbolt.
func openBolt(path string, f *os.File, readOnly bool, timeout time.Duration) (*bbolt.DB, error) {
	var (
		db     *bbolt.DB
		handed atomic.Bool
	)
	err := guard(path, func() error {
		var err error
		db, err = bbolt.Open(path, 0o600, &bbolt.Options{
			Timeout:  timeout,
			ReadOnly: readOnly,
			// Map 1 GB of address space from the start (only the pages
			// read count as memory). When a commit outgrows the mapping,
			// bbolt re-maps and first copies every key and value of the
			// transaction's dirty nodes into the heap, one allocation
			// each: writing a 100 000-row synthetic table into a young
			// file held 24 MB of such copies at the commit. etcd maps
			// 10 GB for the same reason.
			InitialMmapSize: initialMmapSize,
			// bbolt's own descriptor is f, already locked: bbolt locks it
			// again, which succeeds (the lock belongs to the open file
			// description). Later calls (Tx.WriteTo opens the file to copy
			// it) get descriptors of their own, which they close.
			OpenFile: func(name string, flag int, mode os.FileMode) (*os.File, error) {
				if handed.CompareAndSwap(false, true) {
					return f, nil
				}
				return os.OpenFile(name, flag, mode)
			},
		})
		return err
	})
	if err != nil {
		var de *DamagedError
		switch {
		case errors.As(err, &de):
			return nil, err
		case errors.Is(err, bberrors.ErrTimeout):
			return nil, fmt.Errorf("catalog: %s is in use by another dpsql process: %w", path, ErrLocked)
		case errors.Is(err, bberrors.ErrInvalid), errors.Is(err, bberrors.ErrChecksum), errors.Is(err, bberrors.ErrVersionMismatch):
			return nil, &DamagedError{Path: path, Problems: []string{err.Error()}}
		}
		return nil, fmt.Errorf("catalog: open data file %s: %w", path, err)
	}
	return db, nil
}

// guard runs fn with memory faults turned into panics, and turns a panic
// into a *DamagedError: bbolt reads its file through unchecked pointers, so
// damage that boltcheck missed must not crash the process.
func guard(path string, fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = &DamagedError{Path: path, Problems: []string{fmt.Sprintf("reading it failed: %v", r)}}
		}
	}()
	return fn()
}
