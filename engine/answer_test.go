package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/dolthub/vitess/go/mysql"
	"github.com/shopspring/decimal"

	"github.com/dpsql/dpsql/catalog/domain"
	"github.com/dpsql/dpsql/synth/pgm"
)

// answerFixture is a synthFixture with synthetic tables of raw.people:
// syn.p (AIM, the model's total), syn.r (AIM, ROWS = 300) and syn.m (MST),
// plain copies of syn.p and syn.r's rows in plain.p and plain.r, and, for
// each AIM table, an oracle table oracle.<name> holding one row per cell of
// its model's joint distribution with the cell's expected count in w.
type answerFixture struct {
	*synthFixture
	scale map[string]float64 // oracle scale per table: total / model total
}

func newAnswerFixture(t *testing.T) *answerFixture {
	t.Helper()
	f := &answerFixture{synthFixture: newSynthFixture(t), scale: map[string]float64{}}
	f.exec(
		"CREATE SYNTHETIC TABLE syn.p FROM raw.people USING aim WITH EPSILON = 1, SEED = 5, "+fastAIMOption,
		"CREATE SYNTHETIC TABLE syn.r FROM raw.people USING aim WITH EPSILON = 1, ROWS = 300, SEED = 6, "+fastAIMOption,
		"CREATE SYNTHETIC TABLE syn.m FROM raw.people USING mst WITH EPSILON = 1, SEED = 7",
		"CREATE DATABASE plain",
		"CREATE DATABASE oracle",
	)
	for _, name := range []string{"p", "r"} {
		f.exec(
			fmt.Sprintf("CREATE TABLE plain.%s LIKE syn.%s", name, name),
			fmt.Sprintf("INSERT INTO plain.%s SELECT * FROM syn.%s", name, name),
		)
		f.oracle(name)
	}
	return f
}

// model returns the stored model and domain of syn.name.
func (f *answerFixture) model(name string) (*pgm.Model, *domain.Table, float64) {
	f.t.Helper()
	rec, blob, _ := f.record("syn", name)
	m, err := pgm.UnmarshalModel(blob)
	if err != nil {
		f.t.Fatal(err)
	}
	total := m.Total()
	if rowsGiven(rec.Statement) {
		total = float64(rec.Rows)
	}
	return m, &rec.Domain, total
}

// oracle (re)creates oracle.name from the model of syn.name: the model's
// joint marginal, cell by cell.
func (f *answerFixture) oracle(name string) {
	f.t.Helper()
	m, dom, total := f.model(name)
	f.scale[name] = total / m.Total()
	attrs := []int{0, 1, 2}
	if got := dom.Names(); !slices.Equal(got, []string{"sex", "age", "city"}) {
		f.t.Fatalf("domain columns %v", got)
	}
	joint := m.Marginal(attrs)
	var b strings.Builder
	fmt.Fprintf(&b, "INSERT INTO oracle.%s (sex, age, city, w) VALUES ", name)
	codes := make([]int, len(attrs))
	for i, w := range joint {
		rest := i
		for j := len(attrs) - 1; j >= 0; j-- {
			n := dom.Columns[attrs[j]].Size()
			codes[j], rest = rest%n, rest/n
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for j, a := range attrs {
			v, ok := dom.Columns[a].Value(codes[j])
			switch {
			case !ok:
				b.WriteString("NULL")
			case v.Type() == domain.String:
				fmt.Fprintf(&b, "'%s'", v.Str())
			default:
				b.WriteString(v.String())
			}
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%.17g)", w)
	}
	f.exec(
		"DROP TABLE IF EXISTS oracle."+name,
		fmt.Sprintf("CREATE TABLE oracle.%s (sex ENUM('F','M') NOT NULL, age INT NOT NULL, city VARCHAR(10), w DOUBLE NOT NULL)", name),
		b.String(),
	)
}

// answerCases are COUNT queries the model answers (model, with %[1]s for
// the table) and the same question asked of the oracle table (%[1]s for
// the table, %[2]g for the scale). Unordered results are compared as
// sets.
var answerCases = []struct {
	name, model, oracle string
	ordered             bool
}{
	{"total", "SELECT COUNT(*) FROM %[1]s", "SELECT ROUND(SUM(w)*%[2]g) FROM %[1]s", true},
	{"total-where", "SELECT COUNT(*) AS n FROM %[1]s WHERE age < 5 AND city IS NOT NULL", "SELECT ROUND(SUM(w)*%[2]g) FROM %[1]s WHERE age < 5 AND city IS NOT NULL", true},
	{"1-way", "SELECT sex, COUNT(*) FROM %[1]s GROUP BY sex", "SELECT sex, ROUND(SUM(w)*%[2]g) AS n FROM %[1]s GROUP BY sex HAVING n <> 0", false},
	{"3-way", "SELECT sex, age, city, COUNT(*) FROM %[1]s GROUP BY sex, age, city", "SELECT sex, age, city, ROUND(SUM(w)*%[2]g) AS n FROM %[1]s GROUP BY sex, age, city HAVING n <> 0", false},
	{"where-evidence", "SELECT city, COUNT(*) AS n FROM %[1]s WHERE age BETWEEN 2 AND 6 AND sex = 'F' GROUP BY city",
		"SELECT city, ROUND(SUM(w)*%[2]g) AS n FROM %[1]s WHERE age BETWEEN 2 AND 6 AND sex = 'F' GROUP BY city HAVING n <> 0", false},
	{"where-coupled", "SELECT age, COUNT(*) FROM %[1]s WHERE city IS NULL OR sex = 'M' GROUP BY age",
		"SELECT age, ROUND(SUM(w)*%[2]g) AS n FROM %[1]s WHERE city IS NULL OR sex = 'M' GROUP BY age HAVING n <> 0", false},
	{"where-in", "SELECT city, COUNT(*) FROM %[1]s WHERE city IN ('a', 'b') AND NOT age = 3 GROUP BY city ORDER BY city",
		"SELECT city, ROUND(SUM(w)*%[2]g) AS n FROM %[1]s WHERE city IN ('a', 'b') AND NOT age = 3 GROUP BY city HAVING n <> 0 ORDER BY city", true},
	{"having-order-limit", "SELECT sex, age, COUNT(*) AS n FROM %[1]s GROUP BY sex, age HAVING COUNT(*) >= 10 ORDER BY n DESC, sex, age LIMIT 5",
		"SELECT sex, age, ROUND(SUM(w)*%[2]g) AS n FROM %[1]s GROUP BY sex, age HAVING n <> 0 AND n >= 10 ORDER BY n DESC, sex, age LIMIT 5", true},
	{"order-position-offset", "SELECT age, COUNT(*) FROM %[1]s GROUP BY age ORDER BY 2, 1 DESC LIMIT 2, 3",
		"SELECT age, ROUND(SUM(w)*%[2]g) AS n FROM %[1]s GROUP BY age HAVING n <> 0 ORDER BY 2, 1 DESC LIMIT 2, 3", true},
	{"alias-qualified", "SELECT t.sex AS s, COUNT(*) AS c FROM %[1]s AS t WHERE t.city <> 'c' GROUP BY t.sex ORDER BY c",
		"SELECT sex, ROUND(SUM(w)*%[2]g) AS n FROM %[1]s WHERE city <> 'c' GROUP BY sex HAVING n <> 0 ORDER BY n", true},
	// LIKE matches the labels of the ENUM sex case-insensitively (MySQL's
	// default collation) and the VARCHAR city under its own.
	{"where-like", "SELECT age, COUNT(*) FROM %[1]s WHERE sex LIKE 'f%%' AND city NOT LIKE 'B' GROUP BY age",
		"SELECT age, ROUND(SUM(w)*%[2]g) AS n FROM %[1]s WHERE sex = 'F' AND city IS NOT NULL GROUP BY age HAVING n <> 0", false},
	// GROUP BY positions and aliases, DISTINCT and COUNT(1) are the same
	// query.
	{"group-position-alias", "SELECT DISTINCT sex AS s, city, COUNT(1) FROM %[1]s GROUP BY s, 2",
		"SELECT sex, city, ROUND(SUM(w)*%[2]g) AS n FROM %[1]s GROUP BY sex, city HAVING n <> 0", false},
}

// fallbackCases are queries on synthetic tables that run on the rows.
var fallbackCases = []string{
	"SELECT sex, MAX(age) FROM %[1]s GROUP BY sex",
	"SELECT COUNT(DISTINCT age) FROM %[1]s",
	"SELECT age, COUNT(*) FROM %[1]s WHERE age + 1 > 3 GROUP BY age",
	"SELECT sex, city FROM %[1]s WHERE age = 2 ORDER BY id",
	"SELECT a.sex, COUNT(*) FROM %[1]s a JOIN %[1]s b ON a.id = b.id GROUP BY a.sex",
	"SELECT COUNT(*) FROM %[1]s WHERE id <= 10",
}

// TestModelAnswers: routed answers equal the model's joint summed per
// group (scaled, rounded, zero groups omitted, HAVING, ORDER BY, LIMIT),
// and EXPLAIN says they come from the model.
func TestModelAnswers(t *testing.T) {
	f := newAnswerFixture(t)
	for _, name := range []string{"p", "r"} {
		for _, c := range answerCases {
			t.Run(name+"/"+c.name, func(t *testing.T) {
				q := fmt.Sprintf(c.model, "syn."+name)
				got := f.rows(q)
				want := f.rows(fmt.Sprintf(c.oracle, "oracle."+name, f.scale[name]))
				if !sameRows(got, want, c.ordered) {
					t.Errorf("%s\n got %v\nwant %v", q, got, want)
				}
				if plan := f.rows("EXPLAIN " + q); len(plan) != 1 || !strings.HasPrefix(plan[0][0].(string), "answered from model: ") {
					t.Errorf("EXPLAIN %s = %v", q, plan)
				}
			})
		}
	}

	// The synthetic rows of a table with ROWS are a rounding of the
	// model scaled to that many rows: the totals agree exactly.
	if got := f.rows("SELECT COUNT(*) FROM syn.r"); toInt(got[0][0]) != 300 {
		t.Errorf("COUNT(*) of syn.r from its model = %v, want 300", got)
	}
}

// TestModelAnswerPercentages: COUNT(*) / (SELECT COUNT(*) FROM syn) is the
// group's count over the total, as a decimal with 4 places, like the rows
// path computes it from integer counts.
func TestModelAnswerPercentages(t *testing.T) {
	f := newAnswerFixture(t)
	sch, got, err := query(f.e, f.root, "SELECT city, COUNT(*) / (SELECT COUNT(*) FROM syn.p) AS share, 100 * COUNT(*) / (SELECT COUNT(*) FROM syn.p) FROM syn.p GROUP BY city ORDER BY city")
	if err != nil {
		t.Fatal(err)
	}
	counts := f.rows("SELECT city, COUNT(*) FROM syn.p GROUP BY city ORDER BY city")
	total := decimal.NewFromInt(toInt(f.rows("SELECT COUNT(*) FROM syn.p")[0][0]))
	if len(got) != len(counts) {
		t.Fatalf("%d rows, %d groups", len(got), len(counts))
	}
	for i, r := range got {
		n := decimal.NewFromInt(toInt(counts[i][1]))
		for j, k := range []int64{1, 100} {
			want := n.Mul(decimal.NewFromInt(k)).DivRound(total, 4)
			d, ok := r[1+j].(decimal.Decimal)
			if !ok || !d.Equal(want) {
				t.Errorf("row %v: column %d = %v (%T), want %s", r, 1+j, r[1+j], r[1+j], want)
			}
		}
	}
	// The same decimal type the rows path gives.
	f.exec("SET SESSION dpsql_answer_source = 'rows'")
	rowsSch, _, err := query(f.e, f.root, "SELECT city, COUNT(*) / (SELECT COUNT(*) FROM syn.p) AS share, 100 * COUNT(*) / (SELECT COUNT(*) FROM syn.p) FROM syn.p GROUP BY city ORDER BY city")
	if err != nil {
		t.Fatal(err)
	}
	for i := range sch {
		if !sch[i].Type.Equals(rowsSch[i].Type) || sch[i].Name != rowsSch[i].Name {
			t.Errorf("column %d: model %s %s, rows %s %s", i, sch[i].Name, sch[i].Type, rowsSch[i].Name, rowsSch[i].Type)
		}
	}
}

// TestModelAnswerExpressions: arithmetic on COUNT(*) and the total with
// any numeric literal is answered from the model, with the values and types
// go-mysql-server computes from the same counts.
func TestModelAnswerExpressions(t *testing.T) {
	f := newAnswerFixture(t)
	const tot = "(SELECT COUNT(*) FROM syn.p)"
	counts := f.rows("SELECT city, COUNT(*) FROM syn.p GROUP BY city ORDER BY city")
	total := toInt(f.rows("SELECT COUNT(*) FROM syn.p")[0][0])
	for _, expr := range []string{
		"100.0 * COUNT(*) / " + tot,
		"COUNT(*) / " + tot + " * 100",
		"ROUND(100 * COUNT(*) / " + tot + ", 1)",
		"COUNT(*) * 1e2 / " + tot,
		"COUNT(*) + 1", "2.5 * COUNT(*)", "COUNT(*) DIV 3", "COUNT(*) % 7", "-COUNT(1)", "COUNT(*) / 3",
		tot + " - COUNT(*)",
	} {
		t.Run(expr, func(t *testing.T) {
			q := "SELECT city, " + expr + " AS x FROM syn.p GROUP BY city ORDER BY city"
			sch, got, err := query(f.e, f.root, q)
			if err != nil {
				t.Fatal(err)
			}
			if plan := f.rows("EXPLAIN " + q); len(plan) != 1 || !strings.HasPrefix(plan[0][0].(string), "answered from model: ") {
				t.Errorf("EXPLAIN = %v", plan)
			}
			if len(got) != len(counts) {
				t.Fatalf("%d rows, %d groups", len(got), len(counts))
			}
			for i, r := range got {
				// The same expression on literal counts, through the whole
				// of go-mysql-server.
				lit := strings.NewReplacer(tot, fmt.Sprintf("CAST(%d AS SIGNED)", total),
					"COUNT(*)", fmt.Sprintf("CAST(%d AS SIGNED)", toInt(counts[i][1])),
					"COUNT(1)", fmt.Sprintf("CAST(%d AS SIGNED)", toInt(counts[i][1]))).Replace(expr)
				_, want, err := query(f.e, f.root, "SELECT "+lit)
				if err != nil {
					t.Fatal(err)
				}
				if r[0] != counts[i][0] || fmt.Sprintf("%T %v", r[1], r[1]) != fmt.Sprintf("%T %v", want[0][0], want[0][0]) {
					t.Errorf("row %v, want %v %T %v (SELECT %s)", r, counts[i][0], want[0][0], want[0][0], lit)
				}
			}
			// The rows' plan gives the same column types.
			f.exec("SET SESSION dpsql_answer_source = 'rows'")
			defer f.exec("SET SESSION dpsql_answer_source = 'model'")
			rsch, _, err := query(f.e, f.root, q)
			if err != nil {
				t.Fatal(err)
			}
			for i := range sch {
				if !sch[i].Type.Equals(rsch[i].Type) || sch[i].Name != rsch[i].Name {
					t.Errorf("column %d: model %s %s, rows %s %s", i, sch[i].Name, sch[i].Type, rsch[i].Name, rsch[i].Type)
				}
			}
		})
	}
	// ORDER BY an expression column sorts by its values.
	got := f.rows("SELECT city, 1000 - COUNT(*) AS x FROM syn.p GROUP BY city ORDER BY x LIMIT 2")
	want := f.rows("SELECT city, 1000 - COUNT(*) FROM syn.p GROUP BY city ORDER BY COUNT(*) DESC LIMIT 2")
	if !sameRows(got, want, true) {
		t.Errorf("ORDER BY x: %v, want %v", got, want)
	}
}

// TestRowsAnswers: with dpsql_answer_source = 'rows', and for queries the
// model cannot answer, synthetic tables answer exactly as a plain copy of
// their rows does, and EXPLAIN says so.
func TestRowsAnswers(t *testing.T) {
	f := newAnswerFixture(t)
	check := func(t *testing.T, q string, ordered, wantModel bool) {
		t.Helper()
		_, got, err := query(f.e, f.root, fmt.Sprintf(q, "syn.p"))
		if err != nil {
			t.Fatal(err)
		}
		want := f.rows(fmt.Sprintf(q, "plain.p"))
		if !sameRows(got, want, ordered) {
			t.Errorf("%s\n got %v\nwant %v", q, got, want)
		}
		if strings.Contains(q, " JOIN ") {
			return // EXPLAIN of a join is go-mysql-server's own
		}
		plan := f.rows("EXPLAIN " + fmt.Sprintf(q, "syn.p"))
		last := plan[len(plan)-1][0].(string)
		if wantModel != strings.HasPrefix(last, "answered from model") || !wantModel && (!strings.HasPrefix(last, explainRowsLine) || len(plan) < 2) {
			t.Errorf("EXPLAIN %s = %v", q, plan)
		}
	}
	for _, q := range fallbackCases {
		t.Run("fallback/"+q, func(t *testing.T) { check(t, q, strings.Contains(q, "ORDER BY"), false) })
	}
	// The switch is per session and takes both spellings.
	other := sessionCtx(f.e, 9, RootUser, localhost)
	for _, set := range []string{"SET SESSION dpsql_answer_source = 'rows'", "SET @@dpsql_answer_source = 'ROWS'"} {
		f.exec("SET @@session.dpsql_answer_source = 'model'", set)
		for _, c := range answerCases {
			t.Run("rows/"+c.name, func(t *testing.T) { check(t, strings.ReplaceAll(c.model, "%[1]s", "%s"), c.ordered, false) })
		}
		if got := f.rows("SELECT @@dpsql_answer_source"); fmt.Sprint(got[0][0]) != "rows" {
			t.Errorf("@@dpsql_answer_source = %v", got)
		}
		if _, plan, err := query(f.e, other, "EXPLAIN SELECT COUNT(*) FROM syn.p"); err != nil || !strings.HasPrefix(plan[0][0].(string), "answered from model") {
			t.Errorf("another session: %v %v", plan, err)
		}
	}
	if _, _, err := query(f.e, f.root, "SET SESSION dpsql_answer_source = 'sample'"); err == nil {
		t.Error("SET dpsql_answer_source = 'sample' succeeded")
	}
	f.exec("SET SESSION dpsql_answer_source = 'model'")
	check(t, "SELECT COUNT(*) FROM %s", true, true)
}

// TestModelAnswerCache: a dropped synthetic table is forgotten, and one
// re-created under its name answers from its own model.
func TestModelAnswerCache(t *testing.T) {
	f := newAnswerFixture(t)
	q := "SELECT sex, age, city, COUNT(*) FROM syn.p GROUP BY sex, age, city"
	before := f.rows(q)
	id, _, _ := f.e.dp.cat.TableID("syn", "p")
	f.exec("DROP TABLE syn.p")
	if _, _, err := query(f.e, f.root, q); errCode(err) != mysql.ERNoSuchTable {
		t.Fatalf("after DROP: %v", err)
	}
	f.e.answers.mu.Lock()
	_, cached := f.e.answers.tables[id]
	f.e.answers.mu.Unlock()
	if cached {
		t.Error("the dropped table's model is still cached")
	}
	f.exec("CREATE SYNTHETIC TABLE syn.p FROM raw.people USING aim WITH EPSILON = 1, SEED = 99, " + fastAIMOption)
	f.oracle("p")
	got := f.rows(q)
	want := f.rows(fmt.Sprintf("SELECT sex, age, city, ROUND(SUM(w)*%g) AS n FROM oracle.p GROUP BY sex, age, city HAVING n <> 0", f.scale["p"]))
	if !sameRows(got, want, false) {
		t.Errorf("re-created table answers %v, want %v", got, want)
	}
	if sameRows(got, before, false) {
		t.Error("re-created table answers as the dropped one did")
	}
	// A renamed table keeps answering from its model.
	f.root.SetCurrentDatabase("syn")
	f.exec("RENAME TABLE p TO p2")
	if got2 := f.rows("SELECT sex, age, city, COUNT(*) FROM p2 GROUP BY sex, age, city"); !sameRows(got2, want, false) {
		t.Errorf("after RENAME: %v", got2)
	}
}

var _ = context.Background

// TestModelAnswerCacheBound: the cache keeps at most maxCachedTables
// synthetic tables, dropping the least recently used.
func TestModelAnswerCacheBound(t *testing.T) {
	f := newAnswerFixture(t)
	a := f.e.answers
	const base = 1 << 40 // IDs no table has
	a.mu.Lock()
	clear(a.tables)
	for i := range uint64(maxCachedTables) {
		a.tables[base+i] = &synTable{id: base + i, used: 10 + i}
	}
	a.tables[base+5].used = 1 // the least recently used
	a.clock, a.dirty = 100, false
	a.mu.Unlock()

	if _, err := a.lookup(f.root, "syn", "p"); err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	n := len(a.tables)
	_, lru := a.tables[base+5]
	_, other := a.tables[base+6]
	a.mu.Unlock()
	if n != maxCachedTables || lru || !other {
		t.Errorf("%d tables cached (want %d), least recently used kept: %v, another dropped: %v", n, maxCachedTables, lru, !other)
	}
	// The new table answers, and the next lookup sweeps the fake entries
	// (no such tables) out.
	f.rows("SELECT COUNT(*) FROM syn.p")
	a.mu.Lock()
	n = len(a.tables)
	a.mu.Unlock()
	if n != 1 {
		t.Errorf("%d tables cached after the sweep, want 1", n)
	}
}

// TestModelAnswerSelectLimit: SET SQL_SELECT_LIMIT limits the rows of a
// routed SELECT without its own LIMIT, as it does on the rows; a LIMIT of
// the query's own wins, and the total of a percentage is not limited.
func TestModelAnswerSelectLimit(t *testing.T) {
	f := newAnswerFixture(t)
	q := "SELECT age, COUNT(*), COUNT(*) / (SELECT COUNT(*) FROM syn.p) FROM syn.p GROUP BY age ORDER BY 2 DESC"
	all := f.rows(q)
	if len(all) < 4 {
		t.Fatalf("%d groups", len(all))
	}
	f.exec("SET SQL_SELECT_LIMIT = 1")
	if got := f.rows(q); len(got) != 1 || !sameRows(got, all[:1], true) {
		t.Errorf("with sql_select_limit = 1: %v, want %v", got, all[:1])
	}
	if got := f.rows(q + " LIMIT 3"); !sameRows(got, all[:3], true) {
		t.Errorf("with its own LIMIT 3: %v, want %v", got, all[:3])
	}
	if got := f.rows("SELECT COUNT(*) FROM syn.p"); len(got) != 1 {
		t.Errorf("total: %v", got)
	}
	if got := f.rows("SELECT age, COUNT(*) FROM plain.p GROUP BY age"); len(got) != 1 {
		t.Errorf("on the rows: %d rows", len(got))
	}
	f.exec("SET @@sql_select_limit = 0")
	if got := f.rows(q); len(got) != 0 {
		t.Errorf("with sql_select_limit = 0: %v", got)
	}
	f.exec("SET SQL_SELECT_LIMIT = DEFAULT")
	if got := f.rows(q); len(got) != len(all) {
		t.Errorf("back to the default: %d rows, want %d", len(got), len(all))
	}
}

// TestRowsNotes: a SELECT on a synthetic table answered from its rows
// carries a Note saying so and why; one answered from the model, or on a
// plain table, carries none.
func TestRowsNotes(t *testing.T) {
	f := newAnswerFixture(t)
	notes := func(q string) []string {
		t.Helper()
		if _, _, err := query(f.e, f.root, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		var out []string
		for _, w := range f.rows("SHOW WARNINGS") {
			if w[0] != "Note" || fmt.Sprint(w[1]) != fmt.Sprint(codeAnsweredFromRows) {
				t.Errorf("%s: warning %v", q, w)
			}
			out = append(out, w[2].(string))
		}
		return out
	}
	const prefix = "answered from the synthetic rows of `syn`.`p`, not the model: "
	for q, reason := range map[string]string{
		"SELECT sex, MAX(age) FROM syn.p GROUP BY sex":                                     "select columns, COUNT(*)",
		"SELECT * FROM syn.p LIMIT 3":                                                      "select columns, COUNT(*)",
		"SELECT age, COUNT(*) FROM syn.p WHERE age + 1 > 3 GROUP BY age":                   "column on one side",
		"SELECT COUNT(*) FROM syn.p WHERE id <= 10":                                        "id",
		"SELECT a.sex, COUNT(*) FROM syn.p a JOIN plain.p b ON a.id = b.id GROUP BY a.sex": reasonNotAlone,
		"SELECT (SELECT COUNT(*) FROM syn.p) AS n":                                         reasonNotAlone,
		"SELECT COUNT(*) FROM plain.p WHERE age IN (SELECT age FROM syn.p)":                reasonNotAlone,
	} {
		got := notes(q)
		if len(got) != 1 || !strings.HasPrefix(got[0], prefix) || !strings.Contains(got[0], reason) {
			t.Errorf("%s: notes %q, want one on syn.p mentioning %q", q, got, reason)
		}
	}
	for _, q := range []string{
		"SELECT sex, COUNT(*) FROM syn.p GROUP BY sex",
		"SELECT sex AS s, 100.0 * COUNT(*) / (SELECT COUNT(*) FROM syn.p) FROM syn.p GROUP BY 1",
		"SELECT sex, MAX(age) FROM plain.p GROUP BY sex",
	} {
		if got := notes(q); len(got) != 0 {
			t.Errorf("%s: notes %q", q, got)
		}
	}
	// A note lasts until the next statement, which SHOW WARNINGS is not.
	notes("SELECT MAX(age) FROM syn.p")
	if got := f.rows("SHOW WARNINGS"); len(got) != 1 {
		t.Errorf("SHOW WARNINGS again: %v", got)
	}
	f.exec("SET SESSION dpsql_answer_source = 'rows'")
	if got := notes("SELECT sex, COUNT(*) FROM syn.p GROUP BY sex"); len(got) != 1 || !strings.Contains(got[0], "dpsql_answer_source is 'rows'") {
		t.Errorf("rows mode: notes %q", got)
	}
	// EXPLAIN says it in its own way.
	if got := notes("EXPLAIN SELECT sex, COUNT(*) FROM syn.p GROUP BY sex"); len(got) != 0 {
		t.Errorf("EXPLAIN: notes %q", got)
	}
}
