package planner

import (
	"slices"
	"strings"

	"github.com/dolthub/vitess/go/vt/sqlparser"

	"github.com/dpsql/dpsql/catalog/domain"
)

// Hierarchical workloads (households and persons, synth/hpd).
//
// Two query shapes compile to the paper's query classes:
//
//	Q_G (counts households):
//	  SELECT h.urban, COUNT(*) FROM households h
//	  WHERE EXISTS (SELECT 1 FROM persons p WHERE p.hh_id = h.hh_id AND p.sex = 'F')
//	  GROUP BY h.urban
//	Q_I (counts persons):
//	  SELECT p.sex, h.urban, COUNT(*) FROM persons p JOIN households h ON p.hh_id = h.hh_id
//	  GROUP BY p.sex, h.urban
//
// GROUP BY columns become free attributes of the query set, equality
// conditions (col = literal) fixed ones; the conditions inside one EXISTS
// hold for one person ("contains a person who is F and …"). A household
// query may not group by a person column, and Q_I may read persons alone
// (SELECT p.sex, COUNT(*) FROM persons p GROUP BY p.sex).

// HierTable is one table of a hierarchical source.
type HierTable struct {
	Name string        // unqualified table name
	Dom  *domain.Table // its attributes (key columns excluded)
	Keys []string      // its key columns (not attributes)
}

// HierCond fixes attribute Attr (of the unit if Group, else of the child)
// to code Code.
type HierCond struct {
	Group      bool
	Attr, Code int
}

// HierQuery is a compiled hierarchical workload query: a set of counting
// queries over every value combination of the unit attributes G and child
// attributes I satisfying Where.
type HierQuery struct {
	Persons bool // Q_I (counts persons); false: Q_G (counts households)
	G, I    []int
	Where   []HierCond
}

type hierCompiler struct {
	unit, child HierTable
	alias       map[string]bool // lower-cased name or alias → is the unit
	text        string
}

// CompileHierarchical compiles one workload query (text is its SQL, for
// errors).
func CompileHierarchical(text string, sel *sqlparser.Select, unit, child HierTable) (HierQuery, *Error) {
	c := &hierCompiler{unit: unit, child: child, alias: map[string]bool{}, text: text}
	var q HierQuery
	if sel == nil {
		return q, reject(KindNotSelect, text, "not a SELECT")
	}
	if err := checkClauses(sel); err != nil {
		return q, err
	}
	if len(sel.From) != 1 {
		return q, reject(KindJoin, text, "FROM one table or a JOIN of the two tables")
	}
	switch f := sel.From[0].(type) {
	case *sqlparser.AliasedTableExpr:
		isUnit, err := c.table(f)
		if err != nil {
			return q, err
		}
		q.Persons = !isUnit
	case *sqlparser.JoinTableExpr:
		l, ok1 := f.LeftExpr.(*sqlparser.AliasedTableExpr)
		r, ok2 := f.RightExpr.(*sqlparser.AliasedTableExpr)
		if !ok1 || !ok2 {
			return q, reject(KindJoin, text, "JOIN exactly the two tables")
		}
		a, err := c.table(l)
		if err != nil {
			return q, err
		}
		b, err := c.table(r)
		if err != nil {
			return q, err
		}
		if a == b {
			return q, reject(KindJoin, text, "JOIN the persons table with its households table")
		}
		if err := c.linkCond(f.Condition.On); err != nil {
			return q, err
		}
		q.Persons = true
	default:
		return q, reject(KindJoin, text, "unsupported FROM")
	}
	count := 0
	for _, e := range sel.SelectExprs {
		ae, ok := e.(*sqlparser.AliasedExpr)
		if !ok {
			return q, reject(KindSelectExpr, text, "SELECT columns and COUNT(*)")
		}
		if isCountStar(ae.Expr) {
			count++
			continue
		}
		col, ok := ae.Expr.(*sqlparser.ColName)
		if !ok {
			return q, reject(KindSelectExpr, text, "%s is neither a column nor COUNT(*)", sqlparser.String(ae.Expr))
		}
		if !slices.ContainsFunc(sel.GroupBy, func(g sqlparser.Expr) bool {
			gc, ok := g.(*sqlparser.ColName)
			return ok && strings.EqualFold(gc.Name.String(), col.Name.String())
		}) {
			return q, reject(KindGroupBy, text, "%s is selected but not grouped by", sqlparser.String(col))
		}
	}
	if count != 1 {
		return q, reject(KindAggregate, text, "select exactly one COUNT(*)")
	}
	for _, g := range sel.GroupBy {
		col, ok := g.(*sqlparser.ColName)
		if !ok {
			return q, reject(KindGroupBy, text, "GROUP BY columns only")
		}
		isUnit, a, err := c.resolve(col, !q.Persons)
		if err != nil {
			return q, err
		}
		if !isUnit && !q.Persons {
			return q, reject(KindGroupBy, text, "a household count cannot group by the person column %s: put a condition on it inside EXISTS (…)", sqlparser.String(col))
		}
		q.add(isUnit, a)
	}
	if sel.Where != nil {
		if err := c.conds(sel.Where.Expr, &q, q.Persons, false); err != nil {
			return q, err
		}
	}
	slices.Sort(q.G)
	slices.Sort(q.I)
	q.G, q.I = slices.Compact(q.G), slices.Compact(q.I)
	return q, nil
}

func (q *HierQuery) add(group bool, a int) {
	if group {
		q.G = append(q.G, a)
	} else {
		q.I = append(q.I, a)
	}
}

// table records t's name and alias; it reports whether t is the unit.
func (c *hierCompiler) table(t *sqlparser.AliasedTableExpr) (bool, *Error) {
	tn, ok := t.Expr.(sqlparser.TableName)
	if !ok {
		return false, reject(KindSubquery, c.text, "derived tables are not supported")
	}
	name := tn.Name.String()
	var isUnit bool
	switch {
	case strings.EqualFold(name, c.unit.Name):
		isUnit = true
	case strings.EqualFold(name, c.child.Name):
	default:
		return false, reject(KindOtherTable, c.text, "%s is neither %s nor %s", name, c.unit.Name, c.child.Name)
	}
	c.alias[strings.ToLower(name)] = isUnit
	if !t.As.IsEmpty() {
		c.alias[strings.ToLower(t.As.String())] = isUnit
	}
	return isUnit, nil
}

// resolve finds col's table and attribute. An unqualified column is looked
// up in the unit first if preferUnit, else in the child first.
func (c *hierCompiler) resolve(col *sqlparser.ColName, preferUnit bool) (bool, int, *Error) {
	name := col.Name.String()
	find := func(unit bool) int {
		t := c.child
		if unit {
			t = c.unit
		}
		for i := range t.Dom.Columns {
			if strings.EqualFold(t.Dom.Columns[i].Name(), name) {
				return i
			}
		}
		return -1
	}
	if q := col.Qualifier.Name.String(); q != "" {
		isUnit, ok := c.alias[strings.ToLower(q)]
		if !ok {
			return false, 0, reject(KindOtherTable, c.text, "unknown table %s", q)
		}
		a := find(isUnit)
		if a < 0 {
			return false, 0, reject(KindUnknownColumn, c.text, "%s is not an attribute (keys cannot be counted by)", sqlparser.String(col))
		}
		return isUnit, a, nil
	}
	for _, unit := range []bool{preferUnit, !preferUnit} {
		if a := find(unit); a >= 0 {
			return unit, a, nil
		}
	}
	return false, 0, reject(KindUnknownColumn, c.text, "unknown attribute %s", name)
}

func (c *hierCompiler) isKey(col *sqlparser.ColName) bool {
	for _, t := range []HierTable{c.unit, c.child} {
		for _, k := range t.Keys {
			if strings.EqualFold(k, col.Name.String()) {
				return true
			}
		}
	}
	return false
}

// linkCond accepts the join condition: key = key.
func (c *hierCompiler) linkCond(e sqlparser.Expr) *Error {
	cmp, ok := e.(*sqlparser.ComparisonExpr)
	if ok && cmp.Operator == sqlparser.EqualStr {
		l, ok1 := cmp.Left.(*sqlparser.ColName)
		r, ok2 := cmp.Right.(*sqlparser.ColName)
		if ok1 && ok2 && c.isKey(l) && c.isKey(r) {
			return nil
		}
	}
	return reject(KindJoin, c.text, "join on the privacy unit's link (persons.link = households.key)")
}

// conds adds the equality conditions of a conjunction. inPersons: inside
// EXISTS (one person's conditions) or a person-level query.
func (c *hierCompiler) conds(e sqlparser.Expr, q *HierQuery, persons, inExists bool) *Error {
	switch x := e.(type) {
	case *sqlparser.AndExpr:
		if err := c.conds(x.Left, q, persons, inExists); err != nil {
			return err
		}
		return c.conds(x.Right, q, persons, inExists)
	case *sqlparser.ParenExpr:
		return c.conds(x.Expr, q, persons, inExists)
	case *sqlparser.ExistsExpr:
		if persons || inExists {
			return reject(KindSubquery, c.text, "EXISTS belongs in a household count")
		}
		sub, ok := x.Subquery.Select.(*sqlparser.Select)
		if !ok || len(sub.From) != 1 {
			return reject(KindSubquery, c.text, "EXISTS (SELECT 1 FROM persons p WHERE p.link = h.key AND …)")
		}
		at, ok := sub.From[0].(*sqlparser.AliasedTableExpr)
		if !ok {
			return reject(KindSubquery, c.text, "EXISTS reads the persons table")
		}
		isUnit, err := c.table(at)
		if err != nil {
			return err
		}
		if isUnit || sub.Where == nil {
			return reject(KindSubquery, c.text, "EXISTS reads the persons table, linked to the household")
		}
		return c.conds(sub.Where.Expr, q, persons, true)
	case *sqlparser.ComparisonExpr:
		l, ok1 := x.Left.(*sqlparser.ColName)
		r, ok2 := x.Right.(*sqlparser.ColName)
		if ok1 && ok2 && x.Operator == sqlparser.EqualStr && c.isKey(l) && c.isKey(r) {
			return nil // the link
		}
		col, lit := l, x.Right
		if !ok1 {
			col, lit = r, x.Left
			if !ok2 {
				return reject(KindPredicate, c.text, "compare a column with a literal")
			}
		}
		if x.Operator != sqlparser.EqualStr {
			return reject(KindPredicate, c.text, "only equality conditions (col = value) are supported in hierarchical workloads")
		}
		isUnit, a, err := c.resolve(col, !persons && !inExists)
		if err != nil {
			return err
		}
		if !isUnit && !persons && !inExists {
			return reject(KindPredicate, c.text, "a condition on the person column %s of a household count goes inside EXISTS (…)", sqlparser.String(col))
		}
		if isUnit && inExists {
			return reject(KindPredicate, c.text, "inside EXISTS, conditions are on persons")
		}
		v, null, lerr := domain.Literal(lit)
		if lerr != nil || null {
			return reject(KindLiteral, c.text, "%s is not a literal", sqlparser.String(lit))
		}
		dom := c.child.Dom
		if isUnit {
			dom = c.unit.Dom
		}
		code, st := dom.Columns[a].Encode(v.Any())
		if st != domain.InDomain {
			return reject(KindOutOfDomain, c.text, "%s is outside the domain of %s", sqlparser.String(lit), sqlparser.String(col))
		}
		q.add(isUnit, a)
		q.Where = append(q.Where, HierCond{Group: isUnit, Attr: a, Code: code})
		return nil
	}
	return reject(KindPredicate, c.text, "unsupported condition %s: use col = value, AND and EXISTS", sqlparser.String(e))
}
