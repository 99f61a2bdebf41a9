package oracle

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/pgm"
	"gonum.org/v1/gonum/mat"
)

// Queries is the query set Q of a marginal workload: every cell of every
// workload marginal, numbered consecutively (marginal m's cells are
// Off[m] ≤ c < Off[m+1], in the marginal's layout with the last attribute
// fastest). The negation q̄ = 1 − q of cell c is implicit.
type Queries struct {
	Sizes   []int   // the domain's sizes
	Sets    [][]int // the marginals' attributes, ascending
	Weights []float64
	Off     []int   // len(Sets)+1 offsets
	Strides [][]int // stride of each attribute of each set
	Marg    []int32 // the marginal of each cell
}

// NewQueries indexes the cells of the workload w (canonical, from
// synth.Input.Check) over dom, dropping zero-weight marginals.
func NewQueries(dom *pgm.Domain, w []synth.Marginal) *Queries {
	q := &Queries{Sizes: make([]int, dom.Len()), Off: []int{0}}
	for a := range q.Sizes {
		q.Sizes[a] = dom.Size(a)
	}
	for _, m := range w {
		if m.Weight <= 0 {
			continue
		}
		st := make([]int, len(m.Attrs))
		n := 1
		for j := len(m.Attrs) - 1; j >= 0; j-- {
			st[j] = n
			n *= dom.Size(m.Attrs[j])
		}
		k := int32(len(q.Sets))
		q.Sets = append(q.Sets, m.Attrs)
		q.Weights = append(q.Weights, m.Weight)
		q.Strides = append(q.Strides, st)
		q.Off = append(q.Off, q.Off[len(q.Off)-1]+n)
		for range n {
			q.Marg = append(q.Marg, k)
		}
	}
	return q
}

// Len is the number of cells |Q|.
func (q *Queries) Len() int { return q.Off[len(q.Off)-1] }

// Cell returns the cell of marginal m that record x falls in (global
// index).
func (q *Queries) Cell(m int, x []int) int {
	c := q.Off[m]
	for j, a := range q.Sets[m] {
		c += x[a] * q.Strides[m][j]
	}
	return c
}

// Decode writes the values of cell c's attributes into vals (len of its
// set) and returns its marginal.
func (q *Queries) Decode(c int, vals []int) int {
	m := int(q.Marg[c])
	r := c - q.Off[m]
	for j := range q.Sets[m] {
		vals[j] = r / q.Strides[m][j]
		r %= q.Strides[m][j]
	}
	return m
}

// AppendTerms appends to dst one term per cell of weights with a non-zero
// weight (the cell's conjunction, that weight), in increasing cell order so
// that the best response does not depend on map iteration order; keys is
// scratch space, returned for reuse.
func (q *Queries) AppendTerms(dst []Term, weights map[int32]float64, keys []int32) ([]Term, []int32) {
	keys = keys[:0]
	for c, w := range weights {
		if w != 0 {
			keys = append(keys, c)
		}
	}
	slices.Sort(keys)
	for _, c := range keys {
		m := int(q.Marg[c])
		vals := make([]int, len(q.Sets[m]))
		q.Decode(int(c), vals)
		dst = append(dst, Term{Attrs: q.Sets[m], Vals: vals, Weight: weights[c]})
	}
	return dst, keys
}

// Answers reads the workload marginals through the marginal oracle in one
// call and returns them concatenated in cell order, with the record count.
func (q *Queries) Answers(ctx context.Context, data synth.Data) ([]float64, float64, error) {
	got, err := data.Marginals(ctx, q.Sets)
	if err != nil {
		return nil, 0, fmt.Errorf("workload marginals: %w", err)
	}
	out := make([]float64, 0, q.Len())
	for _, x := range got {
		out = append(out, x...)
	}
	var n float64
	for _, v := range got[0] {
		n += v
	}
	return out, n, nil
}

// NoisyCount releases the record count n with the discrete Gaussian
// mechanism at σ (sensitivity 1, zCDP cost 1/(2σ²)) and returns the
// measurement (a one-row query over attribute 0's marginal, so that it is a
// well-formed pgm measurement) and the count clamped to ≥ 1 for use as a
// normaliser (post-processing).
func NoisyCount(src interface{ DiscreteGaussian(float64) int64 }, n float64, sigma float64, size0 int) (synth.Measurement, float64) {
	y := n + float64(src.DiscreteGaussian(sigma))
	ones := make([]float64, size0)
	for i := range ones {
		ones[i] = 1
	}
	m := synth.Measurement{Measurement: pgm.Measurement{Attrs: []int{0}, Query: mat.NewDense(1, size0, ones), Y: []float64{y}, Sigma: sigma}}
	return m, math.Max(1, math.Round(y))
}

// Replicate turns records (each of weight 1/len(records)) into rows
// column-major synthetic rows: row r is record ⌊r·T/rows⌋, so each record
// appears rows/T times up to rounding.
func Replicate(records [][]int, d, rows int) [][]uint16 {
	cols := make([][]uint16, d)
	for a := range cols {
		cols[a] = make([]uint16, rows)
	}
	T := len(records)
	for r := range rows {
		x := records[r*T/rows]
		for a := range cols {
			cols[a][r] = uint16(x[a])
		}
	}
	return cols
}

// Rows returns the number of synthetic rows to emit: want if positive,
// otherwise the released count, clamped to [1, synth.MaxRows].
func Rows(want int, nhat float64) int {
	if want > 0 {
		return want
	}
	return int(math.Min(math.Max(1, nhat), synth.MaxRows))
}
