package main

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
)

// MySQL's non-reserved keywords as database, table and column names, and
// qualified names with no database selected, through go-sql-driver (no
// default database) and the mariadb CLI.

// firstDayKeywords are the names of the issue "A data team's first day".
var firstDayKeywords = []string{"work", "status", "data", "level", "value", "comment", "action", "names", "events", "account", "begin", "commit"}

// TestKeywordDatabaseNames: CREATE DATABASE, USE, DROP DATABASE (and
// tables, columns and qualified names in them) accept every keyword, as
// MySQL does, in text and prepared statements.
func TestKeywordDatabaseNames(t *testing.T) {
	s := startServer(t, t.TempDir())
	root := s.root()
	ctx := context.Background()
	for _, kw := range firstDayKeywords {
		mustExec(t, root,
			"CREATE DATABASE "+kw,
			"CREATE DATABASE IF NOT EXISTS "+kw,
			fmt.Sprintf("CREATE TABLE %s.t (a INT PRIMARY KEY, %s INT)", kw, kw),
			fmt.Sprintf("INSERT INTO %s.t VALUES (1, 2)", kw))
		// Prepared (go-sql-driver prepares a statement run with arguments).
		if _, err := root.Exec(fmt.Sprintf("INSERT INTO %s.t VALUES (?, ?)", kw), 3, 4); err != nil {
			t.Errorf("prepared INSERT INTO %s.t: %v", kw, err)
		}
		q := fmt.Sprintf("SELECT %s.t.%s FROM %s.t ORDER BY 1", kw, kw, kw)
		if got := queryStrings(t, root, q); fmt.Sprint(got) != "[[2] [4]]" {
			t.Errorf("%s = %v", q, got)
		}
		if got := preparedStrings(t, root, fmt.Sprintf("SELECT %s FROM %s.t WHERE a = ?", kw, kw), 3); fmt.Sprint(got) != "[[4]]" {
			t.Errorf("prepared SELECT from %s.t = %v", kw, got)
		}
		conn, err := root.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.ExecContext(ctx, "USE "+kw); err != nil {
			t.Errorf("USE %s: %v", kw, err)
		} else if db, err := connQuery(ctx, conn, "SELECT DATABASE()"); err != nil || db != "[["+kw+"]]" {
			t.Errorf("after USE %s, DATABASE() = %q, %v", kw, db, err)
		} else if n, err := connQuery(ctx, conn, "SELECT COUNT(*) FROM t"); err != nil || n != "[[2]]" {
			t.Errorf("unqualified t in %s: %q, %v", kw, n, err)
		}
		conn.Close()
		mustExec(t, root, "DROP DATABASE "+kw, "DROP DATABASE IF EXISTS "+kw)
		if got := queryStrings(t, root, "SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name = '"+kw+"'"); got[0][0] != "0" {
			t.Errorf("%s still exists after DROP DATABASE", kw)
		}
	}
	// A statement that is wrong for another reason keeps its error.
	wantMySQLError(t, root, 1105, "CREATE DATABSE work")
}

// TestKeywordDatabaseNamesCLI: the same in the mariadb CLI, whose USE
// (COM_INIT_DB) the server handles without the parser.
func TestKeywordDatabaseNamesCLI(t *testing.T) {
	s := startServer(t, t.TempDir())
	mariadbCLI(t)
	var script strings.Builder
	for _, kw := range firstDayKeywords {
		fmt.Fprintf(&script, "CREATE DATABASE %s; USE %s; CREATE TABLE t (%s INT); INSERT INTO %s.t VALUES (1); "+
			"SELECT DATABASE(), %s.t.%s FROM %s.t; DROP DATABASE %s;\n", kw, kw, kw, kw, kw, kw, kw, kw)
	}
	out, err := s.cli(t, "root", rootPassword, script.String())
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var want []string
	for _, kw := range firstDayKeywords {
		want = append(want, kw+"\t1")
	}
	if got := lines(out); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("CLI output:\n%s\nwant:\n%s", out, strings.Join(want, "\n"))
	}
}

// TestQualifiedNamesWithoutDatabase: DELETE FROM db.t, ANALYZE TABLE db.t
// and dp_marginal('db.syn', …) work with no database selected.
func TestQualifiedNamesWithoutDatabase(t *testing.T) {
	s := startServer(t, t.TempDir())
	root := s.root()
	setupPrepared(t, root)
	mustExec(t, root,
		"ALTER TABLE raw.t SET DOMAIN income BETWEEN 0 AND 1000 BINS 10", "ALTER TABLE raw.t SET DOMAIN city IN ('a', 'b', 'c')",
		"SET PRIVACY BUDGET FOR raw.t WITH EPSILON = 1, DELTA = 1e-9",
		"CREATE SYNTHETIC TABLE lab.a FROM raw.t USING aim WITH EPSILON = 0.5, SEED = 1, ROUNDS = 6, PGM_ITERS = 10, FINAL_ITERS = 50",
		"CREATE TABLE raw.scratch (a INT PRIMARY KEY)", "INSERT INTO raw.scratch VALUES (1), (2), (3)",
		"CREATE USER analyst IDENTIFIED BY 'apw'", "GRANT SELECT ON lab.* TO analyst")

	res, err := root.Exec("DELETE FROM raw.scratch")
	if n, _ := res.RowsAffected(); err != nil || n != 3 {
		t.Errorf("DELETE FROM raw.scratch: %d rows, %v", n, err)
	}
	if got := queryStrings(t, root, "SELECT COUNT(*) FROM raw.scratch"); got[0][0] != "0" {
		t.Errorf("raw.scratch after DELETE: %v", got)
	}
	if got := queryStrings(t, root, "ANALYZE TABLE raw.t, lab.a"); fmt.Sprint(got) != "[[t analyze status OK] [a analyze status OK]]" {
		t.Errorf("ANALYZE TABLE raw.t, lab.a = %v", got)
	}
	want := queryStrings(t, s.open("root", rootPassword, inDatabase("lab")), "SELECT * FROM dp_marginal('lab.a', 'sex')")
	if len(want) != 2 {
		t.Fatalf("dp_marginal with a current database: %v", want)
	}
	analyst := s.open("analyst", "apw")
	for _, u := range []struct {
		name string
		db   *sql.DB
	}{{"root", root}, {"analyst", analyst}} {
		got, err := tryQueryStrings(u.db, "SELECT * FROM dp_marginal('lab.a', 'sex')")
		if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: dp_marginal without a database = %v, %v; want %v", u.name, got, err, want)
		}
		// The statement leaves no database selected, and unqualified
		// names fail as without dp_marginal.
		if got, err := tryQueryStrings(u.db, "SELECT DATABASE()"); err != nil || got[0][0] != "NULL" {
			t.Errorf("%s: DATABASE() after dp_marginal = %v, %v", u.name, got, err)
		}
		_, plain := tryQueryStrings(u.db, "SELECT * FROM a")
		if _, err := tryQueryStrings(u.db, "SELECT * FROM dp_marginal('lab.a', 'sex') JOIN a"); err == nil || plain == nil || err.Error() != plain.Error() {
			t.Errorf("%s: an unqualified table beside dp_marginal: %v, want %v", u.name, err, plain)
		}
	}

	mariadbCLI(t)
	mustExec(t, root, "INSERT INTO raw.scratch VALUES (1), (2)")
	out, err := s.cli(t, "root", rootPassword, "DELETE FROM raw.scratch; SELECT COUNT(*) FROM raw.scratch; ANALYZE TABLE raw.t; "+
		"SELECT sex, support FROM dp_marginal('lab.a', 'sex') ORDER BY sex;")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got := strings.Join(lines(out), "|"); got != "0|t\tanalyze\tstatus\tOK|F\tsupported|M\tsupported" {
		t.Errorf("CLI output %q", got)
	}
}
