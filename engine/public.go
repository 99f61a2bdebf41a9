package engine

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/mysql_db"

	"github.com/dpsql/dpsql/catalog"
	"github.com/dpsql/dpsql/engine/dpparse"
	"github.com/dpsql/dpsql/synth/pgm"
)

// Public tables:
//
//	ALTER TABLE t SET PUBLIC        the owner declares t's rows public
//	ALTER TABLE t SET NOT PUBLIC    and takes the declaration back
//	CREATE SYNTHETIC TABLE … USING pmw_pub WITH EPSILON = e, PUBLIC = db.pub
//
// A public table is one whose rows its owner has declared free to read:
// public-data mechanisms (synth.PublicMechanism) read it whole, at no
// privacy cost, beside the private source they are charged to. The
// declaration is the owner's, and only a declared table may serve as
// PUBLIC data: otherwise a user could pass a private table as "public" and
// have it read outside the accounting.
//
// Declaring a table public also lets every account read it: SET PUBLIC
// grants SELECT on it to every existing account that lacks it (MySQL's own
// privileges, so the table is reachable and visible to them like any table
// they may read) and records those accounts; SET NOT PUBLIC revokes exactly
// those grants. Accounts created later get SELECT when the owner runs SET
// PUBLIC again (it is idempotent) or by an ordinary GRANT.
//
// The declaration lives in the catalog's metadata bucket publicBucket,
// keyed by the table's stable ID (8 bytes, big-endian), so a table dropped
// and re-created under the same name is not public.

const publicBucket = "dp_public"

// publicRecord is the value of a public table's declaration.
type publicRecord struct {
	User     string    `json:"user"`
	Declared time.Time `json:"declared"`
	// Granted are the accounts (user@host keys, accountKey) SET PUBLIC
	// granted SELECT to.
	Granted []string `json:"granted,omitempty"`
}

func publicKey(id uint64) []byte { return binary.BigEndian.AppendUint64(nil, id) }

// setPublicNode returns the node of ALTER TABLE … SET [NOT] PUBLIC.
func (e *Engine) setPublicNode(s *dpparse.SetPublic) *dpNode {
	return okNode(s, func(ctx *sql.Context) error {
		t, err := e.openTable(ctx, "ALTER TABLE … SET PUBLIC", s.Table, roleOwner)
		if err != nil {
			return err
		}
		if t.Table.Federated() {
			return ErrUnsupported.New("%s is FEDERATED: only a local table can be declared public (copy the public rows into one with CREATE TABLE … and INSERT … SELECT)", t)
		}
		if s.Public {
			return e.declarePublic(ctx, t)
		}
		return e.undeclarePublic(ctx, t)
	})
}

// publicRecordOf reads t's declaration (nil if t is not public).
func (e *Engine) publicRecordOf(ctx *sql.Context, t tableRef) (*publicRecord, error) {
	var rec *publicRecord
	err := e.dp.cat.View(ctx, func(tx *catalog.Tx) error {
		v, err := tx.Get(publicBucket, publicKey(t.ID))
		if err != nil || v == nil {
			return err
		}
		rec = new(publicRecord)
		return json.Unmarshal(v, rec)
	})
	if err != nil {
		return nil, ErrInternal.Wrap(err, "reading whether %s is public", t)
	}
	return rec, nil
}

// declarePublic records t as public and grants SELECT on it to every
// account that lacks it.
func (e *Engine) declarePublic(ctx *sql.Context, t tableRef) error {
	rec, err := e.publicRecordOf(ctx, t)
	if err != nil {
		return err
	}
	if rec == nil {
		rec = &publicRecord{User: e.ledgerUser(ctx), Declared: time.Now().UTC()}
	}
	// Record first: a crash after the record and before the grants leaves
	// a public table some accounts cannot read yet, never a grant that SET
	// NOT PUBLIC would not know to revoke.
	need := e.accountsWithoutSelect(t)
	for _, a := range need {
		if !slices.Contains(rec.Granted, a) {
			rec.Granted = append(rec.Granted, a)
		}
	}
	if err := e.putPublic(ctx, t, rec); err != nil {
		return err
	}
	for _, a := range need {
		user, host, _ := strings.Cut(a, "\x00")
		q := fmt.Sprintf("GRANT SELECT ON %s.%s TO %s@%s", quoteIdent(t.DB), quoteIdent(t.Name),
			dpparse.QuoteString(user), dpparse.QuoteString(host))
		if _, _, err := e.QueryInternal(ctx, "", q); err != nil {
			return ErrInternal.Wrap(err, "granting SELECT on the public table %s to '%s'@'%s'", t, user, host)
		}
	}
	return nil
}

// undeclarePublic revokes the grants SET PUBLIC made and deletes t's
// declaration.
func (e *Engine) undeclarePublic(ctx *sql.Context, t tableRef) error {
	rec, err := e.publicRecordOf(ctx, t)
	if err != nil || rec == nil {
		return err
	}
	for _, a := range rec.Granted {
		user, host, _ := strings.Cut(a, "\x00")
		if !e.accountExists(user, host) {
			continue
		}
		q := fmt.Sprintf("REVOKE SELECT ON %s.%s FROM %s@%s", quoteIdent(t.DB), quoteIdent(t.Name),
			dpparse.QuoteString(user), dpparse.QuoteString(host))
		if _, _, err := e.QueryInternal(ctx, "", q); err != nil {
			return ErrInternal.Wrap(err, "revoking SELECT on %s from '%s'@'%s'", t, user, host)
		}
	}
	err = e.dp.cat.Update(ctx, func(tx *catalog.Tx) error { return tx.Delete(publicBucket, publicKey(t.ID)) })
	if err != nil {
		return ErrInternal.Wrap(err, "deleting the public declaration of %s", t)
	}
	return nil
}

func (e *Engine) putPublic(ctx *sql.Context, t tableRef, rec *publicRecord) error {
	v, err := json.Marshal(rec)
	if err != nil {
		return ErrInternal.Wrap(err, "encoding the public declaration of %s", t)
	}
	err = e.dp.cat.Update(ctx, func(tx *catalog.Tx) error { return tx.Put(publicBucket, publicKey(t.ID), v) })
	if err != nil {
		return ErrInternal.Wrap(err, "declaring %s public", t)
	}
	return nil
}

// accountsWithoutSelect lists the accounts (accountKey form) that may not
// read t: neither superusers, nor the internal account, nor roles, nor
// holders of SELECT on t, its database or globally.
func (e *Engine) accountsWithoutSelect(t tableRef) []string {
	rd := e.sqle.Analyzer.Catalog.MySQLDb.Reader()
	defer rd.Close()
	var out []string
	rd.VisitUsers(func(u *mysql_db.User) {
		if u.IsRole || u.IsSuperUser || u.User == InternalUser {
			return
		}
		ps := u.PrivilegeSet
		if ps.Has(sql.PrivilegeType_Select) {
			return
		}
		db := ps.Database(t.DB)
		if db.Has(sql.PrivilegeType_Select) || db.Table(t.Name).Has(sql.PrivilegeType_Select) {
			return
		}
		out = append(out, accountKey(u.User, u.Host))
	})
	slices.Sort(out)
	return out
}

// publicData resolves the PUBLIC = db.t option of r: the table must be
// declared public, and hold every column r synthesizes, with the same type;
// it is encoded over r's domain (values outside it follow the domain's
// out-of-domain rule, as the source's do). A table that is not public is
// reported as missing to a user who does not own it.
func (e *Engine) publicData(ctx *sql.Context, r *synthRequest) (*pgm.Dataset, error) {
	t, err := e.resolveTable(ctx, r.public)
	if err != nil {
		return nil, err
	}
	r.public = dpparse.TableName{DB: t.DB, Name: t.Name}
	rec, err := e.publicRecordOf(ctx, t)
	if err != nil {
		return nil, err
	}
	if rec == nil {
		if !e.isOwner(ctx, t) {
			return nil, noSuchTable(t.DB, t.Name)
		}
		return nil, ErrAccessDenied.New("PUBLIC = %s: the table is not declared public; its rows would be read outside the privacy accounting. If they are public, run ALTER TABLE %s SET PUBLIC first", t, t)
	}
	if t.ID == r.src.ID {
		return nil, ErrBadParameter.New("PUBLIC = %s names the source itself", t)
	}
	srcSch, pubSch := r.src.Table.Schema(), t.Table.Schema()
	for i := range r.dom.Columns {
		name := r.dom.Columns[i].Name()
		j := pubSch.IndexOfColName(name)
		if j < 0 {
			return nil, ErrDomain.New("PUBLIC = %s has no column %s: the public table needs every column of %s that is synthesized", t, quoteIdent(name), r.src)
		}
		sc := srcSch[srcSch.IndexOfColName(name)]
		if !pubSch[j].Type.Equals(sc.Type) {
			return nil, ErrDomain.New("PUBLIC = %s: column %s is %s there but %s in %s; the public table needs the source's column types", t, quoteIdent(name), pubSch[j].Type, sc.Type, r.src)
		}
	}
	ds, err := encodeTable(ctx, e.dp.cat, t, r.dom)
	if err != nil {
		return nil, classify(ctx, err, ErrInternal)
	}
	return ds, nil
}
