package engine

import (
	"context"
	"strconv"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/dpsql/dpsql/budget"
	"github.com/dpsql/dpsql/catalog"
	"github.com/dpsql/dpsql/engine/dpparse"
)

// This file is the plumbing shared by the differential-privacy statements:
// the durable state they use, resolving the table a statement names, and
// who the session's user is. Access rules live in access.go, domains in
// domains.go, budgets in budget_stmts.go, synthesis in synthesize.go.

// dpState is what the DP statements need beyond SQL.
type dpState struct {
	// cat is the durable catalog (metadata buckets, table IDs, raw scans).
	cat *catalog.Store
	// ledger is the privacy-budget ledger, in the catalog's bbolt file.
	ledger *budget.Ledger
}

// openDP opens the ledger when the storage is the durable catalog.
func (e *Engine) openDP() error {
	e.allowDPProcedures()
	cs, ok := catalogOf(e.store)
	if !ok {
		return nil
	}
	l, err := budget.OpenLedger(cs.DB())
	if err != nil {
		return ErrDataDir.Wrap(err, "opening the privacy ledger")
	}
	e.dp = dpState{cat: cs.Store, ledger: l}
	return e.watchAccounts(context.Background())
}

// needCatalog fails unless the engine runs on the durable catalog.
func (e *Engine) needCatalog(what string) error {
	if e.dp.cat == nil {
		return ErrNeedsCatalog.New("%s needs the durable catalog storage", what)
	}
	return nil
}

// tableRef is a resolved table: its database, name and stable ID.
type tableRef struct {
	DB, Name string
	// ID is the catalog's stable table ID; it keys the ledger, domains and
	// grants, so dropping and re-creating a table under the same name never
	// inherits (or resets) its budget.
	ID uint64
	// Table is the stored table (schema, checks).
	Table sourceTable // *catalog.Table, or a host table (extension.go)
}

// LedgerKey is the table's key in the privacy ledger.
func (t tableRef) LedgerKey() string { return strconv.FormatUint(t.ID, 10) }

// String is the table's quoted, database-qualified name.
func (t tableRef) String() string { return quoteIdent(t.DB) + "." + quoteIdent(t.Name) }

// resolveTable finds the table tn names (its database defaults to the
// session's current one). A missing table and one the caller may not learn
// about must give the same error: callers check access with the helpers of
// access.go, which return ErrNoSuchTable too.
func (e *Engine) resolveTable(ctx *sql.Context, tn dpparse.TableName) (tableRef, error) {
	db := tn.DB
	if db == "" {
		db = ctx.GetCurrentDatabase()
	}
	if db == "" {
		return tableRef{}, ErrNoSuchTable.New("no database selected for table %s: qualify it as db.table", quoteIdent(tn.Name))
	}
	t, ok, err := e.dp.cat.Table(ctx, db, tn.Name)
	if err != nil {
		return tableRef{}, ErrInternal.Wrap(err, "looking up %s.%s", quoteIdent(db), quoteIdent(tn.Name))
	}
	if !ok {
		if ref, ok, err := e.hostTableRef(ctx, db, tn.Name); ok || err != nil {
			return ref, err // extension.go
		}
		return tableRef{}, noSuchTable(db, tn.Name)
	}
	return tableRef{DB: db, Name: t.Name(), ID: t.ID(), Table: t}, nil
}

// role is what a statement needs its user to be on the table it names.
type role int

const (
	// roleSynthesizer: the table's owner or a SYNTHESIZE grantee.
	roleSynthesizer role = iota
	// roleOwner: the table's owner.
	roleOwner
)

// openTable is the prologue of every statement that names a raw table: the
// engine must run on the catalog, the table must resolve, and the session's
// user must hold need on it. what names the statement in errors.
func (e *Engine) openTable(ctx *sql.Context, what string, tn dpparse.TableName, need role) (tableRef, error) {
	if err := e.needCatalog(what); err != nil {
		return tableRef{}, err
	}
	t, err := e.resolveTable(ctx, tn)
	if err != nil {
		return tableRef{}, err
	}
	if need == roleOwner {
		err = e.requireOwner(ctx, t)
	} else {
		err = e.requireSynthesize(ctx, t)
	}
	if err != nil {
		return tableRef{}, err
	}
	return t, nil
}

// noSuchTable is the one error for a table that is missing or hidden.
func noSuchTable(db, name string) error {
	return ErrNoSuchTable.New("Table '%s.%s' doesn't exist", db, name)
}

// sessionUser returns the user and host of ctx's session.
func sessionUser(ctx *sql.Context) (user, host string) {
	c := ctx.Session.Client()
	return c.User, c.Address
}

// quoteIdent backquotes a SQL identifier.
func quoteIdent(s string) string {
	return "`" + strings.ReplaceAll(s, "`", "``") + "`"
}
