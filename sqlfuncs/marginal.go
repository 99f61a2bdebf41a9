package sqlfuncs

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
)

// MarginalName is the name of the dp_marginal table function.
const MarginalName = "dp_marginal"

// DefaultConfidence is dp_marginal's confidence when none is given.
const DefaultConfidence = 0.95

// Names of dp_marginal's columns after the cell values.
const (
	ColEstimate = "estimate"
	ColLower    = "lower"
	ColUpper    = "upper"
	ColSupport  = "support"
)

// Values of the support column.
const (
	Supported   = "supported"
	Unsupported = "unsupported"
)

// Cell is one cell of a marginal with its confidence interval.
type Cell struct {
	// Values holds the cell's value of every requested column, already in
	// the column's SQL representation (nil for NULL).
	Values   []any
	Estimate float64 // the model's expected count
	Lower    float64
	Upper    float64
}

// Marginals is what dp_marginal reads; the server implements it.
type Marginals interface {
	// MarginalColumns checks that the session may read table (written as
	// in SQL: name or db.name) and returns the SQL columns named by
	// columns, in that order. A table the session may not read must
	// give the same error as a missing one.
	MarginalColumns(ctx *sql.Context, table string, columns []string) (sql.Schema, error)
	// MarginalCells returns every cell of the marginal of table on
	// columns at the given confidence, the last column varying fastest,
	// and whether the marginal is supported.
	MarginalCells(ctx *sql.Context, table string, columns []string, confidence float64) (cells []Cell, supported bool, err error)
}

var (
	_ sql.TableFunction = (*Marginal)(nil)
	_ sql.ExecSourceRel = (*Marginal)(nil)
)

// Marginal is the dp_marginal table function. The value returned by
// NewMarginal is the function itself, to register with a
// sql.TableFunctionProvider; NewInstance returns a call of it. Values are
// immutable.
type Marginal struct {
	src  Marginals
	db   sql.Database
	args []sql.Expression

	table      string
	columns    []string
	confidence float64
	schema     sql.Schema
	// unbound is set for a call whose arguments are placeholders not bound
	// yet (a prepared statement's): it has a schema but cannot run.
	unbound bool
}

// NewMarginal returns the dp_marginal table function over src.
func NewMarginal(src Marginals) *Marginal { return &Marginal{src: src} }

// Name implements sql.Nameable.
func (m *Marginal) Name() string { return MarginalName }

// NewInstance implements sql.TableFunction. Its arguments must be literals:
// the table and column names as strings, then optionally the confidence as
// a number.
func (m *Marginal) NewInstance(ctx *sql.Context, db sql.Database, args []sql.Expression) (sql.Node, error) {
	for _, a := range args {
		if _, ok := a.(*expression.BindVar); ok {
			return m.unboundInstance(ctx, db, args)
		}
	}
	call := &Marginal{src: m.src, db: db, args: args, confidence: DefaultConfidence}
	var strs []string
	for i, a := range args {
		lit, ok := a.(*expression.Literal)
		if !ok {
			return nil, argError("argument %d (%s) is not a literal", i+1, a)
		}
		v := lit.Value()
		if s, ok := v.(string); ok && types.IsText(lit.Type()) {
			if i > len(strs) {
				return nil, argError("argument %d: the confidence must be the last argument", i+1)
			}
			strs = append(strs, s)
			continue
		}
		if i != len(args)-1 || i < 2 {
			return nil, argError("argument %d (%s): want the table, then column names as strings, then optionally the confidence", i+1, a)
		}
		c, err := confidence(v)
		if err != nil {
			return nil, err
		}
		call.confidence = c
	}
	if len(strs) < 2 {
		return nil, argError("give the synthetic table and at least one column: %s('db.syn', 'col1', ...[, confidence])", MarginalName)
	}
	call.table, call.columns = strs[0], strs[1:]
	cols, err := m.src.MarginalColumns(ctx, call.table, call.columns)
	if err != nil {
		return nil, err
	}
	call.schema = make(sql.Schema, 0, len(cols)+4)
	for _, c := range cols {
		call.schema = append(call.schema, &sql.Column{Name: c.Name, Type: c.Type, Nullable: true, Source: MarginalName})
	}
	call.schema = append(call.schema, trailingColumns()...)
	return call, nil
}

// unboundInstance is a call some of whose arguments are placeholders of a
// prepared statement, which go-mysql-server binds by building the call
// again with the values (NewInstance) at each execution. Its schema is the
// one the call returns if a placeholder in the last position, from the
// third on, is the confidence and every other is a column: the columns'
// own types when the table and columns are literals, LONGTEXT otherwise.
func (m *Marginal) unboundInstance(ctx *sql.Context, db sql.Database, args []sql.Expression) (sql.Node, error) {
	call := &Marginal{src: m.src, db: db, args: args, confidence: DefaultConfidence, unbound: true}
	if len(args) < 2 {
		return nil, argError("give the synthetic table and at least one column: %s('db.syn', 'col1', ...[, confidence])", MarginalName)
	}
	cols := args[1:]
	if n := len(args); n >= 3 {
		if _, isText := literalString(args[n-1]); !isText {
			cols = args[1 : n-1] // the confidence
		}
	}
	names := make([]string, len(cols))
	table, known := literalString(args[0])
	for i, c := range cols {
		name, ok := literalString(c)
		names[i], known = name, known && ok
		if !ok {
			names[i] = "?"
		}
	}
	var colTypes sql.Schema
	if known {
		sch, err := m.src.MarginalColumns(ctx, table, names)
		if err != nil {
			return nil, err
		}
		colTypes = sch
	}
	for i, name := range names {
		col := &sql.Column{Name: name, Type: types.LongText, Nullable: true, Source: MarginalName}
		if colTypes != nil {
			col.Name, col.Type = colTypes[i].Name, colTypes[i].Type
		}
		call.schema = append(call.schema, col)
	}
	call.schema = append(call.schema, trailingColumns()...)
	return call, nil
}

// literalString returns the value of a text literal.
func literalString(e sql.Expression) (string, bool) {
	lit, ok := e.(*expression.Literal)
	if !ok || !types.IsText(lit.Type()) {
		return "", false
	}
	s, ok := lit.Value().(string)
	return s, ok
}

// trailingColumns are the columns after the cell values.
func trailingColumns() sql.Schema {
	return sql.Schema{
		&sql.Column{Name: ColEstimate, Type: types.Float64, Source: MarginalName},
		&sql.Column{Name: ColLower, Type: types.Float64, Source: MarginalName},
		&sql.Column{Name: ColUpper, Type: types.Float64, Source: MarginalName},
		&sql.Column{Name: ColSupport, Type: types.LongText, Source: MarginalName},
	}
}

// confidence reads the confidence argument; its range is checked by
// Marginals.MarginalCells, which knows the server's error kinds.
func confidence(v any) (float64, error) {
	var s string
	switch v := v.(type) {
	case float64:
		return v, nil
	case float32:
		return float64(v), nil
	case int8, int16, int32, int64, int, uint8, uint16, uint32, uint64:
		s = fmt.Sprint(v)
	case fmt.Stringer: // decimal.Decimal
		s = v.String()
	default:
		return 0, argError("the confidence must be a number, not %v", v)
	}
	c, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, argError("the confidence must be a number, not %s", s)
	}
	return c, nil
}

// argError is MySQL's ER_WRONG_ARGUMENTS for dp_marginal.
func argError(format string, args ...any) error {
	return mysql.NewSQLError(mysql.ERWrongArguments, mysql.SSClientError,
		"Incorrect arguments to %s: %s", MarginalName, fmt.Sprintf(format, args...))
}

// Resolved implements sql.Node.
func (m *Marginal) Resolved() bool { return true }

// IsReadOnly implements sql.Node.
func (m *Marginal) IsReadOnly() bool { return true }

// String implements sql.Node.
func (m *Marginal) String() string {
	args := make([]string, len(m.args))
	for i, a := range m.args {
		args[i] = a.String()
	}
	return fmt.Sprintf("%s(%s)", MarginalName, strings.Join(args, ", "))
}

// Schema implements sql.Node: the requested columns, then estimate, lower,
// upper and support.
func (m *Marginal) Schema() sql.Schema { return m.schema }

// Children implements sql.Node.
func (m *Marginal) Children() []sql.Node { return nil }

// WithChildren implements sql.Node.
func (m *Marginal) WithChildren(children ...sql.Node) (sql.Node, error) {
	if len(children) != 0 {
		return nil, sql.ErrInvalidChildrenNumber.New(m, len(children), 0)
	}
	return m, nil
}

// Expressions implements sql.Expressioner.
func (m *Marginal) Expressions() []sql.Expression { return m.args }

// WithExpressions implements sql.Expressioner.
func (m *Marginal) WithExpressions(exprs ...sql.Expression) (sql.Node, error) {
	if len(exprs) != len(m.args) {
		return nil, sql.ErrInvalidChildrenNumber.New(m, len(exprs), len(m.args))
	}
	c := *m
	c.args = exprs
	return &c, nil
}

// Database implements sql.Databaser.
func (m *Marginal) Database() sql.Database { return m.db }

// WithDatabase implements sql.Databaser.
func (m *Marginal) WithDatabase(db sql.Database) (sql.Node, error) {
	c := *m
	c.db = db
	return &c, nil
}

// RowIter implements sql.ExecSourceRel.
func (m *Marginal) RowIter(ctx *sql.Context, _ sql.Row) (sql.RowIter, error) {
	if m.unbound {
		return nil, argError("its arguments are placeholders without values")
	}
	cells, supported, err := m.src.MarginalCells(ctx, m.table, m.columns, m.confidence)
	if err != nil {
		return nil, err
	}
	support := Unsupported
	if supported {
		support = Supported
	}
	k := len(m.columns)
	width := k + 4
	rows := make([]sql.Row, len(cells))
	flat := make([]any, len(cells)*width) // one backing array for every row
	for i, c := range cells {
		if len(c.Values) != k {
			return nil, fmt.Errorf("%s: cell %d has %d values, want %d", MarginalName, i, len(c.Values), k)
		}
		row := flat[i*width : (i+1)*width : (i+1)*width]
		copy(row, c.Values)
		row[k], row[k+1], row[k+2], row[k+3] = c.Estimate, c.Lower, c.Upper, support
		rows[i] = row
	}
	return sql.RowsToRowIter(rows...), nil
}
