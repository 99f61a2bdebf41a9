package engine

import (
	"context"
	"errors"
	"math"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"

	"github.com/dpsql/dpsql/catalog/domain"
	"github.com/dpsql/dpsql/engine/dpparse"
	"github.com/dpsql/dpsql/sqlfuncs"
	"github.com/dpsql/dpsql/synth/bounds"
)

// SHOW ERROR BOUNDS FOR syn [CONFIDENCE c], its CALL twin, and the server
// side of dp_marginal.
//
// Both read the bounds.Analysis of the synthetic table (answer.go), built
// once per table from its model, its stored release and its workload; the
// bounds are post-processing and cost no privacy budget. Only AIM models
// (and, for their measured sets, pep, pmw, hdmm_pgm and privbayes_pgm)
// have bounds. Reading them needs SELECT on the synthetic table, as reading
// its rows does; a table the session may not read is reported as missing.

// errorBoundsSchema is the result of SHOW ERROR BOUNDS: one row per
// workload marginal.
var errorBoundsSchema = sql.Schema{
	{Name: "attributes", Type: types.LongText},
	{Name: "weight", Type: types.Float64},
	{Name: "l1_error_bound", Type: types.Float64},
	{Name: "support", Type: types.LongText},
	{Name: "round", Type: types.Int64},
}

// showErrorBoundsNode returns the node of SHOW ERROR BOUNDS.
func (e *Engine) showErrorBoundsNode(s *dpparse.ShowErrorBounds) *dpNode {
	return &dpNode{stmt: s, schema: errorBoundsSchema, readOnly: true, run: func(ctx *sql.Context) ([]sql.Row, error) {
		conf := bounds.DefaultConfidence
		if s.Confidence.Kind != 0 {
			c, err := s.Confidence.Float64()
			if err != nil {
				return nil, ErrBadParameter.New("CONFIDENCE %s: not a number", s.Confidence)
			}
			conf = c
		}
		return e.errorBounds(ctx, s.Table, conf)
	}}
}

// errorBounds returns the rows of SHOW ERROR BOUNDS.
func (e *Engine) errorBounds(ctx *sql.Context, tn dpparse.TableName, confidence float64) ([]sql.Row, error) {
	if err := checkConfidence(confidence); err != nil {
		return nil, err
	}
	t, syn, err := e.readableSynthetic(ctx, tn, "SHOW ERROR BOUNDS")
	if err != nil {
		return nil, err
	}
	a, err := syn.bounds(ctx)
	if err != nil {
		return nil, boundsError(t, err)
	}
	ms, err := a.Marginals(ctx, confidence)
	if err != nil {
		return nil, boundsError(t, err)
	}
	dom := &syn.rec.Domain
	rows := make([]sql.Row, len(ms))
	for i, m := range ms {
		rows[i] = sql.Row{attrNames(dom, m.Attrs), m.Weight, m.L1, support(m.Supported), int64(m.Round)}
	}
	return rows, nil
}

// checkConfidence fails unless 0 < c < 1.
func checkConfidence(c float64) error {
	if !(c > 0 && c < 1) || math.IsNaN(c) {
		return ErrBadParameter.New("confidence %g: must be strictly between 0 and 1", c)
	}
	return nil
}

// readableSynthetic resolves tn to a synthetic table with a model that the
// session may read (SELECT on it). A table it may not read is missing.
func (e *Engine) readableSynthetic(ctx *sql.Context, tn dpparse.TableName, what string) (tableRef, *synTable, error) {
	t, syn, err := e.readableRelease(ctx, tn, what)
	if err != nil {
		return tableRef{}, nil, err
	}
	if syn.answersOnly() {
		return tableRef{}, nil, ErrNoBounds.New("%s is not a synthetic table with a model, so it has no error bounds", t)
	}
	return t, syn, nil
}

// readableRelease resolves tn to a synthetic table with a model or an
// answers-only one that the session may read (SELECT on it).
func (e *Engine) readableRelease(ctx *sql.Context, tn dpparse.TableName, what string) (tableRef, *synTable, error) {
	if err := e.needCatalog(what); err != nil {
		return tableRef{}, nil, err
	}
	t, err := e.resolveTable(ctx, tn)
	if err != nil {
		return tableRef{}, nil, err
	}
	mdb := e.sqle.Analyzer.Catalog.MySQLDb
	op := sql.NewPrivilegedOperation(sql.PrivilegeCheckSubject{Database: t.DB, Table: t.Name}, sql.PrivilegeType_Select)
	if !mdb.UserHasPrivileges(ctx, op) {
		return tableRef{}, nil, noSuchTable(t.DB, t.Name)
	}
	syn, err := e.answers.byID(ctx, t.ID)
	if err != nil {
		return tableRef{}, nil, ErrInternal.Wrap(err, "looking up %s", t)
	}
	if syn == nil || syn.answersOnly() {
		if msg := e.hierNoBounds(ctx, t); msg != "" {
			return tableRef{}, nil, ErrNoBounds.New("%s", msg)
		}
	}
	if syn == nil {
		return tableRef{}, nil, ErrNoBounds.New("%s is not a synthetic table with a model, so it has no error bounds", t)
	}
	return t, syn, nil
}

// boundsError classifies an error of the bounds computation.
func boundsError(t tableRef, err error) error {
	switch {
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return ErrCancelled.Wrap(err, "statement cancelled")
	case errors.Is(err, bounds.ErrNoBounds):
		return ErrNoBounds.Wrap(err, "%s", t)
	case errors.Is(err, bounds.ErrUncovered):
		return ErrNoBounds.Wrap(err, "%s", t)
	case errors.Is(err, bounds.ErrInvalid):
		return ErrBadParameter.Wrap(err, "%s", t)
	}
	var ee *Error
	if errors.As(err, &ee) {
		return err
	}
	return ErrInternal.Wrap(err, "error bounds of %s", t)
}

// attrNames lists attributes by column name, comma-separated.
func attrNames(dom *domain.Table, attrs []int) string {
	names := make([]string, len(attrs))
	for i, a := range attrs {
		names[i] = dom.Columns[a].Name()
	}
	return strings.Join(names, ", ")
}

// support is the support column's value.
func support(supported bool) string {
	if supported {
		return sqlfuncs.Supported
	}
	return sqlfuncs.Unsupported
}

// showErrorBoundsProcedures are CALL dpsql_show_error_bounds('syn') and
// CALL dpsql_show_error_bounds('syn', confidence).
func (e *Engine) showErrorBoundsProcedures() []sql.ExternalStoredProcedureDetails {
	const name = "dpsql_show_error_bounds"
	run := func(ctx *sql.Context, table string, conf float64) (sql.RowIter, error) {
		tn, err := parseTableArg(table)
		if err != nil {
			return procResult(nil, err)
		}
		return procResult(e.errorBounds(ctx, tn, conf))
	}
	return []sql.ExternalStoredProcedureDetails{
		{
			Name: name, Schema: errorBoundsSchema, ReadOnly: true,
			Function: func(ctx *sql.Context, table string) (sql.RowIter, error) {
				return run(ctx, table, bounds.DefaultConfidence)
			},
		},
		{
			Name: name, Schema: errorBoundsSchema, ReadOnly: true,
			Function: func(ctx *sql.Context, table string, confidence float64) (sql.RowIter, error) {
				return run(ctx, table, confidence)
			},
		},
	}
}

// marginalSource serves dp_marginal (sqlfuncs.Marginals).
type marginalSource struct{ e *Engine }

var _ sqlfuncs.Marginals = marginalSource{}

// MarginalColumns implements sqlfuncs.Marginals.
func (s marginalSource) MarginalColumns(ctx *sql.Context, table string, columns []string) (sql.Schema, error) {
	_, _, cols, err := s.resolve(ctx, table, columns)
	if err != nil {
		return nil, SQLError(err)
	}
	return cols, nil
}

// MarginalCells implements sqlfuncs.Marginals.
func (s marginalSource) MarginalCells(ctx *sql.Context, table string, columns []string, confidence float64) ([]sqlfuncs.Cell, bool, error) {
	cells, supported, err := s.cells(ctx, table, columns, confidence)
	return cells, supported, SQLError(err)
}

func (s marginalSource) cells(ctx *sql.Context, table string, columns []string, confidence float64) ([]sqlfuncs.Cell, bool, error) {
	if err := checkConfidence(confidence); err != nil {
		return nil, false, err
	}
	t, syn, cols, err := s.resolve(ctx, table, columns)
	if err != nil {
		return nil, false, err
	}
	dom := &syn.rec.Domain
	attrs := make([]int, len(columns))
	for i, c := range columns {
		attrs[i], _ = dom.Index(c)
	}
	a, err := syn.bounds(ctx)
	if err != nil {
		return nil, false, boundsError(t, err)
	}
	cbs, supported, err := a.Cells(ctx, attrs, confidence)
	if err != nil {
		return nil, false, boundsError(t, err)
	}
	k := len(attrs)
	codes := make([]int, k)
	vals := make([]any, len(cbs)*k) // one backing array for every cell
	out := make([]sqlfuncs.Cell, len(cbs))
	for i, cb := range cbs {
		// Decode cell i: the last attribute varies fastest.
		rest := i
		for j := k - 1; j >= 0; j-- {
			size := dom.Columns[attrs[j]].Size()
			codes[j] = rest % size
			rest /= size
		}
		v := vals[i*k : (i+1)*k : (i+1)*k]
		for j, a := range attrs {
			x := cellValue(&dom.Columns[a], codes[j])
			if x != nil {
				if x, _, err = cols[j].Type.Convert(ctx, x); err != nil {
					return nil, false, ErrInternal.Wrap(err, "column %s", quoteIdent(cols[j].Name))
				}
			}
			v[j] = x
		}
		out[i] = sqlfuncs.Cell{Values: v, Estimate: cb.Estimate, Lower: cb.Lower, Upper: cb.Upper}
	}
	return out, supported, nil
}

// resolve finds the synthetic table and the columns dp_marginal names.
func (s marginalSource) resolve(ctx *sql.Context, table string, columns []string) (tableRef, *synTable, sql.Schema, error) {
	tn, err := parseTableArg(table)
	if err != nil {
		return tableRef{}, nil, nil, err
	}
	t, syn, err := s.e.readableSynthetic(ctx, tn, sqlfuncs.MarginalName)
	if err != nil {
		return tableRef{}, nil, nil, err
	}
	sch := t.Table.Schema()
	dom := &syn.rec.Domain
	cols := make(sql.Schema, len(columns))
	seen := map[int]bool{}
	for i, c := range columns {
		a, ok := dom.Index(c)
		if !ok {
			return tableRef{}, nil, nil, ErrNoSuchColumn.New("Unknown column '%s' in %s: its model has columns %s", c, t, strings.Join(dom.Names(), ", "))
		}
		if seen[a] {
			return tableRef{}, nil, nil, ErrBadParameter.New("column %s is named twice", quoteIdent(c))
		}
		seen[a] = true
		j := sch.IndexOfColName(dom.Columns[a].Name())
		if j < 0 {
			return tableRef{}, nil, nil, ErrNoSuchColumn.New("Unknown column '%s' in %s", c, t)
		}
		cols[i] = sch[j]
	}
	return t, syn, cols, nil
}
