package planner

import (
	"errors"
	"fmt"
)

// ErrRejected is wrapped by every *Error.
var ErrRejected = errors.New("workload query rejected")

// ErrorKind says why a workload query was rejected.
type ErrorKind uint8

const (
	KindNotSelect     ErrorKind = iota + 1 // not a plain SELECT (UNION, unparsable text)
	KindJoin                               // more than one table, or a JOIN
	KindSubquery                           // a subquery or derived table
	KindOtherTable                         // FROM (or a qualifier) names another table, or no FROM
	KindAggregate                          // an aggregate other than COUNT(*), or no COUNT(*)
	KindDistinct                           // SELECT DISTINCT
	KindHaving                             // HAVING
	KindClause                             // another unsupported clause: ORDER BY, LIMIT, WITH, INTO, WINDOW, locking
	KindSelectExpr                         // a select expression that is neither a column nor COUNT(*)
	KindGroupBy                            // group-by and select list disagree, or a non-column group-by
	KindUnknownColumn                      // a column the source table does not have
	KindNoDomain                           // a column of the source table without a public domain
	KindPredicate                          // an unsupported predicate form (LIKE, functions, column-to-column comparisons, …)
	KindLiteral                            // a literal whose type does not fit the column
	KindBinAlignment                       // a condition on a binned column that splits a bin
	KindWeight                             // a weight that is not positive and finite
	KindEmpty                              // an empty workload, or one without any attribute
	KindTooLarge                           // a marginal with too many cells
	KindOutOfDomain                        // a workload literal outside its column's public domain
)

var kindNames = [...]string{
	KindNotSelect:     "not a SELECT",
	KindJoin:          "join",
	KindSubquery:      "subquery",
	KindOtherTable:    "other table",
	KindAggregate:     "aggregate",
	KindDistinct:      "DISTINCT",
	KindHaving:        "HAVING",
	KindClause:        "unsupported clause",
	KindSelectExpr:    "select expression",
	KindGroupBy:       "GROUP BY",
	KindUnknownColumn: "unknown column",
	KindNoDomain:      "column without domain",
	KindPredicate:     "unsupported predicate",
	KindLiteral:       "literal type",
	KindBinAlignment:  "bin alignment",
	KindWeight:        "weight",
	KindEmpty:         "empty workload",
	KindTooLarge:      "marginal too large",
	KindOutOfDomain:   "value outside the domain",
}

func (k ErrorKind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("ErrorKind(%d)", uint8(k))
}

// Error is a rejected workload query. Query is its 1-based position in the
// workload (0 outside a workload); Fragment is the offending SQL.
type Error struct {
	Kind     ErrorKind
	Query    int
	Fragment string
	Msg      string
}

func (e *Error) Error() string {
	s := "workload"
	if e.Query > 0 {
		s = fmt.Sprintf("workload query %d", e.Query)
	}
	s += ": " + e.Msg
	if e.Fragment != "" {
		s += fmt.Sprintf(" (in %q)", e.Fragment)
	}
	return s
}

func (e *Error) Unwrap() error { return ErrRejected }

func reject(kind ErrorKind, fragment string, format string, args ...any) *Error {
	return &Error{Kind: kind, Fragment: fragment, Msg: fmt.Sprintf(format, args...)}
}
