package catalog

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/shopspring/decimal"
)

// keyCodec encodes primary-key values into bbolt keys.
//
// For integers, floats, decimals, times, ENUM/SET and binary strings the
// encoding is order-preserving: bytes.Compare on two keys agrees with the SQL
// order of the values, column by column. Strings with a non-binary collation
// are encoded by their collation weight string, which makes keys equal exactly
// when the values are equal under the collation (so 'a' and 'A' collide under
// a case-insensitive collation) but does not promise collation order.
type keyCodec struct {
	ords  []int      // PK column ordinals in key order
	types []sql.Type // their types
	kinds []colKind
}

func newKeyCodec(sch sql.PrimaryKeySchema) *keyCodec {
	k := &keyCodec{ords: sch.PkOrdinals}
	for _, o := range sch.PkOrdinals {
		t := sch.Schema[o].Type
		k.types = append(k.types, t)
		k.kinds = append(k.kinds, kindOf(t))
	}
	return k
}

// ordered reports whether bytes.Compare on keys agrees with the SQL order
// of the key columns, which holds unless a key column is a collated string
// or a type encoded by its text form.
func (k *keyCodec) ordered() bool {
	for _, kd := range k.kinds {
		if kd == kindString || kd == kindOther {
			return false
		}
	}
	return true
}

// encodeRow appends the key of row to dst.
func (k *keyCodec) encodeRow(ctx *sql.Context, dst []byte, row sql.Row) ([]byte, error) {
	for i, o := range k.ords {
		var err error
		if dst, err = k.encodeValue(ctx, dst, i, row[o]); err != nil {
			return nil, err
		}
	}
	return dst, nil
}

// encodeValue appends the key encoding of v, a value of the i-th key column.
func (k *keyCodec) encodeValue(ctx *sql.Context, dst []byte, i int, v any) ([]byte, error) {
	if w, ok := v.(sql.AnyWrapper); ok {
		u, err := w.UnwrapAny(ctx)
		if err != nil {
			return nil, fmt.Errorf("catalog: unwrap key value: %w", err)
		}
		v = u
	}
	if v == nil {
		// Primary key columns are NOT NULL; keep NULL encodable (it sorts
		// first) so that a malformed row fails on the engine's own checks.
		return append(dst, 0x00), nil
	}
	dst = append(dst, 0x01)
	t := k.types[i]
	switch kd := k.kinds[i]; kd {
	case kindInt8, kindInt16, kindInt32, kindInt64:
		n, ok := asInt64(v)
		if !ok {
			return nil, fmt.Errorf("catalog: key value %T for %s column", v, t)
		}
		return binary.BigEndian.AppendUint64(dst, uint64(n)^(1<<63)), nil
	case kindUint8, kindUint16, kindUint32, kindUint64:
		n, ok := asUint64(v)
		if !ok {
			return nil, fmt.Errorf("catalog: key value %T for %s column", v, t)
		}
		return binary.BigEndian.AppendUint64(dst, n), nil
	case kindFloat32, kindFloat64:
		var f float64
		switch x := v.(type) {
		case float32:
			f = float64(x)
		case float64:
			f = x
		default:
			return nil, fmt.Errorf("catalog: key value %T for %s column", v, t)
		}
		if f == 0 {
			f = 0 // -0 and +0 are the same key
		}
		b := math.Float64bits(f)
		if b&(1<<63) != 0 {
			b = ^b
		} else {
			b |= 1 << 63
		}
		return binary.BigEndian.AppendUint64(dst, b), nil
	case kindDecimal:
		d, ok := v.(decimal.Decimal)
		if !ok {
			return nil, fmt.Errorf("catalog: key value %T for %s column", v, t)
		}
		return appendDecimalKey(dst, d), nil
	case kindTime:
		tm, ok := v.(time.Time)
		if !ok {
			return nil, fmt.Errorf("catalog: key value %T for %s column", v, t)
		}
		dst = binary.BigEndian.AppendUint64(dst, uint64(tm.Unix())^(1<<63))
		return binary.BigEndian.AppendUint32(dst, uint32(tm.Nanosecond())), nil
	case kindTimespan:
		ts, ok := v.(types.Timespan)
		if !ok {
			return nil, fmt.Errorf("catalog: key value %T for %s column", v, t)
		}
		return binary.BigEndian.AppendUint64(dst, uint64(ts)^(1<<63)), nil
	case kindString, kindBytes:
		var b []byte
		switch s := v.(type) {
		case string:
			b = []byte(s)
		case []byte:
			b = s
		default:
			return nil, fmt.Errorf("catalog: key value %T for %s column", v, t)
		}
		if st, ok := t.(sql.StringType); ok && kd == kindString && st.Collation() != sql.Collation_binary {
			var w bytes.Buffer
			if err := st.Collation().WriteWeightString(&w, string(b)); err != nil {
				return nil, fmt.Errorf("catalog: collation weight: %w", err)
			}
			b = w.Bytes()
		}
		return appendEscaped(dst, b), nil
	default:
		sv, err := t.SQL(ctx, nil, v)
		if err != nil {
			return nil, fmt.Errorf("catalog: encode %s key: %w", t, err)
		}
		return appendEscaped(dst, sv.Raw()), nil
	}
}

// appendEscaped appends b with 0x00 escaped as 0x00 0xFF and a 0x00 0x01
// terminator, so that concatenated keys stay prefix-free and ordered.
func appendEscaped(dst, b []byte) []byte {
	for _, c := range b {
		if c == 0 {
			dst = append(dst, 0, 0xFF)
		} else {
			dst = append(dst, c)
		}
	}
	return append(dst, 0, 1)
}

// appendDecimalKey appends an order-preserving encoding of d: a sign class
// byte (0 negative, 1 zero, 2 positive), then for non-zero values the
// adjusted exponent and the significant digits, all complemented for
// negative values.
func appendDecimalKey(dst []byte, d decimal.Decimal) []byte {
	switch d.Sign() {
	case 0:
		return append(dst, 1)
	case -1:
		dst = append(dst, 0)
	default:
		dst = append(dst, 2)
	}
	digits := d.Coefficient()
	digits.Abs(digits)
	s := digits.String()
	exp := int64(d.Exponent())
	// Strip trailing zeros so that 1.0 and 1.00 encode the same.
	for len(s) > 1 && s[len(s)-1] == '0' {
		s = s[:len(s)-1]
		exp++
	}
	// The value is 0.s × 10^adj; a larger adj means a larger magnitude.
	adj := exp + int64(len(s))
	start := len(dst)
	dst = binary.BigEndian.AppendUint64(dst, uint64(adj)^(1<<63))
	dst = append(dst, s...)
	dst = append(dst, 0)
	if d.Sign() < 0 {
		for i := start; i < len(dst); i++ {
			dst[i] = ^dst[i]
		}
	}
	return dst
}
