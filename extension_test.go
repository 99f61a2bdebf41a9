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
		"CREATE TABLE app.made (y INT PRIMARY KEY)", // in the host's database
		"INSERT INTO app.made VALUES (3)",
	} {
		if _, err := root.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var n int
	if err := root.QueryRow("SELECT COUNT(*) FROM app.secret").Scan(&n); err != nil || n != 2 {
		t.Fatalf("host rows written through dpsql: %d, %v", n, err)
	}
	if _, ok, _ := db.GetTableInsensitive(newHostCtx(pro), "made"); !ok {
		t.Error("CREATE TABLE through dpsql did not reach the host's database")
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

func newHostCtx(pro *memory.DbProvider) *gms.Context {
	return gms.NewContext(context.Background(), gms.WithSession(memory.NewSession(gms.NewBaseSession(), pro)))
}

// TestInstallRefusesHostUnits: a privacy unit declared on host tables is
// never dropped silently; the synthesis is refused before any charge.
func TestInstallRefusesHostUnits(t *testing.T) {
	db := memory.NewDatabase("app")
	pro := memory.NewDBProvider(db)
	db.AddTable("households", memory.NewTable(db, "households", gms.NewPrimaryKeySchema(gms.Schema{
		{Name: "id", Type: types.Int64, Source: "households", PrimaryKey: true},
	}), db.GetForeignKeyCollection()))
	db.AddTable("people", memory.NewTable(db, "people", gms.NewPrimaryKeySchema(gms.Schema{
		{Name: "id", Type: types.Int64, Source: "people", PrimaryKey: true, AutoIncrement: true},
		{Name: "hh", Type: types.Int64, Source: "people"},
		{Name: "sex", Type: types.MustCreateEnumType([]string{"F", "M"}, gms.Collation_Default), Source: "people"},
	}), db.GetForeignKeyCollection()))
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
		"INSERT INTO app.households VALUES (1), (2)",
		"INSERT INTO app.people (hh, sex) VALUES (1, 'F'), (1, 'M'), (2, 'F')",
		"CREATE DATABASE lab",
	} {
		if _, err := root.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if _, err := root.Exec("ALTER TABLE app.people SET PRIVACY UNIT app.households ON people.hh = households.id MAX 4"); err != nil {
		t.Logf("SET PRIVACY UNIT on host tables refused: %v", err)
		return
	}
	if _, err := root.Exec("SET PRIVACY BUDGET FOR app.people WITH EPSILON = 1, DELTA = 1e-6"); err != nil {
		t.Logf("budget on a unit's child refused: %v", err)
	}
	_, err = root.Exec("CREATE SYNTHETIC TABLE lab.p FROM app.people USING independent WITH EPSILON = 0.5")
	if err == nil || !strings.Contains(err.Error(), "privacy unit") {
		t.Fatalf("synthesis of a host table with a privacy unit: %v", err)
	}
	if strings.Contains(err.Error(), "stays spent") {
		t.Errorf("refused after the charge: %v", err)
	}
}
