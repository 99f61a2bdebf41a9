package main

import (
	"bytes"
	"crypto/sha1"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Server-side prepared dpsql statements (COM_STMT_PREPARE), through
// go-sql-driver without interpolateParams (it prepares every statement
// run with arguments, and db.Prepare prepares explicitly), a raw protocol
// client that reads the prepare response itself, and the mariadb CLI's
// SQL PREPARE … EXECUTE … USING.

// setupPrepared creates raw.t (sex and age with domains, city and income
// without) with 300 rows, and the database lab.
func setupPrepared(t *testing.T, root *sql.DB) {
	t.Helper()
	mustExec(t, root,
		"CREATE DATABASE raw", "CREATE DATABASE lab",
		`CREATE TABLE raw.t (sex ENUM('F','M') NOT NULL, age INT NOT NULL CHECK (age BETWEEN 0 AND 9),
			city VARCHAR(10) NOT NULL, income DOUBLE NOT NULL)`)
	var b strings.Builder
	b.WriteString("INSERT INTO raw.t (sex, age, city, income) VALUES ")
	for i := range 300 {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "('%s', %d, '%s', %d)", []string{"F", "M"}[i%2], (i*7)%10, []string{"a", "b", "c"}[i%3], (i*37)%1000)
	}
	mustExec(t, root, b.String())
}

// TestPreparedDpsqlStatements: every dpsql statement with ? in its value
// positions runs through COM_STMT_PREPARE and COM_STMT_EXECUTE exactly as
// the same statement written with its values; so do statements without
// placeholders, EXPLAIN and dp_marginal with placeholders.
func TestPreparedDpsqlStatements(t *testing.T) {
	s := startServer(t, t.TempDir())
	root := s.root()
	setupPrepared(t, root)
	exec := func(q string, args ...any) sql.Result {
		t.Helper()
		res, err := root.Exec(q, args...)
		if err != nil {
			t.Fatalf("%s %v: %v", q, args, err)
		}
		return res
	}

	// Domains: BETWEEN ? AND ? BINS ? and IN (?, ?, ?).
	exec("ALTER TABLE raw.t SET DOMAIN income BETWEEN ? AND ? BINS ?", 0, 1000, 10)
	exec("ALTER TABLE raw.t SET DOMAIN city IN (?, ?, ?)", "a", "b", "c")
	dom := map[string][]string{}
	for _, r := range queryStrings(t, root, "SHOW DOMAIN FOR raw.t") {
		dom[r[0]] = r
	}
	if !strings.Contains(strings.Join(dom["income"], " "), "10") || !strings.Contains(strings.Join(dom["city"], " "), "'a'") {
		t.Errorf("prepared SET DOMAIN: SHOW DOMAIN = %v", dom)
	}

	// The budget, then SHOW PRIVACY BUDGET prepared without placeholders.
	exec("SET PRIVACY BUDGET FOR raw.t WITH EPSILON = ?, DELTA = ?", 2, 1e-9)
	budget := queryStrings(t, root, "SHOW PRIVACY BUDGET FOR raw.t")
	if len(budget) != 1 || budget[0][1] != "2" || budget[0][2] != "1e-09" {
		t.Fatalf("budget after the prepared SET = %v, want ε 2 and δ 1e-09", budget)
	}
	if got := preparedStrings(t, root, "SHOW PRIVACY BUDGET FOR raw.t"); !reflect.DeepEqual(got, budget) {
		t.Errorf("prepared SHOW PRIVACY BUDGET = %v, want %v", got, budget)
	}

	// Synthesis with its generic and mechanism options bound.
	if n, _ := exec("CREATE SYNTHETIC TABLE lab.s FROM raw.t USING independent WITH EPSILON = ?, SEED = ?", 0.5, 3).RowsAffected(); n <= 0 {
		t.Errorf("prepared CREATE SYNTHETIC TABLE made %d rows", n)
	}
	exec("CREATE SYNTHETIC TABLE lab.a FROM raw.t USING aim WITH EPSILON = ?, SEED = ?, ROUNDS = ?, PGM_ITERS = ?, FINAL_ITERS = ?", 0.5, 4, 6, 10, 50)
	syn := map[string][]string{}
	for _, r := range queryStrings(t, root, "SHOW SYNTHETIC TABLES FROM lab") {
		syn[r[1]] = r
	}
	if syn["s"] == nil || syn["s"][5] != "0.5" || syn["a"] == nil || syn["a"][3] != "aim" {
		t.Errorf("SHOW SYNTHETIC TABLES after the prepared CREATEs: %v", syn)
	}
	ledger := queryStrings(t, root, "SHOW PRIVACY LEDGER FOR raw.t")
	if last := ledger[len(ledger)-1]; !strings.Contains(last[3], "EPSILON = 0.5") || last[6] != "committed" {
		t.Errorf("the ledger records %v, want the statement with its bound values", last)
	}

	// SHOW ERROR BOUNDS … CONFIDENCE ?, dp_marginal(?, …) and EXPLAIN with
	// a placeholder answer as their text.
	for _, tc := range []struct {
		prepared, text string
		args           []any
	}{
		{"SHOW ERROR BOUNDS FOR lab.a CONFIDENCE ?", "SHOW ERROR BOUNDS FOR lab.a CONFIDENCE 0.9", []any{0.9}},
		{"SELECT * FROM dp_marginal(?, ?)", "SELECT * FROM dp_marginal('lab.a', 'sex')", []any{"lab.a", "sex"}},
		{"SELECT * FROM dp_marginal('lab.a', ?, ?, ?)", "SELECT * FROM dp_marginal('lab.a', 'sex', 'age', 0.9)", []any{"sex", "age", 0.9}},
		{"EXPLAIN SELECT sex, COUNT(*) FROM lab.a WHERE age < ? GROUP BY sex", "EXPLAIN SELECT sex, COUNT(*) FROM lab.a WHERE age < 5 GROUP BY sex", []any{5}},
		{"EXPLAIN SELECT city, MAX(age) FROM lab.a WHERE age < ? GROUP BY city", "EXPLAIN SELECT city, MAX(age) FROM lab.a WHERE age < 5 GROUP BY city", []any{5}},
		{"EXPLAIN SELECT sex, COUNT(*) FROM lab.a GROUP BY sex", "EXPLAIN SELECT sex, COUNT(*) FROM lab.a GROUP BY sex", nil},
		{"SELECT sex, COUNT(*) FROM lab.a WHERE age < ? GROUP BY sex ORDER BY sex", "SELECT sex, COUNT(*) FROM lab.a WHERE age < 5 GROUP BY sex ORDER BY sex", []any{5}},
	} {
		want := queryStrings(t, root, tc.text)
		if got := preparedStrings(t, root, tc.prepared, tc.args...); !reflect.DeepEqual(got, want) || len(want) == 0 {
			t.Errorf("prepared %s %v = %v, want %v", tc.prepared, tc.args, got, want)
		}
	}

	// A string where a number goes is refused, naming the parameter, and
	// changes nothing; so is a malformed statement, with dpsql's message.
	_, err := root.Exec("SET PRIVACY BUDGET FOR raw.t WITH EPSILON = ?, DELTA = ?", "3", 1e-9)
	if mysqlCode(err) != 1064 || !strings.Contains(err.Error(), "parameter 1 (EPSILON) must be a number, not the string '3'") {
		t.Errorf("a string bound to EPSILON: %v", err)
	}
	_, err = root.Exec("CREATE SYNTHETIC TABLE lab.x FROM raw.t USING independent WITH EPSILON = ?", "0.5")
	if mysqlCode(err) != 1064 || !strings.Contains(err.Error(), "must be a number") {
		t.Errorf("a string bound to EPSILON of CREATE SYNTHETIC TABLE: %v", err)
	}
	_, err = root.Exec("SHOW ERROR BOUNDS FOR lab.a CONFIDENCE ?", 2)
	if mysqlCode(err) != 1064 || !strings.Contains(err.Error(), "confidence must be strictly between 0 and 1") {
		t.Errorf("CONFIDENCE ? bound to 2: %v", err)
	}
	_, err = root.Exec("SET PRIVACY BUDGET FOR raw.t WITH EPSILON = ?", 1)
	if mysqlCode(err) != 1064 || !strings.Contains(err.Error(), "DELTA is missing") {
		t.Errorf("prepared malformed statement: %v", err)
	}
	if got := queryStrings(t, root, "SHOW PRIVACY BUDGET FOR raw.t"); got[0][1] != "2" {
		t.Errorf("budget after refused statements = %v", got)
	}

	// The prepare response counts the placeholders: database/sql checks
	// the number of arguments against it.
	stmt, err := root.Prepare("SET PRIVACY BUDGET FOR raw.t WITH EPSILON = ?, DELTA = ?")
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	if _, err := stmt.Exec(4); err == nil || !strings.Contains(err.Error(), "expected 2 arguments, got 1") {
		t.Errorf("one argument for two placeholders: %v", err)
	}
	for _, eps := range []float64{3, 4} { // a prepared statement runs more than once
		if _, err := stmt.Exec(eps, 1e-9); err != nil {
			t.Fatal(err)
		}
		if got := queryStrings(t, root, "SHOW PRIVACY BUDGET FOR raw.t"); got[0][1] != fmt.Sprint(eps) {
			t.Errorf("budget after the prepared SET with ε %v = %v", eps, got)
		}
	}

	// The CALL twins still work.
	if got := preparedStrings(t, root, "CALL dpsql_privacy_budget(?)", "raw.t"); len(got) != 1 || got[0][1] != "4" {
		t.Errorf("CALL dpsql_privacy_budget(?) = %v", got)
	}
}

// TestPrepareResponse: the COM_STMT_PREPARE response of a dpsql statement
// reports its placeholders and the columns its execution returns (none for
// statements answering an OK packet); a malformed one gets dpsql's syntax
// error, not vitess's.
func TestPrepareResponse(t *testing.T) {
	s := startServer(t, t.TempDir())
	root := s.root()
	setupPrepared(t, root)
	mustExec(t, root, "SET PRIVACY BUDGET FOR raw.t WITH EPSILON = 1, DELTA = 1e-9",
		"ALTER TABLE raw.t SET DOMAIN income BETWEEN 0 AND 1000 BINS 10", "ALTER TABLE raw.t SET DOMAIN city IN ('a', 'b', 'c')",
		"CREATE SYNTHETIC TABLE lab.a FROM raw.t USING aim WITH EPSILON = 0.5, ROUNDS = 6, PGM_ITERS = 10, FINAL_ITERS = 50")
	c := dialRaw(t, s.addr, "root", rootPassword)
	for _, tc := range []struct {
		prepared, text string
		params         int
	}{
		{"SET PRIVACY BUDGET FOR raw.t WITH EPSILON = ?, DELTA = ?", "SET PRIVACY BUDGET FOR raw.t WITH EPSILON = 1, DELTA = 1e-9", 2},
		{"SHOW PRIVACY BUDGET FOR raw.t", "SHOW PRIVACY BUDGET FOR raw.t", 0},
		{"SHOW PRIVACY LEDGER FOR raw.t", "SHOW PRIVACY LEDGER FOR raw.t", 0},
		{"SHOW DOMAIN FOR raw.t", "SHOW DOMAIN FOR raw.t", 0},
		{"ALTER TABLE raw.t SET DOMAIN income BETWEEN ? AND ? BINS ?", "ALTER TABLE raw.t SET DOMAIN income BETWEEN 0 AND 1000 BINS 10", 3},
		{"ALTER TABLE raw.t SET DOMAIN city IN (?, ?, 'c')", "ALTER TABLE raw.t SET DOMAIN city IN ('a', 'b', 'c')", 2},
		{"CREATE SYNTHETIC TABLE lab.s FROM raw.t USING independent WITH EPSILON = ?, SEED = ?", "", 2},
		{"SHOW ERROR BOUNDS FOR lab.a CONFIDENCE ?", "SHOW ERROR BOUNDS FOR lab.a CONFIDENCE 0.9", 1},
		{"/* a comment */ SHOW SYNTHETIC TABLES FROM lab", "SHOW SYNTHETIC TABLES FROM lab", 0},
		{"SHOW MECHANISMS", "SHOW MECHANISMS", 0},
		{"SHOW DPSQL STATUS", "SHOW DPSQL STATUS", 0},
		{"GRANT SYNTHESIZE ON raw.t TO root", "", 0},
		{"SELECT * FROM dp_marginal('lab.a', 'sex', 'age', ?)", "SELECT * FROM dp_marginal('lab.a', 'sex', 'age', 0.9)", 1},
		{"EXPLAIN SELECT sex, COUNT(*) FROM lab.a WHERE age < ? GROUP BY sex", "EXPLAIN SELECT sex, COUNT(*) FROM lab.a WHERE age < 5 GROUP BY sex", 1},
	} {
		params, cols, err := c.prepare(tc.prepared)
		if err != nil {
			t.Errorf("prepare %s: %v", tc.prepared, err)
			continue
		}
		want := 0
		if tc.text != "" {
			want = len(columns(t, root, tc.text))
		}
		if params != tc.params || cols != want {
			t.Errorf("prepare %s: %d params, %d columns; want %d, %d", tc.prepared, params, cols, tc.params, want)
		}
	}
	for _, q := range []string{
		"CREATE SYNTHETIC TABLE lab.s FROM raw.t USING independent WITH EPSILON ?",
		"SHOW PRIVACY BUDGET FOR raw.t; SHOW PRIVACY BUDGET",
	} {
		_, _, err := c.prepare(q)
		var pe *rawError
		if !errors.As(err, &pe) || pe.code != 1064 || strings.Contains(pe.msg, "at position") {
			t.Errorf("prepare %s: %v, want dpsql's 1064", q, err)
		}
	}
}

// TestPreparedDpsqlOverTLS: the packet filter sits above TLS.
func TestPreparedDpsqlOverTLS(t *testing.T) {
	certFile, keyFile, pool := selfSigned(t, t.TempDir())
	s := startServer(t, t.TempDir(), "--tls-cert", certFile, "--tls-key", keyFile)
	setupPrepared(t, s.root())
	var handshakes atomic.Int32
	secure := s.open("root", rootPassword, withTLS(pool, &handshakes))
	if _, err := secure.Exec("SET PRIVACY BUDGET FOR raw.t WITH EPSILON = ?, DELTA = ?", 2, 1e-9); err != nil {
		t.Fatal(err)
	}
	if got := preparedStrings(t, secure, "SHOW PRIVACY BUDGET FOR raw.t"); len(got) != 1 || got[0][1] != "2" {
		t.Errorf("budget over TLS = %v", got)
	}
	if handshakes.Load() == 0 {
		t.Fatal("no TLS handshake")
	}
}

// TestSQLPrepareDpsql: the mariadb CLI's PREPARE … FROM '…' and EXECUTE …
// USING @vars of dpsql statements.
func TestSQLPrepareDpsql(t *testing.T) {
	s := startServer(t, t.TempDir())
	setupPrepared(t, s.root())
	mustExec(t, s.root(), "ALTER TABLE raw.t SET DOMAIN income BETWEEN 0 AND 1000 BINS 10", "ALTER TABLE raw.t SET DOMAIN city IN ('a', 'b', 'c')")
	mariadbCLI(t)
	out, err := s.cli(t, "root", rootPassword, `
PREPARE b FROM 'SET PRIVACY BUDGET FOR raw.t WITH EPSILON = ?, DELTA = ?';
SET @e = 2, @d = 1e-9;
EXECUTE b USING @e, @d;
PREPARE c FROM 'CREATE SYNTHETIC TABLE lab.s FROM raw.t USING independent WITH EPSILON = ?, SEED = ?';
SET @e = 0.5, @seed = 3;
EXECUTE c USING @e, @seed;
DEALLOCATE PREPARE c;
PREPARE show_budget FROM 'SHOW PRIVACY BUDGET FOR raw.t';
EXECUTE show_budget;`)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if l := lines(out); len(l) != 1 || !strings.HasPrefix(l[0], "raw.t\t2\t1e-09\t") {
		t.Errorf("CLI output %q, want the budget row of raw.t", out)
	}
	if got := queryStrings(t, s.root(), "SELECT COUNT(*) > 0 FROM lab.s"); got[0][0] != "1" {
		t.Errorf("lab.s after EXECUTE: %v", got)
	}
	out, err = s.cli(t, "root", rootPassword, `PREPARE b FROM 'SET PRIVACY BUDGET FOR raw.t WITH EPSILON = ?, DELTA = ?';
SET @e = 'two', @d = 1e-9;
EXECUTE b USING @e, @d;`)
	if err == nil || !strings.Contains(out, "ERROR 1064") || !strings.Contains(out, "parameter 1 (EPSILON) must be a number") {
		t.Errorf("a string for EPSILON: %v\n%s", err, out)
	}
}

// rawConn is a minimal MySQL protocol client that reads COM_STMT_PREPARE
// responses, which drivers do not expose.
type rawConn struct {
	t  *testing.T
	c  net.Conn
	rd io.Reader
}

// rawError is an ERR packet.
type rawError struct {
	code int
	msg  string
}

func (e *rawError) Error() string { return fmt.Sprintf("ERROR %d: %s", e.code, e.msg) }

// dialRaw connects and authenticates with mysql_native_password.
func dialRaw(t *testing.T, addr, user, password string) *rawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	r := &rawConn{t: t, c: c, rd: c}
	greeting, _ := r.read()
	// protocol version, server version\0, connection id, 8 bytes of salt,
	// filler, capabilities, charset, status, capabilities, salt length,
	// 10 reserved bytes, the rest of the salt\0.
	p := bytes.IndexByte(greeting[1:], 0) + 2 + 4
	salt := append([]byte{}, greeting[p:p+8]...)
	p += 8 + 1 + 2 + 1 + 2 + 2 + 1 + 10
	salt = append(salt, greeting[p:p+12]...)
	const caps = 0x00000200 | 0x00008000 | 0x00080000 | 0x00000001 // protocol 41, secure connection, plugin auth, long password
	var resp bytes.Buffer
	binary.Write(&resp, binary.LittleEndian, uint32(caps))
	binary.Write(&resp, binary.LittleEndian, uint32(1<<24))
	resp.WriteByte(33)
	resp.Write(make([]byte, 23))
	resp.WriteString(user + "\x00")
	scramble := nativePassword(salt, password)
	resp.WriteByte(byte(len(scramble)))
	resp.Write(scramble)
	resp.WriteString("mysql_native_password\x00")
	r.write(1, resp.Bytes())
	if ok, err := r.read(); err != nil || ok[0] != 0 {
		t.Fatalf("authentication: %v %q", err, ok)
	}
	return r
}

// nativePassword is mysql_native_password's scramble.
func nativePassword(salt []byte, password string) []byte {
	h1 := sha1.Sum([]byte(password))
	h2 := sha1.Sum(h1[:])
	h := sha1.New()
	h.Write(salt)
	h.Write(h2[:])
	out := h.Sum(nil)
	for i := range out {
		out[i] ^= h1[i]
	}
	return out
}

func (r *rawConn) write(seq byte, payload []byte) {
	hdr := []byte{byte(len(payload)), byte(len(payload) >> 8), byte(len(payload) >> 16), seq}
	if _, err := r.c.Write(append(hdr, payload...)); err != nil {
		r.t.Fatal(err)
	}
}

// read reads one packet; an ERR packet is returned as a *rawError too.
func (r *rawConn) read() ([]byte, error) {
	r.c.SetReadDeadline(time.Now().Add(time.Minute))
	var hdr [4]byte
	if _, err := io.ReadFull(r.rd, hdr[:]); err != nil {
		r.t.Fatal(err)
	}
	p := make([]byte, int(hdr[0])|int(hdr[1])<<8|int(hdr[2])<<16)
	if _, err := io.ReadFull(r.rd, p); err != nil {
		r.t.Fatal(err)
	}
	if len(p) > 3 && p[0] == 0xff {
		msg := string(p[3:])
		if strings.HasPrefix(msg, "#") && len(msg) >= 6 {
			msg = msg[6:]
		}
		return p, &rawError{code: int(binary.LittleEndian.Uint16(p[1:3])), msg: msg}
	}
	return p, nil
}

// prepare sends COM_STMT_PREPARE and returns the response's numbers of
// parameters and columns, having read their definitions, then closes the
// statement.
func (r *rawConn) prepare(query string) (params, cols int, err error) {
	r.write(0, append([]byte{0x16}, query...))
	p, err := r.read()
	if err != nil {
		return 0, 0, err
	}
	if p[0] != 0 || len(p) < 12 {
		r.t.Fatalf("prepare response %q", p)
	}
	id := binary.LittleEndian.Uint32(p[1:5])
	cols = int(binary.LittleEndian.Uint16(p[5:7]))
	params = int(binary.LittleEndian.Uint16(p[7:9]))
	for _, n := range []int{params, cols} {
		if n == 0 {
			continue
		}
		for range n + 1 { // definitions, then EOF
			r.read()
		}
	}
	close := binary.LittleEndian.AppendUint32([]byte{0x19}, id)
	r.write(0, close)
	return params, cols, nil
}
