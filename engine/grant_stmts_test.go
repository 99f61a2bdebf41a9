package engine

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/dolthub/vitess/go/mysql"

	"github.com/dpsql/dpsql/catalog"
)

func TestGrantSynthesize(t *testing.T) {
	f := newDPFixture(t)
	f.mustExec("owner", "SET PRIVACY BUDGET FOR raw.t WITH EPSILON = 1, DELTA = 1e-6")
	ref := f.tableRef("raw", "t")
	may := func(user string) bool {
		t.Helper()
		ok, err := f.e.canSynthesize(f.ctx(user), ref)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if may("analyst") || may("stranger") || !may("owner") || !may("root") {
		t.Fatal("before any grant only owner and root may synthesize")
	}
	f.wantCode("analyst", "SHOW DOMAIN FOR raw.t", mysql.ERNoSuchTable)

	// Who may grant, and to whom.
	f.wantCode("stranger", "GRANT SYNTHESIZE ON raw.t TO stranger", mysql.ERNoSuchTable)
	f.wantCode("owner", "GRANT SYNTHESIZE ON raw.t TO nobody", 1410)
	f.wantCode("owner", "GRANT SYNTHESIZE ON raw.t TO analyst@localhost", 1410) // only analyst@'%' exists
	f.wantCode("owner", "GRANT SYNTHESIZE ON raw.missing TO analyst", mysql.ERNoSuchTable)
	f.wantCode("owner", "GRANT SYNTHESIZE ON raw.t TO analyst", 0)
	f.wantCode("owner", "GRANT SYNTHESIZE ON raw.t TO 'analyst'@'%'", 0) // again: no error
	f.wantCode("analyst", "GRANT SYNTHESIZE ON raw.t TO stranger", 1142)

	if !may("analyst") || may("stranger") {
		t.Fatal("after the grant analyst, and only analyst, may synthesize")
	}
	// What the grant gives: the DP statements, but no SELECT and no
	// owner's statements.
	f.wantCode("analyst", "SHOW DOMAIN FOR raw.t", 0)
	f.wantCode("analyst", "SHOW PRIVACY BUDGET FOR raw.t", 0)
	f.wantCode("analyst", "SHOW PRIVACY LEDGER FOR raw.t", 0)
	if rows := f.mustExec("analyst", "SHOW PRIVACY BUDGET"); len(rows) != 1 {
		t.Errorf("analyst's budgets = %v, want raw.t", rows)
	}
	f.wantCode("analyst", "SET PRIVACY BUDGET FOR raw.t WITH EPSILON = 9, DELTA = 1e-6", 1142)
	f.wantCode("analyst", "REVOKE SYNTHESIZE ON raw.t FROM analyst", 1142)
	if _, err := f.exec("analyst", "SELECT * FROM raw.t"); err == nil {
		t.Error("SYNTHESIZE gave SELECT on the raw table")
	}
	if _, err := f.exec("analyst", "SELECT COUNT(*) FROM raw.t"); err == nil {
		t.Error("SYNTHESIZE gave COUNT(*) on the raw table")
	}

	f.wantCode("owner", "REVOKE SYNTHESIZE ON raw.t FROM analyst", 0)
	f.wantCode("owner", "REVOKE SYNTHESIZE ON raw.t FROM analyst", mysql.ERNonExistingGrant)
	f.wantCode("owner", "REVOKE SYNTHESIZE ON raw.t FROM nobody", mysql.ERNonExistingGrant)
	if may("analyst") {
		t.Fatal("analyst may still synthesize after REVOKE")
	}
	f.wantCode("analyst", "SHOW PRIVACY BUDGET FOR raw.t", mysql.ERNoSuchTable)
}

// TestGrantHostMatching: a grant to user@host applies to the session
// authenticated as that account; a grant to user@'%' to every account of
// the user.
func TestGrantHostMatching(t *testing.T) {
	f := newDPFixture(t)
	f.mustExec("root", "CREATE USER bob@localhost IDENTIFIED BY 'x'")
	f.mustExec("root", "CREATE USER bob IDENTIFIED BY 'y'")
	ref := f.tableRef("raw", "t")
	may := func(host string) bool {
		t.Helper()
		f.ids++
		ok, err := f.e.canSynthesize(sessionCtx(f.e, f.ids, "bob", host), ref)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	tests := []struct {
		stmt            string
		local, external bool // bob from localhost (bob@localhost), from 10.1.2.3 (bob@%)
	}{
		{"GRANT SYNTHESIZE ON raw.t TO bob@localhost", true, false},
		{"REVOKE SYNTHESIZE ON raw.t FROM bob@localhost", false, false},
		{"GRANT SYNTHESIZE ON raw.t TO bob", true, true},
		{"GRANT SYNTHESIZE ON raw.t TO bob@localhost", true, true},
		{"REVOKE SYNTHESIZE ON raw.t FROM bob", true, false},
	}
	for _, tt := range tests {
		f.mustExec("owner", tt.stmt)
		if local, ext := may("127.0.0.1"), may("10.1.2.3"); local != tt.local || ext != tt.external {
			t.Errorf("after %s: localhost %v, external %v; want %v, %v", tt.stmt, local, ext, tt.local, tt.external)
		}
	}
}

// TestGrantsFollowAccounts: dropping an account deletes its grants, so a
// new account under the same name starts without them.
func TestGrantsFollowAccounts(t *testing.T) {
	f := newDPFixture(t)
	ref := f.tableRef("raw", "t")
	f.mustExec("owner", "GRANT SYNTHESIZE ON raw.t TO analyst")
	f.mustExec("owner", "GRANT SYNTHESIZE ON raw.t TO stranger")
	f.mustExec("root", "DROP USER analyst")
	f.mustExec("root", "CREATE USER analyst IDENTIFIED BY 'new'")
	f.wantCode("analyst", "SHOW DOMAIN FOR raw.t", mysql.ERNoSuchTable)
	f.wantCode("stranger", "SHOW DOMAIN FOR raw.t", 0)

	// A grant left behind (the server stopped between the two writes) is
	// pruned at start-up.
	rec, _ := json.Marshal(grantRecord{User: "ghost", Host: "%"})
	err := f.e.dp.cat.Update(context.Background(), func(tx *catalog.Tx) error {
		return tx.Put(grantsBucket, grantKey(ref.ID, "ghost", "%"), rec)
	})
	if err != nil {
		t.Fatal(err)
	}
	f.reopen()
	f.mustExec("root", "CREATE USER ghost IDENTIFIED BY 'boo'")
	f.wantCode("ghost", "SHOW DOMAIN FOR raw.t", mysql.ERNoSuchTable)
	var left []string
	f.e.dp.cat.View(context.Background(), func(tx *catalog.Tx) error {
		return tx.ForEach(grantsBucket, func(k, v []byte) error {
			u, h, _ := splitGrantKey(k)
			left = append(left, u+"@"+h)
			return nil
		})
	})
	if len(left) != 1 || left[0] != "stranger@%" {
		t.Errorf("grants left = %v, want stranger@%% only", left)
	}
}

func TestGrantPersistsAcrossRestart(t *testing.T) {
	f := newDPFixture(t)
	f.mustExec("owner", "GRANT SYNTHESIZE ON raw.t TO analyst")
	f.reopen()
	f.wantCode("analyst", "SHOW DOMAIN FOR raw.t", 0)
	f.mustExec("owner", "REVOKE SYNTHESIZE ON raw.t FROM analyst")
	f.reopen()
	f.wantCode("analyst", "SHOW DOMAIN FOR raw.t", mysql.ERNoSuchTable)
}

func TestGrantProcedures(t *testing.T) {
	f := newDPFixture(t)
	f.mustExec("root", "CREATE USER bob@localhost IDENTIFIED BY 'x'")
	f.mustExec("owner", "CALL dpsql_grant_synthesize('raw.t', 'analyst')")
	f.mustExec("owner", "CALL dpsql_grant_synthesize('raw.t', 'bob', 'localhost')")
	f.wantCode("owner", "CALL dpsql_grant_synthesize('raw.t', 'nobody')", 1410)
	f.wantCode("stranger", "CALL dpsql_grant_synthesize('raw.t', 'stranger')", mysql.ERNoSuchTable)
	f.wantCode("analyst", "SHOW DOMAIN FOR raw.t", 0)
	f.mustExec("owner", "CALL dpsql_revoke_synthesize('raw.t', 'analyst')")
	f.mustExec("owner", "CALL dpsql_revoke_synthesize('raw.t', 'bob', 'localhost')")
	f.wantCode("owner", "CALL dpsql_revoke_synthesize('raw.t', 'analyst', '%')", mysql.ERNonExistingGrant)
	f.wantCode("analyst", "SHOW DOMAIN FOR raw.t", mysql.ERNoSuchTable)
}

// TestCallNeedsNoExecute: users without EXECUTE may call the dpsql
// procedures (which check access themselves), not other procedures.
func TestCallNeedsNoExecute(t *testing.T) {
	f := newDPFixture(t)
	f.wantCode("stranger", "CALL dpsql_status()", 0)
	f.wantCode("stranger", "CALL dpsql_privacy_budget()", 0)
	if _, err := f.exec("stranger", "CALL not_dpsql()"); err == nil {
		t.Error("CALL of an unknown procedure succeeded")
	}
}

// TestDatabaseGrantLifecycle: a SYNTHESIZE grant on db.* is an owner's of
// the database to give, persists, follows its account and its database,
// and a mixed GRANT that is refused in part grants nothing.
func TestDatabaseGrantLifecycle(t *testing.T) {
	f := newDPFixture(t)
	// The table's owner does not own the database.
	f.wantCode("owner", "GRANT SYNTHESIZE ON raw.* TO analyst", mysql.ERDBAccessDenied)
	f.wantCode("stranger", "GRANT SYNTHESIZE ON nosuch.* TO analyst", mysql.ERDBAccessDenied)
	f.wantCode("root", "GRANT SYNTHESIZE ON nosuch.* TO analyst", mysql.ERBadDb)
	f.mustExec("root", "GRANT SYNTHESIZE ON raw.* TO analyst")
	f.mustExec("root", "GRANT SYNTHESIZE ON raw.* TO stranger")
	f.reopen()
	f.wantCode("analyst", "SHOW DOMAIN FOR raw.t", 0)
	f.mustExec("root", "CREATE TABLE raw.u (id INT PRIMARY KEY)")
	f.wantCode("analyst", "SHOW DOMAIN FOR raw.u", 0)

	// Dropped accounts lose it.
	f.mustExec("root", "DROP USER stranger")
	f.mustExec("root", "CREATE USER stranger IDENTIFIED BY 'new'")
	f.wantCode("stranger", "SHOW DOMAIN FOR raw.t", mysql.ERNoSuchTable)

	// The table's owner may not grant INSERT: nothing is granted.
	f.wantCode("owner", "GRANT INSERT, SYNTHESIZE ON raw.t TO stranger", 1105)
	f.wantCode("stranger", "SHOW DOMAIN FOR raw.t", mysql.ERNoSuchTable)
	f.mustExec("owner", "GRANT SELECT, SYNTHESIZE ON raw.t TO stranger")
	f.wantCode("stranger", "SELECT COUNT(*) FROM raw.t", 0)
	f.mustExec("owner", "REVOKE SELECT, SYNTHESIZE ON raw.t FROM stranger")
	f.wantCode("stranger", "SHOW DOMAIN FOR raw.t", mysql.ERNoSuchTable)

	// A dropped database takes its grants along, also when the server
	// stopped before deleting them.
	f.mustExec("root", "DROP DATABASE raw")
	f.mustExec("root", "CREATE DATABASE raw")
	f.mustExec("root", "CREATE TABLE raw.t (id INT PRIMARY KEY)")
	f.wantCode("analyst", "SHOW DOMAIN FOR raw.t", mysql.ERNoSuchTable)
	rec, _ := json.Marshal(grantRecord{DB: "gone", User: "analyst", Host: "%"})
	err := f.e.dp.cat.Update(context.Background(), func(tx *catalog.Tx) error {
		return tx.Put(dbGrantsBucket, dbGrantKey("gone", "analyst", "%"), rec)
	})
	if err != nil {
		t.Fatal(err)
	}
	f.reopen()
	n := 0
	f.e.dp.cat.View(context.Background(), func(tx *catalog.Tx) error {
		return tx.ForEach(dbGrantsBucket, func(k, v []byte) error { n++; return nil })
	})
	if n != 0 {
		t.Errorf("%d database grants left after their databases were dropped", n)
	}
}
