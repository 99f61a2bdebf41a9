package engine

import (
	"fmt"

	"github.com/dolthub/go-mysql-server/sql"

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
}

// answerNode returns the node answering r from the model.
func (r *routed) answerNode() *ModelAnswer {
	return &ModelAnswer{syn: r.syn, mq: r.mq, schema: r.bound.Schema()}
}

// Resolved implements sql.Node.
func (n *ModelAnswer) Resolved() bool { return true }

// String implements sql.Node.
func (n *ModelAnswer) String() string { return "answered from model: " + n.mq.ExplainString() }

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
	src, err := n.syn.source(ctx)
	if err != nil {
		return nil, ErrInternal.Wrap(err, "answering from the model")
	}
	if err := ctx.Err(); err != nil {
		return nil, ErrCancelled.Wrap(err, "statement cancelled")
	}
	_, vals, err := n.mq.Execute(src, &planner.ExecOptions{Total: n.syn.total})
	if err != nil {
		return nil, ErrInternal.Wrap(err, "answering from the model of %s", n.syn)
	}
	rows := make([]sql.Row, len(vals))
	for i, v := range vals {
		for j, x := range v {
			if x == nil {
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

// answerString describes how n answers, for EXPLAIN.
func (n *ModelAnswer) answerString() string {
	scale := "the model's total"
	if n.syn.total > 0 {
		scale = fmt.Sprintf("%.0f rows (ROWS)", n.syn.total)
	}
	return fmt.Sprintf("answered from model: %s; counts scaled to %s", n.mq.ExplainString(), scale)
}
