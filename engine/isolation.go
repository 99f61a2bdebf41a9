package engine

import (
	"fmt"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/analyzer"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/expression/function"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/vitess/go/mysql"
)

// Isolation: what a user who may not read a table can learn about it.
//
// go-mysql-server checks privileges when a statement names a table, and
// hides databases in which the user holds no privilege at all. It does not
// hide the tables of a database in which the user holds some privilege:
// information_schema.tables, .columns, .statistics and the like unwrap its
// privilege-checking database and list every table of it. dpsql closes that
// gap in the storage itself: the databases the provider serves hide, per
// session, every table and view the session's user holds no privilege on
// (the same test GMS applies when a statement names a table), so every path
// that enumerates tables (SHOW TABLES, SHOW TABLE STATUS, information_schema,
// star expansion, view resolution, ...) agrees. Superusers, root and the
// internal account dp_internal, see everything.
//
// The file function LOAD_FILE, which GMS evaluates without any privilege
// check, needs the FILE privilege, as in MySQL: otherwise any user could
// read files an owner exported with SELECT ... INTO OUTFILE. An analyzer
// rule (checkPrivilegedNodes) adds the other checks GMS lacks: FILE for
// INTO OUTFILE, SUPER for SET GLOBAL. SHOW PROCESSLIST and
// information_schema.processlist show a user without PROCESS their own
// threads only (processlist.go).

// tableFilter returns, for the session of ctx and database db, a function
// reporting whether a table or view of db is visible to the session.
type tableFilter func(ctx *sql.Context, db string) func(table string) bool

// visibleTables is the engine's tableFilter: a table is visible when the
// session's user holds a global privilege, a privilege on the database, or
// one on the table.
func (e *Engine) visibleTables(ctx *sql.Context, db string) func(table string) bool {
	ah := e.sqle.Analyzer.Catalog.AuthHandler
	st := ah.NewQueryState(ctx)
	return func(table string) bool {
		return ah.CheckTable(ctx, st, db, "", table) == nil
	}
}

// isolate wraps db so that it hides the tables the session may not see.
// Only catalog databases are wrapped: they are the server's storage (GMS's
// memory databases back unit tests that do not test isolation).
func isolate(db sql.Database, visible tableFilter, wrap func(sql.Table) sql.Table) sql.Database {
	if visible == nil {
		return db
	}
	if cdb, ok := db.(catalogDB); ok {
		return isolatedDB{catalogDB: cdb, visible: visible, wrap: wrap}
	}
	if hdb, ok := db.(hostDB); ok {
		return isolateHost(hdb, visible) // extension.go
	}
	return db
}

var (
	_ sql.Database                = isolatedDB{}
	_ sql.TableCreator            = isolatedDB{}
	_ sql.TableDropper            = isolatedDB{}
	_ sql.TableRenamer            = isolatedDB{}
	_ sql.ViewDatabase            = isolatedDB{}
	_ sql.TriggerDatabase         = isolatedDB{}
	_ sql.StoredProcedureDatabase = isolatedDB{}
)

// isolatedDB is a catalog database seen through a session: tables and views
// the session may not see do not exist. Everything else is the catalog
// database's.
type isolatedDB struct {
	catalogDB
	visible tableFilter
	// wrap, if set, wraps the tables served (FEDERATED tables read
	// through to their source, federated.go).
	wrap func(sql.Table) sql.Table
}

// GetTableInsensitive implements sql.Database: a hidden table is missing.
func (d isolatedDB) GetTableInsensitive(ctx *sql.Context, name string) (sql.Table, bool, error) {
	if !d.visible(ctx, d.Name())(name) {
		return nil, false, nil
	}
	t, ok, err := d.catalogDB.GetTableInsensitive(ctx, name)
	if ok && err == nil && d.wrap != nil {
		t = d.wrap(t)
	}
	return t, ok, err
}

// GetTableNames implements sql.Database: the visible tables.
func (d isolatedDB) GetTableNames(ctx *sql.Context) ([]string, error) {
	names, err := d.catalogDB.GetTableNames(ctx)
	if err != nil {
		return nil, err
	}
	visible := d.visible(ctx, d.Name())
	out := names[:0:0]
	for _, n := range names {
		if visible(n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// GetViewDefinition implements sql.ViewDatabase: a hidden view is missing.
// (A view's text may quote values of the tables it reads.)
func (d isolatedDB) GetViewDefinition(ctx *sql.Context, name string) (sql.ViewDefinition, bool, error) {
	if !d.visible(ctx, d.Name())(name) {
		return sql.ViewDefinition{}, false, nil
	}
	return d.catalogDB.GetViewDefinition(ctx, name)
}

// AllViews implements sql.ViewDatabase: the visible views.
func (d isolatedDB) AllViews(ctx *sql.Context) ([]sql.ViewDefinition, error) {
	views, err := d.catalogDB.AllViews(ctx)
	if err != nil {
		return nil, err
	}
	visible := d.visible(ctx, d.Name())
	out := views[:0:0]
	for _, v := range views {
		if visible(v.Name) {
			out = append(out, v)
		}
	}
	return out, nil
}

// isolate makes pro hide tables per session and serve the guarded
// versions of the file functions, and adds the privilege checks GMS lacks
// to the analyzer. It runs once, after the GMS engine is built.
func (e *Engine) isolate(pro *provider) {
	cat := e.sqle.Analyzer.Catalog
	if _, done := cat.InfoSchema.(infoSchemaDB); !done {
		cat.InfoSchema = infoSchemaDB{Database: cat.InfoSchema, e: e}
	}
	for _, b := range e.sqle.Analyzer.Batches {
		if b.Desc == "once-before" {
			b.Rules = append([]analyzer.Rule{
				{Id: ruleIsolationPrivileges, Apply: e.checkPrivilegedNodes},
				{Id: ruleClientCompat, Apply: e.compatNodes},
			}, b.Rules...)
		}
	}
	pro.visible = e.visibleTables
	pro.wrapTable = e.federatedTables
	pro.functions = map[string]sql.Function{
		"load_file": sql.Function1{Name: "load_file", Fn: func(arg sql.Expression) sql.Expression {
			return newGuardedLoadFile(e, arg)
		}},
	}
}

// ruleIsolationPrivileges is the analyzer rule of checkPrivilegedNodes.
const ruleIsolationPrivileges analyzer.RuleId = 10100

// checkPrivilegedNodes refuses what GMS v0.20.0 runs without the privilege
// MySQL requires: writing a server file (SELECT ... INTO OUTFILE or
// DUMPFILE) without FILE, and setting a global or persisted system
// variable without SUPER.
func (e *Engine) checkPrivilegedNodes(ctx *sql.Context, _ *analyzer.Analyzer, n sql.Node, _ *plan.Scope, _ analyzer.RuleSelector, _ *sql.QueryFlags) (sql.Node, transform.TreeIdentity, error) {
	return n, transform.SameTree, e.checkNode(ctx, n)
}

// checkNode checks n, its children and the subqueries of its expressions.
func (e *Engine) checkNode(ctx *sql.Context, n sql.Node) error {
	var err error
	transform.Inspect(n, func(n sql.Node) bool {
		if err == nil {
			err = e.checkOne(ctx, n)
		}
		if x, ok := n.(sql.Expressioner); ok && err == nil {
			for _, ex := range x.Expressions() {
				sql.Inspect(ex, func(ex sql.Expression) bool {
					if sq, ok := ex.(*plan.Subquery); ok && err == nil {
						err = e.checkNode(ctx, sq.Query)
					}
					return err == nil
				})
			}
		}
		return err == nil
	})
	return err
}

// checkOne checks one node, not its children.
func (e *Engine) checkOne(ctx *sql.Context, n sql.Node) error {
	switch n := n.(type) {
	case *plan.Into:
		if (n.Outfile != "" || n.Dumpfile != "") && !e.hasFilePrivilege(ctx) {
			return denied(ctx, "FILE", "SELECT ... INTO OUTFILE")
		}
	case *plan.Set:
		for _, x := range n.Exprs {
			sf, ok := x.(*expression.SetField)
			if !ok {
				continue
			}
			sv, ok := sf.LeftChild.(*expression.SystemVar)
			if !ok {
				continue
			}
			if ms, ok := sv.Scope.(*sql.MysqlScope); ok && ms.Type == sql.SystemVariableScope_Session {
				continue
			}
			if !e.hasGlobalPrivilege(ctx, sql.PrivilegeType_Super) {
				return denied(ctx, "SUPER", "setting a global system variable")
			}
		}
	}
	return nil
}

// denied is MySQL's ER_SPECIFIED_ACCESS_DENIED_ERROR.
func denied(ctx *sql.Context, priv, what string) error {
	c := ctx.Session.Client()
	return mysql.NewSQLError(mysql.ERSpecifiedAccessDenied, mysql.SSAccessDeniedError,
		"Access denied for user '%s'@'%s'; you need the %s privilege for %s", c.User, c.Address, priv, what)
}

// hasGlobalPrivilege reports whether the session's user holds priv
// globally.
func (e *Engine) hasGlobalPrivilege(ctx *sql.Context, priv sql.PrivilegeType) bool {
	mdb := e.sqle.Analyzer.Catalog.MySQLDb
	return mdb.UserHasPrivileges(ctx, sql.NewPrivilegedOperation(sql.PrivilegeCheckSubject{}, priv))
}

// hasFilePrivilege reports whether the session's user holds the global FILE
// privilege.
func (e *Engine) hasFilePrivilege(ctx *sql.Context) bool {
	return e.hasGlobalPrivilege(ctx, sql.PrivilegeType_File)
}

var _ sql.FunctionExpression = (*guardedLoadFile)(nil)

// guardedLoadFile is LOAD_FILE that first checks the FILE privilege.
type guardedLoadFile struct {
	*function.LoadFile
	e   *Engine
	arg sql.Expression
}

func newGuardedLoadFile(e *Engine, arg sql.Expression) sql.Expression {
	return &guardedLoadFile{LoadFile: function.NewLoadFile(arg).(*function.LoadFile), e: e, arg: arg}
}

// Eval implements sql.Expression.
func (g *guardedLoadFile) Eval(ctx *sql.Context, row sql.Row) (any, error) {
	if !g.e.hasFilePrivilege(ctx) {
		return nil, denied(ctx, "FILE", "LOAD_FILE")
	}
	return g.LoadFile.Eval(ctx, row)
}

// WithChildren implements sql.Expression.
func (g *guardedLoadFile) WithChildren(children ...sql.Expression) (sql.Expression, error) {
	if len(children) != 1 {
		return nil, sql.ErrInvalidChildrenNumber.New(g, len(children), 1)
	}
	return newGuardedLoadFile(g.e, children[0]), nil
}

// String implements sql.Expression.
func (g *guardedLoadFile) String() string { return fmt.Sprintf("load_file(%s)", g.arg) }
