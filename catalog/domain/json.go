package domain

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
)

// jsonColumn is the storage form of a Column.
type jsonColumn struct {
	Name     string            `json:"name"`
	Kind     string            `json:"kind"`
	Type     string            `json:"type"`
	Nullable bool              `json:"nullable,omitempty"`
	Enum     bool              `json:"enum,omitempty"`
	Values   []json.RawMessage `json:"values,omitempty"`
	Lo       *float64          `json:"lo,omitempty"`
	Hi       *float64          `json:"hi,omitempty"`
	Bins     int               `json:"bins,omitempty"`
}

// MarshalJSON encodes the column for storage.
func (c Column) MarshalJSON() ([]byte, error) {
	j := jsonColumn{Name: c.name, Kind: c.kind.String(), Type: c.typ.String(), Nullable: c.nullable, Enum: c.enum}
	switch c.kind {
	case Categorical:
		j.Values = make([]json.RawMessage, len(c.values))
		for i, v := range c.values {
			var (
				b   []byte
				err error
			)
			switch v.typ {
			case String:
				b, err = json.Marshal(v.s)
			case Int:
				b, err = json.Marshal(v.i)
			default:
				b, err = json.Marshal(v.f)
			}
			if err != nil {
				return nil, fmt.Errorf("domain: encoding value %d of column %q: %w", i+1, c.name, err)
			}
			j.Values[i] = b
		}
	case IntRange, Binned:
		lo, hi := c.lo, c.hi
		j.Lo, j.Hi, j.Bins = &lo, &hi, c.bins
	default:
		return nil, fmt.Errorf("domain: column %q has no domain kind", c.name)
	}
	return json.Marshal(j)
}

// UnmarshalJSON decodes and validates a column.
func (c *Column) UnmarshalJSON(b []byte) error {
	var j jsonColumn
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return fmt.Errorf("domain: decoding column: %w", err)
	}
	var typ Type
	for t := String; t <= Float; t++ {
		if t.String() == j.Type {
			typ = t
		}
	}
	var (
		col Column
		err error
	)
	switch j.Kind {
	case Categorical.String():
		values := make([]Value, len(j.Values))
		for i, raw := range j.Values {
			if values[i], err = decodeValue(raw, typ); err != nil {
				return fmt.Errorf("domain: column %q value %d: %w", j.Name, i+1, err)
			}
		}
		col, err = NewCategorical(j.Name, typ, values, j.Nullable, j.Enum)
	case IntRange.String():
		if j.Lo == nil || j.Hi == nil || *j.Lo != math.Trunc(*j.Lo) || *j.Hi != math.Trunc(*j.Hi) {
			return fmt.Errorf("domain: column %q: range needs integer lo and hi", j.Name)
		}
		col, err = NewIntRange(j.Name, int64(*j.Lo), int64(*j.Hi), j.Nullable)
	case Binned.String():
		if j.Lo == nil || j.Hi == nil {
			return fmt.Errorf("domain: column %q: binned domain needs lo and hi", j.Name)
		}
		col, err = NewBinned(j.Name, *j.Lo, *j.Hi, j.Bins, typ == Int, j.Nullable)
	default:
		return fmt.Errorf("domain: column %q: unknown kind %q", j.Name, j.Kind)
	}
	if err != nil {
		return fmt.Errorf("domain: decoding column: %w", err)
	}
	if col.name == "" {
		return fmt.Errorf("domain: decoding column: %w: column without a name", ErrInvalid)
	}
	*c = col
	return nil
}

func decodeValue(raw json.RawMessage, typ Type) (Value, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return Value{}, err
	}
	switch v := x.(type) {
	case string:
		if typ == String {
			return StringValue(v), nil
		}
	case json.Number:
		switch typ {
		case Int:
			i, err := v.Int64()
			return IntValue(i), err
		case Float:
			f, err := v.Float64()
			return FloatValue(f), err
		}
	}
	return Value{}, fmt.Errorf("%s is not a %v", raw, typ)
}

// MarshalJSON encodes the table as {"columns": [...]}.
func (t Table) MarshalJSON() ([]byte, error) {
	cols := t.Columns
	if cols == nil {
		cols = []Column{}
	}
	return json.Marshal(struct {
		Columns []Column `json:"columns"`
	}{cols})
}

// UnmarshalJSON decodes and validates a table.
func (t *Table) UnmarshalJSON(b []byte) error {
	var j struct {
		Columns []Column `json:"columns"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return fmt.Errorf("domain: decoding table: %w", err)
	}
	tbl := Table{Columns: j.Columns}
	if len(tbl.Columns) == 0 {
		tbl.Columns = nil // one representation of the empty table
	}
	if err := tbl.Validate(); err != nil {
		return fmt.Errorf("domain: decoding table: %w", err)
	}
	*t = tbl
	return nil
}

// ParseDomainFile reads an import's domain file, a JSON object
// {"col": size, …} as used by Private-PGM's data sets: column col takes
// the integer codes 0..size-1. Columns keep the order of the file and are
// not nullable.
func ParseDomainFile(data []byte) (Table, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return Table{}, fmt.Errorf("domain: domain file: want a JSON object of column sizes")
	}
	var t Table
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return Table{}, fmt.Errorf("domain: domain file: %w", err)
		}
		name := tok.(string) // object keys are strings
		tok, err = dec.Token()
		if err != nil {
			return Table{}, fmt.Errorf("domain: domain file: column %q: %w", name, err)
		}
		num, ok := tok.(json.Number)
		size, nerr := num.Int64()
		if !ok || nerr != nil || size < 1 {
			return Table{}, fmt.Errorf("domain: domain file: column %q: size %v, want a positive integer", name, tok)
		}
		col, err := NewIntRange(name, 0, size-1, false)
		if err != nil {
			return Table{}, fmt.Errorf("domain: domain file: %w", err)
		}
		t.Columns = append(t.Columns, col)
	}
	if _, err := dec.Token(); err != nil {
		return Table{}, fmt.Errorf("domain: domain file: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Table{}, fmt.Errorf("domain: domain file: trailing data after the object")
	}
	if err := t.Validate(); err != nil {
		return Table{}, fmt.Errorf("domain: domain file: %w", err)
	}
	return t, nil
}
