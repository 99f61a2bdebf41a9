package main

import (
	"database/sql"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// Integration tests of the privacy-budget statements through the real
// binary: go-sql-driver (text protocol and server-side prepared CALL
// twins) and the mariadb CLI.

// privacyUsers are the accounts of setupPrivacy and their passwords.
var privacyUsers = map[string]string{"owner": "opw", "analyst": "apw", "stranger": "spw"}

// setupPrivacy creates raw.people and three users: owner (SELECT and
// GRANT OPTION on it), analyst and stranger (no rights).
func setupPrivacy(t *testing.T, root *sql.DB) {
	t.Helper()
	mustExec(t, root,
		"CREATE DATABASE raw",
		`CREATE TABLE raw.people (
			id INT PRIMARY KEY,
			sex ENUM('F', 'M') NOT NULL,
			age INT NOT NULL CHECK (age BETWEEN 18 AND 99),
			income DOUBLE,
			city VARCHAR(20))`,
		"INSERT INTO raw.people VALUES (1, 'F', 30, 1200.5, 'Lyon'), (2, 'M', 45, NULL, 'Nice')",
		"CREATE USER owner IDENTIFIED BY 'opw'",
		"GRANT SELECT ON raw.people TO owner WITH GRANT OPTION",
		"CREATE USER analyst IDENTIFIED BY 'apw'",
		"CREATE USER stranger IDENTIFIED BY 'spw'",
	)
}

// as opens a pool for one of privacyUsers.
func (s *server) as(user string) *sql.DB { return s.open(user, privacyUsers[user]) }

func TestPrivacyBudgetStatements(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	setupPrivacy(t, s.root())
	owner, analyst, stranger := s.as("owner"), s.as("analyst"), s.as("stranger")

	// Refusals, each with its own code; nothing is recorded.
	wantMySQLError(t, owner, 9112, "SET PRIVACY BUDGET FOR raw.people WITH EPSILON = 0, DELTA = 1e-6")
	wantMySQLError(t, owner, 9112, "SET PRIVACY BUDGET FOR raw.people WITH EPSILON = 1, DELTA = 1")
	wantMySQLError(t, owner, 9111, "SHOW PRIVACY BUDGET FOR raw.people")
	wantMySQLError(t, stranger, 1146, "SET PRIVACY BUDGET FOR raw.people WITH EPSILON = 1, DELTA = 1e-6")
	wantMySQLError(t, stranger, 1146, "SHOW PRIVACY BUDGET FOR raw.people")
	wantMySQLError(t, stranger, 1146, "SHOW PRIVACY BUDGET FOR raw.nothing")

	mustExec(t, owner, "SET PRIVACY BUDGET FOR raw.people WITH EPSILON = 1, DELTA = 1e-6")
	want := []string{"table", "epsilon_total", "delta", "rho_total", "rho_spent", "rho_remaining", "epsilon_spent", "epsilon_remaining"}
	if got := columns(t, owner, "SHOW PRIVACY BUDGET"); !reflect.DeepEqual(got, want) {
		t.Errorf("SHOW PRIVACY BUDGET columns = %v, want %v", got, want)
	}
	row := queryStrings(t, owner, "SHOW PRIVACY BUDGET FOR raw.people")
	if len(row) != 1 || row[0][0] != "raw.people" || row[0][1] != "1" || row[0][4] != "0" || row[0][3] != row[0][5] {
		t.Errorf("budget = %v, want raw.people with ε 1 and nothing spent", row)
	}

	// The analyst sees nothing until granted SYNTHESIZE, then the budget
	// but not the owner's ledger entries.
	if rows := queryStrings(t, analyst, "SHOW PRIVACY BUDGET"); len(rows) != 0 {
		t.Errorf("analyst without a grant sees %v", rows)
	}
	wantMySQLError(t, analyst, 1146, "SHOW PRIVACY LEDGER FOR raw.people")
	mustExec(t, owner, "GRANT SYNTHESIZE ON raw.people TO analyst")
	if got := queryStrings(t, analyst, "SHOW PRIVACY BUDGET"); !reflect.DeepEqual(got, row) {
		t.Errorf("analyst's budget = %v, want %v", got, row)
	}
	if rows := queryStrings(t, analyst, "SHOW PRIVACY LEDGER FOR raw.people"); len(rows) != 0 {
		t.Errorf("analyst sees the owner's ledger entries: %v", rows)
	}
	wantMySQLError(t, analyst, 1142, "SET PRIVACY BUDGET FOR raw.people WITH EPSILON = 100, DELTA = 1e-6")

	// The prepared CALL twins (COM_STMT_PREPARE) behave as the statements.
	preparedStrings(t, owner, "CALL dpsql_set_privacy_budget(?, ?, ?)", "raw.people", 2.5, 1e-6)
	if got := preparedStrings(t, analyst, "CALL dpsql_privacy_budget(?)", "raw.people"); len(got) != 1 || got[0][1] != "2.5" {
		t.Errorf("prepared dpsql_privacy_budget = %v, want ε 2.5", got)
	}
	if got, want := preparedStrings(t, analyst, "CALL dpsql_privacy_budget()"), queryStrings(t, analyst, "SHOW PRIVACY BUDGET"); !reflect.DeepEqual(got, want) {
		t.Errorf("prepared dpsql_privacy_budget() = %v, want %v", got, want)
	}
	stmt, err := stranger.Prepare("CALL dpsql_set_privacy_budget(?, ?, ?)")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stmt.Exec("raw.people", 1.0, 1e-6); mysqlCode(err) != 1146 {
		t.Errorf("stranger's prepared set budget: %v, want 1146", err)
	}
	stmt.Close()

	ledger := queryStrings(t, owner, "SHOW PRIVACY LEDGER FOR raw.people")
	wantLedger := []string{"id", "time", "user", "statement", "mechanism", "rho", "status", "note", "epsilon", "delta"}
	if got := columns(t, owner, "SHOW PRIVACY LEDGER FOR raw.people"); !reflect.DeepEqual(got, wantLedger) {
		t.Errorf("ledger columns = %v, want %v", got, wantLedger)
	}
	if len(ledger) != 2 || ledger[0][2] != "owner@%" || ledger[1][8] != "2.5" || !strings.HasPrefix(ledger[1][3], "SET PRIVACY BUDGET") {
		t.Errorf("ledger = %v, want two budget entries by owner@%%", ledger)
	}
	// The binary protocol prints DATETIME(6) with all six digits, GMS's text
	// protocol without trailing zeros: compare times as times.
	if got := preparedStrings(t, owner, "CALL dpsql_privacy_ledger(?)", "raw.people"); !reflect.DeepEqual(normalizeTimes(t, got, 1), normalizeTimes(t, ledger, 1)) {
		t.Errorf("prepared dpsql_privacy_ledger = %v, want %v", got, ledger)
	}

	// The mariadb CLI.
	if _, err := mariadbLookPath(); err == nil {
		out, err := s.cli(t, "analyst", "apw", "SHOW PRIVACY BUDGET FOR raw.people")
		if err != nil || !strings.HasPrefix(out, "raw.people\t2.5\t") {
			t.Errorf("CLI SHOW PRIVACY BUDGET: %v\n%s", err, out)
		}
		out, err = s.cli(t, "stranger", "spw", "SHOW PRIVACY BUDGET FOR raw.people")
		if err == nil || !strings.Contains(out, "ERROR 1146") {
			t.Errorf("CLI as stranger: %v\n%s, want ERROR 1146", err, out)
		}
		out, err = s.cli(t, "owner", "opw", "SET PRIVACY BUDGET FOR raw.people WITH EPSILON = -1, DELTA = 1e-6")
		if err == nil || !strings.Contains(out, "ERROR 9112") {
			t.Errorf("CLI bad ε: %v\n%s, want ERROR 9112", err, out)
		}
	}

	// A restart keeps budgets, ledgers and grants.
	before := queryStrings(t, analyst, "SHOW PRIVACY BUDGET")
	s.stop(syscall.SIGTERM)
	s = startServer(t, dir)
	if got := queryStrings(t, s.as("analyst"), "SHOW PRIVACY BUDGET"); !reflect.DeepEqual(got, before) {
		t.Errorf("after restart analyst sees %v, want %v", got, before)
	}
	if got := queryStrings(t, s.as("owner"), "SHOW PRIVACY LEDGER FOR raw.people"); !reflect.DeepEqual(got, ledger) {
		t.Errorf("after restart ledger = %v, want %v", got, ledger)
	}
	eps, _ := strconv.ParseFloat(before[0][1], 64)
	if eps != 2.5 {
		t.Errorf("ε after restart = %v", eps)
	}
}
