package planner

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dolthub/vitess/go/vt/sqlparser"

	"github.com/dpsql/dpsql/catalog/domain"
)

// Truth is an SQL truth value. The order False < Unknown < True makes AND
// the minimum, OR the maximum and NOT the mirror image (Kleene logic).
type Truth uint8

const (
	False Truth = iota
	Unknown
	True
)

func (t Truth) String() string {
	switch t {
	case False:
		return "FALSE"
	case Unknown:
		return "UNKNOWN"
	case True:
		return "TRUE"
	}
	return fmt.Sprintf("Truth(%d)", uint8(t))
}

// Not is SQL NOT.
func (t Truth) Not() Truth { return True - t }

// Op is the operator of a predicate node.
type Op uint8

const (
	OpAtom Op = iota + 1 // a condition on one attribute, given per code
	OpAnd
	OpOr
	OpNot
)

// Pred is a predicate compiled to code level. An OpAtom node gives the
// truth of its condition for every code of attribute Attr; OpAnd, OpOr and
// OpNot combine their Args. A subtree that mentions a single attribute is
// folded into one atom at compile time. Pred values are immutable.
type Pred struct {
	Op    Op
	Attr  int     // OpAtom: the attribute
	Truth []Truth // OpAtom: truth per code of Attr
	Args  []*Pred // OpAnd, OpOr (two or more), OpNot (one)
	SQL   string  // the SQL this node was compiled from
}

// Eval evaluates p on a cell; cell[a] is the code of attribute a (only the
// attributes p mentions are read).
func (p *Pred) Eval(cell []int) Truth {
	switch p.Op {
	case OpAtom:
		return p.Truth[cell[p.Attr]]
	case OpNot:
		return p.Args[0].Eval(cell).Not()
	case OpAnd:
		t := True
		for _, a := range p.Args {
			t = min(t, a.Eval(cell))
			if t == False {
				break
			}
		}
		return t
	case OpOr:
		t := False
		for _, a := range p.Args {
			t = max(t, a.Eval(cell))
			if t == True {
				break
			}
		}
		return t
	}
	panic("planner: invalid predicate node")
}

// Attrs appends the attributes p mentions to dst (possibly repeated).
func (p *Pred) attrs(dst []int) []int {
	if p.Op == OpAtom {
		return append(dst, p.Attr)
	}
	for _, a := range p.Args {
		dst = a.attrs(dst)
	}
	return dst
}

// single returns the one attribute p mentions, if it mentions exactly one.
func (p *Pred) single() (int, bool) {
	as := p.attrs(nil)
	for _, a := range as[1:] {
		if a != as[0] {
			return 0, false
		}
	}
	return as[0], true
}

// fold turns a single-attribute subtree into one atom by evaluating it on
// every code.
func fold(p *Pred, size int) *Pred {
	if p.Op == OpAtom {
		return p
	}
	a, ok := p.single()
	if !ok {
		return p
	}
	cell := make([]int, a+1)
	tr := make([]Truth, size)
	for c := range tr {
		cell[a] = c
		tr[c] = p.Eval(cell)
	}
	return &Pred{Op: OpAtom, Attr: a, Truth: tr, SQL: p.SQL}
}

// compiler turns WHERE expressions into Preds for one source table.
type compiler struct {
	src    TableRef
	alias  string // the FROM alias, if any
	dom    *domain.Table
	attrOf func(*sqlparser.ColName) (int, *Error)
	like   LikeFunc // nil: LIKE is not supported
	// strict refuses literals outside their column's public domain. A
	// workload query is charged: a typo there ('Male' for 'male') would
	// silently measure nothing. A query answered from a model is free, and
	// SQL semantics (no row matches) are right for it.
	strict bool
}

// LikeFunc returns the matcher of a LIKE pattern on the values of
// attribute attr, a text column, as the SQL engine matches them under the
// column's collation; escape is the escape character. An error rejects the
// pattern.
type LikeFunc func(attr int, pattern string, escape rune) (match func(value string) bool, err error)

func (c *compiler) pred(e sqlparser.Expr) (*Pred, *Error) {
	p, err := c.pred1(e)
	if err != nil {
		return nil, err
	}
	if p.Op != OpAtom {
		if a, ok := p.single(); ok {
			p = fold(p, c.dom.Columns[a].Size())
		}
	}
	return p, nil
}

func (c *compiler) pred1(e sqlparser.Expr) (*Pred, *Error) {
	text := sqlparser.String(e)
	switch e := e.(type) {
	case *sqlparser.ParenExpr:
		return c.pred(e.Expr)
	case *sqlparser.AndExpr, *sqlparser.OrExpr:
		op, l, r := OpAnd, sqlparser.Expr(nil), sqlparser.Expr(nil)
		if a, ok := e.(*sqlparser.AndExpr); ok {
			l, r = a.Left, a.Right
		} else {
			o := e.(*sqlparser.OrExpr)
			op, l, r = OpOr, o.Left, o.Right
		}
		lp, err := c.pred(l)
		if err != nil {
			return nil, err
		}
		rp, err := c.pred(r)
		if err != nil {
			return nil, err
		}
		var args []*Pred
		for _, p := range []*Pred{lp, rp} {
			if p.Op == op { // flatten a AND (b AND c)
				args = append(args, p.Args...)
			} else {
				args = append(args, p)
			}
		}
		return &Pred{Op: op, Args: args, SQL: text}, nil
	case *sqlparser.NotExpr:
		p, err := c.pred(e.Expr)
		if err != nil {
			return nil, err
		}
		return &Pred{Op: OpNot, Args: []*Pred{p}, SQL: text}, nil
	case *sqlparser.IsExpr:
		col, ok := e.Expr.(*sqlparser.ColName)
		if !ok || (e.Operator != sqlparser.IsNullStr && e.Operator != sqlparser.IsNotNullStr) {
			return nil, reject(KindPredicate, text, "only column IS [NOT] NULL is supported")
		}
		a, err := c.attrOf(col)
		if err != nil {
			return nil, err
		}
		dc := &c.dom.Columns[a]
		tr := make([]Truth, dc.Size())
		for code := range tr {
			isNull := code == dc.NullCode()
			tr[code] = truth(isNull == (e.Operator == sqlparser.IsNullStr))
		}
		return &Pred{Op: OpAtom, Attr: a, Truth: tr, SQL: text}, nil
	case *sqlparser.ComparisonExpr:
		return c.comparison(e, text)
	case *sqlparser.RangeCond:
		col, ok := e.Left.(*sqlparser.ColName)
		if !ok {
			return nil, reject(KindPredicate, text, "BETWEEN needs a column on the left")
		}
		a, err := c.attrOf(col)
		if err != nil {
			return nil, err
		}
		lo, err := c.literal(a, e.From, text)
		if err != nil {
			return nil, err
		}
		hi, err := c.literal(a, e.To, text)
		if err != nil {
			return nil, err
		}
		at := atom{kind: atomBetween, vals: []lit{lo, hi}, negate: e.Operator == sqlparser.NotBetweenStr}
		return c.atom(a, at, text)
	case *sqlparser.Subquery, *sqlparser.ExistsExpr:
		return nil, reject(KindSubquery, text, "subqueries are not supported in a workload")
	}
	return nil, reject(KindPredicate, text, "unsupported predicate; use comparisons of columns with literals, IN, BETWEEN, IS [NOT] NULL, AND, OR, NOT")
}

func truth(b bool) Truth {
	if b {
		return True
	}
	return False
}

// comparison compiles col op literal, literal op col, and col [NOT] IN (…).
func (c *compiler) comparison(e *sqlparser.ComparisonExpr, text string) (*Pred, *Error) {
	op := e.Operator
	col, ok := e.Left.(*sqlparser.ColName)
	other := e.Right
	if !ok {
		col, ok = e.Right.(*sqlparser.ColName)
		other = e.Left
		op = mirror(op)
	}
	if hasSubquery(e) {
		return nil, reject(KindSubquery, text, "subqueries are not supported in a workload")
	}
	if op == sqlparser.LikeStr || op == sqlparser.NotLikeStr {
		if !ok || e.Left != sqlparser.Expr(col) {
			return nil, reject(KindPredicate, text, "LIKE needs a column on the left and a pattern on the right")
		}
		return c.likePred(col, e, text)
	}
	if !ok || e.Escape != nil {
		return nil, reject(KindPredicate, text, "a comparison needs a column on one side and a literal on the other")
	}
	if _, isCol := other.(*sqlparser.ColName); isCol {
		return nil, reject(KindPredicate, text, "comparing two columns is not supported; compare a column with a literal")
	}
	a, err := c.attrOf(col)
	if err != nil {
		return nil, err
	}
	var at atom
	switch op {
	case sqlparser.InStr, sqlparser.NotInStr:
		tuple, ok := other.(sqlparser.ValTuple)
		if !ok || e.Left != sqlparser.Expr(col) {
			return nil, reject(KindPredicate, text, "IN needs a column and a list of literals")
		}
		at = atom{kind: atomIn, negate: op == sqlparser.NotInStr}
		for _, x := range tuple {
			l, err := c.literal(a, x, text)
			if err != nil {
				return nil, err
			}
			at.vals = append(at.vals, l)
		}
	case sqlparser.EqualStr, sqlparser.NotEqualStr, sqlparser.LessThanStr, sqlparser.LessEqualStr,
		sqlparser.GreaterThanStr, sqlparser.GreaterEqualStr:
		l, err := c.literal(a, other, text)
		if err != nil {
			return nil, err
		}
		at = atom{kind: atomCmp, op: op, vals: []lit{l}}
		if op == sqlparser.NotEqualStr {
			at.op, at.negate = sqlparser.EqualStr, true
		}
	default:
		return nil, reject(KindPredicate, text, "operator %s is not supported", strings.ToUpper(e.Operator))
	}
	return c.atom(a, at, text)
}

// likePred compiles col [NOT] LIKE 'pattern' [ESCAPE 'c'] on a text
// column with the compiler's LikeFunc.
func (c *compiler) likePred(col *sqlparser.ColName, e *sqlparser.ComparisonExpr, text string) (*Pred, *Error) {
	if c.like == nil {
		return nil, reject(KindPredicate, text, "operator %s is not supported", strings.ToUpper(e.Operator))
	}
	a, err := c.attrOf(col)
	if err != nil {
		return nil, err
	}
	dc := &c.dom.Columns[a]
	if dc.Type() != domain.String || dc.Kind() != domain.Categorical {
		return nil, reject(KindPredicate, text, "LIKE is supported on text columns only")
	}
	pat, patNull, perr := domain.Literal(e.Right)
	if perr != nil || hasSubquery(e.Right) || !patNull && pat.Type() != domain.String {
		return nil, reject(KindPredicate, text, "LIKE needs a quoted string pattern")
	}
	escape := '\\'
	if e.Escape != nil {
		ev, null, err := domain.Literal(e.Escape)
		if err != nil || null || ev.Type() != domain.String || utf8.RuneCountInString(ev.Str()) != 1 {
			return nil, reject(KindPredicate, text, "ESCAPE needs a one-character string")
		}
		escape, _ = utf8.DecodeRuneInString(ev.Str())
	}
	tr := make([]Truth, dc.Size())
	var match func(string) bool
	if !patNull {
		m, err := c.like(a, pat.Str(), escape)
		if err != nil {
			return nil, reject(KindPredicate, text, "%v", err)
		}
		match = m
	}
	for code := range tr {
		v, ok := dc.Value(code)
		switch {
		case !ok || patNull:
			tr[code] = Unknown
		default:
			tr[code] = truth(match(v.Str()) != (e.Operator == sqlparser.NotLikeStr))
		}
	}
	return &Pred{Op: OpAtom, Attr: a, Truth: tr, SQL: text}, nil
}

// mirror turns lit op col into col op' lit; an operator that does not
// mirror becomes "mirrored op", refused with that name later.
func mirror(op string) string {
	if m, ok := domain.MirrorComparison(op); ok {
		return m
	}
	return "mirrored " + op // unsupported with a column on the right
}

// lit is a literal operand; null marks SQL NULL.
type lit struct {
	v    domain.Value
	null bool
}

// literal evaluates e as a literal that fits attribute a's type.
func (c *compiler) literal(a int, e sqlparser.Expr, text string) (lit, *Error) {
	if hasSubquery(e) {
		return lit{}, reject(KindSubquery, text, "subqueries are not supported in a workload")
	}
	v, null, err := domain.Literal(e)
	if err != nil {
		if _, isCol := e.(*sqlparser.ColName); isCol {
			return lit{}, reject(KindPredicate, text, "comparing two columns is not supported; compare a column with a literal")
		}
		return lit{}, reject(KindPredicate, text, "%s is not a literal", sqlparser.String(e))
	}
	if null {
		return lit{null: true}, nil
	}
	col := &c.dom.Columns[a]
	if (v.Type() == domain.String) != (col.Type() == domain.String) {
		return lit{}, reject(KindLiteral, text, "literal %s does not fit column %s of type %v", sqlparser.String(e), col.Name(), col.Type())
	}
	return lit{v: v}, nil
}

// checkDomain refuses, in strict mode, an atom whose literals fall outside
// a's public domain: an equality or IN literal that is not one of its
// values (compared exactly, as the synthetic tables compare them; for a
// range, an integer within it; for bins, a number within the bounds), or a
// bound of <, <=, >, >= or BETWEEN beyond the smallest or largest value.
func (c *compiler) checkDomain(a int, at atom, text string) *Error {
	if !c.strict {
		return nil
	}
	col := &c.dom.Columns[a]
	member := at.kind == atomIn || at.kind == atomCmp && at.op == sqlparser.EqualStr
	for _, l := range at.vals {
		if l.null {
			continue
		}
		ok := false
		switch {
		case col.Kind().Ordered():
			lo, hi := col.Range()
			f := l.v.Float()
			ok = f >= lo && f <= hi && (!member || col.Kind() != domain.IntRange || f == math.Trunc(f))
		case member:
			for _, dv := range col.Values() {
				if d, cmp := domain.Compare(dv, l.v); cmp && d == 0 {
					ok = true
					break
				}
			}
		default: // a bound on a list: within its smallest and largest values
			below, above := false, false
			for _, dv := range col.Values() {
				if d, cmp := domain.Compare(l.v, dv); cmp {
					below = below || d >= 0
					above = above || d <= 0
				}
			}
			ok = below && above
		}
		if !ok {
			return reject(KindOutOfDomain, text, "%s is outside the public domain of %s, %s; nothing would be measured",
				quoteValue(l.v), col.Name(), describeDomain(col))
		}
	}
	return nil
}

// describeDomain spells col's domain for an error message: its bounds, or
// its values (the first 20).
func describeDomain(col *domain.Column) string {
	if col.Kind().Ordered() {
		lo, hi := col.Range()
		return fmt.Sprintf("[%s, %s]", strconv.FormatFloat(lo, 'g', -1, 64), strconv.FormatFloat(hi, 'g', -1, 64))
	}
	vals := col.Values()
	const show = 20
	parts := make([]string, 0, min(len(vals), show)+1)
	for i, v := range vals {
		if i == show {
			parts = append(parts, fmt.Sprintf("… %d more", len(vals)-show))
			break
		}
		parts = append(parts, quoteValue(v))
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// quoteValue spells v as an SQL literal.
func quoteValue(v domain.Value) string {
	if v.Type() == domain.String {
		return "'" + strings.ReplaceAll(v.String(), "'", "''") + "'"
	}
	return v.String()
}

type atomKind uint8

const (
	atomCmp     atomKind = iota + 1 // col op vals[0]
	atomIn                          // col IN vals
	atomBetween                     // col BETWEEN vals[0] AND vals[1]
)

// atom is one condition on one column, before it is evaluated per code.
type atom struct {
	kind   atomKind
	op     string // atomCmp: =, <, <=, >, >=
	vals   []lit
	negate bool // NOT IN, NOT BETWEEN, !=
}

// atom evaluates at on every code of attribute a.
func (c *compiler) atom(a int, at atom, text string) (*Pred, *Error) {
	if err := c.checkDomain(a, at, text); err != nil {
		return nil, err
	}
	col := &c.dom.Columns[a]
	tr := make([]Truth, col.Size())
	for code := range tr {
		var t Truth
		switch {
		case code == col.NullCode():
			t = Unknown
		case col.Kind() == domain.Binned:
			var ok bool
			t, ok = binTruth(col, code, at)
			if !ok {
				return nil, reject(KindBinAlignment, text, "%s splits bin %s of column %s; use bin edges (%s)",
					text, col.Label(code), col.Name(), edges(col))
			}
		default:
			v, _ := col.Value(code)
			t = valueTruth(v, at)
		}
		if at.negate {
			t = t.Not()
		}
		tr[code] = t
	}
	return &Pred{Op: OpAtom, Attr: a, Truth: tr, SQL: text}, nil
}

// valueTruth is the truth of at (without negation) for a non-NULL value.
func valueTruth(v domain.Value, at atom) Truth {
	cmp := func(l lit) (int, bool) {
		if l.null {
			return 0, false
		}
		return domain.Compare(v, l.v)
	}
	switch at.kind {
	case atomCmp:
		d, ok := cmp(at.vals[0])
		if !ok {
			return Unknown
		}
		return truth(cmpHolds(at.op, d))
	case atomIn:
		t := False
		for _, l := range at.vals {
			d, ok := cmp(l)
			switch {
			case !ok:
				t = max(t, Unknown)
			case d == 0:
				return True
			}
		}
		return t
	case atomBetween:
		dlo, okLo := cmp(at.vals[0])
		dhi, okHi := cmp(at.vals[1])
		lo, hi := Unknown, Unknown
		if okLo {
			lo = truth(dlo >= 0)
		}
		if okHi {
			hi = truth(dhi <= 0)
		}
		return min(lo, hi)
	}
	panic("planner: invalid atom")
}

func cmpHolds(op string, d int) bool {
	switch op {
	case sqlparser.EqualStr:
		return d == 0
	case sqlparser.LessThanStr:
		return d < 0
	case sqlparser.LessEqualStr:
		return d <= 0
	case sqlparser.GreaterThanStr:
		return d > 0
	case sqlparser.GreaterEqualStr:
		return d >= 0
	}
	panic("planner: invalid comparison " + op)
}

// interval is a set of reals with optionally open ends (±Inf allowed).
type interval struct {
	lo, hi         float64
	loOpen, hiOpen bool
}

func cmpInterval(op string, x float64) interval {
	inf := math.Inf(1)
	switch op {
	case sqlparser.EqualStr:
		return interval{lo: x, hi: x}
	case sqlparser.LessThanStr:
		return interval{lo: -inf, hi: x, hiOpen: true}
	case sqlparser.LessEqualStr:
		return interval{lo: -inf, hi: x}
	case sqlparser.GreaterThanStr:
		return interval{lo: x, hi: inf, loOpen: true}
	case sqlparser.GreaterEqualStr:
		return interval{lo: x, hi: inf}
	}
	panic("planner: invalid comparison " + op)
}

// binTruth decides at (without negation) for every value of a bin: it
// returns ok == false when some values of the bin satisfy it and some do
// not. A NULL literal makes every comparison UNKNOWN, as in SQL.
func binTruth(col *domain.Column, code int, at atom) (Truth, bool) {
	blo, bhi, closed := col.Bin(code)
	integer := col.Type() == domain.Int
	// all / none of the bin in S.
	inS := func(s interval) (all, none bool) {
		if integer {
			lo := math.Ceil(s.lo)
			if s.loOpen && lo == s.lo {
				lo++
			}
			hi := math.Floor(s.hi)
			if s.hiOpen && hi == s.hi {
				hi--
			}
			return blo >= lo && bhi <= hi, max(blo, lo) > min(bhi, hi)
		}
		b := interval{lo: blo, hi: bhi, hiOpen: !closed}
		all = (s.lo < b.lo || s.lo == b.lo && !s.loOpen) && (b.hi < s.hi || b.hi == s.hi && (!s.hiOpen || b.hiOpen))
		lo, loOpen := b.lo, false
		if s.lo > lo || s.lo == lo && s.loOpen {
			lo, loOpen = s.lo, s.loOpen
		}
		hi, hiOpen := b.hi, b.hiOpen
		if s.hi < hi || s.hi == hi && s.hiOpen {
			hi, hiOpen = s.hi, s.hiOpen
		}
		none = lo > hi || lo == hi && (loOpen || hiOpen)
		return all, none
	}
	decide := func(all, none bool) (Truth, bool) {
		switch {
		case all:
			return True, true
		case none:
			return False, true
		}
		return 0, false
	}
	switch at.kind {
	case atomCmp:
		if at.vals[0].null {
			return Unknown, true
		}
		return decide(inS(cmpInterval(at.op, at.vals[0].v.Float())))
	case atomBetween:
		lo, hi := at.vals[0], at.vals[1]
		if lo.null || hi.null {
			// (c >= lo) AND (c <= hi) with a NULL side: UNKNOWN AND the other.
			t := Unknown
			for i, op := range []string{sqlparser.GreaterEqualStr, sqlparser.LessEqualStr} {
				if l := at.vals[i]; !l.null {
					u, ok := binTruth(col, code, atom{kind: atomCmp, op: op, vals: []lit{l}})
					if !ok {
						return 0, false
					}
					t = min(t, u)
				}
			}
			return t, true
		}
		return decide(inS(interval{lo: lo.v.Float(), hi: hi.v.Float()}))
	case atomIn:
		// The bin is all in the list only if it is a set of integers
		// that the list covers; it is in none if no element falls in it.
		hasNull := false
		covered := map[float64]bool{}
		for _, l := range at.vals {
			if l.null {
				hasNull = true
				continue
			}
			x := l.v.Float()
			if _, none := inS(interval{lo: x, hi: x}); !none {
				covered[x] = true
			}
		}
		all := integer && len(covered) == int(bhi-blo)+1
		switch {
		case all:
			return True, true
		case len(covered) == 0 && hasNull:
			return Unknown, true
		case len(covered) == 0:
			return False, true
		}
		return 0, false
	}
	panic("planner: invalid atom")
}

// edges lists a binned column's edges for error messages.
func edges(col *domain.Column) string {
	const maxEdges = 12
	var b strings.Builder
	n := col.Bins()
	for i := 0; i <= n; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		if i == maxEdges-1 && n > maxEdges {
			b.WriteString("…, ")
			i = n
		}
		x := col.Edge(i)
		if col.Type() == domain.Int && i < n {
			x = math.Ceil(x) // first integer of bin i
		}
		fmt.Fprintf(&b, "%g", x)
	}
	return b.String()
}

func hasSubquery(e sqlparser.SQLNode) bool {
	found := false
	_ = sqlparser.Walk(func(n sqlparser.SQLNode) (bool, error) {
		switch n.(type) {
		case *sqlparser.Subquery, *sqlparser.ExistsExpr:
			found = true
			return false, nil
		}
		return true, nil
	}, e)
	return found
}
