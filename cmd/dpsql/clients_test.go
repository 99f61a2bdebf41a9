package main

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// A data team's first day: the client tools (BI tools, Workbench,
// mysqldump) they connect with, through go-sql-driver, the mariadb CLI and
// mysqldump.

// mysqldump runs the mysqldump (or mariadb-dump) client against s as user
// and returns what it wrote to stdout and stderr. It skips the test when
// neither is installed.
func (s *server) mysqldump(t testing.TB, user, password string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var bin string
	for _, name := range []string{"mysqldump", "mariadb-dump"} {
		if p, lerr := exec.LookPath(name); lerr == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		t.Skip("mysqldump/mariadb-dump not installed (apt-get install mariadb-client); .ci/run installs it")
	}
	host, port, _ := strings.Cut(s.addr, ":")
	cmd := exec.Command(bin, append([]string{"-h" + host, "-P" + port, "-u" + user, "-p" + password}, args...)...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// load runs a SQL file through the mariadb CLI as root, as one reloads a
// dump: mariadb -uroot -p < dump.sql.
func (s *server) load(t testing.TB, script string) (string, error) {
	t.Helper()
	host, port, _ := strings.Cut(s.addr, ":")
	cmd := exec.Command(mariadbCLI(t), "-h"+host, "-P"+port, "-uroot", "-p"+rootPassword)
	cmd.Stdin = strings.NewReader(script)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Point 11: grants.

// TestShowGrantsAsAnalyst: every user may list their own grants, SYNTHESIZE
// included, as BI tools and Workbench do on connect; other accounts' grants
// stay restricted.
func TestShowGrantsAsAnalyst(t *testing.T) {
	s := startServer(t, t.TempDir(), "--demo")
	root := s.root()
	mustExec(t, root,
		"CREATE USER analyst IDENTIFIED BY 'analyst-pw'",
		"CREATE USER other IDENTIFIED BY 'other-pw'",
		"CREATE DATABASE lab",
		"GRANT SYNTHESIZE ON demo.census TO analyst",
		"GRANT CREATE, SELECT ON lab.* TO analyst",
	)
	const synthLine = "GRANT SYNTHESIZE ON `demo`.`census` TO `analyst`@`%`"
	analyst := s.open("analyst", "analyst-pw")
	for _, q := range []string{"SHOW GRANTS", "SHOW GRANTS FOR CURRENT_USER()", "SHOW GRANTS FOR CURRENT_USER", "SHOW GRANTS FOR analyst", "SHOW GRANTS FOR 'analyst'@'%'"} {
		if got := columns(t, analyst, q); len(got) != 1 || got[0] != "Grants for analyst@%" {
			t.Errorf("%s: columns %q", q, got)
		}
		got := flatten1(queryStrings(t, analyst, q))
		if len(got) != 3 || got[0] != "GRANT USAGE ON *.* TO `analyst`@`%`" ||
			!strings.HasSuffix(got[1], " ON `lab`.* TO `analyst`@`%`") || got[2] != synthLine {
			t.Errorf("%s as the analyst:\n%s", q, strings.Join(got, "\n"))
		}
	}
	for _, q := range []string{"SHOW GRANTS FOR other", "SHOW GRANTS FOR root@localhost", "SHOW GRANTS FOR analyst@localhost"} {
		if out, err := tryQueryStrings(analyst, q); err == nil {
			t.Errorf("%s as the analyst: %v, want access to mysql denied", q, out)
		}
	}
	if got := flatten1(queryStrings(t, root, "SHOW GRANTS FOR analyst")); !slicesContains(got, synthLine) {
		t.Errorf("root's SHOW GRANTS FOR analyst lacks the SYNTHESIZE grant:\n%s", strings.Join(got, "\n"))
	}
	out, err := s.cli(t, "analyst", "analyst-pw", "SHOW GRANTS; SHOW GRANTS FOR CURRENT_USER()")
	if err != nil || strings.Count(out, synthLine) != 2 {
		t.Errorf("CLI SHOW GRANTS as the analyst: %v\n%s", err, out)
	}
}

// TestSynthesizeGrantOnDatabase: GRANT SYNTHESIZE ON db.* covers every table
// of the database, current and future, until revoked or the database is
// dropped; SHOW SYNTHESIZE GRANTS (and its CALL twin) tell an owner who
// holds it.
func TestSynthesizeGrantOnDatabase(t *testing.T) {
	s := startServer(t, t.TempDir(), "--demo")
	root := s.root()
	mustExec(t, root,
		"SET PRIVACY BUDGET FOR demo.census WITH EPSILON = 3, DELTA = 1e-9",
		"CREATE USER analyst IDENTIFIED BY 'analyst-pw'",
		"CREATE USER other IDENTIFIED BY 'other-pw'",
		"CREATE DATABASE lab",
		"GRANT CREATE, SELECT ON lab.* TO analyst",
		"GRANT SYNTHESIZE ON demo.* TO analyst",
	)
	analyst := s.open("analyst", "analyst-pw")
	mustExec(t, analyst, "CREATE SYNTHETIC TABLE lab.c FROM demo.census USING independent WITH EPSILON = 0.5")
	wantMySQLError(t, analyst, 0, "SHOW DOMAIN FOR demo.census")
	wantMySQLError(t, analyst, 1142, "SHOW SYNTHESIZE GRANTS FOR demo.census") // a grantee, not an owner
	wantMySQLError(t, analyst, 1044, "GRANT SYNTHESIZE ON demo.* TO other")
	if _, err := tryQueryStrings(analyst, "SELECT * FROM demo.census LIMIT 1"); err == nil {
		t.Error("SYNTHESIZE on demo.* let the analyst read raw rows")
	}

	// A table created after the grant is covered too.
	mustExec(t, root,
		"CREATE TABLE demo.later (id INT PRIMARY KEY, g ENUM('x','y') NOT NULL)",
		"INSERT INTO demo.later VALUES (1, 'x'), (2, 'y')",
		"SET PRIVACY BUDGET FOR demo.later WITH EPSILON = 1, DELTA = 1e-9",
	)
	wantMySQLError(t, analyst, 0, "SHOW DOMAIN FOR demo.later")
	if got := fmt.Sprint(queryStrings(t, analyst, "SHOW PRIVACY BUDGET")); !strings.Contains(got, "demo.later") {
		t.Errorf("SHOW PRIVACY BUDGET as the analyst lacks demo.later: %s", got)
	}

	for _, q := range []string{"SHOW SYNTHESIZE GRANTS FOR demo.later", "SHOW SYNTHESIZE GRANTS FOR demo.*",
		"CALL dpsql_show_synthesize_grants('demo.later')", "CALL dpsql_show_synthesize_grants('demo.*')"} {
		rows := queryStrings(t, root, q)
		if len(rows) != 1 || fmt.Sprint(rows[0][:4]) != "[analyst % `demo`.* root@localhost]" {
			t.Errorf("%s = %v", q, rows)
		}
	}
	if got := flatten1(queryStrings(t, root, "SHOW GRANTS FOR analyst")); !slicesContains(got, "GRANT SYNTHESIZE ON `demo`.* TO `analyst`@`%`") {
		t.Errorf("SHOW GRANTS FOR analyst:\n%s", strings.Join(got, "\n"))
	}

	mustExec(t, root, "REVOKE SYNTHESIZE ON demo.* FROM analyst")
	wantMySQLError(t, analyst, 1146, "SHOW DOMAIN FOR demo.census")
	wantMySQLError(t, analyst, 1146, "SHOW DOMAIN FOR demo.later")
	wantMySQLError(t, root, 1141, "REVOKE SYNTHESIZE ON demo.* FROM analyst")

	// Twins, and a database dropped and created again starts with no grant.
	mustExec(t, root,
		"CREATE DATABASE raw2",
		"CREATE TABLE raw2.t (id INT PRIMARY KEY, g ENUM('x','y') NOT NULL)",
		"CALL dpsql_grant_synthesize('raw2.*', 'analyst')",
	)
	wantMySQLError(t, analyst, 0, "SHOW DOMAIN FOR raw2.t")
	mustExec(t, root,
		"DROP DATABASE raw2",
		"CREATE DATABASE raw2",
		"CREATE TABLE raw2.t (id INT PRIMARY KEY, g ENUM('x','y') NOT NULL)",
	)
	wantMySQLError(t, analyst, 1146, "SHOW DOMAIN FOR raw2.t")
	if rows := queryStrings(t, root, "SHOW SYNTHESIZE GRANTS FOR raw2.*"); len(rows) != 0 {
		t.Errorf("grants on a dropped database survived: %v", rows)
	}
	wantMySQLError(t, root, 1049, "GRANT SYNTHESIZE ON nosuch.* TO analyst")
}

// TestGrantSelectAndSynthesize: SYNTHESIZE may be granted and revoked with
// MySQL privileges in one statement, all or nothing.
func TestGrantSelectAndSynthesize(t *testing.T) {
	s := startServer(t, t.TempDir(), "--demo")
	root := s.root()
	mustExec(t, root,
		"CREATE USER analyst IDENTIFIED BY 'analyst-pw'",
		"CREATE USER other IDENTIFIED BY 'other-pw'",
		"CREATE USER owner IDENTIFIED BY 'owner-pw'",
		"GRANT SELECT ON demo.census TO owner WITH GRANT OPTION",
		"GRANT SELECT, SYNTHESIZE ON demo.census TO analyst",
	)
	grantsOf := func(user string) string {
		return strings.Join(flatten1(queryStrings(t, root, "SHOW GRANTS FOR "+user)), "\n")
	}
	if g := grantsOf("analyst"); !strings.Contains(g, "GRANT SELECT ON `demo`.`census` TO `analyst`@`%`") ||
		!strings.Contains(g, "GRANT SYNTHESIZE ON `demo`.`census` TO `analyst`@`%`") {
		t.Errorf("after GRANT SELECT, SYNTHESIZE:\n%s", g)
	}
	analyst := s.open("analyst", "analyst-pw")
	if got := queryStrings(t, analyst, "SELECT COUNT(*) FROM demo.census"); got[0][0] != "30000" {
		t.Errorf("analyst's SELECT: %v", got)
	}
	wantMySQLError(t, analyst, 0, "SHOW DOMAIN FOR demo.census")

	// A part refused: nothing is granted.
	other := s.open("other", "other-pw")
	owner := s.open("owner", "owner-pw")
	base := grantsOf("other")
	if _, err := owner.Exec("GRANT INSERT, SYNTHESIZE ON demo.census TO other"); err == nil {
		t.Error("the owner granted INSERT, which they may not grant")
	}
	wantMySQLError(t, analyst, 1142, "GRANT SELECT, SYNTHESIZE ON demo.census TO other") // not an owner
	if g := grantsOf("other"); g != base {
		t.Errorf("refused grants changed other's grants:\n%s\nwas\n%s", g, base)
	}
	wantMySQLError(t, other, 1146, "SHOW DOMAIN FOR demo.census")

	// The owner may grant both, through the CLI too.
	if out, err := s.cli(t, "owner", "owner-pw", "GRANT SELECT, SYNTHESIZE ON demo.census TO other"); err != nil {
		t.Fatalf("owner's GRANT SELECT, SYNTHESIZE: %v\n%s", err, out)
	}
	wantMySQLError(t, other, 0, "SHOW DOMAIN FOR demo.census")

	mustExec(t, root, "REVOKE SELECT, SYNTHESIZE ON demo.census FROM analyst")
	if g := grantsOf("analyst"); strings.Contains(g, "census") {
		t.Errorf("after REVOKE SELECT, SYNTHESIZE:\n%s", g)
	}
	wantMySQLError(t, analyst, 1146, "SHOW DOMAIN FOR demo.census")
	if _, err := tryQueryStrings(analyst, "SELECT COUNT(*) FROM demo.census"); err == nil {
		t.Error("SELECT still allowed after REVOKE SELECT, SYNTHESIZE")
	}
}

// Point 12: the process list.

// synthStates are the State texts of a running synthesis into lab.slow.
var (
	slowRoundState = regexp.MustCompile(`^synthesizing lab\.slow: round \d+, rho used [0-9.e+-]+ of [0-9.e+-]+, model \d+\.\d\d MB$`)
	slowFinalState = regexp.MustCompile(`^synthesizing lab\.slow: final estimation, iteration \d+ of 1000000, rho used [0-9.e+-]+ of [0-9.e+-]+, model \d+\.\d\d MB$`)
	slowOtherState = regexp.MustCompile(`^synthesizing lab\.slow: (reading the source|writing the table|sampling rows, rho used [0-9.e+-]+ of [0-9.e+-]+, model \d+\.\d\d MB)$`)
)

// TestSynthesisProgressForItsAnalyst: an analyst without PROCESS follows
// their own synthesis in SHOW PROCESSLIST and information_schema.processlist
// from a second connection, its State one line in the documented form,
// rounds first and then the final estimation's iterations; another analyst
// sees none of it.
func TestSynthesisProgressForItsAnalyst(t *testing.T) {
	s := startServer(t, t.TempDir(), "--demo")
	root := s.root()
	mustExec(t, root,
		"SET PRIVACY BUDGET FOR demo.census WITH EPSILON = 40, DELTA = 1e-9",
		"CREATE USER analyst IDENTIFIED BY 'analyst-pw'",
		"CREATE USER other IDENTIFIED BY 'other-pw'",
		"CREATE DATABASE lab",
		"GRANT SYNTHESIZE ON demo.census TO analyst",
		"GRANT SYNTHESIZE ON demo.census TO other",
		"GRANT CREATE, SELECT ON lab.* TO analyst",
		"GRANT SELECT ON lab.* TO other",
	)
	analyst := s.open("analyst", "analyst-pw") // the watching connections
	other := s.open("other", "other-pw")

	for _, c := range []struct {
		options string
		want    *regexp.Regexp
	}{
		// Long rounds: each round's estimation runs a million iterations.
		{"PGM_ITERS = 1000000", slowRoundState},
		// Quick rounds, then a long final estimation.
		{"ROUNDS = 12, PGM_ITERS = 50, FINAL_ITERS = 1000000, FINAL_TOL = 0", slowFinalState},
	} {
		stmt := "CREATE SYNTHETIC TABLE lab.slow FROM demo.census USING aim WITH EPSILON = 10, " + c.options
		id, done := startOn(t, s, s.open("analyst", "analyst-pw"), stmt)

		// Poll (bounded) until the State shows c.want; every State seen
		// must be one of the documented lines. Until the synthesis starts
		// (while the statement is checked and its charge is written, an
		// fsync that a loaded machine stretches) the thread's State is
		// GMS's "running", and never again once a synthesis line was shown.
		var state string
		started := false
		deadline := time.Now().Add(3 * time.Minute)
		for !c.want.MatchString(state) {
			select {
			case err := <-done:
				t.Fatalf("%s ended (%v) before its State showed %s; last %q", stmt, err, c.want, state)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: State never showed %s; last %q\n%s", stmt, c.want, state, s.stderr)
			}
			time.Sleep(20 * time.Millisecond)
			rows := queryStrings(t, analyst, "SHOW PROCESSLIST")
			state = ""
			for _, r := range rows {
				if r[0] == id {
					if r[1] != "analyst" || !strings.HasPrefix(r[7], "CREATE SYNTHETIC TABLE lab.slow") {
						t.Fatalf("the analyst's thread shows as %v", r)
					}
					state = r[6]
				} else if r[1] != "analyst" {
					t.Fatalf("the analyst sees another user's thread: %v", r)
				}
			}
			switch {
			case state == "":
			case state == "running" && !started:
			case slowRoundState.MatchString(state), slowFinalState.MatchString(state), slowOtherState.MatchString(state):
				started = true
			default:
				t.Fatalf("State %q is none of the documented lines (synthesis started: %v)", state, started)
			}
		}
		// information_schema.processlist agrees.
		is := queryStrings(t, analyst, "SELECT state FROM information_schema.processlist WHERE id = "+id)
		if len(is) != 1 || !(slowRoundState.MatchString(is[0][0]) || slowFinalState.MatchString(is[0][0]) || slowOtherState.MatchString(is[0][0])) {
			t.Errorf("information_schema.processlist state: %v", is)
		}
		// The other analyst sees neither the thread nor its statement.
		for _, q := range []string{"SHOW PROCESSLIST", "SHOW FULL PROCESSLIST", "SELECT * FROM information_schema.processlist"} {
			got := fmt.Sprint(queryStrings(t, other, q))
			if strings.Contains(got, "synthesizing") || strings.Contains(got, "CREATE SYNTHETIC") || strings.Contains(got, "analyst") {
				t.Errorf("%s as another analyst shows the synthesis: %s", q, got)
			}
		}

		// Another user may not kill it; its own user may, as in MySQL.
		if _, err := other.Exec("KILL QUERY " + id); err == nil {
			t.Fatal("another analyst killed the synthesis")
		}
		mustExec(t, analyst, "KILL QUERY "+id)
		select {
		case err := <-done:
			if code := mysqlCode(err); code != 1317 {
				t.Fatalf("killed synthesis: %v (code %d), want 1317", err, code)
			}
		case <-time.After(2 * time.Minute):
			t.Fatal("the killed synthesis did not stop")
		}
	}
}

// startOn runs stmt on one connection of pool (a pool of server s) in the
// background and returns the connection's ID and a channel with the
// statement's error. If the test ends with the statement still running, s
// is stopped first, so that closing the connection does not wait for it.
func startOn(t *testing.T, s *server, pool *sql.DB, stmt string) (id string, done <-chan error) {
	t.Helper()
	ctx := context.Background()
	conn, err := pool.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	t.Cleanup(s.kill)
	if err := conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id); err != nil {
		t.Fatal(err)
	}
	ch := make(chan error, 1)
	go func() {
		_, err := conn.ExecContext(ctx, stmt)
		ch <- err
	}()
	return id, ch
}

// Point 13: client tools.

// TestServerIdentity: the handshake, VERSION(), @@version and
// @@version_comment name dpsql and one MySQL 8.0 version, and Uptime counts
// the server's seconds.
func TestServerIdentity(t *testing.T) {
	s := startServer(t, t.TempDir())
	root := s.root()
	got := queryStrings(t, root, "SELECT VERSION(), @@version, @@global.version, @@version_comment")[0]
	if got[0] != "8.0.36-dpsql" || got[1] != got[0] || got[2] != got[0] || !strings.HasPrefix(got[3], "dpsql ") {
		t.Errorf("VERSION(), @@version, @@global.version, @@version_comment = %q", got)
	}
	out, err := s.cli(t, "root", rootPassword, "status")
	if err != nil || !regexp.MustCompile(`Server version:\s+8\.0\.36-dpsql dpsql `).MatchString(out) {
		t.Errorf("CLI status (the handshake's version and @@version_comment): %v\n%s", err, out)
	}
	dump, _, err := s.mysqldump(t, "root", rootPassword, "--no-data", "--all-databases")
	if err != nil || !strings.Contains(dump, "-- Server version\t8.0.36-dpsql") {
		t.Errorf("mysqldump header: %v\n%.400s", err, dump)
	}
	for _, q := range []string{"SHOW STATUS LIKE 'Uptime'", "SHOW GLOBAL STATUS LIKE 'Uptime'"} {
		deadline := time.Now().Add(30 * time.Second)
		for {
			rows := queryStrings(t, root, q)
			if len(rows) != 1 {
				t.Fatalf("%s: %v", q, rows)
			}
			if n, err := strconv.Atoi(rows[0][1]); err == nil && n >= 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s still %v after 30 s", q, rows)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// TestMysqldumpReloads: mysqldump --all-databases (with --events too) and
// mysqldump db succeed against dpsql, and the full dump reloads into a new
// server with the same tables, rows, comments and views.
func TestMysqldumpReloads(t *testing.T) {
	s := startServer(t, t.TempDir(), "--demo")
	root := s.root()
	mustExec(t, root,
		"SET PRIVACY BUDGET FOR demo.census WITH EPSILON = 3, DELTA = 1e-9",
		"CREATE DATABASE lab",
		"CREATE SYNTHETIC TABLE lab.c FROM demo.census USING independent WITH EPSILON = 1",
		"CREATE TABLE lab.plain (id INT PRIMARY KEY, s VARCHAR(40), d DECIMAL(10,2), at DATETIME)",
		"INSERT INTO lab.plain VALUES (1, 'it''s \"quoted\"', 1.50, '2024-02-29 12:00:00'), (2, NULL, NULL, NULL), (3, 'naïve ✓', -3.25, '1999-12-31 23:59:59')",
		"CREATE VIEW lab.v AS SELECT sex, COUNT(*) AS n FROM lab.c GROUP BY sex",
	)
	var full string
	for _, args := range [][]string{{"--all-databases"}, {"--events", "--all-databases"}, {"--routines", "--events", "--triggers", "--all-databases"}, {"demo"}} {
		out, stderr, err := s.mysqldump(t, "root", rootPassword, args...)
		if err != nil || stderr != "" {
			t.Fatalf("mysqldump %s: %v\n%s", strings.Join(args, " "), err, stderr)
		}
		for _, want := range []string{"CREATE TABLE `census`", "INSERT INTO `census` VALUES", "-- Dump completed"} {
			if !strings.Contains(out, want) {
				t.Errorf("mysqldump %s lacks %q", strings.Join(args, " "), want)
			}
		}
		if strings.Contains(out, "general_log") || strings.Contains(out, "Current Database: `mysql`") {
			t.Errorf("mysqldump %s dumps the mysql database", strings.Join(args, " "))
		}
		if args[0] == "--all-databases" {
			full = out
		}
	}
	s2 := startServer(t, t.TempDir())
	if out, err := s2.load(t, full); err != nil {
		t.Fatalf("reloading the dump: %v\n%s", err, out)
	}
	root2 := s2.root()
	for _, q := range []string{
		"SELECT COUNT(*), SUM(age), SUM(capital_gain), SUM(id) FROM demo.census",
		"SELECT sex, income, COUNT(*) FROM demo.census GROUP BY sex, income ORDER BY 1, 2",
		"SELECT * FROM lab.plain ORDER BY id",
		"SELECT COUNT(*), SUM(age) FROM lab.c",
		"SHOW FULL TABLES FROM lab",
		"SELECT table_name, table_comment FROM information_schema.tables WHERE table_schema = 'lab' ORDER BY 1",
		"SHOW CREATE TABLE demo.census",
		"SHOW CREATE TABLE lab.c",
	} {
		if a, b := queryStrings(t, root, q), queryStrings(t, root2, q); !equalRows(a, b) {
			t.Errorf("%s differs after the reload:\n%v\n%v", q, a, b)
		}
	}
}

// TestEventsAndShowErrors: information_schema.EVENTS and SHOW EVENTS are
// empty, and SHOW ERRORS (like SHOW WARNINGS) shows the last error.
func TestEventsAndShowErrors(t *testing.T) {
	s := startServer(t, t.TempDir(), "--demo")
	root := s.root()
	for _, q := range []string{"SELECT * FROM information_schema.EVENTS", "SHOW EVENTS FROM demo"} {
		if rows := queryStrings(t, root, q); len(rows) != 0 {
			t.Errorf("%s = %v", q, rows)
		}
	}
	if out, err := s.cli(t, "root", rootPassword, "USE demo; SHOW EVENTS; SELECT COUNT(*) FROM information_schema.events; SHOW ERRORS"); err != nil || strings.TrimSpace(out) != "0" {
		t.Errorf("CLI: %v\n%s", err, out)
	}
	if _, err := root.Exec("CREATE EVENT demo.e ON SCHEDULE EVERY 1 DAY DO SELECT 1"); err == nil {
		t.Error("CREATE EVENT succeeded")
	}

	ctx := context.Background()
	conn, err := root.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, qerr := queryStringsContext(ctx, conn, "SELECT * FROM demo.nosuch")
	if mysqlCode(qerr) != 1146 {
		t.Fatalf("SELECT from a missing table: %v", qerr)
	}
	want := fmt.Sprint([][]string{{"Error", "1146", qerrMessage(qerr)}})
	for _, q := range []string{"SHOW ERRORS", "SHOW WARNINGS", "SHOW ERRORS LIMIT 1", "SHOW ERRORS"} {
		if got, err := connQuery(ctx, conn, q); err != nil || got != want {
			t.Errorf("%s after the error = %s (%v), want %s", q, got, err, want)
		}
	}
	if got, err := connQuery(ctx, conn, "SHOW COUNT(*) ERRORS"); err != nil || got != "[[1]]" {
		t.Errorf("SHOW COUNT(*) ERRORS = %s (%v)", got, err)
	}
	if got, err := connQuery(ctx, conn, "SHOW ERRORS LIMIT 1, 1"); err != nil || got != "[]" {
		t.Errorf("SHOW ERRORS LIMIT 1, 1 = %s (%v)", got, err)
	}
	if _, err := connQuery(ctx, conn, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"SHOW ERRORS", "SHOW WARNINGS"} {
		if got, err := connQuery(ctx, conn, q); err != nil || got != "[]" {
			t.Errorf("%s after a good statement = %s (%v)", q, got, err)
		}
	}
}

// qerrMessage is the message of a MySQL error.
func qerrMessage(err error) string {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Message
	}
	return err.Error()
}

// TestTableTimesAndComments: information_schema.TABLES and SHOW TABLE STATUS
// give a table's real creation time, and synthetic tables a comment saying
// what they are, also in SHOW CREATE TABLE.
func TestTableTimesAndComments(t *testing.T) {
	s := startServer(t, t.TempDir(), "--demo")
	root := s.open("root", rootPassword, multiStatements)
	mustExec(t, root,
		"SET PRIVACY BUDGET FOR demo.census WITH EPSILON = 3, DELTA = 1e-9",
		"CREATE DATABASE lab",
	)
	before := queryStrings(t, root, "SELECT UTC_TIMESTAMP()")[0][0]
	mustExec(t, root, "CREATE TABLE lab.t (id INT PRIMARY KEY)")
	after := queryStrings(t, root, "SELECT UTC_TIMESTAMP()")[0][0]
	created := queryStrings(t, root, "SELECT CREATE_TIME, UPDATE_TIME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'lab' AND TABLE_NAME = 't'")
	if len(created) != 1 || created[0][0] < before[:19] || created[0][0] > after[:19] || created[0][1] != "NULL" {
		t.Errorf("CREATE_TIME, UPDATE_TIME = %v, want a time between %s and %s, and NULL", created, before, after)
	}
	if st := queryStrings(t, root, "SHOW TABLE STATUS FROM lab LIKE 't'"); len(st) != 1 || st[0][11] != created[0][0] {
		t.Errorf("SHOW TABLE STATUS Create_time = %v, want %s", st, created[0][0])
	}
	mustExec(t, root, "USE lab; RENAME TABLE t TO u", "ALTER TABLE lab.u ADD COLUMN v INT")
	if got := queryStrings(t, root, "SELECT CREATE_TIME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'lab' AND TABLE_NAME = 'u'"); got[0][0] != created[0][0] {
		t.Errorf("CREATE_TIME after RENAME and ALTER = %v, want %s", got, created[0][0])
	}

	mustExec(t, root,
		"CREATE SYNTHETIC TABLE lab.syn FROM demo.census USING independent WITH EPSILON = 1",
		"CREATE SYNTHETIC TABLE lab.answers FROM demo.census USING gaussian WITH EPSILON = 0.5 WORKLOAD (SELECT sex, COUNT(*) FROM census GROUP BY sex)",
		"CREATE USER viewer IDENTIFIED BY 'viewer-pw'",
		"GRANT SELECT ON lab.syn TO viewer",
	)
	for table, want := range map[string]string{
		"syn":     "dpsql synthetic copy of demo.census (independent, epsilon=1, delta=1e-09)",
		"answers": "dpsql noisy answers of demo.census (gaussian, epsilon=0.5, delta=1e-09)",
	} {
		if got := queryStrings(t, root, "SELECT TABLE_COMMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'lab' AND TABLE_NAME = '"+table+"'"); len(got) != 1 || got[0][0] != want {
			t.Errorf("TABLE_COMMENT of lab.%s = %v, want %q", table, got, want)
		}
		if st := queryStrings(t, root, "SHOW TABLE STATUS FROM lab LIKE '"+table+"'"); len(st) != 1 || st[0][17] != want {
			t.Errorf("SHOW TABLE STATUS Comment of lab.%s = %v", table, st)
		}
		if sc := queryStrings(t, root, "SHOW CREATE TABLE lab."+table)[0][1]; !strings.HasSuffix(sc, " COMMENT='"+want+"'") {
			t.Errorf("SHOW CREATE TABLE lab.%s:\n%s", table, sc)
		}
	}
	viewer := s.open("viewer", "viewer-pw")
	got := queryStrings(t, viewer, "SELECT TABLE_NAME, TABLE_COMMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'lab'")
	if fmt.Sprint(got) != "[[syn dpsql synthetic copy of demo.census (independent, epsilon=1, delta=1e-09)]]" {
		t.Errorf("the viewer's information_schema.TABLES of lab: %v", got)
	}
}

// flatten1 returns the first column of rows.
func flatten1(rows [][]string) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r[0]
	}
	return out
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
