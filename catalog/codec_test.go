package catalog

import (
	"bytes"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/shopspring/decimal"
)

// TestKeyOrder checks the order-preserving key encoding against the SQL
// type's own Compare, on every pair of a set of edge values.
func TestKeyOrder(t *testing.T) {
	ctx := sql.NewEmptyContext()
	cases := []struct {
		typ  sql.Type
		vals []any
	}{
		{types.Int64, []any{int64(math.MinInt64), int64(-1), int64(0), int64(1), int64(math.MaxInt64)}},
		{types.Int8, []any{int8(-128), int8(-1), int8(0), int8(127)}},
		{types.Uint64, []any{uint64(0), uint64(1), uint64(1 << 63), uint64(math.MaxUint64)}},
		{types.Float64, []any{math.Inf(-1), -1e300, -1.5, -1e-300, 0.0, 1e-300, 2.5, math.Inf(1)}},
		{types.MustCreateDecimalType(20, 5), decimals("-1000", "-10.5", "-10.25", "-1", "-0.001", "0", "0.001", "0.01", "1", "1.5", "9.99999", "10", "100.5")},
		{types.Datetime, []any{
			time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(1969, 12, 31, 23, 59, 59, 999999000, time.UTC),
			time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2024, 2, 29, 12, 0, 0, 1000, time.UTC),
			time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)}},
		{types.LongBlob, []any{[]byte{}, []byte{0}, []byte{0, 0}, []byte{0, 1}, []byte{1}, []byte{1, 0}, []byte{0xff}}},
		{types.Time, []any{types.Timespan(-5_000_000), types.Timespan(0), types.Timespan(3_600_000_000)}},
	}
	for _, c := range cases {
		sch := sql.NewPrimaryKeySchema(sql.Schema{{Name: "k", Type: c.typ, PrimaryKey: true}})
		kc := newKeyCodec(sch)
		for _, a := range c.vals {
			for _, b := range c.vals {
				ka, err := kc.encodeRow(ctx, nil, sql.Row{a})
				if err != nil {
					t.Fatalf("%s: encode %v: %v", c.typ, a, err)
				}
				kb, _ := kc.encodeRow(ctx, nil, sql.Row{b})
				want, err := c.typ.Compare(ctx, a, b)
				if err != nil {
					t.Fatal(err)
				}
				if got := bytes.Compare(ka, kb); got != want {
					t.Errorf("%s: keys of %v, %v compare %d, values compare %d", c.typ, a, b, got, want)
				}
			}
		}
	}
}

// TestCompositeKeyOrder checks that concatenated keys order lexicographically
// by column, with variable-length first columns.
func TestCompositeKeyOrder(t *testing.T) {
	ctx := sql.NewEmptyContext()
	sch := sql.NewPrimaryKeySchema(sql.Schema{
		{Name: "a", Type: types.LongBlob, PrimaryKey: true},
		{Name: "b", Type: types.Int32, PrimaryKey: true},
	})
	kc := newKeyCodec(sch)
	r := rand.New(rand.NewPCG(1, 2)) // fixed seed: test data only
	rows := make([]sql.Row, 200)
	for i := range rows {
		a := make([]byte, r.IntN(3))
		for j := range a {
			a[j] = byte(r.IntN(3)) // many 0x00 bytes to exercise escaping
		}
		rows[i] = sql.Row{a, int32(r.IntN(5) - 2)}
	}
	for _, x := range rows {
		for _, y := range rows {
			want := bytes.Compare(x[0].([]byte), y[0].([]byte))
			if want == 0 {
				want = cmpInt(x[1].(int32), y[1].(int32))
			}
			kx, _ := kc.encodeRow(ctx, nil, x)
			ky, _ := kc.encodeRow(ctx, nil, y)
			if got := bytes.Compare(kx, ky); got != want {
				t.Fatalf("rows %v %v: key compare %d, want %d", x, y, got, want)
			}
		}
	}
}

func cmpInt(a, b int32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func decimals(ss ...string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = decimal.RequireFromString(s)
	}
	return out
}

// TestRowRoundTrip encodes and decodes rows of every supported kind and
// checks that values and their Go types survive.
func TestRowRoundTrip(t *testing.T) {
	ctx := sql.NewEmptyContext()
	enum := types.MustCreateEnumType([]string{"a", "b"}, sql.Collation_Default)
	set := types.MustCreateSetType([]string{"x", "y"}, sql.Collation_Default)
	sch := sql.Schema{
		{Name: "i8", Type: types.Int8}, {Name: "i16", Type: types.Int16}, {Name: "i24", Type: types.Int24},
		{Name: "i32", Type: types.Int32}, {Name: "i64", Type: types.Int64}, {Name: "u8", Type: types.Uint8},
		{Name: "u64", Type: types.Uint64}, {Name: "f32", Type: types.Float32}, {Name: "f64", Type: types.Float64},
		{Name: "dec", Type: types.MustCreateDecimalType(30, 10)}, {Name: "dt", Type: types.DatetimeMaxPrecision},
		{Name: "d", Type: types.Date}, {Name: "tm", Type: types.Time}, {Name: "s", Type: types.LongText},
		{Name: "b", Type: types.LongBlob}, {Name: "e", Type: enum}, {Name: "st", Type: set},
		{Name: "y", Type: types.Year}, {Name: "bit", Type: types.MustCreateBitType(10)}, {Name: "j", Type: types.JSON},
		{Name: "n", Type: types.Int64, Nullable: true},
	}
	row := sql.Row{
		int8(-8), int16(-16), int32(-24), int32(math.MinInt32), int64(math.MaxInt64), uint8(255),
		uint64(math.MaxUint64), float32(1.5), math.Pi,
		decimal.RequireFromString("-12345678901234567890.0123456789"), time.Date(2020, 1, 2, 3, 4, 5, 123456000, time.UTC),
		time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC), types.Timespan(-123456789), "héllo\x00",
		[]byte{0, 1, 2}, uint16(2), uint64(3), int16(2155), uint64(1023), types.MustJSON(`{"k": [1, "v"]}`), nil,
	}
	c := newRowCodec(7, sch)
	enc, err := c.encode(ctx, nil, row)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.decode(ctx, enc)
	if err != nil {
		t.Fatal(err)
	}
	for i := range row {
		if i == 19 { // JSON compares by content
			if cmp, err := types.JSON.Compare(ctx, row[i], got[i]); err != nil || cmp != 0 {
				t.Errorf("json: got %v, want %v (%v)", got[i], row[i], err)
			}
			continue
		}
		if d, ok := row[i].(decimal.Decimal); ok {
			if gd, ok := got[i].(decimal.Decimal); !ok || !gd.Equal(d) || gd.Exponent() != d.Exponent() {
				t.Errorf("decimal: got %v, want %v", got[i], d)
			}
			continue
		}
		if !reflect.DeepEqual(got[i], row[i]) {
			t.Errorf("column %s: got %#v (%T), want %#v (%T)", sch[i].Name, got[i], got[i], row[i], row[i])
		}
	}
	// A row written under another layout is refused, never misread.
	if _, err := newRowCodec(8, sch).decode(ctx, enc); err != ErrSchemaChanged {
		t.Errorf("decode with other layout: %v", err)
	}
	// Truncated input is an error, not a panic.
	for n := range len(enc) {
		if _, err := c.decode(ctx, enc[:n]); err == nil {
			t.Errorf("decode of %d-byte prefix succeeded", n)
		}
	}
}
