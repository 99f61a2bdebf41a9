package engine

import (
	"context"
	"strings"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/analyzer"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/rowexec"
	"github.com/dolthub/go-mysql-server/sql/transform"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

// Compatibility with the tools MySQL users connect with (BI tools,
// Workbench, mysqldump): what go-mysql-server v0.20.0 reports wrongly or
// not at all.
//
//   - One identity: the handshake, VERSION(), @@version and
//     @@version_comment all say dpsql (GMS says 8.0.33 in the handshake,
//     8.0.31 in SQL and "Dolt" in the comment).
//   - SHOW STATUS's Uptime is the server's uptime (GMS leaves it at 0).
//   - SHOW DATABASES lists what information_schema.SCHEMATA lists: GMS
//     adds the mysql database to the first only. mysqldump --all-databases
//     dumps every database SHOW DATABASES names, and dpsql's mysql database
//     (go-mysql-server's read-only view of accounts and grants) can be
//     neither dumped (it lacks MySQL's log tables, which mysqldump reads
//     first) nor reloaded (its tables cannot be dropped or written). It
//     stays readable by name: SELECT ... FROM mysql.user, USE mysql.
//   - SHOW ERRORS, and errors in SHOW WARNINGS (errors.go of GMS keeps no
//     diagnostics for a failed statement; the connection handler records
//     them, see recordErrors).
//   - Databases have (no) events, so SHOW EVENTS, mysqldump --events and
//     information_schema.EVENTS work (GMS fails them for databases that
//     do not store events).
//   - SHOW TABLE STATUS and information_schema.TABLES give a table's real
//     creation time and its comment (tables.go of GMS: 2000-01-01 and no
//     comment in SHOW TABLE STATUS).
//   - SHOW PROCESSLIST and information_schema.processlist show every user
//     their own threads, with a one-line State (processlist.go).

// MySQLVersion is the MySQL release whose protocol and SQL dpsql speaks.
const MySQLVersion = "8.0.36"

// ServerVersion is the version string dpsql reports everywhere: in the
// handshake, VERSION() and @@version. Clients parse the leading MySQL
// version from it.
const ServerVersion = MySQLVersion + "-dpsql"

// versionComment is @@version_comment: the product and its release.
func versionComment(release string) string {
	if release == "" {
		release = "dev"
	}
	return "dpsql " + release
}

// ruleClientCompat is the analyzer rule of compatNodes.
const ruleClientCompat analyzer.RuleId = 10101

// compatNodes replaces the SHOW statements whose GMS implementation
// clients trip over with dpsql's (see the list above). It runs in the
// once-before batch, after checkPrivilegedNodes.
func (e *Engine) compatNodes(ctx *sql.Context, _ *analyzer.Analyzer, n sql.Node, _ *plan.Scope, _ analyzer.RuleSelector, _ *sql.QueryFlags) (sql.Node, transform.TreeIdentity, error) {
	return transform.Node(n, func(n sql.Node) (sql.Node, transform.TreeIdentity, error) {
		switch n := n.(type) {
		case *plan.ShowStatus:
			e.setUptime()
		case *plan.ShowDatabases:
			return &patchedShow{inner: n, patch: withoutMySQLDB}, transform.NewTree, nil
		case *plan.ShowTableStatus:
			return &patchedShow{inner: n, patch: e.tableStatusPatch(n.Database().Name())}, transform.NewTree, nil
		case *plan.ShowProcessList:
			return &showProcessList{e: e}, transform.NewTree, nil
		case *plan.ShowGrants:
			return e.showGrants(ctx, n), transform.NewTree, nil
		case *plan.ShowCreateTable:
			if !n.IsView {
				return &patchedShow{inner: n, patch: e.showCreateFederated(n)}, transform.NewTree, nil
			}
		}
		return n, transform.SameTree, nil
	})
}

// setUptime sets the global status variable Uptime (and
// Uptime_since_flush_status: FLUSH STATUS is not supported) to the seconds
// since the engine started. Status variables are process-wide in GMS.
func (e *Engine) setUptime() {
	up := uint64(time.Since(e.started) / time.Second)
	for _, name := range []string{"Uptime", "Uptime_since_flush_status"} {
		_ = sql.StatusVariables.SetGlobal(name, up)
	}
}

// withoutMySQLDB drops the mysql database from SHOW DATABASES.
func withoutMySQLDB(_ *sql.Context, rows []sql.Row) ([]sql.Row, error) {
	out := rows[:0]
	for _, r := range rows {
		if name, _ := r[0].(string); !strings.EqualFold(name, "mysql") {
			out = append(out, r)
		}
	}
	return out, nil
}

var _ sql.ExecSourceRel = (*patchedShow)(nil)

// patchedShow runs a GMS SHOW node and rewrites its rows.
type patchedShow struct {
	inner sql.Node
	patch func(ctx *sql.Context, rows []sql.Row) ([]sql.Row, error)
}

// Resolved implements sql.Node.
func (p *patchedShow) Resolved() bool { return true }

// String implements sql.Node.
func (p *patchedShow) String() string { return p.inner.String() }

// Schema implements sql.Node.
func (p *patchedShow) Schema() sql.Schema { return p.inner.Schema() }

// Children implements sql.Node.
func (p *patchedShow) Children() []sql.Node { return nil }

// WithChildren implements sql.Node.
func (p *patchedShow) WithChildren(children ...sql.Node) (sql.Node, error) {
	if len(children) != 0 {
		return nil, sql.ErrInvalidChildrenNumber.New(p, len(children), 0)
	}
	return p, nil
}

// IsReadOnly implements sql.Node.
func (p *patchedShow) IsReadOnly() bool { return true }

// RowIter implements sql.ExecSourceRel.
func (p *patchedShow) RowIter(ctx *sql.Context, row sql.Row) (sql.RowIter, error) {
	iter, err := rowexec.DefaultBuilder.Build(ctx, p.inner, row)
	if err != nil {
		return nil, err
	}
	rows, err := sql.RowIterToRows(ctx, iter)
	if err != nil {
		return nil, err
	}
	if rows, err = p.patch(ctx, rows); err != nil {
		return nil, err
	}
	return sql.RowsToRowIter(rows...), nil
}

// Columns of SHOW TABLE STATUS and of information_schema.TABLES.
const (
	statusColName       = 0
	statusColEngine     = 1
	statusColCreateTime = 11
	statusColComment    = 17

	tablesColSchema     = 1
	tablesColName       = 2
	tablesColType       = 3
	tablesColEngine     = 4
	tablesColCreateTime = 14
	tablesColUpdateTime = 15
)

// tableStatusPatch fills SHOW TABLE STATUS's Create_time (NULL when not
// recorded) and Comment (the table's comment, empty if none, as in MySQL) for
// the tables of db.
func (e *Engine) tableStatusPatch(db string) func(*sql.Context, []sql.Row) ([]sql.Row, error) {
	return func(ctx *sql.Context, rows []sql.Row) ([]sql.Row, error) {
		for _, r := range rows {
			name, _ := r[statusColName].(string)
			created, comment, err := e.tableInfo(ctx, db, name)
			if err != nil {
				return nil, err
			}
			r[statusColCreateTime], r[statusColComment] = created, comment
			if e.isFederated(ctx, db, name) {
				r[statusColEngine] = federatedEngine
			}
		}
		return rows, nil
	}
}

// tableInfo returns the creation time of table db.name (nil when the
// catalog has not recorded it, or the engine runs without the catalog)
// and its comment.
func (e *Engine) tableInfo(ctx *sql.Context, db, name string) (created any, comment string, err error) {
	if e.dp.cat == nil {
		return nil, "", nil
	}
	t, ok, err := e.dp.cat.Table(ctx, db, name)
	if err != nil || !ok {
		return nil, "", err
	}
	at, known, err := t.CreateTime()
	if err != nil {
		return nil, "", err
	}
	if known {
		created = at
	}
	return created, t.Comment(), nil
}

// tablesReader wraps the reader of information_schema.TABLES: a base
// table's CREATE_TIME is its recorded creation time (NULL if unknown), and
// UPDATE_TIME is NULL, where GMS puts 2000-01-01 in both.
func (e *Engine) tablesReader(inner func(*sql.Context, sql.Catalog) (sql.RowIter, error)) func(*sql.Context, sql.Catalog) (sql.RowIter, error) {
	return func(ctx *sql.Context, cat sql.Catalog) (sql.RowIter, error) {
		iter, err := inner(ctx, cat)
		if err != nil {
			return nil, err
		}
		rows, err := sql.RowIterToRows(ctx, iter)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			r[tablesColCreateTime], r[tablesColUpdateTime] = nil, nil
			if typ, _ := r[tablesColType].(string); typ != "BASE TABLE" {
				continue
			}
			db, _ := r[tablesColSchema].(string)
			name, _ := r[tablesColName].(string)
			created, _, err := e.tableInfo(ctx, db, name)
			if err != nil {
				return nil, err
			}
			r[tablesColCreateTime] = created
			if e.isFederated(ctx, db, name) {
				r[tablesColEngine] = federatedEngine
			}
		}
		return sql.RowsToRowIter(rows...), nil
	}
}

// nullableCreateTime returns a copy of information_schema.TABLES's schema
// whose CREATE_TIME may be NULL, as in MySQL.
func nullableCreateTime(sch sql.Schema) sql.Schema {
	out := make(sql.Schema, len(sch))
	for i, c := range sch {
		if i == tablesColCreateTime {
			c = c.Copy()
			c.Nullable = true
		}
		out[i] = c
	}
	return out
}

// clientStatement returns the dpsql statement serving a statement of the
// MySQL grammar that GMS gets wrong for clients (see the list above), or
// stmt itself.
func (e *Engine) clientStatement(ctx context.Context, stmt ast.Statement) ast.Statement {
	sctx, ok := ctx.(*sql.Context)
	if !ok || sctx.Session == nil {
		return stmt
	}
	switch s := stmt.(type) {
	case *ast.ShowGrants:
		// GMS requires SELECT on mysql.* for every SHOW GRANTS. As in
		// MySQL, a user may always see their own grants; other accounts'
		// still need it.
		if e.ownAccount(sctx, s) {
			s.Auth = authAnyone
		}
	case *ast.Show:
		if strings.EqualFold(s.Type, "errors") {
			n, err := newShowErrors(sctx, s)
			if err != nil {
				return failed(err)
			}
			return ast.InjectedStatement{Statement: n, Auth: authAnyone}
		}
		if strings.EqualFold(s.Type, "events") && s.ShowTablesOpt != nil && s.ShowTablesOpt.DbName != "" {
			// GMS ignores FROM db and lists the current database's
			// events. No database has any (catalogDB), so the answer is
			// an empty list once the database is known to exist for the
			// session.
			db, err := e.sqle.Analyzer.Catalog.Database(sctx, s.ShowTablesOpt.DbName)
			if err != nil {
				return failed(err)
			}
			return ast.InjectedStatement{Statement: noEvents{plan.NewShowEvents(db)}, Auth: s.Auth}
		}
	}
	return stmt
}

// noEvents is SHOW EVENTS FROM db: db has no events.
type noEvents struct{ n *plan.ShowEvents }

// WithResolvedChildren implements the parser's Injectable.
func (n noEvents) WithResolvedChildren([]any) (any, error) { return n.n, nil }

// ownAccount reports whether SHOW GRANTS s is about the session's own
// account: no FOR, FOR CURRENT_USER[()], or FOR the account itself
// (user@'%' when the host is left out).
func (e *Engine) ownAccount(ctx *sql.Context, s *ast.ShowGrants) bool {
	if s.For == nil || s.CurrentUser {
		return true
	}
	user, host := e.sessionAccount(ctx)
	h := s.For.Host
	if s.For.AnyHost || h == "" {
		h = "%"
	}
	return s.For.Name == user && strings.EqualFold(h, host)
}

// showGrants is SHOW GRANTS n, for the account as CURRENT_USER() names it
// (GMS names the client's address instead of the account's host pattern),
// followed by the account's SYNTHESIZE grants, which GMS does not know.
func (e *Engine) showGrants(ctx *sql.Context, n *plan.ShowGrants) sql.Node {
	nn := *n
	var user, host string
	if n.For == nil || n.CurrentUser {
		user, host = e.sessionAccount(ctx)
	} else {
		user, host = n.For.Name, n.For.Host
		if n.For.AnyHost || host == "" {
			host = "%"
		}
		mdb := e.sqle.Analyzer.Catalog.MySQLDb
		rd := mdb.Reader()
		if u := mdb.GetUser(rd, user, host, false); u != nil {
			user, host = u.User, u.Host
		}
		rd.Close()
	}
	nn.For, nn.CurrentUser = &plan.UserName{Name: user, Host: host}, false
	return &patchedShow{inner: &nn, patch: func(ctx *sql.Context, rows []sql.Row) ([]sql.Row, error) {
		lines, err := e.synthesizeGrantLines(ctx, user, host)
		if err != nil {
			return nil, err
		}
		for _, l := range lines {
			rows = append(rows, sql.Row{l})
		}
		return rows, nil
	}}
}
