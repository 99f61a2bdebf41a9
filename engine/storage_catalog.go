package engine

import (
	"errors"
	"time"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/dpsql/dpsql/catalog"
)

var _ Storage = catalogStorage{}

// catalogStorage is the server's storage: the bbolt catalog in the data
// directory.
type catalogStorage struct {
	*catalog.Store
}

// openStorage opens (creating on first start) the catalog in dir and
// classifies the failures a user can act on.
func openStorage(dir string) (Storage, error) {
	st, err := catalog.Open(dir, nil)
	if err != nil {
		var ve *catalog.VersionError
		switch {
		case errors.Is(err, catalog.ErrLocked):
			// The catalog's message says the same: say it once, with what to do.
			return nil, ErrDataDirLocked.New("data directory %s is in use by another dpsql server: stop that server first, or start this one with another --data-dir", dir)
		case errors.As(err, &ve):
			return nil, ErrDataDirVersion.Wrap(err, "data directory %s was written by a newer dpsql", dir)
		case errors.Is(err, catalog.ErrDamaged):
			// The message says what is wrong and how to restore.
			return nil, ErrDataDir.Wrap(err, "cannot use data directory %s", dir)
		default:
			return nil, ErrDataDir.Wrap(err, "cannot open data directory %s", dir)
		}
	}
	return catalogStorage{st}, nil
}

// Provider implements Storage.
func (c catalogStorage) Provider() sql.MutableDatabaseProvider {
	return catalogProvider{c.Store.Provider()}
}

// NewSession implements Storage. Every catalog statement is its own
// transaction, so a plain session suffices.
func (c catalogStorage) NewSession(base *sql.BaseSession) sql.Session { return base }

// Persist implements Storage (mysql_db.MySQLDbPersistence).
func (c catalogStorage) Persist(ctx *sql.Context, data []byte) error {
	return c.Store.StoreGrants(ctx, data)
}

// catalogProvider returns the catalog's databases wrapped in catalogDB.
type catalogProvider struct {
	*catalog.Provider
}

// Database implements sql.DatabaseProvider.
func (p catalogProvider) Database(ctx *sql.Context, name string) (sql.Database, error) {
	db, err := p.Provider.Database(ctx, name)
	if err != nil {
		return nil, err
	}
	return wrapCatalogDB(db), nil
}

// AllDatabases implements sql.DatabaseProvider.
func (p catalogProvider) AllDatabases(ctx *sql.Context) []sql.Database {
	dbs := p.Provider.AllDatabases(ctx)
	for i, db := range dbs {
		dbs[i] = wrapCatalogDB(db)
	}
	return dbs
}

// wrapCatalogDB adds empty trigger and stored-procedure support to a
// catalog database that lacks it. When authentication is on, GMS wraps
// every database in mysql_db.PrivilegedDatabase, which claims both
// capabilities and fails every INSERT, UPDATE and DELETE ("doesn't support
// triggers") if the database underneath does not have them.
func wrapCatalogDB(db sql.Database) sql.Database {
	cdb, ok := db.(*catalog.Database)
	if !ok {
		return db
	}
	if _, ok := db.(sql.TriggerDatabase); ok {
		return db
	}
	return catalogDB{cdb}
}

var (
	_ sql.TriggerDatabase         = catalogDB{}
	_ sql.StoredProcedureDatabase = catalogDB{}
	_ sql.EventDatabase           = catalogDB{}
)

// catalogDB is a catalog database with no triggers, no stored procedures
// and no events. Embedding the concrete type keeps every other capability.
// Without the event methods, PrivilegedDatabase fails SHOW EVENTS (and so
// mysqldump --events) and information_schema.EVENTS.
type catalogDB struct {
	*catalog.Database
}

// GetTriggers implements sql.TriggerDatabase: there are none.
func (catalogDB) GetTriggers(*sql.Context) ([]sql.TriggerDefinition, error) { return nil, nil }

// CreateTrigger implements sql.TriggerDatabase.
func (d catalogDB) CreateTrigger(*sql.Context, sql.TriggerDefinition) error {
	return sql.ErrTriggersNotSupported.New(d.Name())
}

// DropTrigger implements sql.TriggerDatabase.
func (d catalogDB) DropTrigger(*sql.Context, string) error {
	return sql.ErrTriggersNotSupported.New(d.Name())
}

// GetStoredProcedure implements sql.StoredProcedureDatabase: there are none.
func (catalogDB) GetStoredProcedure(*sql.Context, string) (sql.StoredProcedureDetails, bool, error) {
	return sql.StoredProcedureDetails{}, false, nil
}

// GetStoredProcedures implements sql.StoredProcedureDatabase.
func (catalogDB) GetStoredProcedures(*sql.Context) ([]sql.StoredProcedureDetails, error) {
	return nil, nil
}

// SaveStoredProcedure implements sql.StoredProcedureDatabase.
func (d catalogDB) SaveStoredProcedure(*sql.Context, sql.StoredProcedureDetails) error {
	return sql.ErrStoredProceduresNotSupported.New(d.Name())
}

// DropStoredProcedure implements sql.StoredProcedureDatabase.
func (d catalogDB) DropStoredProcedure(*sql.Context, string) error {
	return sql.ErrStoredProceduresNotSupported.New(d.Name())
}

// GetEvent implements sql.EventDatabase: there are none.
func (catalogDB) GetEvent(*sql.Context, string) (sql.EventDefinition, bool, error) {
	return sql.EventDefinition{}, false, nil
}

// GetEvents implements sql.EventDatabase.
func (catalogDB) GetEvents(*sql.Context) ([]sql.EventDefinition, any, error) { return nil, nil, nil }

// SaveEvent implements sql.EventDatabase.
func (d catalogDB) SaveEvent(*sql.Context, sql.EventDefinition) (bool, error) {
	return false, sql.ErrEventsNotSupported.New(d.Name())
}

// DropEvent implements sql.EventDatabase.
func (d catalogDB) DropEvent(*sql.Context, string) error {
	return sql.ErrEventsNotSupported.New(d.Name())
}

// UpdateEvent implements sql.EventDatabase.
func (d catalogDB) UpdateEvent(*sql.Context, string, sql.EventDefinition) (bool, error) {
	return false, sql.ErrEventsNotSupported.New(d.Name())
}

// UpdateLastExecuted implements sql.EventDatabase.
func (d catalogDB) UpdateLastExecuted(*sql.Context, string, time.Time) error {
	return sql.ErrEventsNotSupported.New(d.Name())
}

// NeedsToReloadEvents implements sql.EventDatabase.
func (catalogDB) NeedsToReloadEvents(*sql.Context, any) (bool, error) { return false, nil }
