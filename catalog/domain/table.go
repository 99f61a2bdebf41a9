package domain

import (
	"fmt"
	"strings"
)

// Table is the domain of a table: one Column per attribute, in attribute
// order. Attribute i of the synthesis engine is Columns[i].
type Table struct {
	Columns []Column
}

// Index returns the position of the named column (case-insensitive, as
// MySQL column names are).
func (t *Table) Index(name string) (int, bool) {
	for i := range t.Columns {
		if strings.EqualFold(t.Columns[i].name, name) {
			return i, true
		}
	}
	return -1, false
}

// Column returns the named column (case-insensitive).
func (t *Table) Column(name string) (*Column, bool) {
	i, ok := t.Index(name)
	if !ok {
		return nil, false
	}
	return &t.Columns[i], true
}

// Names returns the column names in attribute order.
func (t *Table) Names() []string {
	out := make([]string, len(t.Columns))
	for i := range t.Columns {
		out[i] = t.Columns[i].name
	}
	return out
}

// Sizes returns the column sizes (NULL included) in attribute order.
func (t *Table) Sizes() []int {
	out := make([]int, len(t.Columns))
	for i := range t.Columns {
		out[i] = t.Columns[i].Size()
	}
	return out
}

// Validate checks every column and that names are distinct
// (case-insensitively).
func (t *Table) Validate() error {
	seen := make(map[string]bool, len(t.Columns))
	for i := range t.Columns {
		c := &t.Columns[i]
		if err := c.Validate(); err != nil {
			return err
		}
		key := strings.ToLower(c.name)
		if seen[key] {
			return fmt.Errorf("%w: duplicate column %q", ErrInvalid, c.name)
		}
		seen[key] = true
	}
	return nil
}
