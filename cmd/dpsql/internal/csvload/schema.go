package csvload

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Kind is the SQL type family of a column.
type Kind uint8

const (
	KindInt    Kind = iota + 1 // an integer type (BIGINT when inferred)
	KindDouble                 // DOUBLE or another non-integer number
	KindText                   // VARCHAR, TEXT, ENUM …
	KindOther                  // an existing column of another type: sent as text, not checked
)

// The types of inferred columns. They are fixed: a column's type says which
// of three syntaxes its values have (integers, numbers, anything else) and
// nothing else about them. A type sized to the values (VARCHAR of the
// longest, INT unless some value needs BIGINT) would publish the longest
// text or the magnitude of the largest number, and the table's schema is
// visible to more people than its rows (SHOW DOMAIN, the owner's tools).
//
// Text is VARCHAR(255) rather than TEXT: it can be a key, compares and
// sorts like any short string, and every categorical attribute fits it. A
// longer value (most likely free text, which no synthesis uses) stops the
// import before anything is written: the owner then creates the table with
// the type they want (TEXT, VARCHAR(2000)) and imports into it.
const (
	IntType     = "BIGINT"
	DoubleType  = "DOUBLE"
	TextType    = "VARCHAR(255)"
	TextMaxChar = 255   // characters of TextType
	DomainType  = "INT" // a --domain column: INT NOT NULL CHECK (c BETWEEN 0 AND size-1), sized by the declared size
)

// Column is one column of the target table.
type Column struct {
	Name     string
	Kind     Kind
	SQLType  string // IntType, DoubleType, TextType or DomainType
	Nullable bool
	// Size, if positive, is a domain size: the column is an INT NOT NULL
	// with CHECK (col BETWEEN 0 AND Size-1).
	Size int
}

// Definition is the column's definition in CREATE TABLE.
func (c Column) Definition() string {
	var b strings.Builder
	b.WriteString(QuoteIdent(c.Name))
	b.WriteByte(' ')
	b.WriteString(c.SQLType)
	if !c.Nullable {
		b.WriteString(" NOT NULL")
	}
	if c.Size > 0 {
		fmt.Fprintf(&b, " CHECK (%s BETWEEN 0 AND %d)", QuoteIdent(c.Name), c.Size-1)
	}
	return b.String()
}

// CreateTableSQL returns the CREATE TABLE statement for cols.
func CreateTableSQL(db, table string, cols []Column) string {
	defs := make([]string, len(cols))
	for i, c := range cols {
		defs[i] = "  " + c.Definition()
	}
	return fmt.Sprintf("CREATE TABLE %s.%s (\n%s\n)", QuoteIdent(db), QuoteIdent(table), strings.Join(defs, ",\n"))
}

// QuoteIdent backquotes a MySQL identifier.
func QuoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

// stats are the facts the first pass collects about one column. They
// decide the column's kind and find the first value that does not fit it;
// no size is taken from them.
type stats struct {
	empty      bool // some value is empty
	nonEmpty   bool // some value is not empty
	nonInt     int  // line of the first non-empty value that is not an integer literal, 0 if none
	nonNumber  int  // line of the first non-empty value that is not a number, 0 if none
	bigInt     int  // line of the first integer literal outside BIGINT's range, 0 if none
	outOfRange int  // line of the first value outside [0, domainSize), 0 if none
	emptyLine  int  // line of the first empty value
	long       int  // line of the first value longer than TextMaxChar characters, 0 if none
	longLen    int  // its length in characters
	badValue   string
	bigValue   string
}

// observe records value v of line.
func (s *stats) observe(v string, line, domainSize int) {
	if v == "" {
		if !s.empty {
			s.empty, s.emptyLine = true, line
		}
		return
	}
	s.nonEmpty = true
	if s.long == 0 && len(v) > TextMaxChar {
		if n := utf8.RuneCountInString(v); n > TextMaxChar {
			s.long, s.longLen = line, n
		}
	}
	i, isInt := parseInt(v)
	switch {
	case isInt:
	case isIntLiteral(v):
		if s.bigInt == 0 {
			s.bigInt, s.bigValue = line, v
		}
	case s.nonInt == 0:
		s.nonInt = line
		s.badValue = v
	}
	if !isInt && !isNumber(v) && s.nonNumber == 0 {
		s.nonNumber = line
	}
	if domainSize > 0 && s.outOfRange == 0 && isInt && (i < 0 || i >= int64(domainSize)) {
		s.outOfRange = line
	}
}

// inferColumn picks the kind of a column from the syntax of its non-empty
// values, and gives it that kind's fixed type (see IntType): integer
// literals make a BIGINT column, numbers a DOUBLE one, anything else (or
// nothing but empty values) a VARCHAR(255) one. Numeric columns are always
// nullable (an empty field is NULL) and text columns never (it is the
// empty string), so that the schema does not tell either whether some
// value is missing.
func inferColumn(name string, s *stats) Column {
	switch {
	case s.nonEmpty && s.nonInt == 0:
		return Column{Name: name, Kind: KindInt, SQLType: IntType, Nullable: true}
	case s.nonEmpty && s.nonNumber == 0:
		return Column{Name: name, Kind: KindDouble, SQLType: DoubleType, Nullable: true}
	}
	return Column{Name: name, Kind: KindText, SQLType: TextType}
}

// isIntLiteral reports whether v is [+-]digits, whatever its magnitude.
func isIntLiteral(v string) bool {
	d := strings.TrimLeft(v, "+-")
	if len(v)-len(d) > 1 || d == "" {
		return false
	}
	return strings.IndexFunc(d, func(r rune) bool { return r < '0' || r > '9' }) < 0
}

// parseInt parses a decimal integer literal ([+-]digits) into int64.
func parseInt(v string) (int64, bool) {
	d := v
	if d != "" && (d[0] == '+' || d[0] == '-') {
		d = d[1:]
	}
	if d == "" || strings.IndexFunc(d, func(r rune) bool { return r < '0' || r > '9' }) >= 0 {
		return 0, false
	}
	i, err := strconv.ParseInt(v, 10, 64)
	return i, err == nil
}

// isNumber reports whether v is a decimal number literal valid in SQL:
// [+-] digits [. digits] [e [+-] digits], with digits on at least one side of
// the point. (strconv.ParseFloat also takes "Inf", "NaN" and hex floats.)
func isNumber(v string) bool {
	i := 0
	if i < len(v) && (v[i] == '+' || v[i] == '-') {
		i++
	}
	digits := func() int {
		j := i
		for i < len(v) && v[i] >= '0' && v[i] <= '9' {
			i++
		}
		return i - j
	}
	n := digits()
	if i < len(v) && v[i] == '.' {
		i++
		n += digits()
	}
	if n == 0 {
		return false
	}
	if i < len(v) && (v[i] == 'e' || v[i] == 'E') {
		i++
		if i < len(v) && (v[i] == '+' || v[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(v)
}

// appendLiteral appends v as a SQL literal for a column of kind k.
func appendLiteral(dst []byte, v string, k Kind) []byte {
	switch {
	case v == "" && (k == KindInt || k == KindDouble):
		return append(dst, "NULL"...)
	case k == KindInt || k == KindDouble:
		return append(dst, v...) // validated by the first pass
	}
	dst = append(dst, '\'')
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case 0:
			dst = append(dst, '\\', '0')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\\':
			dst = append(dst, '\\', '\\')
		case '\'':
			dst = append(dst, '\\', '\'')
		case 0x1a:
			dst = append(dst, '\\', 'Z')
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '\'')
}
