package main

import (
	"reflect"
	"strings"
	"syscall"
	"testing"
)

// Integration tests of ALTER TABLE … SET DOMAIN and SHOW DOMAIN through the
// real binary.

func TestDomainStatements(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	setupPrivacy(t, s.root())
	owner, analyst := s.as("owner"), s.as("analyst")

	wantCols := []string{"column", "type", "kind", "size", "domain", "nullable", "source", "missing", "note"}
	if got := columns(t, owner, "SHOW DOMAIN FOR raw.people"); !reflect.DeepEqual(got, wantCols) {
		t.Errorf("SHOW DOMAIN columns = %v, want %v", got, wantCols)
	}
	missing := func(rows [][]string) []string {
		var out []string
		for _, r := range rows {
			if r[7] == "YES" {
				out = append(out, r[0])
			}
		}
		return out
	}
	if got := missing(queryStrings(t, owner, "SHOW DOMAIN FOR raw.people")); !reflect.DeepEqual(got, []string{"id", "income", "city"}) {
		t.Errorf("missing before declarations = %v", got)
	}

	wantMySQLError(t, analyst, 1146, "SHOW DOMAIN FOR raw.people")
	wantMySQLError(t, analyst, 1146, "ALTER TABLE raw.people SET DOMAIN city IN ('Lyon')")
	wantMySQLError(t, owner, 9113, "ALTER TABLE raw.people SET DOMAIN city BETWEEN 0 AND 9 BINS 3")
	wantMySQLError(t, owner, 9113, "ALTER TABLE raw.people SET DOMAIN age IN ('old')")
	wantMySQLError(t, owner, 1054, "ALTER TABLE raw.people SET DOMAIN nope IN (1)")
	wantMySQLError(t, owner, 1064, "ALTER TABLE raw.people SET DOMAIN city IN ()")

	mustExec(t, owner,
		"ALTER TABLE raw.people SET DOMAIN income BETWEEN 0 AND 10000 BINS 20",
		"ALTER TABLE raw.people SET DOMAIN city IN ('Lyon', 'Nice', 'Paris', NULL)",
	)
	// The prepared twins.
	preparedStrings(t, owner, "CALL dpsql_set_domain_between(?, ?, ?, ?, ?)", "raw.people", "id", 0, 1000, 10)
	preparedStrings(t, owner, "CALL dpsql_set_domain_in(?, ?, ?)", "raw.people", "age", "[18, 30, 45, 99]")

	mustExec(t, owner, "GRANT SYNTHESIZE ON raw.people TO analyst")
	got := queryStrings(t, analyst, "SHOW DOMAIN FOR raw.people")
	want := [][]string{
		// Types come from the domains (public), not the raw columns.
		{"id", "bigint", "binned", "10", "[0, 1000] in 10 bins", "NO", "declared", "NO", "NULL"},
		{"sex", "enum('F','M')", "categorical", "2", "'F', 'M'", "NO", "ENUM", "NO", "NULL"},
		{"age", "bigint", "categorical", "4", "18, 30, 45, 99", "NO", "declared", "NO", "NULL"},
		{"income", "double", "binned", "21", "[0, 10000] in 20 bins", "YES", "declared", "NO", "NULL"},
		{"city", "varchar(5)", "categorical", "4", "'Lyon', 'Nice', 'Paris'", "YES", "declared", "NO", "NULL"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("SHOW DOMAIN as analyst =\n%v\nwant\n%v", got, want)
	}
	if p := preparedStrings(t, analyst, "CALL dpsql_domain(?)", "raw.people"); !reflect.DeepEqual(p, got) {
		t.Errorf("prepared dpsql_domain = %v, want %v", p, got)
	}
	wantMySQLError(t, analyst, 1142, "ALTER TABLE raw.people SET DOMAIN city IN ('Lyon')")

	if _, err := mariadbLookPath(); err == nil {
		out, err := s.cli(t, "analyst", "apw", "SHOW DOMAIN FOR raw.people")
		if err != nil || len(lines(out)) != 5 || !strings.HasPrefix(lines(out)[1], "sex\tenum('F','M')\tcategorical\t2") {
			t.Errorf("CLI SHOW DOMAIN: %v\n%s", err, out)
		}
	}

	s.stop(syscall.SIGTERM)
	s = startServer(t, dir)
	if after := queryStrings(t, s.as("analyst"), "SHOW DOMAIN FOR raw.people"); !reflect.DeepEqual(after, got) {
		t.Errorf("after restart SHOW DOMAIN = %v, want %v", after, got)
	}
	// A table re-created under the same name has no declarations.
	root := s.root()
	mustExec(t, root,
		"DROP TABLE raw.people",
		"CREATE TABLE raw.people (id INT PRIMARY KEY, city VARCHAR(20))",
	)
	if got := missing(queryStrings(t, root, "SHOW DOMAIN FOR raw.people")); !reflect.DeepEqual(got, []string{"id", "city"}) {
		t.Errorf("re-created table inherits declarations: missing = %v", got)
	}
}
