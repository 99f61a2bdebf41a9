package planner

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/dolthub/vitess/go/vt/sqlparser"

	"github.com/dpsql/dpsql/catalog/domain"
	"github.com/dpsql/dpsql/internal/vtparse"
)

func must(c domain.Column, err error) domain.Column {
	if err != nil {
		panic(err)
	}
	return c
}

func strVals(ss ...string) []domain.Value {
	var out []domain.Value
	for _, s := range ss {
		out = append(out, domain.StringValue(s))
	}
	return out
}

// testDomain has every kind of column, nullable and not:
//
//	0 sex  categorical F, M
//	1 race ENUM a, b, c, NULL
//	2 age  0..9
//	3 inc  float bins [0,25) [25,50) [50,75) [75,100], NULL
//	4 hrs  integer bins 0-4 5-9 10-14 15-20
//	5 g    categorical 10, 20, 30, NULL
//	6 flag 0..1, NULL
//	7 one  integer bins of width 1 over 0..4
func testDomain() *domain.Table {
	return &domain.Table{Columns: []domain.Column{
		must(domain.NewCategorical("sex", domain.String, strVals("F", "M"), false, false)),
		must(domain.NewCategorical("race", domain.String, strVals("a", "b", "c"), true, true)),
		must(domain.NewIntRange("age", 0, 9, false)),
		must(domain.NewBinned("inc", 0, 100, 4, false, true)),
		must(domain.NewBinned("hrs", 0, 20, 4, true, false)),
		must(domain.NewCategorical("g", domain.Int, []domain.Value{domain.IntValue(10), domain.IntValue(20), domain.IntValue(30)}, true, false)),
		must(domain.NewIntRange("flag", 0, 1, true)),
		must(domain.NewBinned("one", 0, 5, 5, true, false)),
	}}
}

var src = TableRef{DB: "raw", Name: "t", Columns: []string{"sex", "race", "age", "inc", "hrs", "g", "flag", "one", "name", "ts"}}

// compileLoose compiles one query as a model-answered query is compiled:
// literals outside the domain are SQL (they match nothing), not errors.
func compileLoose(t *testing.T, text string) (*Query, error) {
	t.Helper()
	stmt, err := vtparse.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	return CompileQuery(stmt.(*sqlparser.Select), src, testDomain())
}

func compile1(t *testing.T, text string) (*Query, error) {
	t.Helper()
	w, err := Compile([]WorkloadQuery{{Text: text, Weight: 1}, {Text: "SELECT sex, COUNT(*) FROM t GROUP BY sex", Weight: 1}}, src, testDomain())
	if err != nil {
		return nil, err
	}
	return w.Queries[0], nil
}

const (
	T = True
	F = False
	U = Unknown
)

func TestCompileShape(t *testing.T) {
	tests := []struct {
		q       string
		attrs   []int
		groupBy []int
	}{
		{"SELECT COUNT(*) FROM t WHERE age > 3", []int{2}, nil},
		{"SELECT sex, race, COUNT(*) FROM t GROUP BY sex, race", []int{0, 1}, []int{0, 1}},
		{"select race, sex, count(*) from t group by sex, race", []int{0, 1}, []int{1, 0}},
		{"SELECT t.age AS a, COUNT(*) AS n FROM raw.t GROUP BY age", []int{2}, []int{2}},
		{"SELECT x.age, COUNT(*) FROM t AS x WHERE x.sex = 'F' GROUP BY x.age", []int{0, 2}, []int{2}},
		{"SELECT g, COUNT(*) FROM t WHERE (inc < 50 OR race IS NULL) AND flag = 1 GROUP BY g", []int{1, 3, 5, 6}, []int{5}},
		{"SELECT `sex`, COUNT(*) FROM `t` WHERE NOT (`age` BETWEEN 2 AND 5) GROUP BY `sex`", []int{0, 2}, []int{0}},
	}
	for _, tt := range tests {
		q, err := compile1(t, tt.q)
		if err != nil {
			t.Errorf("%s: %v", tt.q, err)
			continue
		}
		if !slices.Equal(q.Attrs, tt.attrs) || !slices.Equal(q.GroupBy, tt.groupBy) {
			t.Errorf("%s: attrs %v groupBy %v; want %v, %v", tt.q, q.Attrs, q.GroupBy, tt.attrs, tt.groupBy)
		}
	}
}

// TestAtoms checks the code-level truth table of single-column predicates,
// written out by hand from SQL's three-valued logic.
func TestAtoms(t *testing.T) {
	tests := []struct {
		where string
		attr  int
		want  []Truth
	}{
		{"sex = 'F'", 0, []Truth{T, F}},
		{"'M' = sex", 0, []Truth{F, T}},
		{"sex <> 'F'", 0, []Truth{F, T}},
		{"sex != 'x'", 0, []Truth{T, T}},
		{"sex > 'F'", 0, []Truth{F, T}},
		{"sex = NULL", 0, []Truth{U, U}},
		{"race = 'b'", 1, []Truth{F, T, F, U}},
		{"race <> 'b'", 1, []Truth{T, F, T, U}},
		{"NOT race = 'b'", 1, []Truth{T, F, T, U}},
		{"race IS NULL", 1, []Truth{F, F, F, T}},
		{"race IS NOT NULL", 1, []Truth{T, T, T, F}},
		{"NOT race IS NULL", 1, []Truth{T, T, T, F}},
		{"race IN ('a', 'c')", 1, []Truth{T, F, T, U}},
		{"race IN ('a', NULL)", 1, []Truth{T, U, U, U}},
		{"race NOT IN ('a', NULL)", 1, []Truth{F, U, U, U}},
		{"race NOT IN ('a')", 1, []Truth{F, T, T, U}},
		{"race = 'b' OR race IS NULL", 1, []Truth{F, T, F, T}},
		{"race = 'b' AND race IS NULL", 1, []Truth{F, F, F, U}},
		{"age < 3", 2, []Truth{T, T, T, F, F, F, F, F, F, F}},
		{"3 > age", 2, []Truth{T, T, T, F, F, F, F, F, F, F}},
		{"age <= 2.5", 2, []Truth{T, T, T, F, F, F, F, F, F, F}},
		{"age >= 8", 2, []Truth{F, F, F, F, F, F, F, F, T, T}},
		{"age BETWEEN 2 AND 4", 2, []Truth{F, F, T, T, T, F, F, F, F, F}},
		{"age NOT BETWEEN 2 AND 8", 2, []Truth{T, T, F, F, F, F, F, F, F, T}},
		{"age BETWEEN 5 AND 4", 2, []Truth{F, F, F, F, F, F, F, F, F, F}},
		{"age = -1", 2, []Truth{F, F, F, F, F, F, F, F, F, F}},
		{"age IN (0, 9.0, 4.5)", 2, []Truth{T, F, F, F, F, F, F, F, F, T}},
		{"(age < 2 OR age > 7)", 2, []Truth{T, T, F, F, F, F, F, F, T, T}},
		{"inc < 50", 3, []Truth{T, T, F, F, U}},
		{"inc >= 25", 3, []Truth{F, T, T, T, U}},
		{"inc > 100", 3, []Truth{F, F, F, F, U}},
		{"inc <= 100", 3, []Truth{T, T, T, T, U}},
		{"inc < 0", 3, []Truth{F, F, F, F, U}},
		{"inc BETWEEN 0 AND 100", 3, []Truth{T, T, T, T, U}},
		{"inc NOT BETWEEN -5 AND 200", 3, []Truth{F, F, F, F, U}},
		{"inc = 1000", 3, []Truth{F, F, F, F, U}},
		{"inc IN (-1, 101)", 3, []Truth{F, F, F, F, U}},
		{"inc IS NULL", 3, []Truth{F, F, F, F, T}},
		{"inc < NULL", 3, []Truth{U, U, U, U, U}},
		{"hrs < 10", 4, []Truth{T, T, F, F}},
		{"hrs <= 9", 4, []Truth{T, T, F, F}},
		{"hrs < 9.5", 4, []Truth{T, T, F, F}},
		{"hrs > 14", 4, []Truth{F, F, F, T}},
		{"hrs BETWEEN 5 AND 14", 4, []Truth{F, T, T, F}},
		{"hrs IN (5, 6, 7, 8, 9)", 4, []Truth{F, T, F, F}},
		{"hrs IN (21, 2.5)", 4, []Truth{F, F, F, F}},
		{"hrs NOT IN (5, 6, 7, 8, 9, 100)", 4, []Truth{T, F, T, T}},
		{"g = 20", 5, []Truth{F, T, F, U}},
		{"g = 20.0", 5, []Truth{F, T, F, U}},
		{"g BETWEEN NULL AND 15", 5, []Truth{U, F, F, U}},
		{"g BETWEEN 15 AND NULL", 5, []Truth{F, U, U, U}},
		{"flag = TRUE", 6, []Truth{F, T, U}},
		{"flag", -1, nil}, // rejected below
		{"one = 3", 7, []Truth{F, F, F, T, F}},
		{"one <> 3", 7, []Truth{T, T, T, F, T}},
		{"one IN (1, 2)", 7, []Truth{F, T, T, F, F}},
	}
	for _, tt := range tests {
		q, err := compileLoose(t, "SELECT COUNT(*) FROM t WHERE "+tt.where)
		if tt.attr < 0 {
			if err == nil {
				t.Errorf("%s: accepted", tt.where)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.where, err)
			continue
		}
		p := q.Where
		if p.Op != OpAtom || p.Attr != tt.attr || !slices.Equal(p.Truth, tt.want) {
			t.Errorf("%s: got op %v attr %d truth %v; want atom on %d %v", tt.where, p.Op, p.Attr, p.Truth, tt.attr, tt.want)
		}
	}
}

// TestWorkloadLiteralsOutsideDomain: a charged workload refuses a literal
// outside the public domain (a typo would silently measure nothing),
// naming the domain; bounds inside it and NULL are fine.
func TestWorkloadLiteralsOutsideDomain(t *testing.T) {
	tests := []struct {
		where string
		bad   string // "" if accepted, else a fragment of the message
	}{
		{"sex = 'other'", "'other' is outside the public domain of sex, ('F', 'M')"},
		{"sex = 'f'", "'f' is outside"}, // values are case-sensitive, as in the synthetic tables
		{"sex IN ('F', 'Male')", "'Male' is outside"},
		{"sex != 'x'", "'x' is outside"},
		{"sex = 'F'", ""},
		{"sex = NULL", ""},
		{"race > 'b'", ""},
		{"race < 'zz'", "'zz' is outside the public domain of race"},
		{"age > 200", "200 is outside the public domain of age, [0, 9]"},
		{"age = 2.5", "2.5 is outside"},
		{"age <= 2.5", ""},
		{"age BETWEEN -1 AND 4", "-1 is outside"},
		{"age BETWEEN 0 AND 9", ""},
		{"inc < 75", ""},
		{"inc = 1000", "1000 is outside the public domain of inc, [0, 100]"},
		{"hrs IN (21, 5)", "21 is outside"},
		{"g = 15", "15 is outside the public domain of g, (10, 20, 30)"},
		{"g BETWEEN 15 AND 25", ""},
		{"g BETWEEN 15 AND 35", "35 is outside"},
	}
	for _, tt := range tests {
		_, err := compile1(t, "SELECT COUNT(*) FROM t WHERE "+tt.where)
		var e *Error
		switch {
		case tt.bad == "" && err != nil:
			t.Errorf("%s: %v", tt.where, err)
		case tt.bad != "" && (!errors.As(err, &e) || e.Kind != KindOutOfDomain || !strings.Contains(err.Error(), tt.bad)):
			t.Errorf("%s: error %v, want %q", tt.where, err, tt.bad)
		}
	}
}

func TestRejects(t *testing.T) {
	tests := []struct {
		q    string
		kind ErrorKind
		frag string // must occur in the error's Fragment
	}{
		{"SELECT a FROM t UNION SELECT b FROM t", KindNotSelect, "UNION"},
		{"SELEC COUNT(*) FROM t", KindNotSelect, "SELEC"},
		{"SELECT COUNT(*) FROM t JOIN u ON t.sex = u.sex", KindJoin, "join"},
		{"SELECT COUNT(*) FROM t, u", KindJoin, "u"},
		{"SELECT COUNT(*) FROM (t)", KindJoin, "t"},
		{"SELECT COUNT(*) FROM (SELECT * FROM t) AS s", KindSubquery, "select"},
		{"SELECT COUNT(*) FROM t WHERE sex IN (SELECT sex FROM t)", KindSubquery, "select"},
		{"SELECT COUNT(*) FROM t WHERE EXISTS (SELECT 1 FROM t)", KindSubquery, "exists"},
		{"SELECT COUNT(*) FROM t WHERE age = (SELECT 1)", KindSubquery, "select 1"},
		{"SELECT (SELECT 1), COUNT(*) FROM t", KindSubquery, "select 1"},
		{"SELECT COUNT(*) FROM u", KindOtherTable, "u"},
		{"SELECT COUNT(*) FROM other.t", KindOtherTable, "other.t"},
		{"SELECT COUNT(*)", KindOtherTable, "count"},
		{"SELECT u.sex, COUNT(*) FROM t GROUP BY u.sex", KindOtherTable, "u.sex"},
		{"SELECT t.sex, COUNT(*) FROM t AS x GROUP BY t.sex", KindOtherTable, "t.sex"},
		{"SELECT SUM(age) FROM t", KindAggregate, "sum(age)"},
		{"SELECT sex, AVG(age) FROM t GROUP BY sex", KindAggregate, "avg(age)"},
		{"SELECT COUNT(age) FROM t", KindAggregate, "count(age)"},
		{"SELECT COUNT(DISTINCT age) FROM t", KindAggregate, "distinct"},
		{"SELECT COUNT(*), COUNT(*) FROM t", KindAggregate, "count(*)"},
		{"SELECT sex FROM t GROUP BY sex", KindAggregate, "sex"},
		{"SELECT MAX(age), COUNT(*) FROM t", KindAggregate, "max(age)"},
		{"SELECT DISTINCT sex, COUNT(*) FROM t GROUP BY sex", KindDistinct, "DISTINCT"},
		{"SELECT sex, COUNT(*) FROM t GROUP BY sex HAVING COUNT(*) > 5", KindHaving, "HAVING"},
		{"SELECT sex, COUNT(*) FROM t GROUP BY sex ORDER BY sex", KindClause, "order by"},
		{"SELECT COUNT(*) FROM t LIMIT 1", KindClause, "limit"},
		{"WITH x AS (SELECT 1) SELECT COUNT(*) FROM t", KindClause, "with"},
		{"SELECT COUNT(*) FROM t FOR UPDATE", KindClause, "for update"},
		{"SELECT *, COUNT(*) FROM t", KindSelectExpr, "*"},
		{"SELECT age + 1, COUNT(*) FROM t GROUP BY age + 1", KindSelectExpr, "age + 1"},
		{"SELECT UPPER(sex), COUNT(*) FROM t GROUP BY sex", KindSelectExpr, "upper"},
		{"SELECT sex, sex, COUNT(*) FROM t GROUP BY sex", KindSelectExpr, "sex"},
		{"SELECT sex, COUNT(*) FROM t", KindGroupBy, "sex"},
		{"SELECT COUNT(*) FROM t GROUP BY sex", KindGroupBy, "sex"},
		{"SELECT sex, COUNT(*) FROM t GROUP BY sex, race", KindGroupBy, "race"},
		{"SELECT sex, COUNT(*) FROM t GROUP BY 1", KindGroupBy, "1"},
		{"SELECT sex, COUNT(*) FROM t GROUP BY sex, sex", KindGroupBy, "sex"},
		{"SELECT nope, COUNT(*) FROM t GROUP BY nope", KindUnknownColumn, "nope"},
		{"SELECT COUNT(*) FROM t WHERE nope = 1", KindUnknownColumn, "nope"},
		{"SELECT name, COUNT(*) FROM t GROUP BY name", KindNoDomain, "name"},
		{"SELECT COUNT(*) FROM t WHERE ts > 5", KindNoDomain, "ts"},
		{"SELECT COUNT(*) FROM t WHERE sex LIKE 'F%'", KindPredicate, "like"},
		{"SELECT COUNT(*) FROM t WHERE age = g", KindPredicate, "age = g"},
		{"SELECT COUNT(*) FROM t WHERE 1 < 2", KindPredicate, "1 < 2"},
		{"SELECT COUNT(*) FROM t WHERE age + 1 > 2", KindPredicate, "age + 1"},
		{"SELECT COUNT(*) FROM t WHERE age > 1 + 1", KindPredicate, "1 + 1"},
		{"SELECT COUNT(*) FROM t WHERE age > abs(-1)", KindPredicate, "abs"},
		{"SELECT COUNT(*) FROM t WHERE age", KindPredicate, "age"},
		{"SELECT COUNT(*) FROM t WHERE age <=> 1", KindPredicate, "<=>"},
		{"SELECT COUNT(*) FROM t WHERE flag IS TRUE", KindPredicate, "is true"},
		{"SELECT COUNT(*) FROM t WHERE 1 IN (age, g)", KindPredicate, "in"},
		{"SELECT COUNT(*) FROM t WHERE age = 1 XOR sex = 'F'", KindPredicate, "xor"},
		{"SELECT COUNT(*) FROM t WHERE age IS NULL IS NULL", KindPredicate, "is null"},
		{"SELECT COUNT(*) FROM t WHERE sex = 1", KindLiteral, "sex = 1"},
		{"SELECT COUNT(*) FROM t WHERE age = '3'", KindLiteral, "age = '3'"},
		{"SELECT COUNT(*) FROM t WHERE race IN ('a', 2)", KindLiteral, "race in"},
		{"SELECT COUNT(*) FROM t WHERE inc BETWEEN 'a' AND 'b'", KindLiteral, "inc between"},
		{"SELECT COUNT(*) FROM t WHERE inc < 30", KindBinAlignment, "inc < 30"},
		{"SELECT COUNT(*) FROM t WHERE inc <= 50", KindBinAlignment, "inc <= 50"},
		{"SELECT COUNT(*) FROM t WHERE inc = 50", KindBinAlignment, "inc = 50"},
		{"SELECT COUNT(*) FROM t WHERE inc IN (10)", KindBinAlignment, "inc in"},
		{"SELECT COUNT(*) FROM t WHERE inc BETWEEN 25 AND 50", KindBinAlignment, "between"},
		{"SELECT COUNT(*) FROM t WHERE hrs < 7", KindBinAlignment, "hrs < 7"},
		{"SELECT COUNT(*) FROM t WHERE hrs = 5", KindBinAlignment, "hrs = 5"},
		{"SELECT COUNT(*) FROM t WHERE hrs IN (5, 6, 7, 8)", KindBinAlignment, "hrs in"},
		{"SELECT COUNT(*) FROM t WHERE hrs BETWEEN NULL AND 7", KindBinAlignment, "between"},
	}
	for _, tt := range tests {
		_, err := compile1(t, tt.q)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("%s: err = %v, want *Error of kind %v", tt.q, err, tt.kind)
			continue
		}
		if !errors.Is(err, ErrRejected) {
			t.Errorf("%s: does not wrap ErrRejected", tt.q)
		}
		if e.Kind != tt.kind || e.Query != 1 {
			t.Errorf("%s: kind %v query %d (%v); want %v in query 1", tt.q, e.Kind, e.Query, err, tt.kind)
		}
		if !strings.Contains(strings.ToLower(e.Fragment), strings.ToLower(tt.frag)) {
			t.Errorf("%s: fragment %q does not contain %q", tt.q, e.Fragment, tt.frag)
		}
	}
}

func TestBinAlignmentMessage(t *testing.T) {
	_, err := compile1(t, "SELECT COUNT(*) FROM t WHERE inc < 30")
	if err == nil || !strings.Contains(err.Error(), "0, 25, 50, 75, 100") {
		t.Errorf("error %v does not list the bin edges", err)
	}
	_, err = compile1(t, "SELECT COUNT(*) FROM t WHERE hrs < 7")
	if err == nil || !strings.Contains(err.Error(), "0, 5, 10, 15, 20") {
		t.Errorf("error %v does not list the bin edges", err)
	}
}

func TestCompileWorkload(t *testing.T) {
	dom := testDomain()
	_, err := Compile(nil, src, dom)
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindEmpty {
		t.Errorf("empty workload: %v", err)
	}
	_, err = Compile([]WorkloadQuery{{Text: "SELECT COUNT(*) FROM t", Weight: 1}}, src, dom)
	if !errors.As(err, &e) || e.Kind != KindEmpty {
		t.Errorf("total-only workload: %v", err)
	}
	for _, w := range []float64{0, -1, math.Inf(1), math.NaN()} {
		_, err = Compile([]WorkloadQuery{{Text: "SELECT sex, COUNT(*) FROM t GROUP BY sex", Weight: w}}, src, dom)
		if !errors.As(err, &e) || e.Kind != KindWeight {
			t.Errorf("weight %v: %v", w, err)
		}
	}
	// The query number of the offending query is reported.
	_, err = Compile([]WorkloadQuery{
		{Text: "SELECT sex, COUNT(*) FROM t GROUP BY sex", Weight: 1},
		{Text: "SELECT SUM(age) FROM t", Weight: 1},
	}, src, dom)
	if !errors.As(err, &e) || e.Query != 2 || !strings.Contains(err.Error(), "query 2") {
		t.Errorf("second query: %v", err)
	}
	// A pre-parsed SELECT is used as is.
	stmt, _ := sqlparser.Parse("SELECT age, COUNT(*) FROM t GROUP BY age")
	w, err := Compile([]WorkloadQuery{{Text: "ignored", Select: stmt.(*sqlparser.Select), Weight: 2}}, src, dom)
	if err != nil || !slices.Equal(w.Queries[0].Attrs, []int{2}) || w.Queries[0].Weight != 2 {
		t.Errorf("pre-parsed: %v", err)
	}
	// Table names: case-insensitive, db qualifier must match if given.
	for q, ok := range map[string]bool{
		"SELECT COUNT(*) FROM T WHERE age = 1":     true,
		"SELECT COUNT(*) FROM RAW.t WHERE age = 1": true,
		"SELECT COUNT(*) FROM pub.t WHERE age = 1": false,
	} {
		_, err := Compile([]WorkloadQuery{{Text: q, Weight: 1}}, src, dom)
		if (err == nil) != ok {
			t.Errorf("%s: err %v", q, err)
		}
	}
	// Without a source DB any qualifier is accepted.
	if _, err := Compile([]WorkloadQuery{{Text: "SELECT COUNT(*) FROM pub.t WHERE age = 1", Weight: 1}}, TableRef{Name: "t"}, dom); err != nil {
		t.Error(err)
	}
	// Without the source's column list, a column without domain is unknown.
	_, err = Compile([]WorkloadQuery{{Text: "SELECT name, COUNT(*) FROM t GROUP BY name", Weight: 1}}, TableRef{Name: "t"}, dom)
	if !errors.As(err, &e) || e.Kind != KindUnknownColumn {
		t.Errorf("no column list: %v", err)
	}
}

func TestTooLarge(t *testing.T) {
	var cols []domain.Column
	for i := range 4 {
		cols = append(cols, must(domain.NewIntRange(fmt.Sprint("c", i), 0, 99, false)))
	}
	dom := &domain.Table{Columns: cols}
	_, err := Compile([]WorkloadQuery{{Text: "SELECT c0, c1, c2, c3, COUNT(*) FROM t GROUP BY c0, c1, c2, c3", Weight: 1}}, TableRef{Name: "t"}, dom)
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindTooLarge {
		t.Errorf("10^8 cells: %v", err)
	}
	if _, err := AllKWay(dom, 4); !errors.As(err, &e) || e.Kind != KindTooLarge {
		t.Errorf("AllKWay 4: %v", err)
	}
}

func TestMarginals(t *testing.T) {
	dom := testDomain()
	w, err := Compile([]WorkloadQuery{
		{Text: "SELECT sex, race, COUNT(*) FROM t GROUP BY sex, race", Weight: 1},
		{Text: "SELECT COUNT(*) FROM t", Weight: 7},
		{Text: "SELECT race, COUNT(*) FROM t WHERE sex = 'F' GROUP BY race", Weight: 2.5},
		{Text: "SELECT age, COUNT(*) FROM t GROUP BY age", Weight: 1},
		{Text: "SELECT race, sex, COUNT(*) FROM t GROUP BY race, sex", Weight: 0.5},
	}, src, dom)
	if err != nil {
		t.Fatal(err)
	}
	want := []Marginal{{Attrs: []int{0, 1}, Weight: 4}, {Attrs: []int{2}, Weight: 1}}
	if got := w.Marginals(); !reflect.DeepEqual(got, want) {
		t.Errorf("Marginals() = %v, want %v", got, want)
	}
}

func TestAllKWay(t *testing.T) {
	dom := testDomain()
	n := len(dom.Columns)
	for k := 1; k <= n; k++ {
		w, err := AllKWay(dom, k)
		if err != nil {
			t.Fatal(err)
		}
		ms := w.Marginals()
		if len(ms) != binomial(n, k) || len(w.Queries) != len(ms) {
			t.Fatalf("k=%d: %d marginals, want C(%d,%d) = %d", k, len(ms), n, k, binomial(n, k))
		}
		for i, m := range ms {
			if len(m.Attrs) != k || !slices.IsSorted(m.Attrs) || m.Weight != 1 {
				t.Fatalf("k=%d: marginal %v", k, m)
			}
			if i > 0 && slices.Compare(ms[i-1].Attrs, m.Attrs) >= 0 {
				t.Fatalf("k=%d: not in lexicographic order: %v then %v", k, ms[i-1].Attrs, m.Attrs)
			}
		}
	}
	for _, k := range []int{0, -1, n + 1} {
		if _, err := AllKWay(dom, k); err == nil {
			t.Errorf("AllKWay(%d) accepted", k)
		}
	}
	w, err := DefaultWorkload(dom)
	if err != nil || len(w.Queries) != binomial(n, 2) {
		t.Errorf("DefaultWorkload: %v", err)
	}
	one := &domain.Table{Columns: dom.Columns[:1]}
	if w, err := DefaultWorkload(one); err != nil || len(w.Queries) != 1 {
		t.Errorf("DefaultWorkload of one column: %v", err)
	}
}

func TestBinomial(t *testing.T) {
	// Pascal's rule as the oracle.
	for n := 0; n <= 60; n++ {
		for k := 1; k < n; k++ {
			if binomial(n, k) != binomial(n-1, k-1)+binomial(n-1, k) {
				t.Fatalf("C(%d,%d) = %d", n, k, binomial(n, k))
			}
		}
	}
	if binomial(200, 100) != math.MaxInt {
		t.Error("binomial does not saturate")
	}
}
