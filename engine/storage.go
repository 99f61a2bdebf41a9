package engine

import (
	"github.com/dolthub/go-mysql-server/sql"
)

// Storage is what the engine needs from its storage layer: the databases it
// serves, sessions over them, and the durable blob of users and grants.
// The server uses the bbolt catalog (catalog.Store); unit tests use GMS's
// memory provider.
type Storage interface {
	// Provider returns the databases served.
	Provider() sql.MutableDatabaseProvider
	// NewSession returns a session over the storage for base.
	NewSession(base *sql.BaseSession) sql.Session
	// LoadGrants returns the stored users-and-grants blob, or nil on first
	// start.
	LoadGrants() ([]byte, error)
	// Persist stores the users-and-grants blob durably
	// (mysql_db.MySQLDbPersistence).
	Persist(ctx *sql.Context, data []byte) error
	// Close releases the storage.
	Close() error
}
