package planner

import "fmt"

// Groups is the number of groups of q's answer: the product of the
// group-by columns' sizes (1 without GROUP BY).
func (q *Query) Groups() int {
	n := 1
	for _, s := range q.groupSizes {
		n *= s
	}
	return n
}

// GroupCodes decodes group index g of an answer into the codes of the
// group-by columns (select-list order), written to dst (resized).
func (q *Query) GroupCodes(g int, dst []int) []int {
	if cap(dst) < len(q.groupSizes) {
		dst = make([]int, len(q.groupSizes))
	}
	dst = dst[:len(q.groupSizes)]
	for k := len(q.groupSizes) - 1; k >= 0; k-- {
		dst[k] = g % q.groupSizes[k]
		g /= q.groupSizes[k]
	}
	return dst
}

// Answer computes q's answer from a marginal on q.Attrs (row-major, the
// last attribute varying fastest, as synth/pgm lays marginals out): for
// every group of the group-by columns (in select-list order, the last
// varying fastest; see GroupCodes), the sum of the cells where the
// predicate is TRUE.
func (q *Query) Answer(marginal []float64) ([]float64, error) {
	return q.AnswerTo(nil, marginal)
}

// AnswerTo is Answer writing into dst (resized if too small); it does not
// allocate when dst and its scratch fit, and only to set up the cell
// counter otherwise.
func (q *Query) AnswerTo(dst, marginal []float64) ([]float64, error) {
	cells := 1
	for _, s := range q.sizes {
		cells *= s
	}
	if len(marginal) != cells {
		return nil, fmt.Errorf("planner: marginal has %d cells, want %d for attributes %v", len(marginal), cells, q.Attrs)
	}
	n := q.Groups()
	if cap(dst) < n {
		dst = make([]float64, n)
	}
	dst = dst[:n]
	clear(dst)
	if len(q.Attrs) == 0 {
		dst[0] = marginal[0]
		return dst, nil
	}
	// cell[a] is the code of attribute a; idx[k] that of q.Attrs[k].
	maxAttr := q.Attrs[len(q.Attrs)-1]
	cell := make([]int, maxAttr+1)
	idx := make([]int, len(q.Attrs))
	// Group stride of each position of q.Attrs (0 if not grouped).
	gstride := make([]int, len(q.Attrs))
	stride := 1
	for k := len(q.GroupBy) - 1; k >= 0; k-- {
		for j, a := range q.Attrs {
			if a == q.GroupBy[k] {
				gstride[j] = stride
			}
		}
		stride *= q.groupSizes[k]
	}
	g := 0
	last := len(q.Attrs) - 1
	for i := range marginal {
		if q.Where == nil || q.Where.Eval(cell) == True {
			dst[g] += marginal[i]
		}
		// Advance the mixed-radix counter, last attribute fastest.
		for j := last; j >= 0; j-- {
			idx[j]++
			cell[q.Attrs[j]]++
			g += gstride[j]
			if idx[j] < q.sizes[j] {
				break
			}
			g -= gstride[j] * idx[j]
			idx[j] = 0
			cell[q.Attrs[j]] = 0
		}
	}
	return dst, nil
}

// Evidence returns, when q's predicate is a conjunction of conditions that
// each mention one column, a 0/1 weight per code of every predicate
// attribute: q's answer is then the marginal on GroupBy of the data
// weighted by the product of these factors (synth/pgm's MarginalWhere).
// ok is false when the predicate couples columns (an OR or NOT across
// columns). A query without a predicate has empty evidence.
func (q *Query) Evidence() (weights map[int][]float64, ok bool) {
	weights = map[int][]float64{}
	if q.Where == nil {
		return weights, true
	}
	conj := []*Pred{q.Where}
	if q.Where.Op == OpAnd {
		conj = q.Where.Args
	}
	for _, p := range conj {
		if p.Op != OpAtom {
			return nil, false
		}
		w, seen := weights[p.Attr]
		if !seen {
			w = make([]float64, len(p.Truth))
			for i := range w {
				w[i] = 1
			}
			weights[p.Attr] = w
		}
		for code, t := range p.Truth {
			if t != True {
				w[code] = 0
			}
		}
	}
	return weights, true
}
