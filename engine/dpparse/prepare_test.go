package dpparse

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

var param = Value{Kind: ValueParam, Text: "?"}

// TestPrepare: placeholders are accepted in every value position, recorded
// in order with what they stand for, and the statement keeps its shape.
func TestPrepare(t *testing.T) {
	tests := []struct {
		in     string
		want   Statement
		params []Param // Pos and End are checked against the text
	}{
		{"CREATE SYNTHETIC TABLE lab.s FROM raw.t USING independent WITH EPSILON = ?, SEED = ?",
			&CreateSynthetic{Table: tn("lab.s"), Source: tn("raw.t"), Mechanism: "independent",
				Options: []Option{{"EPSILON", param}, {"SEED", param}}},
			[]Param{{What: "EPSILON", Number: true}, {What: "SEED", Number: true}}},
		{"create synthetic table s from t using aim with epsilon = ?, delta = ?, rows = ?, rounds = ?, mode = ? workload all 2-way",
			&CreateSynthetic{Table: tn("s"), Source: tn("t"), Mechanism: "aim",
				Options:  []Option{{"epsilon", param}, {"delta", param}, {"rows", param}, {"rounds", param}, {"mode", param}},
				Workload: Workload{AllKWay: 2}},
			[]Param{{What: "EPSILON", Number: true}, {What: "DELTA", Number: true}, {What: "ROWS", Number: true},
				{What: "value of option rounds"}, {What: "value of option mode"}}},
		{"SET PRIVACY BUDGET FOR db.t WITH EPSILON = ?, DELTA = ?",
			&SetBudget{Table: tn("db.t"), Epsilon: param, Delta: param},
			[]Param{{What: "EPSILON", Number: true}, {What: "DELTA", Number: true}}},
		{"ALTER TABLE t SET DOMAIN c BETWEEN ? AND ? BINS ?",
			&SetDomainBetween{Table: tn("t"), Column: "c", Lo: param, Hi: param},
			[]Param{{What: "lower bound", Number: true}, {What: "upper bound", Number: true}, {What: "BINS", Number: true}}},
		{"ALTER TABLE d.t SET DOMAIN c IN (?, 'x', ?)",
			&SetDomainIn{Table: tn("d.t"), Column: "c", Values: []Value{param, str("x"), param}},
			[]Param{{What: "a number, string or NULL"}, {What: "a number, string or NULL"}}},
		{"SHOW ERROR BOUNDS FOR lab.s CONFIDENCE ?",
			&ShowErrorBounds{Table: tn("lab.s"), Confidence: param},
			[]Param{{What: "confidence", Number: true}}},
		{"SHOW PRIVACY BUDGET FOR raw.t", &ShowBudget{Table: tn("raw.t")}, nil},
	}
	for _, tc := range tests {
		p, n, ok, err := Prepare(tc.in)
		if !ok || err != nil || n != len(tc.in) {
			t.Errorf("Prepare(%q) = ok %v, n %d, %v", tc.in, ok, n, err)
			continue
		}
		if got := stripSelects(t, p.Stmt); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Prepare(%q).Stmt = %#v, want %#v", tc.in, got, tc.want)
		}
		if len(p.Params) != len(tc.params) {
			t.Errorf("Prepare(%q): %d params, want %d", tc.in, len(p.Params), len(tc.params))
			continue
		}
		for i, prm := range p.Params {
			if tc.in[prm.Pos:prm.End] != "?" || prm.What != tc.params[i].What || prm.Number != tc.params[i].Number {
				t.Errorf("Prepare(%q) param %d = %+v (%q), want %+v", tc.in, i+1, prm, tc.in[prm.Pos:prm.End], tc.params[i])
			}
		}
		// The printed statement prepares to the same statement.
		if p2, _, _, err := Prepare(p.Stmt.String()); err != nil || !reflect.DeepEqual(stripSelects(t, p2.Stmt), tc.want) {
			t.Errorf("Prepare(String()) of %q: %v", p.Stmt, err)
		}
	}
}

// TestPlaceholderOutsidePrepare: Parse (a text query) refuses ?, saying
// what placeholders are for; so does Prepare where no value goes.
func TestPlaceholderOutsidePrepare(t *testing.T) {
	_, _, ok, err := Parse("SET PRIVACY BUDGET FOR t WITH EPSILON = ?, DELTA = ?")
	var e *Error
	if !ok || !errors.As(err, &e) || e.Kind != KindUnexpected || !strings.Contains(e.Msg, "prepared statements") {
		t.Errorf("Parse with ?: ok %v, %v", ok, err)
	}
	for _, in := range []string{
		"SHOW PRIVACY BUDGET FOR ?",
		"CREATE SYNTHETIC TABLE s FROM t USING ? WITH EPSILON = 1",
		"CREATE SYNTHETIC TABLE s FROM t USING aim WITH ? = 1",
		"CREATE SYNTHETIC TABLE s FROM t USING aim WITH EPSILON = 1 WORKLOAD ALL ?-WAY",
		"SET PRIVACY BUDGET FOR t WITH EPSILON = -?, DELTA = 1e-9",
		"GRANT SYNTHESIZE ON t TO ?",
	} {
		if _, _, ok, err := Prepare(in); !ok || !errors.As(err, &e) {
			t.Errorf("Prepare(%q): ok %v, %v; want a syntax error", in, ok, err)
		}
	}
}

// TestBind: bound values take the placeholders' places as literals that
// Parse reads back, strings quoted; a value other than a number where a
// number goes, or the wrong number of values, is refused.
func TestBind(t *testing.T) {
	p, _, _, err := Prepare("CREATE SYNTHETIC TABLE s FROM t USING aim WITH EPSILON = ?, SEED = ?, mode = ?;")
	if err != nil {
		t.Fatal(err)
	}
	text, err := p.Bind([]Value{num("0.5"), num("-3"), str("it's")})
	if err != nil {
		t.Fatal(err)
	}
	if want := "CREATE SYNTHETIC TABLE s FROM t USING aim WITH EPSILON = 0.5, SEED = -3, mode = 'it\\'s';"; text != want {
		t.Errorf("Bind = %q, want %q", text, want)
	}
	stmt, _, _, err := Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	if got := stmt.(*CreateSynthetic).Options; !reflect.DeepEqual(got, []Option{{"EPSILON", num("0.5")}, {"SEED", num("-3")}, {"mode", str("it's")}}) {
		t.Errorf("bound options %v", got)
	}

	for _, tc := range []struct {
		values []Value
		msg    string
	}{
		{[]Value{str("0.5"), num("1"), num("1")}, "parameter 1 (EPSILON) must be a number, not the string '0.5'"},
		{[]Value{num("0.5"), {Kind: ValueNull}, num("1")}, "parameter 2 (SEED) must be a number, not NULL"},
		{[]Value{num("0.5"), num("1")}, "3 parameters, 2 values"},
		{[]Value{num("1; DROP TABLE t"), num("1"), num("1")}, "is not a number"},
		{[]Value{num("0.5"), num("1"), param}, "parameter 3 (value of option mode) has no value"},
	} {
		if _, err := p.Bind(tc.values); err == nil || !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("Bind(%v) = %v, want an error with %q", tc.values, err, tc.msg)
		}
	}

	// Validation happens when the bound text is parsed.
	p, _, _, err = Prepare("ALTER TABLE t SET DOMAIN c BETWEEN ? AND ? BINS ?")
	if err != nil {
		t.Fatal(err)
	}
	text, err = p.Bind([]Value{num("10"), num("1"), num("3")})
	if err != nil {
		t.Fatal(err)
	}
	var e *Error
	if _, _, _, err := Parse(text); !errors.As(err, &e) || e.Kind != KindBadValue {
		t.Errorf("bound BETWEEN 10 AND 1: %v, want a bad value", err)
	}
}
