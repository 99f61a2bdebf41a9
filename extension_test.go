package dpsql_test

import (
	"context"
	"strings"
	"testing"

	"github.com/dolthub/go-mysql-server/memory"
	gms "github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"

	"github.com/dpsql/dpsql"
)

// TestInstallIsolatesHostTables: dpsql's users, grants and isolation
// apply to the host's tables, which stay writable by those allowed.
func TestInstallIsolatesHostTables(t *testing.T) {
	db := memory.NewDatabase("app")
	pro := memory.NewDBProvider(db)
	for _, name := range []string{"secret", "open"} {
		db.AddTable(name, memory.NewTable(db, name, gms.NewPrimaryKeySchema(gms.Schema{
			{Name: "x", Type: types.Int64, Source: name, PrimaryKey: true},
		}), db.GetForeignKeyCollection()))
	}
	srv, err := dpsql.Install(context.Background(), dpsql.Host{
		Provider:   pro,
		NewSession: func(b *gms.BaseSession) gms.Session { return memory.NewSession(b, pro) },
	}, dpsql.Options{DataDir: t.TempDir(), RootPassword: "pw"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	root := srv.OpenDB("root", "pw", "")
	defer root.Close()
	for _, q := range []string{
		"INSERT INTO app.secret VALUES (1), (2)",
		"INSERT INTO app.open VALUES (7)",
		"CREATE USER u IDENTIFIED BY 'upw'",
		"GRANT SELECT ON app.open TO u",
	} {
		if _, err := root.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var n int
	if err := root.QueryRow("SELECT COUNT(*) FROM app.secret").Scan(&n); err != nil || n != 2 {
		t.Fatalf("host rows written through dpsql: %d, %v", n, err)
	}
	u := srv.OpenDB("u", "upw", "app")
	defer u.Close()
	if err := u.QueryRow("SELECT x FROM app.open").Scan(&n); err != nil || n != 7 {
		t.Errorf("granted table: %d, %v", n, err)
	}
	if _, err := u.Exec("SELECT * FROM app.secret"); err == nil {
		t.Error("u reads app.secret")
	}
	for _, q := range []string{"SHOW TABLES FROM app", "SELECT table_name FROM information_schema.tables WHERE table_schema = 'app'"} {
		rows, err := u.Query(q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		var names []string
		for rows.Next() {
			var s string
			rows.Scan(&s)
			names = append(names, s)
		}
		rows.Close()
		if strings.Join(names, ",") != "open" {
			t.Errorf("%s: u sees %v", q, names)
		}
	}
	if _, err := root.Exec("DROP DATABASE app"); err == nil {
		t.Error("dpsql dropped the host's database")
	}
}
