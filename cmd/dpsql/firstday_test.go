package main

import (
	"strings"
	"testing"
)

// A new user's first session on `serve --demo`, through go-sql-driver and
// the mariadb CLI.

// TestDemoReadyToSynthesize: every demo column has a public domain (the id
// key is skipped, not missing), so the demo synthesizes without any SET
// DOMAIN.
func TestDemoReadyToSynthesize(t *testing.T) {
	s := startServer(t, t.TempDir(), "--demo")
	root := s.root()
	for _, r := range queryStrings(t, root, "SHOW DOMAIN FOR demo.census") {
		switch {
		case r[0] == "id":
			if r[2] != "skipped" || r[7] != "NO" {
				t.Errorf("id: %v, want kind skipped and missing NO", r)
			}
		case r[7] != "NO":
			t.Errorf("%s has no domain: %v", r[0], r)
		}
	}
	mustExec(t, root,
		"SET PRIVACY BUDGET FOR demo.census WITH EPSILON = 1, DELTA = 1e-9",
		"CREATE DATABASE lab",
		"CREATE SYNTHETIC TABLE lab.c FROM demo.census USING mst WITH EPSILON = 0.5")
	if got := queryStrings(t, root, "SELECT COUNT(DISTINCT capital_gain) > 1 FROM lab.c"); got[0][0] != "1" {
		t.Errorf("capital_gain of the copy: %v", got)
	}
}

// TestRemainingBudgetIsSpendable: the ε that SHOW PRIVACY BUDGET shows as
// remaining can be requested and spent, to zero; right after SET it shows
// the ε that was set.
func TestRemainingBudgetIsSpendable(t *testing.T) {
	s := startServer(t, t.TempDir(), "--demo")
	root := s.root()
	mustExec(t, root, "SET PRIVACY BUDGET FOR demo.census WITH EPSILON = 5, DELTA = 1e-9", "CREATE DATABASE lab")
	const colEpsRemaining = 7
	if got := budgetRow(t, root, "demo.census")[colEpsRemaining]; got != "5" {
		t.Fatalf("epsilon_remaining right after SET = %s, want 5", got)
	}
	mustExec(t, root, "CREATE SYNTHETIC TABLE lab.a FROM demo.census USING independent WITH EPSILON = 2")
	rest := budgetRow(t, root, "demo.census")[colEpsRemaining]
	mustExec(t, root, "CREATE SYNTHETIC TABLE lab.b FROM demo.census USING independent WITH EPSILON = "+rest)
	if row := budgetRow(t, root, "demo.census"); budgetFloat(t, row, 5) != 0 {
		t.Fatalf("after spending the displayed remainder %s: %v", rest, row)
	}
	if status, _ := lastLedgerEntry(t, root, "demo.census"); status != "committed" {
		t.Errorf("last entry %s", status)
	}
}

// TestWorkloadOutsideDomainRefused: a workload literal outside the public
// domain (a value that does not exist, a bound past the range, a typo in
// case) is refused before any charge, naming the domain.
func TestWorkloadOutsideDomainRefused(t *testing.T) {
	s := startServer(t, t.TempDir(), "--demo")
	root := s.root()
	mustExec(t, root, "SET PRIVACY BUDGET FOR demo.census WITH EPSILON = 1, DELTA = 1e-9", "CREATE DATABASE lab")
	before := budgetRow(t, root, "demo.census")
	for _, where := range []string{"sex = 'other'", "age > 200", "sex = 'Male'"} {
		_, err := root.Exec("CREATE SYNTHETIC TABLE lab.w FROM demo.census USING gaussian WITH EPSILON = 0.1 " +
			"WORKLOAD (SELECT race, COUNT(*) FROM census WHERE " + where + " GROUP BY race)")
		if mysqlCode(err) != 9114 || !strings.Contains(err.Error(), "outside the public domain of") {
			t.Errorf("%s: %v", where, err)
		}
	}
	if after := budgetRow(t, root, "demo.census"); !equalRows([][]string{before}, [][]string{after}) {
		t.Errorf("refused workloads were charged: %v → %v", before, after)
	}
}

// TestWorkloadListInTheCLI: the mariadb CLI ends a statement at every ';',
// also inside WORKLOAD ( … ): the error then says what to do, and a list
// separated by commas works as it is.
func TestWorkloadListInTheCLI(t *testing.T) {
	s := startServer(t, t.TempDir(), "--demo")
	mariadbCLI(t)
	mustExec(t, s.root(), "SET PRIVACY BUDGET FOR demo.census WITH EPSILON = 1, DELTA = 1e-9", "CREATE DATABASE lab")
	out, err := s.cli(t, "root", rootPassword, "CREATE SYNTHETIC TABLE lab.w FROM demo.census USING gaussian WITH EPSILON = 0.1 "+
		"WORKLOAD (SELECT sex, COUNT(*) FROM census GROUP BY sex; SELECT race, COUNT(*) FROM census GROUP BY race)")
	if err == nil || !strings.Contains(out, "DELIMITER") || !strings.Contains(out, "commas") {
		t.Fatalf("';' in the CLI: %v\n%s", err, out)
	}
	out, err = s.cli(t, "root", rootPassword, "CREATE SYNTHETIC TABLE lab.w FROM demo.census USING gaussian WITH EPSILON = 0.1 "+
		"WORKLOAD (SELECT sex, COUNT(*) FROM census GROUP BY sex, SELECT race, COUNT(*) FROM census GROUP BY race WEIGHT 2); "+
		"SELECT DISTINCT dp_columns FROM lab.w ORDER BY 1")
	if err != nil || strings.Join(lines(out), "|") != "race|sex" {
		t.Fatalf("commas in the CLI: %v\n%s", err, out)
	}
}
