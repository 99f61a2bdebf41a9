package federated

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Kinds of failure, wrapped by every *Error; test with errors.Is.
var (
	ErrConnect     = errors.New("cannot connect to the source database")
	ErrAuth        = errors.New("the source database refused the credentials")
	ErrNoTable     = errors.New("the source table does not exist")
	ErrColumns     = errors.New("the declared columns do not match the source table")
	ErrUnsupported = errors.New("unsupported for a federated table")
	ErrQuery       = errors.New("a query on the source database failed")
)

// Error is a failure talking to the source database. Its Error text says
// what failed (the operation, the kind and the remote table) and never
// contains the remote server's message, which can quote data values (e.g.
// "invalid input syntax for type integer: "…""); Detail has that message,
// for the owner's logs only. Neither contains the password.
type Error struct {
	Op     string // what was being done: "connect", "list columns", "marginal query", ...
	Kind   error  // one of the Err* kinds above
	Target string // driver, host and table; no credentials
	detail string // remote text, password scrubbed
	cause  error
}

func (e *Error) Error() string {
	return fmt.Sprintf("federated %s: %s: %v", e.Target, e.Op, e.Kind)
}

// Detail is the full message, the remote server's text included: for the
// data owner's logs, never for an analyst.
func (e *Error) Detail() string {
	if e.detail == "" {
		return e.Error()
	}
	return e.Error() + ": " + e.detail
}

// Is matches the kind, and context.Canceled / DeadlineExceeded when the
// operation was cancelled.
func (e *Error) Is(target error) bool {
	if target == e.Kind {
		return true
	}
	return e.cause != nil && (target == context.Canceled || target == context.DeadlineExceeded) && errors.Is(e.cause, target)
}

// newError wraps cause (a driver error) as an *Error with its text kept
// only as the detail. A context error stays a context error.
func (s *Source) newError(op string, kind error, cause error) error {
	if cause != nil && (errors.Is(cause, context.Canceled) || errors.Is(cause, context.DeadlineExceeded)) {
		return fmt.Errorf("federated %s: %s: %w", s.conn.target(), op, contextCause(cause))
	}
	e := &Error{Op: op, Kind: kind, Target: s.conn.target(), cause: cause}
	if cause != nil {
		e.detail = scrub(cause.Error(), s.conn.Password)
	}
	return e
}

// contextCause returns the context error inside err, dropping the
// driver's text.
func contextCause(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return context.DeadlineExceeded
	}
	return context.Canceled
}

// scrub removes the password from a message, whatever driver formatted it.
func scrub(msg, password string) string {
	if password == "" {
		return msg
	}
	return strings.ReplaceAll(msg, password, "***")
}

// Redact returns an error safe to show to anyone: the package's errors
// keep their kind and operation (their Error text never has remote text),
// ErrColumns and ErrUnsupported errors (made of column names, remote type
// names and domains only) and context errors stay as they are, and any
// other error is replaced by a generic one, since it may quote remote text.
func Redact(err error) error {
	if err == nil {
		return nil
	}
	var fe *Error
	switch {
	case errors.As(err, &fe):
		return &Error{Op: fe.Op, Kind: fe.Kind, Target: fe.Target}
	case errors.Is(err, ErrColumns) || errors.Is(err, ErrUnsupported):
		return err
	case errors.Is(err, context.Canceled):
		return context.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return context.DeadlineExceeded
	}
	return errors.New("federated: the source database failed")
}

// Detail returns the full message of err for the owner's logs: an *Error's
// Detail, or err's text.
func Detail(err error) string {
	var fe *Error
	if errors.As(err, &fe) {
		return fe.Detail()
	}
	if err == nil {
		return ""
	}
	return err.Error()
}
