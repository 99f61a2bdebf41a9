package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
)

// The attack suite: an analyst (and a second one) tries to read raw data,
// or learn anything about raw tables, through ordinary SQL. Every attempt
// must be refused or answer without a trace of the raw tables.
//
// The fixture (securityFixture) is a census database holding a raw table
// (adult) whose values are recognisable markers, an owner's view over it,
// and a table the analyst is granted SELECT on (syn) — the situation in
// which go-mysql-server used to list every table of the database in
// information_schema. A second raw database (vault) has no grant at all.
// The analyst has a sandbox database (lab) with every privilege.

// Markers: raw values no analyst types, so they may appear in no output or
// error; and names of hidden objects, which may appear only when the
// attack itself names them (an error echoing the analyst's own input).
var (
	rawValues   = []string{"SECRET-ROW-42", "hidden-value-7", "4242.5"}
	hiddenNames = []string{"adult", "income_raw", "secret_view", "vault", "treasure"}
)

// securityFixture builds an engine over the catalog with the census
// fixture. It returns the engine and the path of a raw export in the
// secure-files directory.
func securityFixture(t *testing.T) (*Engine, string) {
	t.Helper()
	e := openDiskEngine(t, t.TempDir(), nil)
	dump := filepath.Join(e.DataDir(), secureFilesDir, "adult.csv")
	if err := os.MkdirAll(filepath.Dir(dump), 0o700); err != nil {
		t.Fatal(err)
	}
	root := sessionCtx(e, 1, RootUser, localhost)
	for _, q := range []string{
		"CREATE DATABASE census",
		"USE census",
		"CREATE TABLE census.adult (id INT PRIMARY KEY, person VARCHAR(40) NOT NULL, age INT NOT NULL CHECK (age BETWEEN 0 AND 120), sex ENUM('F','M') NOT NULL, income_raw DOUBLE)",
		"INSERT INTO census.adult VALUES (1, 'SECRET-ROW-42', 42, 'F', 4242.5), (2, 'hidden-value-7', 77, 'M', 7.25), (3, 'ordinary', 30, 'F', 1.5)",
		"CREATE VIEW census.secret_view AS SELECT person FROM census.adult WHERE person = 'SECRET-ROW-42'",
		"CREATE TABLE census.syn (id INT PRIMARY KEY, age INT NOT NULL, sex ENUM('F','M') NOT NULL)",
		"INSERT INTO census.syn VALUES (1, 40, 'F'), (2, 41, 'M')",
		"CREATE DATABASE vault",
		"CREATE TABLE vault.treasure (id INT PRIMARY KEY, person VARCHAR(40))",
		"INSERT INTO vault.treasure VALUES (1, 'SECRET-ROW-42')",
		"ANALYZE TABLE census.adult",
		"SELECT * FROM census.adult INTO OUTFILE '" + dump + "'",
		"CREATE DATABASE lab",
		"CREATE DATABASE lab2",
		"CREATE USER analyst IDENTIFIED BY 'apw'",
		"GRANT SELECT ON census.syn TO analyst",
		"GRANT ALL ON lab.* TO analyst",
		"CREATE USER analyst2 IDENTIFIED BY 'apw2'",
		"GRANT ALL ON lab2.* TO analyst2",
		"CREATE TABLE lab.mine (id INT PRIMARY KEY, v VARCHAR(40))",
		"INSERT INTO lab.mine VALUES (1, 'x')",
	} {
		if _, _, err := query(e, root, q); err != nil {
			t.Fatalf("fixture: %s: %v", q, err)
		}
	}
	if b, err := os.ReadFile(dump); err != nil || !strings.Contains(string(b), "SECRET-ROW-42") {
		t.Fatalf("fixture: owner's export %s not written (%v)", dump, err)
	}
	return e, dump
}

// scriptResult is what one script produced: every row and every error, as
// text, and whether some statement failed.
type scriptResult struct {
	out    strings.Builder
	failed bool
	errs   []string
}

// runScript runs a possibly multi-statement script in ctx the way the
// server's multi-statement handler does, statement by statement, stopping
// at the first error.
func runScript(e *Engine, ctx *sql.Context, script string) *scriptResult {
	r := &scriptResult{}
	rest := script
	for i := 0; rest != "" && i < 20; i++ {
		_, parsed, rem, err := e.sqle.Parser.Parse(ctx, rest, true)
		if err != nil {
			r.fail(err)
			return r
		}
		if strings.TrimSpace(parsed) == "" {
			parsed = rest
		}
		sch, rows, err := query(e, ctx, parsed)
		for _, c := range sch {
			fmt.Fprintf(&r.out, "%s.%s ", c.Source, c.Name)
		}
		for _, row := range rows {
			fmt.Fprintf(&r.out, "%v\n", row)
		}
		if err != nil {
			r.fail(err)
			return r
		}
		rest = rem
	}
	return r
}

// summary is a one-line account of the result for the test log.
func (r *scriptResult) summary() string {
	if r.failed {
		return "refused: " + r.errs[len(r.errs)-1]
	}
	out := strings.ReplaceAll(r.out.String(), "\n", " ")
	if len(out) > 120 {
		out = out[:120] + "..."
	}
	return "answered: " + out
}

func (r *scriptResult) fail(err error) {
	r.failed = true
	r.errs = append(r.errs, err.Error())
	r.out.WriteString("ERROR: " + err.Error() + "\n")
}

// leaks returns the markers found in the result: raw values always, hidden
// names unless the script itself names them.
func (r *scriptResult) leaks(script string) []string {
	out := strings.ToLower(r.out.String())
	var found []string
	for _, v := range rawValues {
		if strings.Contains(out, strings.ToLower(v)) {
			found = append(found, v)
		}
	}
	for _, n := range hiddenNames {
		if strings.Contains(out, n) && !strings.Contains(strings.ToLower(script), n) {
			found = append(found, n)
		}
	}
	return found
}

// outcome says what an attack must end in.
type outcome int

const (
	refused outcome = iota // some statement of the script fails
	clean                  // the script may succeed; its output hides everything
)

func (o outcome) String() string { return [...]string{"refused", "clean"}[o] }

// attack is one attempt.
type attack struct {
	name   string
	user   string // analyst if empty
	script string
	want   outcome
}

// sqlAttacks are the attempts through ordinary SQL. %DUMP% is replaced by
// the owner's export file.
var sqlAttacks = []attack{
	// Direct reads, every spelling.
	{name: "select qualified", script: "SELECT * FROM census.adult"},
	{name: "select odd casing", script: "SeLeCt PeRsOn FrOm CeNsUs.AdUlT"},
	{name: "select backticks", script: "SELECT * FROM `census`.`adult`"},
	{name: "select spaced qualifier", script: "SELECT * FROM census . adult"},
	{name: "select with comments", script: "/* hi */ SELECT/**/person/**/FROM/**/census.adult -- bye"},
	{name: "select in version comment", script: "/*!50000 SELECT person FROM census.adult */"},
	{name: "TABLE statement", script: "TABLE census.adult"},
	{name: "use census then unqualified", script: "USE census; SELECT * FROM adult"},
	{name: "use census then backticked", script: "USE census; SELECT `person` FROM `adult`"},
	{name: "use vault", script: "USE vault"},
	{name: "use lab then qualified", script: "USE lab; SELECT * FROM census.adult"},
	{name: "count only", script: "SELECT COUNT(*) FROM census.adult"},
	{name: "other raw database", script: "SELECT * FROM vault.treasure"},
	{name: "owner's view", script: "SELECT * FROM census.secret_view"},
	// Through tables the analyst may read.
	{name: "join", script: "SELECT s.id, a.person FROM census.syn s JOIN census.adult a ON a.id = s.id"},
	{name: "join using", script: "SELECT * FROM census.syn JOIN census.adult USING (id)"},
	{name: "exists subquery", script: "SELECT * FROM census.syn WHERE EXISTS (SELECT 1 FROM census.adult WHERE person LIKE 'SEC%')"},
	{name: "in subquery", script: "SELECT * FROM census.syn WHERE id IN (SELECT id FROM census.adult)"},
	{name: "scalar subquery", script: "SELECT (SELECT person FROM census.adult LIMIT 1) FROM census.syn"},
	{name: "derived table", script: "SELECT * FROM (SELECT person FROM census.adult) AS d"},
	{name: "cte", script: "WITH c AS (SELECT person FROM census.adult) SELECT * FROM c"},
	{name: "recursive cte", script: "WITH RECURSIVE c (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < (SELECT COUNT(*) FROM census.adult)) SELECT * FROM c"},
	{name: "union", script: "SELECT sex FROM census.syn UNION SELECT person FROM census.adult"},
	{name: "lateral", script: "SELECT * FROM census.syn s, LATERAL (SELECT person FROM census.adult a WHERE a.id = s.id) l"},
	{name: "user variable", script: "SET @x = (SELECT person FROM census.adult LIMIT 1); SELECT @x"},
	{name: "select into variable", script: "SELECT person INTO @y FROM census.adult LIMIT 1; SELECT @y"},
	{name: "sql prepared statement", script: "PREPARE s FROM 'SELECT * FROM census.adult'; EXECUTE s"},
	{name: "prepared from variable", script: "SET @q = 'SELECT * FROM census.adult'; PREPARE s FROM @q; EXECUTE s"},
	// Copying into the analyst's own database.
	{name: "insert select", script: "INSERT INTO lab.mine SELECT id, person FROM census.adult"},
	{name: "replace select", script: "REPLACE INTO lab.mine SELECT id, person FROM census.adult"},
	{name: "insert scalar subquery", script: "INSERT INTO lab.mine VALUES (9, (SELECT person FROM census.adult LIMIT 1))"},
	{name: "create table as select", script: "CREATE TABLE lab.stolen AS SELECT * FROM census.adult"},
	{name: "create table like", script: "CREATE TABLE lab.shape LIKE census.adult"},
	{name: "analyst view over raw", script: "CREATE VIEW lab.v AS SELECT * FROM census.adult"},
	{name: "update join", script: "UPDATE lab.mine m JOIN census.adult a ON a.id = m.id SET m.v = a.person"},
	{name: "update subquery", script: "UPDATE lab.mine SET v = (SELECT person FROM census.adult WHERE id = 1)"},
	{name: "delete probing row existence", script: "DELETE FROM lab.mine WHERE EXISTS (SELECT 1 FROM census.adult WHERE age = 42)"},
	{name: "rename raw into lab", script: "RENAME TABLE census.adult TO lab.stolen"},
	{name: "alter raw", script: "ALTER TABLE census.adult ADD COLUMN z INT"},
	{name: "trigger reading raw", script: "CREATE TRIGGER tr BEFORE INSERT ON lab.mine FOR EACH ROW SET NEW.v = (SELECT person FROM census.adult LIMIT 1)"},
	{name: "procedure reading raw", script: "CREATE PROCEDURE lab.p() SELECT * FROM census.adult"},
	// Writes that would reveal row existence (duplicate keys, constraints).
	{name: "insert duplicate key probe", script: "INSERT INTO census.adult (id, person, age, sex) VALUES (1, 'x', 1, 'F')"},
	{name: "insert on duplicate key update", script: "INSERT INTO census.adult (id, person, age, sex) VALUES (1, 'x', 1, 'F') ON DUPLICATE KEY UPDATE age = age"},
	{name: "delete raw", script: "DELETE FROM census.adult WHERE id = 1"},
	{name: "truncate raw", script: "TRUNCATE TABLE census.adult"},
	{name: "drop raw", script: "DROP TABLE census.adult"},
	// Files.
	{name: "load_file of owner's export", script: "SELECT LOAD_FILE('%DUMP%')"},
	{name: "load_file upper case", script: "SELECT Load_File('%DUMP%') AS f"},
	{name: "load data infile of owner's export", script: "LOAD DATA INFILE '%DUMP%' INTO TABLE lab.mine"},
	// Metadata: SHOW, EXPLAIN.
	{name: "show create table", script: "SHOW CREATE TABLE census.adult"},
	{name: "show create view", script: "SHOW CREATE VIEW census.secret_view"},
	{name: "show columns", script: "SHOW COLUMNS FROM census.adult"},
	{name: "show full columns from in", script: "SHOW FULL COLUMNS FROM adult IN census"},
	{name: "describe", script: "DESCRIBE census.adult"},
	{name: "show index", script: "SHOW INDEX FROM census.adult"},
	{name: "show keys from in", script: "SHOW KEYS FROM adult FROM census"},
	{name: "explain", script: "EXPLAIN SELECT * FROM census.adult"},
	{name: "explain analyze", script: "EXPLAIN ANALYZE SELECT * FROM census.adult"},
	{name: "describe select", script: "DESCRIBE SELECT person FROM census.adult WHERE age > 40"},
	{name: "explain format tree", script: "EXPLAIN FORMAT=TREE SELECT * FROM census.adult"},
	{name: "analyze raw", script: "ANALYZE TABLE census.adult"},
	{name: "show tables", script: "SHOW TABLES FROM census", want: clean},
	{name: "show full tables use census", script: "USE census; SHOW FULL TABLES", want: clean},
	{name: "show table status", script: "SHOW TABLE STATUS FROM census", want: clean},
	{name: "show table status like", script: "SHOW TABLE STATUS FROM census LIKE 'a%'", want: clean},
	{name: "show databases", script: "SHOW DATABASES", want: clean},
	// information_schema.
	{name: "is tables", script: "SELECT table_schema, table_name, table_rows FROM information_schema.tables", want: clean},
	{name: "is tables of census", script: "SELECT * FROM information_schema.tables WHERE table_schema = 'census'", want: clean},
	{name: "is columns", script: "SELECT table_schema, table_name, column_name, column_type, column_default FROM information_schema.columns", want: clean},
	{name: "is statistics", script: "SELECT * FROM information_schema.statistics", want: clean},
	{name: "is partitions", script: "SELECT * FROM information_schema.partitions", want: clean},
	{name: "is column_statistics", script: "SELECT * FROM information_schema.column_statistics", want: clean},
	{name: "is views", script: "SELECT * FROM information_schema.views", want: clean},
	{name: "is check constraints", script: "SELECT * FROM information_schema.check_constraints", want: clean},
	{name: "is table constraints", script: "SELECT * FROM information_schema.table_constraints", want: clean},
	{name: "is key column usage", script: "SELECT * FROM information_schema.key_column_usage", want: clean},
	{name: "is schemata", script: "SELECT * FROM information_schema.schemata", want: clean},
	{name: "is table privileges", script: "SELECT * FROM information_schema.table_privileges", want: clean},
	{name: "is schema privileges", script: "SELECT * FROM information_schema.schema_privileges", want: clean},
	{name: "is tables extensions", script: "SELECT * FROM information_schema.tables_extensions", want: clean},
	{name: "is columns extensions", script: "SELECT * FROM information_schema.columns_extensions", want: clean},
	{name: "is st geometry columns", script: "SELECT * FROM information_schema.st_geometry_columns", want: clean},
	{name: "is use then count", script: "USE information_schema; SELECT COUNT(*) FROM tables WHERE table_name = 'adult' HAVING COUNT(*) > 0", want: clean},
	// The mysql database, users and grants.
	{name: "mysql.user", script: "SELECT * FROM mysql.user"},
	{name: "mysql.tables_priv", script: "SELECT * FROM mysql.tables_priv"},
	{name: "mysql.db", script: "SELECT * FROM mysql.db"},
	{name: "use mysql", script: "USE mysql; SELECT * FROM user"},
	{name: "show grants for root", script: "SHOW GRANTS FOR root@localhost"},
	{name: "show grants for analyst2", script: "SHOW GRANTS FOR analyst2"},
	{name: "self grant", script: "GRANT SELECT ON census.adult TO analyst"},
	{name: "grant to other analyst", script: "GRANT SELECT ON lab.* TO analyst2"},
	{name: "create user", script: "CREATE USER mole IDENTIFIED BY 'x'"},
	{name: "password of dp_internal", script: "ALTER USER dp_internal@localhost IDENTIFIED BY 'x'"},
	{name: "password of root", script: "ALTER USER root@localhost IDENTIFIED BY 'x'"},
	{name: "drop another analyst", script: "DROP USER analyst2"},
	{name: "kill another connection", script: "KILL 1"},
	{name: "grant role", script: "CREATE ROLE r"},
	// System variables and process information.
	{name: "set global secure_file_priv", script: "SET GLOBAL secure_file_priv = ''"},
	{name: "set global local_infile", script: "SET GLOBAL local_infile = 0"},
	{name: "set persist", script: "SET PERSIST max_connections = 1"},
	{name: "set global sql_mode", script: "SET GLOBAL sql_mode = ''"},
	{name: "set @@global", script: "SET @@global.max_connections = 1"},
	{name: "into outfile", script: "SELECT * FROM census.syn INTO OUTFILE '%DUMP%.2'"},
	{name: "into dumpfile", script: "SELECT 1 INTO DUMPFILE '%DUMP%.3'"},
	// An analyst sees their own threads only (as in MySQL without PROCESS).
	{name: "show processlist", script: "SHOW PROCESSLIST", want: clean},
	{name: "is processlist", script: "SELECT info FROM information_schema.processlist", want: clean},
	{name: "is processlist in subquery", script: "SELECT (SELECT MAX(info) FROM information_schema.processlist) FROM census.syn", want: clean},
	{name: "is processlist in a view", script: "CREATE VIEW lab.pl AS SELECT info FROM information_schema.processlist; USE lab; SELECT * FROM pl", want: clean},
	// The second analyst against the first one's sandbox.
	{name: "second analyst reads lab", user: "analyst2", script: "SELECT * FROM lab.mine"},
	{name: "second analyst lists lab", user: "analyst2", script: "SELECT table_name FROM information_schema.tables WHERE table_schema = 'lab'", want: clean},
}

// TestAnalystIsolation runs every attack as an analyst, on a fresh session,
// and checks its outcome, that no output or error carries a marker, and
// afterwards that the raw data and the grants are unchanged.
func TestAnalystIsolation(t *testing.T) {
	e, dump := securityFixture(t)
	hidden := regexp.MustCompile(`(?i)adult|secret_view|treasure|vault`)
	for i, a := range sqlAttacks {
		t.Run(a.name, func(t *testing.T) {
			user, host := a.user, "127.0.0.1"
			if user == "" {
				user = "analyst"
			}
			script := strings.ReplaceAll(a.script, "%DUMP%", dump)
			r := runScript(e, sessionCtx(e, uint32(100+i), user, host), script)
			if leaks := r.leaks(script); len(leaks) > 0 {
				t.Errorf("%s leaked %v:\n%s", script, leaks, r.out.String())
			}
			t.Logf("outcome: %s", r.summary())
			switch a.want {
			case refused:
				if !r.failed {
					t.Errorf("%s succeeded, want refused:\n%s", script, r.out.String())
				}
			case clean:
				if r.failed {
					t.Logf("%s refused (acceptable): %v", script, r.errs)
				}
			}
			// A refusal must not tell a hidden table from a missing one.
			for _, msg := range r.errs {
				if m := hidden.FindString(msg); m != "" && hidden.MatchString(script) {
					probe := hidden.ReplaceAllString(script, "nosuchthing")
					r2 := runScript(e, sessionCtx(e, uint32(1000+i), user, host), probe)
					want := hidden.ReplaceAllString(strings.Join(r.errs, "|"), "nosuchthing")
					if got := strings.Join(r2.errs, "|"); got != want {
						t.Errorf("error for a hidden object differs from a missing one:\n hidden:  %s\n missing: %s", want, got)
					}
					break
				}
			}
		})
	}

	// Nothing the attacks did changed the raw data or the grants.
	root := sessionCtx(e, 2, RootUser, localhost)
	_, rows, err := query(e, root, "SELECT COUNT(*), SUM(age) FROM census.adult WHERE person IN ('SECRET-ROW-42', 'hidden-value-7', 'ordinary')")
	if err != nil || len(rows) != 1 || toInt(rows[0][0]) != 3 || toInt(rows[0][1]) != 149 {
		t.Errorf("raw table changed: %v %v", rows, err)
	}
	for _, u := range []string{"analyst", "analyst2"} {
		_, rows, err := query(e, root, "SHOW GRANTS FOR "+u)
		if err != nil {
			t.Fatal(err)
		}
		got := fmt.Sprint(rows)
		if strings.Contains(got, "census`.`adult") || strings.Contains(got, "*.*` TO") && strings.Contains(got, "SELECT") {
			t.Errorf("grants of %s widened: %s", u, got)
		}
	}
	_, rows, err = query(e, root, "SELECT user FROM mysql.user WHERE user = 'mole'")
	if err != nil || len(rows) != 0 {
		t.Errorf("an analyst created a user: %v %v", rows, err)
	}
}

// TestIsolationOwnersSeeEverything checks the filter does not hide anything
// from root, dp_internal, or an owner made by root, and that an analyst
// sees the tables granted to them.
func TestIsolationOwnersSeeEverything(t *testing.T) {
	e, _ := securityFixture(t)
	root := sessionCtx(e, 1, RootUser, localhost)
	for _, q := range []string{
		"CREATE USER owner IDENTIFIED BY 'opw'",
		"GRANT ALL ON census.* TO owner WITH GRANT OPTION",
	} {
		if _, _, err := query(e, root, q); err != nil {
			t.Fatal(err)
		}
	}
	tables := func(ctx *sql.Context) string {
		_, rows, err := query(e, ctx, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'census' ORDER BY 1")
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(rows)
	}
	tests := []struct {
		ctx  *sql.Context
		want string
	}{
		{root, "[[adult] [secret_view] [syn]]"},
		{sessionCtx(e, 2, "owner", "127.0.0.1"), "[[adult] [secret_view] [syn]]"},
		{sessionCtx(e, 3, "analyst", "127.0.0.1"), "[[syn]]"},
	}
	for _, tt := range tests {
		if got := tables(tt.ctx); got != tt.want {
			t.Errorf("%s sees %s, want %s", tt.ctx.Session.Client().User, got, tt.want)
		}
	}
	// What the analyst may do still works.
	analyst := sessionCtx(e, 6, "analyst", "127.0.0.1")
	analyst.SetCurrentDatabase("lab") // GMS resolves views only with a current database
	for _, q := range []string{
		"SELECT COUNT(*) FROM census.syn",
		"SET SESSION sql_mode = ''",
		"SET @@session.sql_select_limit = 10",
		"INSERT INTO lab.mine VALUES (2, 'y')",
		"CREATE TABLE lab.t2 AS SELECT * FROM census.syn",
		"CREATE VIEW lab.v2 AS SELECT age FROM census.syn",
		"SELECT * FROM lab.v2",
		"SHOW CREATE TABLE census.syn",
	} {
		if _, _, err := query(e, analyst, q); err != nil {
			t.Errorf("analyst: %s: %v", q, err)
		}
	}
	_, rows, err := e.QueryInternal(sessionCtx(e, 4, "analyst", "127.0.0.1"), "census", "SELECT COUNT(*) FROM adult")
	if err != nil || toInt(rows[0][0]) != 3 {
		t.Errorf("dp_internal count = %v, %v; want 3", rows, err)
	}
	owner := sessionCtx(e, 5, "owner", "127.0.0.1")
	owner.SetCurrentDatabase("census")
	if _, rows, err := query(e, owner, "SELECT person FROM census.secret_view"); err != nil || len(rows) != 1 {
		t.Errorf("owner reading its view: %v %v", rows, err)
	}
	if _, _, err := query(e, owner, "SELECT LOAD_FILE('/nonexistent')"); err == nil {
		t.Error("owner without FILE ran LOAD_FILE")
	}
	if _, rows, err := query(e, root, "SELECT LOAD_FILE('/nonexistent')"); err != nil || len(rows) != 1 {
		t.Errorf("root LOAD_FILE: %v %v", rows, err)
	}
}

// TestIsolationWrapsEveryCatalogDatabase guards the filter itself: every
// catalog database the provider serves must be isolated.
func TestIsolationWrapsEveryCatalogDatabase(t *testing.T) {
	e, _ := securityFixture(t)
	ctx := sessionCtx(e, 1, RootUser, localhost)
	pro := e.sqle.Analyzer.Catalog.DbProvider
	for _, db := range pro.AllDatabases(ctx) {
		if _, ok := db.(isolatedDB); !ok {
			t.Errorf("database %s served as %T, not isolated", db.Name(), db)
		}
	}
	db, err := pro.Database(ctx, "census")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := db.(isolatedDB); !ok {
		t.Errorf("census served as %T, not isolated", db)
	}
}
