package planner

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/dolthub/vitess/go/vt/sqlparser"

	"github.com/dpsql/dpsql/catalog/domain"
	"github.com/dpsql/dpsql/internal/vtparse"
)

// SyntheticRef names a synthetic table and its public domain (attribute i
// of its model is Domain.Columns[i]).
type SyntheticRef struct {
	DB     string // "" matches any (or no) database qualifier
	Name   string
	Domain *domain.Table
	// Like, if set, matches LIKE patterns on text columns as the synthetic
	// table's rows would be matched; without it LIKE is not routed.
	Like LikeFunc
}

// ModelSource is what answering from a model needs; *pgm.Model satisfies
// it, and so does a ModelCache. Marginal and MarginalWhere return expected
// counts laid out in the order of attrs (the last attribute varying
// fastest) that sum to Total (before evidence); Execute does not modify
// the slices they return.
type ModelSource interface {
	Marginal(attrs []int) []float64
	MarginalWhere(attrs []int, weight map[int][]float64) []float64
	Total() float64
}

// ColumnKind says what a result column of a model answer holds.
type ColumnKind uint8

const (
	// GroupColumn holds the decoded values of a group-by attribute: nil for
	// NULL, string, int64 or float64 (as domain.Value.Any gives them; ENUM
	// values as their labels).
	GroupColumn ColumnKind = iota + 1
	// CountColumn holds COUNT(*): int64, or float64 with Unrounded.
	CountColumn
	// RatioColumn holds k·COUNT(*) / (SELECT COUNT(*) FROM syn): a
	// decimal.Decimal rounded to Scale places as go-mysql-server computes
	// it, or float64 with Unrounded; nil when the table is empty.
	RatioColumn
	// ExprColumn holds any other arithmetic on COUNT(*), the table's total
	// (SELECT COUNT(*) FROM syn) and numeric literals: what
	// ExecOptions.Eval returns for it, or, without Eval, a float64 (nil
	// for a division by zero).
	ExprColumn
)

func (k ColumnKind) String() string {
	switch k {
	case GroupColumn:
		return "group"
	case CountColumn:
		return "count"
	case RatioColumn:
		return "ratio"
	case ExprColumn:
		return "expression"
	}
	return fmt.Sprintf("ColumnKind(%d)", uint8(k))
}

// ResultColumn describes one column of a model answer.
type ResultColumn struct {
	// Name is the column's name as go-mysql-server gives it: the alias,
	// or the expression as written.
	Name string
	Kind ColumnKind
	Attr int // GroupColumn: the attribute
	// Scale is the number of decimal places of a RatioColumn
	// (div_precision_increment, 4).
	Scale int
}

// item is one select-list entry.
type item struct {
	kind  ColumnKind
	group int            // GroupColumn: position in Query.GroupBy
	mult  int64          // RatioColumn: the integer factor k
	expr  sqlparser.Expr // ExprColumn: the expression
}

// counts reports whether the item is or uses a count.
func (it item) counts() bool {
	switch it.kind {
	case CountColumn, RatioColumn:
		return true
	case ExprColumn:
		return refsCount(it.expr)
	}
	return false
}

// orderKey is one ORDER BY key: a select-list position (or countKey)
// and a direction.
type orderKey struct {
	col  int
	desc bool
}

// countKey is the orderKey.col of ORDER BY COUNT(*).
const countKey = -1

// havingNode is a HAVING condition on COUNT(*), compiled to a tree over
// comparisons of the count with numeric literals.
type havingNode struct {
	op   Op // OpAtom (a comparison), OpAnd, OpOr, OpNot
	cmp  string
	lit  float64
	null bool // the literal is NULL: the comparison is UNKNOWN
	args []*havingNode
}

func (h *havingNode) eval(x float64) Truth {
	switch h.op {
	case OpAtom:
		if h.null {
			return Unknown
		}
		d := 0
		switch {
		case x < h.lit:
			d = -1
		case x > h.lit:
			d = 1
		}
		return truth(cmpHolds(h.cmp, d))
	case OpNot:
		return h.args[0].eval(x).Not()
	case OpAnd:
		t := True
		for _, a := range h.args {
			t = min(t, a.eval(x))
		}
		return t
	case OpOr:
		t := False
		for _, a := range h.args {
			t = max(t, a.eval(x))
		}
		return t
	}
	panic("planner: invalid HAVING node")
}

// ModelQuery is a SELECT that a synthetic table's model can answer: expected
// counts per group of the group-by columns, under a WHERE predicate, with
// HAVING on the count, ORDER BY and LIMIT. ModelQuery values are immutable
// and safe for concurrent use.
type ModelQuery struct {
	Table SyntheticRef
	// Query is the compiled count: group-by attributes in select-list order
	// and the predicate.
	Query   *Query
	Columns []ResultColumn

	items    []item
	having   *havingNode
	havingSQ string
	order    []orderKey
	orderSQ  string
	limit    int64 // −1: no LIMIT
	offset   int64
	evidence map[int][]float64 // nil when the predicate couples columns
	values   [][]any           // values[k][code] of group-by column k
	ranks    [][]int           // ranks[k][code]: ORDER BY rank, NULL first
}

// RouteSQL is RouteSelect on statement text.
func RouteSQL(text string, syn SyntheticRef) (mq *ModelQuery, reason string, ok bool) {
	stmt, err := vtparse.Parse(text)
	if err != nil {
		return nil, err.Error(), false
	}
	sel, isSel := stmt.(*sqlparser.Select)
	if !isSel {
		return nil, "not a simple SELECT", false
	}
	return RouteSelect(sel, syn)
}

// RouteSelect decides whether sel can be answered from the model of the
// synthetic table syn. It accepts
//
//	SELECT [DISTINCT] c1, …, ck, <counts> FROM syn [WHERE pred] [GROUP BY c1, …, ck]
//	    [HAVING cond] [ORDER BY key [ASC|DESC], …] [LIMIT [offset,] n | LIMIT n OFFSET m]
//
// where the group-by columns are exactly the selected columns (as for a
// workload query, see the package documentation, which also lists the
// accepted predicates; GROUP BY may also name them by select-list position
// or alias, and LIKE is accepted on text columns when syn.Like is set),
// <counts> (at least one, any aliases) are COUNT(*) — or COUNT of a
// non-NULL literal or of a column without NULL, which count the same —
// and arithmetic (+, -, *, /, DIV, %, MOD, unary minus, ABS, CEIL, FLOOR,
// ROUND, TRUNCATE) on counts, the total (SELECT COUNT(*) FROM syn) and
// numeric literals, cond combines with AND, OR and NOT comparisons (=, <>,
// !=, <, <=, >, >=, BETWEEN) of COUNT(*) or its alias with numeric
// literals, and each ORDER BY key is a selected column, an alias, COUNT(*)
// or a 1-based select-list position. DISTINCT changes nothing: the groups
// are distinct already.
//
// A group-by column with a Binned domain is rejected: the synthetic rows
// hold values drawn uniformly inside bins, so their groups are values, not
// bins, and the model cannot give them (every bin of an integer column holds
// at least one integer, and the last at least two, so no bin decodes to a
// single value). Conditions on binned columns are accepted when they are
// bin-aligned. Rejected queries, like every other query, run on the
// synthetic rows; reason says why.
func RouteSelect(sel *sqlparser.Select, syn SyntheticRef) (mq *ModelQuery, reason string, ok bool) {
	r := &router{syn: syn, sel: sel}
	mq, err := r.route()
	if err != nil {
		return nil, routeReason(err), false
	}
	return mq, "", true
}

// routeReason is the reason for a rejection, without the workload
// compiler's "workload:" prefix.
func routeReason(err error) string {
	var e *Error
	if !errors.As(err, &e) {
		return err.Error()
	}
	if e.Fragment != "" {
		return fmt.Sprintf("%s (in %q)", e.Msg, e.Fragment)
	}
	return e.Msg
}

type router struct {
	syn SyntheticRef
	sel *sqlparser.Select
	c   *compiler
	mq  *ModelQuery
}

func (r *router) route() (*ModelQuery, error) {
	sel := r.sel
	o := sel.QueryOpts
	switch {
	case r.syn.Domain == nil:
		return nil, reject(KindNoDomain, r.syn.Name, "table %s has no domain, so no model", r.syn.Name)
	case sel.With != nil:
		return nil, reject(KindClause, sqlparser.String(sel.With), "WITH is not answered from the model")
	case sel.Into != nil:
		return nil, reject(KindClause, sqlparser.String(sel.Into), "INTO is not answered from the model")
	case len(sel.Window) > 0:
		return nil, reject(KindClause, sqlparser.String(sel.Window), "WINDOW is not answered from the model")
	case sel.Lock != "":
		return nil, reject(KindClause, sel.Lock, "locking clauses are not answered from the model")
	case o.StraightJoinHint || o.SQLCalcFoundRows || o.SQLCache || o.SQLNoCache:
		return nil, reject(KindClause, sqlparser.String(sel), "query options are not answered from the model")
	}
	src := TableRef{DB: r.syn.DB, Name: r.syn.Name}
	r.c = &compiler{src: src, dom: r.syn.Domain, like: r.syn.Like}
	r.c.attrOf = r.c.resolve
	if err := r.c.checkFrom(sel); err != nil {
		return nil, err
	}
	r.mq = &ModelQuery{Table: r.syn, limit: -1}

	// The select list: columns go to the count query as they are; every
	// count expression becomes one COUNT(*). GROUP BY positions and aliases
	// become the columns they name.
	groupBy, err := r.groupBy()
	if err != nil {
		return nil, err
	}
	stripped := &sqlparser.Select{From: sel.From, Where: sel.Where, GroupBy: groupBy}
	var colExprs []*sqlparser.AliasedExpr
	for _, se := range sel.SelectExprs {
		ae, ok := se.(*sqlparser.AliasedExpr)
		if !ok {
			return nil, reject(KindSelectExpr, sqlparser.String(se),
				"select columns, COUNT(*) and arithmetic on COUNT(*), (SELECT COUNT(*) FROM %s) and numeric literals", r.syn.Name)
		}
		it, err := r.selectItem(ae)
		if err != nil {
			return nil, err
		}
		if it.kind == GroupColumn {
			it.group = len(colExprs)
			colExprs = append(colExprs, ae)
			stripped.SelectExprs = append(stripped.SelectExprs, ae)
		}
		r.mq.items = append(r.mq.items, it)
		r.mq.Columns = append(r.mq.Columns, ResultColumn{Name: columnName(ae), Kind: it.kind})
	}
	if !slices.ContainsFunc(r.mq.items, item.counts) {
		return nil, reject(KindAggregate, sqlparser.String(sel.SelectExprs), "the model answers COUNT(*) queries; select COUNT(*)")
	}
	stripped.SelectExprs = append(stripped.SelectExprs, &sqlparser.AliasedExpr{Expr: countStar()})
	q, err := compileQuery(stripped, src, r.syn.Domain, r.syn.Like)
	if err != nil {
		return nil, err
	}
	r.mq.Query = q
	for i, it := range r.mq.items {
		switch it.kind {
		case GroupColumn:
			a := q.GroupBy[it.group]
			r.mq.Columns[i].Attr = a
			col := &r.syn.Domain.Columns[a]
			if col.Kind() == domain.Binned {
				return nil, reject(KindGroupBy, col.Name(),
					"GROUP BY binned column %s: synthetic rows hold values drawn inside its bins, so their groups are values, not bins", col.Name())
			}
		case RatioColumn:
			r.mq.Columns[i].Scale = divPrecInc
		}
	}
	if sel.Having != nil {
		h, err := r.havingExpr(sel.Having.Expr)
		if err != nil {
			return nil, err
		}
		r.mq.having, r.mq.havingSQ = h, sqlparser.String(sel.Having.Expr)
	}
	for _, ob := range sel.OrderBy {
		k, err := r.orderKey(ob)
		if err != nil {
			return nil, err
		}
		r.mq.order = append(r.mq.order, k)
	}
	if len(sel.OrderBy) > 0 {
		r.mq.orderSQ = strings.TrimPrefix(sqlparser.String(sel.OrderBy), " order by ")
	}
	if sel.Limit != nil {
		if err := r.limit(sel.Limit); err != nil {
			return nil, err
		}
	}
	if ev, ok := q.Evidence(); ok {
		r.mq.evidence = ev
	} else if cells := q.Cells(); cells > MaxJointCells {
		return nil, reject(KindTooLarge, q.Where.SQL,
			"the predicate couples columns, so the model would build the marginal on %s (%d cells, more than %d)", names(r.syn.Domain, q.Attrs), cells, MaxJointCells)
	}
	r.mq.values, r.mq.ranks = groupTables(r.syn.Domain, q.GroupBy)
	return r.mq, nil
}

// MaxJointCells bounds the marginal a routed query whose predicate couples
// columns (an OR or NOT across columns) may need: its answer is summed from
// the model's marginal on every column the query mentions.
const MaxJointCells = 1 << 22

// divPrecInc is MySQL's default div_precision_increment: the scale a
// division adds to that of its dividend.
const divPrecInc = 4

// columnName is the name go-mysql-server gives a select expression: its
// alias, or the expression as written.
func columnName(ae *sqlparser.AliasedExpr) string {
	switch {
	case !ae.As.IsEmpty():
		return ae.As.String()
	case ae.InputExpression != "":
		return ae.InputExpression
	case isColName(ae.Expr):
		return ae.Expr.(*sqlparser.ColName).Name.String()
	}
	return sqlparser.String(ae.Expr)
}

func isColName(e sqlparser.Expr) bool {
	_, ok := e.(*sqlparser.ColName)
	return ok
}

func countStar() *sqlparser.FuncExpr {
	return &sqlparser.FuncExpr{Name: sqlparser.NewColIdent("count"), Exprs: sqlparser.SelectExprs{&sqlparser.StarExpr{}}}
}

// isCount reports whether e counts every row: COUNT(*), COUNT of a
// non-NULL literal, or COUNT of a column that cannot be NULL.
func (r *router) isCount(e sqlparser.Expr) bool {
	if isCountStar(e) {
		return true
	}
	f, ok := e.(*sqlparser.FuncExpr)
	if !ok || !strings.EqualFold(f.Name.String(), "count") || f.Distinct || f.Over != nil || len(f.Exprs) != 1 || !f.Qualifier.IsEmpty() {
		return false
	}
	ae, ok := f.Exprs[0].(*sqlparser.AliasedExpr)
	if !ok {
		return false
	}
	switch x := unparen(ae.Expr).(type) {
	case *sqlparser.SQLVal:
		return x.Type == sqlparser.IntVal || x.Type == sqlparser.FloatVal || x.Type == sqlparser.StrVal
	case *sqlparser.ColName:
		a, err := r.c.resolve(x)
		return err == nil && r.syn.Domain.Columns[a].NullCode() < 0
	}
	return false
}

// isCountStar reports whether e is COUNT(*).
func isCountStar(e sqlparser.Expr) bool {
	f, ok := e.(*sqlparser.FuncExpr)
	if !ok || !strings.EqualFold(f.Name.String(), "count") || f.Distinct || f.Over != nil || len(f.Exprs) != 1 || !f.Qualifier.IsEmpty() {
		return false
	}
	star, ok := f.Exprs[0].(*sqlparser.StarExpr)
	return ok && star.TableName.IsEmpty()
}

func unparen(e sqlparser.Expr) sqlparser.Expr {
	for {
		p, ok := e.(*sqlparser.ParenExpr)
		if !ok {
			return e
		}
		e = p.Expr
	}
}

// selectItem classifies one select expression.
func (r *router) selectItem(ae *sqlparser.AliasedExpr) (item, error) {
	text := sqlparser.String(ae)
	e := unparen(ae.Expr)
	switch {
	case isColName(e):
		return item{kind: GroupColumn}, nil
	case r.isCount(e):
		return item{kind: CountColumn}, nil
	}
	if b, ok := e.(*sqlparser.BinaryExpr); ok && b.Operator == sqlparser.DivStr && r.isTotal(unparen(b.Right)) {
		if k, ok := r.scaledCount(unparen(b.Left)); ok {
			return item{kind: RatioColumn, mult: k}, nil
		}
	}
	if r.countExpr(e) {
		return item{kind: ExprColumn, expr: e}, nil
	}
	return item{}, reject(KindSelectExpr, text,
		"select columns, COUNT(*) and arithmetic on COUNT(*), (SELECT COUNT(*) FROM %s) and numeric literals", r.syn.Name)
}

// countFuncs are the functions a count expression may apply, with their
// least and greatest numbers of arguments.
var countFuncs = map[string][2]int{
	"abs": {1, 1}, "ceil": {1, 1}, "ceiling": {1, 1}, "floor": {1, 1}, "mod": {2, 2}, "round": {1, 2}, "truncate": {2, 2},
}

// countExpr reports whether e is arithmetic (+, -, *, /, DIV, %, MOD,
// unary minus, countFuncs) on counts (isCount), the table's total
// (isTotal) and numeric literals.
func (r *router) countExpr(e sqlparser.Expr) bool {
	switch e := unparen(e).(type) {
	case *sqlparser.SQLVal:
		return e.Type == sqlparser.IntVal || e.Type == sqlparser.FloatVal
	case *sqlparser.UnaryExpr:
		return (e.Operator == sqlparser.UMinusStr || e.Operator == sqlparser.UPlusStr) && r.countExpr(e.Expr)
	case *sqlparser.BinaryExpr:
		switch e.Operator {
		case sqlparser.PlusStr, sqlparser.MinusStr, sqlparser.MultStr, sqlparser.DivStr, sqlparser.IntDivStr, sqlparser.ModStr:
			return r.countExpr(e.Left) && r.countExpr(e.Right)
		}
		return false
	case *sqlparser.FuncExpr:
		if r.isCount(e) {
			return true
		}
		arity, ok := countFuncs[strings.ToLower(e.Name.String())]
		if !ok || !e.Qualifier.IsEmpty() || e.Distinct || e.Over != nil || len(e.Exprs) < arity[0] || len(e.Exprs) > arity[1] {
			return false
		}
		for _, x := range e.Exprs {
			ae, ok := x.(*sqlparser.AliasedExpr)
			if !ok || !r.countExpr(ae.Expr) {
				return false
			}
		}
		return true
	case *sqlparser.Subquery:
		return r.isTotal(e)
	}
	return false
}

// refsCount reports whether a count expression mentions a count (a COUNT
// call) or the total (its only subquery).
func refsCount(e sqlparser.Expr) bool {
	found := false
	_ = sqlparser.Walk(func(n sqlparser.SQLNode) (bool, error) {
		switch n := n.(type) {
		case *sqlparser.Subquery:
			found = true
		case *sqlparser.FuncExpr:
			if strings.EqualFold(n.Name.String(), "count") {
				found = true
			}
		}
		return !found, nil
	}, e)
	return found
}

// scaledCount matches COUNT(*), k * COUNT(*) and COUNT(*) * k.
func (r *router) scaledCount(e sqlparser.Expr) (int64, bool) {
	if r.isCount(e) {
		return 1, true
	}
	b, ok := e.(*sqlparser.BinaryExpr)
	if !ok || b.Operator != sqlparser.MultStr {
		return 0, false
	}
	l, rt := unparen(b.Left), unparen(b.Right)
	if r.isCount(rt) {
		l, rt = rt, l
	}
	if !r.isCount(l) {
		return 0, false
	}
	v, ok := rt.(*sqlparser.SQLVal)
	if !ok || v.Type != sqlparser.IntVal {
		return 0, false
	}
	k, err := strconv.ParseInt(string(v.Val), 10, 64)
	if err != nil || k < 1 || k > 1<<31 {
		return 0, false
	}
	return k, true
}

// isTotal matches (SELECT COUNT(*) FROM syn), with no other clause.
func (r *router) isTotal(e sqlparser.Expr) bool {
	sq, ok := e.(*sqlparser.Subquery)
	if !ok {
		return false
	}
	s, ok := sq.Select.(*sqlparser.Select)
	if !ok || len(s.SelectExprs) != 1 || s.Where != nil || len(s.GroupBy) > 0 || s.Having != nil ||
		len(s.OrderBy) > 0 || s.Limit != nil || s.With != nil || s.Into != nil || s.Lock != "" ||
		len(s.Window) > 0 || s.QueryOpts.Distinct {
		return false
	}
	ae, ok := s.SelectExprs[0].(*sqlparser.AliasedExpr)
	if !ok {
		return false
	}
	c := &compiler{src: r.c.src, dom: r.c.dom}
	if c.checkFrom(s) != nil {
		return false
	}
	inner := &router{syn: r.syn, c: c}
	return inner.isCount(unparen(ae.Expr))
}

// groupBy returns the GROUP BY list with positions (GROUP BY 1) and
// aliases of selected columns replaced by the columns they name. As in
// MySQL, a name is a column of the table before it is an alias.
func (r *router) groupBy() (sqlparser.GroupBy, error) {
	var out sqlparser.GroupBy
	for _, g := range r.sel.GroupBy {
		text := sqlparser.String(g)
		switch e := unparen(g).(type) {
		case *sqlparser.SQLVal:
			n, err := strconv.Atoi(string(e.Val))
			if e.Type != sqlparser.IntVal || err != nil || n < 1 || n > len(r.sel.SelectExprs) {
				return nil, reject(KindGroupBy, text, "GROUP BY position %s is not in the select list", text)
			}
			ae, ok := r.sel.SelectExprs[n-1].(*sqlparser.AliasedExpr)
			if !ok || !isColName(unparen(ae.Expr)) {
				return nil, reject(KindGroupBy, text, "GROUP BY %s must name a selected column", text)
			}
			out = append(out, unparen(ae.Expr))
			continue
		case *sqlparser.ColName:
			if _, err := r.c.resolve(e); err != nil && e.Qualifier.IsEmpty() {
				if col := r.aliasedColumn(e.Name); col != nil {
					out = append(out, col)
					continue
				}
			}
		}
		out = append(out, g)
	}
	return out, nil
}

// aliasedColumn returns the column a select-list alias names, if it is
// the alias of a column.
func (r *router) aliasedColumn(name sqlparser.ColIdent) sqlparser.Expr {
	for _, se := range r.sel.SelectExprs {
		if ae, ok := se.(*sqlparser.AliasedExpr); ok && !ae.As.IsEmpty() && ae.As.Equal(name) && isColName(unparen(ae.Expr)) {
			return unparen(ae.Expr)
		}
	}
	return nil
}

// countRef reports whether e refers to COUNT(*): COUNT(*) itself, or the
// alias of a COUNT(*) select item.
func (r *router) countRef(e sqlparser.Expr) bool {
	e = unparen(e)
	if r.isCount(e) {
		return true
	}
	col, ok := e.(*sqlparser.ColName)
	if !ok || !col.Qualifier.IsEmpty() {
		return false
	}
	for i, ae := range r.sel.SelectExprs {
		a, ok := ae.(*sqlparser.AliasedExpr)
		if ok && r.mq.items[i].kind == CountColumn && !a.As.IsEmpty() && a.As.Equal(col.Name) {
			return true
		}
	}
	return false
}

// havingExpr compiles a HAVING condition on COUNT(*).
func (r *router) havingExpr(e sqlparser.Expr) (*havingNode, error) {
	text := sqlparser.String(e)
	bad := func() error {
		return reject(KindHaving, text, "HAVING must compare COUNT(*) (or its alias) with numeric literals")
	}
	switch e := e.(type) {
	case *sqlparser.ParenExpr:
		return r.havingExpr(e.Expr)
	case *sqlparser.AndExpr, *sqlparser.OrExpr:
		op, l, rt := OpAnd, sqlparser.Expr(nil), sqlparser.Expr(nil)
		if a, ok := e.(*sqlparser.AndExpr); ok {
			l, rt = a.Left, a.Right
		} else {
			o := e.(*sqlparser.OrExpr)
			op, l, rt = OpOr, o.Left, o.Right
		}
		lh, err := r.havingExpr(l)
		if err != nil {
			return nil, err
		}
		rh, err := r.havingExpr(rt)
		if err != nil {
			return nil, err
		}
		return &havingNode{op: op, args: []*havingNode{lh, rh}}, nil
	case *sqlparser.NotExpr:
		h, err := r.havingExpr(e.Expr)
		if err != nil {
			return nil, err
		}
		return &havingNode{op: OpNot, args: []*havingNode{h}}, nil
	case *sqlparser.ComparisonExpr:
		op, other := e.Operator, e.Right
		if !r.countRef(e.Left) {
			if !r.countRef(e.Right) {
				return nil, bad()
			}
			op, other = mirror(op), e.Left
		}
		if e.Escape != nil {
			return nil, bad()
		}
		lit, null, ok := numLiteral(other)
		if !ok {
			return nil, bad()
		}
		switch op {
		case sqlparser.EqualStr, sqlparser.LessThanStr, sqlparser.LessEqualStr, sqlparser.GreaterThanStr, sqlparser.GreaterEqualStr:
			return &havingNode{op: OpAtom, cmp: op, lit: lit, null: null}, nil
		case sqlparser.NotEqualStr:
			return &havingNode{op: OpNot, args: []*havingNode{{op: OpAtom, cmp: sqlparser.EqualStr, lit: lit, null: null}}}, nil
		}
		return nil, bad()
	case *sqlparser.RangeCond:
		if !r.countRef(e.Left) {
			return nil, bad()
		}
		lo, loNull, ok1 := numLiteral(e.From)
		hi, hiNull, ok2 := numLiteral(e.To)
		if !ok1 || !ok2 {
			return nil, bad()
		}
		h := &havingNode{op: OpAnd, args: []*havingNode{
			{op: OpAtom, cmp: sqlparser.GreaterEqualStr, lit: lo, null: loNull},
			{op: OpAtom, cmp: sqlparser.LessEqualStr, lit: hi, null: hiNull},
		}}
		if e.Operator == sqlparser.NotBetweenStr {
			h = &havingNode{op: OpNot, args: []*havingNode{h}}
		}
		return h, nil
	}
	return nil, bad()
}

// numLiteral evaluates a numeric literal (or NULL).
func numLiteral(e sqlparser.Expr) (x float64, null, ok bool) {
	if hasSubquery(e) {
		return 0, false, false
	}
	v, null, err := domain.Literal(e)
	if err != nil {
		return 0, false, false
	}
	if null {
		return 0, true, true
	}
	if v.Type() == domain.String {
		return 0, false, false
	}
	return v.Float(), false, true
}

// orderKey compiles one ORDER BY key to a select-list position.
func (r *router) orderKey(ob *sqlparser.Order) (orderKey, error) {
	text := sqlparser.String(ob)
	desc := ob.Direction == sqlparser.DescScr
	e := unparen(ob.Expr)
	bad := func() (orderKey, error) {
		return orderKey{}, reject(KindClause, text, "ORDER BY must name a selected column, an alias, COUNT(*) or a select-list position")
	}
	switch e := e.(type) {
	case *sqlparser.SQLVal:
		if e.Type != sqlparser.IntVal {
			return bad()
		}
		n, err := strconv.Atoi(string(e.Val))
		if err != nil || n < 1 || n > len(r.mq.items) {
			return orderKey{}, reject(KindClause, text, "ORDER BY position %s is not in the select list", string(e.Val))
		}
		return orderKey{col: n - 1, desc: desc}, nil
	case *sqlparser.ColName:
		if e.Qualifier.IsEmpty() {
			// Aliases first, as MySQL resolves them.
			for i, se := range r.sel.SelectExprs {
				if a, ok := se.(*sqlparser.AliasedExpr); ok && !a.As.IsEmpty() && a.As.Equal(e.Name) {
					return orderKey{col: i, desc: desc}, nil
				}
			}
		}
		a, err := r.c.resolve(e)
		if err != nil {
			return orderKey{}, err
		}
		for i, it := range r.mq.items {
			if it.kind == GroupColumn && r.mq.Query.GroupBy[it.group] == a {
				return orderKey{col: i, desc: desc}, nil
			}
		}
		return bad()
	}
	if r.isCount(e) {
		return orderKey{col: countKey, desc: desc}, nil
	}
	return bad()
}

func (r *router) limit(l *sqlparser.Limit) error {
	val := func(e sqlparser.Expr) (int64, error) {
		v, ok := e.(*sqlparser.SQLVal)
		if !ok || v.Type != sqlparser.IntVal {
			return 0, reject(KindClause, sqlparser.String(l), "LIMIT needs integer literals")
		}
		n, err := strconv.ParseInt(string(v.Val), 10, 64)
		if err != nil || n < 0 {
			return 0, reject(KindClause, sqlparser.String(l), "LIMIT needs non-negative integer literals")
		}
		return n, nil
	}
	if l.Rowcount == nil {
		return reject(KindClause, sqlparser.String(l), "LIMIT without a row count")
	}
	n, err := val(l.Rowcount)
	if err != nil {
		return err
	}
	r.mq.limit = n
	if l.Offset != nil {
		if r.mq.offset, err = val(l.Offset); err != nil {
			return err
		}
	}
	return nil
}

// groupTables decodes every code of the group-by columns and ranks the codes
// in SQL's ORDER BY order: NULL first, ENUM by declaration order, strings by
// bytes, numbers numerically.
func groupTables(dom *domain.Table, groupBy []int) (values [][]any, ranks [][]int) {
	values = make([][]any, len(groupBy))
	ranks = make([][]int, len(groupBy))
	for k, a := range groupBy {
		col := &dom.Columns[a]
		n := col.Size()
		vs := make([]any, n)
		for code := range n {
			switch {
			case code == col.NullCode():
				vs[code] = nil
			default:
				v, _ := col.Value(code)
				vs[code] = v.Any()
			}
		}
		order := make([]int, n)
		for i := range order {
			order[i] = i
		}
		if col.Kind() == domain.Categorical && !col.Enum() {
			slices.SortStableFunc(order, func(x, y int) int {
				switch {
				case vs[x] == nil && vs[y] == nil:
					return 0
				case vs[x] == nil:
					return -1
				case vs[y] == nil:
					return 1
				}
				vx, _ := col.Value(x)
				vy, _ := col.Value(y)
				c, _ := domain.Compare(vx, vy)
				return c
			})
		} else if nc := col.NullCode(); nc >= 0 {
			// Codes follow the value order; NULL (the last code) sorts first.
			copy(order[1:], order[:nc])
			order[0] = nc
		}
		rk := make([]int, n)
		for i, code := range order {
			rk[code] = i
		}
		values[k], ranks[k] = vs, rk
	}
	return values, ranks
}

// ExplainString describes how the model answers the query, for EXPLAIN.
func (mq *ModelQuery) ExplainString() string {
	var b strings.Builder
	fmt.Fprintf(&b, "answer from the model of %s: expected ", mq.tableName())
	mq.explainTail(&b)
	return b.String()
}

// tableName is db.name, or name without a database.
func (mq *ModelQuery) tableName() string {
	if mq.Table.DB != "" {
		return mq.Table.DB + "." + mq.Table.Name
	}
	return mq.Table.Name
}

// explainTail writes what the query computes: "counts by (…) where …;
// having …; order by …; limit …".
func (mq *ModelQuery) explainTail(b *strings.Builder) {
	q := mq.Query
	if len(q.GroupBy) > 0 {
		fmt.Fprintf(b, "counts by (%s)", names(mq.Table.Domain, q.GroupBy))
	} else {
		b.WriteString("total count")
	}
	if q.Where != nil {
		fmt.Fprintf(b, " where %s", q.Where.SQL)
		if mq.evidence != nil {
			b.WriteString(" (as evidence)")
		} else {
			fmt.Fprintf(b, " (from the marginal on %s)", names(mq.Table.Domain, q.Attrs))
		}
	}
	if mq.having != nil {
		fmt.Fprintf(b, "; having %s", mq.havingSQ)
	}
	if mq.orderSQ != "" {
		fmt.Fprintf(b, "; order by %s", mq.orderSQ)
	}
	if mq.limit >= 0 {
		fmt.Fprintf(b, "; limit %d offset %d", mq.limit, mq.offset)
	}
}

// String is ExplainString.
func (mq *ModelQuery) String() string { return mq.ExplainString() }

// HasLimit reports whether the query has its own LIMIT.
func (mq *ModelQuery) HasLimit() bool { return mq.limit >= 0 }

// counts computes the expected count of every group (Query's group layout)
// from m; the result may be m's (cached) slice and must not be modified.
func (mq *ModelQuery) counts(m ModelSource) ([]float64, error) {
	q := mq.Query
	switch {
	case q.Where == nil && len(q.GroupBy) == 0:
		return []float64{m.Total()}, nil
	case q.Where == nil:
		return m.Marginal(q.GroupBy), nil
	case mq.evidence != nil:
		return m.MarginalWhere(q.GroupBy, mq.evidence), nil
	}
	joint := m.Marginal(q.Attrs)
	return q.Answer(joint)
}
