package engine

import (
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
)

var _ sql.ExecSourceRel = rollbackNotice{}

// codeNotRolledBack is MySQL's ER_WARNING_NOT_COMPLETE_ROLLBACK, which it
// raises when a ROLLBACK cannot undo changes to non-transactional tables.
const codeNotRolledBack = 1196

// rollbackNotice runs ROLLBACK. The storage commits every statement when it
// completes (catalog/doc.go), so a ROLLBACK has nothing to undo; as MySQL
// does for non-transactional tables, it succeeds with a warning, so that a
// client that meant to discard its changes can see that they were kept.
type rollbackNotice struct{}

// Resolved implements sql.Node.
func (rollbackNotice) Resolved() bool { return true }

// String implements sql.Node.
func (rollbackNotice) String() string { return "ROLLBACK" }

// Schema implements sql.Node.
func (rollbackNotice) Schema() sql.Schema { return types.OkResultSchema }

// Children implements sql.Node.
func (rollbackNotice) Children() []sql.Node { return nil }

// WithChildren implements sql.Node.
func (n rollbackNotice) WithChildren(children ...sql.Node) (sql.Node, error) {
	if len(children) != 0 {
		return nil, sql.ErrInvalidChildrenNumber.New(n, len(children), 0)
	}
	return n, nil
}

// IsReadOnly implements sql.Node.
func (rollbackNotice) IsReadOnly() bool { return true }

// WithResolvedChildren implements the parser's Injectable.
func (n rollbackNotice) WithResolvedChildren(children []any) (any, error) {
	if len(children) != 0 {
		return nil, sql.ErrInvalidChildrenNumber.New(n, len(children), 0)
	}
	return n, nil
}

// RowIter implements sql.ExecSourceRel.
func (rollbackNotice) RowIter(ctx *sql.Context, _ sql.Row) (sql.RowIter, error) {
	ctx.Warn(codeNotRolledBack, "ROLLBACK undid nothing: dpsql commits every statement when it completes")
	return sql.RowsToRowIter(sql.NewRow(types.NewOkResult(0))), nil
}
