package domain

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/vt/sqlparser"

	"github.com/dpsql/dpsql/internal/vtparse"
)

// ErrNoDomain is wrapped by MissingDomainError.
var ErrNoDomain = errors.New("column has no public domain")

// MissingDomainError reports a column whose domain cannot be derived from
// the schema; the owner must declare one (ALTER TABLE … SET DOMAIN).
type MissingDomainError struct {
	Column string
	Reason string
}

func (e *MissingDomainError) Error() string {
	return fmt.Sprintf("column %q has no public domain (%s); declare one with ALTER TABLE … SET DOMAIN", e.Column, e.Reason)
}

func (e *MissingDomainError) Unwrap() error { return ErrNoDomain }

// FromSchema derives the public domain of a table from its schema, the
// text of its CHECK constraints and the owner's declarations:
//
//   - a declaration (keyed by column name, case-insensitive) wins; its name
//     and nullability are taken from the schema and its values converted to
//     the column's type;
//   - an ENUM column is categorical over its values;
//   - BOOLEAN / TINYINT(1) is the range 0..1;
//   - CHECK constraints that are conjunctions of c IN (…), c BETWEEN lo AND
//     hi and comparisons of c with literals bound a column: an IN list makes
//     it categorical, two bounds on an integer column make it a range;
//     other checks are ignored, since they do not give a finite domain.
//
// The returned Table holds, in schema order, the columns that have a
// domain. Every other column is reported in errs as a *MissingDomainError;
// unusable declarations and unparsable checks are reported too. The caller
// decides whether to fail.
func FromSchema(sch sql.Schema, checks []string, declared map[string]Column) (Table, []error) {
	var errs []error
	decl := make(map[string]Column, len(declared))
	for name, c := range declared {
		decl[strings.ToLower(name)] = c
	}
	bounds := make(map[string]*checkBounds)
	for _, text := range checks {
		if err := collectChecks(text, bounds); err != nil {
			errs = append(errs, err)
		}
	}
	var t Table
	for _, sc := range sch {
		key := strings.ToLower(sc.Name)
		var (
			col Column
			err error
		)
		if d, ok := decl[key]; ok {
			col, err = fromDeclaration(sc, d)
			delete(decl, key)
		} else {
			col, err = fromType(sc, bounds[key])
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		t.Columns = append(t.Columns, col)
	}
	for _, d := range decl {
		errs = append(errs, fmt.Errorf("domain declared for unknown column %q", d.name))
	}
	return t, errs
}

func isInteger(t sql.Type) bool { return types.IsInteger(t) || types.IsYear(t) }
func isNumeric(t sql.Type) bool { return types.IsNumber(t) || types.IsYear(t) }

// fromDeclaration fits an owner's declaration to the schema column.
func fromDeclaration(sc *sql.Column, d Column) (Column, error) {
	wrap := func(err error) error { return fmt.Errorf("declared domain of column %q: %w", sc.Name, err) }
	switch d.kind {
	case Binned:
		if !isNumeric(sc.Type) {
			return Column{}, wrap(fmt.Errorf("%w: BETWEEN … BINS needs a numeric column, not %s", ErrInvalid, sc.Type))
		}
		c, err := NewBinned(sc.Name, d.lo, d.hi, d.bins, isInteger(sc.Type), sc.Nullable)
		if err != nil {
			return Column{}, wrap(err)
		}
		return c, nil
	case IntRange:
		if !isNumeric(sc.Type) {
			return Column{}, wrap(fmt.Errorf("%w: an integer range needs a numeric column, not %s", ErrInvalid, sc.Type))
		}
		c, err := NewIntRange(sc.Name, int64(d.lo), int64(d.hi), sc.Nullable)
		if err != nil {
			return Column{}, wrap(err)
		}
		return c, nil
	case Categorical:
		typ := columnType(sc.Type)
		if typ == 0 {
			return Column{}, wrap(fmt.Errorf("%w: unsupported column type %s", ErrInvalid, sc.Type))
		}
		values := make([]Value, len(d.values))
		for i, v := range d.values {
			cv, ok := convertValue(v, typ)
			if !ok {
				return Column{}, wrap(fmt.Errorf("%w: value %v is not a %v", ErrInvalid, v, typ))
			}
			values[i] = cv
		}
		c, err := NewCategorical(sc.Name, typ, values, sc.Nullable, types.IsEnum(sc.Type))
		if err != nil {
			return Column{}, wrap(err)
		}
		if c.enum {
			et := sc.Type.(sql.EnumType)
			for _, v := range values {
				if et.IndexOf(v.s) < 0 {
					return Column{}, wrap(fmt.Errorf("%w: %q is not a value of %s", ErrInvalid, v.s, sc.Type))
				}
			}
		}
		return c, nil
	}
	return Column{}, wrap(fmt.Errorf("%w: no domain kind", ErrInvalid))
}

// columnType is the domain value type of a schema type (0 if unsupported).
func columnType(t sql.Type) Type {
	switch {
	case types.IsEnum(t) || types.IsText(t):
		return String
	case isInteger(t):
		return Int
	case isNumeric(t):
		return Float
	}
	return 0
}

// convertValue converts a declared value to typ; integral floats become
// integers and numbers become floats, strings stay strings.
func convertValue(v Value, typ Type) (Value, bool) {
	switch {
	case v.typ == typ:
		return v, true
	case typ == Float && v.typ == Int:
		return FloatValue(float64(v.i)), true
	case typ == Int && v.typ == Float && v.f == math.Trunc(v.f) && math.Abs(v.f) <= 1<<53:
		return IntValue(int64(v.f)), true
	}
	return Value{}, false
}

func fromType(sc *sql.Column, b *checkBounds) (Column, error) {
	switch {
	case types.IsEnum(sc.Type):
		et := sc.Type.(sql.EnumType)
		var values []Value
		for _, s := range et.Values() {
			if b != nil && b.in != nil && !slices.Contains(b.in, StringValue(s)) {
				continue
			}
			values = append(values, StringValue(s))
		}
		return NewCategorical(sc.Name, String, values, sc.Nullable, true)
	case types.IsBoolean(sc.Type):
		return NewIntRange(sc.Name, 0, 1, sc.Nullable)
	}
	typ := columnType(sc.Type)
	if b == nil {
		return Column{}, &MissingDomainError{Column: sc.Name, Reason: "no ENUM, BOOLEAN or CHECK bounds"}
	}
	if b.in != nil {
		values := make([]Value, 0, len(b.in))
		for _, v := range b.in {
			cv, ok := convertValue(v, typ)
			if !ok || typ == 0 {
				return Column{}, fmt.Errorf("CHECK on column %q: value %v does not fit the column's type: %w", sc.Name, v, ErrInvalid)
			}
			if b.admits(cv) && !slices.Contains(values, cv) {
				values = append(values, cv)
			}
		}
		c, err := NewCategorical(sc.Name, typ, values, sc.Nullable, false)
		if err != nil {
			return Column{}, fmt.Errorf("CHECK on column %q: %w", sc.Name, err)
		}
		return c, nil
	}
	if typ != Int {
		// The reason reaches analysts (CREATE SYNTHETIC TABLE's error): it
		// names no SQL type, whose sizes are not public.
		reason := "a non-integer numeric column needs bins"
		switch typ {
		case String:
			reason = "a text column needs an IN list"
		case 0:
			reason = "the column's type has no supported domain"
		}
		return Column{}, &MissingDomainError{Column: sc.Name, Reason: reason}
	}
	if !b.hasLo || !b.hasHi {
		return Column{}, &MissingDomainError{Column: sc.Name, Reason: "CHECK gives only one bound"}
	}
	lo, hi := math.Ceil(b.lo), math.Floor(b.hi)
	if b.loOpen && lo == b.lo {
		lo++
	}
	if b.hiOpen && hi == b.hi {
		hi--
	}
	if hi-lo+1 > MaxSize {
		return Column{}, &MissingDomainError{Column: sc.Name,
			Reason: fmt.Sprintf("CHECK range %v..%v has more than %d values and needs bins", lo, hi, MaxSize)}
	}
	c, err := NewIntRange(sc.Name, int64(lo), int64(hi), sc.Nullable)
	if err != nil {
		return Column{}, fmt.Errorf("CHECK on column %q: %w", sc.Name, err)
	}
	return c, nil
}

// checkBounds accumulates what CHECK constraints say about one column.
type checkBounds struct {
	in             []Value // nil: no IN list
	lo, hi         float64
	hasLo, hasHi   bool
	loOpen, hiOpen bool
}

func (b *checkBounds) admits(v Value) bool {
	if v.typ == String {
		return true
	}
	f := v.Float()
	return !(b.hasLo && (f < b.lo || b.loOpen && f == b.lo) || b.hasHi && (f > b.hi || b.hiOpen && f == b.hi))
}

func (b *checkBounds) lower(x float64, open bool) {
	if !b.hasLo || x > b.lo || x == b.lo && open {
		b.lo, b.loOpen, b.hasLo = x, open, true
	}
}

func (b *checkBounds) upper(x float64, open bool) {
	if !b.hasHi || x < b.hi || x == b.hi && open {
		b.hi, b.hiOpen, b.hasHi = x, open, true
	}
}

// collectChecks parses one CHECK expression and records the bounds of its
// top-level conjuncts into bounds (keyed by lower-case column name).
func collectChecks(text string, bounds map[string]*checkBounds) error {
	stmt, err := vtparse.Parse("SELECT 1 FROM t WHERE " + text)
	if err != nil {
		return fmt.Errorf("parsing CHECK (%s): %w", text, err)
	}
	sel, ok := stmt.(*sqlparser.Select)
	if !ok || sel.Where == nil {
		return fmt.Errorf("parsing CHECK (%s): not an expression", text)
	}
	get := func(c *sqlparser.ColName) *checkBounds {
		key := c.Name.Lowered()
		if bounds[key] == nil {
			bounds[key] = &checkBounds{}
		}
		return bounds[key]
	}
	var walk func(e sqlparser.Expr)
	walk = func(e sqlparser.Expr) {
		switch e := e.(type) {
		case *sqlparser.AndExpr:
			walk(e.Left)
			walk(e.Right)
		case *sqlparser.ParenExpr:
			walk(e.Expr)
		case *sqlparser.RangeCond:
			col, ok := e.Left.(*sqlparser.ColName)
			lo, lok := numericLiteral(e.From)
			hi, hok := numericLiteral(e.To)
			if ok && lok && hok && e.Operator == sqlparser.BetweenStr {
				b := get(col)
				b.lower(lo, false)
				b.upper(hi, false)
			}
		case *sqlparser.ComparisonExpr:
			col, ok := e.Left.(*sqlparser.ColName)
			other, op := e.Right, e.Operator
			if !ok {
				if col, ok = e.Right.(*sqlparser.ColName); !ok {
					return
				}
				// lit op col; lit IN (cols…) and the like are no bound.
				other = e.Left
				op, _ = MirrorComparison(op)
			}
			if op == sqlparser.InStr {
				tuple, ok := other.(sqlparser.ValTuple)
				if !ok {
					return
				}
				var vals []Value
				for _, x := range tuple {
					v, null, err := Literal(x)
					if err != nil {
						return
					}
					if !null {
						vals = append(vals, v)
					}
				}
				b := get(col)
				if b.in == nil {
					b.in = vals
				} else {
					b.in = slices.DeleteFunc(b.in, func(v Value) bool { return !slices.Contains(vals, v) })
				}
				if b.in == nil {
					b.in = []Value{}
				}
				return
			}
			x, ok := numericLiteral(other)
			if !ok {
				return
			}
			b := get(col)
			switch op {
			case sqlparser.GreaterEqualStr:
				b.lower(x, false)
			case sqlparser.GreaterThanStr:
				b.lower(x, true)
			case sqlparser.LessEqualStr:
				b.upper(x, false)
			case sqlparser.LessThanStr:
				b.upper(x, true)
			case sqlparser.EqualStr:
				b.lower(x, false)
				b.upper(x, false)
			}
		}
	}
	walk(sel.Where.Expr)
	return nil
}

// MirrorComparison returns the comparison operator op with its operands
// swapped (lit < col is col > lit), for the operators sqlparser spells <,
// >, <=, >=, = and !=; ok is false for any other operator.
func MirrorComparison(op string) (mirrored string, ok bool) {
	switch op {
	case sqlparser.LessThanStr:
		return sqlparser.GreaterThanStr, true
	case sqlparser.GreaterThanStr:
		return sqlparser.LessThanStr, true
	case sqlparser.LessEqualStr:
		return sqlparser.GreaterEqualStr, true
	case sqlparser.GreaterEqualStr:
		return sqlparser.LessEqualStr, true
	case sqlparser.EqualStr, sqlparser.NotEqualStr:
		return op, true
	}
	return "", false
}

func numericLiteral(e sqlparser.Expr) (float64, bool) {
	v, null, err := Literal(e)
	if err != nil || null || v.typ == String {
		return 0, false
	}
	return v.Float(), true
}

// ErrNotLiteral is returned by Literal for expressions that are not literals.
var ErrNotLiteral = errors.New("not a literal")

// Literal evaluates a vitess literal expression: a string, an integer,
// a decimal or float number (possibly signed, possibly in parentheses),
// a hex or bit number, TRUE/FALSE (1/0) or NULL (null == true).
func Literal(e sqlparser.Expr) (v Value, null bool, err error) {
	switch e := e.(type) {
	case *sqlparser.NullVal:
		return Value{}, true, nil
	case sqlparser.BoolVal:
		if e {
			return IntValue(1), false, nil
		}
		return IntValue(0), false, nil
	case *sqlparser.ParenExpr:
		return Literal(e.Expr)
	case *sqlparser.UnaryExpr:
		if e.Operator != sqlparser.UMinusStr && e.Operator != sqlparser.UPlusStr {
			break
		}
		v, null, err := Literal(e.Expr)
		if err != nil || null || e.Operator == sqlparser.UPlusStr {
			return v, null, err
		}
		switch v.typ {
		case Int:
			if v.i == math.MinInt64 {
				return FloatValue(-float64(v.i)), false, nil
			}
			return IntValue(-v.i), false, nil
		case Float:
			return FloatValue(-v.f), false, nil
		}
		return Value{}, false, fmt.Errorf("%w: -%s", ErrNotLiteral, sqlparser.String(e.Expr))
	case *sqlparser.SQLVal:
		s := string(e.Val)
		switch e.Type {
		case sqlparser.StrVal:
			return StringValue(s), false, nil
		case sqlparser.IntVal:
			if i, err := strconv.ParseInt(s, 10, 64); err == nil {
				return IntValue(i), false, nil
			}
			if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsInf(f, 0) {
				return FloatValue(f), false, nil
			}
		case sqlparser.FloatVal:
			if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsInf(f, 0) {
				return FloatValue(f), false, nil
			}
		case sqlparser.HexNum:
			if i, err := strconv.ParseInt(strings.TrimPrefix(strings.ToLower(s), "0x"), 16, 64); err == nil {
				return IntValue(i), false, nil
			}
		case sqlparser.BitVal:
			if i, err := strconv.ParseInt(s, 2, 64); err == nil {
				return IntValue(i), false, nil
			}
		}
		return Value{}, false, fmt.Errorf("%w: %s is out of range or unsupported", ErrNotLiteral, sqlparser.String(e))
	}
	return Value{}, false, fmt.Errorf("%w: %s", ErrNotLiteral, sqlparser.String(e))
}
