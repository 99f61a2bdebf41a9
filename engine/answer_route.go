package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/planbuilder"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"

	"github.com/dpsql/dpsql/catalog/domain"
	"github.com/dpsql/dpsql/engine/dpparse"
	"github.com/dpsql/dpsql/planner"
)

// Routing SELECTs on synthetic tables to their models.
//
// The parser hands every statement GMS's MySQL parser produced to route. A
// plain SELECT (or EXPLAIN of one) whose single FROM table is a synthetic
// table with a model is answered from the model when
//
//   - the session's dpsql_answer_source is 'model';
//   - planner.RouteSelect accepts it (a COUNT query the model answers
//     exactly; see the planner package);
//   - go-mysql-server binds it for the session without error, reading that
//     one table only. Binding checks the session's SELECT privilege and
//     gives the result's column types, so a routed query fails exactly as
//     the rows query would, and returns the same types.
//
// The routed statement is an injected ModelAnswer node whose authorization
// is SELECT on the table, checked again by the planbuilder. Anything else
// goes to go-mysql-server unchanged. go-mysql-server parses a server-side
// prepared statement (COM_STMT_PREPARE) once, without its values, and binds
// each execution to the cached tree, so route never sees the values; the
// connection handler asks routePrepared instead. SQL PREPARE and EXECUTE
// run on the rows.

// route returns stmt, or the injected statement answering it from a
// synthetic table's model. text is the statement's text.
func (p *parser) route(ctx context.Context, stmt ast.Statement, text string) ast.Statement {
	e := p.e
	sctx, ok := ctx.(*sql.Context)
	if !ok || e.dp.cat == nil || e.answers == nil || sctx.Session == nil {
		return stmt
	}
	e.answers.notes.set(sctx.Session.ID(), nil)
	switch s := stmt.(type) {
	case *ast.Select:
		r := e.routeSelect(sctx, s, text, false)
		switch {
		case r != nil && r.refusal != nil:
			return failed(r.refusal)
		case r != nil && r.mq != nil:
			return ast.InjectedStatement{Statement: r.answerNode(), Auth: r.auth()}
		}
		e.noteRows(sctx, s, r)
	case *ast.SetOp:
		e.noteRows(sctx, s, nil)
	case *ast.Explain:
		sel, ok := s.Statement.(*ast.Select)
		if !ok || s.Analyze {
			return stmt
		}
		r := e.routeSelect(sctx, sel, ast.String(sel), true)
		switch {
		case r != nil && r.refusal != nil:
			return failed(r.refusal)
		case r != nil && r.bound != nil:
			return ast.InjectedStatement{Statement: r.explainNode(s), Auth: r.auth()}
		}
	case *ast.Rollback:
		return ast.InjectedStatement{Statement: rollbackNotice{}, Auth: authAnyone}
	case *ast.Kill:
		// As in MySQL, anyone may kill their own threads (an analyst
		// stopping a long synthesis); other threads need SUPER.
		if id, ok := s.ConnID.(*ast.SQLVal); ok && e.ownsThread(sctx, id) {
			s.Auth.AuthType = ast.AuthType_IGNORE
		}
	case *ast.DDL:
		if a := strings.ToLower(s.Action); a == ast.DropStr || a == ast.RenameStr {
			e.answers.invalidate()
		}
	case *ast.DBDDL:
		e.answers.invalidate()
	}
	return stmt
}

// routePrepared returns the execution of a server-side prepared SELECT
// with its bound values inlined as literals (as a client that interpolates
// would send it) when the model answers that text, so that it is parsed
// and routed like a text query. Otherwise it returns prepare itself, and
// go-mysql-server binds the values to the prepared statement as usual.
// EXPLAIN of a SELECT on a synthetic table always runs as text, explained
// as route explains it.
func (e *Engine) routePrepared(ctx context.Context, c *mysql.Conn, prepare *mysql.PrepareData) *mysql.PrepareData {
	if len(prepare.BindVars) == 0 && !dpparse.StartsWith(prepare.PrepareStmt, explainWords...) ||
		e.dp.cat == nil || e.answers == nil || e.srv == nil {
		return prepare
	}
	sctx, err := e.srv.SessionManager().NewContextWithQuery(ctx, c, prepare.PrepareStmt)
	if err != nil {
		return prepare
	}
	// The session's parser options (ANSI_QUOTES) read both texts as the
	// server will; the inlined text quotes strings and escapes them with
	// backslashes, which every mode reads alike.
	opts := sql.LoadSqlMode(sctx).ParserOptions()
	stmt, err := ast.ParseWithOptions(sctx, prepare.PrepareStmt, opts)
	if err != nil {
		return prepare
	}
	// Only a SELECT on a synthetic table, or EXPLAIN of one, is worth
	// inlining its values.
	sel, ok := stmt.(*ast.Select)
	explain := syntheticExplain(stmt)
	if explain != nil {
		sel = explain
	} else if !ok {
		return prepare
	}
	if _, _, syn := e.syntheticFrom(sctx, sel); syn == nil {
		return prepare
	}
	text, err := ast.NewParsedQuery(stmt).GenerateQuery(prepare.BindVars, nil)
	if err != nil {
		return prepare
	}
	if explain != nil {
		// The text is explained as route explains it.
		p := *prepare
		p.PrepareStmt, p.BindVars = text, nil
		return &p
	}
	inlined, err := ast.ParseWithOptions(sctx, text, opts)
	if err != nil {
		return prepare
	}
	sel, ok = inlined.(*ast.Select)
	if !ok {
		return prepare
	}
	if r := e.routeSelect(sctx, sel, text, false); r == nil || r.mq == nil && r.refusal == nil {
		e.noteRows(sctx, sel, r)
		return prepare
	}
	p := *prepare
	p.PrepareStmt, p.BindVars = text, nil
	return &p
}

// syntheticExplain returns the SELECT that stmt explains, if stmt is an
// EXPLAIN (not EXPLAIN ANALYZE) of a SELECT, which route answers when the
// SELECT reads a synthetic table.
func syntheticExplain(stmt ast.Statement) *ast.Select {
	ex, ok := stmt.(*ast.Explain)
	if !ok || ex.Analyze {
		return nil
	}
	sel, _ := ex.Statement.(*ast.Select)
	return sel
}

// routed is a SELECT on a synthetic table with a model, bound for the
// session: mq is nil when it runs on the rows (reason says why).
type routed struct {
	e      *Engine
	syn    *synTable
	db     string
	name   string
	mq     *planner.ModelQuery
	reason string
	// bound is the SELECT bound by go-mysql-server, and flags its flags.
	bound sql.Node
	flags *sql.QueryFlags
	// exprs are the expressions of mq's ExprColumns in bound (countExprs).
	exprs map[int]sql.Expression
	// meas is the index of the released marginal that answers mq on an
	// answers-only table, -1 otherwise.
	meas int
	// refusal is the error a query on an answers-only table gets when its
	// released answers cannot answer it.
	refusal error
}

// routeSelect examines sel, whose text is text. It returns nil when sel's
// FROM is not a single synthetic table with a model or answers-only, when
// sel reads the cells of an answers-only table (readsCells), or when
// go-mysql-server cannot bind sel for the session (it will report why) or
// finds that it reads other tables too. Otherwise r.mq answers sel from the
// model or the released answers (r.meas), or r.refusal says why an
// answers-only table cannot answer it, or neither is set and r.reason
// says why the rows answer it. r.bound is set when r.mq or r.refusal is,
// and when explain is.
func (e *Engine) routeSelect(ctx *sql.Context, sel *ast.Select, text string, explain bool) *routed {
	db, name, syn := e.syntheticFrom(ctx, sel)
	if syn == nil || syn.answersOnly() && readsCells(sel) {
		return nil
	}
	r := &routed{e: e, syn: syn, db: db, name: name, meas: -1}
	ref := planner.SyntheticRef{DB: db, Name: name, Domain: &syn.rec.Domain, Like: e.likeMatcher(ctx, db, name, &syn.rec.Domain)}
	rowsMode := answerSource(ctx) == sourceRows
	switch {
	case rowsMode:
		r.reason = "dpsql_answer_source is 'rows'"
	case syn.answersOnly():
		e.routeAnswers(ctx, r, sel, ref)
	default:
		r.mq, r.reason, _ = planner.RouteSelect(sel, ref)
	}
	if r.mq == nil && r.refusal == nil && !explain {
		return r
	}
	b := planbuilder.New(ctx, e.sqle.Analyzer.Catalog, e.sqle.EventScheduler, e.sqle.Parser)
	var err error
	r.bound, r.flags, err = b.BindOnly(sel, text, nil)
	if err != nil || !readsOnly(r.bound, db, name) {
		// Let go-mysql-server report the error (or run the query) as for
		// any other table.
		return nil
	}
	if r.mq != nil && len(r.bound.Schema()) != len(r.mq.Columns) {
		e.log.Warn("a routed query's columns differ from go-mysql-server's; not answering from the model", "query", text)
		r.mq, r.reason = nil, "the result's columns differ from the model's answer"
	}
	if r.mq != nil {
		if r.exprs, err = countExprs(r.bound, r.mq); err != nil {
			e.log.Warn("a routed query's count expressions are not go-mysql-server's; not answering from the model", "query", text, "err", err)
			r.mq, r.reason = nil, "its count expressions could not be computed from the model"
		}
	}
	if r.mq == nil && r.refusal == nil && syn.answersOnly() && !rowsMode {
		// The answers could not be computed after all: refuse rather than
		// count cells.
		r.refusal = e.notAnswerable(ctx, syn, r.reason)
	}
	return r
}

// routeAnswers routes sel on the answers-only table r.syn: a count query
// (planner.RouteSelect) whose columns all lie in one released marginal is
// answered from the least noisy such marginal; any other is refused.
func (e *Engine) routeAnswers(ctx *sql.Context, r *routed, sel *ast.Select, ref planner.SyntheticRef) {
	ms, err := r.syn.released(ctx)
	if err != nil {
		r.refusal = ErrInternal.Wrap(err, "reading the answers of %s", r.syn)
		return
	}
	mq, reason, ok := planner.RouteSelect(sel, ref)
	if !ok {
		r.refusal = e.notAnswerable(ctx, r.syn, "this query is not one ("+reason+")")
		return
	}
	k := planner.ChooseMeasured(ms, r.syn.rec.Domain.Sizes(), mq.Query.Attrs)
	if k < 0 {
		r.refusal = e.notAnswerable(ctx, r.syn, fmt.Sprintf("this query needs the columns (%s), which no released marginal contains all of",
			attrNames(&r.syn.rec.Domain, mq.Query.Attrs)))
		return
	}
	r.mq, r.meas = mq, k
}

// maxListedChars bounds the list of marginals in an ErrNotAnswerable
// message: clients show at most 512 bytes of a message.
const maxListedChars = 160

// notAnswerable is the error refusing a query on the answers-only table t
// (why says why), naming the marginals it released and how to read them.
func (e *Engine) notAnswerable(ctx context.Context, t *synTable, why string) error {
	ms, err := t.released(ctx)
	if err != nil {
		return ErrInternal.Wrap(err, "reading the answers of %s", t)
	}
	dom := &t.rec.Domain
	var list strings.Builder
	for i, m := range ms {
		set := "(" + attrNames(dom, m.Attrs) + ")"
		if i > 0 && list.Len()+len(set) > maxListedChars {
			fmt.Fprintf(&list, ", … (%d in all: SELECT DISTINCT %s FROM %s lists them)", len(ms), answersColumns, t)
			break
		}
		if i > 0 {
			list.WriteString(", ")
		}
		list.WriteString(set)
	}
	example := ""
	if len(ms) > 0 {
		var cols, label []string
		for _, a := range ms[0].Attrs {
			cols = append(cols, quoteIdent(dom.Columns[a].Name()))
			label = append(label, dom.Columns[a].Name())
		}
		example = fmt.Sprintf(" (e.g. SELECT %s, %s FROM %s WHERE %s = %s)", strings.Join(cols, ", "), answersCount, t,
			answersColumns, dpparse.QuoteString(strings.Join(label, ",")))
	}
	return ErrNotAnswerable.New("%s is an answers-only table (%s): it answers only COUNT(*) queries whose grouped and filtered "+
		"columns all lie in one of its released marginals; %s. Select its dp_* columns to read the noisy cells%s. Marginals: %s",
		t, t.rec.Mechanism, why, example, list.String())
}

// readsCells reports whether sel reads an answers-only table's cells as
// such: it selects * or names a dp_* column (dp_marginal, dp_columns,
// dp_noisy_count).
func readsCells(sel *ast.Select) bool {
	for _, se := range sel.SelectExprs {
		if _, ok := se.(*ast.StarExpr); ok {
			return true
		}
	}
	found := false
	_ = ast.Walk(func(n ast.SQLNode) (bool, error) {
		if c, ok := n.(*ast.ColName); ok {
			for _, name := range []string{answersMarginal, answersColumns, answersCount} {
				found = found || strings.EqualFold(c.Name.String(), name)
			}
		}
		return !found, nil
	}, sel)
	return found
}

// likeMatcher matches LIKE patterns on the text columns of the synthetic
// table db.name (of domain dom) as go-mysql-server matches its rows: the
// labels of an ENUM column under enumStringCollation (enum_strings.go),
// other text under the column's collation, with go-mysql-server's own
// matcher.
func (e *Engine) likeMatcher(ctx *sql.Context, db, name string, dom *domain.Table) planner.LikeFunc {
	return func(attr int, pattern string, escape rune) (func(string) bool, error) {
		tbl, _, err := e.sqle.Analyzer.Catalog.Table(ctx, db, name)
		if err != nil {
			return nil, err
		}
		sch := tbl.Schema()
		i := sch.IndexOfColName(dom.Columns[attr].Name())
		if i < 0 {
			return nil, fmt.Errorf("column %s is not in %s.%s", dom.Columns[attr].Name(), db, name)
		}
		var coll sql.CollationID
		switch t := sch[i].Type; {
		case isEnumOrSet(t):
			coll = enumStringCollation(t)
		case types.IsText(t):
			coll = t.(sql.StringType).Collation()
		default:
			return nil, fmt.Errorf("column %s is not text", sch[i].Name)
		}
		m, err := expression.ConstructLikeMatcher(coll, pattern, escape)
		if err != nil {
			return nil, err
		}
		return m.Match, nil
	}
}

// syntheticFrom returns the synthetic table with a model, or answers-only,
// that sel's FROM names, if it names a single one, or a nil table.
func (e *Engine) syntheticFrom(ctx *sql.Context, sel *ast.Select) (db, name string, syn *synTable) {
	db, name, ok := singleTable(sel)
	if !ok {
		return "", "", nil
	}
	if db == "" {
		db = ctx.GetCurrentDatabase()
	}
	if db == "" || strings.EqualFold(db, "information_schema") || strings.EqualFold(db, "mysql") {
		return "", "", nil
	}
	syn, err := e.answers.lookup(ctx, db, name)
	if err != nil {
		e.log.Warn("looking up a synthetic table; answering from rows", "table", db+"."+name, "err", err)
		return "", "", nil
	}
	return db, name, syn
}

// auth is the privilege the routed statement needs: SELECT on the table,
// as for reading its rows.
func (r *routed) auth() ast.AuthInformation {
	return ast.AuthInformation{
		AuthType:    ast.AuthType_SELECT,
		TargetType:  ast.AuthTargetType_SingleTableIdentifier,
		TargetNames: []string{r.db, r.name},
	}
}

// singleTable returns the table of sel's FROM when it is a single named
// table.
func singleTable(sel *ast.Select) (db, name string, ok bool) {
	if len(sel.From) != 1 {
		return "", "", false
	}
	at, isAliased := sel.From[0].(*ast.AliasedTableExpr)
	if !isAliased {
		return "", "", false
	}
	tn, isName := at.Expr.(ast.TableName)
	if !isName || tn.Name.IsEmpty() {
		return "", "", false
	}
	return tn.DbQualifier.String(), tn.Name.String(), true
}

// readsOnly reports whether the bound plan n reads table db.name and no
// other table (subqueries included): an unqualified name in a subquery
// could otherwise name a table of the current database.
func readsOnly(n sql.Node, db, name string) bool {
	ok, seen := true, false
	var visit func(sql.Node)
	visit = func(n sql.Node) {
		transform.Inspect(n, func(n sql.Node) bool {
			if !ok {
				return false
			}
			switch t := n.(type) {
			case *plan.ResolvedTable:
				tdb := ""
				if t.SqlDatabase != nil {
					tdb = t.SqlDatabase.Name()
				}
				if !strings.EqualFold(tdb, db) || !strings.EqualFold(t.Name(), name) {
					ok = false
				}
				seen = true
			case sql.TableNode, sql.TableFunction:
				ok = false
			}
			if x, isExpr := n.(sql.Expressioner); isExpr {
				for _, ex := range x.Expressions() {
					sql.Inspect(ex, func(ex sql.Expression) bool {
						if sq, isSub := ex.(*plan.Subquery); isSub {
							visit(sq.Query)
						}
						return ok
					})
				}
			}
			return ok
		})
	}
	visit(n)
	return ok && seen
}
