package engine

import (
	"fmt"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/analyzer"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/expression/function"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/go-mysql-server/sql/types"
)

// ENUM and SET values in string contexts.
//
// go-mysql-server v0.20.0 keeps an ENUM value as its 1-based index (uint16)
// and a SET value as its bit mask (uint64), and most string operations
// convert that number, not the label, to text: education LIKE 'hs%' tests
// "4", UPPER(education) fails with "invalid type: uint16", CONCAT gives
// the index. MySQL uses the value's string there. The demo table and every
// synthetic copy of an ENUM column are ENUMs, so this is corrected here: an
// analyzer rule (enumStrings) wraps every ENUM or SET operand of LIKE,
// REGEXP and the string functions in an enumString, which evaluates to the
// label. Comparisons (=, <, IN, …), ORDER BY, GROUP BY and arithmetic are
// left alone: go-mysql-server already gives them MySQL's meaning (labels
// for comparisons, declaration order for sorting, the index for numbers).
//
// The label carries the column's collation if that is case-insensitive,
// else utf8mb4_0900_ai_ci, MySQL's default collation: education LIKE 'HS%'
// matches as it does on a MySQL server with default settings.
// go-mysql-server's own default collation (utf8mb4_0900_bin) would make it
// case-sensitive, as it does for VARCHAR columns.

// enumStringFuncs are the functions whose ENUM and SET arguments are
// strings (by their FunctionName).
var enumStringFuncs = map[string]bool{
	"ascii": true, "bit_length": true, "coalesce": true, "ifnull": true, "nullif": true, "char_length": true, "character_length": true, "collation": true,
	"concat": true, "concat_ws": true, "crc32": true, "elt": true, "field": true, "find_in_set": true,
	"from_base64": true, "hex": true, "if": true, "instr": true, "json_array": true,
	"json_object": true, "lcase": true, "left": true, "length": true, "locate": true,
	"lower": true, "lpad": true, "ltrim": true, "md5": true, "mid": true, "octet_length": true, "ord": true,
	"position": true, "regexp_instr": true, "regexp_like": true, "regexp_replace": true,
	"regexp_substr": true, "repeat": true, "replace": true, "reverse": true, "right": true, "rpad": true,
	"rtrim": true, "sha": true, "sha1": true, "sha2": true, "soundex": true, "strcmp": true, "substr": true,
	"substring": true, "substring_index": true, "to_base64": true, "trim": true, "ucase": true, "upper": true,
	"weight_string": true,
}

// enumStrings is the analyzer rule that wraps ENUM and SET operands of
// LIKE, REGEXP, COLLATE, conversions to strings and the string functions
// in enumString. A wrapped operand has a string type, so the rule is
// idempotent. It runs before go-mysql-server's own rules, which rewrite
// x LIKE 'abc%' into a range of x (simplifyFilters): on the ENUM index
// that range is empty.
func enumStrings(ctx *sql.Context, _ *analyzer.Analyzer, n sql.Node, _ *plan.Scope, _ analyzer.RuleSelector, _ *sql.QueryFlags) (sql.Node, transform.TreeIdentity, error) {
	return transform.NodeExprsWithOpaque(n, func(e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
		if sq, ok := e.(*plan.Subquery); ok {
			// A subquery may be unnested into a join before it is analyzed
			// on its own, so its expressions are rewritten here too.
			q, same, err := enumStrings(ctx, nil, sq.Query, nil, nil, nil)
			if err != nil || same {
				return e, transform.SameTree, err
			}
			return sq.WithQuery(q), transform.NewTree, nil
		}
		if !takesEnumStrings(e) {
			return e, transform.SameTree, nil
		}
		children := e.Children()
		var out []sql.Expression
		for i, c := range children {
			if !isEnumOrSet(c.Type()) {
				continue
			}
			if out == nil {
				out = make([]sql.Expression, len(children))
				copy(out, children)
			}
			out[i] = newEnumString(c)
		}
		if out == nil {
			return e, transform.SameTree, nil
		}
		if _, ok := e.(*function.If); ok {
			out[0] = children[0] // IF's condition is a number, not a string
		}
		ne, err := e.WithChildren(out...)
		if err != nil {
			return nil, transform.SameTree, err
		}
		return ne, transform.NewTree, nil
	})
}

// takesEnumStrings reports whether e reads its ENUM and SET operands as
// strings.
func takesEnumStrings(e sql.Expression) bool {
	switch e := e.(type) {
	case *expression.Like, *expression.CollatedExpression:
		return true
	case *expression.Convert:
		return types.IsText(e.Type()) || types.IsBinaryType(e.Type())
	case sql.Aggregation, sql.WindowAggregation:
		return false
	case sql.FunctionExpression:
		return enumStringFuncs[strings.ToLower(e.FunctionName())]
	}
	return false
}

func isEnumOrSet(t sql.Type) bool { return types.IsEnum(t) || types.IsSet(t) }

// enumString evaluates an ENUM or SET expression to its string value.
type enumString struct {
	expression.UnaryExpression
	typ sql.StringType
}

var (
	_ sql.Expression         = (*enumString)(nil)
	_ sql.CollationCoercible = (*enumString)(nil)
)

// newEnumString wraps child, an ENUM or SET expression.
func newEnumString(child sql.Expression) *enumString {
	return &enumString{UnaryExpression: expression.UnaryExpression{Child: child}, typ: types.CreateLongText(enumStringCollation(child.Type()))}
}

// enumStringCollation is the collation of the string value of a value of
// t, an ENUM or SET type: t's own if case-insensitive (or not utf8mb4),
// else utf8mb4_0900_ai_ci.
func enumStringCollation(t sql.Type) sql.CollationID {
	coll := sql.Collation_utf8mb4_0900_ai_ci
	if tc, ok := t.(sql.TypeWithCollation); ok {
		if c := tc.Collation(); !c.Collation().IsCaseSensitive || c.CharacterSet() != coll.CharacterSet() {
			coll = c
		}
	}
	return coll
}

// Type implements sql.Expression.
func (e *enumString) Type() sql.Type { return e.typ }

// CollationCoercibility implements sql.CollationCoercible: the implicit
// collation of a column.
func (e *enumString) CollationCoercibility(*sql.Context) (sql.CollationID, byte) {
	return e.typ.Collation(), 2
}

// IsNullable implements sql.Expression.
func (e *enumString) IsNullable() bool { return e.Child.IsNullable() }

// String implements sql.Expression: the operand itself, so that plans read
// as written.
func (e *enumString) String() string { return e.Child.String() }

// Eval implements sql.Expression.
func (e *enumString) Eval(ctx *sql.Context, row sql.Row) (any, error) {
	v, err := e.Child.Eval(ctx, row)
	if err != nil || v == nil {
		return nil, err
	}
	switch t := e.Child.Type().(type) {
	case sql.EnumType:
		idx, _, err := t.Convert(ctx, v)
		if err != nil {
			return nil, err
		}
		s, ok := t.At(int(idx.(uint16)))
		if !ok {
			return nil, fmt.Errorf("ENUM index %v out of range", idx)
		}
		return s, nil
	case sql.SetType:
		bits, _, err := t.Convert(ctx, v)
		if err != nil {
			return nil, err
		}
		return t.BitsToString(bits.(uint64))
	}
	return nil, fmt.Errorf("enumString over %s", e.Child.Type())
}

// WithChildren implements sql.Expression.
func (e *enumString) WithChildren(children ...sql.Expression) (sql.Expression, error) {
	if len(children) != 1 {
		return nil, sql.ErrInvalidChildrenNumber.New(e, len(children), 1)
	}
	if !isEnumOrSet(children[0].Type()) {
		return children[0], nil
	}
	return &enumString{UnaryExpression: expression.UnaryExpression{Child: children[0]}, typ: e.typ}, nil
}
