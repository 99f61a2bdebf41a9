package dpsql_test

import (
	"context"
	"database/sql"
	"io"
	"net"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/dpsql/dpsql"
	_ "github.com/dpsql/dpsql/driver"
)

func TestEmbeddedServer(t *testing.T) {
	dir := t.TempDir()
	srv, err := dpsql.Open(context.Background(), dpsql.Options{DataDir: dir, RootPassword: "pw", Demo: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if srv.Name() == "" || !strings.HasPrefix(srv.DSN("root", "pw", "demo"), "root:pw@dpsql(") {
		t.Errorf("name %q, DSN %q", srv.Name(), srv.DSN("root", "pw", "demo"))
	}

	// The same name cannot be opened twice; the same directory is locked.
	if _, err := dpsql.Open(context.Background(), dpsql.Options{DataDir: t.TempDir(), RootPassword: "pw", Name: srv.Name()}); err == nil {
		t.Error("second server under the same name")
	}
	if _, err := dpsql.Open(context.Background(), dpsql.Options{DataDir: dir, RootPassword: "pw", Name: "other"}); err == nil {
		t.Error("second server on a locked data directory")
	}

	db, err := sql.Open("dpsql", srv.DSN("root", "pw", "demo"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM census").Scan(&n); err != nil || n == 0 {
		t.Fatalf("count %d, %v", n, err)
	}
	// Prepared statements with parameters go over the pipe too.
	if err := db.QueryRow("SELECT COUNT(*) FROM census WHERE age > ?", 200).Scan(&n); err != nil || n != 0 {
		t.Errorf("prepared: %d, %v", n, err)
	}
	// Wrong password: refused as over TCP.
	bad := srv.OpenDB("root", "nope", "")
	defer bad.Close()
	if err := bad.Ping(); err == nil || !strings.Contains(err.Error(), "1045") {
		t.Errorf("wrong password: %v", err)
	}
	// A DSN that does not name an embedded server.
	if _, err := sql.Open("dpsql", "root:pw@tcp(127.0.0.1:1)/"); err == nil {
		t.Error("tcp DSN accepted")
	}
	unknown, _ := sql.Open("dpsql", "root:pw@dpsql(nobody)/")
	defer unknown.Close()
	if err := unknown.Ping(); err == nil || !strings.Contains(err.Error(), "no embedded server") {
		t.Errorf("unknown server: %v", err)
	}

	// Metrics count the embedded connections and statements.
	rec := httptest.NewRecorder()
	srv.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Result().Body)
	if !strings.Contains(string(body), `dpsql_statements_total{kind="select",outcome="ok"}`) {
		t.Errorf("metrics:\n%s", body)
	}

	// After Close, connections fail and the directory opens again.
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Ping(); err == nil {
		db.SetMaxIdleConns(0)
		if _, err := db.Exec("SELECT 1"); err == nil {
			t.Error("query after Close")
		}
	}
	again, err := dpsql.Open(context.Background(), dpsql.Options{DataDir: dir, RootPassword: "pw"})
	if err != nil {
		t.Fatal(err)
	}
	again.Close()
}

// TestEmbeddedWithNetworkListener: a server opened with a listener serves
// network clients and in-process ones alike.
func TestEmbeddedWithNetworkListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := dpsql.Open(context.Background(), dpsql.Options{DataDir: t.TempDir(), RootPassword: "pw", Listener: ln})
	if err != nil {
		t.Fatal(err)
	}
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.Addr = "root", "pw", "tcp", ln.Addr().String()
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tcp := sql.OpenDB(conn)
	defer tcp.Close()
	if _, err := tcp.Exec("CREATE DATABASE viatcp"); err != nil {
		t.Fatal(err)
	}
	pipe := srv.OpenDB("root", "pw", "")
	defer pipe.Close()
	var name string
	if err := pipe.QueryRow("SHOW DATABASES LIKE 'viatcp'").Scan(&name); err != nil || name != "viatcp" {
		t.Errorf("database made over TCP, seen in process: %q, %v", name, err)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		c.Close()
		t.Error("network listener still open after Close")
	}
}

// TestPreparedExplainSynthetic: EXPLAIN CREATE SYNTHETIC TABLE prepares
// over the wire (COM_STMT_PREPARE) without parameters; with parameters it
// points to its CALL twin, which takes them.
func TestPreparedExplainSynthetic(t *testing.T) {
	srv, err := dpsql.Open(context.Background(), dpsql.Options{DataDir: t.TempDir(), RootPassword: "pw", Demo: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	db := srv.OpenDB("root", "pw", "")
	defer db.Close()
	for _, q := range []string{"SET PRIVACY BUDGET FOR demo.census WITH EPSILON = 5, DELTA = 1e-6", "CREATE DATABASE lab"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	const stmt = "CREATE SYNTHETIC TABLE lab.x FROM demo.census USING gaussian WITH EPSILON = 1 WORKLOAD ALL 1-WAY"
	st, err := db.Prepare("EXPLAIN " + stmt)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	count := func(rows *sql.Rows, err error) int {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		n := 0
		for rows.Next() {
			n++
		}
		return n
	}
	prepared := count(st.Query())
	called := count(db.Query("CALL dpsql_explain_synthetic_table(?)", stmt))
	if prepared < 10 || prepared != called {
		t.Errorf("prepared EXPLAIN: %d rows, CALL twin %d", prepared, called)
	}
	if _, err := db.Query("EXPLAIN CREATE SYNTHETIC TABLE lab.x FROM demo.census USING gaussian WITH EPSILON = ?", 1); err == nil ||
		!strings.Contains(err.Error(), "dpsql_explain_synthetic_table") {
		t.Errorf("EXPLAIN with a placeholder: %v", err)
	}
}
