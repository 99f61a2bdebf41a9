package dpparse

import (
	"errors"
	"fmt"
	"strings"
)

// ErrSyntax is wrapped by every *Error, so callers can test errors.Is(err, ErrSyntax).
var ErrSyntax = errors.New("dpsql syntax error")

// ErrorKind classifies a syntax error. Tests and callers assert the kind,
// never the message text.
type ErrorKind uint8

const (
	KindUnexpected    ErrorKind = iota + 1 // a token other than the expected one
	KindUnterminated                       // unterminated string, quoted identifier or comment
	KindBadNumber                          // malformed or out-of-range number
	KindBadValue                           // well-formed but invalid value (BINS 0, 0-WAY, bad WEIGHT)
	KindDuplicate                          // an option or clause given twice
	KindWorkloadQuery                      // a WORKLOAD query that MySQL's parser rejects
)

var kindNames = [...]string{
	KindUnexpected:    "unexpected token",
	KindUnterminated:  "unterminated token",
	KindBadNumber:     "bad number",
	KindBadValue:      "bad value",
	KindDuplicate:     "duplicate",
	KindWorkloadQuery: "bad workload query",
}

func (k ErrorKind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("ErrorKind(%d)", uint8(k))
}

// Error is a syntax error in a dpsql statement. Pos is the byte offset of
// the offending token in the text given to Parse; Line and Column are
// 1-based. Near is the text starting at Pos, as MySQL reports it.
type Error struct {
	Kind   ErrorKind
	Pos    int
	Line   int
	Column int
	Near   string
	Msg    string
	Query  int   // 1-based index of the WORKLOAD query, for KindWorkloadQuery
	Err    error // underlying error (from the MySQL parser), if any
}

func newError(src string, kind ErrorKind, pos int, msg string) *Error {
	pos = min(max(pos, 0), len(src))
	line := 1 + strings.Count(src[:pos], "\n")
	col := pos - strings.LastIndexByte(src[:pos], '\n')
	near := src[pos:]
	if i := strings.IndexAny(near, "\n"); i >= 0 {
		near = near[:i]
	}
	const maxNear = 60
	if len(near) > maxNear {
		near = near[:maxNear]
	}
	return &Error{Kind: kind, Pos: pos, Line: line, Column: col, Near: near, Msg: msg}
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "dpsql syntax error at line %d, column %d", e.Line, e.Column)
	if e.Near != "" {
		fmt.Fprintf(&b, " near '%s'", e.Near)
	} else {
		b.WriteString(" at end of input")
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns ErrSyntax and the underlying error, if any.
func (e *Error) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrSyntax, e.Err}
	}
	return []error{ErrSyntax}
}
