// Package engine runs the dpsql server: go-mysql-server over the bbolt
// catalog, speaking the MySQL protocol.
//
// # Lifecycle
//
// New validates a Config, creates or reopens the data directory (refusing
// one held by another server or written by a newer dpsql), loads users and
// grants, makes sure root@localhost and the locked superuser dp_internal
// exist, seeds the demo database if asked and binds the listener. Serve
// accepts connections until its context is cancelled, then closes every
// connection and the storage.
//
// # Statements
//
// The engine's sql.Parser (parser.go) asks dpparse whether each statement
// of a query is a dpsql statement, skipping leading comments. If so, it
// hands GMS an ast.InjectedStatement carrying the statement's plan node and
// the privilege the planbuilder must check; otherwise the text goes to the
// MySQL parser. Multi-statement scripts may mix both. statements.go is the
// registry: one plan node and one CALL procedure (the twin that server-side
// prepared statements can use) per statement.
//
// # Authentication
//
// Authentication is always on: GMS's mysql database holds users and grants
// and is persisted in the catalog after every CREATE USER, GRANT or REVOKE.
// Engine.QueryInternal runs a query as dp_internal in a fresh session, for
// privileged reads made on an analyst's behalf.
//
// # Errors
//
// errors.go declares the engine's error kinds, each with its MySQL error
// number; SQLError converts them for the wire.
package engine
