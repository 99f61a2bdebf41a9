package engine

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
	"gonum.org/v1/gonum/mat"

	"github.com/dpsql/dpsql/catalog/domain"

	"github.com/dpsql/dpsql/planner"
	"github.com/dpsql/dpsql/synth/bounds"
)

// CALL dpsql_query_bounds('syn', 'SELECT …'[, confidence]) gives, for
// every group of a COUNT(*) query on a synthetic table with a model, the
// model's answer and a confidence interval for the true count: the error
// bound of that answer. On an answers-only table (gaussian, hdmm_lls) the
// answer is the one the SELECT gives from its released marginal, bounded
// from the measurement behind it (bounds.MeasuredQuery). It covers what SHOW ERROR BOUNDS (whole workload
// marginals) and dp_marginal (cells) do not: range conditions (`income <=
// 50000`, BETWEEN) and other single-column conditions, answered exactly
// as the SELECT is (planner routing evaluates them at the code level).
// The query compiles as a workload query does (planner.Query.Kron): its
// WHERE must be a conjunction of single-column conditions. Each group is
// the Kronecker counting query of a unit row per grouped column and the
// condition's row per other column, bounded by bounds.Analysis.Query
// (synth/bounds; docs/pgm-dropin.md): exact Gaussian intervals where the
// measurements determine the query, the marginal's L1 bound otherwise.
// Like SHOW ERROR BOUNDS it is post-processing and needs SELECT on the
// table. A table created with ROWS scales the model's counts to its rows:
// the estimate is scaled as the SELECT's, and its error bound grows by the
// scaling's shift; the interval for the true count does not change.

// queryBoundsSchema is the result: one row per group of the answer.
var queryBoundsSchema = sql.Schema{
	{Name: "group", Type: types.LongText},
	{Name: "estimate", Type: types.Float64},
	{Name: "lower", Type: types.Float64},
	{Name: "upper", Type: types.Float64},
	{Name: "error_bound", Type: types.Float64},
	{Name: "support", Type: types.LongText},
}

// queryBounds returns the rows of dpsql_query_bounds.
func (e *Engine) queryBounds(ctx *sql.Context, table, query string, confidence float64) ([]sql.Row, error) {
	if err := checkConfidence(confidence); err != nil {
		return nil, err
	}
	tn, err := parseTableArg(table)
	if err != nil {
		return nil, err
	}
	t, syn, err := e.readableRelease(ctx, tn, "dpsql_query_bounds")
	if err != nil {
		return nil, err
	}
	stmt, err := ast.Parse(query)
	if err != nil {
		return nil, ErrBadParameter.New("query: %v", err)
	}
	sel, ok := stmt.(*ast.Select)
	if !ok {
		return nil, ErrBadParameter.New("query: want one SELECT … COUNT(*) … FROM %s", t.Name)
	}
	dom := &syn.rec.Domain
	q, err := planner.CompileQuery(sel, planner.TableRef{Name: t.Name}, dom)
	if err != nil {
		return nil, ErrBadParameter.New("query: %v", err)
	}
	if len(q.Attrs) == 0 {
		return nil, ErrBadParameter.New("query: it counts every row; bound a query on some column (SHOW ERROR BOUNDS covers the workload)")
	}
	factors, ok := q.Kron()
	if !ok {
		return nil, ErrBadParameter.New("query: its WHERE is not a conjunction of single-column conditions (or matches no row), so it is no single counting query per group")
	}
	if factors == nil { // no WHERE: every attribute is grouped
		factors = make([]*mat.Dense, len(q.Attrs))
	}
	// bound is the bound of one group's query.
	var bound func(weights [][]float64) (bounds.QueryBound, error)
	if syn.answersOnly() {
		// The SELECT answers from one released marginal
		// (planner.ChooseMeasured); bound that answer from the
		// measurement it came from, as released.
		ms, err := syn.released(ctx)
		if err != nil {
			return nil, ErrInternal.Wrap(err, "reading the answers of %s", syn)
		}
		k := planner.ChooseMeasured(ms, dom.Sizes(), q.Attrs)
		if k < 0 {
			return nil, ErrBadParameter.New("query: no released marginal of %s contains the columns (%s)", t, attrNames(dom, q.Attrs))
		}
		res, err := syn.release(ctx)
		if err != nil {
			return nil, ErrInternal.Wrap(err, "reading the release of %s", syn)
		}
		if len(res.Measurements) != len(ms) {
			return nil, ErrInternal.New("%s: %d measurements for %d answers", syn, len(res.Measurements), len(ms))
		}
		mb, err := bounds.NewMeasured(syn.rec.Mechanism, res.Note, res.Measurements, k, dom.Sizes())
		if err != nil {
			return nil, boundsError(t, err)
		}
		bound = func(w [][]float64) (bounds.QueryBound, error) { return mb.Query(q.Attrs, w, confidence) }
	} else {
		a, err := syn.bounds(ctx)
		if err != nil {
			return nil, boundsError(t, err)
		}
		// With ROWS the SELECT scales the model's counts by s = rows/N̂;
		// |true − s·a| ≤ |true − a| + |1 − s|·a.
		scale := 1.0
		if syn.total > 0 && syn.model != nil && syn.model.Total() > 0 {
			scale = syn.total / syn.model.Total()
		}
		bound = func(w [][]float64) (bounds.QueryBound, error) {
			b, err := a.Query(ctx, q.Attrs, w, confidence)
			b.Error += math.Abs(1-scale) * b.Estimate
			b.Estimate *= scale
			return b, err
		}
	}
	weights := make([][]float64, len(q.Attrs))
	var codes []int
	var rows []sql.Row
	for g := range q.Groups() {
		if err := ctx.Err(); err != nil {
			return nil, ErrCancelled.Wrap(err, "statement cancelled")
		}
		codes = q.GroupCodes(g, codes)
		satisfied := true
		for j, x := range q.Attrs {
			n := dom.Columns[x].Size()
			w := make([]float64, n)
			if k := slices.Index(q.GroupBy, x); k >= 0 {
				// A grouped column: its group's code, if the condition
				// on it (if any) holds there.
				if f := factors[j]; f != nil && !rowsContain(f, codes[k]) {
					satisfied = false
				}
				w[codes[k]] = 1
			} else {
				copy(w, factors[j].RawRowView(0))
			}
			weights[j] = w
		}
		if !satisfied {
			continue
		}
		b, err := bound(weights)
		if err != nil {
			return nil, boundsError(t, err)
		}
		rows = append(rows, sql.Row{groupLabel(dom, q.GroupBy, codes), b.Estimate, b.Lower, b.Upper, b.Error, support(b.Supported)})
	}
	return rows, nil
}

// rowsContain reports whether some row of the 0/1 factor f is the unit row
// of code v.
func rowsContain(f *mat.Dense, v int) bool {
	r, _ := f.Dims()
	for i := range r {
		if f.At(i, v) != 0 {
			return true
		}
	}
	return false
}

// groupLabel spells a group as col=value, … in select-list order ("" for
// no GROUP BY).
func groupLabel(dom *domain.Table, groupBy, codes []int) string {
	parts := make([]string, len(groupBy))
	for k, x := range groupBy {
		c := &dom.Columns[x]
		v := cellValue(c, codes[k])
		if v == nil {
			parts[k] = c.Name() + "=NULL"
		} else {
			parts[k] = fmt.Sprintf("%s=%v", c.Name(), v)
		}
	}
	return strings.Join(parts, ", ")
}

// queryBoundsProcedures are CALL dpsql_query_bounds('syn', 'SELECT …') and
// CALL dpsql_query_bounds('syn', 'SELECT …', confidence).
func (e *Engine) queryBoundsProcedures() []sql.ExternalStoredProcedureDetails {
	const name = "dpsql_query_bounds"
	return []sql.ExternalStoredProcedureDetails{
		{
			Name: name, Schema: queryBoundsSchema, ReadOnly: true,
			Function: func(ctx *sql.Context, table, query string) (sql.RowIter, error) {
				return procResult(e.queryBounds(ctx, table, query, bounds.DefaultConfidence))
			},
		},
		{
			Name: name, Schema: queryBoundsSchema, ReadOnly: true,
			Function: func(ctx *sql.Context, table, query string, confidence float64) (sql.RowIter, error) {
				return procResult(e.queryBounds(ctx, table, query, confidence))
			},
		},
	}
}
