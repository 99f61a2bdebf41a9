package engine

import (
	"context"
	"strconv"
	"strings"

	"github.com/dolthub/go-mysql-server/server"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

// Diagnostics: SHOW ERRORS and SHOW WARNINGS after a failed statement.
//
// In MySQL a failed statement leaves its error in the diagnostics area,
// where SHOW WARNINGS (level Error) and SHOW ERRORS (errors only) find it.
// GMS v0.20.0 keeps only warnings in the session and does not support SHOW
// ERRORS. errorRecorder, around GMS's connection handler, replaces the
// session's warnings with the error when a command fails, and SHOW ERRORS
// [LIMIT [offset,] n] and SHOW COUNT(*) ERRORS read them like SHOW WARNINGS
// does, keeping them for the next diagnostic statement.

// recordErrors returns a server.HandlerWrapper that puts errorRecorder
// around the handler, then applies next.
func (e *Engine) recordErrors(next server.HandlerWrapper) server.HandlerWrapper {
	return func(h mysql.Handler) (mysql.Handler, error) {
		return next(&errorRecorder{passOn: passOn{h}, e: e})
	}
}

// errorRecorder records the error of every failed command in its
// connection's session.
type errorRecorder struct {
	passOn
	e *Engine
}

var _ mysql.BinlogReplicaHandler = (*errorRecorder)(nil)

// ComQuery implements mysql.Handler.
func (h *errorRecorder) ComQuery(ctx context.Context, c *mysql.Conn, query string, callback mysql.ResultSpoolFn) error {
	err := h.Handler.ComQuery(ctx, c, query, callback)
	err = maskErrorCredentials(err)
	h.record(c, err)
	return err
}

// ComMultiQuery implements mysql.Handler.
func (h *errorRecorder) ComMultiQuery(ctx context.Context, c *mysql.Conn, query string, callback mysql.ResultSpoolFn) (string, error) {
	rest, err := h.Handler.ComMultiQuery(ctx, c, query, callback)
	err = maskErrorCredentials(err)
	h.record(c, err)
	return rest, err
}

// ComPrepare implements mysql.Handler.
func (h *errorRecorder) ComPrepare(ctx context.Context, c *mysql.Conn, query string, prepare *mysql.PrepareData) ([]*querypb.Field, error) {
	fields, err := h.Handler.ComPrepare(ctx, c, query, prepare)
	err = maskErrorCredentials(err)
	h.record(c, err)
	return fields, err
}

// ComStmtExecute implements mysql.Handler.
func (h *errorRecorder) ComStmtExecute(ctx context.Context, c *mysql.Conn, prepare *mysql.PrepareData, callback func(*sqltypes.Result) error) error {
	err := h.Handler.ComStmtExecute(ctx, c, prepare, callback)
	err = maskErrorCredentials(err)
	h.record(c, err)
	return err
}

// record makes err the diagnostics of c's session. It runs on c's
// goroutine after the command, when nothing else uses the session.
func (h *errorRecorder) record(c *mysql.Conn, err error) {
	if err == nil || h.e.srv == nil {
		return
	}
	se := sql.CastSQLError(err)
	if se == nil {
		return
	}
	_ = h.e.srv.SessionManager().Iter(func(s sql.Session) (bool, error) {
		if s.ID() != c.ConnectionID {
			return false, nil
		}
		s.ClearWarnings()
		s.Warn(&sql.Warning{Level: "Error", Code: se.Number(), Message: se.Message})
		return true, nil
	})
}

var _ sql.ExecSourceRel = (*showErrors)(nil)

// showErrorsSchema is MySQL's schema of SHOW ERRORS (that of SHOW
// WARNINGS).
var showErrorsSchema = sql.Schema{
	{Name: "Level", Type: types.LongText},
	{Name: "Code", Type: types.Int32},
	{Name: "Message", Type: types.LongText},
}

// errorCountSchema is the schema of SHOW COUNT(*) ERRORS.
var errorCountSchema = sql.Schema{{Name: "@@session.error_count", Type: types.Int64}}

// showErrors is SHOW ERRORS [LIMIT [offset,] n] or SHOW COUNT(*) ERRORS.
// It holds the session's diagnostics as they were when the statement was
// parsed: GMS clears them before running any statement but SHOW WARNINGS,
// and RowIter puts them back.
type showErrors struct {
	warnings      []*sql.Warning // most recent first, as Session.Warnings
	count         bool
	offset, limit int // limit < 0: none
}

// newShowErrors returns the node of s (a SHOW [COUNT(*)] ERRORS) for the
// session of ctx, or an error for a LIMIT that is not made of integers.
func newShowErrors(ctx *sql.Context, s *ast.Show) (*showErrors, error) {
	n := &showErrors{warnings: ctx.Session.Warnings(), count: s.CountStar, limit: -1}
	if s.Limit == nil {
		return n, nil
	}
	var err error
	if n.limit, err = limitValue(s.Limit.Rowcount); err != nil {
		return nil, err
	}
	if s.Limit.Offset != nil {
		if n.offset, err = limitValue(s.Limit.Offset); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// limitValue is the value of a LIMIT argument: a non-negative integer.
func limitValue(x ast.Expr) (int, error) {
	if v, ok := x.(*ast.SQLVal); ok && v.Type == ast.IntVal {
		if n, err := strconv.Atoi(string(v.Val)); err == nil && n >= 0 {
			return n, nil
		}
	}
	return 0, ErrSyntax.New("SHOW ERRORS LIMIT takes non-negative integers, not %s", ast.String(x))
}

// Resolved implements sql.Node.
func (n *showErrors) Resolved() bool { return true }

// String implements sql.Node.
func (n *showErrors) String() string {
	if n.count {
		return "SHOW COUNT(*) ERRORS"
	}
	return "SHOW ERRORS"
}

// Schema implements sql.Node.
func (n *showErrors) Schema() sql.Schema {
	if n.count {
		return errorCountSchema
	}
	return showErrorsSchema
}

// Children implements sql.Node.
func (n *showErrors) Children() []sql.Node { return nil }

// WithChildren implements sql.Node.
func (n *showErrors) WithChildren(children ...sql.Node) (sql.Node, error) {
	if len(children) != 0 {
		return nil, sql.ErrInvalidChildrenNumber.New(n, len(children), 0)
	}
	return n, nil
}

// IsReadOnly implements sql.Node.
func (n *showErrors) IsReadOnly() bool { return true }

// WithResolvedChildren implements the parser's Injectable.
func (n *showErrors) WithResolvedChildren(children []any) (any, error) {
	if len(children) != 0 {
		return nil, sql.ErrInvalidChildrenNumber.New(n, len(children), 0)
	}
	return n, nil
}

// RowIter implements sql.ExecSourceRel.
func (n *showErrors) RowIter(ctx *sql.Context, _ sql.Row) (sql.RowIter, error) {
	// Put the diagnostics back (oldest first) without counting them as
	// this statement's warnings.
	ctx.ClearWarnings()
	for i := len(n.warnings) - 1; i >= 0; i-- {
		ctx.Session.Warn(n.warnings[i])
	}
	ctx.ClearWarningCount()
	var rows []sql.Row
	for _, w := range n.warnings {
		if strings.EqualFold(w.Level, "Error") {
			rows = append(rows, sql.Row{w.Level, int32(w.Code), w.Message})
		}
	}
	if n.count {
		return sql.RowsToRowIter(sql.Row{int64(len(rows))}), nil
	}
	rows = rows[min(n.offset, len(rows)):]
	if n.limit >= 0 {
		rows = rows[:min(n.limit, len(rows))]
	}
	return sql.RowsToRowIter(rows...), nil
}
