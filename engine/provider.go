package engine

import (
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
)

var (
	_ sql.MutableDatabaseProvider         = (*provider)(nil)
	_ sql.CollatedDatabaseProvider        = (*provider)(nil)
	_ sql.ExternalStoredProcedureProvider = (*provider)(nil)
	_ sql.FunctionProvider                = (*provider)(nil)
	_ sql.TableFunctionProvider           = (*provider)(nil)
)

// provider serves the storage's databases and adds dpsql's stored
// procedures, the CALL twins of dpsql statements. Once isolated
// (Engine.isolate, isolation.go), its databases hide the tables a session
// may not see and it serves privilege-checked file functions.
type provider struct {
	sql.MutableDatabaseProvider
	procs sql.ExternalStoredProcedureRegistry

	visible   tableFilter
	wrapTable func(sql.Table) sql.Table
	functions map[string]sql.Function
	// tableFunctions are dpsql's table functions (dp_marginal), by
	// lower-case name.
	tableFunctions map[string]sql.TableFunction
	// dropped, if set, runs after a database is dropped: the engine deletes
	// what it keeps about it elsewhere (SYNTHESIZE grants on db.*).
	dropped func(ctx *sql.Context, name string) error
}

// newProvider wraps inner and registers procs.
func newProvider(inner sql.MutableDatabaseProvider, procs []sql.ExternalStoredProcedureDetails) *provider {
	p := &provider{MutableDatabaseProvider: inner, procs: sql.NewExternalStoredProcedureRegistry()}
	for _, d := range procs {
		p.procs.Register(d)
	}
	return p
}

// Database implements sql.DatabaseProvider.
func (p *provider) Database(ctx *sql.Context, name string) (sql.Database, error) {
	db, err := p.MutableDatabaseProvider.Database(ctx, name)
	if err != nil {
		return nil, err
	}
	return isolate(db, p.visible, p.wrapTable), nil
}

// AllDatabases implements sql.DatabaseProvider.
func (p *provider) AllDatabases(ctx *sql.Context) []sql.Database {
	dbs := p.MutableDatabaseProvider.AllDatabases(ctx)
	for i, db := range dbs {
		dbs[i] = isolate(db, p.visible, p.wrapTable)
	}
	return dbs
}

// DropDatabase implements sql.MutableDatabaseProvider.
func (p *provider) DropDatabase(ctx *sql.Context, name string) error {
	if err := p.MutableDatabaseProvider.DropDatabase(ctx, name); err != nil {
		return err
	}
	if p.dropped != nil {
		return p.dropped(ctx, name)
	}
	return nil
}

// Function implements sql.FunctionProvider; it takes precedence over GMS's
// built-in functions.
func (p *provider) Function(_ *sql.Context, name string) (sql.Function, bool) {
	f, ok := p.functions[name]
	return f, ok
}

// CreateCollatedDatabase implements sql.CollatedDatabaseProvider. It keeps
// the storage's collation support if it has one.
func (p *provider) CreateCollatedDatabase(ctx *sql.Context, name string, collation sql.CollationID) error {
	if c, ok := p.MutableDatabaseProvider.(sql.CollatedDatabaseProvider); ok {
		return c.CreateCollatedDatabase(ctx, name, collation)
	}
	return p.MutableDatabaseProvider.CreateDatabase(ctx, name)
}

// ExternalStoredProcedure implements sql.ExternalStoredProcedureProvider.
func (p *provider) ExternalStoredProcedure(ctx *sql.Context, name string, numOfParams int) (*sql.ExternalStoredProcedureDetails, error) {
	d, err := p.procs.LookupByNameAndParamCount(name, numOfParams)
	if d != nil || err != nil {
		return d, err
	}
	if inner, ok := p.MutableDatabaseProvider.(sql.ExternalStoredProcedureProvider); ok {
		return inner.ExternalStoredProcedure(ctx, name, numOfParams)
	}
	return nil, nil
}

// ExternalStoredProcedures implements sql.ExternalStoredProcedureProvider.
func (p *provider) ExternalStoredProcedures(ctx *sql.Context, name string) ([]sql.ExternalStoredProcedureDetails, error) {
	ds, err := p.procs.LookupByName(name)
	if len(ds) > 0 || err != nil {
		return ds, err
	}
	if inner, ok := p.MutableDatabaseProvider.(sql.ExternalStoredProcedureProvider); ok {
		return inner.ExternalStoredProcedures(ctx, name)
	}
	return nil, nil
}

// TableFunction implements sql.TableFunctionProvider.
//
// go-mysql-server requires a current database to build a table function
// call (planbuilder buildTableFunc: TableFunction, then currentDb, which
// fails with "no database selected", then NewInstance), although
// dp_marginal names its table itself. Without one, the session's current
// database is information_schema (which exists for every user) from here
// until the call's NewInstance, which restores it (noDatabaseCall); the
// rest of the statement is built without a current database.
func (p *provider) TableFunction(ctx *sql.Context, name string) (sql.TableFunction, bool) {
	f, ok := p.tableFunctions[strings.ToLower(name)]
	if ok && ctx != nil && ctx.Session != nil && ctx.GetCurrentDatabase() == "" {
		ctx.SetCurrentDatabase(sql.InformationSchemaDatabaseName)
		return noDatabaseCall{f}, true
	}
	return f, ok
}

// noDatabaseCall is a table function called in a session without a
// current database: see provider.TableFunction.
type noDatabaseCall struct{ sql.TableFunction }

// NewInstance implements sql.TableFunction.
func (f noDatabaseCall) NewInstance(ctx *sql.Context, db sql.Database, args []sql.Expression) (sql.Node, error) {
	if ctx.GetCurrentDatabase() == sql.InformationSchemaDatabaseName {
		ctx.SetCurrentDatabase("")
	}
	return f.TableFunction.NewInstance(ctx, db, args)
}

// WithTableFunctions implements sql.TableFunctionProvider: a provider
// serving only fns as table functions.
func (p *provider) WithTableFunctions(fns ...sql.TableFunction) (sql.TableFunctionProvider, error) {
	c := *p
	c.tableFunctions = make(map[string]sql.TableFunction, len(fns))
	for _, f := range fns {
		c.tableFunctions[strings.ToLower(f.Name())] = f
	}
	return &c, nil
}
