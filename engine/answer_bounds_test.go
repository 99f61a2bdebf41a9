package engine

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/dolthub/vitess/go/mysql"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/bounds"
	"github.com/dpsql/dpsql/synth/pgm"
)

// TestShowErrorBounds checks SHOW ERROR BOUNDS and its CALL twin against
// the bounds package run on the stored release, and their errors.
func TestShowErrorBounds(t *testing.T) {
	f := newAnswerFixture(t)
	rec, modelBlob, relBlob := f.record("syn", "p")
	m, err := pgm.UnmarshalModel(modelBlob)
	if err != nil {
		t.Fatal(err)
	}
	res, err := synth.UnmarshalRelease(relBlob)
	if err != nil {
		t.Fatal(err)
	}
	res.Model = m
	var w []synth.Marginal
	for _, q := range rec.Workload {
		w = append(w, synth.Marginal{Attrs: q.Attrs, Weight: q.Weight})
	}
	rel := bounds.FromResult("aim", res, w)

	for _, tc := range []struct {
		query string
		conf  float64
	}{
		{"SHOW ERROR BOUNDS FOR syn.p", 0.95},
		{"SHOW ERROR BOUNDS FOR syn.p CONFIDENCE 0.5", 0.5},
		{"CALL dpsql_show_error_bounds('syn.p')", 0.95},
		{"CALL dpsql_show_error_bounds('syn.p', 0.99)", 0.99},
	} {
		t.Run(tc.query, func(t *testing.T) {
			want, err := bounds.Marginals(context.Background(), rel, tc.conf)
			if err != nil {
				t.Fatal(err)
			}
			got := f.rows(tc.query)
			if len(got) != len(want) || len(got) != 3 {
				t.Fatalf("%d rows %v, want %d (the 2-way workload)", len(got), got, len(want))
			}
			for i, mb := range want {
				names := make([]string, len(mb.Attrs))
				for j, a := range mb.Attrs {
					names[j] = rec.Domain.Columns[a].Name()
				}
				r := got[i]
				if r[0] != strings.Join(names, ", ") || r[1] != mb.Weight || r[2] != mb.L1 ||
					r[3] != support(mb.Supported) || toInt(r[4]) != int64(mb.Round) {
					t.Errorf("row %d = %v, want %+v (%v)", i, r, mb, names)
				}
				if l1 := r[2].(float64); !(l1 > 0 && l1 <= 2) {
					t.Errorf("row %d: L1 bound %g outside (0, 2]", i, l1)
				}
			}
		})
	}
	// A higher confidence never gives a smaller bound.
	lo, hi := f.rows("SHOW ERROR BOUNDS FOR syn.p CONFIDENCE 0.5"), f.rows("SHOW ERROR BOUNDS FOR syn.p CONFIDENCE 0.99")
	for i := range lo {
		if lo[i][2].(float64) > hi[i][2].(float64) {
			t.Errorf("%v: bound at 0.5 %v above bound at 0.99 %v", lo[i][0], lo[i][2], hi[i][2])
		}
	}

	for _, tc := range []struct {
		query   string
		code    int
		message string
	}{
		{"SHOW ERROR BOUNDS FOR syn.m", ErrNoBounds.Code(), "no bounds for mechanism mst"},
		{"CALL dpsql_show_error_bounds('syn.m')", ErrNoBounds.Code(), "no bounds for mechanism mst"},
		{"SHOW ERROR BOUNDS FOR raw.people", ErrNoBounds.Code(), "not a synthetic table"},
		{"SHOW ERROR BOUNDS FOR syn.nothere", mysql.ERNoSuchTable, ""},
		{"SHOW ERROR BOUNDS FOR syn.p CONFIDENCE 1", mysql.ERParseError, "confidence"},
		{"CALL dpsql_show_error_bounds('syn.p', 1.5)", ErrBadParameter.Code(), "between 0 and 1"},
		{"CALL dpsql_show_error_bounds('syn.p', 0)", ErrBadParameter.Code(), "between 0 and 1"},
		{"CALL dpsql_show_error_bounds('syn.', 0.9)", ErrBadParameter.Code(), "invalid table name"},
	} {
		t.Run(tc.query, func(t *testing.T) {
			_, _, err := query(f.e, f.root, tc.query)
			if errCode(err) != tc.code || !strings.Contains(fmt.Sprint(err), tc.message) {
				t.Errorf("error %v (code %d), want code %d with %q", err, errCode(err), tc.code, tc.message)
			}
		})
	}
}

// TestDPMarginal checks dp_marginal's cells against the model's marginal
// and the bounds package, and its argument errors.
func TestDPMarginal(t *testing.T) {
	f := newAnswerFixture(t)
	m, dom, _ := f.model("p")
	f.root.SetCurrentDatabase("syn")
	boundRows := map[string]string{}
	for _, r := range f.rows("SHOW ERROR BOUNDS FOR syn.p") {
		boundRows[r[0].(string)] = r[3].(string)
	}

	for _, tc := range []struct {
		query string
		attrs []int
	}{
		{"SELECT * FROM dp_marginal('syn.p', 'sex', 'city')", []int{0, 2}},
		{"SELECT * FROM dp_marginal('p', 'CITY', 'sex', 0.5)", []int{2, 0}},
		{"SELECT * FROM dp_marginal('syn.p', 'age')", []int{1}},
	} {
		t.Run(tc.query, func(t *testing.T) {
			sch, got, err := query(f.e, f.root, tc.query)
			if err != nil {
				t.Fatal(err)
			}
			k := len(tc.attrs)
			names := []string{}
			for _, a := range tc.attrs {
				names = append(names, dom.Columns[a].Name())
			}
			wantCols := append(append([]string{}, names...), "estimate", "lower", "upper", "support")
			for i, c := range sch {
				if c.Name != wantCols[i] {
					t.Errorf("column %d = %s, want %s", i, c.Name, wantCols[i])
				}
			}
			marg := m.Marginal(tc.attrs)
			if len(got) != len(marg) {
				t.Fatalf("%d rows, want %d cells", len(got), len(marg))
			}
			codes := make([]int, k)
			for i, r := range got {
				rest := i
				for j := k - 1; j >= 0; j-- {
					n := dom.Columns[tc.attrs[j]].Size()
					codes[j], rest = rest%n, rest/n
				}
				for j, a := range tc.attrs {
					v, ok := dom.Columns[a].Value(codes[j])
					want := any(nil)
					if ok {
						want = v.Any()
					}
					if a == 0 && want != nil { // ENUM: its 1-based index in process
						want = uint16(codes[j] + 1)
					}
					if fmt.Sprint(r[j]) != fmt.Sprint(want) {
						t.Errorf("row %d column %s = %v, want %v", i, names[j], r[j], want)
					}
				}
				est, lo, up := r[k].(float64), r[k+1].(float64), r[k+2].(float64)
				if math.Abs(est-marg[i]) > 1e-9*math.Max(1, marg[i]) || lo < 0 || lo > up {
					t.Errorf("row %d = %v, model estimate %g", i, r, marg[i])
				}
			}
		})
	}

	// Support agrees with SHOW ERROR BOUNDS, and a higher confidence
	// widens every interval.
	narrow := f.rows("SELECT * FROM dp_marginal('syn.p', 'sex', 'city', 0.5)")
	wide := f.rows("SELECT * FROM dp_marginal('syn.p', 'sex', 'city', 0.99)")
	for i := range narrow {
		if narrow[i][5] != boundRows["sex, city"] {
			t.Errorf("support %v, SHOW ERROR BOUNDS says %v", narrow[i][5], boundRows["sex, city"])
		}
		wn := narrow[i][4].(float64) - narrow[i][3].(float64)
		ww := wide[i][4].(float64) - wide[i][3].(float64)
		if wn > ww+1e-9 {
			t.Errorf("cell %d: width %g at 0.5, %g at 0.99", i, wn, ww)
		}
	}
	// It composes with SQL like any table.
	if got := f.rows("SELECT SUM(estimate) FROM dp_marginal('syn.p', 'sex') WHERE lower >= 0"); math.Abs(got[0][0].(float64)-m.Total()) > 1e-6*m.Total() {
		t.Errorf("sum of estimates %v, model total %g", got, m.Total())
	}

	for _, tc := range []struct {
		query string
		code  int
	}{
		{"SELECT * FROM dp_marginal('syn.p', 'nope')", mysql.ERBadFieldError},
		{"SELECT * FROM dp_marginal('syn.p', 'sex', 'sex')", ErrBadParameter.Code()},
		{"SELECT * FROM dp_marginal('syn.p', 'sex', 1.5)", ErrBadParameter.Code()},
		{"SELECT * FROM dp_marginal('syn.p', 'sex', 0)", ErrBadParameter.Code()},
		{"SELECT * FROM dp_marginal('syn.p')", mysql.ERWrongArguments},
		{"SELECT * FROM dp_marginal('syn.p', 0.9, 'sex')", mysql.ERWrongArguments},
		{"SELECT * FROM dp_marginal('syn.p', CONCAT('se', 'x'))", mysql.ERWrongArguments},
		{"SELECT * FROM dp_marginal('syn.m', 'sex')", ErrNoBounds.Code()},
		{"SELECT * FROM dp_marginal('syn.p', 'sex', 'age', 'city')", ErrNoBounds.Code()}, // neither measured nor a candidate
		{"SELECT * FROM dp_marginal('syn.nothere', 'sex')", mysql.ERNoSuchTable},
		{"SELECT * FROM dp_marginal('raw.people', 'sex')", ErrNoBounds.Code()},
	} {
		t.Run(tc.query, func(t *testing.T) {
			_, _, err := query(f.e, f.root, tc.query)
			if errCode(err) != tc.code {
				t.Errorf("error %v (code %d), want code %d", err, errCode(err), tc.code)
			}
		})
	}
}

// TestAnswerPrivileges: reading a synthetic table from its model, its
// EXPLAIN, its error bounds and its marginals all need SELECT on it. The
// SQL paths (SELECT, EXPLAIN) fail exactly as reading the rows does; the
// dpsql ones (error bounds, dp_marginal) as for a missing table, like every
// DP statement on a table the user may not use.
func TestAnswerPrivileges(t *testing.T) {
	f := newAnswerFixture(t)
	f.exec("CREATE USER ana IDENTIFIED BY 'pw'")
	ana := sessionCtx(f.e, 5, "ana", localhost)
	ana.SetCurrentDatabase("syn")

	paths := func(table string) []string {
		return []string{
			"SELECT sex, COUNT(*) FROM " + table + " GROUP BY sex",                 // routed
			"SELECT COUNT(*) / (SELECT COUNT(*) FROM " + table + ") FROM " + table, // routed
			"SELECT sex, MAX(age) FROM " + table + " GROUP BY sex",                 // rows
			"EXPLAIN SELECT COUNT(*) FROM " + table,                                // model explain
			"EXPLAIN SELECT MAX(age) FROM " + table,                                // rows explain
			"SHOW ERROR BOUNDS FOR " + table,                                       // bounds
			"CALL dpsql_show_error_bounds('" + table + "')",                        // its twin
			"SELECT * FROM dp_marginal('" + table + "', 'sex')",                    // cells
		}
	}
	const sqlPaths = 5
	denied := func(table string) {
		t.Helper()
		_, _, rowsErr := query(f.e, ana, "SELECT * FROM "+table)
		if rowsErr == nil {
			t.Fatalf("ana reads %s", table)
		}
		for i, q := range paths(table) {
			_, rows, err := query(f.e, ana, q)
			want := errCode(rowsErr)
			if i >= sqlPaths && (errCode(err) == mysql.ERNoSuchTable || !strings.Contains(rowsErr.Error(), "to database")) {
				// (When the current database itself is refused, GMS
				// refuses a CALL or table function before it runs.)
				want = mysql.ERNoSuchTable
			}
			switch {
			case err == nil:
				t.Errorf("ana: %s succeeded: %v", q, rows)
			case errCode(err) != want || i < sqlPaths && err.Error() != rowsErr.Error():
				t.Errorf("ana: %s: %v (code %d), want code %d (reading the rows: %v)", q, err, errCode(err), want, rowsErr)
			case strings.Contains(err.Error(), "model") || strings.Contains(err.Error(), "aim"):
				t.Errorf("ana: %s: the error says more than a missing table: %v", q, err)
			}
		}
	}
	// No privilege at all on the database.
	denied("syn.p")

	// SELECT on syn.r: it is readable on every path; syn.p, in the same
	// database, is still refused on every path.
	f.exec("GRANT SELECT ON syn.r TO ana")
	denied("syn.p")
	for _, q := range paths("syn.r") {
		if _, _, err := query(f.e, ana, q); err != nil {
			t.Errorf("ana: %s: %v", q, err)
		}
	}
	// The analyst gets the model's answer, not the rows'.
	_, got, err := query(f.e, ana, "EXPLAIN SELECT sex, COUNT(*) FROM syn.r GROUP BY sex")
	if err != nil || !strings.HasPrefix(got[0][0].(string), "answered from model") {
		t.Errorf("ana's EXPLAIN = %v, %v", got, err)
	}
	f.exec("REVOKE SELECT ON syn.r FROM ana")
	denied("syn.r")
}

// TestQueryBoundsAIM checks dpsql_query_bounds on AIM tables against the
// bounds package run on the stored release (range and equality queries on
// the default 2-way workload), the ROWS scaling, and MST's refusal.
func TestQueryBoundsAIM(t *testing.T) {
	f := newAnswerFixture(t)
	_, modelBlob, relBlob := f.record("syn", "p")
	m, err := pgm.UnmarshalModel(modelBlob)
	if err != nil {
		t.Fatal(err)
	}
	res, err := synth.UnmarshalRelease(relBlob)
	if err != nil {
		t.Fatal(err)
	}
	res.Model = m
	rec, _, _ := f.record("syn", "p")
	var w []synth.Marginal
	for _, q := range rec.Workload {
		w = append(w, synth.Marginal{Attrs: q.Attrs, Weight: q.Weight})
	}
	a, err := bounds.Analyze(bounds.FromResult("aim", res, w))
	if err != nil {
		t.Fatal(err)
	}
	// sex (0, 2 values) by age (1, ≤ 4): the prefix over age's codes.
	rows := f.rows("CALL dpsql_query_bounds('syn.p', 'SELECT sex, COUNT(*) FROM p WHERE age <= 4 GROUP BY sex', 0.9)")
	if len(rows) != 2 {
		t.Fatalf("%d rows %v, want one per sex", len(rows), rows)
	}
	ageSize := rec.Domain.Columns[1].Size()
	for g, r := range rows {
		q := [][]float64{make([]float64, 2), make([]float64, ageSize)}
		q[0][g] = 1
		for v := 0; v < ageSize; v++ {
			if x, _ := strconv.Atoi(fmt.Sprint(cellValue(&rec.Domain.Columns[1], v))); x <= 4 {
				q[1][v] = 1
			}
		}
		want, err := a.Query(context.Background(), []int{0, 1}, q, 0.9)
		if err != nil {
			t.Fatal(err)
		}
		if r[1] != want.Estimate || r[2] != want.Lower || r[3] != want.Upper || r[4] != want.Error || r[5] != support(want.Supported) {
			t.Errorf("row %d = %v, want %+v", g, r, want)
		}
	}
	// ROWS = 300 scales the estimate to 300 rows.
	for _, r := range f.rows("CALL dpsql_query_bounds('syn.r', 'SELECT sex, COUNT(*) FROM r GROUP BY sex')") {
		if !(r[1].(float64) <= 300 && r[4].(float64) > 0) {
			t.Errorf("ROWS table: row %v", r)
		}
	}
	if _, _, err := query(f.e, f.root, "CALL dpsql_query_bounds('syn.m', 'SELECT sex, COUNT(*) FROM m GROUP BY sex')"); errCode(err) != ErrNoBounds.Code() {
		t.Errorf("mst: %v, want ErrNoBounds", err)
	}
}
