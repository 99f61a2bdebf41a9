package planner

import (
	"fmt"

	"github.com/dolthub/vitess/go/vt/sqlparser"
)

// parseSQL is sqlparser.Parse turned panic-safe: the vitess parser panics
// on some malformed input (for example `SELECT` directly followed by an empty string literal), and such text may come
// from any client.
func parseSQL(text string) (stmt sqlparser.Statement, err error) {
	defer func() {
		if r := recover(); r != nil {
			stmt, err = nil, fmt.Errorf("syntax error: the MySQL parser failed on this text (%v)", r)
		}
	}()
	return sqlparser.Parse(text)
}
