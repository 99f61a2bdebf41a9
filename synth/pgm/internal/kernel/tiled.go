package kernel

// Tiled is an index map (see Map) stored as the map of a tile — the block of
// the table's trailing axes, at least minTile cells — plus sub-table strides
// for the leading axes. Every tile of the table maps to the sub-table with
// the same offsets, shifted by a base that the leading axes' digits give, so
// the gather kernels run on each tile with the one small map against the
// sub-table sliced at that base. A full map costs 4 bytes per table cell;
// a Tiled map a few KB, read from cache instead of memory. A Tiled is
// immutable and safe for concurrent use.
type Tiled struct {
	tile    []int32
	sizes   []int // leading axes, outermost first
	strides []int // sub-table stride of each leading axis (0 if dropped)
	cells   int
}

// DefaultTile is the least tile length NewTiled is asked for by callers that
// have no better figure: large enough that the per-tile work (one base
// computation and a kernel call) is amortised, small enough to stay in L1.
const DefaultTile = 1024

// NewTiled plans the index map of Map(sizes, dims) with tiles of at least
// minTile cells (or the whole table).
func NewTiled(sizes []int, dims []int, minTile int) *Tiled {
	t := &Tiled{cells: 1}
	for _, s := range sizes {
		t.cells *= s
	}
	// The sub-table stride of every axis.
	stride := make([]int, len(sizes))
	s := 1
	for j := len(dims) - 1; j >= 0; j-- {
		stride[dims[j]] = s
		s *= sizes[dims[j]]
	}
	lead, n := len(sizes), 1
	for lead > 0 && n < minTile {
		lead--
		n *= sizes[lead]
	}
	t.sizes = append([]int(nil), sizes[:lead]...)
	t.strides = stride[:lead:lead]
	var tailDims []int
	for _, d := range dims {
		if d >= lead {
			tailDims = append(tailDims, d-lead)
		}
	}
	t.tile = Map(sizes[lead:], tailDims)
	// Map numbers the tail's sub-table by the tail's kept axes alone,
	// which are the last kept axes of the whole sub-table: the same strides.
	return t
}

// Len is the number of cells of the table.
func (t *Tiled) Len() int { return t.cells }

// TileLen is the number of cells of one tile.
func (t *Tiled) TileLen() int { return len(t.tile) }

// base returns the sub-table offset of tile b.
func (t *Tiled) base(b int) int {
	off := 0
	for j := len(t.sizes) - 1; j >= 0; j-- {
		s := t.sizes[j]
		off += (b % s) * t.strides[j]
		b /= s
	}
	return off
}

// each calls f for the tile pieces covering cells [lo, lo+n) of the table,
// with the piece's position in [0, n), its base in the sub-table and its
// part of the tile map.
func (t *Tiled) each(lo, n int, f func(at, base int, idx []int32)) {
	if lo < 0 || n < 0 || lo+n > t.cells {
		panic(errLength)
	}
	L := len(t.tile)
	for at := 0; at < n; {
		pos := lo + at
		b, off := pos/L, pos%L
		m := min(L-off, n-at)
		f(at, t.base(b), t.tile[off:off+m])
		at += m
	}
}

// Each calls f for the tile pieces covering the cells [lo, lo+n) of the
// table, in order: cell lo+at+j maps to base + idx[j] of the sub-table
// (what Map gives it), for j in [0, len(idx)). It lets a loop that needs
// each cell's sub-table index run without a full map (4 bytes a cell).
func (t *Tiled) Each(lo, n int, f func(at, base int, idx []int32)) { t.each(lo, n, f) }

// Expand is the Expand of the map over the cells [lo, lo+len(dst)) of the
// table, dst holding those cells:
//
//	for i := range dst { dst[i] += src[idx[lo+i]] }
func (t *Tiled) Expand(dst, src []float64, lo int) {
	t.each(lo, len(dst), func(at, base int, idx []int32) {
		expand(dst[at:at+len(idx)], src[base:], idx)
	})
}

// Scale is the Scale of the map over the cells [lo, lo+len(x)):
//
//	for i := range x { x[i] *= f[idx[lo+i]] }
func (t *Tiled) Scale(x, f []float64, lo int) {
	t.each(lo, len(x), func(at, base int, idx []int32) {
		scale(x[at:at+len(idx)], f[base:], idx)
	})
}

// ExpShiftGather is the ExpShiftGather of the map over the cells
// [lo, lo+len(x)):
//
//	for i := range x { x[i] = exp(x[i] - shift[idx[lo+i]]) }
func (t *Tiled) ExpShiftGather(x, shift []float64, lo int) {
	t.each(lo, len(x), func(at, base int, idx []int32) {
		expShiftGather(x[at:at+len(idx)], shift[base:], idx)
	})
}

// Project is the Project of the whole map (the adjoint of Expand):
//
//	for i := range src { dst[idx[i]] += src[i] }
func (t *Tiled) Project(dst, src []float64) {
	if len(src) != t.cells {
		panic(errLength)
	}
	t.each(0, len(src), func(at, base int, idx []int32) {
		d := dst[base:]
		for i, v := range src[at : at+len(idx)] {
			d[idx[i]] += v
		}
	})
}
