package catalog

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/shopspring/decimal"
)

// colKind selects how one column's values are encoded. It is derived from the
// column's SQL type, so the encoding carries no per-value type tags.
type colKind uint8

const (
	kindOther    colKind = iota // any other type: its MySQL text form, decoded by Type.Convert
	kindInt8                    // int8
	kindInt16                   // int16 (also YEAR)
	kindInt32                   // int32 (also MEDIUMINT)
	kindInt64                   // int64
	kindUint8                   // uint8
	kindUint16                  // uint16 (also ENUM index)
	kindUint32                  // uint32
	kindUint64                  // uint64 (also BIT and SET bitmaps)
	kindFloat32                 // float32
	kindFloat64                 // float64
	kindDecimal                 // decimal.Decimal
	kindTime                    // time.Time (DATE, DATETIME, TIMESTAMP)
	kindTimespan                // types.Timespan (TIME)
	kindString                  // string (CHAR, VARCHAR, TEXT)
	kindBytes                   // []byte (BINARY, VARBINARY, BLOB)
)

// kindOf returns the encoding used for values of t.
func kindOf(t sql.Type) colKind {
	switch {
	case types.IsDecimal(t):
		return kindDecimal
	case types.IsTime(t):
		return kindTime
	case types.IsTimespan(t):
		return kindTimespan
	case types.IsTextOnly(t):
		if _, ok := t.(types.StringType); ok {
			return kindString
		}
		return kindOther
	}
	if _, ok := t.(types.StringType); ok && types.IsBinaryType(t) {
		return kindBytes
	}
	if _, ok := t.(types.ExtendedType); ok {
		return kindOther
	}
	switch t.Zero().(type) {
	case int8:
		return kindInt8
	case int16:
		return kindInt16
	case int32:
		return kindInt32
	case int64:
		return kindInt64
	case uint8:
		return kindUint8
	case uint16:
		return kindUint16
	case uint32:
		return kindUint32
	case uint64:
		return kindUint64
	case float32:
		return kindFloat32
	case float64:
		return kindFloat64
	}
	return kindOther
}

// rowCodec encodes and decodes the rows of one table layout.
//
// A row is encoded as
//
//	uvarint(layout) | null bitmap (ceil(n/8) bytes) | value of each non-NULL column
//
// where integers are (zigzag) varints, floats are fixed 4 or 8 bytes, strings
// and byte strings are uvarint length + bytes, times are varint seconds +
// uvarint nanoseconds, and decimals are varint exponent + sign byte + uvarint
// length + big-endian coefficient magnitude. The encoding of a row is
// deterministic, so equal rows have equal encodings.
type rowCodec struct {
	layout uint64
	cols   []sql.Type
	kinds  []colKind
}

func newRowCodec(layout uint64, sch sql.Schema) *rowCodec {
	c := &rowCodec{layout: layout, cols: make([]sql.Type, len(sch)), kinds: make([]colKind, len(sch))}
	for i, col := range sch {
		c.cols[i] = col.Type
		c.kinds[i] = kindOf(col.Type)
	}
	return c
}

// encode appends the encoding of row to dst.
func (c *rowCodec) encode(ctx *sql.Context, dst []byte, row sql.Row) ([]byte, error) {
	if len(row) != len(c.cols) {
		return nil, fmt.Errorf("catalog: row has %d values, table has %d columns", len(row), len(c.cols))
	}
	dst = binary.AppendUvarint(dst, c.layout)
	nb := len(dst)
	for range (len(row) + 7) / 8 {
		dst = append(dst, 0)
	}
	for i, v := range row {
		if v == nil {
			dst[nb+i/8] |= 1 << (i % 8)
			continue
		}
		var err error
		if dst, err = c.encodeValue(ctx, dst, i, v); err != nil {
			return nil, err
		}
	}
	return dst, nil
}

func (c *rowCodec) encodeValue(ctx *sql.Context, dst []byte, i int, v any) ([]byte, error) {
	if w, ok := v.(sql.AnyWrapper); ok {
		u, err := w.UnwrapAny(ctx)
		if err != nil {
			return nil, fmt.Errorf("catalog: unwrap value: %w", err)
		}
		v = u
	}
	switch k := c.kinds[i]; k {
	case kindInt8, kindInt16, kindInt32, kindInt64:
		n, ok := asInt64(v)
		if !ok {
			cv, err := c.convert(ctx, i, v)
			if err != nil {
				return nil, err
			}
			if n, ok = asInt64(cv); !ok {
				return nil, c.typeErr(i, v)
			}
		}
		return binary.AppendVarint(dst, n), nil
	case kindUint8, kindUint16, kindUint32, kindUint64:
		n, ok := asUint64(v)
		if !ok {
			cv, err := c.convert(ctx, i, v)
			if err != nil {
				return nil, err
			}
			if n, ok = asUint64(cv); !ok {
				return nil, c.typeErr(i, v)
			}
		}
		return binary.AppendUvarint(dst, n), nil
	case kindFloat32:
		f, ok := v.(float32)
		if !ok {
			cv, err := c.convert(ctx, i, v)
			if err != nil {
				return nil, err
			}
			if f, ok = cv.(float32); !ok {
				return nil, c.typeErr(i, v)
			}
		}
		return binary.LittleEndian.AppendUint32(dst, math.Float32bits(f)), nil
	case kindFloat64:
		f, ok := v.(float64)
		if !ok {
			cv, err := c.convert(ctx, i, v)
			if err != nil {
				return nil, err
			}
			if f, ok = cv.(float64); !ok {
				return nil, c.typeErr(i, v)
			}
		}
		return binary.LittleEndian.AppendUint64(dst, math.Float64bits(f)), nil
	case kindDecimal:
		d, ok := v.(decimal.Decimal)
		if !ok {
			cv, err := c.convert(ctx, i, v)
			if err != nil {
				return nil, err
			}
			if d, ok = cv.(decimal.Decimal); !ok {
				return nil, c.typeErr(i, v)
			}
		}
		return appendDecimal(dst, d), nil
	case kindTime:
		t, ok := v.(time.Time)
		if !ok {
			cv, err := c.convert(ctx, i, v)
			if err != nil {
				return nil, err
			}
			if t, ok = cv.(time.Time); !ok {
				return nil, c.typeErr(i, v)
			}
		}
		dst = binary.AppendVarint(dst, t.Unix())
		return binary.AppendUvarint(dst, uint64(t.Nanosecond())), nil
	case kindTimespan:
		t, ok := v.(types.Timespan)
		if !ok {
			cv, err := c.convert(ctx, i, v)
			if err != nil {
				return nil, err
			}
			if t, ok = cv.(types.Timespan); !ok {
				return nil, c.typeErr(i, v)
			}
		}
		return binary.AppendVarint(dst, int64(t)), nil
	case kindString, kindBytes:
		switch s := v.(type) {
		case string:
			dst = binary.AppendUvarint(dst, uint64(len(s)))
			return append(dst, s...), nil
		case []byte:
			dst = binary.AppendUvarint(dst, uint64(len(s)))
			return append(dst, s...), nil
		}
		cv, err := c.convert(ctx, i, v)
		if err != nil {
			return nil, err
		}
		switch s := cv.(type) {
		case string:
			dst = binary.AppendUvarint(dst, uint64(len(s)))
			return append(dst, s...), nil
		case []byte:
			dst = binary.AppendUvarint(dst, uint64(len(s)))
			return append(dst, s...), nil
		}
		return nil, c.typeErr(i, v)
	default:
		sv, err := c.cols[i].SQL(ctx, nil, v)
		if err != nil {
			return nil, fmt.Errorf("catalog: encode %s value: %w", c.cols[i], err)
		}
		raw := sv.Raw()
		dst = binary.AppendUvarint(dst, uint64(len(raw)))
		return append(dst, raw...), nil
	}
}

func (c *rowCodec) convert(ctx *sql.Context, i int, v any) (any, error) {
	cv, _, err := c.cols[i].Convert(ctx, v)
	if err != nil {
		return nil, fmt.Errorf("catalog: convert %T to %s: %w", v, c.cols[i], err)
	}
	return cv, nil
}

func (c *rowCodec) typeErr(i int, v any) error {
	return fmt.Errorf("catalog: cannot store %T value in %s column", v, c.cols[i])
}

// decode decodes an encoded row. The result does not alias buf.
func (c *rowCodec) decode(ctx *sql.Context, buf []byte) (sql.Row, error) {
	layout, n := binary.Uvarint(buf)
	if n <= 0 {
		return nil, errCorrupt("row header")
	}
	if layout != c.layout {
		return nil, ErrSchemaChanged
	}
	buf = buf[n:]
	nb := (len(c.cols) + 7) / 8
	if len(buf) < nb {
		return nil, errCorrupt("null bitmap")
	}
	nulls, buf := buf[:nb], buf[nb:]
	row := make(sql.Row, len(c.cols))
	for i := range row {
		if nulls[i/8]&(1<<(i%8)) != 0 {
			continue
		}
		v, rest, err := c.decodeValue(ctx, i, buf)
		if err != nil {
			return nil, err
		}
		row[i], buf = v, rest
	}
	if len(buf) != 0 {
		return nil, errCorrupt("trailing bytes")
	}
	return row, nil
}

func (c *rowCodec) decodeValue(ctx *sql.Context, i int, buf []byte) (any, []byte, error) {
	switch k := c.kinds[i]; k {
	case kindInt8, kindInt16, kindInt32, kindInt64:
		x, n := binary.Varint(buf)
		if n <= 0 {
			return nil, nil, errCorrupt("integer")
		}
		switch k {
		case kindInt8:
			return int8(x), buf[n:], nil
		case kindInt16:
			return int16(x), buf[n:], nil
		case kindInt32:
			return int32(x), buf[n:], nil
		}
		return x, buf[n:], nil
	case kindUint8, kindUint16, kindUint32, kindUint64:
		x, n := binary.Uvarint(buf)
		if n <= 0 {
			return nil, nil, errCorrupt("unsigned integer")
		}
		switch k {
		case kindUint8:
			return uint8(x), buf[n:], nil
		case kindUint16:
			return uint16(x), buf[n:], nil
		case kindUint32:
			return uint32(x), buf[n:], nil
		}
		return x, buf[n:], nil
	case kindFloat32:
		if len(buf) < 4 {
			return nil, nil, errCorrupt("float")
		}
		return math.Float32frombits(binary.LittleEndian.Uint32(buf)), buf[4:], nil
	case kindFloat64:
		if len(buf) < 8 {
			return nil, nil, errCorrupt("double")
		}
		return math.Float64frombits(binary.LittleEndian.Uint64(buf)), buf[8:], nil
	case kindDecimal:
		return decodeDecimal(buf)
	case kindTime:
		sec, n := binary.Varint(buf)
		if n <= 0 {
			return nil, nil, errCorrupt("time")
		}
		nsec, m := binary.Uvarint(buf[n:])
		if m <= 0 || nsec >= 1e9 {
			return nil, nil, errCorrupt("time")
		}
		return time.Unix(sec, int64(nsec)).UTC(), buf[n+m:], nil
	case kindTimespan:
		x, n := binary.Varint(buf)
		if n <= 0 {
			return nil, nil, errCorrupt("time span")
		}
		return types.Timespan(x), buf[n:], nil
	default:
		l, n := binary.Uvarint(buf)
		if n <= 0 || uint64(len(buf)-n) < l {
			return nil, nil, errCorrupt("string")
		}
		b, rest := buf[n:n+int(l)], buf[n+int(l):]
		switch k {
		case kindString:
			return string(b), rest, nil
		case kindBytes:
			return append([]byte{}, b...), rest, nil
		}
		v, _, err := c.cols[i].Convert(ctx, string(b))
		if err != nil {
			return nil, nil, fmt.Errorf("catalog: decode %s value: %w", c.cols[i], err)
		}
		return v, rest, nil
	}
}

func errCorrupt(what string) error {
	return fmt.Errorf("catalog: corrupt row: bad %s", what)
}

func asInt64(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case int32:
		return int64(n), true
	case int16:
		return int64(n), true
	case int8:
		return int64(n), true
	case int:
		return int64(n), true
	}
	return 0, false
}

func asUint64(v any) (uint64, bool) {
	switch n := v.(type) {
	case uint64:
		return n, true
	case uint32:
		return uint64(n), true
	case uint16:
		return uint64(n), true
	case uint8:
		return uint64(n), true
	case uint:
		return uint64(n), true
	}
	return 0, false
}

func appendDecimal(dst []byte, d decimal.Decimal) []byte {
	coef := d.Coefficient()
	dst = binary.AppendVarint(dst, int64(d.Exponent()))
	sign := byte(0)
	if coef.Sign() < 0 {
		sign = 1
	}
	dst = append(dst, sign)
	mag := coef.Abs(coef).Bytes()
	dst = binary.AppendUvarint(dst, uint64(len(mag)))
	return append(dst, mag...)
}

func decodeDecimal(buf []byte) (any, []byte, error) {
	exp, n := binary.Varint(buf)
	if n <= 0 || len(buf) < n+1 || exp < math.MinInt32 || exp > math.MaxInt32 {
		return nil, nil, errCorrupt("decimal")
	}
	sign := buf[n]
	buf = buf[n+1:]
	l, m := binary.Uvarint(buf)
	if m <= 0 || uint64(len(buf)-m) < l || sign > 1 {
		return nil, nil, errCorrupt("decimal")
	}
	coef := new(big.Int).SetBytes(buf[m : m+int(l)])
	if sign == 1 {
		coef.Neg(coef)
	}
	return decimal.NewFromBigInt(coef, int32(exp)), buf[m+int(l):], nil
}
