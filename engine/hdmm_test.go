package engine

import (
	"fmt"
	"math"
	"strconv"
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

// TestQueryBoundsRange checks dpsql_query_bounds through SQL on HDMM+PGM,
// PrivBayes+PGM, HDMM+LLS and Gaussian (answers-only) tables: range (<=, BETWEEN) and equality queries get
// the model's answer, as the SELECT does, with an interval that covers the
// true count (at confidence 1 − 1e-6, so that this single fresh-noise
// release fails with negligible probability; the coverage rate itself is
// tested in synth/bounds), and SHOW ERROR BOUNDS covers the workload.
func TestQueryBoundsRange(t *testing.T) {
	f := newSynthFixture(t)
	const workload = ` WORKLOAD (SELECT sex, COUNT(*) FROM people WHERE age <= 4 GROUP BY sex,
		SELECT sex, COUNT(*) FROM people WHERE age <= 6 GROUP BY sex,
		SELECT age, city, COUNT(*) FROM people GROUP BY age, city)`
	f.exec("CREATE SYNTHETIC TABLE syn.hp FROM raw.people USING hdmm_pgm WITH EPSILON = 1" + workload)
	f.exec("CREATE SYNTHETIC TABLE syn.hl FROM raw.people USING hdmm_lls WITH EPSILON = 1" + workload)
	// ROWS scales the SELECT's counts: the estimate follows, the bound widens.
	f.exec("CREATE SYNTHETIC TABLE syn.hr FROM raw.people USING hdmm_pgm WITH EPSILON = 1, ROWS = 1000" + workload)
	f.exec("CREATE SYNTHETIC TABLE syn.pb FROM raw.people USING privbayes_pgm WITH EPSILON = 1")
	f.exec("CREATE SYNTHETIC TABLE syn.ga FROM raw.people USING gaussian WITH EPSILON = 1 WORKLOAD (SELECT sex, age, COUNT(*) FROM people GROUP BY sex, age)")
	for _, tc := range []struct{ table, where, group string }{
		{"hp", "age <= 4", "sex"},
		{"hp", "age BETWEEN 5 AND 6", "sex"}, // prefix 6 − prefix 4: in the measured span
		{"hp", "age <= 5", "city"},
		{"hp", "sex = 'F' AND age <= 6", ""},
		{"hr", "age <= 4", "sex"},
		{"hl", "age <= 4", "sex"},
		{"hl", "age BETWEEN 5 AND 6", "sex"},
		{"hl", "age <= 5", "city"},
		{"ga", "age BETWEEN 2 AND 7", "sex"},
		{"pb", "age <= 4", "sex"},
		{"pb", "age BETWEEN 2 AND 7", "city"},
		{"pb", "", "sex"},
	} {
		name := tc.table + ": " + tc.where + " by " + tc.group
		sel, groupBy := "COUNT(*)", ""
		if tc.group != "" {
			sel, groupBy = tc.group+", COUNT(*)", " GROUP BY "+tc.group
		}
		where := ""
		if tc.where != "" {
			where = " WHERE " + tc.where
		}
		q := "SELECT " + sel + " FROM " + tc.table + where + groupBy
		truth := map[string]float64{}
		// The group's label as dpsql_query_bounds spells it (ENUMs come
		// back as their index).
		key := func(v any) string {
			switch {
			case tc.group == "":
				return ""
			case v == nil:
				return tc.group + "=NULL"
			case tc.group == "sex":
				if _, ok := v.(string); !ok {
					i, _ := strconv.Atoi(fmt.Sprint(v))
					v = []string{"F", "M"}[i-1]
				}
			}
			return fmt.Sprintf("%s=%v", tc.group, v)
		}
		for _, r := range f.rows("SELECT " + sel + " FROM raw.people" + where + groupBy) {
			truth[key(r[0])] = float64(toInt(r[len(r)-1]))
		}
		answer := map[string]float64{}
		for _, r := range f.rows(strings.Replace(q, "FROM "+tc.table, "FROM syn."+tc.table, 1)) {
			answer[key(r[0])] = float64(toInt(r[len(r)-1]))
		}
		rows := f.rows(fmt.Sprintf("CALL dpsql_query_bounds('syn.%s', %q, 0.999999)", tc.table, q))
		if len(rows) == 0 {
			t.Errorf("%s: no rows", name)
		}
		for _, r := range rows {
			g, est, lo, hi, eb, sup := r[0].(string), r[1].(float64), r[2].(float64), r[3].(float64), r[4].(float64), r[5].(string)
			if sup != support(true) {
				t.Errorf("%s %s: support %q", name, g, sup)
			}
			// The SELECT's answer is the model's count, rounded.
			// (A group the SELECT leaves out has a count that rounds to 0.)
			if a := answer[g]; math.Abs(a-est) > 1 {
				t.Errorf("%s %s: estimate %v, the SELECT answered %v", name, g, est, a)
			}
			tr := truth[g]
			if tr < lo || tr > hi || math.Abs(tr-est) > eb {
				t.Errorf("%s %s: truth %v outside [%v, %v] or off the estimate %v by more than %v", name, g, tr, lo, hi, est, eb)
			}
			if tc.table == "hr" {
				continue // the interval is for the true count, the estimate scaled
			}
			if !(hi-lo < 400) {
				t.Errorf("%s %s: interval [%v, %v] wider than the table", name, g, lo, hi)
			}
		}
	}
	if rows := f.rows("SHOW ERROR BOUNDS FOR syn.hp CONFIDENCE 0.9"); len(rows) != 2 {
		t.Errorf("SHOW ERROR BOUNDS on hdmm_pgm: %v, want the 2 workload marginals", rows)
	}
	for _, tc := range []struct{ call, msg string }{
		{`CALL dpsql_query_bounds('raw.people', 'SELECT sex, COUNT(*) FROM people WHERE age <= 4 GROUP BY sex')`, "not a synthetic table"},
		{`CALL dpsql_query_bounds('syn.hl', 'SELECT sex, COUNT(*) FROM hl WHERE age = 3 GROUP BY sex')`, "does not span it"},
		{`CALL dpsql_query_bounds('syn.hl', 'SELECT sex, city, COUNT(*) FROM hl GROUP BY sex, city')`, "no released marginal"},
		{`CALL dpsql_query_bounds('syn.hp', 'SELECT sex, COUNT(*) FROM hp WHERE age <= 4 OR sex = ''F'' GROUP BY sex')`, "single-column"},
		{`CALL dpsql_query_bounds('syn.hp', 'SELECT COUNT(*) FROM hp')`, "every row"},
		{`CALL dpsql_query_bounds('syn.hp', 'SELECT sex, COUNT(*) FROM hp GROUP BY sex')`, "do not span it"},
		// (sex, age) was measured with the two prefixes only.
		{`CALL dpsql_query_bounds('syn.hp', 'SELECT sex, COUNT(*) FROM hp WHERE age BETWEEN 2 AND 7 GROUP BY sex')`, "do not span it"},
		{`CALL dpsql_query_bounds('syn.hp', 'DELETE FROM hp')`, "SELECT"},
		{`CALL dpsql_query_bounds('syn.hp', 'SELECT sex, COUNT(*) FROM hp GROUP BY sex', 1.5)`, "between 0 and 1"},
	} {
		_, _, err := query(f.e, f.root, tc.call)
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: error %v, want %q", tc.call, err, tc.msg)
		}
	}
}
