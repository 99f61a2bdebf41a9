package dpsql_test

import (
	"context"
	"database/sql"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

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
