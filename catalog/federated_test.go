package catalog

import (
	"context"
	"errors"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
)

// TestFederatedTable: a FEDERATED table's declaration (columns, checks,
// comment, connection) survives a reopen and a rename; every write of rows
// or columns is refused with ErrFederated, while checks may still change
// (domains are declared with them).
func TestFederatedTable(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir)
	h := newHarness(t, s)
	h.mustExec("", "CREATE DATABASE d")
	sch := sql.NewPrimaryKeySchema(sql.Schema{
		{Name: "age", Type: types.Int32, Nullable: true},
		{Name: "sex", Type: types.MustCreateEnumType([]string{"F", "M"}, sql.Collation_Default), Nullable: true},
	})
	const conn = "postgresql://u:secret@127.0.0.1:5432/db/public.adult"
	checks := []sql.CheckDefinition{{CheckExpression: "(`age` BETWEEN 0 AND 99)", Enforced: true}}
	ctx := context.Background()
	if _, err := s.CreateFederatedTable(ctx, "d", "big", sch, sql.Collation_Default, "remote adult", checks, conn); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateFederatedTable(ctx, "d", "big", sch, sql.Collation_Default, "", nil, conn); !sql.ErrTableAlreadyExists.Is(errors.Unwrap(err)) && !sql.ErrTableAlreadyExists.Is(err) {
		t.Errorf("second create: %v, want table exists", err)
	}
	if _, err := s.CreateFederatedTable(ctx, "d", "nocon", sch, sql.Collation_Default, "", nil, ""); err == nil {
		t.Error("a federated table without a connection was created")
	}

	for _, tc := range []struct {
		q      string
		refuse bool
	}{
		{"INSERT INTO big VALUES (1, 'F')", true},
		{"UPDATE big SET age = 2", false}, // no rows: nothing to write
		{"DELETE FROM big", true},         // GMS runs it as TRUNCATE
		{"DELETE FROM big WHERE age = 1", false},
		{"TRUNCATE TABLE big", true},
		{"ALTER TABLE big ADD COLUMN x INT", true},
		{"ALTER TABLE big DROP COLUMN sex", true},
		{"ALTER TABLE big ADD CONSTRAINT sexf CHECK (sex <> 'X')", false},
	} {
		_, err := h.query("d", tc.q)
		if got := errors.Is(err, ErrFederated); got != tc.refuse {
			t.Errorf("%s: err %v, want refused=%v", tc.q, err, tc.refuse)
		}
	}
	h.mustExec("d", "RENAME TABLE big TO big2")
	closeChecked(t, s)

	s = mustOpen(t, dir)
	tb, ok, err := s.Table(ctx, "d", "big2")
	if err != nil || !ok {
		t.Fatalf("table after reopen: %v %v", ok, err)
	}
	if !tb.Federated() || tb.Connection() != conn || tb.Comment() != "remote adult" {
		t.Errorf("after reopen: federated %v connection %q comment %q", tb.Federated(), tb.Connection(), tb.Comment())
	}
	got, _ := tb.GetChecks(nil)
	if len(got) != 2 || got[0].Name != "big_chk_1" || got[1].Name != "sexf" {
		t.Errorf("checks after reopen: %+v", got)
	}
	if len(tb.Schema()) != 2 {
		t.Errorf("columns after reopen: %v", tb.Schema())
	}
	h = newHarness(t, s)
	if rows := h.mustExec("d", "SELECT COUNT(*) FROM big2"); normValue(rows[0][0]) != "0" {
		t.Errorf("local rows of a federated table: %v", rows)
	}
	h.mustExec("d", "DROP TABLE big2")
	if _, ok, _ := s.Table(ctx, "d", "big2"); ok {
		t.Error("dropped federated table still there")
	}

	// A local table is not federated.
	h.mustExec("d", "CREATE TABLE loc (a INT)")
	if tb, _, _ := s.Table(ctx, "d", "loc"); tb.Federated() || tb.Connection() != "" {
		t.Error("local table reported federated")
	}
}
