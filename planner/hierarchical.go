package planner

import (
	"slices"
	"strings"

	"github.com/dolthub/vitess/go/vt/sqlparser"

	"github.com/dpsql/dpsql/catalog/domain"
)

// Hierarchical workloads (households and persons, synth/hpd).
//
// Three query shapes compile to the paper's query classes:
//
//	Q_G (counts households):
//	  SELECT h.urban, COUNT(*) FROM households h
//	  WHERE EXISTS (SELECT 1 FROM persons p WHERE p.hh_id = h.hh_id AND p.sex = 'F')
//	  GROUP BY h.urban
//	Q_I (counts persons):
//	  SELECT p.sex, h.urban, COUNT(*) FROM persons p JOIN households h ON p.hh_id = h.hh_id
//	  GROUP BY p.sex, h.urban
//	Q_R (typed households: counts persons by a relative's values), as a
//	self-join of persons or with the relative inside EXISTS:
//	  SELECT p.sex, COUNT(*) FROM persons p JOIN persons q ON p.hh_id = q.hh_id
//	  WHERE p.rel = 'spouse' AND q.rel = 'head' AND q.employed = 'yes' GROUP BY p.sex
//	  SELECT p.sex, COUNT(*) FROM persons p WHERE p.rel = 'spouse' AND EXISTS
//	    (SELECT 1 FROM persons q WHERE q.hh_id = p.hh_id AND q.rel = 'head' AND q.employed = 'yes')
//	  GROUP BY p.sex
//
// GROUP BY columns become free attributes of the query set, equality
// conditions (col = literal) fixed ones; the conditions inside one EXISTS
// hold for one person ("contains a person who is F and …"). Every table is
// linked to the others on the privacy unit's link (persons.link =
// households.key, or persons.link = persons.link). A household query may
// not group by a person column, and Q_I may read persons alone
// (SELECT p.sex, COUNT(*) FROM persons p GROUP BY p.sex).
//
// A relationship query fixes the relationship of the counted person and of
// the relative (col = 'head', or col IN ('head', 'spouse')); every pair of
// the two sets must belong to one relation of the typed model: married-to
// (head–spouse), has-child (head or spouse → child), has-parent (child →
// head or spouse). The EXISTS form counts each person once, which is the
// model's Q_R. The JOIN form counts pairs; it is accepted only when one side
// is a single head or a single spouse (a household has at most one of
// each), so that it counts the persons of the other side, which are then
// the counted ones.

// HierTable is one table of a hierarchical source.
type HierTable struct {
	Name string        // unqualified table name
	Dom  *domain.Table // its attributes (key columns excluded)
	Keys []string      // its key columns (not attributes)
	Link string        // the unit's key, or the child's link column
	Rel  string        // the child's relationship column (typed households), or ""
}

// HierCond fixes attribute Attr (of the unit if Group, of the relative in a
// relationship query if Relative, else of the person) to code Code.
type HierCond struct {
	Group      bool
	Relative   bool
	Attr, Code int
}

// HierRelation is the relation of a relationship query (Q_R).
type HierRelation uint8

// The relations of typed households.
const (
	NoRelation HierRelation = iota
	RelMarriedTo
	RelHasChild
	RelHasParent
)

// HierQuery is a compiled hierarchical workload query: a set of counting
// queries over every value combination of the unit attributes G, child
// attributes I (and the relative's attributes I2 of a relationship query)
// satisfying Where.
type HierQuery struct {
	Persons  bool // Q_I or Q_R (counts persons); false: Q_G (counts households)
	G, I     []int
	Where    []HierCond
	Relation HierRelation // Q_R if not NoRelation
	I2       []int
}

// Relationship types, in the order of the codes of HierTable.Rel's domain
// looked up by relTypeNames.
const (
	relHead = iota
	relSpouse
	relChild
)

var relTypeNames = [3]string{"head", "spouse", "child"}

// hierInst is one occurrence of a table in the query (persons may occur
// twice).
type hierInst struct {
	unit   bool
	names  []string // lower-cased table name and alias
	exists bool     // the table of the EXISTS subquery
	conds  []instCond
	group  []int // grouped attributes
	comp   int   // union-find parent over link equalities
}

// instCond is col = literal (one code) or col IN (literals).
type instCond struct {
	attr  int
	codes []int
}

type hierCompiler struct {
	unit, child HierTable
	inst        []*hierInst
	text        string
	relCodes    [3]int // codes of head, spouse, child in child.Rel (typed)
	relAttr     int    // attribute of child.Rel, or −1
	preferUnit  bool   // unqualified columns in both tables: the unit's (household counts)
}

// CompileHierarchical compiles one workload query (text is its SQL, for
// errors).
func CompileHierarchical(text string, sel *sqlparser.Select, unit, child HierTable) (HierQuery, *Error) {
	c := &hierCompiler{unit: unit, child: child, text: text, relAttr: -1}
	var q HierQuery
	if sel == nil {
		return q, reject(KindNotSelect, text, "not a SELECT")
	}
	if err := c.typedSetup(); err != nil {
		return q, err
	}
	if err := checkClauses(sel); err != nil {
		return q, err
	}
	if len(sel.From) != 1 {
		return q, reject(KindJoin, text, "FROM one table or a JOIN of the tables on the household link (comma joins are not supported)")
	}
	var on []sqlparser.Expr
	if err := c.flatten(sel.From[0], &on); err != nil {
		return q, err
	}
	outer := len(c.inst)
	// The outer WHERE: conjuncts and at most one EXISTS over persons.
	var where []sqlparser.Expr
	if sel.Where != nil {
		where = conjuncts(sel.Where.Expr, nil)
	}
	var exists *hierInst
	var inner []sqlparser.Expr
	for i := 0; i < len(where); i++ {
		x, ok := where[i].(*sqlparser.ExistsExpr)
		if !ok {
			continue
		}
		if exists != nil {
			return q, reject(KindSubquery, text, "one EXISTS (…) per query: its conditions hold for one person")
		}
		var err *Error
		if exists, inner, err = c.existsSub(x); err != nil {
			return q, err
		}
		where = slices.Delete(where, i, i+1)
		i--
	}
	nUnit, nChild := 0, 0
	for _, in := range c.inst[:outer] {
		if in.unit {
			nUnit++
		} else {
			nChild++
		}
	}
	var persons []*hierInst // outer persons occurrences, in FROM order
	var unitInst *hierInst
	for _, in := range c.inst[:outer] {
		if in.unit {
			unitInst = in
		} else {
			persons = append(persons, in)
		}
	}
	relQ := false // a relationship query
	switch {
	case nUnit > 1:
		return q, reject(KindJoin, text, "%s appears twice: households are joined with persons only", c.unit.Name)
	case nChild == 0 && nUnit == 1:
		// Q_G, with the person of the EXISTS if any.
	case nChild == 1:
		q.Persons = true
		if exists != nil {
			if c.relAttr < 0 {
				return q, reject(KindSubquery, text, "EXISTS over persons in a person count is a relationship query, which needs typed households (RELATIONSHIP = <column>)")
			}
			relQ = true
		}
	case nChild == 2 && exists == nil:
		if c.relAttr < 0 {
			return q, reject(KindJoin, text, "a self-join of %s is a relationship query, which needs typed households (RELATIONSHIP = <column>)", c.child.Name)
		}
		q.Persons, relQ = true, true
	case nChild == 2:
		return q, reject(KindSubquery, text, "a self-join of %s takes no EXISTS", c.child.Name)
	default:
		return q, reject(KindJoin, text, "FROM %s, %s, %s JOIN %s, or %s p JOIN %s q (a relationship query)", c.unit.Name, c.child.Name, c.child.Name, c.unit.Name, c.child.Name, c.child.Name)
	}
	// Conditions: links (col = col), col = literal, rel IN (…).
	c.preferUnit = !q.Persons
	scopeOuter := c.inst[:outer]
	for _, e := range slices.Concat(on, where) {
		if err := c.cond(e, scopeOuter, nil); err != nil {
			return q, err
		}
	}
	for _, e := range inner {
		if err := c.cond(e, scopeOuter, exists); err != nil {
			return q, err
		}
	}
	// Every occurrence is linked to the others: one household.
	for _, in := range c.inst[1:] {
		if c.find(in) != c.find(c.inst[0]) {
			return q, reject(KindJoin, text, "link every table on the household: %s.%s = %s.%s (and %s.%s = %s.%s for a self-join or EXISTS)",
				c.child.Name, c.child.Link, c.unit.Name, c.unit.Link, c.child.Name, c.child.Link, c.child.Name, c.child.Link)
		}
	}
	// GROUP BY and the select list.
	grouped := map[[2]int]bool{} // (occurrence, attribute)
	for _, g := range sel.GroupBy {
		col, ok := g.(*sqlparser.ColName)
		if !ok {
			return q, reject(KindGroupBy, text, "GROUP BY columns only")
		}
		in, a, err := c.resolve(col, scopeOuter, nil, !q.Persons)
		if err != nil {
			return q, err
		}
		if !in.unit && !q.Persons {
			return q, reject(KindGroupBy, text, "a household count cannot group by the person column %s: put a condition on it inside EXISTS (…)", sqlparser.String(col))
		}
		in.group = append(in.group, a)
		grouped[[2]int{slices.Index(c.inst, in), a}] = true
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
		in, a, err := c.resolve(col, scopeOuter, nil, !q.Persons)
		if err != nil {
			return q, err
		}
		if !grouped[[2]int{slices.Index(c.inst, in), a}] {
			return q, reject(KindGroupBy, text, "%s is selected but not grouped by", sqlparser.String(col))
		}
	}
	if count != 1 {
		return q, reject(KindAggregate, text, "select exactly one COUNT(*)")
	}
	// Roles: the household, the person (counted, or the one of EXISTS), and
	// the relative of a relationship query.
	person := exists
	var relative *hierInst
	if q.Persons {
		person = persons[0]
	}
	if relQ {
		if exists != nil {
			relative = exists
		} else {
			relative = persons[1]
		}
		var err *Error
		if person, relative, q.Relation, err = c.relation(person, relative, exists != nil); err != nil {
			return q, err
		}
	}
	if unitInst != nil {
		if err := c.emit(&q, unitInst, true, false); err != nil {
			return q, err
		}
	}
	if person != nil {
		if err := c.emit(&q, person, false, false); err != nil {
			return q, err
		}
	}
	if relative != nil {
		if err := c.emit(&q, relative, false, true); err != nil {
			return q, err
		}
	}
	for _, s := range []*[]int{&q.G, &q.I, &q.I2} {
		slices.Sort(*s)
		*s = slices.Compact(*s)
	}
	return q, nil
}

// typedSetup finds the relationship column's attribute and codes.
func (c *hierCompiler) typedSetup() *Error {
	if c.child.Rel == "" {
		return nil
	}
	for i := range c.child.Dom.Columns {
		col := &c.child.Dom.Columns[i]
		if !strings.EqualFold(col.Name(), c.child.Rel) {
			continue
		}
		c.relAttr = i
		for t, v := range relTypeNames {
			code, st := col.Encode(v)
			if st != domain.InDomain {
				return reject(KindOutOfDomain, c.text, "the relationship column %s has no value '%s'", c.child.Rel, v)
			}
			c.relCodes[t] = code
		}
		return nil
	}
	return reject(KindUnknownColumn, c.text, "no relationship column %s", c.child.Rel)
}

// conjuncts splits e at AND (and parentheses).
func conjuncts(e sqlparser.Expr, out []sqlparser.Expr) []sqlparser.Expr {
	switch x := e.(type) {
	case *sqlparser.AndExpr:
		return conjuncts(x.Right, conjuncts(x.Left, out))
	case *sqlparser.ParenExpr:
		return conjuncts(x.Expr, out)
	}
	return append(out, e)
}

// flatten records the tables of an inner-join tree and its ON conjuncts.
func (c *hierCompiler) flatten(t sqlparser.TableExpr, on *[]sqlparser.Expr) *Error {
	switch f := t.(type) {
	case *sqlparser.AliasedTableExpr:
		_, err := c.table(f, false)
		return err
	case *sqlparser.JoinTableExpr:
		if f.Join != sqlparser.JoinStr {
			return reject(KindJoin, c.text, "%s is not supported: inner JOIN … ON the household link only", strings.ToUpper(f.Join))
		}
		if len(f.Condition.Using) > 0 || f.Condition.On == nil {
			return reject(KindJoin, c.text, "JOIN … ON the household link (%s.%s = %s.%s)", c.child.Name, c.child.Link, c.unit.Name, c.unit.Link)
		}
		if err := c.flatten(f.LeftExpr, on); err != nil {
			return err
		}
		if err := c.flatten(f.RightExpr, on); err != nil {
			return err
		}
		*on = conjuncts(f.Condition.On, *on)
		return nil
	case *sqlparser.ParenTableExpr:
		if len(f.Exprs) == 1 {
			return c.flatten(f.Exprs[0], on)
		}
	}
	return reject(KindJoin, c.text, "unsupported FROM %s", sqlparser.String(t))
}

// table records an occurrence of a table.
func (c *hierCompiler) table(t *sqlparser.AliasedTableExpr, exists bool) (*hierInst, *Error) {
	tn, ok := t.Expr.(sqlparser.TableName)
	if !ok {
		return nil, reject(KindSubquery, c.text, "derived tables are not supported")
	}
	name := tn.Name.String()
	in := &hierInst{exists: exists, comp: len(c.inst)}
	switch {
	case strings.EqualFold(name, c.unit.Name):
		in.unit = true
	case strings.EqualFold(name, c.child.Name):
	default:
		return nil, reject(KindOtherTable, c.text, "%s is neither %s nor %s", name, c.unit.Name, c.child.Name)
	}
	in.names = []string{strings.ToLower(name)}
	if !t.As.IsEmpty() {
		in.names = []string{strings.ToLower(t.As.String())} // an alias hides the name, as in MySQL
	}
	for _, o := range c.inst {
		if o.exists == exists && slices.Contains(o.names, in.names[0]) {
			return nil, reject(KindJoin, c.text, "the table name or alias %s is used twice: give each occurrence its own alias", in.names[0])
		}
	}
	c.inst = append(c.inst, in)
	return in, nil
}

// existsSub checks EXISTS (SELECT … FROM persons q WHERE …) and returns its
// occurrence and WHERE conjuncts.
func (c *hierCompiler) existsSub(x *sqlparser.ExistsExpr) (*hierInst, []sqlparser.Expr, *Error) {
	sub, ok := x.Subquery.Select.(*sqlparser.Select)
	if !ok || len(sub.From) != 1 || sub.Where == nil || len(sub.GroupBy) > 0 || sub.Having != nil {
		return nil, nil, reject(KindSubquery, c.text, "EXISTS (SELECT 1 FROM %s p WHERE p.%s = … AND …)", c.child.Name, c.child.Link)
	}
	at, ok := sub.From[0].(*sqlparser.AliasedTableExpr)
	if !ok {
		return nil, nil, reject(KindSubquery, c.text, "EXISTS reads the %s table alone", c.child.Name)
	}
	in, err := c.table(at, true)
	if err != nil {
		return nil, nil, err
	}
	if in.unit {
		return nil, nil, reject(KindSubquery, c.text, "EXISTS reads the %s table, linked to the household", c.child.Name)
	}
	return in, conjuncts(sub.Where.Expr, nil), nil
}

func (c *hierCompiler) find(in *hierInst) int {
	i := slices.Index(c.inst, in)
	for c.inst[i].comp != i {
		i = c.inst[i].comp
	}
	return i
}

// resolve finds col's occurrence and attribute. A qualified column names an
// occurrence by alias (or table name); an unqualified one is looked up in
// the EXISTS table first (sub, if non-nil), then in the outer tables, the
// unit first if preferUnit; it is ambiguous between two persons.
func (c *hierCompiler) resolve(col *sqlparser.ColName, outer []*hierInst, sub *hierInst, preferUnit bool) (*hierInst, int, *Error) {
	name := col.Name.String()
	find := func(in *hierInst) int {
		t := c.child
		if in.unit {
			t = c.unit
		}
		for i := range t.Dom.Columns {
			if strings.EqualFold(t.Dom.Columns[i].Name(), name) {
				return i
			}
		}
		return -1
	}
	scope := outer
	if sub != nil {
		scope = append([]*hierInst{sub}, outer...)
	}
	if qual := strings.ToLower(col.Qualifier.Name.String()); qual != "" {
		for _, in := range scope {
			if slices.Contains(in.names, qual) {
				a := find(in)
				if a < 0 {
					return nil, 0, reject(KindUnknownColumn, c.text, "%s is not an attribute (keys cannot be counted by)", sqlparser.String(col))
				}
				return in, a, nil
			}
		}
		return nil, 0, reject(KindOtherTable, c.text, "unknown table %s", col.Qualifier.Name.String())
	}
	if sub != nil {
		if a := find(sub); a >= 0 {
			return sub, a, nil
		}
	}
	var hits []*hierInst
	for _, in := range outer {
		if find(in) >= 0 {
			hits = append(hits, in)
		}
	}
	if len(hits) > 1 {
		slices.SortStableFunc(hits, func(a, b *hierInst) int {
			if a.unit == b.unit {
				return 0
			}
			if a.unit == preferUnit {
				return -1
			}
			return 1
		})
		if hits[0].unit == hits[1].unit {
			return nil, 0, reject(KindUnknownColumn, c.text, "column %s is ambiguous: qualify it with the table's alias", name)
		}
	}
	if len(hits) == 0 {
		if sub == nil && !slices.ContainsFunc(outer, func(in *hierInst) bool { return !in.unit }) {
			for i := range c.child.Dom.Columns {
				if strings.EqualFold(c.child.Dom.Columns[i].Name(), name) {
					return nil, 0, reject(KindPredicate, c.text, "%s is a person column: a household count puts it inside EXISTS (…)", name)
				}
			}
		}
		return nil, 0, reject(KindUnknownColumn, c.text, "unknown attribute %s", name)
	}
	return hits[0], find(hits[0]), nil
}

// linkOf returns the occurrence whose link column col is, or nil.
func (c *hierCompiler) linkOf(col *sqlparser.ColName, scope []*hierInst) *hierInst {
	qual := strings.ToLower(col.Qualifier.Name.String())
	var hit *hierInst
	for _, in := range scope {
		link := c.child.Link
		if in.unit {
			link = c.unit.Link
		}
		if !strings.EqualFold(col.Name.String(), link) || (qual != "" && !slices.Contains(in.names, qual)) {
			continue
		}
		if hit != nil && qual == "" {
			return nil // ambiguous
		}
		if hit == nil {
			hit = in
		}
	}
	return hit
}

// cond applies one conjunct: a link equality, col = literal, or (on the
// relationship column) col IN (literals). sub is the EXISTS table when e is
// inside EXISTS: its conditions are on that table.
func (c *hierCompiler) cond(e sqlparser.Expr, outer []*hierInst, sub *hierInst) *Error {
	x, ok := e.(*sqlparser.ComparisonExpr)
	if !ok {
		if _, isExists := e.(*sqlparser.ExistsExpr); isExists {
			return reject(KindSubquery, c.text, "EXISTS cannot nest")
		}
		return reject(KindPredicate, c.text, "unsupported condition %s: use col = value, AND and EXISTS", sqlparser.String(e))
	}
	scope := outer
	if sub != nil {
		scope = append([]*hierInst{sub}, outer...)
	}
	l, ok1 := x.Left.(*sqlparser.ColName)
	r, ok2 := x.Right.(*sqlparser.ColName)
	if ok1 && ok2 {
		a, b := c.linkOf(l, scope), c.linkOf(r, scope)
		if x.Operator != sqlparser.EqualStr || a == nil || b == nil || a == b || (sub != nil && a != sub && b != sub) {
			return reject(KindJoin, c.text, "%s: tables are linked on the household only (%s.%s = %s.%s); other column comparisons are not supported",
				sqlparser.String(x), c.child.Name, c.child.Link, c.unit.Name, c.unit.Link)
		}
		ra, rb := c.find(a), c.find(b)
		c.inst[max(ra, rb)].comp = min(ra, rb)
		return nil
	}
	col, lit := l, x.Right
	if !ok1 {
		col, lit = r, x.Left
		if !ok2 {
			return reject(KindPredicate, c.text, "compare a column with a literal")
		}
	}
	var lits []sqlparser.Expr
	switch {
	case x.Operator == sqlparser.EqualStr:
		lits = []sqlparser.Expr{lit}
	case x.Operator == sqlparser.InStr && ok1:
		tuple, ok := x.Right.(sqlparser.ValTuple)
		if !ok {
			return reject(KindPredicate, c.text, "IN takes a list of values")
		}
		lits = tuple
	default:
		return reject(KindPredicate, c.text, "only equality conditions (col = value) are supported in hierarchical workloads")
	}
	in, a, err := c.resolve(col, outer, sub, c.preferUnit)
	if err != nil {
		return err
	}
	if sub != nil && in != sub {
		return reject(KindPredicate, c.text, "inside EXISTS, conditions are on the person of the EXISTS: move %s outside", sqlparser.String(x))
	}
	if sub == nil && in.exists {
		return reject(KindPredicate, c.text, "%s is a condition on the person of the EXISTS: move it inside", sqlparser.String(x))
	}
	isRel := !in.unit && a == c.relAttr
	if len(lits) > 1 && !isRel {
		return reject(KindPredicate, c.text, "IN lists are supported on the relationship column only (%s IN ('head', 'spouse'))", c.child.Rel)
	}
	dom := c.child.Dom
	if in.unit {
		dom = c.unit.Dom
	}
	ic := instCond{attr: a}
	for _, lit := range lits {
		v, null, lerr := domain.Literal(lit)
		if lerr != nil || null {
			return reject(KindLiteral, c.text, "%s is not a literal", sqlparser.String(lit))
		}
		code, st := dom.Columns[a].Encode(v.Any())
		if st != domain.InDomain {
			return reject(KindOutOfDomain, c.text, "%s is outside the domain of %s", sqlparser.String(lit), sqlparser.String(col))
		}
		ic.codes = append(ic.codes, code)
	}
	in.conds = append(in.conds, ic)
	return nil
}

// types returns the relationship types (relHead…) an occurrence is
// restricted to, or nil if unrestricted; several conditions intersect.
func (c *hierCompiler) types(in *hierInst) ([]int, bool) {
	var out []int
	restricted := false
	for _, ic := range in.conds {
		if ic.attr != c.relAttr {
			continue
		}
		var ts []int
		for t, code := range c.relCodes {
			if slices.Contains(ic.codes, code) {
				ts = append(ts, t)
			}
		}
		if !restricted {
			out, restricted = ts, true
			continue
		}
		out = slices.DeleteFunc(out, func(t int) bool { return !slices.Contains(ts, t) })
	}
	return out, restricted
}

// relation decides the relation of a relationship query and which person
// is counted. EXISTS form: person is counted, relative is the EXISTS one.
// JOIN form: the side restricted to a single head or spouse is the
// relative (the join then has one row per person of the other side).
func (c *hierCompiler) relation(person, relative *hierInst, existsForm bool) (*hierInst, *hierInst, HierRelation, *Error) {
	t1, ok1 := c.types(person)
	t2, ok2 := c.types(relative)
	rc := c.child.Rel
	if !ok1 || !ok2 {
		return nil, nil, 0, reject(KindPredicate, c.text, "a relationship query fixes the relationship of both persons (e.g. p.%s = 'spouse' AND q.%s = 'head')", rc, rc)
	}
	if len(t1) == 0 || len(t2) == 0 {
		return nil, nil, 0, reject(KindPredicate, c.text, "contradictory conditions on %s: no person qualifies", rc)
	}
	unique := func(ts []int) bool { return len(ts) == 1 && ts[0] != relChild }
	if !existsForm && !unique(t2) && unique(t1) {
		person, relative, t1, t2 = relative, person, t2, t1
	}
	of := func(a, b int) HierRelation {
		switch {
		case a == relHead && b == relSpouse, a == relSpouse && b == relHead:
			return RelMarriedTo
		case a != relChild && b == relChild:
			return RelHasChild
		case a == relChild && b != relChild:
			return RelHasParent
		}
		return NoRelation
	}
	rel := NoRelation
	for _, a := range t1 {
		for _, b := range t2 {
			r := of(a, b)
			if r == NoRelation {
				return nil, nil, 0, reject(KindPredicate, c.text, "(%s, %s) is not a relation of typed households: married-to (head and spouse), has-child (head or spouse, child), has-parent (child, head or spouse)",
					relTypeNames[a], relTypeNames[b])
			}
			if rel != NoRelation && r != rel {
				return nil, nil, 0, reject(KindPredicate, c.text, "the relationship conditions mix two relations (%s and %s): write one query per relation", relName(rel), relName(r))
			}
			rel = r
		}
	}
	if !existsForm && !unique(t2) {
		return nil, nil, 0, reject(KindJoin, c.text, "this self-join counts pairs, and a person may have several such relatives; "+
			"write the relative inside EXISTS (SELECT 1 FROM %s q WHERE q.%s = p.%s AND …), which counts each person once",
			c.child.Name, c.child.Link, c.child.Link)
	}
	return person, relative, rel, nil
}

func relName(r HierRelation) string {
	return [...]string{"none", "married-to", "has-child", "has-parent"}[r]
}

// emit adds an occurrence's grouped and fixed attributes to q. A
// relationship query keeps the relationship column only when it narrows
// the relation (a single type); a wider IN list is the relation itself.
func (c *hierCompiler) emit(q *HierQuery, in *hierInst, group, relative bool) *Error {
	add := func(a int) {
		switch {
		case group:
			q.G = append(q.G, a)
		case relative:
			q.I2 = append(q.I2, a)
		default:
			q.I = append(q.I, a)
		}
	}
	for _, a := range in.group {
		add(a)
	}
	for _, ic := range in.conds {
		if q.Relation != NoRelation && !group && ic.attr == c.relAttr {
			if ts, _ := c.types(in); len(ts) == 1 {
				code := c.relCodes[ts[0]]
				if !slices.Contains(q.Where, HierCond{Relative: relative, Attr: ic.attr, Code: code}) {
					add(ic.attr)
					q.Where = append(q.Where, HierCond{Relative: relative, Attr: ic.attr, Code: code})
				}
			}
			continue
		}
		if len(ic.codes) != 1 {
			return reject(KindPredicate, c.text, "IN lists are supported in relationship queries only")
		}
		add(ic.attr)
		q.Where = append(q.Where, HierCond{Group: group, Relative: relative, Attr: ic.attr, Code: ic.codes[0]})
	}
	return nil
}
