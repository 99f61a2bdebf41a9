package engine

import (
	"strconv"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

// Access rules of the DP statements.
//
// The owner of a raw table is a user who may read it and grant access to it:
// SELECT and GRANT OPTION on the table (root, and whoever root makes an
// owner). Owners set budgets and domains, grant SYNTHESIZE and may
// synthesize. An analyst may synthesize from a table only with an explicit
// GRANT SYNTHESIZE (grant_stmts.go), which gives no SELECT on the table.
//
// A user who may neither own nor synthesize from a table gets the same error
// as for a missing table, so probing reveals nothing. A SYNTHESIZE grantee,
// who already knows the table exists, gets ErrAccessDenied for the owner's
// statements.

// isOwner reports whether the session's user owns t.
func (e *Engine) isOwner(ctx *sql.Context, t tableRef) bool {
	mdb := e.sqle.Analyzer.Catalog.MySQLDb
	op := sql.NewPrivilegedOperation(sql.PrivilegeCheckSubject{Database: t.DB, Table: t.Name},
		sql.PrivilegeType_Select, sql.PrivilegeType_GrantOption)
	return mdb.UserHasPrivileges(ctx, op)
}

// requireOwner fails unless the session's user owns t: with ErrAccessDenied
// for a SYNTHESIZE grantee, and with ErrNoSuchTable for anyone else.
func (e *Engine) requireOwner(ctx *sql.Context, t tableRef) error {
	if e.isOwner(ctx, t) {
		return nil
	}
	granted, err := e.hasSynthesizeGrant(ctx, t)
	if err != nil {
		return err
	}
	if granted {
		user, host := e.sessionAccount(ctx)
		return ErrAccessDenied.New("only an owner of %s (SELECT and GRANT OPTION on it) may do this; '%s'@'%s' may only synthesize from it", t, user, host)
	}
	return noSuchTable(t.DB, t.Name)
}

// requireSynthesize fails unless the session's user may run DP statements
// on t: its owner, or a user granted SYNTHESIZE on it. Anyone else gets
// ErrNoSuchTable.
func (e *Engine) requireSynthesize(ctx *sql.Context, t tableRef) error {
	ok, err := e.canSynthesize(ctx, t)
	if err != nil {
		return err
	}
	if !ok {
		return noSuchTable(t.DB, t.Name)
	}
	return nil
}

// canSynthesize reports whether the session's user owns t or holds a
// SYNTHESIZE grant on it.
func (e *Engine) canSynthesize(ctx *sql.Context, t tableRef) (bool, error) {
	if e.isOwner(ctx, t) {
		return true, nil
	}
	return e.hasSynthesizeGrant(ctx, t)
}

// sessionAccount returns the account the session's user authenticated as,
// as CURRENT_USER() names it: the user and the host pattern of its
// mysql.user entry ('%' for an account created without a host). If no
// entry matches (the user was dropped while connected), it returns the
// client's user and address.
func (e *Engine) sessionAccount(ctx *sql.Context) (user, host string) {
	return e.accountOf(sessionUser(ctx))
}

// accountOf returns the account (user, host pattern) that a client user
// connected from address authenticates as, or the pair itself if none.
func (e *Engine) accountOf(user, host string) (string, string) {
	mdb := e.sqle.Analyzer.Catalog.MySQLDb
	rd := mdb.Reader()
	defer rd.Close()
	if u := mdb.GetUser(rd, user, host, false); u != nil {
		return u.User, u.Host
	}
	return user, host
}

// ledgerUser is the user recorded in the privacy ledger for the session:
// its account as user@host (see sessionAccount). SHOW PRIVACY LEDGER shows
// an analyst the entries recorded under this name.
func (e *Engine) ledgerUser(ctx *sql.Context) string {
	user, host := e.sessionAccount(ctx)
	return user + "@" + host
}

// allowDPProcedures lets every user CALL the dpsql procedures.
//
// GMS authorizes a CALL like MySQL: the user needs EXECUTE on the current
// database (or on the procedure). The dpsql procedures are the preparable
// twins of dpsql statements, which any user may run and which check access
// to the tables they name themselves (the rules above), so requiring
// EXECUTE would only keep analysts from preparing them. Every other
// procedure, and every other statement, is authorized as before.
func (e *Engine) allowDPProcedures() {
	cat := e.sqle.Analyzer.Catalog
	cat.AuthHandler = dpAuthHandler{AuthorizationHandler: cat.AuthHandler, cat: cat}
}

// dpAuthHandler is GMS's authorization handler, except that it admits
// CALLs of the dpsql procedures.
type dpAuthHandler struct {
	sql.AuthorizationHandler
	cat sql.Catalog
}

// HandleAuth implements sql.AuthorizationHandler. Besides the dpsql
// procedures, it admits SHOW PROCESSLIST (the only statement whose
// AuthType is PROCESS) for every user: as in MySQL, a user without the
// PROCESS privilege sees their own threads only, which dpsql's node for the
// statement enforces (processlist.go).
func (h dpAuthHandler) HandleAuth(ctx *sql.Context, state sql.AuthorizationQueryState, auth ast.AuthInformation) error {
	if auth.AuthType == ast.AuthType_CALL && len(auth.TargetNames) == 3 && h.isDPProcedure(ctx, auth.TargetNames[1], auth.TargetNames[2]) {
		return nil
	}
	if auth.AuthType == ast.AuthType_PROCESS {
		return nil
	}
	return h.AuthorizationHandler.HandleAuth(ctx, state, auth)
}

// isDPProcedure reports whether name, called with params arguments, is one
// of the engine's dpsql procedures.
func (h dpAuthHandler) isDPProcedure(ctx *sql.Context, name, params string) bool {
	if !strings.HasPrefix(strings.ToLower(name), "dpsql_") {
		return false
	}
	n, err := strconv.Atoi(params)
	if err != nil {
		return false
	}
	p, err := h.cat.ExternalStoredProcedure(ctx, name, n)
	return err == nil && p != nil
}
