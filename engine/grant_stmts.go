package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/mysql_db"
	"github.com/dolthub/go-mysql-server/sql/mysql_db/serial"

	"github.com/dpsql/dpsql/catalog"
	"github.com/dpsql/dpsql/engine/dpparse"
)

// This file holds the SYNTHESIZE privilege:
//
//	GRANT SYNTHESIZE ON t TO user[@host]     CALL dpsql_grant_synthesize('t', 'user'[, 'host'])
//	REVOKE SYNTHESIZE ON t FROM user[@host]  CALL dpsql_revoke_synthesize('t', 'user'[, 'host'])
//
// SYNTHESIZE lets an analyst run the DP statements on a raw table (see
// access.go) without any SELECT on it. Only an owner of the table may grant
// or revoke it, to an existing account.
//
// Grants live in the catalog's metadata bucket grantsBucket, keyed by the
// table's stable ID (8 bytes, big-endian), the user, a 0 byte and the host,
// so a table dropped and re-created under the same name starts with no
// grants. A grant to user@host applies to a session authenticated as that
// account, and a grant to user@'%' to every account of that user, as MySQL
// matches hosts.
//
// Grants follow their account: when an account is dropped its SYNTHESIZE
// grants are deleted, so a new account created later under the
// same name does not inherit them. The engine watches every change of the
// users and grants blob (grantsPersister) and also prunes at start-up, in
// case the server stopped between the two writes.
const grantsBucket = "dp_synthesize_grants"

// grantRecord is the stored form of one SYNTHESIZE grant.
type grantRecord struct {
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

// splitGrantKey returns the account of a grant key.
func splitGrantKey(k []byte) (user, host string, ok bool) {
	if len(k) < 9 {
		return "", "", false
	}
	u, h, ok := bytes.Cut(k[8:], []byte{0})
	return string(u), string(h), ok
}

// hasSynthesizeGrant reports whether the session's account holds
// SYNTHESIZE on t, directly or through a grant to user@'%'.
func (e *Engine) hasSynthesizeGrant(ctx *sql.Context, t tableRef) (bool, error) {
	if e.dp.cat == nil {
		return false, nil
	}
	user, host := e.sessionAccount(ctx)
	found := false
	err := e.dp.cat.View(ctx, func(tx *catalog.Tx) error {
		for _, h := range []string{host, "%"} {
			v, err := tx.Get(grantsBucket, grantKey(t.ID, user, h))
			if err != nil {
				return err
			}
			if v != nil {
				found = true
				return nil
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

// grantSynthesizeNode returns the node of GRANT SYNTHESIZE.
func (e *Engine) grantSynthesizeNode(s *dpparse.GrantSynthesize) *dpNode {
	return okNode(s, func(ctx *sql.Context) error { return e.grantSynthesize(ctx, s) })
}

// grantSynthesize records a SYNTHESIZE grant. Granting it again is not an
// error (as in MySQL).
func (e *Engine) grantSynthesize(ctx *sql.Context, s *dpparse.GrantSynthesize) error {
	t, err := e.openTable(ctx, "GRANT SYNTHESIZE", s.Table, roleOwner)
	if err != nil {
		return err
	}
	user, host := s.Account.User, s.Account.Host
	if strings.IndexByte(user, 0) >= 0 || !e.accountExists(user, host) {
		return ErrNoSuchUser.New("account %s does not exist: create it first with CREATE USER", s.Account)
	}
	rec, err := json.Marshal(grantRecord{User: user, Host: host, GrantedBy: e.ledgerUser(ctx), GrantedAt: time.Now().UTC()})
	if err != nil {
		return ErrInternal.Wrap(err, "encoding the grant")
	}
	err = e.dp.cat.Update(ctx, func(tx *catalog.Tx) error {
		return tx.Put(grantsBucket, grantKey(t.ID, user, host), rec)
	})
	if err != nil {
		return ErrInternal.Wrap(err, "storing SYNTHESIZE on %s for %s", t, s.Account)
	}
	return nil
}

// revokeSynthesizeNode returns the node of REVOKE SYNTHESIZE.
func (e *Engine) revokeSynthesizeNode(s *dpparse.RevokeSynthesize) *dpNode {
	return okNode(s, func(ctx *sql.Context) error { return e.revokeSynthesize(ctx, s) })
}

// revokeSynthesize deletes a SYNTHESIZE grant; revoking a grant that does
// not exist is ErrNoSuchGrant, as in MySQL. Budget already spent by the
// grantee stays spent, and synthetic tables they created stay theirs.
func (e *Engine) revokeSynthesize(ctx *sql.Context, s *dpparse.RevokeSynthesize) error {
	t, err := e.openTable(ctx, "REVOKE SYNTHESIZE", s.Table, roleOwner)
	if err != nil {
		return err
	}
	key := grantKey(t.ID, s.Account.User, s.Account.Host)
	err = e.dp.cat.Update(ctx, func(tx *catalog.Tx) error {
		v, err := tx.Get(grantsBucket, key)
		if err != nil {
			return err
		}
		if v == nil {
			return ErrNoSuchGrant.New("there is no SYNTHESIZE grant on %s for %s", t, s.Account)
		}
		return tx.Delete(grantsBucket, key)
	})
	if err != nil {
		var ee *Error
		if errors.As(err, &ee) {
			return err
		}
		return ErrInternal.Wrap(err, "revoking SYNTHESIZE on %s from %s", t, s.Account)
	}
	return nil
}

// grantProcedures are the CALL twins of GRANT and REVOKE SYNTHESIZE, with
// the host defaulting to '%' as in the statements.
func (e *Engine) grantProcedures() []sql.ExternalStoredProcedureDetails {
	var procs []sql.ExternalStoredProcedureDetails
	for _, p := range []struct {
		name string
		node func(dpparse.TableName, dpparse.Account) *dpNode
	}{
		{"dpsql_grant_synthesize", func(t dpparse.TableName, a dpparse.Account) *dpNode {
			return e.grantSynthesizeNode(&dpparse.GrantSynthesize{Table: t, Account: a})
		}},
		{"dpsql_revoke_synthesize", func(t dpparse.TableName, a dpparse.Account) *dpNode {
			return e.revokeSynthesizeNode(&dpparse.RevokeSynthesize{Table: t, Account: a})
		}},
	} {
		call := func(ctx *sql.Context, table, user, host string) (sql.RowIter, error) {
			tn, err := parseTableArg(table)
			if err != nil {
				return procResult(nil, err)
			}
			return procResult(p.node(tn, dpparse.Account{User: user, Host: host}).run(ctx))
		}
		procs = append(procs,
			sql.ExternalStoredProcedureDetails{Name: p.name, Schema: okSchema, Function: call},
			sql.ExternalStoredProcedureDetails{Name: p.name, Schema: okSchema,
				Function: func(ctx *sql.Context, table, user string) (sql.RowIter, error) { return call(ctx, table, user, "%") }},
		)
	}
	return procs
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
	var stale [][]byte
	err := e.dp.cat.View(ctx, func(tx *catalog.Tx) error {
		return tx.ForEach(grantsBucket, func(k, _ []byte) error {
			if user, host, ok := splitGrantKey(k); !ok || !accounts[accountKey(user, host)] {
				stale = append(stale, k)
			}
			return nil
		})
	})
	if err == nil && len(stale) > 0 {
		err = e.dp.cat.Update(ctx, func(tx *catalog.Tx) error {
			for _, k := range stale {
				if err := tx.Delete(grantsBucket, k); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err != nil {
		return ErrGrants.Wrap(err, "deleting the SYNTHESIZE grants of dropped accounts")
	}
	return nil
}
