package engine

import (
	"context"
	"fmt"

	"github.com/dolthub/go-mysql-server/sql"
)

// QueryInternal runs query as the locked superuser dp_internal in a fresh
// session whose current database is db ("" for none), and returns the
// result schema and every row.
//
// The session is new for each call and never shares state with the
// caller's: it is the safe way for dpsql statements to read tables the
// analyst running them may not read. (Switching the client of the caller's
// session, as sql.Context.NewCtxWithClient does, would raise the caller's
// own privileges.) Cancelling ctx cancels the query. It is safe to call from
// inside a node's RowIter; an autocommit statement is committed when its
// rows have been drained.
func (e *Engine) QueryInternal(ctx context.Context, db, query string) (sql.Schema, []sql.Row, error) {
	id := e.internalID.Add(1)
	base := sql.NewBaseSessionWithClientServer("", sql.Client{User: InternalUser, Address: localhost}, id)
	ictx := sql.NewContext(ctx, sql.WithSession(e.store.NewSession(base)))
	defer e.sqle.CloseSession(id)
	if db != "" {
		ictx.SetCurrentDatabase(db)
	}
	sch, iter, _, err := e.sqle.Query(ictx, query)
	if err != nil {
		return nil, nil, fmt.Errorf("internal query %s: %w", abbrev(query), err)
	}
	rows, err := sql.RowIterToRows(ictx, iter)
	if err != nil {
		return nil, nil, fmt.Errorf("internal query %s: %w", abbrev(query), err)
	}
	return sch, rows, nil
}

// abbrev shortens a query for an error message.
func abbrev(q string) string {
	const max = 80
	if len(q) <= max {
		return fmt.Sprintf("%q", q)
	}
	return fmt.Sprintf("%q...", q[:max])
}
