package engine

import (
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/dpsql/dpsql/synth/registry"
)

// explainMap turns EXPLAIN CREATE SYNTHETIC TABLE rows into section/item →
// value.
func explainMap(rows []sql.Row) map[string]string {
	m := map[string]string{}
	for _, r := range rows {
		m[r[0].(string)+"/"+r[1].(string)] = r[2].(string)
	}
	return m
}

func TestExplainSyntheticChargesNothing(t *testing.T) {
	f := newSynthFixture(t)
	before := f.budget()
	entries := len(f.entries())
	stmt := "CREATE SYNTHETIC TABLE syn.p FROM raw.people USING aim WITH EPSILON = 1, " + fastAIMOption + ", MAX_MODEL_SIZE = 2 WORKLOAD ALL 2-WAY"
	rows := f.rows("EXPLAIN " + stmt)
	m := explainMap(rows)

	if got := m["statement/mechanism"]; got != "aim" {
		t.Errorf("mechanism %q", got)
	}
	if got := m["cost/epsilon"]; got != "1" {
		t.Errorf("epsilon %q", got)
	}
	rho, _ := strconv.ParseFloat(m["cost/rho"], 64)
	remAfter, _ := strconv.ParseFloat(m["budget/rho_remaining_after"], 64)
	if !(rho > 0) || math.Abs(before.RhoRemaining-rho-remAfter) > 1e-4 {
		t.Errorf("rho %v, remaining after %v, budget remaining %v", rho, remAfter, before.RhoRemaining)
	}
	if m["budget/fits"] != "yes" {
		t.Errorf("fits %q", m["budget/fits"])
	}
	// 3 attributes (sex, age, city; id is a surrogate key): 3 pairs.
	if got := m["workload/total"]; !strings.HasPrefix(got, "3 marginals") {
		t.Errorf("workload total %q", got)
	}
	if got := m["workload/sex, age"]; got != "weight=1 cells=20" {
		t.Errorf("workload sex, age: %q", got)
	}
	// The downward closure of the 3 pairs: 3 singles and 3 pairs.
	if got := m["candidates/count"]; got != "6" {
		t.Errorf("candidates %q", got)
	}
	if got := m["model/max_model_size_mb"]; got != "2" {
		t.Errorf("cap %q", got)
	}
	if !strings.HasPrefix(m["error/basis"], "data-dependent") {
		t.Errorf("aim error basis %q", m["error/basis"])
	}

	// Nothing charged, nothing in the ledger, no table.
	if after := f.budget(); after.RhoSpent != before.RhoSpent {
		t.Errorf("rho spent %v → %v", before.RhoSpent, after.RhoSpent)
	}
	if n := len(f.entries()); n != entries {
		t.Errorf("ledger entries %d → %d", entries, n)
	}
	if _, _, err := query(f.e, f.root, "SELECT COUNT(*) FROM syn.p"); err == nil {
		t.Error("EXPLAIN created the table")
	}

	// The CALL twin answers the same.
	call := f.rows("CALL dpsql_explain_synthetic_table('" + strings.ReplaceAll(stmt, "'", "''") + "')")
	if !reflect.DeepEqual(call, rows) {
		t.Errorf("CALL twin differs:\n%v\n%v", call, rows)
	}

	// Errors of phase 1 are the statement's.
	for _, q := range []string{
		"EXPLAIN CREATE SYNTHETIC TABLE syn.q FROM raw.people USING aim",                       // no EPSILON
		"EXPLAIN CREATE SYNTHETIC TABLE syn.q FROM raw.people USING nope WITH EPSILON = 1",     // mechanism
		"EXPLAIN CREATE SYNTHETIC TABLE syn.q FROM raw.nobudget USING aim WITH EPSILON = 1",    // no budget
		"EXPLAIN CREATE SYNTHETIC TABLE syn.q FROM raw.people USING aim WITH EPSILON = 1, X=1", // option
	} {
		if _, _, err := query(f.e, f.root, q); err == nil {
			t.Errorf("%s: no error", q)
		}
	}
	// Over budget: explained, says it would not fit.
	f.exec("SET PRIVACY BUDGET FOR raw.nobudget WITH EPSILON = 0.5, DELTA = 1e-6")
	m = explainMap(f.rows("EXPLAIN CREATE SYNTHETIC TABLE syn.q FROM raw.nobudget USING gaussian WITH EPSILON = 1"))
	if !strings.HasPrefix(m["budget/fits"], "no") {
		t.Errorf("over budget: fits %q", m["budget/fits"])
	}
}

func TestExplainSyntheticExpectedError(t *testing.T) {
	f := newSynthFixture(t)
	sigmaRe := regexp.MustCompile(`sigma=(\S+) .*expected_l1=(\S+)`)
	for _, mech := range []string{"gaussian", "hdmm_lls", "hdmm_pgm"} {
		m := explainMap(f.rows("EXPLAIN CREATE SYNTHETIC TABLE syn.g FROM raw.people USING " + mech + " WITH EPSILON = 2 WORKLOAD ALL 1-WAY"))
		rho, _ := strconv.ParseFloat(m["cost/rho"], 64)
		// 1-way marginals sex (2), age (10), city (3, plus NULL: 4), each
		// measured cell by cell: Σ 1/(2σ²) = ρ, and the expected L1 is
		// cells·σ·sqrt(2/π).
		var spent float64
		for _, a := range []string{"sex", "age", "city"} {
			v := sigmaRe.FindStringSubmatch(m["error/"+a])
			if v == nil {
				t.Fatalf("%s %s: %q", mech, a, m["error/"+a])
			}
			sigma, _ := strconv.ParseFloat(v[1], 64)
			l1, _ := strconv.ParseFloat(v[2], 64)
			var cells float64
			fmt.Sscanf(m["workload/"+a], "weight=1 cells=%g", &cells)
			if want := cells * sigma * math.Sqrt(2/math.Pi); math.Abs(l1-want) > 1e-3*want {
				t.Errorf("%s %s: expected L1 %v, want %v", mech, a, l1, want)
			}
			spent += 1 / (2 * sigma * sigma)
		}
		if math.Abs(spent-rho) > 1e-3*rho {
			t.Errorf("%s: Σ 1/(2σ²) = %v, ρ = %v", mech, spent, rho)
		}
		if !strings.HasPrefix(m["error/basis"], "data-independent") {
			t.Errorf("%s: basis %q", mech, m["error/basis"])
		}
	}
}

// An analyst learns nothing data-dependent: the explanation over the same
// schema, domain and budget does not change when the rows do.
func TestExplainSyntheticDataIndependent(t *testing.T) {
	f := newSynthFixture(t)
	f.exec(
		"CREATE USER analyst IDENTIFIED BY 'pw'",
		"GRANT SYNTHESIZE ON raw.people TO analyst",
		"GRANT CREATE ON mine.* TO analyst",
		"CREATE DATABASE mine",
	)
	analyst := sessionCtx(f.e, 2, "analyst", localhost)
	explain := func() []sql.Row {
		t.Helper()
		_, rows, err := query(f.e, analyst, "EXPLAIN CREATE SYNTHETIC TABLE mine.s FROM raw.people USING gaussian WITH EPSILON = 1")
		if err != nil {
			t.Fatal(err)
		}
		return rows
	}
	first := explain()
	f.exec("DELETE FROM raw.people WHERE age < 5", "INSERT INTO raw.people (sex, age, city) VALUES ('F', 1, 'a'), ('M', 9, NULL)")
	if second := explain(); !reflect.DeepEqual(first, second) {
		t.Errorf("explanation changed with the data:\n%v\n%v", first, second)
	}
	// And the analyst cannot read the source for it.
	if _, _, err := query(f.e, analyst, "SELECT COUNT(*) FROM raw.people"); err == nil {
		t.Error("analyst reads raw.people")
	}
}

func TestStatementKind(t *testing.T) {
	for q, want := range map[string]string{
		"SELECT 1":                      "select",
		"  /* c */ select 1":            "select",
		"-- x\nINSERT INTO t VALUES(1)": "insert",
		"SET PRIVACY BUDGET FOR raw.t WITH EPSILON = 1, DELTA = 1e-9":        "set_budget",
		"CREATE SYNTHETIC TABLE s FROM t USING aim WITH EPSILON = 1":         "create_synthetic",
		"EXPLAIN CREATE SYNTHETIC TABLE s FROM t USING aim WITH EPSILON = 1": "explain_create_synthetic",
		"EXPLAIN SELECT 1": "explain",
		"FROBNICATE":       "other",
		"":                 "other",
	} {
		if got := statementKind(q); got != want {
			t.Errorf("%q: %q, want %q", q, got, want)
		}
	}
}

// Every registered mechanism is explained (or refused in phase 1, as its
// CREATE SYNTHETIC TABLE would be), never failed internally.
func TestExplainSyntheticEveryMechanism(t *testing.T) {
	f := newSynthFixture(t)
	before := f.budget()
	for _, m := range registry.All() {
		q := "EXPLAIN CREATE SYNTHETIC TABLE syn.e FROM raw.people USING " + m.Name() + " WITH EPSILON = 1"
		_, rows, err := query(f.e, f.root, q)
		if err != nil {
			if code := errCode(err); code == 1105 || code == ErrInternal.Code() {
				t.Errorf("%s: %v", m.Name(), err)
			}
			t.Logf("%s refused in phase 1: %v", m.Name(), err)
			continue
		}
		em := explainMap(rows)
		if em["cost/rho"] == "" || em["candidates/set"] == "" || em["error/basis"] == "" {
			t.Errorf("%s: incomplete explanation %v", m.Name(), em)
		}
	}
	if after := f.budget(); after.RhoSpent != before.RhoSpent {
		t.Errorf("rho spent %v → %v", before.RhoSpent, after.RhoSpent)
	}
}
