package pgm

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// Domain is a list of attributes with finite sizes. A Domain is immutable
// once created and safe for concurrent use.
type Domain struct {
	names []string
	sizes []int
	index map[string]int
}

// MaxSize is the largest domain size of a single attribute: codes are stored
// as uint16.
const MaxSize = math.MaxUint16 + 1

// NewDomain returns a domain; names must be distinct and sizes ≥ 1.
func NewDomain(names []string, sizes []int) (*Domain, error) {
	if len(names) != len(sizes) {
		return nil, fmt.Errorf("pgm: domain has %d names but %d sizes", len(names), len(sizes))
	}
	d := &Domain{
		names: append([]string(nil), names...),
		sizes: append([]int(nil), sizes...),
		index: make(map[string]int, len(names)),
	}
	for i, n := range names {
		if n == "" {
			return nil, fmt.Errorf("pgm: attribute %d has an empty name", i)
		}
		if _, dup := d.index[n]; dup {
			return nil, fmt.Errorf("pgm: duplicate attribute %q", n)
		}
		if sizes[i] < 1 || sizes[i] > MaxSize {
			return nil, fmt.Errorf("pgm: attribute %q has size %d, want 1..%d", n, sizes[i], MaxSize)
		}
		d.index[n] = i
	}
	return d, nil
}

// Len is the number of attributes.
func (d *Domain) Len() int { return len(d.sizes) }

// Name of attribute i.
func (d *Domain) Name(i int) string { return d.names[i] }

// Size (number of values) of attribute i.
func (d *Domain) Size(i int) int { return d.sizes[i] }

// Index returns the attribute with the given name.
func (d *Domain) Index(name string) (int, bool) {
	i, ok := d.index[name]
	return i, ok
}

// Cells is the product of the sizes of attrs (1 for the empty set). It
// saturates at math.MaxInt instead of overflowing.
func (d *Domain) Cells(attrs []int) int {
	n := 1
	for _, a := range attrs {
		s := d.sizes[a]
		if n > math.MaxInt/s {
			return math.MaxInt
		}
		n *= s
	}
	return n
}

// Attrs returns the indices of the named attributes, in the given order.
func (d *Domain) Attrs(names ...string) ([]int, error) {
	out := make([]int, len(names))
	for i, n := range names {
		a, ok := d.index[n]
		if !ok {
			return nil, fmt.Errorf("pgm: unknown attribute %q", n)
		}
		out[i] = a
	}
	return out, nil
}

// Equal reports whether d and e have the same attribute names and sizes in the
// same order.
func (d *Domain) Equal(e *Domain) bool {
	if d == e {
		return true
	}
	if d == nil || e == nil || len(d.sizes) != len(e.sizes) {
		return false
	}
	for i := range d.sizes {
		if d.sizes[i] != e.sizes[i] || d.names[i] != e.names[i] {
			return false
		}
	}
	return true
}

// errAttrSet is returned by checkAttrs for attribute sets that do not follow
// the package convention.
var errAttrSet = errors.New("pgm: attribute set must be strictly ascending indices inside the domain")

// checkAttrs reports whether attrs is strictly ascending and inside d.
func (d *Domain) checkAttrs(attrs []int) error {
	for i, a := range attrs {
		if a < 0 || a >= len(d.sizes) || (i > 0 && attrs[i-1] >= a) {
			return fmt.Errorf("%w: %v", errAttrSet, slices.Clone(attrs))
		}
	}
	return nil
}

// mustAttrs panics if attrs is not a valid attribute set of d.
func (d *Domain) mustAttrs(attrs []int) {
	if err := d.checkAttrs(attrs); err != nil {
		panic(err.Error())
	}
}
