package planner

import (
	"fmt"
	"slices"
	"strings"
)

// Measured is a released noisy marginal: noisy counts Y on Attrs
// (ascending attribute indices, the last varying fastest), each with
// Gaussian noise of standard deviation Sigma. Answers-only mechanisms
// release nothing else, so a count query on their table is answered from
// the one of them that contains its columns (ChooseMeasured), by summing
// its cells: post-processing, at no privacy cost.
type Measured struct {
	Attrs []int
	Y     []float64
	Sigma float64
}

// ChooseMeasured returns the index in ms of the marginal to answer a query
// on attrs from: among those whose attributes contain attrs, the one whose
// sums over the other attributes are the least noisy (the smallest
// Sigma²·cells; the first of equals). It returns -1 if none contains attrs.
func ChooseMeasured(ms []Measured, sizes []int, attrs []int) int {
	best, bestVar := -1, 0.0
	for i, m := range ms {
		if !containsAll(m.Attrs, attrs) {
			continue
		}
		v := m.Sigma * m.Sigma * float64(len(m.Y))
		if best < 0 || v < bestVar {
			best, bestVar = i, v
		}
	}
	return best
}

// MeasuredSource is a ModelSource over one noisy marginal: Marginal and
// MarginalWhere sum its cells (they may only name its attributes), and
// Total is the sum of all its cells. Its counts may be negative; execute
// with ExecOptions.NonNegative.
type MeasuredSource struct {
	m     Measured
	sizes []int // domain sizes of m.Attrs
}

var _ ModelSource = (*MeasuredSource)(nil)

// NewMeasuredSource answers from m, a marginal over a domain whose
// attribute sizes are sizes (domain.Table.Sizes).
func NewMeasuredSource(m Measured, sizes []int) (*MeasuredSource, error) {
	s := &MeasuredSource{m: m}
	cells := 1
	for _, a := range m.Attrs {
		if a < 0 || a >= len(sizes) {
			return nil, fmt.Errorf("planner: measured attribute %d outside the domain", a)
		}
		s.sizes = append(s.sizes, sizes[a])
		cells *= sizes[a]
	}
	if cells != len(m.Y) || !slices.IsSorted(m.Attrs) {
		return nil, fmt.Errorf("planner: measured marginal on %v has %d cells, want %d", m.Attrs, len(m.Y), cells)
	}
	return s, nil
}

// Total is the sum of the marginal's cells.
func (s *MeasuredSource) Total() float64 {
	var t float64
	for _, y := range s.m.Y {
		t += y
	}
	return t
}

// Marginal sums the marginal down to attrs, a subset of its attributes.
func (s *MeasuredSource) Marginal(attrs []int) []float64 {
	return sumDown(s.m.Y, s.m.Attrs, s.sizes, attrs)
}

// MarginalWhere weights every cell by the product of weight[a][code] over
// the weighted attributes, then sums down to attrs.
func (s *MeasuredSource) MarginalWhere(attrs []int, weight map[int][]float64) []float64 {
	if len(weight) == 0 {
		return s.Marginal(attrs)
	}
	w := slices.Clone(s.m.Y)
	idx := make([]int, len(s.m.Attrs))
	for i := range w {
		for k, a := range s.m.Attrs {
			if f, ok := weight[a]; ok {
				w[i] *= f[idx[k]]
			}
		}
		for k := len(idx) - 1; k >= 0; k-- {
			idx[k]++
			if idx[k] < s.sizes[k] {
				break
			}
			idx[k] = 0
		}
	}
	return sumDown(w, s.m.Attrs, s.sizes, attrs)
}

// ExplainMeasured describes how released marginal number k (1-based, on
// the columns named by names) of the table answers mq, for EXPLAIN.
func (mq *ModelQuery) ExplainMeasured(k int, m Measured) string {
	var b strings.Builder
	fmt.Fprintf(&b, "released marginal %d (%s) of %s: noisy ", k, names(mq.Table.Domain, m.Attrs), mq.tableName())
	mq.explainTail(&b)
	if rest := slices.DeleteFunc(slices.Clone(m.Attrs), func(a int) bool { return slices.Contains(mq.Query.Attrs, a) }); len(rest) > 0 {
		fmt.Fprintf(&b, "; summed over %s", names(mq.Table.Domain, rest))
	}
	b.WriteString("; negative counts clipped at 0")
	return b.String()
}
