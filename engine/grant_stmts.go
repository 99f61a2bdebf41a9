package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/mysql_db"
	"github.com/dolthub/go-mysql-server/sql/mysql_db/serial"
	"github.com/dolthub/go-mysql-server/sql/planbuilder"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"

	"github.com/dpsql/dpsql/catalog"
	"github.com/dpsql/dpsql/engine/dpparse"
)

// This file holds the SYNTHESIZE privilege:
//
//	GRANT [privs, ]SYNTHESIZE ON t|db.* TO user[@host]
//	    CALL dpsql_grant_synthesize('t'|'db.*', 'user'[, 'host'])
//	REVOKE [privs, ]SYNTHESIZE ON t|db.* FROM user[@host]
//	    CALL dpsql_revoke_synthesize('t'|'db.*', 'user'[, 'host'])
//	SHOW SYNTHESIZE GRANTS FOR t|db.*
//	    CALL dpsql_show_synthesize_grants('t'|'db.*')
//
// SYNTHESIZE lets an analyst run the DP statements on a raw table (see
// access.go) without any SELECT on it. Only an owner of the table may grant
// or revoke it, to an existing account. On db.* it covers every table of
// the database, current and future, and only an owner of the database
// (SELECT and GRANT OPTION on db.*, or globally) may grant it.
//
// Table grants live in the catalog's metadata bucket grantsBucket, keyed by
// the table's stable ID (8 bytes, big-endian), the user, a 0 byte and the
// host, so a table dropped and re-created under the same name starts with
// no grants. Database grants live in dbGrantsBucket, keyed by the
// database's lower-case name, a 0 byte, the user, a 0 byte and the host;
// DROP DATABASE deletes them (dropDatabaseGrants), so a database created
// again under the same name starts with none. A grant to user@host applies
// to a session authenticated as that account, and a grant to user@'%' to
// every account of that user, as MySQL matches hosts.
//
// With other privileges (GRANT SELECT, SYNTHESIZE ON db.t TO u), the
// statement grants all or nothing: the MySQL privileges are first checked
// as the caller's own GRANT would be (GMS's planbuilder), then SYNTHESIZE
// is recorded, then the MySQL GRANT runs; if it fails, the SYNTHESIZE
// record is put back as it was.
//
// Grants follow their account: when an account is dropped its SYNTHESIZE
// grants are deleted, so a new account created later under the
// same name does not inherit them. The engine watches every change of the
// users and grants blob (grantsPersister) and also prunes at start-up, in
// case the server stopped between the two writes.
const (
	grantsBucket   = "dp_synthesize_grants"
	dbGrantsBucket = "dp_synthesize_db_grants"
)

// grantRecord is the stored form of one SYNTHESIZE grant.
type grantRecord struct {
	DB        string    `json:"db,omitempty"` // a database grant's database, as named
	User      string    `json:"user"`
	Host      string    `json:"host"`
	GrantedBy string    `json:"granted_by"`
	GrantedAt time.Time `json:"granted_at"`
}

// grantKey is the key of user@host's grant on table id.
func grantKey(id uint64, user, host string) []byte {
	k := tableKey(id)
	k = append(k, user...)
	k = append(k, 0)
	return append(k, host...)
}

// getTableID returns the table ID of a table grant key.
func getTableID(k []byte) uint64 { return binary.BigEndian.Uint64(k[:8]) }

// splitGrantKey returns the account of a grant key.
func splitGrantKey(k []byte) (user, host string, ok bool) {
	if len(k) < 9 {
		return "", "", false
	}
	u, h, ok := bytes.Cut(k[8:], []byte{0})
	return string(u), string(h), ok
}

// dbGrantKey is the key of user@host's grant on every table of db.
func dbGrantKey(db, user, host string) []byte {
	k := append([]byte(strings.ToLower(db)), 0)
	k = append(k, user...)
	k = append(k, 0)
	return append(k, host...)
}

// splitDBGrantKey returns the database (lower-case) and account of a
// database grant key.
func splitDBGrantKey(k []byte) (db, user, host string, ok bool) {
	d, rest, ok1 := bytes.Cut(k, []byte{0})
	u, h, ok2 := bytes.Cut(rest, []byte{0})
	return string(d), string(u), string(h), ok1 && ok2
}

// hasSynthesizeGrant reports whether the session's account holds
// SYNTHESIZE on t, on t's table or its database, directly or through a
// grant to user@'%'.
func (e *Engine) hasSynthesizeGrant(ctx *sql.Context, t tableRef) (bool, error) {
	if e.dp.cat == nil {
		return false, nil
	}
	user, host := e.sessionAccount(ctx)
	found := false
	err := e.dp.cat.View(ctx, func(tx *catalog.Tx) error {
		for _, h := range []string{host, "%"} {
			for _, k := range []struct {
				bucket string
				key    []byte
			}{{grantsBucket, grantKey(t.ID, user, h)}, {dbGrantsBucket, dbGrantKey(t.DB, user, h)}} {
				v, err := tx.Get(k.bucket, k.key)
				if err != nil {
					return err
				}
				if v != nil {
					found = true
					return nil
				}
			}
		}
		return nil
	})
	if err != nil {
		return false, ErrInternal.Wrap(err, "reading the SYNTHESIZE grants of %s", t)
	}
	return found, nil
}

// accountExists reports whether the account user@host exists, matched
// exactly as GRANT and REVOKE name it.
func (e *Engine) accountExists(user, host string) bool {
	mdb := e.sqle.Analyzer.Catalog.MySQLDb
	rd := mdb.Reader()
	defer rd.Close()
	u, ok := rd.GetUser(mysql_db.UserPrimaryKey{User: user, Host: host})
	return ok && !u.IsRole
}

// grantTarget is the object of a SYNTHESIZE grant: one table, or every
// table of a database.
type grantTarget struct {
	db    string   // the database
	table tableRef // the table, unless all
	all   bool
}

// String names the target as GRANT does (db.t or db.*).
func (g grantTarget) String() string {
	if g.all {
		return quoteIdent(g.db) + ".*"
	}
	return g.table.String()
}

// bucket is the metadata bucket of the target's grants.
func (g grantTarget) bucket() string {
	if g.all {
		return dbGrantsBucket
	}
	return grantsBucket
}

// key is the key of user@host's grant on the target.
func (g grantTarget) key(user, host string) []byte {
	if g.all {
		return dbGrantKey(g.db, user, host)
	}
	return grantKey(g.table.ID, user, host)
}

// openGrantTarget resolves the object of a SYNTHESIZE grant and checks that
// the session's user owns it: the table's owner (openTable's roleOwner), or
// for db.* an owner of the database, SELECT and GRANT OPTION on db.* (or
// globally). Anyone else gets ErrDBAccessDenied, whether the database
// exists or not.
func (e *Engine) openGrantTarget(ctx *sql.Context, what string, tn dpparse.TableName, all bool) (grantTarget, error) {
	if !all {
		t, err := e.openTable(ctx, what, tn, roleOwner)
		return grantTarget{db: t.DB, table: t}, err
	}
	if err := e.needCatalog(what); err != nil {
		return grantTarget{}, err
	}
	db := tn.DB
	if db == "" {
		db = ctx.GetCurrentDatabase()
	}
	if db == "" {
		return grantTarget{}, ErrNoDatabase.New("No database selected: name the database as db.*")
	}
	mdb := e.sqle.Analyzer.Catalog.MySQLDb
	op := sql.NewPrivilegedOperation(sql.PrivilegeCheckSubject{Database: db}, sql.PrivilegeType_Select, sql.PrivilegeType_GrantOption)
	if !mdb.UserHasPrivileges(ctx, op) {
		user, host := e.sessionAccount(ctx)
		return grantTarget{}, ErrDBAccessDenied.New("Access denied for user '%s'@'%s' to database '%s': only an owner of the database (SELECT and GRANT OPTION on %s.*) may do this",
			user, host, db, quoteIdent(db))
	}
	name, ok, err := e.dp.cat.DatabaseName(db)
	if err != nil {
		return grantTarget{}, ErrInternal.Wrap(err, "looking up database %s", quoteIdent(db))
	}
	if !ok {
		return grantTarget{}, ErrNoSuchDatabase.New("Unknown database '%s'", db)
	}
	return grantTarget{db: name, all: true}, nil
}

// grantSynthesizeNode returns the node of GRANT SYNTHESIZE.
func (e *Engine) grantSynthesizeNode(s *dpparse.GrantSynthesize) *dpNode {
	return okNode(s, func(ctx *sql.Context) error { return e.grantSynthesize(ctx, s) })
}

// grantSynthesize records a SYNTHESIZE grant, and grants the statement's
// other privileges with it. Granting it again is not an error (as in
// MySQL).
func (e *Engine) grantSynthesize(ctx *sql.Context, s *dpparse.GrantSynthesize) error {
	g, err := e.openGrantTarget(ctx, "GRANT SYNTHESIZE", s.Table, s.AllTables)
	if err != nil {
		return err
	}
	user, host := s.Account.User, s.Account.Host
	if strings.IndexByte(user, 0) >= 0 || !e.accountExists(user, host) {
		return ErrNoSuchUser.New("account %s does not exist: create it first with CREATE USER", s.Account)
	}
	others := ""
	if len(s.Others) > 0 {
		others = fmt.Sprintf("GRANT %s ON %s TO %s", strings.Join(s.Others, ", "), g, s.Account)
		if err := e.authorizeAsCaller(ctx, others); err != nil {
			return err
		}
	}
	gr := grantRecord{User: user, Host: host, GrantedBy: e.ledgerUser(ctx), GrantedAt: time.Now().UTC()}
	if g.all {
		gr.DB = g.db
	}
	rec, err := json.Marshal(gr)
	if err != nil {
		return ErrInternal.Wrap(err, "encoding the grant")
	}
	old, err := e.swapGrant(ctx, g.bucket(), g.key(user, host), rec)
	if err != nil {
		return ErrInternal.Wrap(err, "storing SYNTHESIZE on %s for %s", g, s.Account)
	}
	if others == "" {
		return nil
	}
	if err := e.runGrant(ctx, others); err != nil {
		if _, uerr := e.swapGrant(context.WithoutCancel(ctx), g.bucket(), g.key(user, host), old); uerr != nil {
			e.log.Error("undoing a SYNTHESIZE grant after its other privileges failed", "target", g.String(), "err", uerr)
		}
		return err
	}
	return nil
}

// revokeSynthesizeNode returns the node of REVOKE SYNTHESIZE.
func (e *Engine) revokeSynthesizeNode(s *dpparse.RevokeSynthesize) *dpNode {
	return okNode(s, func(ctx *sql.Context) error { return e.revokeSynthesize(ctx, s) })
}

// revokeSynthesize deletes a SYNTHESIZE grant, and revokes the statement's
// other privileges with it; revoking a grant that does not exist is
// ErrNoSuchGrant, as in MySQL. Budget already spent by the grantee stays
// spent, and synthetic tables they created stay theirs.
func (e *Engine) revokeSynthesize(ctx *sql.Context, s *dpparse.RevokeSynthesize) error {
	g, err := e.openGrantTarget(ctx, "REVOKE SYNTHESIZE", s.Table, s.AllTables)
	if err != nil {
		return err
	}
	others := ""
	if len(s.Others) > 0 {
		others = fmt.Sprintf("REVOKE %s ON %s FROM %s", strings.Join(s.Others, ", "), g, s.Account)
		if err := e.authorizeAsCaller(ctx, others); err != nil {
			return err
		}
	}
	key := g.key(s.Account.User, s.Account.Host)
	var old []byte
	err = e.dp.cat.Update(ctx, func(tx *catalog.Tx) error {
		v, err := tx.Get(g.bucket(), key)
		if err != nil {
			return err
		}
		if v == nil {
			return ErrNoSuchGrant.New("there is no SYNTHESIZE grant on %s for %s", g, s.Account)
		}
		old = v
		return tx.Delete(g.bucket(), key)
	})
	if err != nil {
		var ee *Error
		if errors.As(err, &ee) {
			return err
		}
		return ErrInternal.Wrap(err, "revoking SYNTHESIZE on %s from %s", g, s.Account)
	}
	if others == "" {
		return nil
	}
	if err := e.runGrant(ctx, others); err != nil {
		if _, uerr := e.swapGrant(context.WithoutCancel(ctx), g.bucket(), key, old); uerr != nil {
			e.log.Error("restoring a SYNTHESIZE grant after its other privileges failed", "target", g.String(), "err", uerr)
		}
		return err
	}
	return nil
}

// swapGrant stores rec under key in bucket (deletes it when rec is nil)
// and returns what was there.
func (e *Engine) swapGrant(ctx context.Context, bucket string, key, rec []byte) (old []byte, err error) {
	err = e.dp.cat.Update(ctx, func(tx *catalog.Tx) error {
		if old, err = tx.Get(bucket, key); err != nil {
			return err
		}
		if rec == nil {
			return tx.Delete(bucket, key)
		}
		return tx.Put(bucket, key, rec)
	})
	return old, err
}

// authorizeAsCaller binds the MySQL GRANT or REVOKE q for the session, as
// if its user had sent it: GMS's planbuilder checks that they may grant
// those privileges. Nothing runs.
func (e *Engine) authorizeAsCaller(ctx *sql.Context, q string) error {
	b := planbuilder.New(ctx, e.sqle.Analyzer.Catalog, e.sqle.EventScheduler, e.sqle.Parser)
	if _, _, _, _, err := b.Parse(q, nil, false); err != nil {
		return err
	}
	return nil
}

// runGrant runs the MySQL GRANT or REVOKE q, which authorizeAsCaller
// accepted for the session, as the internal superuser.
func (e *Engine) runGrant(ctx *sql.Context, q string) error {
	if _, _, err := e.QueryInternal(ctx, "", q); err != nil {
		var se *mysql.SQLError
		if errors.As(err, &se) {
			return se
		}
		return sql.CastSQLError(errors.Unwrap(err))
	}
	return nil
}

// grantProcedures are the CALL twins of GRANT, REVOKE and SHOW SYNTHESIZE
// GRANTS, with the host defaulting to '%' as in the statements.
func (e *Engine) grantProcedures() []sql.ExternalStoredProcedureDetails {
	var procs []sql.ExternalStoredProcedureDetails
	for _, p := range []struct {
		name string
		node func(dpparse.TableName, bool, dpparse.Account) *dpNode
	}{
		{"dpsql_grant_synthesize", func(t dpparse.TableName, all bool, a dpparse.Account) *dpNode {
			return e.grantSynthesizeNode(&dpparse.GrantSynthesize{Table: t, AllTables: all, Account: a})
		}},
		{"dpsql_revoke_synthesize", func(t dpparse.TableName, all bool, a dpparse.Account) *dpNode {
			return e.revokeSynthesizeNode(&dpparse.RevokeSynthesize{Table: t, AllTables: all, Account: a})
		}},
	} {
		call := func(ctx *sql.Context, target, user, host string) (sql.RowIter, error) {
			tn, all, err := parseGrantTargetArg(target)
			if err != nil {
				return procResult(nil, err)
			}
			return procResult(p.node(tn, all, dpparse.Account{User: user, Host: host}).run(ctx))
		}
		procs = append(procs,
			sql.ExternalStoredProcedureDetails{Name: p.name, Schema: okSchema, Function: call},
			sql.ExternalStoredProcedureDetails{Name: p.name, Schema: okSchema,
				Function: func(ctx *sql.Context, target, user string) (sql.RowIter, error) { return call(ctx, target, user, "%") }},
		)
	}
	procs = append(procs, sql.ExternalStoredProcedureDetails{
		Name: "dpsql_show_synthesize_grants", Schema: synthesizeGrantsSchema, ReadOnly: true,
		Function: func(ctx *sql.Context, target string) (sql.RowIter, error) {
			tn, all, err := parseGrantTargetArg(target)
			if err != nil {
				return procResult(nil, err)
			}
			return procResult(e.showSynthesizeGrantsNode(&dpparse.ShowSynthesizeGrants{Table: tn, AllTables: all}).run(ctx))
		},
	})
	return procs
}

// parseGrantTargetArg parses the target argument of the grant procedures:
// a table ('t', 'db.t') or every table of a database ('db.*', '*').
func parseGrantTargetArg(s string) (dpparse.TableName, bool, error) {
	text := "SHOW SYNTHESIZE GRANTS FOR " + s
	stmt, n, ok, err := dpparse.Parse(text)
	sg, isShow := stmt.(*dpparse.ShowSynthesizeGrants)
	if !ok || err != nil || !isShow || n != len(text) || strings.TrimSpace(s) == "" {
		return dpparse.TableName{}, false, ErrBadParameter.New("invalid grant target %q: write it as table, db.table or db.*", s)
	}
	return sg.Table, sg.AllTables, nil
}

// SHOW SYNTHESIZE GRANTS

// synthesizeGrantsSchema is the result of SHOW SYNTHESIZE GRANTS.
var synthesizeGrantsSchema = sql.Schema{
	{Name: "user", Type: types.LongText},
	{Name: "host", Type: types.LongText},
	{Name: "granted_on", Type: types.LongText},
	{Name: "granted_by", Type: types.LongText},
	{Name: "granted_at", Type: types.Datetime, Nullable: true},
}

// showSynthesizeGrantsNode returns the node of SHOW SYNTHESIZE GRANTS.
func (e *Engine) showSynthesizeGrantsNode(s *dpparse.ShowSynthesizeGrants) *dpNode {
	return &dpNode{stmt: s, schema: synthesizeGrantsSchema, readOnly: true, run: func(ctx *sql.Context) ([]sql.Row, error) {
		return e.showSynthesizeGrants(ctx, s)
	}}
}

// showSynthesizeGrants lists who holds SYNTHESIZE on a table (through a
// grant on the table or on its database) or on every table of a database:
// one row per grant, with the object it was granted on (db.t or db.*).
// Only an owner of the table or database may list them.
func (e *Engine) showSynthesizeGrants(ctx *sql.Context, s *dpparse.ShowSynthesizeGrants) ([]sql.Row, error) {
	g, err := e.openGrantTarget(ctx, "SHOW SYNTHESIZE GRANTS", s.Table, s.AllTables)
	if err != nil {
		return nil, err
	}
	var rows []sql.Row
	add := func(on string, v []byte) error {
		var rec grantRecord
		if err := json.Unmarshal(v, &rec); err != nil {
			return err
		}
		var at any
		if !rec.GrantedAt.IsZero() {
			at = rec.GrantedAt
		}
		rows = append(rows, sql.Row{rec.User, rec.Host, on, rec.GrantedBy, at})
		return nil
	}
	err = e.dp.cat.View(ctx, func(tx *catalog.Tx) error {
		dbPrefix := append([]byte(strings.ToLower(g.db)), 0)
		if err := tx.ForEachPrefix(dbGrantsBucket, dbPrefix, func(_, v []byte) error {
			return add(quoteIdent(g.db)+".*", v)
		}); err != nil || g.all {
			return err
		}
		return tx.ForEachPrefix(grantsBucket, tableKey(g.table.ID), func(_, v []byte) error {
			return add(g.table.String(), v)
		})
	})
	if err != nil {
		return nil, ErrInternal.Wrap(err, "reading the SYNTHESIZE grants of %s", g)
	}
	return rows, nil
}

// SHOW GRANTS

// synthesizeGrantLines returns the SYNTHESIZE grants of account user@host
// as SHOW GRANTS lines ("GRANT SYNTHESIZE ON `db`.`t` TO `u`@`h`"): those
// on databases first, then those on tables, each sorted by name. Grants on
// tables dropped since are not listed.
func (e *Engine) synthesizeGrantLines(ctx *sql.Context, user, host string) ([]string, error) {
	if e.dp.cat == nil {
		return nil, nil
	}
	to := quoteIdent(user) + "@" + quoteIdent(host)
	var dbs, tables []string
	err := e.dp.cat.View(ctx, func(tx *catalog.Tx) error {
		err := tx.ForEach(dbGrantsBucket, func(k, v []byte) error {
			if db, u, h, ok := splitDBGrantKey(k); ok && u == user && h == host {
				var rec grantRecord
				if json.Unmarshal(v, &rec) == nil && rec.DB != "" {
					db = rec.DB
				}
				dbs = append(dbs, quoteIdent(db)+".*")
			}
			return nil
		})
		if err != nil {
			return err
		}
		return tx.ForEach(grantsBucket, func(k, _ []byte) error {
			u, h, ok := splitGrantKey(k)
			if !ok || u != user || h != host {
				return nil
			}
			db, name, ok, err := tx.TableByID(getTableID(k))
			if err != nil || !ok {
				return err
			}
			tables = append(tables, quoteIdent(db)+"."+quoteIdent(name))
			return nil
		})
	})
	if err != nil {
		return nil, ErrInternal.Wrap(err, "reading the SYNTHESIZE grants of '%s'@'%s'", user, host)
	}
	slices.Sort(dbs)
	slices.Sort(tables)
	lines := make([]string, 0, len(dbs)+len(tables))
	for _, on := range append(dbs, tables...) {
		lines = append(lines, "GRANT SYNTHESIZE ON "+on+" TO "+to)
	}
	return lines, nil
}

// Keeping grants with their accounts.

// grantsPersister wraps the persister of the users and grants blob: after
// the blob is stored, it deletes the SYNTHESIZE grants of accounts the
// blob no longer has. It runs under GMS's users-and-grants write lock, so
// it reads the accounts from the blob, not from the mysql database.
type grantsPersister struct {
	inner mysql_db.MySQLDbPersistence
	e     *Engine
}

// Persist implements mysql_db.MySQLDbPersistence.
func (p grantsPersister) Persist(ctx *sql.Context, data []byte) error {
	if err := p.inner.Persist(ctx, data); err != nil {
		return err
	}
	accounts, err := blobAccounts(data)
	if err != nil {
		return ErrGrants.Wrap(err, "reading the accounts after a change of users")
	}
	return p.e.pruneGrants(ctx, accounts)
}

// watchAccounts makes dropped accounts lose their SYNTHESIZE grants, now
// and after every later change of users. It runs after the users are
// loaded, before the server accepts connections.
func (e *Engine) watchAccounts(ctx context.Context) error {
	if e.dp.cat == nil {
		return nil
	}
	mdb := e.sqle.Analyzer.Catalog.MySQLDb
	accounts := make(map[string]bool)
	rd := mdb.Reader()
	rd.VisitUsers(func(u *mysql_db.User) { accounts[accountKey(u.User, u.Host)] = true })
	rd.Close()
	if err := e.pruneGrants(ctx, accounts); err != nil {
		return err
	}
	if err := e.pruneDatabaseGrants(ctx); err != nil {
		return err
	}
	mdb.SetPersister(grantsPersister{inner: e.store, e: e})
	return nil
}

// accountKey identifies an account in a set of accounts.
func accountKey(user, host string) string { return user + "\x00" + host }

// blobAccounts returns the accounts of a users-and-grants blob, as written
// by mysql_db.MySQLDb.Persist.
func blobAccounts(data []byte) (accounts map[string]bool, err error) {
	defer func() {
		if recover() != nil {
			err = fmt.Errorf("malformed users and grants blob")
		}
	}()
	accounts = make(map[string]bool)
	db := serial.GetRootAsMySQLDb(data, 0)
	var u serial.User
	for i := range db.UserLength() {
		if db.User(&u, i) {
			accounts[accountKey(string(u.User()), string(u.Host()))] = true
		}
	}
	for i := range db.SuperUserLength() {
		if db.SuperUser(&u, i) {
			accounts[accountKey(string(u.User()), string(u.Host()))] = true
		}
	}
	return accounts, nil
}

// pruneGrants deletes the SYNTHESIZE grants of accounts not in accounts.
func (e *Engine) pruneGrants(ctx context.Context, accounts map[string]bool) error {
	stale := map[string][][]byte{}
	err := e.dp.cat.View(ctx, func(tx *catalog.Tx) error {
		err := tx.ForEach(grantsBucket, func(k, _ []byte) error {
			if user, host, ok := splitGrantKey(k); !ok || !accounts[accountKey(user, host)] {
				stale[grantsBucket] = append(stale[grantsBucket], k)
			}
			return nil
		})
		if err != nil {
			return err
		}
		return tx.ForEach(dbGrantsBucket, func(k, _ []byte) error {
			if _, user, host, ok := splitDBGrantKey(k); !ok || !accounts[accountKey(user, host)] {
				stale[dbGrantsBucket] = append(stale[dbGrantsBucket], k)
			}
			return nil
		})
	})
	if err == nil {
		err = e.deleteGrants(ctx, stale)
	}
	if err != nil {
		return ErrGrants.Wrap(err, "deleting the SYNTHESIZE grants of dropped accounts")
	}
	return nil
}

// deleteGrants deletes the given keys of each bucket in one transaction.
func (e *Engine) deleteGrants(ctx context.Context, keys map[string][][]byte) error {
	n := 0
	for _, ks := range keys {
		n += len(ks)
	}
	if n == 0 {
		return nil
	}
	return e.dp.cat.Update(ctx, func(tx *catalog.Tx) error {
		for bucket, ks := range keys {
			for _, k := range ks {
				if err := tx.Delete(bucket, k); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// Keeping database grants with their databases.

// dropDatabaseGrants deletes the SYNTHESIZE grants on the tables of
// database db, after DROP DATABASE (or, at start-up, when db no longer
// exists). Grants on single tables go with the tables' IDs.
func (e *Engine) dropDatabaseGrants(ctx context.Context, db string) error {
	if e.dp.cat == nil {
		return nil
	}
	prefix := append([]byte(strings.ToLower(db)), 0)
	var keys [][]byte
	err := e.dp.cat.View(ctx, func(tx *catalog.Tx) error {
		return tx.ForEachPrefix(dbGrantsBucket, prefix, func(k, _ []byte) error {
			keys = append(keys, k)
			return nil
		})
	})
	if err == nil {
		err = e.deleteGrants(ctx, map[string][][]byte{dbGrantsBucket: keys})
	}
	if err != nil {
		return ErrGrants.Wrap(err, "deleting the SYNTHESIZE grants on database %s", quoteIdent(db))
	}
	return nil
}

// pruneDatabaseGrants deletes the database grants whose database no longer
// exists (the server stopped between a DROP DATABASE and the deletion).
func (e *Engine) pruneDatabaseGrants(ctx context.Context) error {
	dbs := map[string]bool{}
	err := e.dp.cat.View(ctx, func(tx *catalog.Tx) error {
		return tx.ForEach(dbGrantsBucket, func(k, _ []byte) error {
			if db, _, _, ok := splitDBGrantKey(k); ok {
				dbs[db] = true
			}
			return nil
		})
	})
	if err != nil {
		return ErrGrants.Wrap(err, "reading the SYNTHESIZE grants on databases")
	}
	for db := range dbs {
		_, ok, err := e.dp.cat.DatabaseName(db)
		if err != nil {
			return ErrGrants.Wrap(err, "looking up database %s", quoteIdent(db))
		}
		if !ok {
			if err := e.dropDatabaseGrants(ctx, db); err != nil {
				return err
			}
		}
	}
	return nil
}
