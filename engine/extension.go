package engine

import (
	"context"
	"encoding/json"
	"errors"
	"hash/fnv"
	"io"
	"strings"
	"time"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/dpsql/dpsql/catalog"
)

// dpsql as an extension of a go-mysql-server application (package dpsql,
// Install; docs/embedding.md).
//
// The application keeps its own sql.DatabaseProvider (its "host"
// databases, e.g. go-mysql-server's memory databases) and dpsql adds its
// statements, ledger, synthesis and model answers over it. The engine is
// the server's, over a composite provider: the host's databases, served
// as they are but isolated per session as the catalog's are (a user sees
// only the tables they hold a privilege on), and the catalog in the
// metadata directory, which holds users and grants, budgets and the
// ledger, declared domains, SYNTHESIZE grants and the synthetic tables
// (new databases are created there). A host table is a source like a
// local one: it has a public domain from its schema (ENUM, CHECK) or
// SET DOMAIN, a budget, and CREATE SYNTHETIC TABLE scans it through the
// host's sql.Table. Its stable ID, which keys its budget, domains and
// grants, is derived from its name (host tables have no ID of their own):
// a host table dropped and re-created under the same name keeps its
// budget and ledger, which errs on the side of privacy.

// sourceTable is what the engine uses of a source table: a catalog table
// (*catalog.Table) or a host table.
type sourceTable interface {
	sql.Table
	sql.CheckTable
	RowCount(ctx *sql.Context) (uint64, bool, error)
	Federated() bool
	Connection() string
}

var _ sourceTable = (*catalog.Table)(nil)

// hostIDBit marks the IDs of host tables, apart from the catalog's
// sequential IDs.
const hostIDBit = uint64(1) << 62

// NewExtension opens the catalog in cfg.DataDir as dpsql's metadata store
// and returns an engine serving host's databases beside it. Like New, it
// binds cfg.Listener (or Host:Port); the caller must call Serve or Close.
// newSession, if not nil, makes the session of every connection (and
// internal query) from its base session, as the host's databases need
// (memory.NewSession for go-mysql-server's memory databases).
func NewExtension(ctx context.Context, cfg Config, host sql.DatabaseProvider, newSession func(*sql.BaseSession) sql.Session) (*Engine, error) {
	if host == nil {
		return nil, ErrConfig.New("no host database provider")
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	dir, err := prepareDataDir(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	st, err := openStorage(dir)
	if err != nil {
		return nil, err
	}
	cs := st.(catalogStorage)
	ln := cfg.Listener
	if ln == nil {
		if ln, err = listen(cfg.addr()); err != nil {
			st.Close()
			return nil, err
		}
	}
	e, err := build(ctx, cfg, dir, extensionStorage{catalogStorage: cs, host: host, newSession: newSession})
	if err != nil {
		ln.Close()
		st.Close()
		return nil, err
	}
	if err := e.newServer(ln); err != nil {
		ln.Close()
		e.Close()
		return nil, err
	}
	return e, nil
}

// extensionStorage is the catalog with the host's databases beside it.
type extensionStorage struct {
	catalogStorage
	host       sql.DatabaseProvider
	newSession func(*sql.BaseSession) sql.Session
}

// NewSession implements Storage: the host's session, if it has one.
func (s extensionStorage) NewSession(base *sql.BaseSession) sql.Session {
	if s.newSession != nil {
		return s.newSession(base)
	}
	return base
}

// Provider implements Storage.
func (s extensionStorage) Provider() sql.MutableDatabaseProvider {
	return hostProvider{MutableDatabaseProvider: s.catalogStorage.Provider(), host: s.host}
}

// catalogOf returns the catalog under st, if any.
func catalogOf(st Storage) (catalogStorage, bool) {
	switch s := st.(type) {
	case catalogStorage:
		return s, true
	case extensionStorage:
		return s.catalogStorage, true
	}
	return catalogStorage{}, false
}

// hostProvider serves the host's databases, then the catalog's. A
// database of the host hides the catalog's of the same name. Databases
// are created and dropped in the catalog only.
type hostProvider struct {
	sql.MutableDatabaseProvider // the catalog's
	host                        sql.DatabaseProvider
}

// Database implements sql.DatabaseProvider.
func (p hostProvider) Database(ctx *sql.Context, name string) (sql.Database, error) {
	if p.host.HasDatabase(ctx, name) {
		db, err := p.host.Database(ctx, name)
		if err != nil {
			return nil, err
		}
		return hostDB{db}, nil
	}
	return p.MutableDatabaseProvider.Database(ctx, name)
}

// HasDatabase implements sql.DatabaseProvider.
func (p hostProvider) HasDatabase(ctx *sql.Context, name string) bool {
	return p.host.HasDatabase(ctx, name) || p.MutableDatabaseProvider.HasDatabase(ctx, name)
}

// AllDatabases implements sql.DatabaseProvider.
func (p hostProvider) AllDatabases(ctx *sql.Context) []sql.Database {
	var out []sql.Database
	seen := map[string]bool{}
	for _, db := range p.host.AllDatabases(ctx) {
		seen[strings.ToLower(db.Name())] = true
		out = append(out, hostDB{db})
	}
	for _, db := range p.MutableDatabaseProvider.AllDatabases(ctx) {
		if !seen[strings.ToLower(db.Name())] {
			out = append(out, db)
		}
	}
	return out
}

// CreateDatabase implements sql.MutableDatabaseProvider.
func (p hostProvider) CreateDatabase(ctx *sql.Context, name string) error {
	if p.host.HasDatabase(ctx, name) {
		return sql.ErrDatabaseExists.New(name)
	}
	return p.MutableDatabaseProvider.CreateDatabase(ctx, name)
}

// DropDatabase implements sql.MutableDatabaseProvider.
func (p hostProvider) DropDatabase(ctx *sql.Context, name string) error {
	if p.host.HasDatabase(ctx, name) {
		return ErrUnsupported.New("database %s belongs to the host application; dpsql does not drop it", quoteIdent(name))
	}
	return p.MutableDatabaseProvider.DropDatabase(ctx, name)
}

// hostDB marks a database of the host, so that isolate wraps it.
type hostDB struct{ sql.Database }

// isolatedHostDB is a host database seen through a session: the tables
// the session may not see do not exist.
type isolatedHostDB struct {
	sql.Database
	visible tableFilter
}

// GetTableInsensitive implements sql.Database: a hidden table is missing.
func (d isolatedHostDB) GetTableInsensitive(ctx *sql.Context, name string) (sql.Table, bool, error) {
	if !d.visible(ctx, d.Name())(name) {
		return nil, false, nil
	}
	return d.Database.GetTableInsensitive(ctx, name)
}

// GetTableNames implements sql.Database: the visible tables.
func (d isolatedHostDB) GetTableNames(ctx *sql.Context) ([]string, error) {
	names, err := d.Database.GetTableNames(ctx)
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

// CreateTable passes table creation on to the host database, if it can.
func (d isolatedHostDB) CreateTable(ctx *sql.Context, name string, schema sql.PrimaryKeySchema, collation sql.CollationID, comment string) error {
	tc, ok := d.Database.(sql.TableCreator)
	if !ok {
		return sql.ErrCreateTableNotSupported.New(d.Name())
	}
	return tc.CreateTable(ctx, name, schema, collation, comment)
}

// DropTable passes table drops on to the host database, if it can.
func (d isolatedHostDB) DropTable(ctx *sql.Context, name string) error {
	td, ok := d.Database.(sql.TableDropper)
	if !ok {
		return sql.ErrDropTableNotSupported.New(d.Name())
	}
	return td.DropTable(ctx, name)
}

// isolateHost wraps a host database for the session filter visible.
func isolateHost(db hostDB, visible tableFilter) sql.Database {
	if visible == nil {
		return db.Database
	}
	return isolatedHostDB{Database: db.Database, visible: visible}
}

// hostTable is a host table as a source.
type hostTable struct {
	sql.Table
}

// GetChecks implements sql.CheckTable: the host table's, if it has any.
func (t hostTable) GetChecks(ctx *sql.Context) ([]sql.CheckDefinition, error) {
	if ct, ok := t.Table.(sql.CheckTable); ok {
		return ct.GetChecks(ctx)
	}
	return nil, nil
}

// RowCount reports no count: it is only a capacity hint, and the
// engine asks for it outside the session the host's tables may need.
func (hostTable) RowCount(*sql.Context) (uint64, bool, error) { return 0, false, nil }

// Federated reports false: a host table is read through its provider.
func (hostTable) Federated() bool { return false }

// Connection is empty.
func (hostTable) Connection() string { return "" }

// hostTableRef resolves db.name among the host's databases; ok is false
// when the host has no such table (or there is no host).
func (e *Engine) hostTableRef(ctx *sql.Context, db, name string) (tableRef, bool, error) {
	es, isExt := e.store.(extensionStorage)
	if !isExt || !es.host.HasDatabase(ctx, db) {
		return tableRef{}, false, nil
	}
	hdb, err := es.host.Database(ctx, db)
	if err != nil {
		return tableRef{}, false, err
	}
	t, ok, err := hdb.GetTableInsensitive(ctx, name)
	if err != nil || !ok {
		return tableRef{}, false, err
	}
	h := fnv.New64a()
	io.WriteString(h, strings.ToLower(hdb.Name())+"\x00"+strings.ToLower(t.Name()))
	id := hostIDBit | h.Sum64()&(hostIDBit-1)
	return tableRef{DB: hdb.Name(), Name: t.Name(), ID: id, Table: hostTable{t}}, true, nil
}

// scanSource calls fn with every row of src: from the catalog, or through
// the host table's partitions.
func scanSource(ctx context.Context, cat *catalog.Store, src tableRef, fn func(sql.Row) error) error {
	h, ok := src.Table.(hostTable)
	if !ok {
		return cat.ScanTable(ctx, src.DB, src.Name, fn)
	}
	sctx, ok := ctx.(*sql.Context)
	if !ok {
		sctx = sql.NewContext(ctx)
	}
	parts, err := h.Table.Partitions(sctx)
	if err != nil {
		return err
	}
	defer parts.Close(sctx)
	for {
		p, err := parts.Next(sctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := scanPartition(sctx, h.Table, p, fn); err != nil {
			return err
		}
	}
}

// scanPartition calls fn with every row of partition p of t.
func scanPartition(ctx *sql.Context, t sql.Table, p sql.Partition, fn func(sql.Row) error) error {
	rows, err := t.PartitionRows(ctx, p)
	if err != nil {
		return err
	}
	defer rows.Close(ctx)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		row, err := rows.Next(ctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(row); err != nil {
			return err
		}
	}
}

// isHostTable reports whether src is a host table.
func isHostTable(src tableRef) bool {
	_, ok := src.Table.(hostTable)
	return ok
}

// When authentication is on, GMS wraps every database in a privileged
// database that claims the view, trigger, stored-procedure and event
// capabilities and fails if the database underneath lacks them; so an
// isolated host database has them all. Views pass on to the host (a
// hidden view is missing, as a hidden table is); the host's triggers,
// stored procedures and events are not served through dpsql.
var (
	_ sql.ViewDatabase            = isolatedHostDB{}
	_ sql.TriggerDatabase         = isolatedHostDB{}
	_ sql.StoredProcedureDatabase = isolatedHostDB{}
	_ sql.EventDatabase           = isolatedHostDB{}
	_ sql.TableRenamer            = isolatedHostDB{}
	_ sql.TableCreator            = isolatedHostDB{}
	_ sql.TableDropper            = isolatedHostDB{}
)

// RenameTable passes on to the host database, if it can.
func (d isolatedHostDB) RenameTable(ctx *sql.Context, oldName, newName string) error {
	tr, ok := d.Database.(sql.TableRenamer)
	if !ok {
		return ErrUnsupported.New("database %s cannot rename tables", quoteIdent(d.Name()))
	}
	return tr.RenameTable(ctx, oldName, newName)
}

// CreateView implements sql.ViewDatabase.
func (d isolatedHostDB) CreateView(ctx *sql.Context, name string, selectStatement, createViewStmt string) error {
	vd, ok := d.Database.(sql.ViewDatabase)
	if !ok {
		return sql.ErrViewsNotSupported.New(d.Name())
	}
	return vd.CreateView(ctx, name, selectStatement, createViewStmt)
}

// DropView implements sql.ViewDatabase.
func (d isolatedHostDB) DropView(ctx *sql.Context, name string) error {
	vd, ok := d.Database.(sql.ViewDatabase)
	if !ok {
		return sql.ErrViewsNotSupported.New(d.Name())
	}
	return vd.DropView(ctx, name)
}

// GetViewDefinition implements sql.ViewDatabase: a hidden view is missing.
func (d isolatedHostDB) GetViewDefinition(ctx *sql.Context, name string) (sql.ViewDefinition, bool, error) {
	vd, ok := d.Database.(sql.ViewDatabase)
	if !ok || !d.visible(ctx, d.Name())(name) {
		return sql.ViewDefinition{}, false, nil
	}
	return vd.GetViewDefinition(ctx, name)
}

// AllViews implements sql.ViewDatabase: the visible views.
func (d isolatedHostDB) AllViews(ctx *sql.Context) ([]sql.ViewDefinition, error) {
	vd, ok := d.Database.(sql.ViewDatabase)
	if !ok {
		return nil, nil
	}
	views, err := vd.AllViews(ctx)
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

// GetTriggers implements sql.TriggerDatabase: none are served.
func (isolatedHostDB) GetTriggers(*sql.Context) ([]sql.TriggerDefinition, error) { return nil, nil }

// CreateTrigger implements sql.TriggerDatabase.
func (d isolatedHostDB) CreateTrigger(*sql.Context, sql.TriggerDefinition) error {
	return sql.ErrTriggersNotSupported.New(d.Name())
}

// DropTrigger implements sql.TriggerDatabase.
func (d isolatedHostDB) DropTrigger(*sql.Context, string) error {
	return sql.ErrTriggersNotSupported.New(d.Name())
}

// GetStoredProcedure implements sql.StoredProcedureDatabase: none are
// served.
func (isolatedHostDB) GetStoredProcedure(*sql.Context, string) (sql.StoredProcedureDetails, bool, error) {
	return sql.StoredProcedureDetails{}, false, nil
}

// GetStoredProcedures implements sql.StoredProcedureDatabase.
func (isolatedHostDB) GetStoredProcedures(*sql.Context) ([]sql.StoredProcedureDetails, error) {
	return nil, nil
}

// SaveStoredProcedure implements sql.StoredProcedureDatabase.
func (d isolatedHostDB) SaveStoredProcedure(*sql.Context, sql.StoredProcedureDetails) error {
	return sql.ErrStoredProceduresNotSupported.New(d.Name())
}

// DropStoredProcedure implements sql.StoredProcedureDatabase.
func (d isolatedHostDB) DropStoredProcedure(*sql.Context, string) error {
	return sql.ErrStoredProceduresNotSupported.New(d.Name())
}

// GetEvent implements sql.EventDatabase: none are served.
func (isolatedHostDB) GetEvent(*sql.Context, string) (sql.EventDefinition, bool, error) {
	return sql.EventDefinition{}, false, nil
}

// GetEvents implements sql.EventDatabase.
func (isolatedHostDB) GetEvents(*sql.Context) ([]sql.EventDefinition, interface{}, error) {
	return nil, nil, nil
}

// SaveEvent implements sql.EventDatabase.
func (d isolatedHostDB) SaveEvent(*sql.Context, sql.EventDefinition) (bool, error) {
	return false, ErrUnsupported.New("events are not supported in %s", quoteIdent(d.Name()))
}

// DropEvent implements sql.EventDatabase.
func (d isolatedHostDB) DropEvent(*sql.Context, string) error {
	return ErrUnsupported.New("events are not supported in %s", quoteIdent(d.Name()))
}

// UpdateEvent implements sql.EventDatabase.
func (d isolatedHostDB) UpdateEvent(*sql.Context, string, sql.EventDefinition) (bool, error) {
	return false, ErrUnsupported.New("events are not supported in %s", quoteIdent(d.Name()))
}

// UpdateLastExecuted implements sql.EventDatabase.
func (isolatedHostDB) UpdateLastExecuted(*sql.Context, string, time.Time) error { return nil }

// NeedsToReloadEvents implements sql.EventDatabase.
func (isolatedHostDB) NeedsToReloadEvents(*sql.Context, interface{}) (bool, error) {
	return false, nil
}

// refuseHostUnits fails when a privacy unit links src and a host table:
// units read their tables from the catalog (units.go), and a unit that
// cannot be read must never be dropped silently (the synthesis would
// protect rows, not units). Checked in phase 1, before any charge.
func (e *Engine) refuseHostUnits(ctx *sql.Context, src tableRef) error {
	var rec *unitRecord
	err := e.dp.cat.View(ctx, func(tx *catalog.Tx) error {
		v, err := tx.Get(unitBucket, publicKey(src.ID))
		if err != nil || v == nil {
			return err
		}
		rec = new(unitRecord)
		return json.Unmarshal(v, rec)
	})
	if err != nil {
		return ErrInternal.Wrap(err, "reading the privacy unit of %s", src)
	}
	if rec != nil && (isHostTable(src) || rec.UnitID&hostIDBit != 0) {
		return ErrUnsupported.New("%s has a privacy unit, and privacy units over tables of the host application are not supported: synthesize it from tables in dpsql's own databases", src)
	}
	return nil
}
