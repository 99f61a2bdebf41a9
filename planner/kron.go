package planner

import (
	"slices"

	"gonum.org/v1/gonum/mat"
)

// Kron returns q's counting queries over the marginal on Attrs as a
// Kronecker product of one 0/1 factor per attribute of Attrs (seed 001,
// App. B), when the predicate is a conjunction of single-column conditions
// (Evidence): a grouped attribute without a condition gets the identity
// (nil), a condition on an attribute not grouped by is one row (its codes
// that satisfy it: a prefix range for `c <= x` on a binned column, a range
// for BETWEEN), and a grouped attribute with a condition keeps one unit
// row per satisfying code. ok is false when the predicate couples
// columns; the whole marginal on Attrs then answers the query. A query
// without WHERE returns nil, true: the marginal itself.
func (q *Query) Kron() (factors []*mat.Dense, ok bool) {
	if q.Where == nil {
		return nil, true
	}
	ev, ok := q.Evidence()
	if !ok {
		return nil, false
	}
	factors = make([]*mat.Dense, len(q.Attrs))
	for j, a := range q.Attrs {
		w, cond := ev[a]
		if !cond {
			continue
		}
		n := q.sizes[j]
		var on []int
		for v, x := range w {
			if x != 0 {
				on = append(on, v)
			}
		}
		if len(on) == 0 {
			return nil, false // answers 0 everywhere; keep the marginal
		}
		if !slices.Contains(q.GroupBy, a) {
			f := mat.NewDense(1, n, nil)
			for _, v := range on {
				f.Set(0, v, 1)
			}
			factors[j] = f
			continue
		}
		f := mat.NewDense(len(on), n, nil)
		for i, v := range on {
			f.Set(i, v, 1)
		}
		factors[j] = f
	}
	return factors, true
}
