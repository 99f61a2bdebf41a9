package catalog

import (
	"errors"
	"fmt"

	goerrors "gopkg.in/src-d/go-errors.v1"
)

var (
	// ErrLocked is returned by Open when another process (or another Store in
	// this process) holds the data directory.
	ErrLocked = errors.New("catalog: data directory is in use by another dpsql process")

	// ErrNotCatalog is returned by Open when the data file exists but does not
	// carry the dpsql format header.
	ErrNotCatalog = errors.New("catalog: file is not a dpsql catalog")

	// ErrCorrupt is matched by the *seal.Error a read returns when a stored
	// record fails its checksum: the data file is damaged.
	ErrCorrupt = errors.New("catalog: record is corrupt")

	// ErrClosed is returned by operations on a closed Store.
	ErrClosed = errors.New("catalog: store is closed")

	// ErrSchemaChanged is returned when a statement planned against a table
	// layout that has since been altered or dropped.
	ErrSchemaChanged = errors.New("catalog: table schema changed concurrently; retry the statement")

	// ErrReservedBucket is returned by Tx methods given a metadata bucket name
	// that is empty or not a valid name.
	ErrReservedBucket = errors.New("catalog: invalid metadata bucket name")
)

// VersionError is returned by Open when the data file was written by a newer
// (or otherwise unknown) format version than this build understands.
type VersionError struct {
	Path  string // data file
	Found uint32 // format version stored in the file
	Want  uint32 // newest format version this build supports
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("catalog: %s has format version %d, this dpsql supports format version %d at most; upgrade dpsql",
		e.Path, e.Found, e.Want)
}

// wrapf adds context to err, except for go-mysql-server error kinds, which
// the engine recognises only when returned unwrapped.
func wrapf(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	if _, ok := err.(*goerrors.Error); ok {
		return err
	}
	return fmt.Errorf(format+": %w", append(args, err)...)
}
