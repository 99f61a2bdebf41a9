package domain

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
)

// MaxSize is the largest number of codes of one column, NULL included. It
// matches the synthesis engine, which stores codes as uint16.
const MaxSize = 1 << 16

// Kind is the kind of a column's domain.
type Kind uint8

const (
	Categorical Kind = iota + 1 // explicit list of values
	IntRange                    // the integers lo..hi
	Binned                      // equal-width bins over [lo, hi]
)

var kindNames = [...]string{Categorical: "categorical", IntRange: "range", Binned: "binned"}

func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Ordered reports whether codes follow the order of the values (IntRange
// and Binned), so that out-of-range values clip to the nearest end.
func (k Kind) Ordered() bool { return k == IntRange || k == Binned }

// Status reports how Encode mapped a value.
type Status uint8

const (
	InDomain Status = iota // the value is in the domain
	Clipped                // out of domain: clipped (ordered) or mapped to the first value (categorical, not nullable)
	ToNull                 // out of domain: mapped to NULL (categorical, nullable)
	Invalid                // the value cannot be read in the column's type; code is -1
)

var statusNames = [...]string{InDomain: "in domain", Clipped: "clipped", ToNull: "mapped to NULL", Invalid: "invalid"}

func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return fmt.Sprintf("Status(%d)", uint8(s))
}

// ErrInvalid is wrapped by every error about an invalid domain.
var ErrInvalid = errors.New("invalid domain")

// Column is the public domain of one column. A Column is immutable; build
// one with NewCategorical, NewIntRange or NewBinned.
type Column struct {
	name     string
	kind     Kind
	typ      Type // type of the values (Categorical), Int (IntRange), Int or Float (Binned)
	nullable bool
	enum     bool // Categorical from an ENUM: integers are GMS's 1-based ENUM indexes

	values []Value       // Categorical
	index  map[Value]int // Categorical: value → code
	lo, hi float64       // IntRange (integral) and Binned bounds
	bins   int           // Binned
}

// NewCategorical returns a categorical domain with the given distinct
// values, all of type typ. A column from an ENUM sets enum, so that Encode
// accepts the 1-based ENUM indexes go-mysql-server stores in rows.
func NewCategorical(name string, typ Type, values []Value, nullable, enum bool) (Column, error) {
	c := Column{name: name, kind: Categorical, typ: typ, nullable: nullable, enum: enum,
		values: append([]Value(nil), values...), index: make(map[Value]int, len(values))}
	if typ != String && typ != Int && typ != Float {
		return Column{}, fmt.Errorf("%w: column %q: unknown value type %v", ErrInvalid, name, typ)
	}
	if enum && typ != String {
		return Column{}, fmt.Errorf("%w: column %q: ENUM values must be strings", ErrInvalid, name)
	}
	if len(values) == 0 {
		return Column{}, fmt.Errorf("%w: column %q: no values", ErrInvalid, name)
	}
	for i, v := range c.values {
		if v.typ != typ {
			return Column{}, fmt.Errorf("%w: column %q: value %d (%v) is %v, want %v", ErrInvalid, name, i+1, v, v.typ, typ)
		}
		if typ == Float && (math.IsNaN(v.f) || math.IsInf(v.f, 0)) {
			return Column{}, fmt.Errorf("%w: column %q: value %d is %v", ErrInvalid, name, i+1, v.f)
		}
		if v.f == 0 {
			c.values[i].f = 0 // fold -0 into 0 so that map lookups agree with ==
		}
		if _, dup := c.index[c.values[i]]; dup {
			return Column{}, fmt.Errorf("%w: column %q: duplicate value %v", ErrInvalid, name, v)
		}
		c.index[c.values[i]] = i
	}
	return c, c.checkSize()
}

// NewIntRange returns the domain of the integers lo..hi.
func NewIntRange(name string, lo, hi int64, nullable bool) (Column, error) {
	if lo > hi {
		return Column{}, fmt.Errorf("%w: column %q: empty range %d..%d", ErrInvalid, name, lo, hi)
	}
	const maxExact = 1 << 53 // bounds are stored as float64
	if lo < -maxExact || hi > maxExact {
		return Column{}, fmt.Errorf("%w: column %q: range %d..%d exceeds ±2^53", ErrInvalid, name, lo, hi)
	}
	if hi-lo >= MaxSize {
		return Column{}, fmt.Errorf("%w: column %q: range %d..%d has more than %d values; declare bins with SET DOMAIN … BINS",
			ErrInvalid, name, lo, hi, MaxSize)
	}
	c := Column{name: name, kind: IntRange, typ: Int, nullable: nullable, lo: float64(lo), hi: float64(hi)}
	return c, c.checkSize()
}

// NewBinned returns the domain of bins equal-width bins over [lo, hi]. For
// an integer column every bin must be at least 1 wide, so that it holds an
// integer, and lo and hi must be integers.
func NewBinned(name string, lo, hi float64, bins int, integer, nullable bool) (Column, error) {
	if math.IsNaN(lo) || math.IsNaN(hi) || math.IsInf(lo, 0) || math.IsInf(hi, 0) || !(lo < hi) {
		return Column{}, fmt.Errorf("%w: column %q: bad bounds [%v, %v]", ErrInvalid, name, lo, hi)
	}
	if bins < 1 {
		return Column{}, fmt.Errorf("%w: column %q: %d bins", ErrInvalid, name, bins)
	}
	if math.IsInf(hi-lo, 0) {
		return Column{}, fmt.Errorf("%w: column %q: range [%v, %v] is too wide", ErrInvalid, name, lo, hi)
	}
	typ := Float
	if integer {
		typ = Int
		if lo != math.Trunc(lo) || hi != math.Trunc(hi) {
			return Column{}, fmt.Errorf("%w: column %q: integer column needs integer bounds, not [%v, %v]", ErrInvalid, name, lo, hi)
		}
		if (hi-lo)/float64(bins) < 1 {
			return Column{}, fmt.Errorf("%w: column %q: %d bins over [%v, %v] are narrower than 1 for an integer column", ErrInvalid, name, bins, lo, hi)
		}
	}
	c := Column{name: name, kind: Binned, typ: typ, nullable: nullable, lo: lo, hi: hi, bins: bins}
	return c, c.checkSize()
}

func (c Column) checkSize() error {
	if c.Size() > MaxSize {
		return fmt.Errorf("%w: column %q has %d values, more than %d", ErrInvalid, c.name, c.Size(), MaxSize)
	}
	return nil
}

// Name is the column's name.
func (c *Column) Name() string { return c.name }

// Kind is the kind of the domain.
func (c *Column) Kind() Kind { return c.kind }

// Type is the type of the values: the categorical values' type, Int for
// ranges and integer binned columns, Float for other binned columns.
func (c *Column) Type() Type { return c.typ }

// Nullable reports whether NULL is a value of the domain (with code Size()-1).
func (c *Column) Nullable() bool { return c.nullable }

// Enum reports whether the column comes from an ENUM.
func (c *Column) Enum() bool { return c.enum }

// NonNull is the number of non-NULL values.
func (c *Column) NonNull() int {
	switch c.kind {
	case Categorical:
		return len(c.values)
	case IntRange:
		return int(c.hi-c.lo) + 1
	case Binned:
		return c.bins
	}
	return 0
}

// Size is the number of codes, NULL included.
func (c *Column) Size() int {
	if c.nullable {
		return c.NonNull() + 1
	}
	return c.NonNull()
}

// NullCode is the code of NULL, or -1 when the column is not nullable.
func (c *Column) NullCode() int {
	if c.nullable {
		return c.NonNull()
	}
	return -1
}

// Range returns the bounds of an IntRange or Binned column.
func (c *Column) Range() (lo, hi float64) { return c.lo, c.hi }

// Bins is the number of bins of a Binned column (0 otherwise).
func (c *Column) Bins() int { return c.bins }

// Edge returns the i-th bin edge of a Binned column, 0 <= i <= Bins():
// bin i is [Edge(i), Edge(i+1)), the last bin also contains Edge(Bins()).
// Edge(0) and Edge(Bins()) are exactly the bounds.
func (c *Column) Edge(i int) float64 {
	if i >= c.bins {
		return c.hi
	}
	return c.lo + (c.hi-c.lo)*float64(i)/float64(c.bins)
}

// Bin returns the values of bin code of a Binned column. For a float column
// the bin is [lo, hi), or [lo, hi] (closed) for the last bin. For an integer
// column the bin is the integers lo..hi (closed is true): the integers of
// [Edge(code), Edge(code+1)), or of the closed interval for the last bin.
func (c *Column) Bin(code int) (lo, hi float64, closed bool) {
	lo, hi = c.Edge(code), c.Edge(code+1)
	last := code == c.bins-1
	if c.typ != Int {
		return lo, hi, last
	}
	first := math.Ceil(lo)
	end := math.Ceil(hi) - 1
	if last {
		end = c.hi
	}
	return first, end, true
}

// Value returns the value of a non-NULL code of a Categorical or IntRange
// column. ok is false for NULL, for Binned columns and for codes out of range.
func (c *Column) Value(code int) (v Value, ok bool) {
	if code < 0 || code >= c.NonNull() {
		return Value{}, false
	}
	switch c.kind {
	case Categorical:
		return c.values[code], true
	case IntRange:
		return IntValue(int64(c.lo) + int64(code)), true
	}
	return Value{}, false
}

// Values returns the non-NULL values in code order for Categorical and
// IntRange columns, and nil for Binned columns (use Edge).
func (c *Column) Values() []Value {
	if c.kind == Binned {
		return nil
	}
	out := make([]Value, c.NonNull())
	for i := range out {
		out[i], _ = c.Value(i)
	}
	return out
}

// Label returns a human-readable label of a code: the value, "NULL", or
// a bin as "[lo, hi)" ("[lo, hi]" for the last bin).
func (c *Column) Label(code int) string {
	if code == c.NullCode() {
		return "NULL"
	}
	if code < 0 || code >= c.NonNull() {
		return "<invalid code " + strconv.Itoa(code) + ">"
	}
	if c.kind == Binned {
		closing := ")"
		if code == c.bins-1 {
			closing = "]"
		}
		return "[" + formatFloat(c.Edge(code)) + ", " + formatFloat(c.Edge(code+1)) + closing
	}
	v, _ := c.Value(code)
	return v.String()
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// Encode maps a value (as found in a row: nil, string, []byte, integers,
// floats, bool, decimal) to its code, following the out-of-domain rules of
// the package documentation. It never returns a code outside [0, Size())
// except -1 with status Invalid.
func (c *Column) Encode(v any) (code int, status Status) {
	if v == nil {
		if c.nullable {
			return c.NullCode(), InDomain
		}
		return 0, Clipped
	}
	switch c.kind {
	case Categorical:
		return c.encodeCategorical(v)
	case IntRange:
		i, exact, ok := toInt(v)
		if !ok {
			return -1, Invalid
		}
		status = InDomain
		if !exact {
			status = Clipped
		}
		lo, hi := int64(c.lo), int64(c.hi)
		switch {
		case i < lo:
			return 0, Clipped
		case i > hi:
			return int(hi - lo), Clipped
		}
		return int(i - lo), status
	case Binned:
		f, ok := toFloat(v)
		if !ok {
			return -1, Invalid
		}
		switch {
		case f < c.lo:
			return 0, Clipped
		case f > c.hi:
			return c.bins - 1, Clipped
		}
		return c.bin(f), InDomain
	}
	return -1, Invalid
}

// bin returns the bin of f in [lo, hi], consistent with Edge.
func (c *Column) bin(f float64) int {
	b := int(math.Floor((f - c.lo) / (c.hi - c.lo) * float64(c.bins)))
	b = min(max(b, 0), c.bins-1)
	for b > 0 && f < c.Edge(b) {
		b--
	}
	for b < c.bins-1 && f >= c.Edge(b+1) {
		b++
	}
	return b
}

func (c *Column) encodeCategorical(v any) (int, Status) {
	var key Value
	switch c.typ {
	case String:
		if c.enum {
			if i, exact, ok := toInt(v); ok && exact && !isText(v) {
				// go-mysql-server stores ENUM values as 1-based indexes.
				if i >= 1 && i <= int64(len(c.values)) {
					return int(i - 1), InDomain
				}
				return c.outOfDomain()
			}
		}
		s, ok := toString(v)
		if !ok {
			return -1, Invalid
		}
		key = StringValue(s)
	case Int:
		i, exact, ok := toInt(v)
		if !ok {
			return -1, Invalid
		}
		if !exact {
			return c.outOfDomain()
		}
		key = IntValue(i)
	case Float:
		f, ok := toFloat(v)
		if !ok {
			return -1, Invalid
		}
		if f == 0 {
			f = 0
		}
		key = FloatValue(f)
	}
	if code, ok := c.index[key]; ok {
		return code, InDomain
	}
	return c.outOfDomain()
}

func isText(v any) bool {
	switch v.(type) {
	case string, []byte:
		return true
	}
	return false
}

func (c *Column) outOfDomain() (int, Status) {
	if c.nullable {
		return c.NullCode(), ToNull
	}
	return 0, Clipped
}

// Decode returns a value for a synthetic row: nil for NULL, a string for
// string values (ENUM labels included), int64 for integers, float64 for
// floats. Binned columns draw a value uniformly within the bin using rng
// (an integer for integer columns). Decoding only post-processes an
// already private model, so rng need not be cryptographic. Decode panics on
// a code outside [0, Size()).
func (c *Column) Decode(code int, rng *rand.Rand) any {
	if code == c.NullCode() {
		return nil
	}
	if code < 0 || code >= c.NonNull() {
		panic(fmt.Sprintf("domain: code %d outside [0, %d) of column %q", code, c.Size(), c.name))
	}
	if c.kind != Binned {
		v, _ := c.Value(code)
		return v.Any()
	}
	lo, hi, _ := c.Bin(code)
	if c.typ == Int {
		first, last := int64(lo), int64(hi)
		return first + rng.Int64N(last-first+1)
	}
	x := lo + (hi-lo)*rng.Float64()
	if x >= hi && code < c.bins-1 { // rounding; stay inside the half-open bin
		x = math.Nextafter(hi, lo)
	}
	return x
}

// Validate checks that c is a well-formed domain, as the constructors
// ensure; it is used for columns read from storage.
func (c *Column) Validate() error {
	var err error
	switch c.kind {
	case Categorical:
		_, err = NewCategorical(c.name, c.typ, c.values, c.nullable, c.enum)
	case IntRange:
		_, err = NewIntRange(c.name, int64(c.lo), int64(c.hi), c.nullable)
	case Binned:
		_, err = NewBinned(c.name, c.lo, c.hi, c.bins, c.typ == Int, c.nullable)
	default:
		err = fmt.Errorf("%w: column %q has no domain kind", ErrInvalid, c.name)
	}
	if err == nil && c.name == "" {
		err = fmt.Errorf("%w: column without a name", ErrInvalid)
	}
	return err
}
