package engine

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// TestCreateSyntheticHDMM runs HDMM+PGM and HDMM+LLS with a range workload
// (WHERE age <= 4 compiles to a prefix row over age's codes) end to end:
// exact charge, and the range query is answered from the model (PGM) or
// from the released least-squares marginal (LLS).
func TestCreateSyntheticHDMM(t *testing.T) {
	f := newSynthFixture(t)
	const workload = ` WORKLOAD (SELECT sex, COUNT(*) FROM people WHERE age <= 4 GROUP BY sex,
		SELECT sex, COUNT(*) FROM people WHERE age <= 6 GROUP BY sex,
		SELECT age, city, COUNT(*) FROM people GROUP BY age, city)`
	truth := f.rows("SELECT sex, COUNT(*) FROM raw.people WHERE age <= 4 GROUP BY sex ORDER BY sex")
	for _, c := range []struct{ name, table string }{{"hdmm_pgm", "syn.hp"}, {"hdmm_lls", "syn.hl"}} {
		before := f.budget()
		f.exec("CREATE SYNTHETIC TABLE " + c.table + " FROM raw.people USING " + c.name + " WITH EPSILON = 1" + workload)
		spent := f.budget().RhoSpent - before.RhoSpent
		if rho := wantRho(t, 1); spent < rho || spent > rho+math.Ldexp(1, -40) {
			t.Errorf("%s: ρ spent %.15g, want %.15g", c.name, spent, rho)
		}
		es := f.entries()
		// The two thresholds on (sex, age) stack into one factor on age,
		// which HDMM measures with a non-identity strategy.
		if last := es[len(es)-1]; last.Mechanism != c.name || !strings.Contains(last.Note, "age: ") {
			t.Errorf("%s: ledger entry %+v, want a note naming age's strategy", c.name, last)
		}
		got := f.rows("SELECT sex, COUNT(*) FROM " + c.table + " WHERE age <= 4 GROUP BY sex ORDER BY sex")
		count := map[string]float64{}
		for _, r := range got {
			count[fmt.Sprint(r[0])] += float64(toInt(r[1]))
		}
		for _, r := range truth {
			count[fmt.Sprint(r[0])] -= float64(toInt(r[1]))
		}
		for sex, d := range count {
			// ε = 1 on 400 rows: within 40 of the truth.
			if math.Abs(d) > 40 {
				t.Errorf("%s: sex %s: range count off by %v (got %v, truth %v)", c.name, sex, d, got, truth)
			}
		}
		if len(got) == 0 {
			t.Errorf("%s: no answer to the range query", c.name)
		}
	}
}
