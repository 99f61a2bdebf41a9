package planner

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dolthub/vitess/go/vt/sqlparser"

	"github.com/dpsql/dpsql/catalog/domain"
)

// oracle evaluates a WHERE expression on one row of decoded values with
// SQL's three-valued logic, independently of the compiled predicate.
func oracle(t *testing.T, dom *domain.Table, e sqlparser.Expr, row []any) Truth {
	value := func(e sqlparser.Expr) (any, bool) { // value, isNull
		if c, ok := e.(*sqlparser.ColName); ok {
			i, _ := dom.Index(c.Name.String())
			return row[i], row[i] == nil
		}
		v, null, err := domain.Literal(e)
		if err != nil {
			t.Fatalf("oracle: %v", err)
		}
		if null {
			return nil, true
		}
		return v.Any(), false
	}
	cmp := func(a, b any) int {
		if s, ok := a.(string); ok {
			return strings.Compare(s, b.(string))
		}
		x, y := num(a), num(b)
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	}
	eq3 := func(a, b sqlparser.Expr) Truth {
		x, xn := value(a)
		y, yn := value(b)
		if xn || yn {
			return Unknown
		}
		return truth(cmp(x, y) == 0)
	}
	switch e := e.(type) {
	case *sqlparser.ParenExpr:
		return oracle(t, dom, e.Expr, row)
	case *sqlparser.AndExpr:
		return min(oracle(t, dom, e.Left, row), oracle(t, dom, e.Right, row))
	case *sqlparser.OrExpr:
		return max(oracle(t, dom, e.Left, row), oracle(t, dom, e.Right, row))
	case *sqlparser.NotExpr:
		return True - oracle(t, dom, e.Expr, row)
	case *sqlparser.IsExpr:
		_, null := value(e.Expr)
		return truth(null == (e.Operator == sqlparser.IsNullStr))
	case *sqlparser.RangeCond:
		x, xn := value(e.Left)
		lo, ln := value(e.From)
		hi, hn := value(e.To)
		a, b := Unknown, Unknown
		if !xn && !ln {
			a = truth(cmp(x, lo) >= 0)
		}
		if !xn && !hn {
			b = truth(cmp(x, hi) <= 0)
		}
		r := min(a, b)
		if e.Operator == sqlparser.NotBetweenStr {
			r = True - r
		}
		return r
	case *sqlparser.ComparisonExpr:
		switch e.Operator {
		case sqlparser.InStr, sqlparser.NotInStr:
			r := False
			for _, v := range e.Right.(sqlparser.ValTuple) {
				r = max(r, eq3(e.Left, v))
			}
			if e.Operator == sqlparser.NotInStr {
				r = True - r
			}
			return r
		}
		x, xn := value(e.Left)
		y, yn := value(e.Right)
		if xn || yn {
			return Unknown
		}
		d := cmp(x, y)
		switch e.Operator {
		case "=":
			return truth(d == 0)
		case "!=":
			return truth(d != 0)
		case "<":
			return truth(d < 0)
		case "<=":
			return truth(d <= 0)
		case ">":
			return truth(d > 0)
		case ">=":
			return truth(d >= 0)
		}
	}
	t.Fatalf("oracle: unsupported %s", sqlparser.String(e))
	return 0
}

func num(v any) float64 {
	switch x := v.(type) {
	case int64:
		return float64(x)
	case float64:
		return x
	}
	panic(fmt.Sprintf("num(%T)", v))
}

// literals returns SQL literals worth comparing column c with: its values,
// bin edges, values just outside, and NULL.
func literals(c *domain.Column) []string {
	out := []string{"NULL"}
	switch c.Kind() {
	case domain.Binned:
		for i := 0; i <= c.Bins(); i++ {
			out = append(out, fmt.Sprint(c.Edge(i)))
			lo, _, _ := c.Bin(min(i, c.Bins()-1))
			out = append(out, fmt.Sprint(lo))
		}
		out = append(out, "-1", "1000", "12.5")
	default:
		for _, v := range c.Values() {
			if v.Type() == domain.String {
				out = append(out, "'"+v.Str()+"'")
			} else {
				out = append(out, v.String())
			}
		}
		if c.Type() == domain.String {
			out = append(out, "'zz'", "''")
		} else {
			out = append(out, "-3", "1.5", "99")
		}
	}
	return out
}

// randPred builds a random predicate over dom of the given depth.
func randPred(rng *rand.Rand, dom *domain.Table, depth int) string {
	if depth > 0 && rng.IntN(3) > 0 {
		switch rng.IntN(3) {
		case 0:
			return "(" + randPred(rng, dom, depth-1) + " AND " + randPred(rng, dom, depth-1) + ")"
		case 1:
			return "(" + randPred(rng, dom, depth-1) + " OR " + randPred(rng, dom, depth-1) + ")"
		default:
			return "NOT (" + randPred(rng, dom, depth-1) + ")"
		}
	}
	c := &dom.Columns[rng.IntN(len(dom.Columns))]
	lits := literals(c)
	l := func() string { return lits[rng.IntN(len(lits))] }
	switch rng.IntN(6) {
	case 0:
		ops := []string{"=", "<>", "!=", "<", "<=", ">", ">="}
		return c.Name() + " " + ops[rng.IntN(len(ops))] + " " + l()
	case 1:
		return l() + " < " + c.Name()
	case 2:
		in := []string{l()}
		for range rng.IntN(4) {
			in = append(in, l())
		}
		not := []string{"", "NOT "}[rng.IntN(2)]
		return c.Name() + " " + not + "IN (" + strings.Join(in, ", ") + ")"
	case 3:
		not := []string{"", "NOT "}[rng.IntN(2)]
		return c.Name() + " " + not + "BETWEEN " + l() + " AND " + l()
	case 4:
		return c.Name() + " IS NULL"
	default:
		return c.Name() + " IS NOT NULL"
	}
}

// TestAnswerBruteForce checks Query.Answer against an explicitly enumerated
// table: the answer from the marginal on Attrs must equal counting the rows
// whose decoded values satisfy the WHERE clause (evaluated by the oracle),
// grouped by the group-by codes.
func TestAnswerBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	dom := testDomain()
	const rows = 300
	compiled, alignment := 0, 0
	for iter := range 1500 {
		// Random rows: codes, and values decoded from them.
		codes := make([][]int, rows)
		vals := make([][]any, rows)
		for r := range rows {
			codes[r] = make([]int, len(dom.Columns))
			vals[r] = make([]any, len(dom.Columns))
			for a := range dom.Columns {
				codes[r][a] = rng.IntN(dom.Columns[a].Size())
				vals[r][a] = dom.Columns[a].Decode(codes[r][a], rng)
			}
		}
		var group []string
		for a := range dom.Columns {
			if rng.IntN(4) == 0 {
				group = append(group, dom.Columns[a].Name())
			}
		}
		rng.Shuffle(len(group), func(i, j int) { group[i], group[j] = group[j], group[i] })
		where := randPred(rng, dom, 3)
		text := "SELECT COUNT(*) FROM t WHERE " + where
		if len(group) > 0 {
			g := strings.Join(group, ", ")
			text = "SELECT " + g + ", COUNT(*) FROM t WHERE " + where + " GROUP BY " + g
		}
		q, err := compileLoose(t, text)
		if err != nil {
			var e *Error
			if errors.As(err, &e) && (e.Kind == KindBinAlignment || e.Kind == KindTooLarge) {
				alignment++
				continue
			}
			t.Fatalf("iteration %d: %s: %v", iter, text, err)
		}
		compiled++
		// The marginal on q.Attrs, last attribute fastest.
		cells := 1
		for _, a := range q.Attrs {
			cells *= dom.Columns[a].Size()
		}
		marg := make([]float64, cells)
		for r := range rows {
			i := 0
			for _, a := range q.Attrs {
				i = i*dom.Columns[a].Size() + codes[r][a]
			}
			marg[i]++
		}
		got, err := q.Answer(marg)
		if err != nil {
			t.Fatal(err)
		}
		// The oracle on the explicit table.
		want := make([]float64, q.Groups())
		stmt, _ := sqlparser.Parse(text)
		w := stmt.(*sqlparser.Select).Where.Expr
		for r := range rows {
			if oracle(t, dom, w, vals[r]) != True {
				continue
			}
			g := 0
			for k, a := range q.GroupBy {
				g = g*q.groupSizes[k] + codes[r][a]
			}
			want[g]++
		}
		for g := range want {
			if got[g] != want[g] {
				t.Fatalf("%s\ngroup %v: Answer %v, brute force %v", text, q.GroupCodes(g, nil), got[g], want[g])
			}
		}
		// Evidence, where available, gives the same answer.
		if ev, ok := q.Evidence(); ok {
			ew := make([]float64, q.Groups())
			for r := range rows {
				wt := 1.0
				for a, f := range ev {
					wt *= f[codes[r][a]]
				}
				g := 0
				for k, a := range q.GroupBy {
					g = g*q.groupSizes[k] + codes[r][a]
				}
				ew[g] += wt
			}
			for g := range want {
				if ew[g] != want[g] {
					t.Fatalf("%s\ngroup %d: evidence answer %v, brute force %v", text, g, ew[g], want[g])
				}
			}
		}
	}
	t.Logf("%d queries compiled and checked, %d rejected for bin alignment", compiled, alignment)
	if compiled < 500 {
		t.Errorf("only %d random queries compiled; the generator is too often rejected", compiled)
	}
}

func TestEvidenceShape(t *testing.T) {
	tests := []struct {
		where string
		ok    bool
		attrs []int
	}{
		{"sex = 'F' AND age < 3", true, []int{0, 2}},
		{"sex = 'F' AND (age < 3 OR age > 7) AND sex <> 'M'", true, []int{0, 2}},
		{"sex = 'F' OR age < 3", false, nil},
		{"NOT (sex = 'F' AND age < 3)", false, nil},
		{"race IS NULL", true, []int{1}},
	}
	for _, tt := range tests {
		q, err := compile1(t, "SELECT COUNT(*) FROM t WHERE "+tt.where)
		if err != nil {
			t.Fatal(err)
		}
		ev, ok := q.Evidence()
		if ok != tt.ok {
			t.Errorf("%s: ok = %v", tt.where, ok)
			continue
		}
		for _, a := range tt.attrs {
			if _, has := ev[a]; !has {
				t.Errorf("%s: no evidence on %d", tt.where, a)
			}
		}
	}
	q, _ := compile1(t, "SELECT sex, COUNT(*) FROM t GROUP BY sex")
	if ev, ok := q.Evidence(); !ok || len(ev) != 0 {
		t.Errorf("no predicate: %v %v", ev, ok)
	}
}

func TestAnswerErrors(t *testing.T) {
	q, _ := compile1(t, "SELECT sex, COUNT(*) FROM t GROUP BY sex")
	if _, err := q.Answer(make([]float64, 3)); err == nil {
		t.Error("wrong marginal size accepted")
	}
	total, _ := compile1(t, "SELECT COUNT(*) FROM t")
	if got, err := total.Answer([]float64{42}); err != nil || len(got) != 1 || got[0] != 42 {
		t.Errorf("total: %v %v", got, err)
	}
}

func BenchmarkAnswer(b *testing.B) {
	w, err := Compile([]WorkloadQuery{{Text: "SELECT age, g, COUNT(*) FROM t WHERE (race = 'a' OR inc < 50) AND hrs >= 10 GROUP BY age, g", Weight: 1}}, src, testDomain())
	if err != nil {
		b.Fatal(err)
	}
	q := w.Queries[0]
	cells := 1
	for _, s := range q.sizes {
		cells *= s
	}
	marg := make([]float64, cells)
	for i := range marg {
		marg[i] = float64(i % 7)
	}
	dst := make([]float64, q.Groups())
	b.ResetTimer()
	for range b.N {
		dst, _ = q.AnswerTo(dst, marg)
	}
}
