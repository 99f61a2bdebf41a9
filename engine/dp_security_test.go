package engine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/engine/dpparse"
)

// The DP half of the attack suite: attempts through dpsql statements (and
// their CALL twins) to synthesize from tables not granted, to spend or
// move budgets, to widen grants, and to read another analyst's ledger.
// Every refused attempt must leave every budget untouched.

// dpAttackFixture adds to securityFixture a raw table census.people that analyst
// and analyst2 may synthesize from (its tag column holds raw values outside
// its public domain), budgets on people and adult, and one synthesis by
// analyst, so that the ledger holds an entry of theirs.
func dpAttackFixture(t *testing.T) (*Engine, string) {
	t.Helper()
	e, dump := securityFixture(t)
	root := sessionCtx(e, 1, RootUser, localhost)
	var rows strings.Builder
	for i := range 300 {
		if i > 0 {
			rows.WriteByte(',')
		}
		tag := []string{"'a'", "'b'", "'SECRET-ROW-42'"}[i%3]
		fmt.Fprintf(&rows, "(%d, '%s', %d, %s)", i, []string{"F", "M"}[i%2], i%10, tag)
	}
	for _, q := range []string{
		"CREATE TABLE census.people (id INT PRIMARY KEY, sex ENUM('F','M') NOT NULL, age INT NOT NULL CHECK (age BETWEEN 0 AND 9), tag VARCHAR(20))",
		"INSERT INTO census.people VALUES " + rows.String(),
		"ALTER TABLE census.people SET DOMAIN tag IN ('a', 'b')",
		"ALTER TABLE census.people SET DOMAIN id BETWEEN 0 AND 299 BINS 10",
		"SET PRIVACY BUDGET FOR census.people WITH EPSILON = 3, DELTA = 1e-6",
		"SET PRIVACY BUDGET FOR census.adult WITH EPSILON = 3, DELTA = 1e-6",
		"SET PRIVACY BUDGET FOR vault.treasure WITH EPSILON = 3, DELTA = 1e-6",
		"GRANT SYNTHESIZE ON census.people TO analyst",
		"GRANT SYNTHESIZE ON census.people TO analyst2",
		"CREATE USER analyst3 IDENTIFIED BY 'apw3'",
		"CREATE DATABASE lab3",
		"GRANT ALL ON lab3.* TO analyst3",
	} {
		if _, _, err := query(e, root, q); err != nil {
			t.Fatalf("fixture: %s: %v", abbrev(q), err)
		}
	}
	analyst := sessionCtx(e, 2, "analyst", "127.0.0.1")
	if _, _, err := query(e, analyst, "CREATE SYNTHETIC TABLE lab.s1 FROM census.people USING independent WITH EPSILON = 0.5, SEED = 1, PGM_ITERS = 20"); err != nil {
		t.Fatalf("fixture: analyst's synthesis: %v", err)
	}
	return e, dump
}

// budgetsSpent returns the ρ spent on each budgeted table of the fixture.
func budgetsSpent(t *testing.T, e *Engine) map[string]float64 {
	t.Helper()
	ctx := sessionCtx(e, 3, RootUser, localhost)
	out := map[string]float64{}
	for _, n := range []string{"people", "adult"} {
		ref, err := e.resolveTable(ctx, dpparse.TableName{DB: "census", Name: n})
		if err != nil {
			t.Fatal(err)
		}
		info, err := e.dp.ledger.Budget(ref.LedgerKey())
		if err != nil {
			t.Fatal(err)
		}
		out[n] = info.RhoSpent
	}
	return out
}

// dpAttacks are the attempts through dpsql statements. Each is refused,
// leaks nothing and spends nothing.
var dpAttacks = []attack{
	{name: "synthesize without grant", script: "CREATE SYNTHETIC TABLE lab.x FROM census.adult USING independent WITH EPSILON = 0.1"},
	{name: "synthesize without grant, use census", script: "USE census; CREATE SYNTHETIC TABLE lab.x FROM adult USING independent WITH EPSILON = 0.1"},
	{name: "synthesize without grant, odd casing and comments", script: "/* x */ create   SYNTHETIC table `lab`.`x` from `CENSUS`.`Adult` using INDEPENDENT with epsilon = 0.1"},
	{name: "synthesize from ungranted database", script: "CREATE SYNTHETIC TABLE lab.x FROM vault.treasure USING independent WITH EPSILON = 0.1"},
	{name: "synthesize as third analyst", user: "analyst3", script: "CREATE SYNTHETIC TABLE lab3.x FROM census.people USING independent WITH EPSILON = 0.1"},
	{name: "synthesize CALL twin without grant", script: "CALL dpsql_create_synthetic_table('CREATE SYNTHETIC TABLE lab.x FROM census.adult USING independent WITH EPSILON = 0.1')"},
	{name: "synthesize into the raw database", script: "CREATE SYNTHETIC TABLE census.copy FROM census.people USING independent WITH EPSILON = 0.1"},
	{name: "synthesize into another analyst's database", script: "CREATE SYNTHETIC TABLE lab2.x FROM census.people USING independent WITH EPSILON = 0.1"},
	{name: "synthesize over own existing table", script: "CREATE SYNTHETIC TABLE lab.mine FROM census.people USING independent WITH EPSILON = 0.1"},
	{name: "synthesize beyond the budget", script: "CREATE SYNTHETIC TABLE lab.x FROM census.people USING independent WITH EPSILON = 100"},
	{name: "workload over a hidden table", script: "CREATE SYNTHETIC TABLE lab.x FROM census.people USING independent WITH EPSILON = 0.1 WORKLOAD (SELECT person, COUNT(*) FROM census.adult GROUP BY person)"},
	{name: "workload with a subquery on raw rows", script: "CREATE SYNTHETIC TABLE lab.x FROM census.people USING independent WITH EPSILON = 0.1 WORKLOAD (SELECT sex, COUNT(*) FROM census.people WHERE tag = (SELECT person FROM census.adult LIMIT 1) GROUP BY sex)"},
	{name: "workload computing on raw values", script: "CREATE SYNTHETIC TABLE lab.x FROM census.people USING independent WITH EPSILON = 0.1 WORKLOAD (SELECT SUBSTRING(tag, 1, 3), COUNT(*) FROM census.people GROUP BY 1)"},
	{name: "workload with a failing cast", script: "CREATE SYNTHETIC TABLE lab.x FROM census.people USING independent WITH EPSILON = 0.1 WORKLOAD (SELECT CAST(tag AS SIGNED), COUNT(*) FROM census.people GROUP BY 1)"},
	{name: "synthesis then raw read in one script", script: "SHOW PRIVACY BUDGET; SELECT * FROM census.people"},
	{name: "grantee reads the raw table", script: "SELECT * FROM census.people"},
	{name: "grantee reads the raw table via CTE", script: "WITH p AS (SELECT tag FROM census.people) SELECT * FROM p"},
	{name: "show domain without grant", script: "SHOW DOMAIN FOR census.adult"},
	{name: "show domain CALL twin without grant", script: "CALL dpsql_domain('census.adult')"},
	{name: "set budget as analyst", script: "SET PRIVACY BUDGET FOR census.people WITH EPSILON = 1000, DELTA = 1e-6"},
	{name: "set budget CALL twin as analyst", script: "CALL dpsql_set_privacy_budget('census.people', 1000, 1e-6)"},
	{name: "set budget on hidden table", script: "SET PRIVACY BUDGET FOR census.adult WITH EPSILON = 1000, DELTA = 1e-6"},
	{name: "set domain as analyst", script: "ALTER TABLE census.people SET DOMAIN tag IN ('a', 'b', 'SECRET')"},
	{name: "set domain on hidden table", script: "ALTER TABLE census.adult SET DOMAIN person IN ('x')"},
	{name: "self grant synthesize", script: "GRANT SYNTHESIZE ON census.adult TO analyst"},
	{name: "grant synthesize to a third analyst", script: "GRANT SYNTHESIZE ON census.people TO analyst3"},
	{name: "revoke another analyst", script: "REVOKE SYNTHESIZE ON census.people FROM analyst2"},
	{name: "ledger of a hidden table", script: "SHOW PRIVACY LEDGER FOR census.adult"},
	{name: "ledger as third analyst", user: "analyst3", script: "SHOW PRIVACY LEDGER FOR census.people"},
	{name: "dp_marginal of a raw table", script: "USE lab; SELECT * FROM dp_marginal('census.adult', 'person')"},
	{name: "dp_marginal of a granted raw table", script: "USE lab; SELECT * FROM dp_marginal('census.people', 'tag')"},
	{name: "dp_marginal of another analyst's synthetic table", user: "analyst2", script: "USE lab2; SELECT * FROM dp_marginal('lab.s1', 'sex')"},
	{name: "error bounds of a raw table", script: "SHOW ERROR BOUNDS FOR census.adult"},
	{name: "error bounds of another analyst's synthetic table", user: "analyst2", script: "SHOW ERROR BOUNDS FOR lab.s1"},
}

// TestAnalystIsolationDP runs the DP attacks and checks, besides outcome
// and leaks, that no budget moved and that a hidden table's error matches
// a missing one's.
func TestAnalystIsolationDP(t *testing.T) {
	e, _ := dpAttackFixture(t)
	for i, a := range dpAttacks {
		t.Run(a.name, func(t *testing.T) {
			user := a.user
			if user == "" {
				user = "analyst"
			}
			before := budgetsSpent(t, e)
			r := runScript(e, sessionCtx(e, uint32(200+i), user, "127.0.0.1"), a.script)
			t.Logf("outcome: %s", r.summary())
			if !r.failed {
				t.Errorf("%s succeeded, want refused:\n%s", a.script, r.out.String())
			}
			if leaks := r.leaks(a.script); len(leaks) > 0 {
				t.Errorf("%s leaked %v:\n%s", a.script, leaks, r.out.String())
			}
			if after := budgetsSpent(t, e); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Errorf("%s moved budgets: %v -> %v", a.script, before, after)
			}
			for _, hidden := range []string{"census.adult", "vault.treasure"} {
				if !strings.Contains(a.script, hidden) {
					continue
				}
				probe := strings.ReplaceAll(a.script, hidden, "census.nosuchtable")
				r2 := runScript(e, sessionCtx(e, uint32(400+i), user, "127.0.0.1"), probe)
				want := strings.NewReplacer("adult", "nosuchtable", "vault", "census", "treasure", "nosuchtable").Replace(strings.Join(r.errs, "|"))
				if got := strings.Join(r2.errs, "|"); got != want {
					t.Errorf("hidden and missing tables differ:\n hidden:  %s\n missing: %s", want, got)
				}
			}
		})
	}
}

// TestLedgerPrivacy: a second analyst granted the same table sees none of
// the first one's ledger entries, by statement or CALL; the first sees
// theirs; the owner sees all.
func TestLedgerPrivacy(t *testing.T) {
	e, _ := dpAttackFixture(t)
	ledger := func(user, q string) string {
		host := "127.0.0.1"
		if user == RootUser {
			host = localhost
		}
		_, rows, err := query(e, sessionCtx(e, 9, user, host), q)
		if err != nil {
			t.Fatalf("%s: %s: %v", user, q, err)
		}
		return fmt.Sprint(rows)
	}
	for _, q := range []string{"SHOW PRIVACY LEDGER FOR census.people", "CALL dpsql_privacy_ledger('census.people')"} {
		if got := ledger("analyst2", q); strings.Contains(got, "analyst@") || strings.Contains(got, "lab.s1") || strings.Contains(got, "root@") {
			t.Errorf("analyst2 sees others' ledger entries: %s", got)
		}
		if got := ledger("analyst", q); !strings.Contains(got, "lab.s1") || strings.Contains(got, "root@") {
			t.Errorf("analyst's own ledger: %s", got)
		}
		if got := ledger(RootUser, q); !strings.Contains(got, "analyst@") {
			t.Errorf("owner's ledger misses the analyst's entry: %s", got)
		}
	}
	// SHOW PRIVACY BUDGET lists only what the analyst may synthesize from.
	if got := ledger("analyst2", "SHOW PRIVACY BUDGET"); strings.Contains(got, "adult") || strings.Contains(got, "treasure") {
		t.Errorf("analyst2's budgets name hidden tables: %s", got)
	}
	// The synthetic table holds no raw value outside the public domain,
	// and the second analyst cannot read it.
	a1 := sessionCtx(e, 10, "analyst", "127.0.0.1")
	_, rows, err := query(e, a1, "SELECT * FROM lab.s1")
	if err != nil || len(rows) == 0 {
		t.Fatalf("analyst reading their synthetic table: %d rows, %v", len(rows), err)
	}
	for _, r := range rows {
		if s := fmt.Sprint(r); strings.Contains(s, "SECRET") {
			t.Fatalf("synthetic row carries a raw value outside the domain: %s", s)
		}
	}
	if _, _, err := query(e, sessionCtx(e, 11, "analyst2", "127.0.0.1"), "SELECT * FROM lab.s1"); err == nil {
		t.Error("analyst2 read analyst's synthetic table")
	}
	if got := ledger("analyst2", "SHOW SYNTHETIC TABLES"); strings.Contains(got, "s1") {
		t.Errorf("analyst2 lists analyst's synthetic table: %s", got)
	}
	// The SYNTHESIZE grant did not make people visible as a table.
	_, rows, err = query(e, a1, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'census'")
	if err != nil || fmt.Sprint(rows) != "[[syn]]" {
		t.Errorf("analyst's census tables = %v (%v), want only syn", rows, err)
	}
}
