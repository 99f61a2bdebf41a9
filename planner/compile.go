package planner

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/dolthub/vitess/go/vt/sqlparser"
	"gonum.org/v1/gonum/mat"

	"github.com/dpsql/dpsql/catalog/domain"
	"github.com/dpsql/dpsql/internal/qfactors"
	"github.com/dpsql/dpsql/internal/vtparse"
)

// MinWeight and MaxWeight bound a workload query's WEIGHT. Only ratios
// matter to the mechanisms; the bounds keep every noise scale derived from
// a weight, every score scaled by one and every sum of them finite.
const (
	MinWeight = 1e-6
	MaxWeight = 1e6
)

// MaxCells bounds the number of cells of one compiled marginal.
const MaxCells = 1 << 24

// TableRef names the source table of a workload.
type TableRef struct {
	DB   string // "" matches any (or no) database qualifier
	Name string
	// Columns, if set, lists every column of the source table, so that a
	// column without a domain (KindNoDomain) is told apart from a column
	// that does not exist (KindUnknownColumn).
	Columns []string
}

// WorkloadQuery is one query of a workload as written by the analyst.
type WorkloadQuery struct {
	Text   string
	Select *sqlparser.Select // the parsed Text; nil to let Compile parse it
	Weight float64           // > 0 and finite
}

// Query is a compiled workload query: a weighted marginal on Attrs with a
// code-level predicate. Queries are immutable.
type Query struct {
	Text    string
	Weight  float64
	Attrs   []int // sorted attribute indices: group-by ∪ predicate columns
	GroupBy []int // the group-by attributes in select-list order (the answer's order)
	Where   *Pred // nil when there is no WHERE

	sizes      []int // domain sizes of Attrs
	groupSizes []int // domain sizes of GroupBy
}

// Workload is a compiled workload.
type Workload struct {
	Queries []*Query
}

// Marginal is a weighted attribute set, what mechanisms consume.
type Marginal struct {
	Attrs  []int
	Weight float64
	// Kron, if non-nil, is the set's queries as a Kronecker product of
	// per-attribute factors (Query.Kron; merged across the queries on the
	// set): range and other single-column WHERE conditions, for the
	// mechanisms that measure query sets (synth.Marginal.Kron). Nil means
	// the whole marginal.
	Kron []*mat.Dense
}

// Marginals returns the workload's distinct attribute sets with the
// weights of the queries on each set summed, in order of first appearance.
// Queries on no attribute (a plain total COUNT(*)) are left out: every
// mechanism estimates the total anyway.
func (w *Workload) Marginals() []Marginal {
	var out []Marginal
	for _, q := range w.Queries {
		if len(q.Attrs) == 0 {
			continue
		}
		kron, _ := q.Kron()
		i := slices.IndexFunc(out, func(m Marginal) bool { return slices.Equal(m.Attrs, q.Attrs) })
		if i < 0 {
			out = append(out, Marginal{Attrs: slices.Clone(q.Attrs), Weight: q.Weight, Kron: kron})
		} else {
			out[i].Weight += q.Weight
			out[i].Kron = qfactors.Merge(out[i].Kron, kron)
		}
	}
	return out
}

// Compile compiles a workload on the table src whose domain is dom. The
// first rejected query stops compilation; the *Error names it.
func Compile(queries []WorkloadQuery, src TableRef, dom *domain.Table) (*Workload, error) {
	if len(queries) == 0 {
		return nil, reject(KindEmpty, "", "empty workload")
	}
	w := &Workload{Queries: make([]*Query, 0, len(queries))}
	attrs := false
	for i, wq := range queries {
		q, err := compileOne(wq, src, dom, true, nil)
		if err != nil {
			err.Query = i + 1
			return nil, err
		}
		attrs = attrs || len(q.Attrs) > 0
		w.Queries = append(w.Queries, q)
	}
	if !attrs {
		return nil, reject(KindEmpty, "", "the workload only counts rows; it needs a query on some column")
	}
	return w, nil
}

// CompileQuery compiles one SELECT with weight 1.
func CompileQuery(sel *sqlparser.Select, src TableRef, dom *domain.Table) (*Query, error) {
	return compileQuery(sel, src, dom, nil)
}

// compileQuery is CompileQuery with LIKE matched by like (nil: refused).
// Literals outside the domain are plain SQL here (they match nothing).
func compileQuery(sel *sqlparser.Select, src TableRef, dom *domain.Table, like LikeFunc) (*Query, error) {
	q, err := compileOne(WorkloadQuery{Text: sqlparser.String(sel), Select: sel, Weight: 1}, src, dom, false, like)
	if err != nil {
		return nil, err
	}
	return q, nil
}

// compileOne compiles one query; strict refuses literals outside the
// public domain (see compiler.strict), like matches LIKE (nil: refused).
func compileOne(wq WorkloadQuery, src TableRef, dom *domain.Table, strict bool, like LikeFunc) (*Query, *Error) {
	if !(wq.Weight >= MinWeight && wq.Weight <= MaxWeight) {
		return nil, reject(KindWeight, wq.Text, "weight %v must be between %g and %g (only the ratios of weights matter)", wq.Weight, MinWeight, MaxWeight)
	}
	sel := wq.Select
	if sel == nil {
		stmt, err := vtparse.Parse(wq.Text)
		if err != nil {
			return nil, reject(KindNotSelect, wq.Text, "does not parse: %v", err)
		}
		var ok bool
		if sel, ok = stmt.(*sqlparser.Select); !ok {
			return nil, reject(KindNotSelect, wq.Text, "not a simple SELECT")
		}
	}
	c := &compiler{src: src, dom: dom, strict: strict, like: like}
	c.attrOf = c.resolve
	for _, step := range []func(*sqlparser.Select) *Error{checkClauses, c.checkFrom} {
		if err := step(sel); err != nil {
			return nil, err
		}
	}
	groupBy, err := c.selectList(sel)
	if err != nil {
		return nil, err
	}
	q := &Query{Text: wq.Text, Weight: wq.Weight, GroupBy: groupBy}
	if sel.Where != nil {
		if q.Where, err = c.pred(sel.Where.Expr); err != nil {
			return nil, err
		}
	}
	// Attrs = group-by ∪ predicate columns, sorted.
	q.Attrs = slices.Clone(groupBy)
	if q.Where != nil {
		q.Attrs = q.Where.attrs(q.Attrs)
	}
	slices.Sort(q.Attrs)
	q.Attrs = slices.Compact(q.Attrs)
	cells := 1
	for _, a := range q.Attrs {
		s := dom.Columns[a].Size()
		q.sizes = append(q.sizes, s)
		if cells > MaxCells/s {
			return nil, reject(KindTooLarge, wq.Text, "the marginal on %s has more than %d cells", names(dom, q.Attrs), MaxCells)
		}
		cells *= s
	}
	for _, a := range groupBy {
		q.groupSizes = append(q.groupSizes, dom.Columns[a].Size())
	}
	return q, nil
}

func names(dom *domain.Table, attrs []int) string {
	ns := make([]string, len(attrs))
	for i, a := range attrs {
		ns[i] = dom.Columns[a].Name()
	}
	return strings.Join(ns, ", ")
}

// checkClauses rejects the clauses a counting workload query cannot have.
func checkClauses(sel *sqlparser.Select) *Error {
	o := sel.QueryOpts
	switch {
	case o.Distinct:
		return reject(KindDistinct, "SELECT DISTINCT", "DISTINCT is not supported; a workload query counts rows")
	case sel.Having != nil:
		return reject(KindHaving, "HAVING "+sqlparser.String(sel.Having.Expr), "HAVING is not supported in a workload")
	case sel.With != nil:
		return reject(KindClause, sqlparser.String(sel.With), "WITH is not supported in a workload")
	case len(sel.OrderBy) > 0:
		return reject(KindClause, sqlparser.String(sel.OrderBy), "ORDER BY is not supported in a workload")
	case sel.Limit != nil:
		return reject(KindClause, sqlparser.String(sel.Limit), "LIMIT is not supported in a workload")
	case sel.Into != nil:
		return reject(KindClause, sqlparser.String(sel.Into), "INTO is not supported in a workload")
	case len(sel.Window) > 0:
		return reject(KindClause, sqlparser.String(sel.Window), "WINDOW is not supported in a workload")
	case sel.Lock != "":
		return reject(KindClause, sel.Lock, "locking clauses are not supported in a workload")
	case o.StraightJoinHint || o.SQLCalcFoundRows || o.SQLCache || o.SQLNoCache:
		return reject(KindClause, sqlparser.String(sel), "query options are not supported in a workload")
	}
	return nil
}

// checkFrom accepts exactly FROM source [AS alias].
func (c *compiler) checkFrom(sel *sqlparser.Select) *Error {
	if len(sel.From) == 0 {
		return reject(KindOtherTable, sqlparser.String(sel), "no FROM %s", c.src.Name)
	}
	if len(sel.From) > 1 {
		return reject(KindJoin, sqlparser.String(sel.From), "joins are not supported in a workload")
	}
	switch te := sel.From[0].(type) {
	case *sqlparser.JoinTableExpr, *sqlparser.ParenTableExpr:
		return reject(KindJoin, sqlparser.String(te), "joins are not supported in a workload")
	case *sqlparser.AliasedTableExpr:
		text := sqlparser.String(te)
		switch e := te.Expr.(type) {
		case *sqlparser.Subquery:
			return reject(KindSubquery, text, "derived tables are not supported in a workload")
		case sqlparser.TableName:
			if !c.isSource(e) {
				return reject(KindOtherTable, text, "the workload must query %s", c.src.Name)
			}
			if te.AsOf != nil {
				return reject(KindClause, text, "AS OF is not supported in a workload")
			}
			c.alias = te.As.String()
			return nil
		}
		return reject(KindOtherTable, text, "the workload must query %s", c.src.Name)
	}
	return reject(KindOtherTable, sqlparser.String(sel.From[0]), "the workload must query %s", c.src.Name)
}

func (c *compiler) isSource(t sqlparser.TableName) bool {
	if !strings.EqualFold(t.Name.String(), c.src.Name) {
		return false
	}
	db := t.DbQualifier.String()
	return db == "" || c.src.DB == "" || strings.EqualFold(db, c.src.DB)
}

// resolve maps a column reference to its attribute.
func (c *compiler) resolve(col *sqlparser.ColName) (int, *Error) {
	text := sqlparser.String(col)
	if q := col.Qualifier; !q.IsEmpty() {
		name := q.Name.String()
		ok := false
		if c.alias != "" {
			ok = strings.EqualFold(name, c.alias) && q.DbQualifier.IsEmpty()
		} else {
			ok = c.isSource(q)
		}
		if !ok {
			return 0, reject(KindOtherTable, text, "column of another table")
		}
	}
	name := col.Name.String()
	if a, ok := c.dom.Index(name); ok {
		return a, nil
	}
	for _, n := range c.src.Columns {
		if strings.EqualFold(n, name) {
			return 0, reject(KindNoDomain, text, "column %s has no public domain; declare one with ALTER TABLE … SET DOMAIN", name)
		}
	}
	return 0, reject(KindUnknownColumn, text, "unknown column %s in %s", name, c.src.Name)
}

// aggregates are MySQL's aggregate function names.
var aggregates = []string{"count", "sum", "avg", "min", "max", "group_concat", "std", "stddev", "stddev_pop",
	"stddev_samp", "var_pop", "var_samp", "variance", "bit_and", "bit_or", "bit_xor", "json_arrayagg",
	"json_objectagg", "any_value"}

// selectList checks the select list and GROUP BY, and returns the group-by
// attributes in select-list order.
func (c *compiler) selectList(sel *sqlparser.Select) ([]int, *Error) {
	var (
		cols  []int
		count bool
	)
	for _, se := range sel.SelectExprs {
		text := sqlparser.String(se)
		ae, ok := se.(*sqlparser.AliasedExpr)
		if !ok {
			return nil, reject(KindSelectExpr, text, "select a column or COUNT(*)")
		}
		if hasSubquery(ae.Expr) {
			return nil, reject(KindSubquery, text, "subqueries are not supported in a workload")
		}
		switch e := ae.Expr.(type) {
		case *sqlparser.ColName:
			a, err := c.resolve(e)
			if err != nil {
				return nil, err
			}
			if slices.Contains(cols, a) {
				return nil, reject(KindSelectExpr, text, "column selected twice")
			}
			cols = append(cols, a)
		case *sqlparser.FuncExpr:
			name := strings.ToLower(e.Name.String())
			if !slices.Contains(aggregates, name) {
				return nil, reject(KindSelectExpr, text, "select a column or COUNT(*)")
			}
			if name != "count" || e.Distinct || e.Over != nil || len(e.Exprs) != 1 {
				return nil, reject(KindAggregate, text, "COUNT(*) is the only supported aggregate")
			}
			if star, ok := e.Exprs[0].(*sqlparser.StarExpr); !ok || !star.TableName.IsEmpty() {
				return nil, reject(KindAggregate, text, "COUNT(*) is the only supported aggregate")
			}
			if count {
				return nil, reject(KindAggregate, text, "COUNT(*) selected twice")
			}
			count = true
		default:
			return nil, reject(KindSelectExpr, text, "select a column or COUNT(*)")
		}
	}
	if !count {
		return nil, reject(KindAggregate, sqlparser.String(sel.SelectExprs), "a workload query must select COUNT(*)")
	}
	var group []int
	for _, g := range sel.GroupBy {
		text := sqlparser.String(g)
		col, ok := g.(*sqlparser.ColName)
		if !ok {
			return nil, reject(KindGroupBy, text, "GROUP BY must list columns")
		}
		a, err := c.resolve(col)
		if err != nil {
			return nil, err
		}
		if slices.Contains(group, a) {
			return nil, reject(KindGroupBy, text, "column grouped twice")
		}
		if !slices.Contains(cols, a) {
			return nil, reject(KindGroupBy, text, "GROUP BY column %s is not in the select list", col.Name.String())
		}
		group = append(group, a)
	}
	for _, a := range cols {
		if !slices.Contains(group, a) {
			return nil, reject(KindGroupBy, c.dom.Columns[a].Name(), "selected column %s is not in GROUP BY", c.dom.Columns[a].Name())
		}
	}
	return cols, nil
}

// AllKWay returns the workload of all k-subsets of dom's columns, weight 1
// each, in lexicographic order. Its queries have no Text and no predicate.
func AllKWay(dom *domain.Table, k int) (*Workload, error) {
	n := len(dom.Columns)
	if k < 1 || k > n {
		return nil, reject(KindEmpty, "", "ALL %d-WAY needs 1 <= k <= %d columns", k, n)
	}
	const maxQueries = 1 << 20
	if binomial(n, k) > maxQueries {
		return nil, reject(KindTooLarge, "", "ALL %d-WAY over %d columns has more than %d marginals", k, n, maxQueries)
	}
	w := &Workload{}
	subset := make([]int, k)
	for i := range subset {
		subset[i] = i
	}
	for {
		q := &Query{Weight: 1, Attrs: slices.Clone(subset), GroupBy: slices.Clone(subset)}
		cells := 1
		for _, a := range subset {
			s := dom.Columns[a].Size()
			if cells > MaxCells/s {
				return nil, reject(KindTooLarge, "", "the marginal on %s has more than %d cells", names(dom, subset), MaxCells)
			}
			cells *= s
			q.sizes = append(q.sizes, s)
		}
		q.groupSizes = q.sizes
		w.Queries = append(w.Queries, q)
		// Next subset in lexicographic order.
		i := k - 1
		for i >= 0 && subset[i] == n-k+i {
			i--
		}
		if i < 0 {
			return w, nil
		}
		subset[i]++
		for j := i + 1; j < k; j++ {
			subset[j] = subset[j-1] + 1
		}
	}
}

// DefaultWorkload is the workload used when CREATE SYNTHETIC TABLE has no
// WORKLOAD clause: all 2-way marginals (1-way for a one-column table).
func DefaultWorkload(dom *domain.Table) (*Workload, error) {
	return AllKWay(dom, min(2, len(dom.Columns)))
}

// binomial is C(n, k), saturating at math.MaxInt.
func binomial(n, k int) int {
	k = min(k, n-k)
	r := 1
	for i := 1; i <= k; i++ {
		hi, lo := bitsMul(r, n-k+i)
		if hi != 0 {
			return math.MaxInt
		}
		r = lo / i
	}
	return r
}

func bitsMul(a, b int) (hi, lo int) {
	if a != 0 && b > math.MaxInt/a {
		return 1, 0
	}
	return 0, a * b
}

func (q *Query) String() string {
	if q.Text != "" {
		return q.Text
	}
	return fmt.Sprintf("marginal %v", q.Attrs)
}
