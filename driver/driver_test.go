package driver

import (
	"context"
	"database/sql"
	"net"
	"strings"
	"testing"
)

func TestRegister(t *testing.T) {
	dial := func(context.Context) (net.Conn, error) { return nil, nil }
	un, err := Register("t1", dial)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Register("t1", dial); err == nil {
		t.Error("registered t1 twice")
	}
	if _, err := Register("", dial); err == nil {
		t.Error("registered an empty name")
	}
	un()
	un() // idempotent
	if _, err := lookup("t1"); err == nil {
		t.Error("t1 still registered")
	}
	un2, err := Register("t1", dial)
	if err != nil {
		t.Fatalf("re-register after unregister: %v", err)
	}
	un2()
}

func TestOpenConnector(t *testing.T) {
	for dsn, want := range map[string]string{
		"u:p@dpsql(app)/db":   "",
		"u:p@tcp(1.2.3.4)/db": "does not name an embedded server",
		"u:p@/db":             "does not name an embedded server",
		"::::":                "dpsql driver",
	} {
		_, err := Driver{}.OpenConnector(dsn)
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", dsn, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: %v, want %q", dsn, err, want)
		}
		if err != nil && strings.Contains(err.Error(), ":p@") {
			t.Errorf("%s: error shows the password: %v", dsn, err)
		}
	}
	// A server that is not open fails at connect time, saying so.
	db, err := sql.Open(Name, "u:p@dpsql(nobody)/")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Ping(); err == nil || !strings.Contains(err.Error(), `no embedded server called "nobody"`) {
		t.Errorf("ping: %v", err)
	}
}
