// Package adultgen generates adult-like tables of any size for benchmarks:
// 14 correlated attributes with the domain sizes of the UCI Adult data
// (age, workclass, fnlwgt, education_num, marital_status, occupation,
// relationship, race, sex, capital_gain, capital_loss, hours_per_week,
// native_country, income). Each attribute is drawn conditionally on one or
// two earlier ones from conditional tables that are themselves random but
// seeded, so a seed fixes the whole table. Generation streams: memory does
// not grow with the number of rows.
//
// Besides the rows, the package gives the table's public domain (as
// catalog/domain columns), the dpsql DDL that declares it (CREATE TABLE
// with CHECK and ENUM, and SET DOMAIN … BINS for the binned columns), the
// PostgreSQL DDL of the remote table, and writers to PostgreSQL (COPY) and
// to CSV.
package adultgen

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"

	"github.com/dpsql/dpsql/catalog/domain"
)

// Kinds of attribute.
const (
	kindEnum  = iota // categorical strings (ENUM)
	kindRange        // integers lo..hi
	kindBins         // integers in [lo, hi] binned
)

// Attr describes one attribute.
type Attr struct {
	Name   string
	kind   int
	Values []string // kindEnum
	Lo, Hi int64    // kindRange, kindBins
	Bins   int      // kindBins
}

// size is the number of codes of a.
func (a *Attr) size() int {
	switch a.kind {
	case kindEnum:
		return len(a.Values)
	case kindRange:
		return int(a.Hi - a.Lo + 1)
	}
	return a.Bins
}

var countries = []string{"United-States", "Mexico", "Philippines", "Germany", "Puerto-Rico", "Canada", "El-Salvador",
	"India", "Cuba", "England", "Jamaica", "South", "China", "Italy", "Dominican-Republic", "Vietnam", "Guatemala",
	"Japan", "Poland", "Columbia", "Taiwan", "Haiti", "Iran", "Portugal", "Nicaragua", "Peru", "Greece", "France",
	"Ecuador", "Ireland", "Hong", "Trinadad&Tobago", "Cambodia", "Thailand", "Laos", "Yugoslavia",
	"Outlying-US(Guam-USVI-etc)", "Hungary", "Honduras", "Scotland", "Holand-Netherlands", "?"}

// Attrs are the 14 attributes in table order.
var Attrs = []Attr{
	{Name: "age", kind: kindRange, Lo: 17, Hi: 101},
	{Name: "workclass", kind: kindEnum, Values: []string{"Private", "Self-emp-not-inc", "Self-emp-inc", "Federal-gov", "Local-gov", "State-gov", "Without-pay", "Never-worked", "?"}},
	{Name: "fnlwgt", kind: kindBins, Lo: 12285, Hi: 1484705, Bins: 100},
	{Name: "education_num", kind: kindRange, Lo: 1, Hi: 16},
	{Name: "marital_status", kind: kindEnum, Values: []string{"Married-civ-spouse", "Divorced", "Never-married", "Separated", "Widowed", "Married-spouse-absent", "Married-AF-spouse"}},
	{Name: "occupation", kind: kindEnum, Values: []string{"Tech-support", "Craft-repair", "Other-service", "Sales", "Exec-managerial", "Prof-specialty", "Handlers-cleaners", "Machine-op-inspct", "Adm-clerical", "Farming-fishing", "Transport-moving", "Priv-house-serv", "Protective-serv", "Armed-Forces", "?"}},
	{Name: "relationship", kind: kindEnum, Values: []string{"Wife", "Own-child", "Husband", "Not-in-family", "Other-relative", "Unmarried"}},
	{Name: "race", kind: kindEnum, Values: []string{"White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"}},
	{Name: "sex", kind: kindEnum, Values: []string{"Female", "Male"}},
	{Name: "capital_gain", kind: kindBins, Lo: 0, Hi: 99999, Bins: 100},
	{Name: "capital_loss", kind: kindBins, Lo: 0, Hi: 4356, Bins: 100},
	{Name: "hours_per_week", kind: kindRange, Lo: 1, Hi: 99},
	{Name: "native_country", kind: kindEnum, Values: countries},
	{Name: "income", kind: kindEnum, Values: []string{"<=50K", ">50K"}},
}

// Names are the attribute names in table order.
func Names() []string {
	out := make([]string, len(Attrs))
	for i := range Attrs {
		out[i] = Attrs[i].Name
	}
	return out
}

// parents gives, in generation order, each attribute (by table index) and
// the one or two earlier-generated attributes it depends on.
var parents = []struct {
	attr int
	on   []int
}{
	{0, nil},          // age
	{8, nil},          // sex
	{7, nil},          // race
	{3, []int{0}},     // education_num | age
	{1, []int{3}},     // workclass | education_num
	{4, []int{0, 8}},  // marital_status | age, sex
	{6, []int{4, 8}},  // relationship | marital_status, sex
	{5, []int{3, 8}},  // occupation | education_num, sex
	{11, []int{5, 8}}, // hours_per_week | occupation, sex
	{2, []int{7}},     // fnlwgt | race
	{9, []int{3}},     // capital_gain | education_num
	{10, []int{9, 3}}, // capital_loss | capital_gain, education_num
	{12, []int{7}},    // native_country | race
	{13, []int{3, 4}}, // income | education_num, marital_status
}

// Domain is the table's public domain, one column per attribute in table
// order; no column is nullable.
func Domain() domain.Table {
	var t domain.Table
	for i := range Attrs {
		a := &Attrs[i]
		var c domain.Column
		var err error
		switch a.kind {
		case kindEnum:
			vals := make([]domain.Value, len(a.Values))
			for j, v := range a.Values {
				vals[j] = domain.StringValue(v)
			}
			c, err = domain.NewCategorical(a.Name, domain.String, vals, false, true)
		case kindRange:
			c, err = domain.NewIntRange(a.Name, a.Lo, a.Hi, false)
		case kindBins:
			c, err = domain.NewBinned(a.Name, float64(a.Lo), float64(a.Hi), a.Bins, true, false)
		}
		if err != nil {
			panic(fmt.Sprintf("adultgen: domain of %s: %v", a.Name, err))
		}
		t.Columns = append(t.Columns, c)
	}
	return t
}

func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// DDL returns the dpsql (MySQL-dialect) statements that declare table with
// this public domain: a CREATE TABLE with ENUM columns and BETWEEN checks,
// then one SET DOMAIN … BINS per binned column. suffix is appended to the
// CREATE TABLE (e.g. " ENGINE = FEDERATED CONNECTION = '…'").
func DDL(table, suffix string) []string {
	cols := make([]string, len(Attrs))
	var binned []string
	for i := range Attrs {
		a := &Attrs[i]
		switch a.kind {
		case kindEnum:
			vals := make([]string, len(a.Values))
			for j, v := range a.Values {
				vals[j] = sqlString(v)
			}
			cols[i] = fmt.Sprintf("%s ENUM(%s) NOT NULL", a.Name, strings.Join(vals, ", "))
		case kindRange:
			cols[i] = fmt.Sprintf("%s INT NOT NULL CHECK (%s BETWEEN %d AND %d)", a.Name, a.Name, a.Lo, a.Hi)
		case kindBins:
			cols[i] = fmt.Sprintf("%s INT NOT NULL", a.Name)
			binned = append(binned, fmt.Sprintf("ALTER TABLE %s SET DOMAIN %s BETWEEN %d AND %d BINS %d", table, a.Name, a.Lo, a.Hi, a.Bins))
		}
	}
	return append([]string{fmt.Sprintf("CREATE TABLE %s (%s)%s", table, strings.Join(cols, ", "), suffix)}, binned...)
}

// PostgresDDL is the CREATE TABLE of the remote PostgreSQL table: text for
// the categorical attributes, integer for the others.
func PostgresDDL(table string) string {
	cols := make([]string, len(Attrs))
	for i := range Attrs {
		typ := "integer NOT NULL"
		if Attrs[i].kind == kindEnum {
			typ = "text NOT NULL"
		}
		cols[i] = `"` + Attrs[i].Name + `" ` + typ
	}
	return fmt.Sprintf("CREATE TABLE %s (%s)", table, strings.Join(cols, ", "))
}

// cond is the conditional distribution of one attribute: a cumulative
// weight vector per combination of its parents' codes.
type cond struct {
	attr   int
	on     []int
	stride []int
	cum    [][]float64
}

// Generator produces rows. It is not safe for concurrent use.
type Generator struct {
	rng   *rand.Rand
	conds []cond
	codes []int
}

// New returns a generator; the same seed gives the same rows.
func New(seed uint64) *Generator {
	tables := rand.New(rand.NewPCG(seed, 0x5eed7ab1e5))
	g := &Generator{rng: rand.New(rand.NewPCG(seed, 0xda7a)), codes: make([]int, len(Attrs))}
	for _, p := range parents {
		c := cond{attr: p.attr, on: p.on}
		combos := 1
		for _, q := range p.on {
			c.stride = append(c.stride, combos)
			combos *= Attrs[q].size()
		}
		for range combos {
			c.cum = append(c.cum, weights(tables, &Attrs[p.attr]))
		}
		g.conds = append(g.conds, c)
	}
	return g
}

// weights draws one conditional distribution of attribute a: skewed
// random weights for categories; for ordered attributes a bump around a
// random centre, and for capital gains and losses mostly zero.
func weights(r *rand.Rand, a *Attr) []float64 {
	n := a.size()
	w := make([]float64, n)
	switch {
	case a.Name == "capital_gain" || a.Name == "capital_loss":
		for i := range w {
			w[i] = math.Exp(-float64(i)/8) * math.Exp(r.NormFloat64()) / 50
		}
		w[0] = 0.9 + 0.08*r.Float64()
	case a.kind == kindEnum:
		for i := range w {
			w[i] = math.Exp(1.5 * r.NormFloat64())
		}
	default:
		centre := r.Float64() * float64(n)
		width := float64(n) * (0.05 + 0.25*r.Float64())
		for i := range w {
			d := (float64(i) - centre) / width
			w[i] = math.Exp(-d*d/2)*math.Exp(0.3*r.NormFloat64()) + 1e-4
		}
	}
	sum := 0.0
	for i := range w {
		sum += w[i]
		w[i] = sum
	}
	for i := range w {
		w[i] /= sum
	}
	return w
}

// NextCodes draws the next row as codes over Domain (table order) into
// codes, which must have 14 elements.
func (g *Generator) NextCodes(codes []int) {
	for i := range g.conds {
		c := &g.conds[i]
		k := 0
		for j, q := range c.on {
			k += codes[q] * c.stride[j]
		}
		cum := c.cum[k]
		u := g.rng.Float64()
		codes[c.attr] = min(sort.SearchFloat64s(cum, u), len(cum)-1)
	}
}

// Next draws the next row as values in table order into row (14
// elements): strings for categorical attributes, int64 for the others
// (binned ones uniformly within their bin).
func (g *Generator) Next(row []any) {
	g.NextCodes(g.codes)
	for i := range Attrs {
		a := &Attrs[i]
		c := g.codes[i]
		switch a.kind {
		case kindEnum:
			row[i] = a.Values[c]
		case kindRange:
			row[i] = a.Lo + int64(c)
		case kindBins:
			lo, hi := binInts(a, c)
			row[i] = lo + g.rng.Int64N(hi-lo+1)
		}
	}
}

// binInts returns the integers of bin c of a binned attribute, as
// domain.Column.Bin computes them.
func binInts(a *Attr, c int) (lo, hi int64) {
	edge := func(i int) float64 {
		if i >= a.Bins {
			return float64(a.Hi)
		}
		return float64(a.Lo) + float64(a.Hi-a.Lo)*float64(i)/float64(a.Bins)
	}
	first := int64(math.Ceil(edge(c)))
	last := int64(math.Ceil(edge(c+1))) - 1
	if c == a.Bins-1 {
		last = a.Hi
	}
	return first, last
}

// CSVHeader is the header line of WriteCSV.
func CSVHeader() string { return strings.Join(Names(), ",") }

// AppendCSV appends row (from Next) as a CSV line, newline included.
func AppendCSV(dst []byte, row []any) []byte {
	for i, v := range row {
		if i > 0 {
			dst = append(dst, ',')
		}
		switch x := v.(type) {
		case string:
			if strings.ContainsAny(x, ",\"\n\r") {
				dst = append(dst, '"')
				dst = append(dst, strings.ReplaceAll(x, `"`, `""`)...)
				dst = append(dst, '"')
			} else {
				dst = append(dst, x...)
			}
		case int64:
			dst = strconv.AppendInt(dst, x, 10)
		}
	}
	return append(dst, '\n')
}
