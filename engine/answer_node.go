package engine

import (
	"fmt"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/go-mysql-server/sql/types"

	"github.com/dpsql/dpsql/planner"
)

var _ statementNode = (*ModelAnswer)(nil)

// ModelAnswer is the plan node of a SELECT answered from a synthetic
// table's model: expected counts scaled to the table's size (its row count
// when its CREATE SYNTHETIC TABLE gave ROWS, else the model's total) and
// rounded, in the columns and types go-mysql-server gives the same SELECT
// on the rows. It is immutable.
type ModelAnswer struct {
	syn    *synTable
	mq     *planner.ModelQuery
	schema sql.Schema
	// exprs are go-mysql-server's expressions of the ExprColumns of mq, by
	// column (countExprs).
	exprs map[int]sql.Expression
	// meas is the index of the released marginal of an answers-only table
	// that answers mq, -1 to answer from the model.
	meas int
}

// answerNode returns the node answering r from the model or the released
// answers.
func (r *routed) answerNode() *ModelAnswer {
	return &ModelAnswer{syn: r.syn, mq: r.mq, schema: r.bound.Schema(), exprs: r.exprs, meas: r.meas}
}

// countExprs returns, for every ExprColumn of mq, the column's expression
// in bound, go-mysql-server's bound plan of the query: the expressions of
// its outermost projection, in which COUNT(*) is a column reference and
// (SELECT COUNT(*) FROM syn) a subquery, both of integer type. Evaluating
// one with the model's counts in their place (evalCount) gives what the
// rows' plan gives from the rows' counts, with its types and rounding.
func countExprs(bound sql.Node, mq *planner.ModelQuery) (map[int]sql.Expression, error) {
	var (
		proj *plan.Project
		out  map[int]sql.Expression
	)
	for j, c := range mq.Columns {
		if c.Kind != planner.ExprColumn {
			continue
		}
		if proj == nil {
			if proj = outerProject(bound); proj == nil || len(proj.Projections) != len(mq.Columns) {
				return nil, fmt.Errorf("no projection of %d columns", len(mq.Columns))
			}
			out = map[int]sql.Expression{}
		}
		e := proj.Projections[j]
		if a, ok := e.(*expression.Alias); ok {
			e = a.Child
		}
		bad := false
		sql.Inspect(e, func(x sql.Expression) bool {
			switch x := x.(type) {
			case *expression.GetField:
				bad = bad || !types.IsInteger(x.Type())
			case *plan.Subquery:
				bad = bad || !types.IsInteger(x.Type())
				return false
			}
			return !bad
		})
		if bad {
			return nil, fmt.Errorf("column %d is not arithmetic on integer counts", j+1)
		}
		out[j] = e
	}
	return out, nil
}

// outerProject returns the projection that makes n's result columns.
func outerProject(n sql.Node) *plan.Project {
	for n != nil {
		if p, ok := n.(*plan.Project); ok {
			return p
		}
		switch n.(type) {
		case *plan.Limit, *plan.Offset, *plan.Distinct, *plan.Sort, *plan.TopN, *plan.Having:
			n = n.Children()[0]
		default:
			return nil
		}
	}
	return nil
}

// evalCount evaluates e, a count expression of countExprs, with count for
// COUNT(*) and total for (SELECT COUNT(*) FROM syn).
func evalCount(ctx *sql.Context, e sql.Expression, count, total float64) (any, error) {
	x, _, err := transform.Expr(e, func(x sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
		switch x.(type) {
		case *expression.GetField:
			return expression.NewLiteral(int64(count), types.Int64), transform.NewTree, nil
		case *plan.Subquery:
			return expression.NewLiteral(int64(total), types.Int64), transform.NewTree, nil
		}
		return x, transform.SameTree, nil
	})
	if err != nil {
		return nil, err
	}
	return x.Eval(ctx, nil)
}

// Resolved implements sql.Node.
func (n *ModelAnswer) Resolved() bool { return true }

// String implements sql.Node.
func (n *ModelAnswer) String() string {
	if n.meas >= 0 {
		return fmt.Sprintf("answered from noisy answers: released marginal %d; %s", n.meas+1, n.mq.ExplainString())
	}
	return "answered from model: " + n.mq.ExplainString()
}

// Schema implements sql.Node.
func (n *ModelAnswer) Schema() sql.Schema { return n.schema }

// Children implements sql.Node.
func (n *ModelAnswer) Children() []sql.Node { return nil }

// WithChildren implements sql.Node.
func (n *ModelAnswer) WithChildren(children ...sql.Node) (sql.Node, error) {
	if len(children) != 0 {
		return nil, sql.ErrInvalidChildrenNumber.New(n, len(children), 0)
	}
	return n, nil
}

// IsReadOnly implements sql.Node.
func (n *ModelAnswer) IsReadOnly() bool { return true }

// WithResolvedChildren implements the parser's Injectable.
func (n *ModelAnswer) WithResolvedChildren(children []any) (any, error) {
	if len(children) != 0 {
		return nil, sql.ErrInvalidChildrenNumber.New(n, len(children), 0)
	}
	return n, nil
}

// RowIter implements sql.ExecSourceRel.
func (n *ModelAnswer) RowIter(ctx *sql.Context, _ sql.Row) (sql.RowIter, error) {
	rows, err := n.rows(ctx)
	if err != nil {
		return nil, SQLError(err)
	}
	return sql.RowsToRowIter(rows...), nil
}

// rows computes the answer.
func (n *ModelAnswer) rows(ctx *sql.Context) ([]sql.Row, error) {
	opts := &planner.ExecOptions{Eval: func(col int, count, total float64) (any, error) {
		return evalCount(ctx, n.exprs[col], count, total)
	}}
	var src planner.ModelSource
	if n.meas >= 0 {
		// Noisy counts, clipped at 0: what the mechanism released.
		ms, err := n.syn.released(ctx)
		if err != nil {
			return nil, ErrInternal.Wrap(err, "answering from the released answers")
		}
		if src, err = planner.NewMeasuredSource(ms[n.meas], n.syn.rec.Domain.Sizes()); err != nil {
			return nil, ErrInternal.Wrap(err, "answering from the released answers of %s", n.syn)
		}
		opts.NonNegative = true
	} else {
		cache, err := n.syn.source(ctx)
		if err != nil {
			return nil, ErrInternal.Wrap(err, "answering from the model")
		}
		src, opts.Total = cache, n.syn.total
	}
	if err := ctx.Err(); err != nil {
		return nil, ErrCancelled.Wrap(err, "statement cancelled")
	}
	_, vals, err := n.mq.Execute(src, opts)
	if err != nil {
		return nil, ErrInternal.Wrap(err, "answering from the model of %s", n.syn)
	}
	if lim, ok := selectLimit(ctx); ok && !n.mq.HasLimit() && int64(len(vals)) > lim {
		vals = vals[:lim]
	}
	rows := make([]sql.Row, len(vals))
	for i, v := range vals {
		for j, x := range v {
			if x == nil || n.exprs[j] != nil {
				// go-mysql-server computed an ExprColumn's value already;
				// as on the rows, it is sent as it is, not converted to the
				// column's type.
				continue
			}
			c := n.schema[j]
			y, _, err := c.Type.Convert(ctx, x)
			if err != nil {
				return nil, ErrInternal.Wrap(err, "column %s: value %v does not fit %s", quoteIdent(c.Name), x, c.Type)
			}
			v[j] = y
		}
		rows[i] = sql.Row(v)
	}
	return rows, nil
}

// selectLimit returns the session's sql_select_limit if it was changed
// from its default: as in MySQL, a top-level SELECT without a LIMIT of its
// own returns at most that many rows (go-mysql-server applies it to the
// plans it analyzes, not to dpsql's nodes).
func selectLimit(ctx *sql.Context) (int64, bool) {
	isDefault, val := sql.HasDefaultValue(ctx, ctx.Session, "sql_select_limit")
	if isDefault {
		return 0, false
	}
	n, _, err := types.Int64.Convert(ctx, val)
	if err != nil || n == nil || n.(int64) < 0 {
		return 0, false
	}
	return n.(int64), true
}

// answerString describes how n answers, for EXPLAIN.
func (n *ModelAnswer) answerString(ctx *sql.Context) string {
	if n.meas >= 0 {
		ms, err := n.syn.released(ctx)
		if err != nil {
			return "answered from noisy answers"
		}
		return "answered from noisy answers: " + n.mq.ExplainMeasured(n.meas+1, ms[n.meas])
	}
	scale := "the model's total"
	if n.syn.total > 0 {
		scale = fmt.Sprintf("%.0f rows (ROWS)", n.syn.total)
	}
	return fmt.Sprintf("answered from model: %s; counts scaled to %s", n.mq.ExplainString(), scale)
}
