package aim

import (
	"context"
	"math"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/internal/marginal"
	"github.com/dpsql/dpsql/synth/pgm"
)

// answer is a true candidate marginal M_r(D), held for the whole run. Large
// marginals of a table are mostly zeros (adult's 364 3-way marginals have
// 20.9 M cells, 159 MB as float64, but 0.57 M non-zero counts), so a
// marginal with fewer non-zeros than two thirds of its cells is kept as
// (index, count) pairs, 12 bytes each, and the others densely.
type answer struct {
	cells int
	dense []float64 // the marginal, if held densely
	idx   []uint32  // else the non-zero cells, ascending
	val   []float64 // and their values
}

// compact returns x as an answer, sparse if that is smaller. x is kept
// (not copied) when dense.
func compact(x []float64) answer {
	nz := 0
	for _, v := range x {
		if v != 0 {
			nz++
		}
	}
	if 3*nz >= 2*len(x) || len(x) > math.MaxUint32 {
		return answer{cells: len(x), dense: x}
	}
	a := answer{cells: len(x), idx: make([]uint32, 0, nz), val: make([]float64, 0, nz)}
	for i, v := range x {
		if v != 0 {
			a.idx = append(a.idx, uint32(i))
			a.val = append(a.val, v)
		}
	}
	return a
}

// l1 returns ‖a − y‖₁. For a sparse a it is Σ|y| corrected at a's non-zero
// cells, one pass over y and one over the non-zeros.
func (a *answer) l1(y []float64) float64 {
	if len(y) != a.cells {
		panic("aim: answer length mismatch")
	}
	if a.dense != nil || a.cells == 0 {
		return marginal.L1(a.dense, y)
	}
	var s float64
	for _, v := range y {
		s += math.Abs(v)
	}
	for k, i := range a.idx {
		s += math.Abs(a.val[k]-y[i]) - math.Abs(y[i])
	}
	return s
}

// expand returns the answer as a fresh dense vector (the caller may add
// noise to it).
func (a *answer) expand() []float64 {
	x := make([]float64, a.cells)
	if a.dense != nil {
		copy(x, a.dense)
		return x
	}
	for k, i := range a.idx {
		x[i] = a.val[k]
	}
	return x
}

// fetchCells bounds the dense cells asked of an in-memory source at once
// (8 MB of float64): the workload's true marginals are counted a batch at
// a time and compacted, so they are never all dense together. A variable
// for tests.
var fetchCells = 1 << 20

// candidateAnswers returns the true marginal of every candidate: the
// workload sets are asked of in.Data (a batch at a time when the data is in
// memory; in one call otherwise, so that a remote source scans as few times
// as it can), their subsets are projected from them.
func candidateAnswers(ctx context.Context, in *synth.Input, w []synth.Marginal, cands []candidate) ([]answer, error) {
	dom := in.Data.Domain()
	// sub[p] are the candidates projected from workload set p.
	sub := make([][]int, len(w))
	top := make([]int, len(w)) // −1: the set is projected from a larger one
	for p := range top {
		top[p] = -1
	}
	for i, c := range cands {
		p := c.parents[0]
		if len(c.attrs) == len(w[p].Attrs) {
			top[p] = i
		} else {
			sub[p] = append(sub[p], i)
		}
	}
	limit := math.MaxInt
	if local(in.Data) {
		limit = fetchCells
	}
	answers := make([]answer, len(cands))
	for lo := 0; lo < len(w); {
		hi, cells := lo, 0
		for hi < len(w) && (hi == lo || cells+dom.Cells(w[hi].Attrs) <= limit) {
			cells += dom.Cells(w[hi].Attrs)
			hi++
		}
		sets := make([][]int, hi-lo)
		for p := lo; p < hi; p++ {
			sets[p-lo] = w[p].Attrs
		}
		got, err := in.Data.Marginals(ctx, sets)
		if err != nil {
			return nil, err
		}
		for p := lo; p < hi; p++ {
			x := got[p-lo]
			for _, i := range sub[p] {
				answers[i] = compact(marginal.ProjectTo(nil, dom, w[p].Attrs, x, cands[i].attrs))
			}
			if top[p] >= 0 {
				answers[top[p]] = compact(x)
			}
			got[p-lo] = nil
		}
		lo = hi
	}
	return answers, nil
}

// local reports whether d counts in memory (a dataset, or a cache over
// one), where asking for marginals in several calls costs no extra scans
// of a remote table.
func local(d synth.Data) bool {
	if c, ok := d.(*synth.Cache); ok {
		d = c.Source()
	}
	_, ok := d.(*pgm.Dataset)
	return ok
}
