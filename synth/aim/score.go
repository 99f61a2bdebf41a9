package aim

import (
	"context"
	"sync"

	"github.com/dpsql/dpsql/synth/internal/marginal"
	"github.com/dpsql/dpsql/synth/pgm"
)

// scorer computes the selection scores of a round's eligible candidates in
// parallel. Computing M_r(p̂) dominates AIM's running time (variable
// elimination for sets that span cliques), so each eligible workload set is
// computed once and its eligible subsets are projected from it; only the
// scores are kept, not the marginals.
type scorer struct {
	r *run
	// topCand[p] is the candidate index of workload set p.
	topCand []int
	// group bookkeeping, rebuilt each round.
	pos    []int   // candidate → position in eligible, −1 if not eligible
	groups []group // one per marginal computed by inference
	// lazy, if set, records each scored candidate's exact L1 distance.
	lazy *lazyState
	// bufs are the workers' projection buffers, kept for the whole run (a
	// pool per round would hold each round's buffers until the collector
	// clears pools, which scoring without garbage seldom triggers).
	bufs sync.Pool
}

// scoreBuf is a scoring worker's scratch: a projected marginal and its
// binning for a coarse twin.
type scoreBuf struct{ proj, coarse []float64 }

// group is a candidate whose model marginal is computed by inference, and
// the eligible candidates projected from it.
type group struct {
	root int   // candidate index
	deps []int // candidate indexes of eligible strict subsets
}

func newScorer(r *run) *scorer {
	s := &scorer{r: r, topCand: make([]int, len(r.w)), pos: make([]int, len(r.cands))}
	s.bufs.New = func() any { return new(scoreBuf) }
	byKey := make(map[string]int, len(r.cands))
	for i, c := range r.cands {
		byKey[c.key] = i
	}
	for p := range r.w {
		s.topCand[p] = byKey[r.wkeys[p]]
	}
	return s
}

// scores writes into dst[k] the score of candidate eligible[k] against
// model, with noise scale sigma, and returns dst.
func (s *scorer) scores(ctx context.Context, dst []float64, eligible []int, model *pgm.Model, sigma float64) ([]float64, error) {
	r := s.r
	for i := range s.pos {
		s.pos[i] = -1
	}
	for k, i := range eligible {
		s.pos[i] = k
	}
	s.groups = s.groups[:0]
	rootGroup := make(map[int]int)
	// Eligible candidates in decreasing size: each either has an eligible
	// workload superset to project from (the smallest one), or is a root.
	for k := len(eligible) - 1; k >= 0; k-- {
		i := eligible[k]
		best := -1
		for _, p := range r.cands[i].parents {
			tc := s.topCand[p]
			if tc == i || s.pos[tc] < 0 {
				continue
			}
			if best < 0 || r.answers.Len(tc) < r.answers.Len(best) {
				best = tc
			}
		}
		if best < 0 {
			if _, ok := rootGroup[i]; ok {
				continue // already a root, made one for a subset (a twin, or nested workload sets)
			}
			rootGroup[i] = len(s.groups)
			s.groups = append(s.groups, group{root: i})
			continue
		}
		g, ok := rootGroup[best]
		if !ok {
			// best was itself projected from a larger workload set
			// (workload sets may nest); compute it directly as well.
			g = len(s.groups)
			rootGroup[best] = g
			s.groups = append(s.groups, group{root: best})
		}
		s.groups[g].deps = append(s.groups[g].deps, i)
	}

	if cap(dst) < len(eligible) {
		dst = make([]float64, len(eligible))
	}
	dst = dst[:len(eligible)]
	// Model marginals are non-negative and sum to the model's total, so a
	// sparse answer's distance needs only its non-zero cells.
	total := model.Total()
	// A coarse twin is scored on the binned model marginal (binning keeps
	// the total), with the bias term of its own cell count.
	var read firstError // reading an answer back
	score := func(i int, xhat []float64, buf *scoreBuf) {
		c := &r.cands[i]
		if c.coarse != nil {
			buf.coarse = c.observed(buf.coarse, xhat)
			xhat = buf.coarse
		}
		l1, err := r.answers.L1Total(i, xhat, total)
		read.set(err)
		if s.lazy != nil {
			s.lazy.set(i, l1) // distinct i per call: safe concurrently
		}
		dst[s.pos[i]] = c.weight * (l1 - sqrt2pi*sigma*float64(len(xhat)))
	}
	// The roots are computed as one batch (sharing the model's reduced
	// cliques) into reused buffers (the marginals are only read here);
	// each worker reuses one projection buffer.
	roots := make([][]int, len(s.groups))
	for g := range s.groups {
		roots[g] = r.cands[s.groups[g].root].attrs
	}
	bufs := &s.bufs
	err := model.MarginalsVisit(ctx, roots, func(g int, x []float64) {
		buf := bufs.Get().(*scoreBuf)
		defer bufs.Put(buf)
		grp := &s.groups[g]
		score(grp.root, x, buf)
		for _, i := range grp.deps {
			buf.proj = marginal.ProjectTo(buf.proj, r.dom, roots[g], x, r.cands[i].attrs)
			score(i, buf.proj, buf)
		}
	})
	if err == nil {
		err = read.get()
	}
	return dst, err
}

// firstError keeps the first error set from concurrent calls.
type firstError struct {
	mu  sync.Mutex
	err error
}

func (e *firstError) set(err error) {
	if err == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err == nil {
		e.err = err
	}
}

func (e *firstError) get() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}
