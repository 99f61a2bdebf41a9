package engine

import (
	"strconv"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
)

var _ sql.ExecSourceRel = (*ShowStatus)(nil)

// statusSchema is the result of SHOW DPSQL STATUS and CALL dpsql_status():
// one row per variable, as in MySQL's SHOW STATUS.
var statusSchema = sql.Schema{
	{Name: "Variable_name", Type: types.LongText, Nullable: false},
	{Name: "Value", Type: types.LongText, Nullable: false},
}

// ShowStatus is the plan node of SHOW DPSQL STATUS: the server's version,
// data directory and uptime.
type ShowStatus struct {
	e *Engine
}

// newShowStatus returns the node for e.
func newShowStatus(e *Engine) *ShowStatus { return &ShowStatus{e: e} }

// Resolved implements sql.Node.
func (n *ShowStatus) Resolved() bool { return true }

// String implements sql.Node.
func (n *ShowStatus) String() string { return "SHOW DPSQL STATUS" }

// Schema implements sql.Node.
func (n *ShowStatus) Schema() sql.Schema { return statusSchema }

// Children implements sql.Node.
func (n *ShowStatus) Children() []sql.Node { return nil }

// WithChildren implements sql.Node.
func (n *ShowStatus) WithChildren(children ...sql.Node) (sql.Node, error) {
	if len(children) != 0 {
		return nil, sql.ErrInvalidChildrenNumber.New(n, len(children), 0)
	}
	return n, nil
}

// IsReadOnly implements sql.Node.
func (n *ShowStatus) IsReadOnly() bool { return true }

// WithResolvedChildren implements the parser's Injectable.
func (n *ShowStatus) WithResolvedChildren(children []any) (any, error) {
	if len(children) != 0 {
		return nil, sql.ErrInvalidChildrenNumber.New(n, len(children), 0)
	}
	return n, nil
}

// RowIter implements sql.ExecSourceRel.
func (n *ShowStatus) RowIter(ctx *sql.Context, _ sql.Row) (sql.RowIter, error) {
	return sql.RowsToRowIter(n.e.statusRows()...), nil
}

// statusRows are the rows of SHOW DPSQL STATUS.
func (e *Engine) statusRows() []sql.Row {
	up := time.Since(e.started).Truncate(time.Second)
	return []sql.Row{
		{"version", e.cfg.Version},
		{"data_dir", e.dataDir},
		{"started_at", e.started.UTC().Format(time.RFC3339)},
		{"uptime_seconds", strconv.FormatInt(int64(up/time.Second), 10)},
	}
}

// statusProcedure is CALL dpsql_status(), the preparable twin of
// SHOW DPSQL STATUS.
func (e *Engine) statusProcedure() sql.ExternalStoredProcedureDetails {
	return sql.ExternalStoredProcedureDetails{
		Name:     "dpsql_status",
		Schema:   statusSchema,
		ReadOnly: true,
		Function: func(ctx *sql.Context) (sql.RowIter, error) {
			return sql.RowsToRowIter(e.statusRows()...), nil
		},
	}
}
