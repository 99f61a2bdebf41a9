package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/dpsql/dpsql/catalog/domain"
	"github.com/dpsql/dpsql/engine/dpparse"
	"github.com/dpsql/dpsql/internal/hhgen"
	"github.com/dpsql/dpsql/synth/hpd"
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
	// ε = 10 (the unit's whole budget) keeps the noisy total's σ at a few
	// persons, so that the count below tells truncation apart (at ε = 1 its
	// σ ≈ 20 failed the ±40 one run in six).
	q("CREATE SYNTHETIC TABLE syn.pa FROM census.persons USING independent WITH EPSILON = 10")
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
	// Introspection: both tables are listed, linked, with the one charge;
	// error bounds are refused with the reason.
	_, rows, err := query(e, analyst, "SHOW SYNTHETIC TABLES FROM lab")
	if err != nil || len(rows) != 2 {
		t.Fatalf("SHOW SYNTHETIC TABLES: %v %v", rows, err)
	}
	want := map[string]string{"h": "census.households", "p": "census.persons"}
	other := map[string]string{"h": "lab.p", "p": "lab.h"}
	for _, r := range rows {
		name := r[1].(string)
		n := toInt(query1(t, e, analyst, "SELECT COUNT(*) FROM lab."+name))
		if r[2] != want[name] || r[3] != "hpd_fixed" || r[4] != "hierarchical rows, linked with "+other[name] ||
			r[5].(float64) != 0.5 || !(r[7].(float64) > 0) || r[8].(int64) != n || r[9].(int64) != 3 {
			t.Errorf("SHOW SYNTHETIC TABLES row %v (%d rows)", r, n)
		}
	}
	for _, q := range []string{"SHOW ERROR BOUNDS FOR lab.h", "SELECT * FROM dp_marginal('lab.p', 'sex')"} {
		_, _, err := query(e, analyst, q)
		if errCode(err) != ErrNoBounds.Code() || !strings.Contains(err.Error(), "hierarchical release") {
			t.Errorf("%s: %v", q, err)
		}
	}
	if _, _, err := query(e, root, "DROP TABLE lab.p"); err != nil {
		t.Fatal(err)
	}
	if _, rows, err := query(e, analyst, "SHOW SYNTHETIC TABLES FROM lab"); err != nil || len(rows) != 1 || !strings.Contains(rows[0][4].(string), "dropped") {
		t.Errorf("after DROP TABLE lab.p: %v %v", rows, err)
	}
}

// hierCase is one workload query of the brute-force check: its SQL and the
// role (G, I or I2) and attribute name of each selected column.
type hierCase struct {
	sql  string
	cols []string // "G:urban", "I:sex", "I2:employed"
}

// hierCases cover Q_G, Q_I and both Q_R forms, every relation, pins on
// both sides, IN lists, household conditions, and a join written with the
// unique relative on the left.
var hierCases = []hierCase{
	{"SELECT h.urban, COUNT(*) FROM households h WHERE EXISTS (SELECT 1 FROM persons p WHERE p.hh_id = h.hh_id AND p.sex = 'F' AND p.employed = 'yes') GROUP BY h.urban", []string{"G:urban"}},
	{"SELECT p.sex, h.tenure, COUNT(*) FROM persons p JOIN households h ON p.hh_id = h.hh_id WHERE h.urban = 'rural' GROUP BY p.sex, h.tenure", []string{"I:sex", "G:tenure"}},
	{"SELECT p.sex, COUNT(*) FROM persons p JOIN persons q ON p.hh_id = q.hh_id WHERE p.rel = 'spouse' AND q.rel = 'head' AND q.employed = 'yes' GROUP BY p.sex", []string{"I:sex"}},
	{"SELECT p.sex, COUNT(*) FROM persons p WHERE p.rel = 'spouse' AND EXISTS (SELECT 1 FROM persons q WHERE q.hh_id = p.hh_id AND q.rel = 'head' AND q.employed = 'yes') GROUP BY p.sex", []string{"I:sex"}},
	{"SELECT p.age, q.edu, COUNT(*) FROM persons p JOIN persons q ON p.hh_id = q.hh_id AND q.rel = 'spouse' WHERE p.rel = 'head' GROUP BY p.age, q.edu", []string{"I:age", "I2:edu"}},
	{"SELECT q.sex, h.urban, COUNT(*) FROM persons p JOIN persons q ON p.hh_id = q.hh_id JOIN households h ON h.hh_id = q.hh_id WHERE p.rel = 'head' AND p.edu = 'college' AND q.rel = 'child' GROUP BY q.sex, h.urban", []string{"I:sex", "G:urban"}},
	{"SELECT p.race, COUNT(*) FROM persons p WHERE p.rel IN ('head', 'spouse') AND EXISTS (SELECT 1 FROM persons q WHERE q.hh_id = p.hh_id AND q.rel = 'child' AND q.age = '18-29') GROUP BY p.race", []string{"I:race"}},
	{"SELECT p.sex, COUNT(*) FROM persons p JOIN households h ON p.hh_id = h.hh_id WHERE h.income = 'low' AND p.rel = 'child' AND EXISTS (SELECT 1 FROM persons q WHERE q.hh_id = h.hh_id AND rel IN ('head', 'spouse') AND employed = 'no') GROUP BY p.sex", []string{"I:sex"}},
	{"SELECT p.age, COUNT(*) FROM persons p WHERE p.rel = 'child' AND EXISTS (SELECT 1 FROM persons q WHERE q.hh_id = p.hh_id AND q.rel = 'spouse' AND q.edu = 'grad') GROUP BY p.age", []string{"I:age"}},
	{"SELECT p.employed, COUNT(*) FROM persons p WHERE p.rel = 'head' AND EXISTS (SELECT 1 FROM persons q WHERE q.hh_id = p.hh_id AND q.rel = 'child' AND q.employed = 'yes') GROUP BY p.employed", []string{"I:employed"}},
}

// The compiled workload's exact answers on the records the mechanism reads
// equal the same SQL evaluated on the raw tables (MAX 10: hhgen's largest
// household, so nothing is truncated).
func TestHierarchicalWorkloadMatchesSQL(t *testing.T) {
	e, root, _ := hhFixture(t, 250)
	if _, _, err := query(e, root, "ALTER TABLE census.persons SET PRIVACY UNIT census.households ON persons.hh_id = households.hh_id MAX 10"); err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, c := range hierCases {
		texts = append(texts, c.sql)
	}
	stmt := "CREATE SYNTHETIC TABLES syn.h, syn.p FROM census.households, census.persons USING hpd_fixed WITH EPSILON = 1, RELATIONSHIP = rel WORKLOAD (" + strings.Join(texts, ", ") + ")"
	parsed, _, _, err := dpparse.Parse(stmt)
	if err != nil {
		t.Fatal(err)
	}
	r, err := e.validateHier(root, parsed.(*dpparse.CreateSyntheticTables))
	if err != nil {
		t.Fatal(err)
	}
	recs, err := (&hierSource{e: e, r: r}).Households(root)
	if err != nil {
		t.Fatal(err)
	}
	d := r.domain
	if n := toInt(query1(t, e, root, "SELECT COUNT(*) FROM census.persons")); int(n) != recs.Persons() {
		t.Fatalf("%d persons read of %d: the check needs untruncated data", recs.Persons(), n)
	}
	kinds := map[hpd.Kind]int{}
	for i, c := range hierCases {
		set := &r.workload[i]
		kinds[set.Kind]++
		got := hpd.Answers(d, recs, set)
		_, rows, err := query(e, root, strings.NewReplacer(" households ", " census.households ", " persons ", " census.persons ").Replace(c.sql))
		if err != nil {
			t.Fatalf("%s: %v", c.sql, err)
		}
		sqlCount := map[string]int64{}
		for _, row := range rows {
			key := ""
			for j, col := range c.cols {
				role, name, _ := strings.Cut(col, ":")
				dom := r.childDom
				if role == "G" {
					dom = r.unitDom
				}
				code, st := dom.Columns[slices.IndexFunc(dom.Columns, func(c domain.Column) bool { return c.Name() == name })].Encode(row[j])
				if st != domain.InDomain {
					t.Fatalf("%s: value %v of %s", c.sql, row[j], col)
				}
				key += fmt.Sprintf("%d,", code)
			}
			sqlCount[key] = toInt(row[len(c.cols)])
		}
		matched, total := 0, int64(0)
		for cell := range got {
			vals, ok := decodeHierCell(d, set, cell)
			if !ok {
				continue // not a query of the set (its Where)
			}
			key := ""
			for _, col := range c.cols {
				key += fmt.Sprintf("%d,", vals[col])
			}
			want, found := sqlCount[key]
			if found {
				matched++
			}
			if int64(got[cell]) != want {
				t.Errorf("%s: cell %s: compiled %v, SQL %d", c.sql, key, got[cell], want)
			}
			total += int64(got[cell])
		}
		if matched != len(sqlCount) || total == 0 {
			t.Errorf("%s: %d of %d SQL groups are cells of %v (total %d)", c.sql, matched, len(sqlCount), set, total)
		}
	}
	if kinds[hpd.GroupLevel] != 1 || kinds[hpd.IndivLevel] != 1 || kinds[hpd.RelationLevel] != len(hierCases)-2 {
		t.Errorf("query kinds %v", kinds)
	}
}

// decodeHierCell returns the codes of cell c of set keyed "G:name",
// "I:name", "I2:name", and whether c satisfies the set's Where.
func decodeHierCell(d *hpd.Domain, set *hpd.QuerySet, c int) (map[string]int, bool) {
	type ax struct {
		key  string
		size int
		cond func(w hpd.Cond) bool
		attr int
	}
	var axes []ax
	for _, a := range set.G {
		axes = append(axes, ax{"G:" + d.GroupNames[a], d.Group[a], func(w hpd.Cond) bool { return w.Group }, a})
	}
	for _, b := range set.I {
		axes = append(axes, ax{"I:" + d.IndivNames[b], d.Indiv[b], func(w hpd.Cond) bool { return !w.Group && !w.Relative }, b})
	}
	for _, b := range set.I2 {
		axes = append(axes, ax{"I2:" + d.IndivNames[b], d.Indiv[b], func(w hpd.Cond) bool { return w.Relative }, b})
	}
	out := map[string]int{}
	ok := true
	for j := len(axes) - 1; j >= 0; j-- {
		v := c % axes[j].size
		c /= axes[j].size
		out[axes[j].key] = v
		for _, w := range set.Where {
			if axes[j].cond(w) && w.Attr == axes[j].attr && w.Value != v {
				ok = false
			}
		}
	}
	return out, ok
}

func query1(t *testing.T, e *Engine, ctx *sql.Context, q string) any {
	t.Helper()
	_, rows, err := query(e, ctx, q)
	if err != nil || len(rows) != 1 {
		t.Fatalf("%s: %v %v", q, rows, err)
	}
	return rows[0][0]
}

// CREATE SYNTHETIC TABLES with a WORKLOAD holding Q_G, Q_I and Q_R queries
// runs end to end on typed households; a malformed relationship query is
// refused with a workload error before any charge.
func TestHierarchicalRelationWorkloadSQL(t *testing.T) {
	e, root, unit := hhFixture(t, 300)
	if _, _, err := query(e, root, "ALTER TABLE census.persons SET PRIVACY UNIT census.households ON persons.hh_id = households.hh_id MAX 8"); err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, c := range hierCases {
		texts = append(texts, c.sql)
	}
	work := " WORKLOAD (" + strings.Join(texts, ", ") + ")"
	const head = "CREATE SYNTHETIC TABLES syn.households, syn.persons FROM census.households, census.persons USING hpd_fixed WITH EPSILON = 1, RELATIONSHIP = rel, ROUNDS = 12, ITERS = 10, COMPONENTS = 16"
	before, err := e.dp.ledger.Budget(unit.LedgerKey())
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct{ stmt, msg string }{
		{head + " WORKLOAD (SELECT p.sex, COUNT(*) FROM persons p JOIN persons q ON p.hh_id = q.hh_id WHERE p.rel = 'child' AND q.rel = 'child' GROUP BY p.sex)", "not a relation"},
		{head + " WORKLOAD (SELECT p.sex, COUNT(*) FROM persons p JOIN persons q ON p.hh_id = q.hh_id WHERE p.rel IN ('head', 'spouse') AND q.rel = 'child' GROUP BY p.sex)", "counts pairs"},
		{strings.Replace(head, "RELATIONSHIP = rel, ", "", 1) + " WORKLOAD (" + hierCases[3].sql + ")", "typed households"},
	} {
		_, _, err := query(e, root, bad.stmt)
		if err == nil || !strings.Contains(err.Error(), bad.msg) {
			t.Errorf("%s: %v, want an error saying %q", bad.stmt, err, bad.msg)
		} else if code := errCode(err); code != ErrWorkload.Code() {
			t.Errorf("%s: MySQL error %d, want %d", bad.stmt, code, ErrWorkload.Code())
		}
	}
	// EXPLAIN shows the compiled sets (charging nothing), as does its CALL twin.
	for _, q := range []string{"EXPLAIN " + head + work, "CALL dpsql_explain_synthetic_table('" + strings.ReplaceAll(head+work, "'", "''") + "')"} {
		_, rows, err := query(e, root, q)
		if err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
		got := map[string]string{}
		for _, r := range rows {
			got[r[0].(string)+"|"+r[1].(string)] = r[2].(string)
		}
		for k, v := range map[string]string{
			"workload|Q_R married-to person(rel='spouse', sex) relative(rel='head', employed='yes')": "queries=2 l1=1 l2=1",
			"workload|Q_R has-child person(race) relative(rel='child', age='18-29')":                 "queries=4 l1=2 l2=2",
			"workload|Q_G households household(urban) person(sex='F', employed='yes')":               "queries=2 l1=1 l2=1",
			"workload|total":         "10 sets, 47 queries",
			"statement|relationship": "rel",
			"statement|privacy_unit": "census.households, K = 8",
			"model|rounds":           "12",
		} {
			if got[k] != v {
				t.Errorf("%.40s: %s = %q, want %q", q, k, got[k], v)
			}
		}
	}
	if b, _ := e.dp.ledger.Budget(unit.LedgerKey()); b.RhoSpent != before.RhoSpent {
		t.Fatalf("refused or explained requests charged ρ = %v", b.RhoSpent-before.RhoSpent)
	}
	if _, _, err := query(e, root, head+work); err != nil {
		t.Fatal(err)
	}
	after, _ := e.dp.ledger.Budget(unit.LedgerKey())
	if after.RhoSpent <= before.RhoSpent {
		t.Error("not charged")
	}
	if n := toInt(query1(t, e, root, "SELECT COUNT(*) FROM (SELECT hh_id, SUM(CASE WHEN rel = 'head' THEN 1 ELSE 0 END) h, SUM(CASE WHEN rel = 'spouse' THEN 1 ELSE 0 END) s FROM syn.persons GROUP BY hh_id HAVING h <> 1 OR s > 1) x")); n != 0 {
		t.Errorf("%d invalid typed households", n)
	}
	// The released tables answer the relationship queries themselves.
	if n := toInt(query1(t, e, root, "SELECT COUNT(*) FROM syn.persons p JOIN syn.persons q ON p.hh_id = q.hh_id WHERE p.rel = 'spouse' AND q.rel = 'head'")); n == 0 {
		t.Error("no married couple in the synthetic households")
	}
}
