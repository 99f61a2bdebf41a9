package engine

import (
	"strings"
	"testing"
)

// TestQuoteCheckColumns: CHECK constraints on columns whose names are not
// plain identifiers keep working (GMS stores checks as text and parses them
// back on every write).
func TestQuoteCheckColumns(t *testing.T) {
	for name, st := range storages(t) {
		t.Run(name, func(t *testing.T) {
			e := newTestEngine(t, st(), nil)
			ctx := sessionCtx(e, 1, RootUser, localhost)
			for _, q := range []string{
				"CREATE DATABASE d",
				"CREATE TABLE d.t (`income>50K` INT NOT NULL CHECK (`income>50K` BETWEEN 0 AND 1), `order` INT, `a-b` INT)",
				"ALTER TABLE d.t ADD CONSTRAINT c2 CHECK (`a-b` < 10 AND `order` >= 0)",
				"INSERT INTO d.t VALUES (1, 0, 9)",
			} {
				if _, _, err := query(e, ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			for _, bad := range []string{"INSERT INTO d.t VALUES (2, 0, 0)", "INSERT INTO d.t VALUES (0, -1, 0)", "INSERT INTO d.t VALUES (0, 0, 10)"} {
				if _, _, err := query(e, ctx, bad); err == nil {
					t.Errorf("%s accepted", bad)
				}
			}
			_, rows, err := query(e, ctx, "SHOW CREATE TABLE d.t")
			if err != nil {
				t.Fatal(err)
			}
			ddl := rows[0][1].(string)
			for _, want := range []string{"CHECK ((`income>50K` BETWEEN 0 AND 1))", "`a-b` < 10"} {
				if !strings.Contains(ddl, want) {
					t.Errorf("SHOW CREATE TABLE lacks %q:\n%s", want, ddl)
				}
			}
		})
	}
}
