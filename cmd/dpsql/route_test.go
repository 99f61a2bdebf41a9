package main

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Over-the-wire tests of how queries on synthetic tables are answered:
// LIKE on ENUM columns, SQL_SELECT_LIMIT, answers-only tables, and the
// phrasings of one count query.

// connOf returns one connection of db, for session state (SET, SHOW
// WARNINGS).
func connOf(t *testing.T, db *sql.DB) *sql.Conn {
	t.Helper()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// connStrings runs q on conn and fails the test on an error.
func connStrings(t *testing.T, conn *sql.Conn, q string, args ...any) [][]string {
	t.Helper()
	got, err := tryQueryStrings(conn, q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return got
}

// TestEnumLikeOverTheWire: on the demo table and on a synthetic copy of it
// (mostly ENUM columns), LIKE, REGEXP and string functions read the ENUM
// labels, on the rows and on the model.
func TestEnumLikeOverTheWire(t *testing.T) {
	s := startServer(t, t.TempDir(), "--demo")
	root := s.root()
	hsGrad := queryStrings(t, root, "SELECT COUNT(*) FROM demo.census WHERE education = 'hs-grad'")[0][0]
	// go-mysql-server compiles a REGEXP once per row (3 ms), so only on 300.
	hsGrad300 := queryStrings(t, root, "SELECT COUNT(*) FROM demo.census WHERE id <= 300 AND education = 'hs-grad'")[0][0]
	hs := queryStrings(t, root, "SELECT COUNT(*) FROM demo.census WHERE education IN ('hs-grad', 'some-hs')")[0][0]
	if hsGrad != "10155" {
		t.Fatalf("education = 'hs-grad': %s rows", hsGrad)
	}
	// The statement first.
	if got := queryStrings(t, root, "SELECT COUNT(*) FROM demo.census WHERE education LIKE 'hs%'"); got[0][0] != hsGrad {
		t.Errorf("education LIKE 'hs%%' = %v, want %s", got, hsGrad)
	}
	for q, want := range map[string]string{
		"SELECT COUNT(*) FROM demo.census WHERE education LIKE 'HS-G%'":                  hsGrad,
		"SELECT COUNT(*) FROM demo.census WHERE education LIKE 'hs-grad'":                hsGrad,
		"SELECT COUNT(*) FROM demo.census WHERE education LIKE '%hs%'":                   hs,
		"SELECT COUNT(*) FROM demo.census WHERE education NOT LIKE '%hs%'":               fmt.Sprint(30000 - atoi(t, hs)),
		"SELECT COUNT(*) FROM demo.census WHERE id <= 300 AND education REGEXP '^HS'":    hsGrad300,
		"SELECT COUNT(*) FROM demo.census WHERE UPPER(education) = 'HS-GRAD'":            hsGrad,
		"SELECT COUNT(*) FROM demo.census WHERE CONCAT(education, '!') = 'hs-grad!'":     hsGrad,
		"SELECT LEFT(education, 2) FROM demo.census WHERE education = 'hs-grad' LIMIT 1": "hs",
	} {
		if got, err := tryQueryStrings(root, q); err != nil || got[0][0] != want {
			t.Errorf("%s = %v, %v; want %s", q, got, err, want)
		}
	}

	mustExec(t, root,
		"SET PRIVACY BUDGET FOR demo.census WITH EPSILON = 10, DELTA = 0.000001",
		"ALTER TABLE demo.census SET DOMAIN capital_gain BETWEEN 0 AND 100000 BINS 10",
		"CREATE DATABASE lab",
		"CREATE SYNTHETIC TABLE lab.c FROM demo.census USING independent WITH EPSILON = 1, SEED = 3",
	)
	// From the model: LIKE selects the same cells as the labels it matches.
	for like, eq := range map[string]string{
		"education LIKE 'hs%'":                  "education = 'hs-grad'",
		"education LIKE '%HS%'":                 "education IN ('hs-grad', 'some-hs')",
		"sex NOT LIKE 'fem%'":                   "sex = 'male'",
		"income LIKE '>%'":                      "income = '>50K'",
		"race LIKE 'a%' OR region LIKE '%west'": "race IN ('asian-pac-islander', 'amer-indian-eskimo') OR region IN ('midwest', 'west')",
	} {
		q := "SELECT workclass, COUNT(*) FROM lab.c WHERE %s GROUP BY workclass ORDER BY workclass"
		got, want := queryStrings(t, root, fmt.Sprintf(q, like)), queryStrings(t, root, fmt.Sprintf(q, eq))
		if len(got) == 0 || !equalRows(got, want) {
			t.Errorf("WHERE %s: %v, WHERE %s: %v", like, got, eq, want)
		}
		if p := queryStrings(t, root, "EXPLAIN "+fmt.Sprintf(q, like)); !strings.HasPrefix(p[0][0], "answered from model: ") {
			t.Errorf("EXPLAIN WHERE %s: %v", like, p)
		}
	}
	// From the synthetic rows.
	conn := connOf(t, root)
	connStrings(t, conn, "SET SESSION dpsql_answer_source = 'rows'")
	got := connStrings(t, conn, "SELECT COUNT(*) FROM lab.c WHERE education LIKE 'hs%'")
	want := connStrings(t, conn, "SELECT COUNT(*) FROM lab.c WHERE education = 'hs-grad'")
	if got[0][0] == "0" || !equalRows(got, want) {
		t.Errorf("rows: LIKE 'hs%%' counts %v, = 'hs-grad' %v", got, want)
	}

	if _, err := mariadbLookPath(); err == nil {
		out, err := s.cli(t, "root", rootPassword, "SELECT COUNT(*) FROM demo.census WHERE education LIKE 'hs%';"+
			" SELECT COUNT(*) FROM demo.census WHERE education = 'hs-grad'")
		if err != nil || !equalRows([][]string{lines(out)}, [][]string{{"10155", "10155"}}) {
			t.Errorf("CLI: %v\n%s", err, out)
		}
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestSelectLimitOverTheWire: SET SQL_SELECT_LIMIT limits model answers
// as it limits the rows.
func TestSelectLimitOverTheWire(t *testing.T) {
	s, root := setupAnswers(t)
	const q = "SELECT age, COUNT(*) FROM syn.p GROUP BY age ORDER BY 2 DESC"
	all := queryStrings(t, root, q)
	if len(all) < 3 {
		t.Fatalf("%d groups", len(all))
	}
	conn := connOf(t, root)
	connStrings(t, conn, "SET SQL_SELECT_LIMIT = 1")
	if got := connStrings(t, conn, q); !equalRows(got, all[:1]) {
		t.Errorf("with SQL_SELECT_LIMIT = 1: %v, want %v", got, all[:1])
	}
	if p := connStrings(t, conn, "EXPLAIN "+q); !strings.HasPrefix(p[0][0], "answered from model: ") {
		t.Errorf("EXPLAIN = %v", p)
	}
	if got := connStrings(t, conn, q+" LIMIT 2"); !equalRows(got, all[:2]) {
		t.Errorf("with its own LIMIT 2: %v", got)
	}
	if got := connStrings(t, conn, "SELECT age, COUNT(*) FROM plain.p GROUP BY age"); len(got) != 1 {
		t.Errorf("on the rows: %v", got)
	}
	if _, err := mariadbLookPath(); err == nil {
		out, err := s.cli(t, "root", rootPassword, "SET SQL_SELECT_LIMIT = 1; "+q)
		if l := lines(out); err != nil || len(l) != 1 || l[0] != strings.Join(all[0], "\t") {
			t.Errorf("CLI: %v\n%s", err, out)
		}
	}
}

// TestAnswersOnlyOverTheWire: COUNT queries on a gaussian table are
// answered from its noisy marginals (not by counting its cells), and the
// others are refused with error 9118 naming the marginals.
func TestAnswersOnlyOverTheWire(t *testing.T) {
	s, root := setupAnswers(t)
	mustExec(t, root, "CREATE SYNTHETIC TABLE syn.g FROM raw.people USING gaussian WITH EPSILON = 1")
	const q = "SELECT sex, COUNT(*) FROM syn.g GROUP BY sex ORDER BY sex"
	got := queryStrings(t, root, q)
	plan := queryStrings(t, root, "EXPLAIN "+q)
	m := regexp.MustCompile(`^answered from noisy answers: released marginal (\d+) \(sex, `).FindStringSubmatch(plan[0][0])
	if m == nil {
		t.Fatalf("EXPLAIN = %v", plan)
	}
	var want [][]string
	for _, r := range queryStrings(t, root, "SELECT sex, SUM(dp_noisy_count) FROM syn.g WHERE dp_marginal = "+m[1]+" GROUP BY sex ORDER BY sex") {
		x, err := strconv.ParseFloat(r[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		if n := math.Round(math.Max(0, x)); n > 0 {
			want = append(want, []string{r[0], strconv.FormatFloat(n, 'f', -1, 64)})
		}
	}
	if !equalRows(got, want) || len(got) != 2 || atoi(t, got[0][1]) < 100 {
		t.Errorf("%s = %v, want %v (marginal %s)", q, got, want, m[1])
	}
	// Prepared with an argument, as text.
	prep := queryStrings(t, root, "SELECT city, COUNT(*) FROM syn.g WHERE age < ? GROUP BY city ORDER BY city", 5)
	text := queryStrings(t, root, "SELECT city, COUNT(*) FROM syn.g WHERE age < 5 GROUP BY city ORDER BY city")
	if !equalRows(prep, text) {
		t.Errorf("prepared %v, text %v", prep, text)
	}
	// Refused, naming the marginals; the cells stay readable.
	for _, rq := range []struct {
		q    string
		args []any
	}{
		{"SELECT sex, age, city, COUNT(*) FROM syn.g GROUP BY sex, age, city", nil},
		{"SELECT sex, age, COUNT(*) FROM syn.g WHERE city = ? GROUP BY sex, age", []any{"a"}},
		{"SELECT sex, MAX(age) FROM syn.g GROUP BY sex", nil},
	} {
		_, err := tryQueryStrings(root, rq.q, rq.args...)
		if mysqlCode(err) != 9118 || !strings.Contains(err.Error(), "(sex, age), (sex, city), (age, city)") {
			t.Errorf("%s: %v, want error 9118 naming the marginals", rq.q, err)
		}
	}
	if got := queryStrings(t, root, "SELECT COUNT(*) FROM syn.g WHERE dp_columns = 'sex,city'"); got[0][0] != "8" {
		t.Errorf("cells of (sex, city): %v", got)
	}
	if _, err := mariadbLookPath(); err == nil {
		out, err := s.cli(t, "root", rootPassword, q+"; SELECT sex, age, city, COUNT(*) FROM syn.g GROUP BY sex, age, city")
		if err == nil || !strings.Contains(out, strings.Join(got[0], "\t")) || !strings.Contains(out, "ERROR 9118") ||
			!strings.Contains(out, "dp_noisy_count") {
			t.Errorf("CLI: %v\n%s", err, out)
		}
	}
}

// TestPhrasingsOverTheWire: the phrasings of one count query are answered
// alike, from the model; a query answered from the rows says so in a Note.
func TestPhrasingsOverTheWire(t *testing.T) {
	s, root := setupAnswers(t)
	base := queryStrings(t, root, "SELECT sex, COUNT(*) FROM syn.p GROUP BY sex ORDER BY sex")
	for _, q := range []string{
		"SELECT sex, COUNT(*) FROM syn.p GROUP BY 1 ORDER BY 1",
		"SELECT sex AS s, COUNT(*) FROM syn.p GROUP BY s ORDER BY s",
		"SELECT DISTINCT sex, COUNT(1) AS n FROM syn.p GROUP BY sex ORDER BY sex",
	} {
		if got := queryStrings(t, root, q); !equalRows(got, base) {
			t.Errorf("%s = %v, want %v", q, got, base)
		}
		if p := queryStrings(t, root, "EXPLAIN "+q); !strings.HasPrefix(p[0][0], "answered from model: ") {
			t.Errorf("EXPLAIN %s = %v", q, p)
		}
	}
	total, _ := strconv.ParseFloat(queryStrings(t, root, "SELECT COUNT(*) FROM syn.p")[0][0], 64)
	for _, e := range []string{"100 * COUNT(*)", "100.0 * COUNT(*)", "COUNT(*) * 1e2", "100.0 * COUNT(1)"} {
		q := "SELECT sex, " + e + " / (SELECT COUNT(*) FROM syn.p) AS pct FROM syn.p GROUP BY sex ORDER BY sex"
		got := queryStrings(t, root, q)
		for i, r := range got {
			x, err := strconv.ParseFloat(r[1], 64)
			n, _ := strconv.ParseFloat(base[i][1], 64)
			if err != nil || r[0] != base[i][0] || math.Abs(x-100*n/total) > 1e-4 {
				t.Errorf("%s: row %v, want %s %g", q, r, base[i][0], 100*n/total)
			}
		}
		if p := queryStrings(t, root, "EXPLAIN "+q); !strings.HasPrefix(p[0][0], "answered from model: ") {
			t.Errorf("EXPLAIN %s = %v", q, p)
		}
	}

	conn := connOf(t, root)
	connStrings(t, conn, "SELECT sex, MAX(age) FROM syn.p GROUP BY sex")
	w := connStrings(t, conn, "SHOW WARNINGS")
	if len(w) != 1 || w[0][0] != "Note" || w[0][1] != "9117" ||
		!strings.HasPrefix(w[0][2], "answered from the synthetic rows of `syn`.`p`, not the model: ") || !strings.Contains(w[0][2], "MAX(age)") {
		t.Errorf("SHOW WARNINGS after a rows answer: %v", w)
	}
	connStrings(t, conn, "SELECT sex AS s, COUNT(*) FROM syn.p GROUP BY s")
	if w := connStrings(t, conn, "SHOW WARNINGS"); len(w) != 0 {
		t.Errorf("SHOW WARNINGS after a model answer: %v", w)
	}
	if _, err := mariadbLookPath(); err == nil {
		out, err := s.cli(t, "root", rootPassword, "SELECT COUNT(DISTINCT age) FROM syn.p; SHOW WARNINGS")
		if err != nil || !strings.Contains(out, "Note\t9117\tanswered from the synthetic rows of `syn`.`p`, not the model: ") {
			t.Errorf("CLI: %v\n%s", err, out)
		}
	}
}
