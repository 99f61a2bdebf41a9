package engine

import (
	"math"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/budget"
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
