package pgm

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/dpsql/dpsql/internal/par"
)

// Dataset is an encoded, column-major table: column i holds codes in [0, Size(i)).
// A Dataset is immutable once created and safe for concurrent use.
type Dataset struct {
	dom  *Domain
	cols [][]uint16
	rows int
}

// NewDataset wraps column-major codes; every column must have the same length
// and every code must be inside its attribute's domain. The columns are not
// copied: the caller must not modify them afterwards.
func NewDataset(dom *Domain, cols [][]uint16) (*Dataset, error) {
	if dom == nil {
		return nil, fmt.Errorf("pgm: nil domain")
	}
	if len(cols) != dom.Len() {
		return nil, fmt.Errorf("pgm: %d columns for a domain of %d attributes", len(cols), dom.Len())
	}
	rows := 0
	if len(cols) > 0 {
		rows = len(cols[0])
	}
	for i, c := range cols {
		if len(c) != rows {
			return nil, fmt.Errorf("pgm: column %q has %d rows, want %d", dom.Name(i), len(c), rows)
		}
		size := dom.Size(i)
		for r, v := range c {
			if int(v) >= size {
				return nil, fmt.Errorf("pgm: column %q row %d: code %d outside domain of size %d", dom.Name(i), r, v, size)
			}
		}
	}
	return &Dataset{dom: dom, cols: cols, rows: rows}, nil
}

// Rows is the number of records.
func (d *Dataset) Rows() int { return d.rows }

// Domain of the dataset.
func (d *Dataset) Domain() *Domain { return d.dom }

// Column returns column i's codes (do not modify).
func (d *Dataset) Column(i int) []uint16 { return d.cols[i] }

// MarginalTo writes the count marginal over attrs into dst (resized if too
// small) and returns it. attrs must be distinct attributes; the marginal's
// layout follows their order (the last varies fastest). MarginalTo does not
// allocate when dst is large enough.
//
// The reference loop is
//
//	for r := range rows { dst[Σ_k col[attrs[k]][r]·stride[k]]++ }
func (d *Dataset) MarginalTo(dst []float64, attrs []int) []float64 {
	if err := d.checkDistinct(attrs); err != nil {
		panic(err.Error())
	}
	n := d.dom.Cells(attrs)
	if n > math.MaxUint32 {
		panic("pgm: marginal too large")
	}
	if cap(dst) < n {
		dst = make([]float64, n)
	}
	dst = dst[:n]
	clear(dst)
	d.countInto(dst, attrs, 0, d.rows)
	return dst
}

// countBlock is the number of rows whose cell indices are accumulated at once.
const countBlock = 512

// countInto adds the counts of rows [lo, hi) over attrs into dst, which has
// exactly Cells(attrs) entries.
func (d *Dataset) countInto(dst []float64, attrs []int, lo, hi int) {
	switch len(attrs) {
	case 0:
		dst[0] += float64(hi - lo)
		return
	case 1:
		count1(dst, d.cols[attrs[0]][lo:hi])
		return
	case 2:
		count2(dst, d.cols[attrs[0]][lo:hi], d.cols[attrs[1]][lo:hi], d.dom.sizes[attrs[1]])
		return
	case 3:
		s2 := d.dom.sizes[attrs[2]]
		count3(dst, d.cols[attrs[0]][lo:hi], d.cols[attrs[1]][lo:hi], d.cols[attrs[2]][lo:hi], d.dom.sizes[attrs[1]]*s2, s2)
		return
	}
	var (
		idx    [countBlock]uint32
		stride int
	)
	for r := lo; r < hi; r += countBlock {
		m := min(countBlock, hi-r)
		blk := idx[:m]
		stride = 1
		last := len(attrs) - 1
		// The last attribute initialises the block, the others add.
		c := d.cols[attrs[last]][r : r+m]
		for j := range blk {
			blk[j] = uint32(c[j])
		}
		for k := last - 1; k >= 0; k-- {
			stride *= d.dom.sizes[attrs[k+1]]
			addScaled(blk, d.cols[attrs[k]][r:r+m], uint32(stride))
		}
		for _, v := range blk {
			dst[v]++
		}
	}
}

// count1 is `for _, v := range c { dst[v]++ }`.
func count1(dst []float64, c []uint16) {
	for _, v := range c {
		dst[v]++
	}
}

// count2 is `for r := range a { dst[a[r]*sb + b[r]]++ }`.
func count2(dst []float64, a, b []uint16, sb int) {
	b = b[:len(a)]
	for r, x := range a {
		dst[int(x)*sb+int(b[r])]++
	}
}

// count3 is `for r := range a { dst[a[r]*sa + b[r]*sb + c[r]]++ }`.
func count3(dst []float64, a, b, c []uint16, sa, sb int) {
	b, c = b[:len(a)], c[:len(a)]
	for r, x := range a {
		dst[int(x)*sa+int(b[r])*sb+int(c[r])]++
	}
}

// addScaled is `for j := range dst { dst[j] += uint32(c[j]) * s }`.
func addScaled(dst []uint32, c []uint16, s uint32) {
	if len(c) != len(dst) {
		panic("pgm: length mismatch")
	}
	for j := range dst {
		dst[j] += uint32(c[j]) * s
	}
}

// Marginals computes many count marginals, using all cores. Each set follows
// the rules of MarginalTo. The marginals are allocated by the workers that
// fill them, so that zeroing the memory is shared between cores too.
func (d *Dataset) Marginals(ctx context.Context, sets [][]int) ([][]float64, error) {
	return d.MarginalsTo(ctx, nil, sets)
}

// MarginalsTo is Marginals writing marginal i into dst[i] when dst has that
// entry and it is large enough (as MarginalTo does), so that a caller that
// counts repeatedly allocates nothing and touches no fresh memory. It
// returns the marginals, resliced or allocated as needed, in a slice that
// reuses dst when it has room.
func (d *Dataset) MarginalsTo(ctx context.Context, dst [][]float64, sets [][]int) ([][]float64, error) {
	if err := d.checkMarginals(sets); err != nil {
		return nil, err
	}
	return d.countMarginals(ctx, dst, sets)
}

// checkMarginals reports whether every set is one MarginalTo counts.
func (d *Dataset) checkMarginals(sets [][]int) error {
	for _, s := range sets {
		if err := d.checkDistinct(s); err != nil {
			return err
		}
		if d.dom.Cells(s) > math.MaxUint32 {
			return fmt.Errorf("pgm: marginal over %v has too many cells", s)
		}
	}
	return nil
}

// countMarginals is MarginalsTo for sets that checkMarginals accepts.
func (d *Dataset) countMarginals(ctx context.Context, dst [][]float64, sets [][]int) ([][]float64, error) {
	out := dst
	if cap(out) < len(sets) {
		out = make([][]float64, len(sets))
		copy(out, dst)
	}
	out = out[:len(sets)]
	err := par.For(ctx, len(sets), 0, func(i int) {
		n := d.dom.Cells(sets[i])
		if cap(out[i]) < n {
			out[i] = make([]float64, n)
		} else {
			out[i] = out[i][:n]
			clear(out[i])
		}
		d.countInto(out[i], sets[i], 0, d.rows)
	})
	if err != nil {
		return nil, fmt.Errorf("pgm: computing marginals: %w", err)
	}
	return out, nil
}

// lendCells is how many cells LendMarginals counts at once (8 MB of
// float64) unless one marginal has more. A variable for tests.
var lendCells = 1 << 20

// LendMarginals hands fn the marginal of each of sets, as Marginals counts
// it, in one buffer reused from marginal to marginal: x is fn's only until
// it returns. A caller that compacts or sums each marginal then holds at
// most lendCells dense cells and allocates that buffer once a call, not
// every marginal (AIM's true answers on adult's 3-way workload: 160 MB of
// dense counts, whose collection cost 8 % of a run's CPU at ε = 1), so it
// should ask for all its sets in one call. The sets are counted in groups
// of about lendCells cells, using all cores; fn is called from one
// goroutine, in the order of sets, and an error from fn stops the calls and
// is returned.
func (d *Dataset) LendMarginals(ctx context.Context, sets [][]int, fn func(i int, x []float64) error) error {
	if err := d.checkMarginals(sets); err != nil {
		return err
	}
	n := make([]int, len(sets)) // each set's cells
	cells, largest := 0, 0
	for i, s := range sets {
		n[i] = d.dom.Cells(s)
		cells, largest = cells+n[i], max(largest, n[i])
	}
	buf := make([]float64, min(cells, max(lendCells, largest)))
	var views [][]float64
	for lo := 0; lo < len(sets); {
		views = views[:0]
		hi, off := lo, 0
		for hi < len(sets) && (hi == lo || off+n[hi] <= len(buf)) {
			views = append(views, buf[off:off+n[hi]:off+n[hi]])
			off += n[hi]
			hi++
		}
		got, err := d.countMarginals(ctx, views, sets[lo:hi])
		if err != nil {
			return err
		}
		for k, x := range got {
			if err := fn(lo+k, x); err != nil {
				return err
			}
		}
		lo = hi
	}
	return nil
}

// checkDistinct reports whether attrs are distinct attributes of the domain.
func (d *Dataset) checkDistinct(attrs []int) error {
	for i, a := range attrs {
		if a < 0 || a >= d.dom.Len() {
			return fmt.Errorf("pgm: attribute %d outside domain of %d attributes", a, d.dom.Len())
		}
		for _, b := range attrs[:i] {
			if a == b {
				return fmt.Errorf("pgm: attribute %d repeated in %v", a, slices.Clone(attrs))
			}
		}
	}
	return nil
}
