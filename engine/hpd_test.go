package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/dpsql/dpsql/engine/dpparse"
	"github.com/dpsql/dpsql/internal/hhgen"
)

// hhFixture: census.households and census.persons from internal/hhgen,
// linked as a privacy unit with K = 8, with a budget on the households.
func hhFixture(t *testing.T, households int) (*Engine, *sql.Context, tableRef) {
	t.Helper()
	e := openDiskEngine(t, t.TempDir(), nil)
	root := sessionCtx(e, 1, RootUser, localhost)
	run := func(qs ...string) {
		t.Helper()
		for _, q := range qs {
			if _, _, err := query(e, root, q); err != nil {
				t.Fatalf("%.200s: %v", q, err)
			}
		}
	}
	run("CREATE DATABASE census", "CREATE DATABASE syn")
	run(hhgen.DDL("census.households", "census.persons")...)
	g, err := hhgen.Generate(hhgen.Config{Households: households, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	run(g.Inserts("census.households", "census.persons", 500)...)
	run("SET PRIVACY BUDGET FOR census.households WITH EPSILON = 10, DELTA = 1e-6")
	unit, err := e.resolveTable(root, dpparse.TableName{DB: "census", Name: "households"})
	if err != nil {
		t.Fatal(err)
	}
	return e, root, unit
}

func TestHierarchicalSynthesisSQL(t *testing.T) {
	e, root, unit := hhFixture(t, 300)
	q := func(s string) []sql.Row {
		t.Helper()
		_, rows, err := query(e, root, s)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		return rows
	}
	// Before the link, the two tables are no unit.
	if _, _, err := query(e, root, "CREATE SYNTHETIC TABLES syn.h, syn.p FROM census.households, census.persons USING hpd_fixed WITH EPSILON = 1"); err == nil || !strings.Contains(err.Error(), "privacy unit") {
		t.Fatalf("synthesis without a unit: %v", err)
	}
	for _, bad := range []string{
		"ALTER TABLE census.persons SET PRIVACY UNIT census.households ON persons.hh_id = households.urban MAX 8",
		"ALTER TABLE census.persons SET PRIVACY UNIT census.households ON persons.nope = households.hh_id MAX 8",
		"ALTER TABLE census.persons SET PRIVACY UNIT census.persons ON persons.hh_id = persons.person_id MAX 8",
	} {
		if _, _, err := query(e, root, bad); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
	q("CALL dpsql_set_privacy_unit('census.persons', 'census.households', 'hh_id', 'hh_id', 4)")
	q("ALTER TABLE census.persons SET PRIVACY UNIT census.households ON persons.hh_id = households.hh_id MAX 8")

	before, err := e.dp.ledger.Budget(unit.LedgerKey())
	if err != nil {
		t.Fatal(err)
	}
	q("CREATE SYNTHETIC TABLES syn.households, syn.persons FROM census.households, census.persons USING hpd_fixed " +
		"WITH EPSILON = 1, ROUNDS = 10, ITERS = 20, COMPONENTS = 20 " +
		"WORKLOAD (SELECT h.urban, COUNT(*) FROM households h WHERE EXISTS (SELECT 1 FROM persons p WHERE p.hh_id = h.hh_id AND p.sex = 'F') GROUP BY h.urban, " +
		"SELECT p.sex, h.urban, COUNT(*) FROM persons p JOIN households h ON p.hh_id = h.hh_id GROUP BY p.sex, h.urban)")
	after, err := e.dp.ledger.Budget(unit.LedgerKey())
	if err != nil {
		t.Fatal(err)
	}
	if d := after.RhoSpent - before.RhoSpent; d <= 0 || d > 0.1 {
		t.Errorf("unit ledger charged ρ = %v", d)
	}
	nh := toInt(q("SELECT COUNT(*) FROM syn.households")[0][0])
	np := toInt(q("SELECT COUNT(*) FROM syn.persons")[0][0])
	if nh < 200 || nh > 400 || np < nh {
		t.Errorf("%d households, %d persons", nh, np)
	}
	// Every person in exactly one existing household, sizes ≤ K, fresh keys.
	if n := toInt(q("SELECT COUNT(*) FROM syn.persons p LEFT JOIN syn.households h ON p.hh_id = h.hh_id WHERE h.hh_id IS NULL")[0][0]); n != 0 {
		t.Errorf("%d persons without a household", n)
	}
	if n := toInt(q("SELECT COUNT(*) FROM (SELECT hh_id FROM syn.persons GROUP BY hh_id HAVING COUNT(*) > 8) x")[0][0]); n != 0 {
		t.Errorf("%d households above K", n)
	}
	if n := toInt(q("SELECT COUNT(*) FROM syn.households h WHERE NOT EXISTS (SELECT 1 FROM syn.persons p WHERE p.hh_id = h.hh_id)")[0][0]); n != 0 {
		t.Errorf("%d empty households", n)
	}
	if n := toInt(q("SELECT MAX(person_id) FROM syn.persons")[0][0]); n != np {
		t.Errorf("person keys not 1..%d (max %d)", np, n)
	}
	// The ledger entry names the statement, the unit and K.
	es, err := e.dp.ledger.Entries(unit.LedgerKey(), "")
	if err != nil {
		t.Fatal(err)
	}
	last := es[len(es)-1]
	if !strings.Contains(last.Note, "K = 8") || !strings.Contains(last.Statement, "CREATE SYNTHETIC TABLES") {
		t.Errorf("ledger entry %+v", last)
	}
	// mwem refuses a universe too large, before any charge.
	if _, _, err := query(e, root, "CREATE SYNTHETIC TABLES syn.h2, syn.p2 FROM census.households, census.persons USING mwem WITH EPSILON = 1"); err == nil || !strings.Contains(err.Error(), "universe") {
		t.Errorf("mwem on the full domain: %v", err)
	}
	if b, _ := e.dp.ledger.Budget(unit.LedgerKey()); b.RhoSpent != after.RhoSpent {
		t.Errorf("a refused request charged ρ = %v", b.RhoSpent-after.RhoSpent)
	}
	// The default workload and hpd_gen.
	q("CREATE SYNTHETIC TABLES syn.h3, syn.p3 FROM census.households, census.persons USING hpd_gen WITH EPSILON = 1, ROUNDS = 5, ITERS = 10, COMPONENTS = 16, HOUSEHOLDS = 50")
	if n := toInt(q("SELECT COUNT(*) FROM syn.h3")[0][0]); n != 50 {
		t.Errorf("HOUSEHOLDS = 50 gave %d", n)
	}
	// The CALL twin.
	if rows := q("CALL dpsql_create_synthetic_tables('CREATE SYNTHETIC TABLES syn.h4, syn.p4 FROM census.households, census.persons USING hpd_fixed WITH EPSILON = 0.5, ROUNDS = 3, ITERS = 5, COMPONENTS = 4')"); len(rows) != 1 || toInt(rows[0][1]) < 200 {
		t.Errorf("CALL dpsql_create_synthetic_tables: %v", rows)
	}
	// Typed households: every synthetic household has one head and at
	// most one spouse.
	q("CREATE SYNTHETIC TABLES syn.ht, syn.pt FROM census.households, census.persons USING hpd_fixed WITH EPSILON = 1, RELATIONSHIP = 'rel', ROUNDS = 10, ITERS = 10, COMPONENTS = 16")
	if n := toInt(q("SELECT COUNT(*) FROM (SELECT hh_id, SUM(CASE WHEN rel = 'head' THEN 1 ELSE 0 END) h, SUM(CASE WHEN rel = 'spouse' THEN 1 ELSE 0 END) s FROM syn.pt GROUP BY hh_id HAVING h <> 1 OR s > 1) x")[0][0]); n != 0 {
		t.Errorf("%d invalid typed households", n)
	}
	if n := toInt(q("SELECT COUNT(*) FROM syn.ht")[0][0]); n < 200 {
		t.Errorf("%d typed households", n)
	}
	if _, _, err := query(e, root, "CREATE SYNTHETIC TABLES syn.hx, syn.px FROM census.households, census.persons USING hpd_fixed WITH EPSILON = 1, RELATIONSHIP = 'sex'"); err == nil {
		t.Error("RELATIONSHIP = 'sex' accepted")
	}
	_ = context.Background
}

// A single-table synthesis of the child alone is charged to the unit's
// ledger and runs at ρ/K²; its keys are not attributes.
func TestUnitChildAloneSQL(t *testing.T) {
	e, root, unit := hhFixture(t, 200)
	q := func(s string) []sql.Row {
		t.Helper()
		_, rows, err := query(e, root, s)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		return rows
	}
	q("ALTER TABLE census.persons SET PRIVACY UNIT census.households ON households.hh_id = persons.hh_id MAX 2")
	q("CREATE SYNTHETIC TABLE syn.pa FROM census.persons USING independent WITH EPSILON = 1")
	b, err := e.dp.ledger.Budget(unit.LedgerKey())
	if err != nil {
		t.Fatal(err)
	}
	if b.RhoSpent <= 0 {
		t.Fatal("the unit's ledger was not charged")
	}
	es, _ := e.dp.ledger.Entries(unit.LedgerKey(), "")
	if note := es[len(es)-1].Note; !strings.Contains(note, "ρ/K²") {
		t.Errorf("note %q", note)
	}
	// Truncation: at most 2 persons per household were read.
	n := toInt(q("SELECT COUNT(*) FROM syn.pa")[0][0])
	trunc := toInt(q("SELECT SUM(LEAST(c, 2)) FROM (SELECT COUNT(*) c FROM census.persons GROUP BY hh_id) x")[0][0])
	if n < trunc-40 || n > trunc+40 {
		t.Errorf("%d synthetic persons, %d after truncation", n, trunc)
	}
	// The key columns are row numbers.
	if got := toInt(q("SELECT MAX(person_id) FROM syn.pa")[0][0]); got != n {
		t.Errorf("person_id max %d of %d rows", got, n)
	}
}

// An analyst needs SYNTHESIZE on both tables and cannot link them.
func TestHierarchicalAccess(t *testing.T) {
	e, root, _ := hhFixture(t, 60)
	for _, s := range []string{
		"ALTER TABLE census.persons SET PRIVACY UNIT census.households ON persons.hh_id = households.hh_id MAX 8",
		"CREATE USER analyst IDENTIFIED BY 'pw'",
		"CREATE DATABASE lab",
		"GRANT CREATE, SELECT ON lab.* TO analyst",
		"GRANT SYNTHESIZE ON census.households TO analyst",
	} {
		if _, _, err := query(e, root, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	analyst := sessionCtx(e, 2, "analyst", localhost)
	const stmt = "CREATE SYNTHETIC TABLES lab.h, lab.p FROM census.households, census.persons USING hpd_fixed WITH EPSILON = 0.5, ROUNDS = 3, ITERS = 5, COMPONENTS = 4"
	if _, _, err := query(e, analyst, stmt); err == nil {
		t.Fatal("synthesis without SYNTHESIZE on persons")
	}
	if _, _, err := query(e, analyst, "ALTER TABLE census.persons SET PRIVACY UNIT census.households ON persons.hh_id = households.hh_id MAX 1"); err == nil {
		t.Fatal("an analyst changed the privacy unit")
	}
	if _, _, err := query(e, root, "GRANT SYNTHESIZE ON census.persons TO analyst"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := query(e, analyst, stmt); err != nil {
		t.Fatal(err)
	}
	if _, rows, err := query(e, analyst, "SELECT COUNT(*) FROM lab.p"); err != nil || toInt(rows[0][0]) == 0 {
		t.Fatalf("reading the synthetic persons: %v %v", rows, err)
	}
	if _, _, err := query(e, analyst, "SELECT COUNT(*) FROM census.persons"); err == nil {
		t.Fatal("the analyst read the raw persons")
	}
}
