package engine

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/budget"
)

// TestCreateSyntheticPrivBayes runs PrivBayes (rows only) and PrivBayes+PGM
// (a model, with the L1 loss) end to end through SQL: each charges exactly
// its ε to the ledger and yields a table whose counts are plausible.
func TestCreateSyntheticPrivBayes(t *testing.T) {
	f := newSynthFixture(t)
	for _, c := range []struct{ name, stmt string }{
		{"privbayes", "CREATE SYNTHETIC TABLE syn.pb FROM raw.people USING privbayes WITH EPSILON = 1, DEGREE = 1"},
		{"privbayes_pgm", "CREATE SYNTHETIC TABLE syn.pbp FROM raw.people USING privbayes_pgm WITH EPSILON = 1, LOSS = 1, ITERS = 200"},
	} {
		before := f.budget()
		f.exec(c.stmt)
		spent := f.budget().RhoSpent - before.RhoSpent
		if rho := wantRho(t, 1); spent < rho || spent > rho+math.Ldexp(1, -40) {
			t.Errorf("%s: ρ spent %.15g, want %.15g", c.name, spent, rho)
		}
		es := f.entries()
		if last := es[len(es)-1]; last.Status != budget.StatusCommitted || last.Mechanism != c.name {
			t.Errorf("%s: ledger entry %+v", c.name, last)
		}
		tbl := "syn.pb"
		if c.name == "privbayes_pgm" {
			tbl = "syn.pbp"
		}
		n := toInt(f.rows("SELECT COUNT(*) FROM " + tbl)[0][0])
		if n < fixtureRows/2 || n > 2*fixtureRows {
			t.Errorf("%s: %d rows, want about %d", c.name, n, fixtureRows)
		}
		bySex := f.rows("SELECT sex, COUNT(*) FROM " + tbl + " GROUP BY sex")
		if len(bySex) != 2 {
			t.Errorf("%s: counts by sex %v", c.name, bySex)
		}
		if c.name == "privbayes_pgm" {
			plan := f.rows("EXPLAIN SELECT sex, COUNT(*) FROM " + tbl + " GROUP BY sex")
			if !strings.Contains(strings.ToLower(fmt.Sprint(plan[0][0])), "model") {
				t.Errorf("%s: EXPLAIN %v, want an answer from the model", c.name, plan)
			}
		}
	}
}
