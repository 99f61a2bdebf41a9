package engine

import (
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/analyzer"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/go-mysql-server/sql/types"
)

// Qualified names without a current database.
//
// MySQL runs a statement whose tables are all qualified (db.t) whether or
// not a database is selected. go-mysql-server v0.20.0 does not always:
//
//   - DELETE FROM db.t without WHERE: its processTruncate rule turns the
//     DELETE into a TRUNCATE after looking for t in the current database,
//     failing with "database not found: " when there is none (and, with
//     one, truncating when the current database merely holds a table of
//     the same name). The rule runs in the analyzer's once-after batch,
//     which qualifiedTruncate wraps, and in the fast path GMS takes for a
//     plain DELETE (node_batches.go), which only runs the package-wide
//     AlwaysBeforeDefault rules before it: there qualifiedDelete puts a
//     Filter (TRUE) between the DELETE and a table of another database, so
//     that processTruncate leaves it alone. Such deletes run as deletes.
//   - ANALYZE TABLE db.t: its executor requires a current database and
//     records the statistics of every table under the current database's
//     name. analyzeTables runs it without one, under each table's own
//     database.
//   - table functions (dp_marginal): see provider.TableFunction.

// qualifiedTruncate wraps the analyzer's processTruncate rule in a (the
// once-after batch's copy, not the package's default list).
func qualifiedTruncate(a *analyzer.Analyzer) {
	for _, b := range a.Batches {
		for i, r := range b.Rules {
			if r.Id.String() != "processTruncate" {
				continue
			}
			rules := append([]analyzer.Rule(nil), b.Rules...)
			apply := r.Apply
			rules[i].Apply = func(ctx *sql.Context, a *analyzer.Analyzer, n sql.Node, scope *plan.Scope, sel analyzer.RuleSelector, qFlags *sql.QueryFlags) (sql.Node, transform.TreeIdentity, error) {
				if d, ok := n.(*plan.DeleteFrom); ok && !inCurrentDatabase(ctx, d.Child) {
					return n, transform.SameTree, nil
				}
				return apply(ctx, a, n, scope, sel, qFlags)
			}
			b.Rules = rules
			return
		}
	}
}

func init() {
	analyzer.AlwaysBeforeDefault = append(analyzer.AlwaysBeforeDefault, analyzer.Rule{Id: ruleQualifiedDelete, Apply: qualifiedDelete})
}

// qualifiedDelete keeps GMS from turning a DELETE of every row of a table
// outside the current database into a TRUNCATE (see above).
func qualifiedDelete(ctx *sql.Context, _ *analyzer.Analyzer, n sql.Node, _ *plan.Scope, _ analyzer.RuleSelector, _ *sql.QueryFlags) (sql.Node, transform.TreeIdentity, error) {
	d, ok := n.(*plan.DeleteFrom)
	if !ok || inCurrentDatabase(ctx, d.Child) {
		return n, transform.SameTree, nil
	}
	child, err := d.WithChildren(plan.NewFilter(expression.NewLiteral(true, types.Boolean), d.Child))
	if err != nil {
		return nil, transform.SameTree, err
	}
	return child, transform.NewTree, nil
}

// inCurrentDatabase reports whether n is a table of the session's current
// database.
func inCurrentDatabase(ctx *sql.Context, n sql.Node) bool {
	rt, ok := n.(*plan.ResolvedTable)
	if !ok || rt.SqlDatabase == nil {
		return true // not a candidate for TRUNCATE anyway
	}
	cur := ctx.GetCurrentDatabase()
	return cur != "" && strings.EqualFold(rt.SqlDatabase.Name(), cur)
}

// analyzeQualified replaces ANALYZE TABLE's node by analyzeTables.
func analyzeQualified(_ *sql.Context, _ *analyzer.Analyzer, n sql.Node, _ *plan.Scope, _ analyzer.RuleSelector, _ *sql.QueryFlags) (sql.Node, transform.TreeIdentity, error) {
	a, ok := n.(*plan.AnalyzeTable)
	if !ok {
		return n, transform.SameTree, nil
	}
	return &analyzeTables{AnalyzeTable: a}, transform.NewTree, nil
}

// analyzeTables is ANALYZE TABLE, run without needing a current database:
// each table's statistics are recorded under its own database (that of
// its indexes; the current one for a table without any, which has no
// statistics to record).
type analyzeTables struct {
	*plan.AnalyzeTable
}

var _ sql.ExecSourceRel = (*analyzeTables)(nil)

// WithChildren implements sql.Node.
func (n *analyzeTables) WithChildren(children ...sql.Node) (sql.Node, error) {
	if len(children) != 0 {
		return nil, sql.ErrInvalidChildrenNumber.New(n, len(children), 0)
	}
	return n, nil
}

// RowIter implements sql.ExecSourceRel: one row per table, as
// go-mysql-server's ANALYZE TABLE gives.
func (n *analyzeTables) RowIter(ctx *sql.Context, _ sql.Row) (sql.RowIter, error) {
	rows := make([]sql.Row, 0, len(n.Tables))
	for _, t := range n.Tables {
		db := n.Db
		if ia, ok := t.(sql.IndexAddressableTable); ok {
			if idx, err := ia.GetIndexes(ctx); err == nil && len(idx) > 0 {
				db = idx[0].Database()
			}
		}
		msgType, msgText := "status", "OK"
		if err := n.Stats.AnalyzeTable(ctx, t, db); err != nil {
			msgType, msgText = "Error", err.Error()
		}
		rows = append(rows, sql.Row{t.Name(), "analyze", msgType, msgText})
	}
	return sql.RowsToRowIter(rows...), nil
}
