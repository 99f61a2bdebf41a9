package engine

import (
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

// EXPLAIN of a SELECT on a synthetic table says which source answers it:
// "answered from model: ..." for a routed query, or go-mysql-server's plan
// followed by "answered from synthetic rows" (and why not from the model).
// Both come as EXPLAIN FORMAT=TREE does, one line per row in a plan column.

var _ statementNode = (*explainAnswer)(nil)

// explainSchema is the result of EXPLAIN: one line of the plan per row.
var explainSchema = sql.Schema{{Name: "plan", Type: types.LongText}}

// Line prefixes of the source line.
const (
	explainRowsLine = "answered from synthetic rows"
)

// explainAnswer is the plan node of EXPLAIN on a synthetic table.
type explainAnswer struct {
	r     *routed
	debug bool // FORMAT=DEBUG
}

// explainNode returns the EXPLAIN node of r.
func (r *routed) explainNode(s *ast.Explain) *explainAnswer {
	return &explainAnswer{r: r, debug: strings.Contains(strings.ToLower(s.ExplainFormat), "debug")}
}

// Resolved implements sql.Node.
func (n *explainAnswer) Resolved() bool { return true }

// String implements sql.Node.
func (n *explainAnswer) String() string { return "EXPLAIN " + n.r.db + "." + n.r.name }

// Schema implements sql.Node.
func (n *explainAnswer) Schema() sql.Schema { return explainSchema }

// Children implements sql.Node.
func (n *explainAnswer) Children() []sql.Node { return nil }

// WithChildren implements sql.Node.
func (n *explainAnswer) WithChildren(children ...sql.Node) (sql.Node, error) {
	if len(children) != 0 {
		return nil, sql.ErrInvalidChildrenNumber.New(n, len(children), 0)
	}
	return n, nil
}

// IsReadOnly implements sql.Node.
func (n *explainAnswer) IsReadOnly() bool { return true }

// WithResolvedChildren implements the parser's Injectable.
func (n *explainAnswer) WithResolvedChildren(children []any) (any, error) {
	if len(children) != 0 {
		return nil, sql.ErrInvalidChildrenNumber.New(n, len(children), 0)
	}
	return n, nil
}

// RowIter implements sql.ExecSourceRel.
func (n *explainAnswer) RowIter(ctx *sql.Context, _ sql.Row) (sql.RowIter, error) {
	lines, err := n.lines(ctx)
	if err != nil {
		return nil, SQLError(err)
	}
	rows := make([]sql.Row, len(lines))
	for i, l := range lines {
		rows[i] = sql.Row{l}
	}
	return sql.RowsToRowIter(rows...), nil
}

// lines are the lines of the explanation.
func (n *explainAnswer) lines(ctx *sql.Context) ([]string, error) {
	r := n.r
	if r.mq != nil {
		return []string{r.answerNode().answerString(ctx)}, nil
	}
	analyzed, err := r.e.sqle.Analyzer.Analyze(ctx, r.bound, nil, r.flags)
	if err != nil {
		return nil, err
	}
	var lines []string
	for _, l := range strings.Split(sql.Describe(analyzed, sql.DescribeOptions{Plan: true, Debug: n.debug}), "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	last := explainRowsLine
	if r.reason != "" {
		last += " (not from the model: " + r.reason + ")"
	}
	return append(lines, last), nil
}
