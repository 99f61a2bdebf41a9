package engine

import (
	"fmt"
	"unicode/utf8"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/sqltypes"

	"github.com/dpsql/dpsql/catalog/domain"
	"github.com/dpsql/dpsql/synth"
)

// Public column types.
//
// What an analyst sees of a raw table must be public: its columns' names
// and domains. The SQL types of its columns are not: the owner's schema may
// have been sized to the data (VARCHAR(13) for a longest name of 13
// characters, BIGINT because some salary exceeds 2^31, DECIMAL(9,2) for the
// largest amount), and an importer's inference certainly would be. So every
// type an analyst sees (the columns of a synthetic or answers table, hence
// DESCRIBE, SHOW CREATE TABLE, information_schema.columns and result
// metadata, and the type column of SHOW DOMAIN) is computed from the
// column's public domain alone:
//
//   - a categorical column of an ENUM: ENUM of the domain's values, in code
//     order (the declared ENUM is a declaration of the domain);
//   - another categorical text column: VARCHAR(n), n the length in
//     characters of its longest declared value (at least 1; LONGTEXT beyond
//     VARCHAR's 16383 characters);
//   - integer values (categorical integers, integer ranges and BOOLEAN,
//     binned integer columns): BIGINT;
//   - other numbers (categorical or binned): DOUBLE;
//   - the row-number column that replaces an AUTO_INCREMENT surrogate key:
//     BIGINT NOT NULL.
//
// Nullability is the domain's (NULL is one of its values or not). Two
// sources with the same domain thus give synthetic tables of the same
// schema, whatever their raw types.

// maxVarcharChars is the longest VARCHAR of the default character set
// (utf8mb4: 65535 bytes / 4).
const maxVarcharChars = 16383

// publicType is the SQL type of a column whose public domain is c.
func publicType(c *domain.Column) (sql.Type, error) {
	switch c.Type() {
	case domain.Int:
		return types.Int64, nil
	case domain.Float:
		return types.Float64, nil
	case domain.String:
	default:
		return nil, fmt.Errorf("column %s: domain of unknown type %v", quoteIdent(c.Name()), c.Type())
	}
	vals := c.Values() // a string domain is categorical
	labels := make([]string, len(vals))
	longest := 1
	for i, v := range vals {
		labels[i] = v.Str()
		longest = max(longest, utf8.RuneCountInString(labels[i]))
	}
	switch {
	case c.Enum():
		t, err := types.CreateEnumType(labels, sql.Collation_Default)
		if err != nil {
			return nil, fmt.Errorf("column %s: ENUM of its domain: %w", quoteIdent(c.Name()), err)
		}
		return t, nil
	case longest > maxVarcharChars:
		return types.LongText, nil
	}
	t, err := types.CreateString(sqltypes.VarChar, int64(longest), sql.Collation_Default)
	if err != nil {
		return nil, fmt.Errorf("column %s: VARCHAR(%d): %w", quoteIdent(c.Name()), longest, err)
	}
	return t, nil
}

// serialType is the type of a row-number column (see synthesisDomain).
var serialType = types.Int64

// releaseSchema is the schema of the table r releases: its synthetic rows
// or, for an answers-only mechanism, its answers. It depends only on the
// source's public domain and column names.
func releaseSchema(r *synthRequest) (sql.Schema, error) {
	if r.mech.Output() == synth.AnswersOnly {
		return answersSchema(r.dom)
	}
	return syntheticSchema(r.src.Table.Schema(), r.dom, r.pos, r.serial)
}

// publicTypeName is what SHOW DOMAIN shows as the type of column sc: the
// public type of its domain c, or, for a column without one (c == nil),
// only the family of its SQL type.
func publicTypeName(sc *sql.Column, c *domain.Column) string {
	if c != nil {
		if t, err := publicType(c); err == nil {
			return t.String()
		}
	}
	return typeFamily(sc.Type)
}

// typeFamily names the family of a SQL type without its sizes: integer,
// number, text, or the base type's name for the others (date, json, …).
func typeFamily(t sql.Type) string {
	switch {
	case isIntegerType(t):
		return "integer"
	case isNumericType(t):
		return "number"
	case types.IsJSON(t):
		return "json"
	case types.IsBinaryType(t):
		return "binary"
	case types.IsText(t) || types.IsEnum(t) || types.IsSet(t):
		return "text"
	case types.IsTime(t) || types.IsTimespan(t):
		return "temporal"
	}
	return "other"
}
