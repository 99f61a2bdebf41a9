package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/budget"
	"github.com/dpsql/dpsql/internal/fixture"
)

// TestCreateSyntheticPEP runs PEP and MWEM (pmw) end to end through SQL:
// the ledger is charged the declared ε, the table holds the requested rows,
// and COUNT(*) queries on it answer.
func TestCreateSyntheticPEP(t *testing.T) {
	f := newSynthFixture(t)
	for _, c := range []struct{ mech, opts string }{
		{"pep", "ROUNDS = 5"},
		{"pep", "ROUNDS = 5, DENSE = 1, CELLS = 1"},
		{"pmw", "ROUNDS = 8, PAST_QUERIES = 1"},
	} {
		before := f.budget()
		f.exec("DROP TABLE IF EXISTS syn.pe")
		f.exec("CREATE SYNTHETIC TABLE syn.pe FROM raw.people USING " + c.mech + " WITH EPSILON = 1, ROWS = 300, " + c.opts +
			" WORKLOAD (SELECT sex, age, COUNT(*) FROM people GROUP BY sex, age; SELECT age, city, COUNT(*) FROM people GROUP BY age, city)")
		spent := f.budget().RhoSpent - before.RhoSpent
		if rho := wantRho(t, 1); spent < rho || spent > rho+math.Ldexp(1, -40) {
			t.Errorf("%s: ρ spent %.15g, want %.15g", c.mech, spent, rho)
		}
		es := f.entries()
		if last := es[len(es)-1]; last.Status != budget.StatusCommitted || last.Mechanism != c.mech {
			t.Errorf("%s: ledger entry %+v", c.mech, last)
		}
		if got := f.rows("SELECT COUNT(*) FROM syn.pe"); toInt(got[0][0]) != 300 {
			t.Errorf("%s: COUNT(*) = %v, want 300", c.mech, got)
		}
		// The generated data has age following sex: the synthetic copy
		// must answer a grouped count over the measured pair.
		got := f.rows("SELECT sex, COUNT(*) FROM syn.pe GROUP BY sex")
		var n int64
		for _, r := range got {
			n += toInt(r[1])
		}
		if n != 300 {
			t.Errorf("%s: grouped counts %v", c.mech, got)
		}
		rec, model, _ := f.record("syn", "pe")
		if rec.Mechanism != c.mech || rec.Output != "synthetic data" || len(model) == 0 {
			t.Errorf("%s: record %+v, model %d bytes", c.mech, rec, len(model))
		}
		// Whole-marginal releases have bounds on their measured marginals;
		// single-cell ones (pmw's default) none.
		_, _, err := query(f.e, f.root, "SHOW ERROR BOUNDS FOR syn.pe CONFIDENCE 0.9")
		if strings.Contains(c.opts, "CELLS = 1") || c.mech == "pmw" {
			if err == nil || !strings.Contains(err.Error(), "no bounds") {
				t.Errorf("%s %s: SHOW ERROR BOUNDS: %v, want no bounds", c.mech, c.opts, err)
			}
			continue
		}
		rows := f.rows("SHOW ERROR BOUNDS FOR syn.pe CONFIDENCE 0.9")
		if len(rows) != 2 {
			t.Fatalf("%s: bounds %v", c.mech, rows)
		}
		for _, r := range rows {
			if l1 := r[2].(float64); !(l1 > 0 && l1 <= 2) || r[3] != support(true) {
				t.Errorf("%s: measured marginal %v: %v", c.mech, r[0], r)
			}
		}
	}
}

// TestCreateSyntheticPubNeedsPublic: the public-data variants refuse to run
// without a public table, before anything is charged.
func TestCreateSyntheticPubNeedsPublic(t *testing.T) {
	f := newSynthFixture(t)
	for _, mech := range []string{"pmw_pub", "pep_pub"} {
		before := f.budget()
		_, _, err := query(f.e, f.root, "CREATE SYNTHETIC TABLE syn.pub FROM raw.people USING "+mech+" WITH EPSILON = 1")
		if err == nil || !strings.Contains(strings.ToLower(err.Error()), "public") {
			t.Errorf("%s without PUBLIC: %v", mech, err)
		}
		if f.budget().RhoSpent != before.RhoSpent || f.tableExists("syn", "pub") {
			t.Errorf("%s: a refused request spent budget or made a table", mech)
		}
	}
}

// TestCreateSyntheticPEPPublic runs PMW^Pub and PEP^Pub through SQL with a
// public table of the same columns: rows-only releases whose rows are all
// public rows, the ledger charged, and the best-mixture note in the entry.
func TestCreateSyntheticPEPPublic(t *testing.T) {
	f := newSynthFixture(t)
	rng := rand.New(rand.NewPCG(99, 3))
	f.exec(
		"CREATE TABLE raw.pubpeople (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, sex ENUM('F','M') NOT NULL,"+
			" age INT NOT NULL CHECK (age BETWEEN 0 AND 9), city VARCHAR(10) CHECK (city IN ('a','b','c')))",
		"INSERT INTO raw.pubpeople (sex, age, city) VALUES "+strings.Join(fixture.PeopleTuples(rng, 200), ","),
		"ALTER TABLE raw.pubpeople SET PUBLIC",
	)
	pub := map[string]bool{}
	for _, r := range f.rows("SELECT sex, age, city FROM raw.pubpeople") {
		pub[fmt.Sprint(r...)] = true
	}
	for _, mech := range []string{"pmw_pub", "pep_pub"} {
		before := f.budget()
		f.exec("DROP TABLE IF EXISTS syn.pu")
		f.exec("CREATE SYNTHETIC TABLE syn.pu FROM raw.people USING " + mech + " WITH EPSILON = 1, ROWS = 250, ROUNDS = 6, PUBLIC = raw.pubpeople" +
			" WORKLOAD (SELECT sex, age, COUNT(*) FROM people GROUP BY sex, age; SELECT age, city, COUNT(*) FROM people GROUP BY age, city)")
		spent := f.budget().RhoSpent - before.RhoSpent
		if rho := wantRho(t, 1); spent < rho || spent > rho+math.Ldexp(1, -40) {
			t.Errorf("%s: ρ spent %.15g, want %.15g", mech, spent, rho)
		}
		es := f.entries()
		last := es[len(es)-1]
		t.Logf("%s ledger note: %s", mech, last.Note)
		if last.Status != budget.StatusCommitted || last.Mechanism != mech || !strings.Contains(last.Note, "best-mixture error") {
			t.Errorf("%s: ledger entry %+v", mech, last)
		}
		rows := f.rows("SELECT sex, age, city FROM syn.pu")
		if len(rows) != 250 {
			t.Fatalf("%s: %d rows, want 250", mech, len(rows))
		}
		for _, r := range rows {
			if !pub[fmt.Sprint(r...)] {
				t.Fatalf("%s: row %v is not a public row", mech, r)
			}
		}
		if got := f.rows("SELECT COUNT(*) FROM syn.pu WHERE age < 5"); toInt(got[0][0]) > 250 {
			t.Errorf("%s: count %v", mech, got)
		}
		rec, _, _ := f.record("syn", "pu")
		if rec.Mechanism != mech || rec.Output != "synthetic rows" {
			t.Errorf("%s: record %+v", mech, rec)
		}
	}
}
