package engine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dolthub/vitess/go/mysql"
)

// TestSetPublic: only an owner declares a table public; the declaration
// lets every account read it and SET NOT PUBLIC takes exactly that back;
// it survives a restart; the private source stays unreadable throughout.
func TestSetPublic(t *testing.T) {
	f := newDPFixture(t)
	for _, q := range []string{
		"CREATE TABLE raw.pub (id INT PRIMARY KEY, color ENUM('red', 'green', 'blue') NOT NULL, age INT NOT NULL)",
		"INSERT INTO raw.pub VALUES (1, 'red', 30), (2, 'green', 50)",
		"GRANT SELECT ON raw.pub TO owner WITH GRANT OPTION",
		"CREATE USER reader IDENTIFIED BY 'rpw'",
		"GRANT SELECT ON raw.pub TO reader",
	} {
		f.mustExec("root", q)
	}
	const count = "SELECT COUNT(*) FROM raw.pub"
	f.wantDenied("analyst", count)
	f.wantCode("analyst", "ALTER TABLE raw.pub SET PUBLIC", mysql.ERNoSuchTable)
	f.wantCode("owner", "ALTER TABLE raw.pub SET PUBLIC", 0)
	f.wantCode("owner", "ALTER TABLE raw.pub SET PUBLIC", 0) // idempotent
	for _, u := range []string{"analyst", "stranger", "reader", "owner"} {
		if rows := f.mustExec(u, count); toInt(rows[0][0]) != 2 {
			t.Errorf("%s counts %v rows of the public table", u, rows[0][0])
		}
	}
	f.wantDenied("analyst", "SELECT COUNT(*) FROM raw.t")

	// An account created later reads it once the owner declares it again.
	f.mustExec("root", "CREATE USER late IDENTIFIED BY 'lpw'")
	f.wantDenied("late", count)
	f.reopen()
	f.wantCode("owner", "ALTER TABLE raw.pub SET PUBLIC", 0)
	f.wantCode("late", count, 0)

	// SET NOT PUBLIC revokes what SET PUBLIC granted, nothing else.
	f.wantCode("owner", "ALTER TABLE raw.pub SET NOT PUBLIC", 0)
	f.wantDenied("analyst", count)
	f.wantDenied("late", count)
	f.wantCode("reader", count, 0)
	f.wantCode("owner", count, 0)
	f.wantCode("owner", "ALTER TABLE raw.pub SET NOT PUBLIC", 0) // idempotent
}

// TestPublicOption: PUBLIC = db.t is validated before anything is charged.
func TestPublicOption(t *testing.T) {
	f := newDPFixture(t)
	for _, q := range []string{
		"CREATE TABLE raw.pub (id INT PRIMARY KEY, color ENUM('red', 'green', 'blue') NOT NULL, age INT NOT NULL)",
		"GRANT SELECT ON raw.pub TO owner WITH GRANT OPTION",
		"CREATE DATABASE work",
		"GRANT ALL ON work.* TO owner",
		"GRANT ALL ON work.* TO analyst",
	} {
		f.mustExec("root", q)
	}
	f.mustExec("owner", "SET PRIVACY BUDGET FOR raw.t WITH EPSILON = 1, DELTA = 1e-6")
	f.mustExec("owner", "GRANT SYNTHESIZE ON raw.t TO analyst")
	stmt := "CREATE SYNTHETIC TABLE work.s FROM raw.t USING aim WITH EPSILON = 0.5, PUBLIC = raw.pub WORKLOAD ALL 1-WAY"
	for _, tt := range []struct {
		user, query, want string
	}{
		{"owner", stmt, "takes no public data"},
		{"owner", strings.Replace(stmt, "raw.pub", "'raw.pub'", 1), "expected table name"},
	} {
		_, err := f.exec(tt.user, tt.query)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %s: %v, want an error containing %q", tt.user, tt.query, err, tt.want)
		}
	}
	rows := f.mustExec("owner", "SHOW PRIVACY LEDGER FOR raw.t")
	for _, r := range rows {
		if strings.Contains(strings.ToLower(strings.Join(strings.Fields(fmtRow(r)), " ")), "aim") {
			t.Errorf("ledger has an entry of a refused statement: %v", r)
		}
	}
}

// wantDenied checks that q fails for user with an access-denied error.
func (f *dpFixture) wantDenied(user, q string) {
	f.t.Helper()
	if _, err := f.exec(user, q); err == nil || !strings.Contains(err.Error(), "Access denied") {
		f.t.Errorf("%s: %s: %v, want access denied", user, q, err)
	}
}

func fmtRow(r []any) string { return fmt.Sprint(r...) }
