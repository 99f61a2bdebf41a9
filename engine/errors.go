package engine

import (
	"errors"
	"fmt"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
)

// Kind is a class of engine error. Every kind carries the MySQL error number
// and SQLSTATE a client sees when an error of that kind reaches the wire.
//
// Kinds are compared by identity: errors.Is(err, engine.ErrDataDirLocked).
type Kind struct {
	name  string
	code  int
	state string
}

// Error returns the kind's name, so a bare *Kind is itself a sentinel error.
func (k *Kind) Error() string { return k.name }

// Code is the MySQL error number of the kind.
func (k *Kind) Code() int { return k.code }

// State is the SQLSTATE of the kind.
func (k *Kind) State() string { return k.state }

// New returns an error of kind k with a formatted message.
func (k *Kind) New(format string, args ...any) error {
	return &Error{kind: k, msg: fmt.Sprintf(format, args...)}
}

// Wrap returns an error of kind k that wraps err, with a formatted message
// that is prefixed to err's (none if format is empty).
func (k *Kind) Wrap(err error, format string, args ...any) error {
	return &Error{kind: k, msg: fmt.Sprintf(format, args...), err: err}
}

// Error is an engine error: a kind, a precise message and, optionally, the
// error that caused it.
type Error struct {
	kind *Kind
	msg  string
	err  error
}

// Error implements error. An error wrapped with an empty message reads
// as its cause alone (for causes that already say what failed).
func (e *Error) Error() string {
	switch {
	case e.err == nil:
		return e.msg
	case e.msg == "":
		return e.err.Error()
	}
	return e.msg + ": " + e.err.Error()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.err }

// Is reports whether target is e's kind.
func (e *Error) Is(target error) bool { return target == e.kind }

// Kind returns the kind of e.
func (e *Error) Kind() *Kind { return e.kind }

// Error kinds. MySQL numbers are used where MySQL has a matching error;
// dpsql's own failures use numbers from 9100 up, above MySQL's server range.
var (
	// ErrConfig: an invalid server configuration (flag values).
	ErrConfig = &Kind{"invalid configuration", 9100, mysql.SSUnknownSQLState}
	// ErrDataDir: the data directory cannot be created, written or opened.
	ErrDataDir = &Kind{"data directory unusable", 9101, mysql.SSUnknownSQLState}
	// ErrDataDirLocked: another server holds the data directory.
	ErrDataDirLocked = &Kind{"data directory in use", 9102, mysql.SSUnknownSQLState}
	// ErrDataDirVersion: the data directory was written by a newer dpsql.
	ErrDataDirVersion = &Kind{"data directory format unsupported", 9103, mysql.SSUnknownSQLState}
	// ErrListen: the server cannot listen on its address (e.g. port in use).
	ErrListen = &Kind{"cannot listen", 9104, mysql.SSUnknownSQLState}
	// ErrGrants: the stored users and grants cannot be loaded or saved.
	ErrGrants = &Kind{"users and grants unusable", 9105, mysql.SSUnknownSQLState}

	// ErrSyntax: a dpsql statement is malformed (MySQL ER_PARSE_ERROR).
	ErrSyntax = &Kind{"syntax error", mysql.ERParseError, mysql.SSClientError}
	// ErrUnsupported: a dpsql statement is recognised but this server does
	// not execute it yet (MySQL ER_NOT_SUPPORTED_YET).
	ErrUnsupported = &Kind{"not supported", mysql.ERNotSupportedYet, mysql.SSClientError}
	// ErrInternal: a failure inside the server (MySQL ER_UNKNOWN_ERROR).
	ErrInternal = &Kind{"internal error", mysql.ERUnknownError, mysql.SSUnknownSQLState}

	// ErrNoSuchTable: the table does not exist or the user may not use it.
	// The two are deliberately indistinguishable, so that an analyst cannot
	// probe for raw tables (MySQL ER_NO_SUCH_TABLE).
	ErrNoSuchTable = &Kind{"no such table", mysql.ERNoSuchTable, mysql.SSUnknownTable}
	// ErrAccessDenied: the user may see the table but lacks the privilege
	// the statement needs (MySQL ER_TABLEACCESS_DENIED_ERROR).
	ErrAccessDenied = &Kind{"access denied", 1142, mysql.SSClientError}
	// ErrNeedsCatalog: a dpsql statement that needs durable storage was run
	// on a server without it (unit tests over the memory provider).
	ErrNeedsCatalog = &Kind{"needs durable storage", 9106, mysql.SSUnknownSQLState}
	// ErrBudgetExhausted: the request costs more than the table's remaining
	// privacy budget; nothing was spent.
	ErrBudgetExhausted = &Kind{"privacy budget exhausted", 9110, mysql.SSUnknownSQLState}
	// ErrNoBudget: the table has no privacy budget, so no DP statement may
	// use it until its owner sets one.
	ErrNoBudget = &Kind{"no privacy budget", 9111, mysql.SSUnknownSQLState}
	// ErrBadParameter: an invalid ε, δ, option or other statement parameter.
	ErrBadParameter = &Kind{"invalid parameter", 9112, mysql.SSClientError}
	// ErrDomain: a column lacks a public domain, or a domain declaration is
	// invalid.
	ErrDomain = &Kind{"domain error", 9113, mysql.SSClientError}
	// ErrWorkload: a workload query is not a supported marginal query.
	ErrWorkload = &Kind{"unsupported workload", 9114, mysql.SSClientError}
	// ErrMechanism: an unknown mechanism or a mechanism failure.
	ErrMechanism = &Kind{"mechanism error", 9115, mysql.SSUnknownSQLState}
	// ErrCancelled: the statement was cancelled (KILL QUERY or a closed
	// connection) (MySQL ER_QUERY_INTERRUPTED).
	ErrCancelled = &Kind{"query interrupted", mysql.ERQueryInterrupted, mysql.SSQueryInterrupted}
	// ErrExists: the target table already exists (MySQL ER_TABLE_EXISTS_ERROR).
	ErrExists = &Kind{"table exists", mysql.ERTableExists, "42S01"}
	// ErrNoSuchUser: GRANT SYNTHESIZE names an account that does not exist
	// (MySQL ER_CANT_CREATE_USER_WITH_GRANT).
	ErrNoSuchUser = &Kind{"no such user", 1410, mysql.SSClientError}
	// ErrNoSuchGrant: REVOKE SYNTHESIZE names a grant that does not exist
	// (MySQL ER_NONEXISTING_GRANT).
	ErrNoSuchGrant = &Kind{"no such grant", mysql.ERNonExistingGrant, mysql.SSClientError}
	// ErrNoSuchDatabase: a statement names a database that does not exist
	// (MySQL ER_BAD_DB_ERROR).
	ErrNoSuchDatabase = &Kind{"no such database", mysql.ERBadDb, mysql.SSClientError}
	// ErrDBAccessDenied: the user may not do this on the database (MySQL
	// ER_DBACCESS_DENIED_ERROR); also given for a missing database, so
	// that probing reveals nothing.
	ErrDBAccessDenied = &Kind{"database access denied", mysql.ERDBAccessDenied, mysql.SSClientError}
	// ErrNoDatabase: the statement needs a current database and there is
	// none (MySQL ER_NO_DB_ERROR).
	ErrNoDatabase = &Kind{"no database selected", mysql.ERNoDb, mysql.SSNoDB}
	// ErrNoSuchColumn: a statement names a column the table does not have
	// (MySQL ER_BAD_FIELD_ERROR).
	ErrNoSuchColumn = &Kind{"no such column", mysql.ERBadFieldError, mysql.SSBadFieldError}
	// ErrNoBounds: error bounds were asked of a table that has none: not a
	// synthetic table with a model, or made by a mechanism other than AIM.
	ErrNoBounds = &Kind{"no error bounds", 9116, mysql.SSUnknownSQLState}
	// ErrNotAnswerable: a query on an answers-only table that its released
	// noisy marginals cannot answer.
	ErrNotAnswerable = &Kind{"not answerable from the released answers", 9118, mysql.SSClientError}
	// ErrTooLongIdent: a name a dpsql statement would create has more than
	// 64 characters (MySQL ER_TOO_LONG_IDENT).
	ErrTooLongIdent = &Kind{"identifier too long", mysql.ERTooLongIdent, mysql.SSClientError}
	// ErrWrongDBName: a database name breaks MySQL's identifier rules
	// (MySQL ER_WRONG_DB_NAME).
	ErrWrongDBName = &Kind{"incorrect database name", mysql.ERWrongDbName, mysql.SSClientError}
	// ErrWrongTableName: a table name breaks MySQL's identifier rules
	// (MySQL ER_WRONG_TABLE_NAME).
	ErrWrongTableName = &Kind{"incorrect table name", mysql.ERWrongTableName, mysql.SSClientError}
)

// SQLError flattens err into the MySQL error a client sees. It is the single
// wire boundary for engine errors: dpsql nodes and procedures return its
// result, because GMS passes a *mysql.SQLError through unchanged and would
// report anything else as a generic 1105.
func SQLError(err error) error {
	if err == nil {
		return nil
	}
	var sqlErr *mysql.SQLError
	if errors.As(err, &sqlErr) {
		return sqlErr
	}
	var e *Error
	if errors.As(err, &e) {
		return mysql.NewSQLError(e.kind.code, e.kind.state, "%s", err.Error())
	}
	return sql.CastSQLError(err)
}
