package engine

import (
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/hex"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/mysql_db"
)

const (
	// RootUser is the administrator account, root@localhost.
	RootUser = "root"
	// InternalUser is the locked superuser the engine runs its own
	// privileged reads as. It cannot log in.
	InternalUser = "dp_internal"
	// localhost is the host of root and dp_internal; GMS treats 127.0.0.1
	// and ::1 as localhost.
	localhost = "localhost"
)

// loadUsers loads the stored users and grants, turns authentication on,
// and makes sure root and dp_internal exist. Every change is persisted
// before the server accepts a connection.
func (e *Engine) loadUsers(ctx context.Context) error {
	mdb := e.sqle.Analyzer.Catalog.MySQLDb
	sctx := sql.NewContext(ctx)
	blob, err := e.store.LoadGrants()
	if err != nil {
		return ErrGrants.Wrap(err, "loading users and grants")
	}
	if err := mdb.LoadData(sctx, blob); err != nil {
		return ErrGrants.Wrap(err, "decoding users and grants")
	}
	mdb.SetPersister(e.store)
	// Authentication is always on, even with no stored users yet.
	mdb.SetEnabled(true)

	ed := mdb.Editor()
	defer ed.Close()
	changed := false

	root := mdb.GetUser(ed, RootUser, localhost, false)
	switch {
	case root == nil:
		pw := e.cfg.RootPassword
		if pw == "" {
			pw = rand.Text() // 26 base32 characters, 128 bits
			e.log.Warn("generated root password; it is shown only this once, store it safely",
				"user", RootUser+"@"+localhost, "password", pw)
		}
		mdb.AddSuperUser(ed, RootUser, localhost, pw)
		changed = true
	case e.cfg.RootPassword != "" && root.AuthString != nativePasswordHash(e.cfg.RootPassword):
		u := *root
		u.AuthString = nativePasswordHash(e.cfg.RootPassword)
		u.Plugin = string(mysql_db.DefaultAuthMethod)
		// The user table is a multimap: remove the old entry first.
		ed.RemoveUser(mysql_db.UserPrimaryKey{Host: root.Host, User: root.User})
		ed.PutUser(&u)
		e.log.Info("root password replaced from configuration")
		changed = true
	}

	if u := mdb.GetUser(ed, InternalUser, localhost, false); u == nil || !u.Locked || !u.IsSuperUser {
		mdb.AddLockedSuperUser(ed, InternalUser, localhost, "")
		changed = true
	}
	if changed {
		if err := mdb.Persist(sctx, ed); err != nil {
			return ErrGrants.Wrap(err, "saving users and grants")
		}
	}
	return nil
}

// nativePasswordHash is the mysql_native_password hash GMS stores:
// "*" + upper hex of SHA1(SHA1(password)).
func nativePasswordHash(pw string) string {
	s1 := sha1.Sum([]byte(pw))
	s2 := sha1.Sum(s1[:])
	return "*" + strings.ToUpper(hex.EncodeToString(s2[:]))
}
