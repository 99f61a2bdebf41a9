package main

import (
	"database/sql"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/internal/fixture"
)

// setupAnswers starts a server with raw.people (correlated generated rows
// with public domains and a budget), AIM and MST synthetic copies syn.p and
// syn.m, and plain.p, a plain copy of syn.p's rows.
func setupAnswers(t *testing.T) (*server, *sql.DB) {
	t.Helper()
	s := startServer(t, t.TempDir())
	root := s.root()
	rng := rand.New(rand.NewPCG(3, 4))
	values := fixture.PeopleTuples(rng, 400)
	mustExec(t, root,
		"CREATE DATABASE raw", "CREATE DATABASE syn", "CREATE DATABASE plain",
		"CREATE TABLE raw.people (sex ENUM('F','M') NOT NULL, age INT NOT NULL CHECK (age BETWEEN 0 AND 9),"+
			" city VARCHAR(10) CHECK (city IN ('a','b','c')))",
		"INSERT INTO raw.people VALUES "+strings.Join(values, ","),
		"SET PRIVACY BUDGET FOR raw.people WITH EPSILON = 10, DELTA = 0.000001",
		"CREATE SYNTHETIC TABLE syn.p FROM raw.people USING aim WITH EPSILON = 1, SEED = 5, "+fastAIM,
		"CREATE SYNTHETIC TABLE syn.m FROM raw.people USING mst WITH EPSILON = 1, SEED = 5",
		"CREATE TABLE plain.p LIKE syn.p",
		"INSERT INTO plain.p SELECT * FROM syn.p",
	)
	return s, root
}

// TestAnswerFromModel: over the wire, a routed COUNT query equals the
// model's marginal (as dp_marginal shows it) rounded, with the types a
// client expects; 'rows' mode, fallbacks and prepared statements equal a
// plain copy of the rows; multi-statement scripts mix both.
func TestAnswerFromModel(t *testing.T) {
	s, root := setupAnswers(t)

	// The routed 2-way answer is the model's marginal, rounded, with the
	// groups that round to 0 left out; ENUM values as their labels.
	got := queryStrings(t, root, "SELECT sex, age, COUNT(*) FROM syn.p GROUP BY sex, age")
	var want [][]string
	synDB := s.open("root", rootPassword, inDatabase("syn"))
	for _, r := range queryStrings(t, synDB, "SELECT sex, age, estimate FROM dp_marginal('syn.p', 'sex', 'age')") {
		est, err := strconv.ParseFloat(r[2], 64)
		if err != nil {
			t.Fatal(err)
		}
		if n := math.Round(est); n != 0 {
			want = append(want, []string{r[0], r[1], strconv.FormatFloat(n, 'f', -1, 64)})
		}
	}
	if !equalRows(sortedRows(got), sortedRows(want)) {
		t.Errorf("routed answer %v\nmodel marginal %v", got, want)
	}
	if got[0][0] != "F" && got[0][0] != "M" {
		t.Errorf("ENUM value %q, want its label", got[0][0])
	}
	if p := queryStrings(t, root, "EXPLAIN SELECT sex, age, COUNT(*) FROM syn.p GROUP BY sex, age"); len(p) != 1 || !strings.HasPrefix(p[0][0], "answered from model: ") {
		t.Errorf("EXPLAIN = %v", p)
	}

	// A percentage is a DECIMAL with 4 places.
	pct := queryStrings(t, root, "SELECT city, COUNT(*) / (SELECT COUNT(*) FROM syn.p) FROM syn.p GROUP BY city ORDER BY city")
	for _, r := range pct {
		if i := strings.IndexByte(r[1], '.'); i < 0 || len(r[1])-i-1 != 4 {
			t.Errorf("percentage %q, want 4 decimal places", r[1])
		}
	}

	// Rows mode, and queries the model does not answer, equal the rows.
	rowsQueries := []struct {
		q    string
		args []any
	}{
		{"SELECT sex, MAX(age) FROM %s GROUP BY sex", nil},
		{"SELECT COUNT(DISTINCT age) FROM %s", nil},
		{"SELECT city, MAX(age) FROM %s WHERE age < ? GROUP BY city", []any{5}}, // prepared, not a model query
	}
	for _, rq := range rowsQueries {
		got := queryStrings(t, root, fmt.Sprintf(rq.q, "syn.p"), rq.args...)
		want := queryStrings(t, root, fmt.Sprintf(rq.q, "plain.p"), rq.args...)
		if !equalRows(sortedRows(got), sortedRows(want)) {
			t.Errorf("%s: %v, rows give %v", rq.q, got, want)
		}
	}
	// Server-side prepared COUNT queries (go-sql-driver prepares any query
	// with arguments) are answered from the model as their text would be.
	for _, pq := range []struct {
		prepared, text string
		args           []any
	}{
		{"SELECT city, COUNT(*) FROM syn.p WHERE age < ? GROUP BY city", "SELECT city, COUNT(*) FROM syn.p WHERE age < 5 GROUP BY city", []any{5}},
		{"SELECT sex, COUNT(*) FROM syn.p WHERE city = ? AND age >= ? GROUP BY sex", "SELECT sex, COUNT(*) FROM syn.p WHERE city = 'b' AND age >= 3 GROUP BY sex", []any{"b", 3}},
		{"SELECT COUNT(*) FROM syn.p WHERE sex = ?", "SELECT COUNT(*) FROM syn.p WHERE sex = 'F'", []any{"F"}},
		// A value with a quote and a backslash is inlined as a literal.
		{"SELECT COUNT(*) FROM syn.p WHERE city = ? OR sex = ?", `SELECT COUNT(*) FROM syn.p WHERE city = 'a\' OR 1=1 -- \\' OR sex = 'M'`, []any{`a' OR 1=1 -- \`, "M"}},
	} {
		got := queryStrings(t, root, pq.prepared, pq.args...)
		model := queryStrings(t, root, pq.text)
		rows := queryStrings(t, root, strings.Replace(pq.text, "syn.p", "plain.p", 1))
		if !equalRows(sortedRows(got), sortedRows(model)) {
			t.Errorf("prepared %s %v = %v, the model gives %v", pq.prepared, pq.args, got, model)
		}
		if equalRows(sortedRows(got), sortedRows(rows)) {
			t.Logf("prepared %s: the model's answer equals the rows' %v", pq.prepared, rows)
		}
	}

	conn, err := root.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), "SET SESSION dpsql_answer_source = 'rows'"); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"SELECT sex, age, COUNT(*) FROM %s GROUP BY sex, age", "SELECT COUNT(*) FROM %s WHERE city = 'a'"} {
		got, err := tryQueryStrings(conn, fmt.Sprintf(q, "syn.p"))
		if err != nil {
			t.Fatal(err)
		}
		want := queryStrings(t, root, fmt.Sprintf(q, "plain.p"))
		if !equalRows(sortedRows(got), sortedRows(want)) {
			t.Errorf("rows mode %s: %v, rows give %v", q, got, want)
		}
	}
	if p, err := tryQueryStrings(conn, "EXPLAIN SELECT COUNT(*) FROM syn.p"); err != nil || !strings.HasPrefix(p[len(p)-1][0], "answered from synthetic rows") {
		t.Errorf("EXPLAIN in rows mode = %v, %v", p, err)
	}

	// A multi-statement script mixes dpsql statements, routed and rows
	// queries.
	multi := s.open("root", rootPassword, multiStatements)
	rs, err := multi.Query("SELECT COUNT(*) FROM syn.p; SHOW ERROR BOUNDS FOR syn.p; SELECT COUNT(*) FROM plain.p")
	if err != nil {
		t.Fatal(err)
	}
	var sets [][][]string
	for {
		set, err := scanStrings(rs)
		if err != nil {
			t.Fatal(err)
		}
		sets = append(sets, set)
		if !rs.NextResultSet() {
			break
		}
	}
	rs.Close()
	model := queryStrings(t, root, "SELECT COUNT(*) FROM syn.p")
	if len(sets) != 3 || !equalRows(sets[0], model) || len(sets[1]) != 3 || sets[2][0][0] == "" {
		t.Errorf("script results %v (model total %v)", sets, model)
	}
}

// TestErrorBoundsOverTheWire: SHOW ERROR BOUNDS, its prepared CALL twin and
// dp_marginal, their errors, and the privilege they need.
func TestErrorBoundsOverTheWire(t *testing.T) {
	s, root := setupAnswers(t)
	show := queryStrings(t, root, "SHOW ERROR BOUNDS FOR syn.p CONFIDENCE 0.9")
	call := queryStrings(t, root, "CALL dpsql_show_error_bounds(?, ?)", "syn.p", 0.9)
	if len(show) != 3 || !equalRows(show, call) {
		t.Errorf("SHOW ERROR BOUNDS %v, CALL twin %v", show, call)
	}
	for _, r := range show {
		l1, err := strconv.ParseFloat(r[2], 64)
		if err != nil || !(l1 > 0 && l1 <= 2) || (r[3] != "supported" && r[3] != "unsupported") {
			t.Errorf("row %v", r)
		}
	}
	synDB := s.open("root", rootPassword, inDatabase("syn"))
	cells := queryStrings(t, synDB, "SELECT * FROM dp_marginal('syn.p', 'sex', 'city', 0.9)")
	if len(cells) != 2*4 || len(cells[0]) != 6 {
		t.Errorf("dp_marginal cells %v", cells)
	}
	for _, tc := range []struct {
		q    string
		code uint16
	}{
		{"SHOW ERROR BOUNDS FOR syn.m", 9116},
		{"SELECT * FROM dp_marginal('syn.m', 'sex')", 9116},
		{"SELECT * FROM dp_marginal('syn.p', 'nope')", 1054},
		{"SELECT * FROM dp_marginal('syn.p', 'sex', 2)", 9112},
		{"SHOW ERROR BOUNDS FOR syn.p CONFIDENCE 1.5", 1064},
		{"SHOW ERROR BOUNDS FOR raw.people", 9116},
	} {
		if _, err := tryQueryStrings(synDB, tc.q); mysqlCode(err) != tc.code {
			t.Errorf("%s: %v, want code %d", tc.q, err, tc.code)
		}
	}

	// An analyst without SELECT on syn.p is refused on every path, the
	// routed one as the rows one.
	mustExec(t, root, "CREATE USER ana IDENTIFIED BY 'apw'", "GRANT SELECT ON syn.m TO ana")
	ana := s.open("ana", "apw", inDatabase("syn"))
	_, rowsErr := tryQueryStrings(ana, "SELECT * FROM syn.p")
	if rowsErr == nil {
		t.Fatal("ana reads syn.p")
	}
	for _, q := range []string{
		"SELECT sex, COUNT(*) FROM syn.p GROUP BY sex",
		"EXPLAIN SELECT COUNT(*) FROM syn.p",
		"SHOW ERROR BOUNDS FOR syn.p",
		"SELECT * FROM dp_marginal('syn.p', 'sex')",
	} {
		_, err := tryQueryStrings(ana, q)
		if err == nil {
			t.Errorf("ana: %s succeeded", q)
		} else if strings.HasPrefix(q, "SELECT sex") && (mysqlCode(err) != mysqlCode(rowsErr) || err.Error() != rowsErr.Error()) {
			t.Errorf("ana: %s: %v, reading the rows: %v", q, err, rowsErr)
		}
	}
	if got := queryStrings(t, ana, "EXPLAIN SELECT sex, COUNT(*) FROM syn.m GROUP BY sex"); !strings.HasPrefix(got[0][0], "answered from model") {
		t.Errorf("ana's EXPLAIN on syn.m = %v", got)
	}
}

// TestAnswerCLI runs the key statements through the mariadb CLI.
func TestAnswerCLI(t *testing.T) {
	mariadbCLI(t)
	s, _ := setupAnswers(t)
	out, err := s.cli(t, "root", rootPassword, "USE syn; SELECT sex, COUNT(*) FROM p GROUP BY sex ORDER BY sex;"+
		" EXPLAIN SELECT COUNT(*) FROM p; SET SESSION dpsql_answer_source = 'rows'; EXPLAIN SELECT COUNT(*) FROM p;"+
		" SHOW ERROR BOUNDS FOR p; SELECT COUNT(*) FROM dp_marginal('p', 'age', 'city')")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	text := strings.Join(lines(out), "\n")
	for _, want := range []string{"F\t", "M\t", "answered from model: ", "answered from synthetic rows", "supported", "40"} {
		if !strings.Contains(text, want) {
			t.Errorf("CLI output lacks %q:\n%s", want, text)
		}
	}
}
