package sqlfuncs

import (
	"errors"
	"slices"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/shopspring/decimal"
)

// fakeMarginals serves a table "t" with columns a (INT, 3 values) and b
// (TEXT, 2 values); cell i has estimate i and interval [i − c, i + c] for
// confidence c. It records the last request.
type fakeMarginals struct {
	table      string
	columns    []string
	confidence float64
}

var errNoTable = errors.New("no such table")

func (f *fakeMarginals) MarginalColumns(_ *sql.Context, table string, columns []string) (sql.Schema, error) {
	if table != "t" {
		return nil, errNoTable
	}
	var out sql.Schema
	for _, c := range columns {
		switch c {
		case "a":
			out = append(out, &sql.Column{Name: "a", Type: types.Int32})
		case "b":
			out = append(out, &sql.Column{Name: "b", Type: types.Text})
		default:
			return nil, errors.New("no such column")
		}
	}
	return out, nil
}

func (f *fakeMarginals) MarginalCells(_ *sql.Context, table string, columns []string, confidence float64) ([]Cell, bool, error) {
	f.table, f.columns, f.confidence = table, columns, confidence
	values := map[string][]any{"a": {int32(0), int32(1), int32(2)}, "b": {"x", nil}}
	cells := []Cell{{}}
	for _, c := range columns {
		var next []Cell
		for _, cell := range cells {
			for _, v := range values[c] {
				next = append(next, Cell{Values: append(slices.Clone(cell.Values), v)})
			}
		}
		cells = next
	}
	for i := range cells {
		x := float64(i)
		cells[i].Estimate, cells[i].Lower, cells[i].Upper = x, x-confidence, x+confidence
	}
	return cells, len(columns) == 1, nil
}

func lit(v any) sql.Expression {
	switch v := v.(type) {
	case string:
		return expression.NewLiteral(v, types.LongText)
	case float64:
		return expression.NewLiteral(v, types.Float64)
	case int64:
		return expression.NewLiteral(v, types.Int64)
	case decimal.Decimal:
		return expression.NewLiteral(v, types.MustCreateDecimalType(3, 2))
	}
	panic(v)
}

func TestMarginal(t *testing.T) {
	ctx := sql.NewEmptyContext()
	tests := []struct {
		name     string
		args     []sql.Expression
		wantErr  error // nil: success; errNoTable or an ER_WRONG_ARGUMENTS sentinel
		wantCols []string
		wantConf float64
		wantRows int
	}{
		{name: "two columns", args: []sql.Expression{lit("t"), lit("a"), lit("b")},
			wantCols: []string{"a", "b", ColEstimate, ColLower, ColUpper, ColSupport}, wantConf: DefaultConfidence, wantRows: 6},
		{name: "float confidence", args: []sql.Expression{lit("t"), lit("b"), lit(0.5)},
			wantCols: []string{"b", ColEstimate, ColLower, ColUpper, ColSupport}, wantConf: 0.5, wantRows: 2},
		{name: "decimal confidence", args: []sql.Expression{lit("t"), lit("a"), lit(decimal.RequireFromString("0.90"))},
			wantCols: []string{"a", ColEstimate, ColLower, ColUpper, ColSupport}, wantConf: 0.9, wantRows: 3},
		{name: "integer confidence is passed on", args: []sql.Expression{lit("t"), lit("a"), lit(int64(2))},
			wantCols: []string{"a", ColEstimate, ColLower, ColUpper, ColSupport}, wantConf: 2, wantRows: 3},
		{name: "no column", args: []sql.Expression{lit("t")}, wantErr: errWrongArguments},
		{name: "no argument", wantErr: errWrongArguments},
		{name: "confidence first", args: []sql.Expression{lit("t"), lit(0.9), lit("a")}, wantErr: errWrongArguments},
		{name: "confidence without column", args: []sql.Expression{lit("t"), lit(0.9)}, wantErr: errWrongArguments},
		{name: "not a literal", args: []sql.Expression{lit("t"), expression.NewUnresolvedColumn("a")}, wantErr: errWrongArguments},
		{name: "unknown table", args: []sql.Expression{lit("u"), lit("a")}, wantErr: errNoTable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &fakeMarginals{}
			n, err := NewMarginal(src).NewInstance(ctx, nil, tt.args)
			if tt.wantErr != nil {
				if !matches(err, tt.wantErr) {
					t.Fatalf("error %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var cols []string
			for _, c := range n.Schema() {
				cols = append(cols, c.Name)
			}
			if !slices.Equal(cols, tt.wantCols) {
				t.Errorf("columns %v, want %v", cols, tt.wantCols)
			}
			iter, err := n.(sql.ExecSourceRel).RowIter(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			rows, err := sql.RowIterToRows(ctx, iter)
			if err != nil {
				t.Fatal(err)
			}
			if src.confidence != tt.wantConf || src.table != "t" {
				t.Errorf("asked %q at confidence %g, want t at %g", src.table, src.confidence, tt.wantConf)
			}
			if len(rows) != tt.wantRows {
				t.Fatalf("%d rows, want %d", len(rows), tt.wantRows)
			}
			k := len(tt.wantCols) - 4
			wantSupport := Unsupported
			if k == 1 {
				wantSupport = Supported
			}
			for i, r := range rows {
				x := float64(i)
				if len(r) != k+4 || r[k] != x || r[k+1] != x-tt.wantConf || r[k+2] != x+tt.wantConf || r[k+3] != wantSupport {
					t.Errorf("row %d = %v", i, r)
				}
			}
			// Values come out in the source's order, the last column
			// varying fastest.
			if k == 2 && (rows[1][0] != int32(0) || rows[1][1] != nil || rows[2][0] != int32(1) || rows[2][1] != "x") {
				t.Errorf("cell order: %v", rows)
			}
		})
	}
}

// errWrongArguments stands for any ER_WRONG_ARGUMENTS error in the table.
var errWrongArguments = errors.New("ER_WRONG_ARGUMENTS")

func matches(err, want error) bool {
	if want == errWrongArguments {
		var me *mysql.SQLError
		return errors.As(err, &me) && me.Num == mysql.ERWrongArguments
	}
	return errors.Is(err, want)
}

func TestMarginalNode(t *testing.T) {
	ctx := sql.NewEmptyContext()
	n, err := NewMarginal(&fakeMarginals{}).NewInstance(ctx, nil, []sql.Expression{lit("t"), lit("a")})
	if err != nil {
		t.Fatal(err)
	}
	m := n.(*Marginal)
	if got := m.String(); got != `dp_marginal('t', 'a')` {
		t.Errorf("String() = %s", got)
	}
	if _, err := m.WithExpressions(lit("t")); err == nil {
		t.Error("WithExpressions accepted the wrong number of arguments")
	}
	if _, err := m.WithChildren(m); err == nil {
		t.Error("WithChildren accepted a child")
	}
	if m.Name() != MarginalName || !m.Resolved() || !m.IsReadOnly() {
		t.Error("Name, Resolved or IsReadOnly wrong")
	}
}
