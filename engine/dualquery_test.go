package engine

import (
	"math"
	"strings"
	"testing"
)

// TestDualQueryFEMEndToEnd runs DualQuery, DualQuery+PGM and FEM through
// SQL: each CREATE SYNTHETIC TABLE charges its ρ to the ledger under its
// mechanism's name, and COUNT queries on the table are on the data's scale
// (the records are replicated to the released count; dualquery_pgm's
// model carries it). Three explicit parameters are refused before any
// charge.
func TestDualQueryFEMEndToEnd(t *testing.T) {
	f := newSynthFixture(t)
	spent := f.budget().RhoSpent
	for _, c := range []struct{ mech, opts string }{
		{"dualquery", ""},
		{"dualquery", ", SAMPLES = 50, ETA = 0.5"},
		{"dualquery_pgm", ", SAMPLES = 50, PGM_ITERS = 50"},
		{"fem", ", ROUNDS = 10, SAMPLES = 5"},
	} {
		name := "syn." + c.mech + map[bool]string{true: "_opts", false: ""}[c.opts != ""]
		f.exec("CREATE SYNTHETIC TABLE " + name + " FROM raw.people USING " + c.mech + " WITH EPSILON = 1" + c.opts)
		n := toInt(f.rows("SELECT COUNT(*) FROM " + name)[0][0])
		if math.Abs(float64(n)-fixtureRows) > 150 {
			t.Errorf("%s: COUNT(*) = %d, want about %d", name, n, fixtureRows)
		}
		bySex := f.rows("SELECT sex, COUNT(*) FROM " + name + " GROUP BY sex ORDER BY sex")
		var sum int64
		for _, r := range bySex {
			sum += toInt(r[1])
		}
		if len(bySex) == 0 || math.Abs(float64(sum-n)) > 2 {
			t.Errorf("%s: counts by sex %v, total %d", name, bySex, n)
		}
		b := f.budget()
		if !(b.RhoSpent > spent) {
			t.Errorf("%s: ρ spent %v, was %v", name, b.RhoSpent, spent)
		}
		spent = b.RhoSpent
		es := f.entries()
		last := es[len(es)-1]
		if last.Mechanism != c.mech || !strings.Contains(last.Statement, c.mech) {
			t.Errorf("%s: last ledger entry %+v", name, last)
		}
	}
	_, _, err := query(f.e, f.root, "CREATE SYNTHETIC TABLE syn.bad FROM raw.people USING dualquery WITH EPSILON = 1, SAMPLES = 10, ROUNDS = 5, ETA = 1")
	if err == nil || !strings.Contains(err.Error(), "at most two") {
		t.Errorf("three parameters: err = %v", err)
	}
	if f.budget().RhoSpent != spent || f.tableExists("syn", "bad") {
		t.Error("a refused statement was charged or created its table")
	}
}
