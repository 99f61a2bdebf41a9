package aim

import (
	"context"
	"math"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/internal/marginal"
	"github.com/dpsql/dpsql/synth/pgm"
)

// answer is a true candidate marginal M_r(D), held for the whole run,
// sparsely when it is mostly zeros (marginal.Compact).
type answer = marginal.Compact

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
		got, err := compacts(ctx, in.Data, sets)
		if err != nil {
			return nil, err
		}
		for p := lo; p < hi; p++ {
			h := &got[p-lo]
			for _, i := range sub[p] {
				answers[i] = marginal.NewCompact(h.ProjectTo(nil, dom, w[p].Attrs, cands[i].attrs))
			}
			if top[p] >= 0 {
				answers[top[p]] = *h
			}
		}
		lo = hi
	}
	return answers, nil
}

// compacts returns the true marginals of sets, compacted. From a
// synth.Cache they are the cache's own (read-only) compacts, so that the
// workload's true marginals are held once for the run, not once there and
// once here.
func compacts(ctx context.Context, d synth.Data, sets [][]int) ([]marginal.Compact, error) {
	if c, ok := d.(*synth.Cache); ok {
		return c.Compacts(ctx, sets)
	}
	xs, err := d.Marginals(ctx, sets)
	if err != nil {
		return nil, err
	}
	out := make([]marginal.Compact, len(xs))
	for i, x := range xs {
		out[i] = marginal.NewCompact(x)
		xs[i] = nil
	}
	return out, nil
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
