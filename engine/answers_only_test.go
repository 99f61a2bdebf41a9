package engine

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
)

// TestAnswersOnlyCounts: a COUNT query on an answers-only (gaussian) table
// is answered from the released noisy marginal that contains its columns,
// summed over the others, filtered by WHERE on cells and clipped at 0, not
// by counting the table's cells; EXPLAIN names the marginal. Queries the
// marginals cannot answer are refused naming them; selecting dp_* columns
// reads the cells as they are.
func TestAnswersOnlyCounts(t *testing.T) {
	f := newSynthFixture(t)
	// Default workload: (sex, age), (sex, city), (age, city).
	f.exec("CREATE SYNTHETIC TABLE syn.g FROM raw.people USING gaussian WITH EPSILON = 1")
	marginalOf := regexp.MustCompile(`released marginal (\d+) \(([^)]*)\)`)
	for _, c := range []struct {
		q, cells string // cells: the same answer from marginal %d's cells, before rounding
		cols     []string
		ordered  bool
	}{
		{"SELECT sex, COUNT(*) FROM syn.g GROUP BY sex",
			"SELECT sex, SUM(dp_noisy_count) FROM syn.g WHERE dp_marginal = %d GROUP BY sex", []string{"sex"}, false},
		{"SELECT COUNT(*) FROM syn.g",
			"SELECT SUM(dp_noisy_count) FROM syn.g WHERE dp_marginal = %d", nil, false},
		{"SELECT city, COUNT(*) FROM syn.g WHERE age < 5 GROUP BY city",
			"SELECT city, SUM(dp_noisy_count) FROM syn.g WHERE dp_marginal = %d AND age < 5 GROUP BY city", []string{"age", "city"}, false},
		{"SELECT sex AS s, city, COUNT(1) AS n FROM syn.g WHERE city IS NOT NULL GROUP BY 1, city ORDER BY n DESC, s, city",
			"SELECT sex, city, SUM(dp_noisy_count) FROM syn.g WHERE dp_marginal = %d AND city IS NOT NULL GROUP BY sex, city", []string{"sex", "city"}, true},
	} {
		plan := f.rows("EXPLAIN " + c.q)
		m := marginalOf.FindStringSubmatch(fmt.Sprint(plan))
		if len(plan) != 1 || !strings.HasPrefix(plan[0][0].(string), "answered from noisy answers: ") || m == nil {
			t.Errorf("EXPLAIN %s = %v", c.q, plan)
			continue
		}
		for _, col := range c.cols {
			if !strings.Contains(m[2], col) {
				t.Errorf("%s: answered from marginal %s (%s), which lacks %s", c.q, m[1], m[2], col)
			}
		}
		k, _ := strconv.Atoi(m[1])
		got := f.rows(c.q)
		var want []sql.Row
		for _, r := range f.rows(fmt.Sprintf(c.cells, k)) {
			n := math.Round(math.Max(0, r[len(r)-1].(float64)))
			if n == 0 && len(r) > 1 {
				continue // an empty group
			}
			w := append(sql.Row{}, r[:len(r)-1]...)
			want = append(want, append(w, int64(n)))
		}
		if !sameRows(got, want, false) {
			t.Errorf("%s\n got %v\nwant %v (marginal %d)", c.q, got, want, k)
		}
		for i := 1; c.ordered && i < len(got); i++ {
			if toInt(got[i-1][2]) < toInt(got[i][2]) {
				t.Errorf("%s: not ordered by n: %v", c.q, got)
			}
		}
	}
	// Each count is far from the number of cells (2 sexes × 10 ages).
	if got := f.rows("SELECT sex, COUNT(*) FROM syn.g GROUP BY sex"); len(got) != 2 || toInt(got[0][1]) < 50 {
		t.Errorf("counts by sex %v: cells counted?", got)
	}
	// Percentages divide by the same marginal's noisy total.
	pct := f.rows("SELECT sex, 100.0 * COUNT(*) / (SELECT COUNT(*) FROM syn.g) FROM syn.g GROUP BY sex")
	if len(pct) != 2 {
		t.Errorf("percentages %v", pct)
	}
	var sum float64
	for _, r := range pct {
		x, _ := strconv.ParseFloat(fmt.Sprint(r[1]), 64)
		sum += x
	}
	if math.Abs(sum-100) > 1 {
		t.Errorf("percentages %v sum to %g", pct, sum)
	}

	// Refused, naming the released marginals.
	for q, why := range map[string]string{
		"SELECT sex, age, city, COUNT(*) FROM syn.g GROUP BY sex, age, city":    "needs the columns (sex, age, city)",
		"SELECT COUNT(*) FROM syn.g WHERE sex = 'F' AND age = 3 AND city = 'a'": "needs the columns",
		"SELECT sex, MAX(age) FROM syn.g GROUP BY sex":                          "is not one",
		"SELECT sex FROM syn.g": "is not one",
		"EXPLAIN SELECT sex, age, city, COUNT(*) FROM syn.g GROUP BY sex, age, city": "needs the columns",
	} {
		_, _, err := query(f.e, f.root, q)
		if errCode(err) != 9118 || !strings.Contains(err.Error(), why) ||
			!strings.Contains(err.Error(), "(sex, age), (sex, city), (age, city)") || !strings.Contains(err.Error(), "dp_noisy_count") {
			t.Errorf("%s: %v, want error 9118 saying %q and naming the marginals", q, err, why)
		}
	}
	// The cells, read as such: dp_* columns or *.
	if got := f.rows("SELECT sex, COUNT(*) FROM syn.g WHERE dp_columns = 'sex,age' GROUP BY sex ORDER BY sex"); fmt.Sprint(got) != "[[1 10] [2 10]]" {
		t.Errorf("cells of (sex, age) by sex: %v", got)
	}
	if got := f.rows("SELECT * FROM syn.g"); len(got) != 20+8+40 {
		t.Errorf("SELECT * gives %d cells", len(got))
	}
	if w := f.rows("SHOW WARNINGS"); len(w) != 0 {
		t.Errorf("reading the cells: warnings %v", w)
	}
	// SQL_SELECT_LIMIT holds.
	f.exec("SET SQL_SELECT_LIMIT = 1")
	if got := f.rows("SELECT city, COUNT(*) FROM syn.g GROUP BY city"); len(got) != 1 {
		t.Errorf("with sql_select_limit = 1: %v", got)
	}
	f.exec("SET SQL_SELECT_LIMIT = DEFAULT")
	// 'rows' reads the cells, with a note.
	f.exec("SET SESSION dpsql_answer_source = 'rows'")
	if got := f.rows("SELECT sex, COUNT(*) FROM syn.g GROUP BY sex ORDER BY sex"); fmt.Sprint(got) != "[[<nil> 40] [1 14] [2 14]]" {
		t.Errorf("rows mode: %v", got)
	}
	if w := f.rows("SHOW WARNINGS"); len(w) != 1 || !strings.Contains(w[0][2].(string), "cells of the answers-only table `syn`.`g`") {
		t.Errorf("rows mode: warnings %v", w)
	}
	f.exec("SET SESSION dpsql_answer_source = 'model'")

	// Without SELECT on the table, the error is the one reading it gives.
	f.exec("CREATE USER ana IDENTIFIED BY 'pw'", "GRANT SELECT ON raw.nobudget TO ana")
	ana := sessionCtx(f.e, 7, "ana", "%")
	_, _, rowsErr := query(f.e, ana, "SELECT * FROM syn.g")
	for _, q := range []string{"SELECT sex, COUNT(*) FROM syn.g GROUP BY sex", "SELECT sex, age, city, COUNT(*) FROM syn.g GROUP BY sex, age, city"} {
		if _, _, err := query(f.e, ana, q); err == nil || errCode(err) != errCode(rowsErr) {
			t.Errorf("ana: %s: %v, reading the cells: %v", q, err, rowsErr)
		}
	}
}
