package domain

import (
	"cmp"
	"fmt"
	"math"
	"strconv"
)

// Type is the type of a domain's values.
type Type uint8

const (
	String Type = iota + 1
	Int
	Float
)

var typeNames = [...]string{String: "string", Int: "int", Float: "float"}

func (t Type) String() string {
	if int(t) < len(typeNames) && typeNames[t] != "" {
		return typeNames[t]
	}
	return fmt.Sprintf("Type(%d)", uint8(t))
}

// Value is one non-NULL value of a categorical domain. Values are
// comparable with ==.
type Value struct {
	typ Type
	s   string
	i   int64
	f   float64
}

// StringValue returns a string Value.
func StringValue(s string) Value { return Value{typ: String, s: s} }

// IntValue returns an integer Value.
func IntValue(i int64) Value { return Value{typ: Int, i: i} }

// FloatValue returns a float Value. NaN is not a valid domain value.
func FloatValue(f float64) Value { return Value{typ: Float, f: f} }

// Type returns the value's type (0 for the zero Value).
func (v Value) Type() Type { return v.typ }

// Str returns the contents of a string value.
func (v Value) Str() string { return v.s }

// Int returns an integer value.
func (v Value) Int() int64 { return v.i }

// Float returns a numeric value as a float64.
func (v Value) Float() float64 {
	if v.typ == Int {
		return float64(v.i)
	}
	return v.f
}

// Any returns the value as a string, int64 or float64.
func (v Value) Any() any {
	switch v.typ {
	case String:
		return v.s
	case Int:
		return v.i
	case Float:
		return v.f
	}
	return nil
}

func (v Value) String() string {
	switch v.typ {
	case String:
		return v.s
	case Int:
		return strconv.FormatInt(v.i, 10)
	case Float:
		return strconv.FormatFloat(v.f, 'g', -1, 64)
	}
	return "<invalid>"
}

// Compare orders two values of comparable types: strings by bytes, numbers
// numerically (an Int and a Float compare by value). ok is false when one is
// a string and the other a number.
func Compare(a, b Value) (c int, ok bool) {
	switch {
	case a.typ == String && b.typ == String:
		return cmp.Compare(a.s, b.s), true
	case a.typ == Int && b.typ == Int:
		return cmp.Compare(a.i, b.i), true
	case a.typ != String && b.typ != String && a.typ != 0 && b.typ != 0:
		return cmp.Compare(a.Float(), b.Float()), true
	}
	return 0, false
}

// toFloat interprets v as a number. Strings are parsed; bools are 0 and 1.
func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case int8:
		return float64(x), true
	case int16:
		return float64(x), true
	case int32:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint:
		return float64(x), true
	case uint8:
		return float64(x), true
	case uint16:
		return float64(x), true
	case uint32:
		return float64(x), true
	case uint64:
		return float64(x), true
	case float32:
		return float64(x), !math.IsNaN(float64(x))
	case float64:
		return x, !math.IsNaN(x)
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	case string:
		f, err := strconv.ParseFloat(x, 64)
		return f, err == nil && !math.IsNaN(f)
	case []byte:
		return toFloat(string(x))
	case Value:
		if x.typ == Int || x.typ == Float {
			return x.Float(), true
		}
		return toFloat(x.s)
	case interface{ Float64() (float64, bool) }: // shopspring/decimal.Decimal
		f, _ := x.Float64()
		return f, !math.IsNaN(f)
	}
	return 0, false
}

// toInt interprets v as an exact integer. It reports exact == false when
// v is a number that is not integral (the caller may round).
func toInt(v any) (i int64, exact, ok bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true, true
	case int8:
		return int64(x), true, true
	case int16:
		return int64(x), true, true
	case int32:
		return int64(x), true, true
	case int64:
		return x, true, true
	case uint:
		return clampUint(uint64(x))
	case uint8:
		return int64(x), true, true
	case uint16:
		return int64(x), true, true
	case uint32:
		return int64(x), true, true
	case uint64:
		return clampUint(x)
	case string:
		if n, err := strconv.ParseInt(x, 10, 64); err == nil {
			return n, true, true
		}
	case []byte:
		return toInt(string(x))
	case Value:
		if x.typ == Int {
			return x.i, true, true
		}
	}
	f, ok := toFloat(v)
	if !ok {
		return 0, false, false
	}
	r := math.Round(f)
	switch {
	case r >= math.MaxInt64:
		return math.MaxInt64, false, true
	case r <= math.MinInt64:
		return math.MinInt64, false, true
	}
	return int64(r), r == f, true
}

func clampUint(x uint64) (int64, bool, bool) {
	if x > math.MaxInt64 {
		return math.MaxInt64, false, true
	}
	return int64(x), true, true
}

// toString interprets v as a string; numbers print as MySQL prints them.
func toString(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case []byte:
		return string(x), true
	case Value:
		return x.String(), x.typ != 0
	case fmt.Stringer:
		return x.String(), true
	}
	if i, exact, ok := toInt(v); ok && exact {
		return strconv.FormatInt(i, 10), true
	}
	if f, ok := toFloat(v); ok {
		return strconv.FormatFloat(f, 'g', -1, 64), true
	}
	return "", false
}
