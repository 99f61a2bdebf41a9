package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/dpsql/dpsql/catalog"
)

// step is one statement of a script test: the rows it must return, or the
// MySQL error number it must fail with.
type step struct {
	query   string
	want    [][]string // nil: only check that it succeeds (DDL, DML)
	errCode uint16
}

func runSteps(t *testing.T, db *sql.DB, steps []step) {
	t.Helper()
	for _, s := range steps {
		rows, err := tryQueryStrings(db, s.query)
		if s.errCode != 0 {
			if got := mysqlCode(err); got != s.errCode {
				t.Errorf("%s: error %v (code %d), want code %d", s.query, err, got, s.errCode)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", s.query, err)
			continue
		}
		if s.want != nil && !reflect.DeepEqual(rows, s.want) {
			t.Errorf("%s:\n got %v\nwant %v", s.query, rows, s.want)
		}
	}
}

func TestSQLBehavesAsMySQL(t *testing.T) {
	s := startServer(t, t.TempDir())
	db := s.root()
	db.SetMaxOpenConns(1) // USE must stick to the connection
	runSteps(t, db, []step{
		{query: "CREATE DATABASE shop"},
		{query: "USE shop"},
		{query: `CREATE TABLE customers (
			id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
			name VARCHAR(40) NOT NULL,
			tier ENUM('free','pro','enterprise') NOT NULL DEFAULT 'free',
			age INT CHECK (age BETWEEN 18 AND 120))`},
		{query: `CREATE TABLE orders (
			id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
			customer_id INT NOT NULL,
			amount DECIMAL(10,2) NOT NULL)`},
		{query: "INSERT INTO customers (name, tier, age) VALUES ('ann','pro',30), ('bob','free',40), ('cy','enterprise',50)"},
		{query: "INSERT INTO orders (customer_id, amount) VALUES (1, 10.50), (1, 4.50), (2, 7.00), (3, 100.00), (3, 1.00)"},
		{query: "SELECT id, name FROM customers ORDER BY id", want: [][]string{{"1", "ann"}, {"2", "bob"}, {"3", "cy"}}},
		{query: "UPDATE customers SET tier = 'enterprise' WHERE name = 'bob'"},
		{query: "DELETE FROM orders WHERE amount < 2"},
		{query: `SELECT c.tier, COUNT(*), ROUND(SUM(o.amount)) FROM customers c JOIN orders o ON o.customer_id = c.id
			GROUP BY c.tier ORDER BY c.tier`,
			want: [][]string{{"pro", "2", "15"}, {"enterprise", "2", "107"}}},
		{query: "SELECT id FROM customers ORDER BY id DESC", want: [][]string{{"3"}, {"2"}, {"1"}}},
		{query: "SELECT MAX(id), MIN(id) FROM customers", want: [][]string{{"3", "1"}}},
		{query: "SELECT name FROM customers WHERE id = 2", want: [][]string{{"bob"}}},
		// GMS v0.20.0 reports CHECK and ENUM violations as 1105 (MySQL: 3819
		// and 1265); the row count below shows they were refused.
		{query: "INSERT INTO customers (name, age) VALUES ('kid', 5)", errCode: 1105},
		{query: "INSERT INTO customers (id, name) VALUES (1, 'dup')", errCode: 1062},
		{query: "INSERT INTO customers (name, tier) VALUES ('x', 'gold')", errCode: 1105},
		{query: "SELECT COUNT(*) FROM customers", want: [][]string{{"3"}}},
		{query: "INSERT INTO customers (name) VALUES ('dee')"},
		{query: "SELECT tier, id > 3 FROM customers WHERE name = 'dee'", want: [][]string{{"free", "1"}}},
		{query: "SHOW TABLES", want: [][]string{{"customers"}, {"orders"}}},
		{query: `SELECT column_name, data_type FROM information_schema.columns
			WHERE table_schema = 'shop' AND table_name = 'customers' ORDER BY ordinal_position`,
			want: [][]string{{"id", "int"}, {"name", "varchar"}, {"tier", "enum"}, {"age", "int"}}},
		// Statements commit on their own: ROLLBACK keeps them, and warns
		// as MySQL does for non-transactional tables.
		{query: "BEGIN"},
		{query: "INSERT INTO customers (name) VALUES ('eve')"},
		{query: "ROLLBACK"},
		{query: "SHOW WARNINGS", want: [][]string{{"Warning", "1196", "ROLLBACK undid nothing: dpsql commits every statement when it completes"}}},
		{query: "SELECT COUNT(*) FROM customers", want: [][]string{{"5"}}},
		{query: "DROP TABLE orders"},
		{query: "SELECT * FROM orders", errCode: 1146},
		{query: "SHOW TABLES", want: [][]string{{"customers"}}},
		{query: "DROP DATABASE shop"},
		{query: "USE shop", errCode: 1049},
	})
}

func TestAuthentication(t *testing.T) {
	s := startServer(t, t.TempDir())
	mustExec(t, s.root(),
		"CREATE DATABASE pub", "CREATE DATABASE raw",
		"CREATE TABLE pub.t (id INT PRIMARY KEY)", "CREATE TABLE raw.secret (id INT PRIMARY KEY)",
		"INSERT INTO pub.t VALUES (1), (2)", "INSERT INTO raw.secret VALUES (7)",
		"CREATE USER analyst IDENTIFIED BY 'pw'", "GRANT SELECT ON pub.* TO analyst")
	analyst := s.open("analyst", "pw")
	if got := queryStrings(t, analyst, "SELECT COUNT(*) FROM pub.t"); got[0][0] != "2" {
		t.Errorf("analyst count = %v", got)
	}
	denied := []struct {
		name string
		db   *sql.DB
		q    string
	}{
		{"ungranted table", analyst, "SELECT * FROM raw.secret"},
		{"write without grant", analyst, "INSERT INTO pub.t VALUES (3)"},
		{"self grant", analyst, "GRANT SELECT ON raw.* TO analyst"},
		{"grant tables", analyst, "SELECT * FROM mysql.user"},
	}
	for _, d := range denied {
		if _, err := tryQueryStrings(d.db, d.q); err == nil {
			t.Errorf("%s: %s succeeded", d.name, d.q)
		}
	}
	logins := []struct {
		user, password string
		code           uint16 // 0: any refusal
	}{
		{"analyst", "wrong", 1045},
		{"root", "wrong", 1045},
		{"root", "", 1045},
		{"dp_internal", "", 1045},
		// GMS offers no auth method for an unknown user, so the driver gives
		// up (client error 2012) instead of the server sending 1045.
		{"nobody", "pw", 0},
	}
	for _, l := range logins {
		err := s.open(l.user, l.password).Ping()
		if err == nil || (l.code != 0 && mysqlCode(err) != l.code) {
			t.Errorf("login %s/%q: %v, want refusal %d", l.user, l.password, err, l.code)
		}
	}
}

func TestMariaDBClient(t *testing.T) {
	mariadbCLI(t)
	s := startServer(t, t.TempDir())
	script := `CREATE DATABASE cli; CREATE TABLE cli.t (id INT PRIMARY KEY, v VARCHAR(10));
		INSERT INTO cli.t VALUES (1,'a'),(2,'b');
		SELECT v FROM cli.t ORDER BY id;
		/* leading comment */ SHOW DPSQL STATUS;
		SELECT COUNT(*) FROM cli.t`
	out, err := s.cli(t, "root", rootPassword, script)
	if err != nil {
		t.Fatalf("mariadb: %v\n%s", err, out)
	}
	got := lines(out)
	if len(got) != 7 || got[0] != "a" || got[1] != "b" || !strings.HasPrefix(got[2], "version\t") || got[6] != "2" {
		t.Fatalf("mariadb output:\n%s", out)
	}
	if !strings.HasPrefix(got[3], "data_dir\t"+s.dir) {
		t.Errorf("data_dir line = %q, want the server's data dir %s", got[3], s.dir)
	}
	out, err = s.cli(t, "root", "wrong", "SELECT 1")
	if err == nil || !strings.Contains(out, "1045") {
		t.Errorf("wrong password: err %v, output %q; want ERROR 1045", err, out)
	}
}

func TestStatusStatementAndProcedure(t *testing.T) {
	s := startServer(t, t.TempDir())
	db := s.root()
	names := [][]string{{"version"}, {"data_dir"}, {"started_at"}, {"uptime_seconds"}}
	firstCol := func(rows [][]string) [][]string {
		out := make([][]string, len(rows))
		for i, r := range rows {
			out[i] = r[:1]
		}
		return out
	}
	if got := firstCol(queryStrings(t, db, "SHOW DPSQL STATUS")); !reflect.DeepEqual(got, names) {
		t.Errorf("SHOW DPSQL STATUS = %v", got)
	}
	// A server-side prepared statement (COM_STMT_PREPARE) of the CALL twin.
	stmt, err := db.Prepare("CALL dpsql_status()")
	if err != nil {
		t.Fatalf("prepare: %v", err)
	}
	defer stmt.Close()
	rows, err := stmt.Query()
	if err != nil {
		t.Fatal(err)
	}
	got, err := scanStrings(rows)
	rows.Close()
	if err != nil || !reflect.DeepEqual(firstCol(got), names) {
		t.Errorf("prepared CALL dpsql_status() = %v, %v", got, err)
	}
	if _, err := db.Query("SHOW DPSQL STATUS nonsense"); mysqlCode(err) != 1064 {
		t.Errorf("malformed statement: %v, want error 1064", err)
	}
}

func TestMultiStatementScript(t *testing.T) {
	s := startServer(t, t.TempDir())
	db := s.open("root", rootPassword, multiStatements)
	rows, err := db.Query("SELECT 1; SHOW DPSQL STATUS; -- c\n SELECT 2")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var sets [][][]string
	for {
		got, err := scanStrings(rows)
		if err != nil {
			t.Fatal(err)
		}
		sets = append(sets, got)
		if !rows.NextResultSet() {
			break
		}
	}
	if len(sets) != 3 || sets[0][0][0] != "1" || sets[1][0][0] != "version" || sets[2][0][0] != "2" {
		t.Fatalf("result sets = %v", sets)
	}
}

// populate creates a database, a table with rows, and a user with a grant.
func populate(t *testing.T, s *server) {
	mustExec(t, s.root(),
		"CREATE DATABASE keep",
		"CREATE TABLE keep.t (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, v ENUM('x','y') NOT NULL, n INT CHECK (n BETWEEN 0 AND 9))",
		"INSERT INTO keep.t (v, n) VALUES ('x', 1), ('y', 2), ('x', 3)",
		"CREATE TABLE keep.other (k INT PRIMARY KEY)",
		"CREATE USER reader IDENTIFIED BY 'rpw'",
		"GRANT SELECT ON keep.t TO reader")
}

// verify checks what populate wrote.
func verify(t *testing.T, s *server) {
	t.Helper()
	root := s.root()
	if got := queryStrings(t, root, "SELECT id, v, n FROM keep.t ORDER BY id"); !reflect.DeepEqual(got,
		[][]string{{"1", "x", "1"}, {"2", "y", "2"}, {"3", "x", "3"}}) {
		t.Errorf("rows after restart = %v", got)
	}
	if got := queryStrings(t, root, "SHOW TABLES FROM keep"); len(got) != 2 {
		t.Errorf("tables after restart = %v", got)
	}
	mustExec(t, root, "INSERT INTO keep.t (v, n) VALUES ('y', 4)")
	if got := queryStrings(t, root, "SELECT id FROM keep.t WHERE n = 4"); got[0][0] != "4" {
		t.Errorf("AUTO_INCREMENT after restart gave id %v, want 4", got)
	}
	if _, err := root.Exec("INSERT INTO keep.t (v, n) VALUES ('x', 10)"); mysqlCode(err) != 1105 {
		t.Errorf("CHECK after restart: %v, want error 1105 (GMS's code for a CHECK violation)", err)
	}
	reader := s.open("reader", "rpw")
	if got := queryStrings(t, reader, "SELECT COUNT(*) FROM keep.t"); got[0][0] != "4" {
		t.Errorf("reader count = %v", got)
	}
	if _, err := tryQueryStrings(reader, "SELECT * FROM keep.other"); err == nil {
		t.Error("reader read an ungranted table after restart")
	}
	if err := s.open("reader", "bad").Ping(); mysqlCode(err) != 1045 {
		t.Errorf("reader with a bad password: %v, want 1045", err)
	}
}

func TestRestartKeepsEverything(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			s := startServer(t, dir)
			populate(t, s)
			s.stop(sig)
			verify(t, startServer(t, dir))
		})
	}
}

// TestKillDuringInserts kills the server while a client streams
// single-row inserts, then checks that every acknowledged row survived and
// at most the one in flight is extra.
func TestKillDuringInserts(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	mustExec(t, s.root(), "CREATE DATABASE crash", "CREATE TABLE crash.t (id INT PRIMARY KEY, pad VARCHAR(100))")
	db := s.root()
	var (
		mu    sync.Mutex
		acked []int
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		pad := strings.Repeat("p", 100)
		for i := 1; ; i++ {
			if _, err := db.Exec("INSERT INTO crash.t VALUES (?, ?)", i, pad); err != nil {
				return
			}
			mu.Lock()
			acked = append(acked, i)
			mu.Unlock()
		}
	}()
	for {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 300 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	s.stop(syscall.SIGKILL)
	<-done
	mu.Lock()
	want := append([]int(nil), acked...)
	mu.Unlock()

	s2 := startServer(t, dir)
	got := queryStrings(t, s2.root(), "SELECT id FROM crash.t ORDER BY id")
	present := make(map[int]bool, len(got))
	for _, r := range got {
		id, _ := strconv.Atoi(r[0])
		present[id] = true
	}
	for _, id := range want {
		if !present[id] {
			t.Fatalf("acknowledged row %d lost (%d acknowledged, %d present)", id, len(want), len(got))
		}
	}
	if len(got) > len(want)+1 {
		t.Fatalf("%d rows present, %d acknowledged: more than the one in flight", len(got), len(want))
	}
	mustExec(t, s2.root(), fmt.Sprintf("INSERT INTO crash.t VALUES (%d, 'after')", len(want)+10))
	t.Logf("%d rows acknowledged before SIGKILL, %d present after restart", len(want), len(got))
}

func TestStartupFailures(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	busyPort := strconv.Itoa(busy.Addr().(*net.TCPAddr).Port)

	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}

	newer := t.TempDir()
	s := startServer(t, newer)
	s.stop(syscall.SIGTERM)
	bumpFormatVersion(t, newer)

	tests := []struct {
		name string
		args []string
		want string
	}{
		{"port in use", []string{"serve", "--data-dir", t.TempDir(), "--port", busyPort}, "address already in use"},
		{"data dir under a file", []string{"serve", "--data-dir", filepath.Join(file, "sub")}, "cannot create data directory"},
		{"newer format", []string{"serve", "--data-dir", newer, "--port", "0"}, "written by a newer dpsql"},
		{"bad port", []string{"serve", "--port", "70000"}, "out of range"},
		{"unknown flag", []string{"serve", "--nope"}, "flag provided but not defined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, code := runDpsql(t, tt.args...)
			if code == 0 || !strings.Contains(stderr, tt.want) {
				t.Fatalf("exit %d, stderr:\n%s\nwant a non-zero exit mentioning %q", code, stderr, tt.want)
			}
		})
	}
}

// bumpFormatVersion rewrites a stopped server's data file as if a newer
// dpsql had written it.
func bumpFormatVersion(t *testing.T, dir string) {
	t.Helper()
	db, err := bbolt.Open(filepath.Join(dir, catalog.FileName), 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte("dpsql_header"))
		if b == nil {
			return errors.New("no dpsql_header bucket")
		}
		v := []byte{0, 0, 0, 0}
		v[3] = byte(catalog.FormatVersion + 1)
		return b.Put([]byte("version"), v)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestSecondServerRefused(t *testing.T) {
	dir := t.TempDir()
	first := startServer(t, dir)
	_, stderr, code := runDpsql(t, "serve", "--data-dir", dir, "--port", "0")
	if code == 0 || !strings.Contains(stderr, "in use by another dpsql server") || strings.Count(stderr, "in use") != 1 {
		t.Fatalf("second server: exit %d, stderr (the reason once):\n%s", code, stderr)
	}
	if got := queryStrings(t, first.root(), "SELECT 1"); got[0][0] != "1" {
		t.Fatal("first server disturbed")
	}
}

func TestDemo(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, "--demo")
	root := s.root()
	if got := queryStrings(t, root, "SELECT COUNT(*) FROM demo.census"); got[0][0] != "30000" {
		t.Fatalf("demo rows = %v", got)
	}
	got := queryStrings(t, root, "SELECT income, COUNT(*) FROM demo.census GROUP BY income ORDER BY income")
	if len(got) != 2 || got[0][0] != "<=50K" || got[1][0] != ">50K" {
		t.Fatalf("income groups = %v", got)
	}
	if _, err := root.Exec("INSERT INTO demo.census (age, sex, race, region, education, marital_status, workclass, occupation, hours_per_week, capital_gain, income) VALUES (200, 'male', 'white', 'west', 'masters', 'married', 'private', 'sales', 40, 0, '>50K')"); mysqlCode(err) != 1105 {
		t.Errorf("out-of-domain age: %v, want CHECK error (1105 in GMS)", err)
	}
	s.stop(syscall.SIGTERM)
	s2 := startServer(t, dir, "--demo")
	if got := queryStrings(t, s2.root(), "SELECT COUNT(*) FROM demo.census"); got[0][0] != "30000" {
		t.Fatalf("demo rows after restart = %v (seeded twice?)", got)
	}
}

func TestLoadDataLocalInfile(t *testing.T) {
	mariadbCLI(t)
	s := startServer(t, t.TempDir())
	var rows [][]string
	sum := 0
	for i := range 500 {
		rows = append(rows, []string{strconv.Itoa(i), "v" + strconv.Itoa(i%10)})
		sum += i
	}
	path := writeCSV(t, []string{"a", "b"}, rows)
	mustExec(t, s.root(), "CREATE DATABASE li", "CREATE TABLE li.t (a INT PRIMARY KEY, b VARCHAR(10))")
	host, port, _ := strings.Cut(s.addr, ":")
	out, err := exec.Command(mariadbCLI(t), "--local-infile=1", "-h"+host, "-P"+port, "-uroot", "-p"+rootPassword, "-e",
		"LOAD DATA LOCAL INFILE '"+path+"' INTO TABLE li.t FIELDS TERMINATED BY ',' IGNORE 1 LINES").CombinedOutput()
	if err != nil {
		t.Fatalf("LOAD DATA LOCAL INFILE: %v\n%s", err, out)
	}
	got := queryStrings(t, s.root(), "SELECT COUNT(*), CAST(SUM(a) AS SIGNED) FROM li.t")
	if got[0][0] != "500" || got[0][1] != strconv.Itoa(sum) {
		t.Fatalf("loaded %v, want 500 rows summing to %d", got, sum)
	}
}

var generatedPassword = regexp.MustCompile(`generated root password.* password=(\S+)`)

// TestGeneratedRootPassword starts without --root-password: the generated
// password is logged once and works, also after a restart.
func TestGeneratedRootPassword(t *testing.T) {
	dir := t.TempDir()
	s, err := launchArgs(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	m := generatedPassword.FindStringSubmatch(s.stderr.String())
	if m == nil {
		t.Fatalf("no generated password in the log:\n%s", s.stderr)
	}
	pw := m[1]
	if err := s.open("root", pw).Ping(); err != nil {
		t.Fatalf("generated password refused: %v", err)
	}
	s.stop(syscall.SIGTERM)
	s2, err := launchArgs(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(s2.stderr.String(), pw) {
		t.Error("the password was printed again on the second start")
	}
	if err := s2.open("root", pw).Ping(); err != nil {
		t.Errorf("generated password refused after restart: %v", err)
	}
	s2.stop(syscall.SIGTERM)
	s3 := startServer(t, dir) // --root-password replaces it
	if err := s3.open("root", pw).Ping(); mysqlCode(err) != 1045 {
		t.Errorf("old password after --root-password: %v, want 1045", err)
	}
	if err := s3.root().Ping(); err != nil {
		t.Errorf("new password refused: %v", err)
	}
}

// TestOneLogFormat: the server's log is one slog stream, in text or JSON:
// go-mysql-server's own lines join it, a client's SQL mistake is not a
// warning, and a clean shutdown with a busy client logs no error.
func TestOneLogFormat(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			s := startServer(t, t.TempDir(), "--log-format", format)
			root := s.root()
			if _, err := root.Exec("SELEC 1"); err == nil {
				t.Fatal("a syntax error was accepted")
			}
			if _, err := root.Exec("SELECT * FROM nodb.t"); err == nil {
				t.Fatal("a missing database was accepted")
			}
			bad := s.open("root", "wrong")
			if err := bad.Ping(); err == nil {
				t.Fatal("a wrong password was accepted")
			}
			conn, err := root.Conn(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			go conn.ExecContext(context.Background(), "SELECT SLEEP(5)")
			time.Sleep(200 * time.Millisecond) // let the statement start; not an assertion
			s.stop(syscall.SIGTERM)
			log := s.stderr.String()
			for _, line := range lines(log) {
				if format == "json" && !strings.HasPrefix(line, "{") {
					t.Errorf("not a JSON line: %s", line)
				}
				if format == "text" && !strings.HasPrefix(line, "time=") {
					t.Errorf("not a slog text line: %s", line)
				}
				for _, bad := range []string{"level=ERROR", `"level":"ERROR"`, "error running query", "SELEC"} {
					if strings.Contains(line, bad) {
						t.Errorf("log line %q contains %q", line, bad)
					}
				}
			}
			if !strings.Contains(log, "authentication failed") {
				t.Errorf("the failed login is not logged:\n%s", log)
			}
		})
	}
}
