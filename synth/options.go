package synth

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Option is one generic name/value pair from a statement, as the server
// parsed it. Value may be any Go integer or float type, a bool, a string
// holding a number, or a fmt.Stringer whose String is a number (a SQL
// decimal).
type Option struct {
	Name  string
	Value any
}

// Kind is the type of an option.
type Kind int

const (
	// Int options take whole numbers.
	Int Kind = iota
	// Float options take real numbers.
	Float
)

// String returns "int" or "float".
func (k Kind) String() string {
	if k == Int {
		return "int"
	}
	return "float"
}

// Param declares one option. Names are matched case-insensitively; the
// declared Name is upper case.
type Param struct {
	Name string
	Kind Kind
	// Default documents the default for SHOW MECHANISMS; it may be a
	// formula ("16·d").
	Default string
	// Min and Max bound the value inclusively; Max = 0 means no upper bound.
	Min, Max float64
	Doc      string
}

// Schema is a mechanism's option declaration.
type Schema []Param

// Values are parsed options. Absent options are not in the map.
type Values map[string]float64

// Int returns the integer option name, or def if it was not given.
func (v Values) Int(name string, def int) int {
	if x, ok := v[name]; ok {
		return int(x)
	}
	return def
}

// Float returns the option name, or def if it was not given.
func (v Values) Float(name string, def float64) float64 {
	if x, ok := v[name]; ok {
		return x
	}
	return def
}

// Names returns the declared option names in declaration order.
func (s Schema) Names() []string {
	names := make([]string, len(s))
	for i, p := range s {
		names[i] = p.Name
	}
	return names
}

// Parse checks opts against s: every name must be declared (once), every
// value must have the declared kind and lie within bounds. mech names the
// mechanism in errors.
func (s Schema) Parse(mech string, opts []Option) (Values, error) {
	vals := make(Values, len(opts))
	for _, o := range opts {
		name := strings.ToUpper(strings.TrimSpace(o.Name))
		p, ok := s.lookup(name)
		if !ok {
			return nil, &OptionError{Mechanism: mech, Name: o.Name, Value: o.Value,
				Valid: s.Names(), Err: ErrUnknownOption}
		}
		bad := func(reason string) error {
			return &OptionError{Mechanism: mech, Name: p.Name, Value: o.Value,
				Reason: reason, Err: ErrInvalidOption}
		}
		if _, dup := vals[p.Name]; dup {
			return nil, bad("given more than once")
		}
		x, err := number(o.Value)
		if err != nil {
			return nil, bad(fmt.Sprintf("want a %s: %v", p.Kind, err))
		}
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, bad("want a finite number")
		}
		if p.Kind == Int && x != math.Trunc(x) {
			return nil, bad("want a whole number")
		}
		if x < p.Min {
			return nil, bad(fmt.Sprintf("must be at least %v", p.Min))
		}
		if p.Max != 0 && x > p.Max {
			return nil, bad(fmt.Sprintf("must be at most %v", p.Max))
		}
		vals[p.Name] = x
	}
	return vals, nil
}

func (s Schema) lookup(name string) (Param, bool) {
	for _, p := range s {
		if p.Name == name {
			return p, true
		}
	}
	return Param{}, false
}

// number converts an option value to float64.
func number(v any) (float64, error) {
	switch x := v.(type) {
	case int:
		return float64(x), nil
	case int8:
		return float64(x), nil
	case int16:
		return float64(x), nil
	case int32:
		return float64(x), nil
	case int64:
		return float64(x), nil
	case uint:
		return float64(x), nil
	case uint8:
		return float64(x), nil
	case uint16:
		return float64(x), nil
	case uint32:
		return float64(x), nil
	case uint64:
		return float64(x), nil
	case float32:
		return float64(x), nil
	case float64:
		return x, nil
	case bool:
		if x {
			return 1, nil
		}
		return 0, nil
	case string:
		return strconv.ParseFloat(strings.TrimSpace(x), 64)
	case []byte:
		return strconv.ParseFloat(strings.TrimSpace(string(x)), 64)
	case fmt.Stringer:
		return strconv.ParseFloat(strings.TrimSpace(x.String()), 64)
	case nil:
		return 0, fmt.Errorf("missing value")
	}
	return 0, fmt.Errorf("unsupported value type %T", v)
}
