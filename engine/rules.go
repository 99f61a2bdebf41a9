package engine

import (
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/analyzer"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"
)

// Analyzer rules dpsql adds after GMS's own. IDs start far above GMS's.
const (
	ruleQuoteCheckColumns analyzer.RuleId = 10000 + iota
	ruleEnumStrings
	ruleAnalyzeQualified
	ruleQualifiedDelete
)

// newAnalyzer returns GMS's default analyzer over pro plus dpsql's rules:
// enumStrings runs first, quoteCheckColumns and analyzeQualified after
// GMS's rules, and processTruncate keeps to the current database
// (qualified.go).
func newAnalyzer(pro sql.DatabaseProvider) *analyzer.Analyzer {
	a := analyzer.NewBuilder(pro).
		AddPostAnalyzeRule(ruleQuoteCheckColumns, quoteCheckColumns).
		AddPostAnalyzeRule(ruleAnalyzeQualified, analyzeQualified).
		AddPreAnalyzeRule(ruleEnumStrings, enumStrings).
		Build()
	qualifiedTruncate(a)
	return a
}

// quoteCheckColumns makes column names in new CHECK constraints quoted.
//
// GMS v0.20.0 stores a check as the String() of its expression with bare
// column names (plan.NewCheckDefinition), and parses that text back when the
// table is loaded. A column whose name is not a plain identifier, such as
// `income>50K` or `education-num`, then breaks the table ("column education
// could not be found"). Renaming each column reference to its backquoted
// form before the definition is written keeps the stored text parseable.
// The rename changes only the printed name: evaluation goes by index.
func quoteCheckColumns(_ *sql.Context, _ *analyzer.Analyzer, n sql.Node, _ *plan.Scope, _ analyzer.RuleSelector, _ *sql.QueryFlags) (sql.Node, transform.TreeIdentity, error) {
	return transform.Node(n, func(n sql.Node) (sql.Node, transform.TreeIdentity, error) {
		switch n := n.(type) {
		case *plan.CreateTable:
			checks := n.Checks()
			if len(checks) == 0 {
				return n, transform.SameTree, nil
			}
			out := make(sql.CheckConstraints, len(checks))
			for i, c := range checks {
				q, err := quotedCheck(c)
				if err != nil {
					return nil, transform.SameTree, err
				}
				out[i] = q
			}
			return n.WithChecks(out), transform.NewTree, nil
		case *plan.CreateCheck:
			q, err := quotedCheck(n.Check)
			if err != nil {
				return nil, transform.SameTree, err
			}
			c := *n
			c.Check = q
			return &c, transform.NewTree, nil
		}
		return n, transform.SameTree, nil
	})
}

// quotedCheck returns a copy of c whose column references print quoted.
func quotedCheck(c *sql.CheckConstraint) (*sql.CheckConstraint, error) {
	expr, _, err := transform.Expr(c.Expr, func(e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
		gf, ok := e.(*expression.GetField)
		if !ok || strings.HasPrefix(gf.Name(), "`") {
			return e, transform.SameTree, nil
		}
		q := "`" + strings.ReplaceAll(gf.Name(), "`", "``") + "`"
		return expression.NewGetFieldWithTable(gf.Index(), int(gf.TableId()), gf.Type(), gf.Database(), gf.Table(), q, gf.IsNullable()), transform.NewTree, nil
	})
	if err != nil {
		return nil, err
	}
	out := *c
	out.Expr = expr
	return &out, nil
}
