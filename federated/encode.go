package federated

import (
	"encoding/hex"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dpsql/dpsql/catalog/domain"
)

// Encoding pushed down into the remote query.
//
// Every attribute's code is computed by the remote database with an SQL
// expression that gives exactly domain.Column.Encode's code of the value as
// Scan returns it, with the engine's rule that a value that cannot be read
// in the column's type (domain.Invalid) counts like NULL: code
// max(NullCode(), 0). The expression never raises an error, whatever the
// value: an error that depends on data would leak it. So it avoids casts
// that can fail and the arithmetic PostgreSQL checks (float8 underflow and
// overflow), bounds every operand first, and compares strings byte by byte.
//
// The expression is built in two layers: conv reads the remote column as a
// value of a simple class (integer, float8 or bytes; PostgreSQL numeric
// special values and out-of-float-range numbers become NaN, "invalid"),
// and code maps that value to the code.

// typeClass is how a remote type is read.
type typeClass uint8

const (
	classOther   typeClass = iota // unsupported for synthesis
	classInt                      // integers (and PostgreSQL boolean, MySQL YEAR)
	classBool                     // PostgreSQL boolean: read as 0/1
	classFloat                    // float8/float4 (PostgreSQL), DOUBLE (MySQL)
	classDecimal                  // NUMERIC/DECIMAL: exact decimal text
	classText                     // character strings
	classBytes                    // MySQL binary strings (BINARY, VARBINARY, BLOB)
	classTime                     // dates and times (Scan only)
)

// classify maps an information_schema data_type (and MySQL column_type) to
// its class.
func classify(driver, typ, colType string) (typeClass, bool) {
	if driver == Postgres {
		switch typ {
		case "smallint", "integer", "bigint":
			return classInt, false
		case "boolean":
			return classBool, false
		case "real", "double precision":
			return classFloat, false
		case "numeric":
			return classDecimal, false
		case "text", "character varying":
			return classText, false
		case "date", "timestamp without time zone", "timestamp with time zone":
			return classTime, false
		}
		return classOther, false
	}
	unsigned := strings.Contains(colType, "unsigned")
	switch typ {
	case "tinyint", "smallint", "mediumint", "int", "integer", "bigint", "year":
		return classInt, unsigned
	case "double", "double precision", "real":
		return classFloat, false
	case "decimal", "numeric":
		return classDecimal, false
	case "char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum", "set":
		return classText, false
	case "binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob":
		return classBytes, false
	case "date", "datetime", "timestamp":
		return classTime, false
	}
	return classOther, false
}

// quoteIdent quotes an identifier for the dialect.
func quoteIdent(driver, name string) string {
	if driver == Postgres {
		return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
	}
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
}

// scanExpr is the select expression Scan reads column c with.
func scanExpr(driver string, c Column) string {
	ref := quoteIdent(driver, c.Name)
	if driver == Postgres {
		switch c.class {
		case classDecimal, classOther:
			return ref + "::text"
		case classBool:
			return ref + "::int"
		}
	}
	return ref
}

// valueKind is the class of a converted value.
type valueKind uint8

const (
	vInt   valueKind = iota + 1 // an integer
	vFloat                      // a float8 (PostgreSQL: NaN means invalid)
	vText                       // a string compared byte by byte
)

// column is one attribute of a snapshot: its remote column, its domain and
// the two layers of its encoding.
type column struct {
	remote Column
	dom    *domain.Column
	kind   valueKind
	conv   string // the converted value, over the remote column
	size   int
}

// compile builds the encoding of remote column rc over d, or explains
// why this pair is not supported (data-independently, before any query).
func compile(driver string, rc Column, d *domain.Column) (column, error) {
	c := column{remote: rc, dom: d, size: d.Size()}
	ref := quoteIdent(driver, rc.Name)
	pg := driver == Postgres
	unsupported := func(why string) (column, error) {
		return column{}, fmt.Errorf("%w: column %q (remote type %s) with a %s %v domain: %s",
			ErrUnsupported, rc.Name, rc.Type, d.Kind(), d.Type(), why)
	}
	switch rc.class {
	case classInt:
		c.kind, c.conv = vInt, ref
	case classBool:
		c.kind, c.conv = vInt, ref+"::int"
	case classFloat:
		c.kind, c.conv = vFloat, ref
		if pg {
			c.conv = ref + "::float8"
		}
	case classDecimal:
		// A categorical string domain compares the decimal's text; every
		// other domain reads it as Go's strconv.ParseFloat would.
		if d.Kind() == domain.Categorical && d.Type() == domain.String {
			c.kind = vText
			if pg {
				c.conv = ref + "::text"
			} else {
				c.conv = "CAST(" + ref + " AS BINARY)"
			}
			break
		}
		c.kind = vFloat
		if pg {
			c.conv = pgNumericToFloat(ref)
		} else {
			c.conv = "(" + ref + " + 0e0)"
		}
	case classText, classBytes:
		c.kind = vText
		if pg {
			c.conv = ref + "::text"
		} else {
			c.conv = "CAST(" + ref + " AS BINARY)"
		}
	case classTime:
		return unsupported("dates and times have no pushed-down encoding")
	default:
		return unsupported("this remote type has no pushed-down encoding")
	}
	if c.kind == vText && !(d.Kind() == domain.Categorical && d.Type() == domain.String) {
		return unsupported("a string column needs a categorical domain of strings")
	}
	if c.kind == vFloat && d.Kind() == domain.Categorical && d.Type() == domain.String {
		return unsupported("a floating-point column cannot have a domain of strings")
	}
	if d.Kind() == domain.Binned {
		if err := checkBins(d); err != nil {
			return unsupported(err.Error())
		}
	}
	if d.Kind() == domain.Categorical && d.Type() == domain.String && pg {
		for _, v := range d.Values() {
			if !utf8.ValidString(v.Str()) || strings.ContainsRune(v.Str(), 0) {
				return unsupported("a value is not valid UTF-8 text for PostgreSQL")
			}
		}
	}
	return c, nil
}

// code is the SQL expression of the attribute's code over v, the converted
// value (conv or a name bound to it).
func (c *column) code(driver, v string) string { return c.codeWith(driver, v, "") }

// binLayer returns, for a Binned column on PostgreSQL, the two expressions
// of a layer below the code (see codeWith): the converted value v as a
// float8, and its estimated bin, NULL outside the bounds (and for NULL and
// NaN), where the estimate's arithmetic could overflow. ok is false for
// every other column.
func (c *column) binLayer(v string) (f, est string, ok bool) {
	d := c.dom
	if d.Kind() != domain.Binned {
		return "", "", false
	}
	f = c.float(Postgres, v)
	lo, hi := d.Range()
	return f, fmt.Sprintf("(CASE WHEN %s >= %s AND %s <= %s THEN %s END)",
		f, floatLit(Postgres, lo), f, floatLit(Postgres, hi), binEstimate(Postgres, f, d)), true
}

// codeWith is code; for a Binned column, est may name the bin estimate of
// v (binLayer, with v its float8 value), so that the code reads it instead
// of recomputing it in each of the seven places the exact-edge correction
// uses it: the codes table's bins cost a third as much (measured on
// internal/adultgen's three binned columns).
func (c *column) codeWith(driver, v, est string) string {
	d := c.dom
	pg := driver == Postgres
	nz := max(d.NullCode(), 0) // NULL and invalid values
	ood := 0                   // a categorical value outside the domain
	if d.Nullable() {
		ood = d.NullCode()
	}
	isNull := v + " IS NULL"
	if pg && c.kind == vFloat {
		isNull = "(" + v + " IS NULL OR " + v + " = 'NaN'::float8)"
	}
	var body string
	switch d.Kind() {
	case domain.IntRange:
		lo, hi := d.Range()
		body = c.rangeCode(driver, v, int64(lo), int64(hi))
	case domain.Binned:
		body = binCode(driver, c.float(driver, v), est, d)
	case domain.Categorical:
		body = c.categoricalCode(driver, v, ood)
	}
	return fmt.Sprintf("(CASE WHEN %s THEN %d ELSE %s END)", isNull, nz, body)
}

// float is v as a float8, as Go's float64(v) for integers.
func (c *column) float(driver, v string) string {
	if c.kind == vFloat {
		return v
	}
	if driver == Postgres {
		return v + "::float8"
	}
	return "(" + v + " + 0e0)"
}

// rangeCode encodes an IntRange lo..hi: clip(round(v)) - lo, rounding half
// away from zero like math.Round.
func (c *column) rangeCode(driver, v string, lo, hi int64) string {
	top := hi - lo
	if c.kind == vInt {
		return fmt.Sprintf("(CASE WHEN %s < %s THEN 0 WHEN %s > %s THEN %d ELSE %s - %s END)",
			v, intLit(driver, lo), v, intLit(driver, hi), top, v, intLit(driver, lo))
	}
	// Far outside the range, clip before rounding, so that rounding only
	// sees |v| <= 2^53+2, where floor, ceil and v - floor(v) are exact.
	floor, ceil := "floor", "ceil"
	r := fmt.Sprintf("(CASE WHEN %[1]s >= 0 THEN %[2]s(%[1]s) + (CASE WHEN %[1]s - %[2]s(%[1]s) >= 0.5 THEN 1 ELSE 0 END)"+
		" ELSE %[3]s(%[1]s) - (CASE WHEN %[3]s(%[1]s) - %[1]s >= 0.5 THEN 1 ELSE 0 END) END)", v, floor, ceil)
	if driver == MySQL {
		r = strings.ReplaceAll(r, "0.5", "5e-1")
	} else {
		r = strings.ReplaceAll(r, "0.5", "0.5::float8")
	}
	return fmt.Sprintf("(CASE WHEN %s < %s THEN 0 WHEN %s > %s THEN %d ELSE "+
		"(CASE WHEN %s < %s THEN 0 WHEN %s > %s THEN %d ELSE %s - %s END) END)",
		v, floatLit(driver, float64(lo)-2), v, floatLit(driver, float64(hi)+2), top,
		r, floatLit(driver, float64(lo)), r, floatLit(driver, float64(hi)), top, r, floatLit(driver, float64(lo)))
}

// checkBins refuses binned domains whose edges the pushed-down arithmetic
// cannot reproduce safely: every intermediate must stay a normal finite
// float, and the edges must be accurate to a small fraction of a bin, so
// that the estimated bin is off by at most one (then corrected exactly).
func checkBins(d *domain.Column) error {
	lo, hi := d.Range()
	n := float64(d.Bins())
	w := hi - lo
	width := w / n
	mag := math.Max(math.Abs(lo), math.Abs(hi))
	switch {
	case math.IsInf(w, 0) || math.IsInf(w*n, 0) || math.IsInf(n/w, 0):
		return fmt.Errorf("bounds too far apart")
	case width < 1e-300:
		return fmt.Errorf("bins narrower than 1e-300")
	case mag*0x1p-52*8 >= width/4:
		return fmt.Errorf("bins too narrow for the magnitude of their bounds")
	}
	return nil
}

// binCode encodes a Binned domain: clip, estimate the bin, then correct
// the estimate by one against the exact edges Column.Edge computes
// (lo + (w*b)/n in float64, the same operations in the same order).
// est, if not empty, names the estimate (binEstimate of v, evaluated only
// when v is within the bounds).
func binCode(driver, v, est string, d *domain.Column) string {
	lo, hi := d.Range()
	n := d.Bins()
	w := hi - lo
	nf := float64(n)
	LO, HI := floatLit(driver, lo), floatLit(driver, hi)
	W, N := floatLit(driver, w), floatLit(driver, nf)
	b0 := est
	if b0 == "" {
		b0 = binEstimate(driver, v, d)
	}
	edge := func(b string) string { return fmt.Sprintf("(%s + (%s * %s) / %s)", LO, W, b, N) }
	one := floatLit(driver, 1)
	corr := fmt.Sprintf("(CASE WHEN %[1]s > %[2]s AND %[3]s < %[4]s THEN %[1]s - %[5]s"+
		" WHEN %[1]s < %[6]s AND %[3]s >= %[7]s THEN %[1]s + %[5]s ELSE %[1]s END)",
		b0, floatLit(driver, 0), v, edge(b0), one, floatLit(driver, nf-1), edge("("+b0+" + "+one+")"))
	return fmt.Sprintf("(CASE WHEN %s < %s THEN 0 WHEN %s > %s THEN %d ELSE %s END)", v, LO, v, HI, n-1, corr)
}

// binEstimate is the estimated bin of v, a float within d's bounds: at
// most one off (checkBins), corrected by binCode.
func binEstimate(driver, v string, d *domain.Column) string {
	lo, hi := d.Range()
	nf := float64(d.Bins())
	w := hi - lo
	LO, K := floatLit(driver, lo), floatLit(driver, nf/w)
	half := floatLit(driver, w/nf/2)
	return fmt.Sprintf("(CASE WHEN %s - %s < %s THEN %s ELSE LEAST(floor((%s - %s) * %s), %s) END)",
		v, LO, half, floatLit(driver, 0), v, LO, K, floatLit(driver, nf-1))
}

// categoricalCode looks the value up in the list of values.
func (c *column) categoricalCode(driver, v string, ood int) string {
	d := c.dom
	vals := d.Values()
	switch d.Type() {
	case domain.String:
		if c.kind == vText {
			keys := make([]string, len(vals))
			for i, x := range vals {
				keys[i] = x.Str()
			}
			return lookupText(driver, v, keys, ood)
		}
		// An integer: GMS ENUM indexes for an ENUM domain, else its decimal text.
		if d.Enum() {
			return fmt.Sprintf("(CASE WHEN %s >= 1 AND %s <= %d THEN %s - 1 ELSE %d END)", v, v, len(vals), v, ood)
		}
		var keys []int64
		var codes []int
		for i, x := range vals {
			n, err := strconv.ParseInt(x.Str(), 10, 64)
			if err == nil && strconv.FormatInt(n, 10) == x.Str() {
				keys, codes = append(keys, n), append(codes, i)
			}
		}
		return lookupInt(driver, v, keys, codes, ood)
	case domain.Int:
		if c.kind == vInt {
			keys := make([]int64, len(vals))
			codes := make([]int, len(vals))
			for i, x := range vals {
				keys[i], codes[i] = x.Int(), i
			}
			return lookupInt(driver, v, keys, codes, ood)
		}
		// A float matches an integer value when it equals it exactly and
		// lies strictly inside the int64 range (math.Round, then toInt's
		// exactness test).
		var keys []float64
		var codes []int
		for i, x := range vals {
			f := float64(x.Int())
			if f < 0x1p63 && f > -0x1p63 && int64(f) == x.Int() {
				keys, codes = append(keys, f), append(codes, i)
			}
		}
		return lookupFloat(driver, v, keys, codes, ood)
	case domain.Float:
		keys := make([]float64, len(vals))
		codes := make([]int, len(vals))
		for i, x := range vals {
			keys[i], codes[i] = x.Float(), i
		}
		return lookupFloat(driver, c.float(driver, v), keys, codes, ood)
	}
	return strconv.Itoa(ood)
}

// identity reports whether codes are 0, 1, ..., len-1.
func identity(codes []int) bool {
	for i, c := range codes {
		if c != i {
			return false
		}
	}
	return true
}

// lookup returns the code of the key v equals, or ood: PostgreSQL
// array_position over an array literal, MySQL FIELD.
func lookup(driver, v string, keys []string, pgType string, codes []int, ood int) string {
	if len(keys) == 0 {
		return strconv.Itoa(ood)
	}
	var pos string // 1-based position, NULL when absent
	if driver == Postgres {
		pos = fmt.Sprintf("array_position('{%s}'::%s[], %s)", strings.ReplaceAll(strings.Join(keys, ","), "'", "''"), pgType, v)
	} else {
		pos = fmt.Sprintf("NULLIF(FIELD(%s, %s), 0)", v, strings.Join(keys, ", "))
	}
	if identity(codes) {
		return fmt.Sprintf("COALESCE(%s - 1, %d)", pos, ood)
	}
	cs := make([]string, len(codes))
	for i, c := range codes {
		cs[i] = strconv.Itoa(c)
	}
	if driver == Postgres {
		return fmt.Sprintf("COALESCE(('{%s}'::int[])[%s], %d)", strings.Join(cs, ","), pos, ood)
	}
	return fmt.Sprintf("COALESCE(ELT(%s, %s) + 0, %d)", pos, strings.Join(cs, ", "), ood)
}

func lookupText(driver, v string, keys []string, ood int) string {
	lits := make([]string, len(keys))
	for i, k := range keys {
		if driver == Postgres {
			lits[i] = `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(k) + `"`
		} else {
			lits[i] = "X'" + hex.EncodeToString([]byte(k)) + "'"
		}
	}
	if driver == Postgres {
		v = v + ` COLLATE "C"`
	}
	return lookup(driver, v, lits, `text`, seq(len(keys)), ood)
}

func lookupInt(driver, v string, keys []int64, codes []int, ood int) string {
	lits := make([]string, len(keys))
	for i, k := range keys {
		if driver == Postgres {
			lits[i] = strconv.FormatInt(k, 10)
		} else {
			lits[i] = intLit(driver, k)
		}
	}
	if driver == Postgres {
		v = v + "::int8"
	}
	return lookup(driver, v, lits, "int8", codes, ood)
}

func lookupFloat(driver, v string, keys []float64, codes []int, ood int) string {
	lits := make([]string, len(keys))
	for i, k := range keys {
		if driver == Postgres {
			lits[i] = strconv.FormatFloat(k, 'g', -1, 64)
		} else {
			lits[i] = floatLit(driver, k)
		}
	}
	return lookup(driver, v, lits, "float8", codes, ood)
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// intLit is an integer literal; MySQL reads -9223372036854775808 as a
// DECIMAL, so it is written as an expression.
func intLit(driver string, i int64) string {
	if i == math.MinInt64 {
		return "(-9223372036854775807 - 1)"
	}
	if i < 0 {
		return "(" + strconv.FormatInt(i, 10) + ")"
	}
	return strconv.FormatInt(i, 10)
}

// floatLit is a float8 literal that reads back exactly.
func floatLit(driver string, f float64) string {
	if driver == Postgres {
		return "'" + strconv.FormatFloat(f, 'g', -1, 64) + "'::float8"
	}
	s := strconv.FormatFloat(f, 'e', -1, 64)
	if f < 0 {
		return "(" + s + ")"
	}
	return s
}

// pgNumericToFloat converts a PostgreSQL numeric to float8 as Go's
// strconv.ParseFloat reads its text: NaN and numbers that overflow float64
// are invalid (NaN here), ±Infinity stay infinite, and numbers that
// underflow become 0, where numeric::float8 would raise an error.
func pgNumericToFloat(ref string) string {
	return fmt.Sprintf("(CASE WHEN %[1]s = 'NaN'::numeric THEN 'NaN'::float8"+
		" WHEN %[1]s = 'Infinity'::numeric THEN 'Infinity'::float8"+
		" WHEN %[1]s = '-Infinity'::numeric THEN '-Infinity'::float8"+
		" WHEN abs(%[1]s) >= %[2]s THEN 'NaN'::float8"+
		" WHEN abs(%[1]s) <= %[3]s THEN 0::float8"+
		" ELSE %[1]s::float8 END)", ref, overflowDecimal, underflowDecimal)
}

// overflowDecimal is 2^1024 - 2^970, the smallest magnitude that rounds to
// infinity (ParseFloat's ErrRange); underflowDecimal is 2^-1075, the
// largest that rounds to zero (half the smallest denormal, a tie to even).
var overflowDecimal, underflowDecimal = func() (string, string) {
	o := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 1024), new(big.Int).Lsh(big.NewInt(1), 970))
	u := new(big.Float).SetPrec(2000).SetMantExp(big.NewFloat(1), -1075)
	return o.String(), u.Text('f', 1100)
}()
