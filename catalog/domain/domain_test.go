package domain

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/vt/sqlparser"
	"github.com/shopspring/decimal"
)

func must(c Column, err error) Column {
	if err != nil {
		panic(err)
	}
	return c
}

func strs(ss ...string) []Value {
	out := make([]Value, len(ss))
	for i, s := range ss {
		out[i] = StringValue(s)
	}
	return out
}

func ints(is ...int64) []Value {
	out := make([]Value, len(is))
	for i, x := range is {
		out[i] = IntValue(x)
	}
	return out
}

// testColumns has one column of every kind, nullable and not.
func testColumns() []Column {
	return []Column{
		must(NewCategorical("sex", String, strs("F", "M"), false, false)),
		must(NewCategorical("race", String, strs("a", "b", "c"), true, true)),
		must(NewCategorical("grade", Int, ints(10, 20, 30), true, false)),
		must(NewCategorical("ratio", Float, []Value{FloatValue(0.5), FloatValue(-1.25)}, false, false)),
		must(NewIntRange("age", 17, 90, false)),
		must(NewIntRange("flag", 0, 1, true)),
		must(NewBinned("income", 0, 1000, 7, false, false)),
		must(NewBinned("hours", 1, 99, 7, true, true)),
		must(NewBinned("neg", -3.5, 2.25, 3, false, true)),
	}
}

func TestConstructorsReject(t *testing.T) {
	tests := []struct {
		name string
		err  error
	}{
		{"empty categorical", func() error { _, err := NewCategorical("c", String, nil, false, false); return err }()},
		{"duplicate value", func() error { _, err := NewCategorical("c", String, strs("a", "a"), false, false); return err }()},
		{"-0 duplicates 0", func() error {
			_, err := NewCategorical("c", Float, []Value{FloatValue(0), FloatValue(math.Copysign(0, -1))}, false, false)
			return err
		}()},
		{"mixed types", func() error {
			_, err := NewCategorical("c", String, []Value{StringValue("a"), IntValue(1)}, false, false)
			return err
		}()},
		{"NaN value", func() error {
			_, err := NewCategorical("c", Float, []Value{FloatValue(math.NaN())}, false, false)
			return err
		}()},
		{"int enum", func() error { _, err := NewCategorical("c", Int, ints(1), false, true); return err }()},
		{"bad type", func() error { _, err := NewCategorical("c", 0, nil, false, false); return err }()},
		{"empty range", func() error { _, err := NewIntRange("c", 5, 4, false); return err }()},
		{"huge range", func() error { _, err := NewIntRange("c", 0, MaxSize, false); return err }()},
		{"huge range with NULL", func() error { _, err := NewIntRange("c", 0, MaxSize-1, true); return err }()},
		{"overflowing range", func() error { _, err := NewIntRange("c", math.MinInt64, math.MaxInt64, false); return err }()},
		{"binned lo = hi", func() error { _, err := NewBinned("c", 1, 1, 3, false, false); return err }()},
		{"binned NaN", func() error { _, err := NewBinned("c", math.NaN(), 1, 3, false, false); return err }()},
		{"binned inf", func() error { _, err := NewBinned("c", 0, math.Inf(1), 3, false, false); return err }()},
		{"binned 0 bins", func() error { _, err := NewBinned("c", 0, 1, 0, false, false); return err }()},
		{"binned too many bins", func() error { _, err := NewBinned("c", 0, 1, MaxSize+1, false, false); return err }()},
		{"integer bins narrower than 1", func() error { _, err := NewBinned("c", 0, 10, 11, true, false); return err }()},
		{"integer bins, fractional bound", func() error { _, err := NewBinned("c", 0.5, 10, 2, true, false); return err }()},
	}
	for _, tt := range tests {
		if !errors.Is(tt.err, ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", tt.name, tt.err)
		}
	}
	// Boundaries that are fine.
	if _, err := NewIntRange("c", 0, MaxSize-1, false); err != nil {
		t.Errorf("range of exactly MaxSize values: %v", err)
	}
	if _, err := NewBinned("c", 0, 10, 10, true, false); err != nil {
		t.Errorf("integer bins of width 1: %v", err)
	}
}

func TestEncode(t *testing.T) {
	cols := testColumns()
	col := func(name string) *Column {
		for i := range cols {
			if cols[i].name == name {
				return &cols[i]
			}
		}
		panic(name)
	}
	tests := []struct {
		col    string
		v      any
		code   int
		status Status
	}{
		{"sex", "F", 0, InDomain},
		{"sex", []byte("M"), 1, InDomain},
		{"sex", "X", 0, Clipped}, // not nullable: first value
		{"sex", nil, 0, Clipped}, // NULL in a NOT NULL column
		{"sex", "f", 0, Clipped}, // domains are case-sensitive
		{"race", "c", 2, InDomain},
		{"race", uint16(2), 1, InDomain}, // GMS ENUM index, 1-based
		{"race", int64(4), 3, ToNull},    // ENUM index out of range
		{"race", "z", 3, ToNull},
		{"race", nil, 3, InDomain},
		{"grade", int8(20), 1, InDomain},
		{"grade", "30", 2, InDomain},
		{"grade", 30.0, 2, InDomain},
		{"grade", 30.5, 3, ToNull},
		{"grade", 40, 3, ToNull},
		{"grade", "abc", -1, Invalid},
		{"ratio", -1.25, 1, InDomain},
		{"ratio", float32(0.5), 0, InDomain},
		{"ratio", decimal.RequireFromString("0.50"), 0, InDomain},
		{"ratio", 0.75, 0, Clipped},
		{"ratio", math.NaN(), -1, Invalid},
		{"age", int64(17), 0, InDomain},
		{"age", int32(90), 73, InDomain},
		{"age", uint64(math.MaxUint64), 73, Clipped},
		{"age", -5, 0, Clipped},
		{"age", 200, 73, Clipped},
		{"age", 42.4, 25, Clipped}, // rounded to 42
		{"age", "42", 25, InDomain},
		{"age", "x", -1, Invalid},
		{"age", struct{}{}, -1, Invalid},
		{"flag", true, 1, InDomain},
		{"flag", false, 0, InDomain},
		{"flag", nil, 2, InDomain},
		{"flag", 5, 1, Clipped},
		{"income", 0.0, 0, InDomain},
		{"income", 1000.0 / 7, 1, InDomain}, // exactly on Edge(1)
		{"income", 999.999, 6, InDomain},
		{"income", 1000, 6, InDomain}, // the last bin is closed
		{"income", 1000.5, 6, Clipped},
		{"income", -1, 0, Clipped},
		{"income", math.Inf(1), 6, Clipped},
		{"income", "12.5", 0, InDomain},
		{"income", math.NaN(), -1, Invalid},
		{"hours", 99, 6, InDomain},
		{"hours", nil, 7, InDomain},
		{"neg", -3.5, 0, InDomain},
		{"neg", 2.25, 2, InDomain},
		{"neg", 3, 2, Clipped},
	}
	for _, tt := range tests {
		code, status := col(tt.col).Encode(tt.v)
		if code != tt.code || status != tt.status {
			t.Errorf("%s.Encode(%#v) = %d, %v; want %d, %v", tt.col, tt.v, code, status, tt.code, tt.status)
		}
	}
}

// TestEncodeNeverWidens checks the invariant behind the out-of-domain rule:
// every value maps into [0, Size()) or is reported Invalid.
func TestEncodeNeverWidens(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	inputs := []any{nil, "", "a", "zz", -1e300, 1e300, math.Inf(-1), 0, 1, -1, uint8(200), true, []byte("c")}
	for range 200 {
		inputs = append(inputs, rng.NormFloat64()*1000, rng.Int64N(200)-100)
	}
	for _, c := range testColumns() {
		for _, v := range inputs {
			code, status := c.Encode(v)
			if status == Invalid {
				if code != -1 {
					t.Errorf("%s.Encode(%v): Invalid with code %d", c.name, v, code)
				}
				continue
			}
			if code < 0 || code >= c.Size() {
				t.Errorf("%s.Encode(%v) = %d outside [0, %d)", c.name, v, code, c.Size())
			}
			if status == ToNull && (!c.nullable || c.kind != Categorical) {
				t.Errorf("%s.Encode(%v): ToNull on a %v column (nullable %v)", c.name, v, c.kind, c.nullable)
			}
		}
	}
}

func TestDecodeEncodeRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range testColumns() {
		for code := range c.Size() {
			seen := map[any]bool{}
			for range 200 {
				v := c.Decode(code, rng)
				seen[v] = true
				got, status := c.Encode(v)
				if got != code || status != InDomain {
					t.Fatalf("%s: Encode(Decode(%d) = %v) = %d, %v", c.name, code, v, got, status)
				}
				if c.kind == Binned && code != c.NullCode() {
					lo, hi, closed := c.Bin(code)
					x, _ := toFloat(v)
					if x < lo || x > hi || x == hi && !closed {
						t.Fatalf("%s: Decode(%d) = %v outside bin [%v, %v] (closed %v)", c.name, code, v, lo, hi, closed)
					}
					if c.typ == Int {
						if _, ok := v.(int64); !ok {
							t.Fatalf("%s: integer column decoded %T", c.name, v)
						}
					}
				}
			}
			// Integer bins: uniform over the bin's integers, so all of
			// them appear in 200 draws (bins here hold at most 15).
			if c.kind == Binned && c.typ == Int && code != c.NullCode() {
				lo, hi, _ := c.Bin(code)
				if want := int(hi-lo) + 1; len(seen) != want {
					t.Errorf("%s bin %d: %d distinct integers drawn, want %d", c.name, code, len(seen), want)
				}
			}
		}
	}
}

// TestBinsPartition checks with a brute-force oracle that the bins of a
// Binned column partition [lo, hi] consistently with Edge and Bin.
func TestBinsPartition(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 50 {
		lo := math.Round(rng.NormFloat64() * 100)
		hi := lo + 1 + math.Round(rng.Float64()*300)
		bins := 1 + rng.IntN(int(hi-lo))
		for _, integer := range []bool{false, true} {
			c := must(NewBinned("x", lo, hi, bins, integer, false))
			if c.Edge(0) != lo || c.Edge(bins) != hi {
				t.Fatalf("edges %v, %v; want %v, %v", c.Edge(0), c.Edge(bins), lo, hi)
			}
			// Every integer of [lo, hi] lies in exactly the bin Encode says.
			for x := lo; x <= hi; x++ {
				code, _ := c.Encode(x)
				n := 0
				for b := range bins {
					blo, bhi, closed := c.Bin(b)
					if x >= blo && (x < bhi || closed && x == bhi) {
						n++
						if b != code {
							t.Fatalf("%v in bin %d, Encode says %d", x, b, code)
						}
					}
				}
				if n != 1 {
					t.Fatalf("%v is in %d bins (lo %v hi %v bins %d integer %v)", x, n, lo, hi, bins, integer)
				}
			}
			for i := 1; i < bins; i++ {
				if code, _ := c.Encode(c.Edge(i)); code != i && !integer {
					t.Fatalf("Encode(Edge(%d)) = %d", i, code)
				}
			}
		}
	}
}

func TestLabelAndValues(t *testing.T) {
	c := must(NewBinned("x", 0, 10, 4, false, true))
	for code, want := range []string{"[0, 2.5)", "[2.5, 5)", "[5, 7.5)", "[7.5, 10]", "NULL"} {
		if got := c.Label(code); got != want {
			t.Errorf("Label(%d) = %q, want %q", code, got, want)
		}
	}
	if c.Values() != nil {
		t.Errorf("binned Values() = %v, want nil", c.Values())
	}
	r := must(NewIntRange("r", -2, 1, false))
	if got, want := r.Values(), ints(-2, -1, 0, 1); !reflect.DeepEqual(got, want) {
		t.Errorf("Values() = %v, want %v", got, want)
	}
	if r.Label(0) != "-2" || r.Label(4) == "" {
		t.Errorf("labels %q %q", r.Label(0), r.Label(4))
	}
}

func TestJSONRoundTrip(t *testing.T) {
	tbl := Table{Columns: testColumns()}
	b, err := json.Marshal(tbl)
	if err != nil {
		t.Fatal(err)
	}
	var got Table
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("Unmarshal(%s): %v", b, err)
	}
	if !reflect.DeepEqual(got, tbl) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, tbl)
	}
	// Large integers and awkward floats survive exactly.
	c := must(NewCategorical("big", Int, ints(math.MaxInt64, math.MinInt64, 1<<53+1), false, false))
	f := must(NewCategorical("f", Float, []Value{FloatValue(0.1), FloatValue(1e-300), FloatValue(3)}, false, false))
	b, _ = json.Marshal(Table{Columns: []Column{c, f}})
	if err := json.Unmarshal(b, &got); err != nil || !reflect.DeepEqual(got.Columns, []Column{c, f}) {
		t.Errorf("round trip of %s: %v, %+v", b, err, got)
	}
}

func TestJSONRejects(t *testing.T) {
	for _, in := range []string{
		`{"columns":[{"name":"a","kind":"nope","type":"int"}]}`,
		`{"columns":[{"name":"a","kind":"range","type":"int","lo":5,"hi":1}]}`,
		`{"columns":[{"name":"a","kind":"range","type":"int","lo":0.5,"hi":1}]}`,
		`{"columns":[{"name":"a","kind":"range","type":"int"}]}`,
		`{"columns":[{"name":"a","kind":"binned","type":"float","lo":0,"hi":1,"bins":0}]}`,
		`{"columns":[{"name":"a","kind":"categorical","type":"string","values":[1]}]}`,
		`{"columns":[{"name":"a","kind":"categorical","type":"int","values":[1.5]}]}`,
		`{"columns":[{"name":"a","kind":"categorical","type":"int","values":[]}]}`,
		`{"columns":[{"name":"","kind":"range","type":"int","lo":0,"hi":1}]}`,
		`{"columns":[{"name":"a","kind":"range","type":"int","lo":0,"hi":1},{"name":"A","kind":"range","type":"int","lo":0,"hi":1}]}`,
		`{"columns":[{"name":"a","kind":"range","type":"int","lo":0,"hi":1,"extra":1}]}`,
		`{"cols":[]}`,
	} {
		var tbl Table
		if err := json.Unmarshal([]byte(in), &tbl); err == nil {
			t.Errorf("Unmarshal(%s) accepted: %+v", in, tbl)
		}
	}
}

func TestTableLookup(t *testing.T) {
	tbl := Table{Columns: testColumns()}
	if i, ok := tbl.Index("AGE"); !ok || tbl.Columns[i].Name() != "age" {
		t.Errorf("Index(AGE) = %d, %v", i, ok)
	}
	if _, ok := tbl.Column("missing"); ok {
		t.Error("Column(missing) found")
	}
	if got := tbl.Sizes(); got[0] != 2 || got[1] != 4 || got[5] != 3 || got[7] != 8 {
		t.Errorf("Sizes() = %v", got)
	}
	if err := tbl.Validate(); err != nil {
		t.Error(err)
	}
}

func TestParseDomainFile(t *testing.T) {
	tbl, err := ParseDomainFile([]byte(`{"z": 3, "a": 1, "m-x>1": 65536}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := tbl.Names(); !slices.Equal(got, []string{"z", "a", "m-x>1"}) {
		t.Errorf("names %v: file order not kept", got)
	}
	if got := tbl.Sizes(); !slices.Equal(got, []int{3, 1, 65536}) {
		t.Errorf("sizes %v", got)
	}
	for _, in := range []string{``, `[]`, `{"a": 0}`, `{"a": 1.5}`, `{"a": "3"}`, `{"a": 65537}`, `{"a": 2, "a": 3}`, `{"a": 2} x`, `{"a": 2`} {
		if _, err := ParseDomainFile([]byte(in)); err == nil {
			t.Errorf("ParseDomainFile(%q) accepted", in)
		}
	}
}

// TestParseAdultDomain reads the shared adult domain file when present.
func TestParseAdultDomain(t *testing.T) {
	path := filepath.Join("..", "..", "..", "shared", "data", "adult-domain.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("shared data not available: %v", err)
	}
	tbl, err := ParseDomainFile(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(tbl.Columns) != 14 || tbl.Columns[0].Name() != "age" || tbl.Columns[13].Name() != "income>50K" {
		t.Errorf("columns %v", tbl.Names())
	}
}

func TestFromSchema(t *testing.T) {
	enum := types.MustCreateEnumType([]string{"lo", "mid", "hi"}, sql.Collation_Default)
	col := func(name string, typ sql.Type, nullable bool) *sql.Column {
		return &sql.Column{Name: name, Type: typ, Nullable: nullable}
	}
	sch := sql.Schema{
		col("e", enum, false),
		col("b", types.Boolean, true),
		col("age", types.Int32, false),
		col("h", types.Int64, false),
		col("g", types.Int64, true),
		col("s", types.Text, false),
		col("x", types.Float64, false),
		col("y", types.Int64, false),
		col("free", types.Int64, false),
		col("wide", types.Int64, false),
		col("half", types.Int64, false),
		col("e2", enum, true),
		col("z", types.Int64, false),
	}
	checks := []string{
		"(`age` BETWEEN 17 AND 90)",
		"h >= 0 AND 10 > h AND s IN ('p', 'q') AND (g IN (3, 1, 2)) AND g <> 7",
		"g IN (2, 3, 4)", // intersected with the other IN list
		"x BETWEEN 0 AND 1",
		"y > 1 OR y < 0", // not a conjunction: ignored
		"wide BETWEEN 0 AND 1000000",
		"half >= 0",
		"e2 IN ('hi', 'lo', 'nope')",
		"z = -4",
	}
	declared := map[string]Column{
		"Y": must(NewBinned("whatever", 0, 100, 10, false, false)),
		"X": must(NewBinned("x", 0, 1, 4, false, false)),
	}
	tbl, errs := FromSchema(sch, checks, declared)
	want := []Column{
		must(NewCategorical("e", String, strs("lo", "mid", "hi"), false, true)),
		must(NewIntRange("b", 0, 1, true)),
		must(NewIntRange("age", 17, 90, false)),
		must(NewIntRange("h", 0, 9, false)),
		must(NewCategorical("g", Int, ints(3, 2), true, false)),
		must(NewCategorical("s", String, strs("p", "q"), false, false)),
		must(NewBinned("x", 0, 1, 4, false, false)),
		must(NewBinned("y", 0, 100, 10, true, false)), // integer column: integer bins
		must(NewCategorical("e2", String, strs("lo", "hi"), true, true)),
		must(NewIntRange("z", -4, -4, false)),
	}
	if !reflect.DeepEqual(tbl.Columns, want) {
		t.Errorf("columns:\n got %v\nwant %v", tbl.Names(), (&Table{Columns: want}).Names())
		for i := range min(len(want), len(tbl.Columns)) {
			if !reflect.DeepEqual(tbl.Columns[i], want[i]) {
				t.Errorf("column %d: got %+v want %+v", i, tbl.Columns[i], want[i])
			}
		}
	}
	var missing []string
	for _, err := range errs {
		var m *MissingDomainError
		if !errors.As(err, &m) || !errors.Is(err, ErrNoDomain) {
			t.Errorf("unexpected error %v", err)
			continue
		}
		missing = append(missing, m.Column)
	}
	if want := []string{"free", "wide", "half"}; !slices.Equal(missing, want) {
		t.Errorf("missing = %v, want %v", missing, want)
	}
}

func TestFromSchemaBadDeclarations(t *testing.T) {
	enum := types.MustCreateEnumType([]string{"a", "b"}, sql.Collation_Default)
	sch := sql.Schema{
		{Name: "s", Type: types.Text},
		{Name: "i", Type: types.Int64},
		{Name: "e", Type: enum},
		{Name: "n", Type: types.Int64},
	}
	declared := map[string]Column{
		"s":     must(NewBinned("s", 0, 1, 2, false, false)),                // bins on a string column
		"i":     must(NewCategorical("i", String, strs("x"), false, false)), // strings on an int column
		"e":     must(NewCategorical("e", String, strs("a", "c"), false, false)),
		"n":     must(NewBinned("n", 0, 5, 10, false, false)), // integer bins narrower than 1
		"ghost": must(NewIntRange("ghost", 0, 1, false)),
	}
	tbl, errs := FromSchema(sch, []string{"i >"}, declared)
	if len(tbl.Columns) != 0 {
		t.Errorf("accepted %v", tbl.Names())
	}
	if len(errs) != 6 { // 4 columns, 1 unknown declaration, 1 unparsable check
		t.Errorf("got %d errors, want 6: %v", len(errs), errs)
	}
	for _, err := range errs {
		if errors.Is(err, ErrNoDomain) {
			t.Errorf("declaration error reported as missing domain: %v", err)
		}
	}
}

func TestLiteral(t *testing.T) {
	tests := []struct {
		expr string
		want Value
		null bool
		err  bool
	}{
		{"1", IntValue(1), false, false},
		{"-1", IntValue(-1), false, false},
		{"- 2.5", FloatValue(-2.5), false, false},
		{"-(3)", IntValue(-3), false, false},
		{"+4", IntValue(4), false, false},
		{"1e3", FloatValue(1000), false, false},
		{"'x'", StringValue("x"), false, false},
		{`"dq"`, StringValue("dq"), false, false},
		{"0x1F", IntValue(31), false, false},
		{"b'101'", IntValue(5), false, false},
		{"true", IntValue(1), false, false},
		{"FALSE", IntValue(0), false, false},
		{"NULL", Value{}, true, false},
		{"99999999999999999999", FloatValue(99999999999999999999), false, false},
		{"a", Value{}, false, true},
		{"1 + 1", Value{}, false, true},
		{"-'x'", Value{}, false, true},
		{"now()", Value{}, false, true},
	}
	for _, tt := range tests {
		stmt, err := sqlparser.Parse("SELECT 1 FROM t WHERE c = " + tt.expr)
		if err != nil {
			t.Fatalf("%s: %v", tt.expr, err)
		}
		e := stmt.(*sqlparser.Select).Where.Expr.(*sqlparser.ComparisonExpr).Right
		v, null, err := Literal(e)
		if (err != nil) != tt.err || null != tt.null || v != tt.want {
			t.Errorf("Literal(%s) = %v, %v, %v; want %v, %v, err %v", tt.expr, v, null, err, tt.want, tt.null, tt.err)
		}
		if err != nil && !errors.Is(err, ErrNotLiteral) {
			t.Errorf("Literal(%s): error %v is not ErrNotLiteral", tt.expr, err)
		}
	}
}

func TestMirrorComparison(t *testing.T) {
	for _, tc := range []struct {
		op, want string
		ok       bool
	}{
		{sqlparser.LessThanStr, sqlparser.GreaterThanStr, true},
		{sqlparser.GreaterThanStr, sqlparser.LessThanStr, true},
		{sqlparser.LessEqualStr, sqlparser.GreaterEqualStr, true},
		{sqlparser.GreaterEqualStr, sqlparser.LessEqualStr, true},
		{sqlparser.EqualStr, sqlparser.EqualStr, true},
		{sqlparser.NotEqualStr, sqlparser.NotEqualStr, true},
		{sqlparser.InStr, "", false},
		{sqlparser.LikeStr, "", false},
		{sqlparser.NullSafeEqualStr, "", false},
	} {
		got, ok := MirrorComparison(tc.op)
		if got != tc.want || ok != tc.ok {
			t.Errorf("MirrorComparison(%q) = %q, %v; want %q, %v", tc.op, got, ok, tc.want, tc.ok)
		}
		if ok {
			// Mirroring is an involution: swapping the operands back
			// restores the operator.
			if back, _ := MirrorComparison(got); back != tc.op {
				t.Errorf("MirrorComparison(MirrorComparison(%q)) = %q", tc.op, back)
			}
		}
	}
}
