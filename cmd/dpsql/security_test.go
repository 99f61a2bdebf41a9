package main

import (
	"context"
	"crypto/sha1"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Isolation over the wire: the attacks of engine/security_test.go that
// depend on the protocol (multi-statement scripts, server-side prepared
// statements, the CLI, concurrent connections, KILL, logins) against the
// real binary.

// analystPassword is distinctive so that the data file can be searched
// for it.
const analystPassword = "Pw-Plain-7f3c"

// secureServer starts a server with raw data, a table the analyst may read
// and a sandbox, and returns it with pools for root and the analyst.
func secureServer(t *testing.T, extra ...string) (s *server, root, analyst *sql.DB) {
	t.Helper()
	s = startServer(t, t.TempDir(), extra...)
	root = s.open("root", rootPassword, multiStatements)
	mustExec(t, root,
		"CREATE DATABASE census",
		"CREATE TABLE census.adult (id INT PRIMARY KEY, person VARCHAR(40) NOT NULL, age INT NOT NULL)",
		"INSERT INTO census.adult VALUES (1, 'SECRET-ROW-42', 42), (2, 'hidden-value-7', 77)",
		"CREATE TABLE census.syn (id INT PRIMARY KEY, age INT NOT NULL)",
		"INSERT INTO census.syn VALUES (1, 40)",
		"CREATE DATABASE lab",
		"CREATE TABLE lab.mine (id INT PRIMARY KEY, v VARCHAR(40))",
		"CREATE USER analyst IDENTIFIED BY '"+analystPassword+"'",
		"GRANT SELECT ON census.syn TO analyst",
		"GRANT ALL ON lab.* TO analyst",
	)
	analyst = s.open("analyst", analystPassword, multiStatements)
	return s, root, analyst
}

// runMulti runs a script and reads every result set; it returns all values
// read and the first error.
func runMulti(db *sql.DB, script string, args ...any) (string, error) {
	rows, err := db.Query(script, args...)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var out strings.Builder
	for {
		got, err := scanStrings(rows)
		fmt.Fprint(&out, got)
		if err != nil {
			return out.String(), err
		}
		if !rows.NextResultSet() {
			return out.String(), rows.Err()
		}
	}
}

func noMarker(t *testing.T, what, text string) {
	t.Helper()
	for _, m := range []string{"SECRET-ROW-42", "hidden-value-7"} {
		if strings.Contains(text, m) {
			t.Errorf("%s leaked %s:\n%s", what, m, text)
		}
	}
}

func TestIsolationOverTheWire(t *testing.T) {
	s, root, analyst := secureServer(t)

	t.Run("scripts", func(t *testing.T) {
		for _, script := range []string{
			"SELECT 1; SELECT * FROM census.adult",
			"SELECT 1; /* c */ SELECT person FROM `census`.`adult`; SELECT 2",
			"USE census; SELECT * FROM adult",
			"USE lab; INSERT INTO mine SELECT id, person FROM census.adult",
			"SHOW PRIVACY BUDGET; SELECT * FROM census.adult",
			"SELECT * FROM census.syn; SELECT LOAD_FILE('/etc/hostname')",
			"SET @q = 'SELECT * FROM census.adult'; PREPARE p FROM @q; EXECUTE p",
		} {
			out, err := runMulti(analyst, script)
			if err == nil {
				t.Errorf("%s: succeeded: %s", script, out)
			}
			noMarker(t, script, out+fmt.Sprint(err))
		}
	})

	t.Run("server-side prepared statements", func(t *testing.T) {
		// Without interpolateParams, arguments go by COM_STMT_PREPARE.
		if out, err := runMulti(analyst, "SELECT person FROM census.adult WHERE id = ?", 1); err == nil {
			t.Errorf("prepared raw read succeeded: %s", out)
		}
		// A COUNT query, the form executions are routed to models in.
		for _, q := range []string{"SELECT COUNT(*) FROM census.adult WHERE person = ?", "SELECT person, COUNT(*) FROM census.adult WHERE id > ? GROUP BY person"} {
			out, err := runMulti(analyst, q, 1)
			if err == nil {
				t.Errorf("prepared %s succeeded: %s", q, out)
			}
			noMarker(t, q, out+fmt.Sprint(err))
		}
		stmt, err := analyst.Prepare("SELECT table_name FROM information_schema.tables WHERE table_schema = ?")
		if err != nil {
			t.Fatal(err)
		}
		defer stmt.Close()
		rows, err := stmt.Query("census")
		if err != nil {
			t.Fatal(err)
		}
		got, err := scanStrings(rows)
		rows.Close()
		if err != nil || fmt.Sprint(got) != "[[syn]]" {
			t.Errorf("prepared information_schema: %v %v, want [[syn]]", got, err)
		}
		if _, err := analyst.Exec("CALL dpsql_domain(?)", "census.adult"); mysqlCode(err) != 1146 {
			t.Errorf("CALL dpsql_domain on a hidden table: %v, want error 1146", err)
		}
	})

	t.Run("cli", func(t *testing.T) {
		out, err := s.cli(t, "analyst", analystPassword,
			"USE census; SHOW TABLES; SELECT table_name FROM information_schema.tables WHERE table_schema = 'census'; SELECT * FROM adult")
		if err == nil {
			t.Errorf("CLI script succeeded:\n%s", out)
		}
		noMarker(t, "CLI", out)
		if got := lines(out); len(got) < 2 || got[0] != "syn" || got[1] != "syn" {
			t.Errorf("CLI listing = %q, want syn twice before the error", got)
		}
	})

	t.Run("processlist while the owner works", func(t *testing.T) {
		// The owner runs a statement whose text holds a raw value.
		done := make(chan error, 1)
		go func() {
			_, err := root.Exec("SELECT SLEEP(3), COUNT(*) FROM census.adult WHERE person <> 'SECRET-ROW-42'")
			done <- err
		}()
		// Root itself sees it, so the race is real ...
		deadline := time.Now().Add(10 * time.Second)
		for {
			out, err := runMulti(root, "SELECT info FROM information_schema.processlist")
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(out, "SECRET-ROW-42") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("root never saw its own statement in the processlist")
			}
			time.Sleep(20 * time.Millisecond)
		}
		// ... and the analyst, who sees their own threads only, does not.
		for _, q := range []string{"SHOW PROCESSLIST", "SHOW FULL PROCESSLIST", "SELECT * FROM information_schema.processlist",
			"SELECT (SELECT MAX(info) FROM information_schema.processlist)"} {
			out, err := runMulti(analyst, q)
			if err != nil {
				t.Errorf("%s: %v", q, err)
			}
			noMarker(t, q, out+fmt.Sprint(err))
			if strings.Contains(out, "root") {
				t.Errorf("%s shows root's threads to the analyst:\n%s", q, out)
			}
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})

	t.Run("kill", func(t *testing.T) {
		ctx := context.Background()
		rc, err := root.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		var id int64
		if err := rc.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id); err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{fmt.Sprintf("KILL %d", id), fmt.Sprintf("KILL QUERY %d", id)} {
			if _, err := analyst.Exec(q); err == nil {
				t.Errorf("analyst ran %s", q)
			}
		}
		if err := rc.PingContext(ctx); err != nil {
			t.Errorf("root's connection died: %v", err)
		}
	})

	t.Run("locked and unknown accounts", func(t *testing.T) {
		for _, up := range [][2]string{{"dp_internal", ""}, {"dp_internal", "x"}, {"analyst", "wrong"}, {"nobody", ""}} {
			if err := s.open(up[0], up[1]).Ping(); err == nil {
				t.Errorf("%s logged in with password %q", up[0], up[1])
			}
		}
	})

	t.Run("passwords stored hashed", func(t *testing.T) {
		s.stop(syscall.SIGTERM)
		b, err := os.ReadFile(filepath.Join(s.dir, "dpsql.db"))
		if err != nil {
			t.Fatal(err)
		}
		s1 := sha1.Sum([]byte(analystPassword))
		s2 := sha1.Sum(s1[:])
		hash := "*" + strings.ToUpper(hex.EncodeToString(s2[:]))
		switch {
		case strings.Contains(string(b), analystPassword):
			t.Error("the data file holds the analyst's password in clear")
		case !strings.Contains(string(b), hash):
			t.Errorf("the data file does not hold the password hash %s (looked in the wrong place?)", hash)
		}
	})
}

// TestSynthesisInterrupted: a client that disconnects mid-synthesis and a
// KILL QUERY mid-synthesis leave the server serving, no half-written
// table, and a ledger whose spent budget matches its entries.
func TestSynthesisInterrupted(t *testing.T) {
	s := startServer(t, t.TempDir(), "--demo")
	root := s.open("root", rootPassword, multiStatements)
	mustExec(t, root,
		"SET PRIVACY BUDGET FOR demo.census WITH EPSILON = 50, DELTA = 1e-6",
		"ALTER TABLE demo.census SET DOMAIN id BETWEEN 1 AND 30000 BINS 16",
		"ALTER TABLE demo.census SET DOMAIN capital_gain BETWEEN 0 AND 99999 BINS 32",
		"CREATE DATABASE lab",
		"CREATE USER analyst IDENTIFIED BY '"+analystPassword+"'",
		"GRANT ALL ON lab.* TO analyst",
		"GRANT SYNTHESIZE ON demo.census TO analyst",
	)
	// Long iterations keep the mechanism busy for many seconds.
	const synth = "CREATE SYNTHETIC TABLE lab.%s FROM demo.census USING aim WITH EPSILON = 1, SEED = 3, PGM_ITERS = 1000, FINAL_ITERS = 5000"
	analyst := s.open("analyst", analystPassword)

	// waitRunning waits until the analyst's statement shows in the
	// processlist (root may see it) and returns its connection ID.
	waitRunning := func(target string, done <-chan error) int64 {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for time.Now().Before(deadline) {
			select {
			case err := <-done:
				t.Fatalf("synthesis of %s ended before it could be interrupted: %v", target, err)
			default:
			}
			var id int64
			err := root.QueryRow("SELECT id FROM information_schema.processlist WHERE info LIKE ?", "CREATE SYNTHETIC TABLE lab."+target+"%").Scan(&id)
			if err == nil {
				time.Sleep(300 * time.Millisecond) // into the mechanism
				return id
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("synthesis of %s never showed as running", target)
		return 0
	}

	t.Run("client disconnects", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := analyst.ExecContext(ctx, fmt.Sprintf(synth, "gone"))
			done <- err
		}()
		id := waitRunning("gone", done)
		cancel() // go-sql-driver closes the connection
		<-done
		// The server keeps serving, and the statement of the closed
		// connection is cancelled by engine/disconnect.go on Linux (see
		// disconnect_test.go for that assertion); elsewhere it may still
		// run, and the operator stops it by its connection ID.
		time.Sleep(500 * time.Millisecond)
		n := queryStrings(t, root, fmt.Sprintf("SELECT COUNT(*) FROM information_schema.processlist WHERE id = %d AND info LIKE 'CREATE SYNTHETIC%%'", id))
		t.Logf("after the disconnect the synthesis is still running: %v", n[0][0] != "0")
		if n[0][0] != "0" {
			if _, err := root.Exec(fmt.Sprintf("KILL QUERY %d", id)); err != nil {
				t.Logf("KILL QUERY of the orphaned statement: %v", err)
			}
		}
	})

	t.Run("kill query", func(t *testing.T) {
		done := make(chan error, 1)
		go func() {
			_, err := analyst.Exec(fmt.Sprintf(synth, "killed"))
			done <- err
		}()
		id := waitRunning("killed", done)
		start := time.Now()
		mustExec(t, root, fmt.Sprintf("KILL QUERY %d", id))
		select {
		case err := <-done:
			var me *mysql.MySQLError
			if err == nil {
				t.Log("synthesis finished before the KILL took effect")
			} else if !errors.As(err, &me) || me.Number != 1317 {
				t.Errorf("killed synthesis: %v, want error 1317", err)
			}
			t.Logf("KILL QUERY took %v to stop the synthesis", time.Since(start).Round(time.Millisecond))
		case <-time.After(2 * time.Minute):
			t.Fatal("KILL QUERY did not stop the synthesis")
		}
	})

	// The server still serves, and the ledger is consistent with the
	// tables that exist.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		rows := queryStrings(t, root, "SELECT COUNT(*) FROM information_schema.processlist WHERE info LIKE 'CREATE SYNTHETIC%'")
		if rows[0][0] == "0" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("synthesis still running 2 minutes after its client left")
		}
		time.Sleep(100 * time.Millisecond)
	}
	tables := queryStrings(t, root, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'lab' ORDER BY 1")
	ledger := queryStrings(t, root, "SHOW PRIVACY LEDGER FOR demo.census")
	committed := map[string]bool{}
	for _, e := range ledger {
		line := strings.Join(e, " ")
		if strings.Contains(line, "reserved") {
			t.Errorf("ledger entry left reserved: %s", line)
		}
		for _, name := range []string{"gone", "killed"} {
			if strings.Contains(line, "lab."+name) && strings.Contains(line, "committed") {
				committed[name] = true
			}
		}
	}
	for _, name := range []string{"gone", "killed"} {
		exists := strings.Contains(fmt.Sprint(tables), name)
		t.Logf("lab.%s: table exists %v, ledger entry committed %v", name, exists, committed[name])
		if exists != committed[name] {
			t.Errorf("lab.%s exists=%v but its ledger entry committed=%v\nledger: %v", name, exists, committed[name], ledger)
		}
	}
	if got := queryStrings(t, analyst, "SELECT 1"); got[0][0] != "1" {
		t.Fatal("analyst cannot query after the interruptions")
	}
}
