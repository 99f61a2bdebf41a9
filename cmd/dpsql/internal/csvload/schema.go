package csvload

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Kind is the SQL type family of a column.
type Kind uint8

const (
	KindInt    Kind = iota + 1 // INT or BIGINT
	KindDouble                 // DOUBLE
	KindText                   // VARCHAR or TEXT
	KindOther                  // an existing column of another type: sent as text, not checked
)

// Column is one column of the target table.
type Column struct {
	Name     string
	Kind     Kind
	SQLType  string // e.g. "INT", "VARCHAR(12)"
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

// stats are the facts the first pass collects about one column.
type stats struct {
	empty      bool  // some value is empty
	nonInt     int   // line of the first non-empty value that is not an integer, 0 if none
	nonNumber  int   // line of the first non-empty value that is not a number, 0 if none
	minInt     int64 // over integer values
	maxInt     int64
	outOfRange int // line of the first value outside [0, domainSize), 0 if none
	emptyLine  int // line of the first empty value
	maxLen     int // longest value, in characters
	badValue   string
	seen       bool // some integer value was seen
}

// observe records value v of line.
func (s *stats) observe(v string, line, domainSize int) {
	if v == "" {
		if !s.empty {
			s.empty, s.emptyLine = true, line
		}
		return
	}
	if n := utf8.RuneCountInString(v); n > s.maxLen {
		s.maxLen = n
	}
	i, isInt := parseInt(v)
	if isInt {
		if !s.seen || i < s.minInt {
			s.minInt = i
		}
		if !s.seen || i > s.maxInt {
			s.maxInt = i
		}
		s.seen = true
	} else if s.nonInt == 0 {
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

// inferColumn picks the narrowest type holding every value seen.
func inferColumn(name string, s *stats) Column {
	c := Column{Name: name, Nullable: s.empty}
	switch {
	case s.nonInt == 0 && s.seen:
		c.Kind, c.SQLType = KindInt, "INT"
		if s.minInt < math.MinInt32 || s.maxInt > math.MaxInt32 {
			c.SQLType = "BIGINT"
		}
	case s.nonNumber == 0 && s.maxLen > 0:
		c.Kind, c.SQLType = KindDouble, "DOUBLE"
	default:
		// Empty text is the empty string, not NULL: text columns hold it.
		c.Kind, c.Nullable = KindText, false
		switch {
		case s.maxLen == 0:
			c.SQLType = "VARCHAR(255)"
		case s.maxLen <= 1024:
			c.SQLType = fmt.Sprintf("VARCHAR(%d)", s.maxLen)
		default:
			c.SQLType = "TEXT"
		}
	}
	return c
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
