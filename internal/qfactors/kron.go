// Package qfactors holds what the planner and synth share about Kronecker
// query factors of a workload marginal (one matrix per attribute, nil for
// the whole marginal): how two queries on the same attributes merge.
package qfactors

import (
	"slices"

	"gonum.org/v1/gonum/mat"
)

// Merge merges the query factors of two workload entries on the same
// attributes: nil (the whole marginal) absorbs anything; factors that
// differ in one attribute only are stacked there (several thresholds of one
// range condition become the rows of one factor); otherwise the merged
// entry is the whole marginal (nil), which answers both.
func Merge(a, b []*mat.Dense) []*mat.Dense {
	if a == nil || b == nil {
		return nil
	}
	diff := -1
	for j := range a {
		if a[j] == b[j] || (a[j] != nil && b[j] != nil && mat.Equal(a[j], b[j])) {
			continue
		}
		if diff >= 0 || a[j] == nil || b[j] == nil {
			return nil
		}
		diff = j
	}
	if diff < 0 {
		return a
	}
	out := slices.Clone(a)
	ra, c := a[diff].Dims()
	rb, _ := b[diff].Dims()
	st := mat.NewDense(ra+rb, c, nil)
	st.Stack(a[diff], b[diff])
	out[diff] = st
	return out
}
