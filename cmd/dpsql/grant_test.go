package main

import (
	"strings"
	"syscall"
	"testing"
)

// Integration tests of GRANT and REVOKE SYNTHESIZE through the real binary.

func TestGrantSynthesizeStatements(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	root := s.root()
	setupPrivacy(t, root)
	owner, analyst, stranger := s.as("owner"), s.as("analyst"), s.as("stranger")

	wantMySQLError(t, stranger, 1146, "GRANT SYNTHESIZE ON raw.people TO stranger")
	wantMySQLError(t, owner, 1410, "GRANT SYNTHESIZE ON raw.people TO nobody")
	wantMySQLError(t, owner, 1141, "REVOKE SYNTHESIZE ON raw.people FROM analyst")
	mustExec(t, owner, "GRANT SYNTHESIZE ON raw.people TO analyst")
	wantMySQLError(t, analyst, 1142, "GRANT SYNTHESIZE ON raw.people TO stranger")

	// SYNTHESIZE gives the DP statements, not the raw rows.
	wantMySQLError(t, analyst, 0, "SHOW DOMAIN FOR raw.people")
	if _, err := tryQueryStrings(analyst, "SELECT * FROM raw.people"); err == nil {
		t.Error("analyst read raw.people with SYNTHESIZE only")
	}
	wantMySQLError(t, stranger, 1146, "SHOW DOMAIN FOR raw.people")

	// The prepared twins.
	preparedStrings(t, owner, "CALL dpsql_grant_synthesize(?, ?)", "raw.people", "stranger")
	wantMySQLError(t, stranger, 0, "SHOW DOMAIN FOR raw.people")
	preparedStrings(t, owner, "CALL dpsql_revoke_synthesize(?, ?, ?)", "raw.people", "stranger", "%")
	wantMySQLError(t, stranger, 1146, "SHOW DOMAIN FOR raw.people")

	if _, err := mariadbLookPath(); err == nil {
		out, err := s.cli(t, "owner", "opw", "GRANT SYNTHESIZE ON raw.people TO nobody")
		if err == nil || !strings.Contains(out, "ERROR 1410") {
			t.Errorf("CLI grant to a missing user: %v\n%s, want ERROR 1410", err, out)
		}
		if out, err := s.cli(t, "analyst", "apw", "SHOW DOMAIN FOR raw.people"); err != nil || len(lines(out)) != 5 {
			t.Errorf("CLI SHOW DOMAIN as grantee: %v\n%s", err, out)
		}
	}

	// Grants survive a restart; a dropped account's grants do not survive
	// into a new account of the same name.
	s.stop(syscall.SIGTERM)
	s = startServer(t, dir)
	root, analyst = s.root(), s.as("analyst")
	wantMySQLError(t, analyst, 0, "SHOW DOMAIN FOR raw.people")
	analyst.Close()
	mustExec(t, root, "DROP USER analyst", "CREATE USER analyst IDENTIFIED BY 'apw'")
	wantMySQLError(t, s.as("analyst"), 1146, "SHOW DOMAIN FOR raw.people")
}
