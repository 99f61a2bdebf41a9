// Package vtparse parses MySQL text with the vitess parser, turning its
// panics into errors. dpsql's packages that read SQL text from clients
// (public domains from CHECK constraints, dpsql statements' workloads, the
// planner's queries) parse through it.
package vtparse

import (
	"fmt"

	"github.com/dolthub/vitess/go/vt/sqlparser"
)

// Parse is sqlparser.Parse turned panic-safe: the vitess parser panics on
// some malformed input (for example `SELECT` directly followed by an empty
// string literal), and such text may come from any client. A panic is
// reported as a syntax error.
func Parse(text string) (stmt sqlparser.Statement, err error) {
	defer func() {
		if r := recover(); r != nil {
			stmt, err = nil, fmt.Errorf("syntax error: the MySQL parser failed on this text (%v)", r)
		}
	}()
	return sqlparser.Parse(text)
}
