package planner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/dolthub/vitess/go/vt/sqlparser"
	"github.com/shopspring/decimal"

	"github.com/dpsql/dpsql/catalog/domain"
	"github.com/dpsql/dpsql/synth/pgm"
)

var _ ModelSource = (*pgm.Model)(nil)

var synRef = SyntheticRef{DB: "db", Name: "t", Domain: testDomain()}

// randomModel fits a pgm model with total 1000 to random noisy marginals of
// overlapping cliques over dom, so that it has both in-clique and
// cross-clique attribute sets.
func randomModel(t testing.TB, dom *domain.Table, cliques [][]int, seed uint64) *pgm.Model {
	t.Helper()
	pd, err := pgm.NewDomain(dom.Names(), dom.Sizes())
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	var meas []pgm.Measurement
	for _, c := range cliques {
		y := make([]float64, pd.Cells(c))
		for i := range y {
			y[i] = 1000 * rng.ExpFloat64() / float64(len(y))
		}
		meas = append(meas, pgm.Measurement{Attrs: c, Y: y, Sigma: 1})
	}
	m, err := pgm.Estimate(context.Background(), pd, meas, &pgm.EstimateOptions{Iters: 50, Total: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// joint is a model's explicit joint distribution with every cell's codes
// and decoded values, the brute-force oracle's input.
type joint struct {
	p     []float64
	codes [][]int
	vals  [][]any
}

func explicitJoint(m *pgm.Model, dom *domain.Table) *joint {
	all := make([]int, len(dom.Columns))
	for i := range all {
		all[i] = i
	}
	j := &joint{p: m.Marginal(all)}
	rng := rand.New(rand.NewPCG(2, 3))
	code := make([]int, len(all))
	for range j.p {
		c := slices.Clone(code)
		v := make([]any, len(all))
		for a := range all {
			// Any value of a bin will do: accepted predicates are bin-aligned.
			v[a] = dom.Columns[a].Decode(c[a], rng)
		}
		j.codes = append(j.codes, c)
		j.vals = append(j.vals, v)
		for a := len(all) - 1; a >= 0; a-- {
			code[a]++
			if code[a] < dom.Columns[a].Size() {
				break
			}
			code[a] = 0
		}
	}
	return j
}

// refGroup is one group of the brute-force answer.
type refGroup struct {
	codes []int
	count float64
}

// bruteForce answers a count query by summing the joint's cells where the
// oracle says WHERE is TRUE, grouped by the codes of group (attributes in
// select order), groups in lexicographic code order.
func bruteForce(t *testing.T, j *joint, dom *domain.Table, where sqlparser.Expr, group []int) []refGroup {
	sums := map[string]*refGroup{}
	for i, p := range j.p {
		if where != nil && oracle(t, dom, where, j.vals[i]) != True {
			continue
		}
		codes := make([]int, len(group))
		for k, a := range group {
			codes[k] = j.codes[i][a]
		}
		key := fmt.Sprint(codes)
		if g, ok := sums[key]; ok {
			g.count += p
		} else {
			sums[key] = &refGroup{codes: codes, count: p}
		}
	}
	var out []refGroup
	for _, g := range sums {
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b refGroup) int { return slices.Compare(a.codes, b.codes) })
	if len(group) == 0 && len(out) == 0 {
		out = []refGroup{{count: 0}}
	}
	return out
}

// sqlLess orders two decoded values of column col as MySQL's ORDER BY does:
// NULL first, ENUM by declaration order, strings by bytes, numbers
// numerically. It is written independently of groupTables.
func sqlCmp(col *domain.Column, a, b any, ca, cb int) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	case col.Enum():
		return ca - cb
	}
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

// ratioString is k·c/total rounded half away from zero to 4 places, by
// exact rational arithmetic.
func ratioString(k, c, total int64) string {
	r := new(big.Rat).SetFrac(big.NewInt(k*c), big.NewInt(total))
	r.Mul(r, big.NewRat(10000, 1))
	r.Add(r, big.NewRat(1, 2))
	q := new(big.Int).Quo(r.Num(), r.Denom()) // floor for positive values
	return decimal.NewFromBigInt(q, -4).StringFixed(4)
}

// TestRouteBruteForce checks model answers against brute-force sums of an
// explicit joint for random queries: every predicate form (randPred), group
// columns of every kind, HAVING, ORDER BY, LIMIT, percentages, rounded and
// unrounded, the total rescaled or not.
func TestRouteBruteForce(t *testing.T) {
	// testDomain without hrs and one, so that the joint (4800 cells) is
	// small enough to evaluate the oracle on every cell of it.
	full := testDomain()
	dom := &domain.Table{Columns: []domain.Column{full.Columns[0], full.Columns[1], full.Columns[2], full.Columns[3], full.Columns[5], full.Columns[6]}}
	ref6 := SyntheticRef{DB: "db", Name: "t", Domain: dom}
	model := randomModel(t, dom, [][]int{{0, 1}, {1, 2}, {2, 3}, {4, 5}, {0, 5}}, 7)
	cache := NewModelCache(model, dom.Sizes(), 1<<16)
	j := explicitJoint(model, dom)
	rng := rand.New(rand.NewPCG(21, 22))
	groupable := []int{0, 1, 2, 4, 5} // not the binned inc
	checked := 0
	paths := map[string]int{} // how each query's counts were computed
	for iter := range 400 {
		var group []int
		for _, a := range groupable {
			if rng.IntN(3) == 0 {
				group = append(group, a)
			}
		}
		rng.Shuffle(len(group), func(x, y int) { group[x], group[y] = group[y], group[x] })
		var sel []string
		for _, a := range group {
			sel = append(sel, dom.Columns[a].Name())
		}
		type countItem struct {
			kind ColumnKind
			k    int64
		}
		items := []countItem{{kind: CountColumn}}
		countExpr := []string{"COUNT(*)", "count(*) AS n", "COUNT(*) AS `cnt`"}[rng.IntN(3)]
		exprs := append(slices.Clone(sel), countExpr)
		switch rng.IntN(5) {
		case 0:
			exprs = append(exprs, "COUNT(*) / (SELECT COUNT(*) FROM t) AS share")
			items = append(items, countItem{RatioColumn, 1})
		case 1:
			exprs = append(exprs, "100 * COUNT(*) / (SELECT COUNT(*) FROM db.t) AS pct")
			items = append(items, countItem{RatioColumn, 100})
		case 2:
			exprs = append(exprs, "COUNT(*) * 100.0 / (SELECT COUNT(1) FROM t) AS pf")
			items = append(items, countItem{ExprColumn, 100})
		}
		// Put the counts at a random position of the select list.
		pos := rng.IntN(len(sel) + 1)
		counts := exprs[len(sel):]
		exprs = append(append(append([]string{}, exprs[:pos]...), counts...), sel[pos:]...)
		text := "SELECT " + strings.Join(exprs, ", ") + " FROM t"
		var where sqlparser.Expr
		if rng.IntN(5) > 0 {
			text += " WHERE " + randPred(rng, dom, 3)
		}
		if len(group) > 0 {
			text += " GROUP BY " + strings.Join(sel, ", ")
		}
		var having string
		if rng.IntN(3) == 0 {
			having = []string{"COUNT(*) > 20", "COUNT(*) <= 5 OR COUNT(*) >= 100", "NOT COUNT(*) BETWEEN 10 AND 50", "COUNT(*) <> 0", "count(*) = NULL"}[rng.IntN(5)]
			text += " HAVING " + having
		}
		type key struct {
			col  int // select-list position
			desc bool
		}
		var order []key
		if rng.IntN(2) == 0 {
			var obs []string
			for range 1 + rng.IntN(2) {
				p := rng.IntN(len(exprs))
				desc := rng.IntN(2) == 0
				var s string
				switch {
				case rng.IntN(2) == 0:
					s = fmt.Sprint(p + 1)
				case p >= pos && p < pos+len(counts):
					s = "COUNT(*)"
					p = pos // COUNT(*) is the first count item
				default:
					s = strings.Fields(exprs[p])[0]
				}
				if desc {
					s += " DESC"
				} else if rng.IntN(2) == 0 {
					s += " ASC"
				}
				obs = append(obs, s)
				order = append(order, key{p, desc})
			}
			text += " ORDER BY " + strings.Join(obs, ", ")
		}
		limit, offset := -1, 0
		if rng.IntN(3) == 0 {
			limit = rng.IntN(6)
			if rng.IntN(2) == 0 {
				offset = rng.IntN(4)
				text += fmt.Sprintf(" LIMIT %d, %d", offset, limit)
			} else {
				text += fmt.Sprintf(" LIMIT %d", limit)
			}
		}

		mq, reason, ok := RouteSQL(text, ref6)
		if !ok {
			if strings.Contains(reason, "bin alignment") || strings.Contains(reason, "splits bin") {
				continue
			}
			t.Fatalf("iteration %d: %s\nnot routed: %s", iter, text, reason)
		}
		stmt, err := sqlparser.Parse(text)
		if err != nil {
			t.Fatal(err)
		}
		if w := stmt.(*sqlparser.Select).Where; w != nil {
			where = w.Expr
		}
		ref := bruteForce(t, j, dom, where, group)
		switch {
		case where == nil:
			paths["marginal"]++
		case mq.evidence != nil:
			paths["evidence"]++
		default:
			paths["joint"]++
		}
		var hv *havingNode
		if having != "" {
			hv = mq.having
		}

		for _, unrounded := range []bool{false, true} {
			for _, total := range []float64{0, 2500} {
				opts := &ExecOptions{Unrounded: unrounded, Total: total}
				src := ModelSource(model)
				if total > 0 {
					src = cache
				}
				cols, rows, err := mq.Execute(src, opts)
				if err != nil {
					t.Fatal(err)
				}
				if len(cols) != len(exprs) {
					t.Fatalf("%s: %d columns, want %d", text, len(cols), len(exprs))
				}
				scale, tot := 1.0, 1000.0
				if total > 0 {
					scale, tot = total/model.Total(), total
				}
				// The expected rows, by an independent pipeline.
				type refRow struct {
					codes []int
					c     float64
				}
				var want []refRow
				for _, g := range ref {
					c := g.count * scale
					if len(group) > 0 && math.Round(c) == 0 {
						continue
					}
					if !unrounded {
						c = math.Round(c)
					}
					if hv != nil && !havingRef(having, c) {
						continue
					}
					want = append(want, refRow{g.codes, c})
				}
				colOf := func(p int) (attrPos int, isGroup bool) {
					name := strings.Fields(exprs[p])[0]
					for k, a := range group {
						if dom.Columns[a].Name() == name {
							return k, true
						}
					}
					return 0, false
				}
				slices.SortStableFunc(want, func(x, y refRow) int {
					for _, o := range order {
						c := 0
						if k, isGroup := colOf(o.col); isGroup {
							col := &dom.Columns[group[k]]
							c = sqlCmp(col, groupValue(col, x.codes[k]), groupValue(col, y.codes[k]), x.codes[k], y.codes[k])
						} else {
							c = cmpFloat(x.c, y.c)
						}
						if o.desc {
							c = -c
						}
						if c != 0 {
							return c
						}
					}
					return 0
				})
				lo := min(offset, len(want))
				hi := len(want)
				if limit >= 0 {
					hi = min(lo+limit, len(want))
				}
				want = want[lo:hi]
				if len(rows) != len(want) {
					t.Fatalf("%s (unrounded %v, total %v): %d rows, want %d", text, unrounded, total, len(rows), len(want))
				}
				for r, w := range want {
					ci := 0
					for p, col := range cols {
						got := rows[r][p]
						switch col.Kind {
						case GroupColumn:
							k, _ := colOf(p)
							if wv := groupValue(&dom.Columns[group[k]], w.codes[k]); got != wv {
								t.Fatalf("%s row %d col %s: %#v, want %#v", text, r, col.Name, got, wv)
							}
						case CountColumn:
							if unrounded {
								if math.Abs(got.(float64)-w.c) > 1e-9*(1+w.c) {
									t.Fatalf("%s row %d: count %v, want %v", text, r, got, w.c)
								}
							} else if got != int64(w.c) {
								t.Fatalf("%s row %d: count %#v, want %v", text, r, got, w.c)
							}
							ci++
						case RatioColumn:
							k := items[1].k
							if unrounded {
								if want := float64(k) * w.c / tot; math.Abs(got.(float64)-want) > 1e-9*(1+want) {
									t.Fatalf("%s row %d: ratio %v, want %v", text, r, got, want)
								}
							} else if s, want := got.(decimal.Decimal).StringFixed(4), ratioString(k, int64(w.c), int64(tot)); s != want {
								t.Fatalf("%s row %d: ratio %v, want %v", text, r, s, want)
							}
						case ExprColumn:
							T := tot
							if !unrounded {
								T = math.Round(tot)
							}
							if want := 100 * w.c / T; math.Abs(got.(float64)-want) > 1e-9*(1+want) {
								t.Fatalf("%s row %d: expression %v, want %v", text, r, got, want)
							}
						}
					}
				}
			}
		}
		checked++
	}
	if checked < 250 {
		t.Errorf("only %d of 400 random queries were routed", checked)
	}
	t.Logf("%d queries checked: %v", checked, paths)
	if len(paths) != 3 {
		t.Errorf("counts computed by %v: want marginal, evidence and joint", paths)
	}
	if h, m := cache.Stats(); h == 0 || m == 0 {
		t.Errorf("cache hits %d, misses %d: want both", h, m)
	}
}

// havingRef evaluates the HAVING texts of TestRouteBruteForce directly.
func havingRef(h string, c float64) bool {
	switch h {
	case "COUNT(*) > 20":
		return c > 20
	case "COUNT(*) <= 5 OR COUNT(*) >= 100":
		return c <= 5 || c >= 100
	case "NOT COUNT(*) BETWEEN 10 AND 50":
		return !(c >= 10 && c <= 50)
	case "COUNT(*) <> 0":
		return c != 0
	case "count(*) = NULL":
		return false
	}
	panic("havingRef: " + h)
}

// groupValue decodes a group-by code independently of groupTables.
func groupValue(col *domain.Column, code int) any {
	if code == col.NullCode() {
		return nil
	}
	v, _ := col.Value(code)
	switch v.Type() {
	case domain.String:
		return v.Str()
	case domain.Int:
		return v.Int()
	}
	return v.Float()
}

// bigRef is a table of four columns of 200 values: three of them have
// 8·10^6 joint cells.
var bigRef = SyntheticRef{Name: "big", Domain: &domain.Table{Columns: []domain.Column{
	must(domain.NewIntRange("a", 0, 199, false)), must(domain.NewIntRange("b", 0, 199, false)),
	must(domain.NewIntRange("c", 0, 199, false)), must(domain.NewIntRange("d", 0, 199, false)),
}}}

// TestRouteReject checks that queries the model cannot answer are routed to
// the rows, with a reason that names the problem.
func TestRouteReject(t *testing.T) {
	for _, c := range []struct{ sql, reason string }{
		{"SELECT age FROM t GROUP BY age", "select COUNT(*)"},
		{"SELECT sex FROM t", "select COUNT(*)"},
		{"SELECT SUM(age) FROM t", "select columns, COUNT(*)"},
		{"SELECT COUNT(race) FROM t", "select columns, COUNT(*)"},
		{"SELECT COUNT(nope) FROM t", "select columns, COUNT(*)"},
		{"SELECT COUNT(DISTINCT age) FROM t", "select columns, COUNT(*)"},
		{"SELECT * FROM t", "select columns, COUNT(*)"},
		{"SELECT inc, COUNT(*) FROM t GROUP BY inc", "binned column inc"},
		{"SELECT hrs, COUNT(*) FROM t GROUP BY hrs", "binned column hrs"},
		{"SELECT COUNT(*) FROM t WHERE inc < 30", "splits bin"},
		{"SELECT COUNT(*) FROM t, u", "join"},
		{"SELECT COUNT(*) FROM u", "must query t"},
		{"SELECT COUNT(*) FROM other.t", "must query t"},
		{"SELECT COUNT(*) FROM t WHERE age IN (SELECT age FROM u)", "subqueries"},
		{"SELECT COUNT(*) FROM t WHERE sex LIKE 'a%'", "LIKE is not supported"},
		{"SELECT one, COUNT(*) FROM t GROUP BY one", "binned column one"},
		{"SELECT COUNT(*) FROM t WHERE age + 1 = 3", "column on one side"},
		{"SELECT COUNT(*) / (SELECT COUNT(*) FROM u) FROM t", "(SELECT COUNT(*) FROM t) and numeric literals"},
		{"SELECT COUNT(*) / (SELECT COUNT(*) FROM t WHERE age > 3) FROM t", "(SELECT COUNT(*) FROM t) and numeric literals"},
		{"SELECT COUNT(*) + age FROM t", "arithmetic on COUNT(*)"},
		{"SELECT COUNT(*) + '1' FROM t", "arithmetic on COUNT(*)"},
		{"SELECT SQRT(COUNT(*)) FROM t", "arithmetic on COUNT(*)"},
		{"SELECT 1 + 2 FROM t", "select COUNT(*)"},
		{"SELECT sex, COUNT(*) FROM t GROUP BY 2", "must name a selected column"},
		{"SELECT sex, COUNT(*) FROM t GROUP BY 3", "position 3"},
		{"SELECT sex AS s, COUNT(*) AS n FROM t GROUP BY n", "unknown column"},
		{"SELECT sex, 100 * COUNT(*) AS x FROM t GROUP BY sex ORDER BY 100 * COUNT(*)", "ORDER BY must name"},
		{"SELECT sex, COUNT(*) FROM t GROUP BY sex HAVING sex = 'F'", "HAVING must compare COUNT(*)"},
		{"SELECT sex, COUNT(*) FROM t GROUP BY sex HAVING COUNT(*) > 'x'", "HAVING must compare COUNT(*)"},
		{"SELECT sex, COUNT(*) FROM t GROUP BY sex HAVING SUM(age) > 1", "HAVING must compare COUNT(*)"},
		{"SELECT sex, COUNT(*) FROM t GROUP BY sex ORDER BY age", "ORDER BY must name"},
		{"SELECT sex, COUNT(*) FROM t GROUP BY sex ORDER BY 3", "position 3"},
		{"SELECT sex, COUNT(*) FROM t GROUP BY sex ORDER BY RAND()", "ORDER BY must name"},
		{"SELECT sex, COUNT(*) FROM t GROUP BY sex LIMIT ?", "integer literals"},
		{"SELECT sex, age, COUNT(*) FROM t GROUP BY sex", "not in GROUP BY"},
		{"SELECT COUNT(*) FROM t GROUP BY sex", "not in the select list"},
		{"SELECT COUNT(*) FROM t FOR UPDATE", "locking"},
		{"WITH x AS (SELECT 1) SELECT COUNT(*) FROM t", "WITH"},
		{"SELECT COUNT(*) FROM t UNION SELECT COUNT(*) FROM t", "not a simple SELECT"},
		{"SELECT SQL_CALC_FOUND_ROWS COUNT(*) FROM t", "query options"},
		{"SELECT nope, COUNT(*) FROM t GROUP BY nope", "unknown column"},
		{"SELECT COUNT(*) FROM big WHERE a = 1 OR b = 1 OR c = 1", "couples columns"},
	} {
		ref := synRef
		if strings.Contains(c.sql, "FROM big") {
			ref = bigRef
		}
		mq, reason, ok := RouteSQL(c.sql, ref)
		if ok {
			t.Errorf("%s: routed to the model (%s)", c.sql, mq.ExplainString())
			continue
		}
		if !strings.Contains(reason, c.reason) {
			t.Errorf("%s: reason %q does not mention %q", c.sql, reason, c.reason)
		}
	}
}

// TestRouteEquivalentForms: every phrasing of one count query is routed,
// and answers alike: GROUP BY positions and aliases, DISTINCT, COUNT of a
// literal or of a column without NULLs; arithmetic on COUNT(*) with any
// numeric literal is routed as an expression column, evaluated by
// ExecOptions.Eval when given and sorted by its values.
func TestRouteEquivalentForms(t *testing.T) {
	model := randomModel(t, synRef.Domain, [][]int{{0, 1}, {1, 2}, {2, 3, 7}, {4, 5}, {5, 6}, {0, 6}}, 5)
	run := func(q string, opts *ExecOptions) (*ModelQuery, [][]any) {
		t.Helper()
		mq, reason, ok := RouteSQL(q, synRef)
		if !ok {
			t.Fatalf("%s: not routed: %s", q, reason)
		}
		_, rows, err := mq.Execute(model, opts)
		if err != nil {
			t.Fatal(err)
		}
		return mq, rows
	}
	for _, forms := range [][]string{
		{"SELECT sex, COUNT(*) FROM t GROUP BY sex",
			"SELECT sex, COUNT(*) FROM t GROUP BY 1",
			"SELECT sex AS s, COUNT(*) FROM t GROUP BY s",
			"SELECT t.sex AS s, COUNT(*) FROM t GROUP BY (s)",
			"SELECT DISTINCT sex, COUNT(*) FROM t GROUP BY sex",
			"SELECT sex, COUNT(1) FROM t GROUP BY sex",
			"SELECT sex, count('x') FROM t GROUP BY sex",
			"SELECT sex, COUNT(age) FROM t GROUP BY sex",
			"SELECT sex, COUNT(t.sex) FROM t GROUP BY sex"},
		{"SELECT race, age, COUNT(*) FROM t WHERE sex = 'F' GROUP BY race, age ORDER BY 3 DESC, 1, 2 LIMIT 5",
			"SELECT race AS r, age AS a, COUNT(*) AS n FROM t WHERE sex = 'F' GROUP BY a, r ORDER BY n DESC, r, a LIMIT 5",
			"SELECT race, age, COUNT(*) FROM t WHERE sex = 'F' GROUP BY 2, 1 ORDER BY COUNT(1) DESC, race, age LIMIT 5"},
	} {
		_, want := run(forms[0], nil)
		for _, q := range forms[1:] {
			if _, got := run(q, nil); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s = %v\n%s = %v", q, got, forms[0], want)
			}
		}
	}

	// Arithmetic on counts, with any numeric literal.
	_, counts := run("SELECT race, COUNT(*) FROM t GROUP BY race", nil)
	_, total := run("SELECT COUNT(*) FROM t", nil)
	T := float64(total[0][0].(int64))
	for _, c := range []struct {
		q string
		f func(n float64) float64
	}{
		{"SELECT race, 100.0 * COUNT(*) / (SELECT COUNT(*) FROM t) FROM t GROUP BY race", func(n float64) float64 { return 100 * n / T }},
		{"SELECT race, COUNT(*) / (SELECT COUNT(*) FROM t) * 100 FROM t GROUP BY race", func(n float64) float64 { return n / T * 100 }},
		{"SELECT race, 2.5 * COUNT(*) FROM t GROUP BY race", func(n float64) float64 { return 2.5 * n }},
		{"SELECT race, COUNT(*) + 1 FROM t GROUP BY race", func(n float64) float64 { return n + 1 }},
		{"SELECT race, -COUNT(*) DIV 7 FROM t GROUP BY race", func(n float64) float64 { return math.Trunc(-n / 7) }},
		{"SELECT race, MOD(COUNT(1), 7) FROM t GROUP BY race", func(n float64) float64 { return math.Mod(n, 7) }},
		{"SELECT race, ROUND(100 * COUNT(*) / (SELECT COUNT(*) FROM db.t), 1) FROM t GROUP BY race", func(n float64) float64 { return math.Round(1000*n/T) / 10 }},
		{"SELECT race, (SELECT COUNT(*) FROM t) - COUNT(*) FROM t GROUP BY race", func(n float64) float64 { return T - n }},
	} {
		mq, rows := run(c.q, nil)
		if mq.Columns[1].Kind != ExprColumn {
			t.Errorf("%s: column kind %v", c.q, mq.Columns[1].Kind)
		}
		if len(rows) != len(counts) {
			t.Fatalf("%s: %d rows, want %d", c.q, len(rows), len(counts))
		}
		for i, r := range rows {
			if want := c.f(float64(counts[i][1].(int64))); math.Abs(r[1].(float64)-want) > 1e-9 || r[0] != counts[i][0] {
				t.Errorf("%s row %d: %v, want %v %v", c.q, i, r, counts[i][0], want)
			}
		}
	}
	// Division by zero is NULL.
	if _, rows := run("SELECT COUNT(*) / 0 FROM t", nil); rows[0][0] != nil {
		t.Errorf("COUNT(*) / 0 = %v", rows[0][0])
	}

	// Eval computes expression columns, and ORDER BY sorts by its values.
	q := "SELECT race, 1000 - COUNT(*) AS x, 2 * COUNT(*) FROM t GROUP BY race ORDER BY x, COUNT(*) DESC"
	var calls []int
	opts := &ExecOptions{Eval: func(col int, count, total float64) (any, error) {
		calls = append(calls, col)
		if col == 1 {
			return decimal.NewFromFloat(1000 - count), nil
		}
		return int64(2 * count), nil
	}}
	_, rows := run(q, opts)
	for i := 1; i < len(rows); i++ {
		if rows[i-1][1].(decimal.Decimal).GreaterThan(rows[i][1].(decimal.Decimal)) {
			t.Errorf("%s: rows %v not sorted by x", q, rows)
		}
	}
	if !slices.Contains(calls, 1) || !slices.Contains(calls, 2) {
		t.Errorf("Eval called for columns %v", calls)
	}
	byCount := slices.Clone(counts)
	slices.SortStableFunc(byCount, func(a, b []any) int { return cmpFloat(float64(b[1].(int64)), float64(a[1].(int64))) })
	for i, r := range rows {
		if r[0] != byCount[i][0] || r[2] != 2*byCount[i][1].(int64) {
			t.Errorf("%s row %d: %v, want group %v of count %v", q, i, r, byCount[i][0], byCount[i][1])
		}
	}
}

// TestRouteLike: LIKE on text columns is routed when the reference gives a
// matcher, per code and with NULL UNKNOWN, and answers as the equivalent
// IN list does.
func TestRouteLike(t *testing.T) {
	model := randomModel(t, synRef.Domain, [][]int{{0, 1}, {1, 2}, {2, 3, 7}, {4, 5}, {5, 6}, {0, 6}}, 5)
	ref := synRef
	var escapes []rune
	ref.Like = func(attr int, pattern string, escape rune) (func(string) bool, error) {
		if attr != 0 && attr != 1 {
			t.Errorf("LIKE matcher asked for attribute %d", attr)
		}
		escapes = append(escapes, escape)
		// A test matcher: ASCII case-insensitive, % and _ only.
		var b strings.Builder
		b.WriteString("(?is)^")
		for _, r := range pattern {
			switch r {
			case '%':
				b.WriteString(".*")
			case '_':
				b.WriteString(".")
			default:
				b.WriteString(regexp.QuoteMeta(string(r)))
			}
		}
		re, err := regexp.Compile(b.String() + "$")
		if err != nil {
			return nil, err
		}
		return re.MatchString, nil
	}
	answer := func(q string, r SyntheticRef) string {
		t.Helper()
		mq, reason, ok := RouteSQL(q, r)
		if !ok {
			t.Fatalf("%s: not routed: %s", q, reason)
		}
		_, rows, err := mq.Execute(model, nil)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(rows)
	}
	for like, in := range map[string]string{
		"sex LIKE 'f%'":                         "sex IN ('F')",
		"sex NOT LIKE 'F'":                      "sex IN ('M')",
		"race LIKE '_' AND sex LIKE '%'":        "race IS NOT NULL",
		"race NOT LIKE 'b' OR sex LIKE 'x%'":    "race IN ('a', 'c')",
		"race LIKE NULL OR race LIKE 'A' ":      "race = 'a'",
		"race LIKE 'c|%' ESCAPE '|' OR age > 3": "age > 3",
	} {
		q := "SELECT age, COUNT(*) FROM t WHERE %s GROUP BY age"
		if got, want := answer(fmt.Sprintf(q, like), ref), answer(fmt.Sprintf(q, in), synRef); got != want {
			t.Errorf("WHERE %s: %s\nWHERE %s: %s", like, got, in, want)
		}
	}
	if !slices.Contains(escapes, '|') || !slices.Contains(escapes, '\\') {
		t.Errorf("escapes %q", escapes)
	}
	for q, reason := range map[string]string{
		"SELECT COUNT(*) FROM t WHERE age LIKE '1%'":             "text columns only",
		"SELECT COUNT(*) FROM t WHERE 'F' LIKE sex":              "LIKE is not supported",
		"SELECT COUNT(*) FROM t WHERE sex LIKE race":             "quoted string pattern",
		"SELECT COUNT(*) FROM t WHERE sex LIKE 'F' ESCAPE 'ab'":  "one-character",
		"SELECT COUNT(*) FROM t WHERE sex LIKE CONCAT('F', '%')": "quoted string pattern",
	} {
		if _, got, ok := RouteSQL(q, ref); ok || !strings.Contains(got, reason) {
			t.Errorf("%s: routed %v, reason %q, want %q", q, ok, got, reason)
		}
	}
}

// TestRouteShape checks column names and kinds, the explain text, and a few
// hand-computed answers on a model with a known joint.
func TestRouteShape(t *testing.T) {
	mq, reason, ok := RouteSQL("SELECT t.race AS r, count(*), 100*COUNT(*)/(SELECT COUNT(*) FROM t) pct FROM db.t WHERE sex = 'F' AND age >= 3 GROUP BY race ORDER BY 2 DESC LIMIT 2", synRef)
	if !ok {
		t.Fatal(reason)
	}
	want := []ResultColumn{{Name: "r", Kind: GroupColumn, Attr: 1}, {Name: "count(*)", Kind: CountColumn}, {Name: "pct", Kind: RatioColumn, Scale: 4}}
	if !slices.Equal(mq.Columns, want) {
		t.Errorf("columns %+v, want %+v", mq.Columns, want)
	}
	ex := mq.ExplainString()
	for _, s := range []string{"db.t", "by (race)", "as evidence", "order by", "limit 2"} {
		if !strings.Contains(ex, s) {
			t.Errorf("explain %q lacks %q", ex, s)
		}
	}
	if _, reason, ok := RouteSQL("SELECT COUNT(*) FROM t", SyntheticRef{Name: "t"}); ok || !strings.Contains(reason, "no domain") {
		t.Errorf("table without a domain: routed %v, reason %q", ok, reason)
	}
	mq2, _, ok := RouteSQL("SELECT COUNT(*) FROM t WHERE sex = 'F' OR age >= 3", synRef)
	if !ok || !strings.Contains(mq2.ExplainString(), "from the marginal on sex, age") {
		t.Errorf("coupled predicate: explain %q", mq2.ExplainString())
	}

	// A uniform model over sex × race (2 × 4 codes, total 800): 100 each.
	f := &fixedModel{attrs: []int{0, 1}, sizes: []int{2, 4}, p: []float64{100, 100, 100, 100, 100, 100, 100, 100}}
	dom := &domain.Table{Columns: synRef.Domain.Columns[:2]}
	ref := SyntheticRef{Name: "t", Domain: dom}
	mq, reason, ok = RouteSQL("SELECT race, COUNT(*) AS n, COUNT(*)/(SELECT COUNT(*) FROM t) FROM t WHERE sex = 'F' GROUP BY race ORDER BY race DESC", ref)
	if !ok {
		t.Fatal(reason)
	}
	_, rows, err := mq.Execute(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	// ENUM order c, b, a, then NULL last in DESC; 100/800 = 0.1250.
	wantRows := [][]any{{"c", int64(100)}, {"b", int64(100)}, {"a", int64(100)}, {nil, int64(100)}}
	if len(rows) != len(wantRows) {
		t.Fatalf("%d rows, want %d", len(rows), len(wantRows))
	}
	for i, w := range wantRows {
		if rows[i][0] != w[0] || rows[i][1] != w[1] || rows[i][2].(decimal.Decimal).String() != "0.125" {
			t.Errorf("row %d: %v, want %v and 0.125", i, rows[i], w)
		}
	}
	// COUNT(*) without GROUP BY returns one row even when it is 0.
	mq, _, _ = RouteSQL("SELECT COUNT(*) FROM t WHERE race IN ('zz')", ref)
	_, rows, _ = mq.Execute(f, nil)
	if len(rows) != 1 || rows[0][0] != int64(0) {
		t.Errorf("empty count: %v, want one row of 0", rows)
	}
	// An empty model: ratios are NULL, groups are omitted.
	empty := &fixedModel{attrs: []int{0, 1}, sizes: []int{2, 4}, p: make([]float64, 8)}
	mq, _, _ = RouteSQL("SELECT COUNT(*), COUNT(*) / (SELECT COUNT(*) FROM t) FROM t", ref)
	if _, rows, _ = mq.Execute(empty, nil); len(rows) != 1 || rows[0][0] != int64(0) || rows[0][1] != nil {
		t.Errorf("empty model: %v, want [0 NULL]", rows)
	}
}

// fixedModel is a ModelSource over an explicit joint on attrs.
type fixedModel struct {
	attrs, sizes []int
	p            []float64
}

func (f *fixedModel) Total() float64 {
	s := 0.0
	for _, v := range f.p {
		s += v
	}
	return s
}

func (f *fixedModel) Marginal(attrs []int) []float64 { return f.MarginalWhere(attrs, nil) }

func (f *fixedModel) MarginalWhere(attrs []int, weight map[int][]float64) []float64 {
	n := 1
	for _, a := range attrs {
		n *= f.sizes[slices.Index(f.attrs, a)]
	}
	out := make([]float64, n)
	code := make([]int, len(f.attrs))
	for _, p := range f.p {
		for k, a := range f.attrs {
			if w, ok := weight[a]; ok {
				p *= w[code[k]]
			}
		}
		i := 0
		for _, a := range attrs {
			k := slices.Index(f.attrs, a)
			i = i*f.sizes[k] + code[k]
		}
		out[i] += p
		for k := len(code) - 1; k >= 0; k-- {
			code[k]++
			if code[k] < f.sizes[k] {
				break
			}
			code[k] = 0
		}
	}
	return out
}

// countingModel counts the calls that reach the model.
type countingModel struct {
	ModelSource
	calls atomic.Int64
}

func (c *countingModel) Marginal(attrs []int) []float64 {
	c.calls.Add(1)
	return c.ModelSource.Marginal(attrs)
}

func (c *countingModel) MarginalWhere(attrs []int, w map[int][]float64) []float64 {
	c.calls.Add(1)
	return c.ModelSource.MarginalWhere(attrs, w)
}

// TestModelCache checks that the cache computes each marginal once under
// concurrent use, keys evidence apart, and evicts least recently used
// marginals beyond its capacity.
func TestModelCache(t *testing.T) {
	dom := testDomain()
	cm := &countingModel{ModelSource: randomModel(t, dom, [][]int{{0, 1}, {1, 2}, {2, 3, 7}, {4, 5}, {5, 6}, {0, 6}}, 9)}
	cache := NewModelCache(cm, dom.Sizes(), 100)
	queries := []string{
		"SELECT sex, race, COUNT(*) FROM t GROUP BY sex, race",                    // 8 cells
		"SELECT sex, race, COUNT(*) FROM t WHERE age > 4 GROUP BY sex, race",      // 8, evidence
		"SELECT sex, race, COUNT(*) FROM t WHERE age > 5 GROUP BY sex, race",      // 8, other evidence
		"SELECT age, g, COUNT(*) FROM t GROUP BY age, g",                          // 40
		"SELECT race, sex, COUNT(*) FROM t GROUP BY race, sex ORDER BY 3 LIMIT 1", // 8, other order
	}
	want := make([][][]any, len(queries))
	mqs := make([]*ModelQuery, len(queries))
	for i, q := range queries {
		mq, reason, ok := RouteSQL(q, synRef)
		if !ok {
			t.Fatal(reason)
		}
		mqs[i] = mq
		_, want[i], _ = mq.Execute(cm.ModelSource, nil)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range 20 {
				i := (g + r) % len(queries)
				_, rows, err := mqs[i].Execute(cache, nil)
				if err != nil {
					t.Error(err)
					return
				}
				if fmt.Sprint(rows) != fmt.Sprint(want[i]) {
					t.Errorf("%s: cached %v, want %v", queries[i], rows, want[i])
				}
			}
		}()
	}
	wg.Wait()
	// The last query's marginal is the first's transposed: it is summed
	// down from it when that one is cached first.
	if n := cm.calls.Load(); n < int64(len(queries)-1) || n > int64(len(queries)) {
		t.Errorf("%d model calls for %d distinct marginals", n, len(queries))
	}
	// 8+8+8+40+8 = 72 cells fit in 100; 30 more evict the least recently
	// used marginals.
	mq, _, _ := RouteSQL("SELECT age, flag, COUNT(*) FROM t GROUP BY age, flag", synRef) // 30 cells
	if _, _, err := mq.Execute(cache, nil); err != nil {
		t.Fatal(err)
	}
	cache.mu.Lock()
	cells, entries := cache.cells, len(cache.entries)
	cache.mu.Unlock()
	if cells > 100 || cells != sumCells(cache) || entries >= len(queries)+1 {
		t.Errorf("cache holds %d cells in %d entries, capacity 100", cells, entries)
	}
	before := cm.calls.Load()
	if _, _, err := mq.Execute(cache, nil); err != nil || cm.calls.Load() != before {
		t.Errorf("the most recent marginal was evicted (%v)", err)
	}
	big := NewModelCache(cm, dom.Sizes(), 10)
	mq, _, _ = RouteSQL("SELECT age, g, COUNT(*) FROM t GROUP BY age, g", synRef)
	before = cm.calls.Load()
	mq.Execute(big, nil)
	mq.Execute(big, nil)
	if got := cm.calls.Load() - before; got != 2 {
		t.Errorf("a marginal above capacity was computed %d times for 2 queries, want 2 (not cached)", got)
	}
}

// TestModelCacheSumDown checks that a marginal contained in a cached one is
// summed down from it, in any attribute order, without asking the model.
func TestModelCacheSumDown(t *testing.T) {
	dom := testDomain()
	model := randomModel(t, dom, [][]int{{0, 1}, {1, 2}, {2, 3, 7}, {4, 5}, {5, 6}, {0, 6}}, 3)
	cm := &countingModel{ModelSource: model}
	cache := NewModelCache(cm, dom.Sizes(), 0)
	cache.Marginal([]int{2, 5, 0})
	cache.Marginal([]int{5, 0, 2, 1}) // a larger superset: not preferred
	cache.MarginalWhere([]int{0}, map[int][]float64{1: {1, 0, 1, 1}})
	before := cm.calls.Load()
	for _, sub := range [][]int{{0, 2}, {2, 0}, {5}, {5, 2, 0}, {0, 5, 2}} {
		got := cache.Marginal(sub)
		want := model.Marginal(sub)
		for i := range want {
			if math.Abs(got[i]-want[i]) > 1e-9*(1+want[i]) {
				t.Fatalf("%v cell %d: summed down %v, model %v", sub, i, got[i], want[i])
			}
		}
	}
	if n := cm.calls.Load() - before; n != 0 {
		t.Errorf("%d model calls for marginals inside a cached one", n)
	}
	// Evidence results are never summed down; unrelated sets go to the model.
	cache.MarginalWhere([]int{0}, map[int][]float64{1: {1, 0, 1, 0}})
	cache.Marginal([]int{3, 4})
	if n := cm.calls.Load() - before; n != 2 {
		t.Errorf("%d model calls, want 2", n)
	}
}

func sumCells(c *ModelCache) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for e := c.lru.Front(); e != nil; e = e.Next() {
		n += len(e.Value.(*cacheEntry).x)
	}
	return n
}

func TestRouteErrorsAreRejections(t *testing.T) {
	// Compilation errors from the workload compiler keep their kind.
	_, err := (&router{syn: synRef, sel: mustSelect(t, "SELECT nope, COUNT(*) FROM t GROUP BY nope")}).route()
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindUnknownColumn {
		t.Errorf("unknown column: %v", err)
	}
}

func mustSelect(t *testing.T, q string) *sqlparser.Select {
	t.Helper()
	stmt, err := sqlparser.Parse(q)
	if err != nil {
		t.Fatal(err)
	}
	return stmt.(*sqlparser.Select)
}

// FuzzRoute checks that routing never panics and that whatever it routes
// executes on a model with rows of the declared shape.
func FuzzRoute(f *testing.F) {
	for _, s := range append(slices.Clone(fuzzSeeds),
		"SELECT race AS r, COUNT(*) n, 100 * COUNT(*) / (SELECT COUNT(*) FROM t) FROM t GROUP BY race HAVING n > 3 ORDER BY n DESC, 1 LIMIT 2, 3",
		"SELECT COUNT(*) / (SELECT COUNT(*) FROM db.t) FROM t WHERE age > 3 OR sex = 'F'",
		"SELECT sex, COUNT(*) FROM t GROUP BY sex HAVING NOT COUNT(*) BETWEEN NULL AND 4 LIMIT 1 OFFSET 1",
		"SELECT sex AS s, ROUND(-COUNT(1) DIV 3 % 2.5 / (SELECT COUNT(*) FROM t), 2) x FROM t GROUP BY s ORDER BY x DESC",
		"SELECT DISTINCT race, TRUNCATE(COUNT(age) * 1e2, -1) FROM t GROUP BY 1 ORDER BY COUNT(*)",
	) {
		f.Add(s)
	}
	model := randomModel(f, synRef.Domain, [][]int{{0, 1}, {1, 2}, {2, 3, 7}, {4, 5}, {5, 6}, {0, 6}}, 5)
	f.Fuzz(func(t *testing.T, text string) {
		mq, reason, ok := RouteSQL(text, synRef)
		if !ok {
			if reason == "" {
				t.Fatal("rejected without a reason")
			}
			return
		}
		if mq.ExplainString() == "" {
			t.Fatal("empty explain")
		}
		for _, opts := range []*ExecOptions{nil, {Unrounded: true}} {
			cols, rows, err := mq.Execute(model, opts)
			if err != nil {
				t.Fatal(err)
			}
			if mq.limit >= 0 && int64(len(rows)) > mq.limit {
				t.Fatalf("%d rows over LIMIT %d", len(rows), mq.limit)
			}
			for _, row := range rows {
				if len(row) != len(cols) {
					t.Fatalf("row %v for %d columns", row, len(cols))
				}
			}
		}
	})
}
