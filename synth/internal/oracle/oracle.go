// Package oracle holds the two players of the query-release game that
// DualQuery and FEM share (spec pep-gem-mwem-dualquery.md §7, §9):
//
//   - the data player's best response (Solve): the record x maximising a
//     weighted sum of conjunctions Σ_j w_j·1[x_{S_j} = y_j] plus per-value
//     scores, over a categorical domain. This is the weighted MAX-CSP of
//     [004] Sec. 5 with the one-hot "one value per attribute" constraint
//     built in. It never sees private data, so privacy never depends on its
//     optimality, only accuracy does;
//   - the query player's exact sampler (Sampler): a draw of i with
//     probability ∝ exp(u_i) from the CSPRNG noise source, fast enough for
//     millions of candidates and thousands of draws per round.
package oracle

import (
	"math"
	"math/rand/v2"
	"slices"
)

// Term is a weighted conjunction: it scores Weight when x[Attrs[j]] ==
// Vals[j] for every j, 0 otherwise. Attrs are distinct. A negative weight
// is a negated conjunction up to a constant (1 − 1[·]).
type Term struct {
	Attrs  []int
	Vals   []int
	Weight float64
}

// Problem is a best-response problem over a categorical domain.
type Problem struct {
	Sizes []int
	Terms []Term
	// Unary, if non-nil, holds per-attribute value scores (nil rows mean
	// zero): Unary[a][v] is added when x[a] = v.
	Unary [][]float64
}

// Score is the objective at x.
func (p *Problem) Score(x []int) float64 {
	var s float64
	for _, t := range p.Terms {
		ok := true
		for j, a := range t.Attrs {
			if x[a] != t.Vals[j] {
				ok = false
				break
			}
		}
		if ok {
			s += t.Weight
		}
	}
	for a, u := range p.Unary {
		if u != nil {
			s += u[x[a]]
		}
	}
	return s
}

// Options configures Solve; zero fields mean defaults.
type Options struct {
	// ExactLimit is the largest product of the domain sizes of the
	// attributes the problem involves for which Solve runs a complete
	// branch and bound (exact). Default 1e6.
	ExactLimit float64
	// Nodes bounds the branch and bound that polishes the heuristic's
	// answer beyond ExactLimit (0 means the default 4000; negative means
	// none).
	Nodes int
	// Restarts is the number of random restarts of the local search beyond
	// ExactLimit (default 3, besides the greedy start and the given x).
	Restarts int
}

// Default option values.
const (
	DefaultExactLimit = 1e6
	DefaultNodes      = 4000
	DefaultRestarts   = 3
)

// Solver solves problems over one domain, reusing its buffers between
// calls. It is not safe for concurrent use.
type Solver struct {
	opt   Options
	sizes []int

	// per problem
	terms  []Term
	unary  [][]float64
	byAttr [][]lit // the literals of each attribute
	attrs  []int   // involved attributes
	uMax   []float64

	// local search
	mis  []int32
	gain []float64
	cur  []int

	// branch and bound
	matched []int32
	dead    []bool
	trail   []int32
	order   []int
	vals    [][]int   // per depth: the value order
	gd      [][]float64 // per depth: the optimistic gains
	x       []int
	best    []int
	bestS   float64
	nodes   int
	limit   int
}

type lit struct {
	term int32
	val  int32
}

// NewSolver returns a solver over a domain with the given sizes.
func NewSolver(sizes []int, opt Options) *Solver {
	if opt.ExactLimit <= 0 {
		opt.ExactLimit = DefaultExactLimit
	}
	if opt.Nodes == 0 {
		opt.Nodes = DefaultNodes
	}
	if opt.Restarts <= 0 {
		opt.Restarts = DefaultRestarts
	}
	s := &Solver{opt: opt, sizes: slices.Clone(sizes), byAttr: make([][]lit, len(sizes)), uMax: make([]float64, len(sizes))}
	maxSize := 0
	for _, n := range sizes {
		maxSize = max(maxSize, n)
	}
	s.gain = make([]float64, maxSize)
	s.cur = make([]int, len(sizes))
	s.x = make([]int, len(sizes))
	s.best = make([]int, len(sizes))
	s.vals = make([][]int, len(sizes))
	s.gd = make([][]float64, len(sizes))
	for d := range s.vals {
		s.vals[d] = make([]int, maxSize)
		s.gd[d] = make([]float64, maxSize)
	}
	return s
}

// Solve writes into x a record maximising p's objective and returns its
// score and whether it is provably optimal. On entry x holds the values of
// the attributes that no term or unary score involves (the caller's
// free-attribute policy); they are kept. rng drives the heuristic's
// restarts (post-processing randomness: the problem holds no private
// data).
func (s *Solver) Solve(p *Problem, x []int, rng *rand.Rand) (float64, bool) {
	s.load(p)
	if len(s.attrs) == 0 {
		return p.Score(x), true
	}
	size := 1.0
	for _, a := range s.attrs {
		size *= float64(s.sizes[a])
	}
	if size <= s.opt.ExactLimit {
		s.greedy(x)
		s.localSearch(x)
		s.bestS = s.score(x)
		copy(s.best, x)
		s.branch(x, -1)
		copy(x, s.best)
		return s.bestS, true
	}
	// Heuristic ([004] Sec. 7's "greedy + local search"): a greedy start,
	// the caller's x and random restarts, each improved by coordinate
	// ascent; then a node-bounded branch and bound from the best.
	bestS := math.Inf(-1)
	copy(s.best, x)
	for r := -1; r <= s.opt.Restarts; r++ {
		copy(s.cur, x)
		switch {
		case r < 0:
			s.greedy(s.cur)
		case r > 0:
			for _, a := range s.attrs {
				s.cur[a] = rng.IntN(s.sizes[a])
			}
		}
		s.localSearch(s.cur)
		if sc := s.score(s.cur); sc > bestS {
			bestS = sc
			copy(s.best, s.cur)
		}
	}
	copy(x, s.best)
	s.bestS = bestS
	if s.opt.Nodes > 0 {
		if s.branch(x, s.opt.Nodes) {
			copy(x, s.best)
			return s.bestS, true
		}
		copy(x, s.best)
	}
	return s.bestS, false
}

// load indexes p's terms by attribute.
func (s *Solver) load(p *Problem) {
	s.terms, s.unary = p.Terms, p.Unary
	for a := range s.byAttr {
		s.byAttr[a] = s.byAttr[a][:0]
		s.uMax[a] = 0
	}
	for j, t := range p.Terms {
		for k, a := range t.Attrs {
			s.byAttr[a] = append(s.byAttr[a], lit{int32(j), int32(t.Vals[k])})
		}
	}
	s.attrs = s.attrs[:0]
	for a := range s.sizes {
		involved := len(s.byAttr[a]) > 0
		if a < len(p.Unary) && p.Unary[a] != nil {
			m := math.Inf(-1)
			for _, u := range p.Unary[a] {
				m = max(m, u)
				involved = involved || u != 0
			}
			s.uMax[a] = m
		}
		if involved {
			s.attrs = append(s.attrs, a)
		}
	}
	n := len(p.Terms)
	s.mis = slices.Grow(s.mis[:0], n)[:n]
	s.matched = slices.Grow(s.matched[:0], n)[:n]
	s.dead = slices.Grow(s.dead[:0], n)[:n]
}

func (s *Solver) score(x []int) float64 {
	var sc float64
	for _, t := range s.terms {
		ok := true
		for k, a := range t.Attrs {
			if x[a] != t.Vals[k] {
				ok = false
				break
			}
		}
		if ok {
			sc += t.Weight
		}
	}
	for _, a := range s.attrs {
		if a < len(s.unary) && s.unary[a] != nil {
			sc += s.unary[a][x[a]]
		}
	}
	return sc
}

// greedy sets the involved attributes one at a time (most literals first)
// to the value with the largest optimistic gain: its unary score plus the
// positive weights of the terms still satisfiable with it, minus the
// negative weights of terms it completes.
func (s *Solver) greedy(x []int) {
	order := s.sortedAttrs()
	for j := range s.terms {
		s.matched[j] = 0
		s.dead[j] = false
	}
	for _, a := range order {
		g := s.gain[:s.sizes[a]]
		s.unaryInto(g, a)
		for _, l := range s.byAttr[a] {
			t := &s.terms[l.term]
			if s.dead[l.term] {
				continue
			}
			if t.Weight > 0 || int(s.matched[l.term])+1 == len(t.Attrs) {
				g[l.val] += t.Weight
			}
		}
		v := argmax(g)
		x[a] = v
		for _, l := range s.byAttr[a] {
			if int(l.val) == v {
				s.matched[l.term]++
			} else {
				s.dead[l.term] = true
			}
		}
	}
}

// localSearch runs coordinate ascent from x: each involved attribute in
// turn takes its best value given the others, until a full pass changes
// nothing.
func (s *Solver) localSearch(x []int) {
	for j, t := range s.terms {
		m := int32(0)
		for k, a := range t.Attrs {
			if x[a] != t.Vals[k] {
				m++
			}
		}
		s.mis[j] = m
	}
	for pass := 0; pass < 100; pass++ {
		changed := false
		for _, a := range s.attrs {
			g := s.gain[:s.sizes[a]]
			s.unaryInto(g, a)
			for _, l := range s.byAttr[a] {
				// The other literals match iff the mismatches not due to a
				// are zero.
				m := s.mis[l.term]
				if int(l.val) != x[a] {
					m--
				}
				if m == 0 {
					g[l.val] += s.terms[l.term].Weight
				}
			}
			v := x[a]
			if w := argmax(g); g[w] > g[v] {
				v = w
			}
			if v == x[a] {
				continue
			}
			for _, l := range s.byAttr[a] {
				if int(l.val) == x[a] {
					s.mis[l.term]++
				} else if int(l.val) == v {
					s.mis[l.term]--
				}
			}
			x[a] = v
			changed = true
		}
		if !changed {
			return
		}
	}
}

func (s *Solver) unaryInto(g []float64, a int) {
	if a < len(s.unary) && s.unary[a] != nil {
		copy(g, s.unary[a])
	} else {
		clear(g)
	}
}

// sortedAttrs returns the involved attributes, most literals first.
func (s *Solver) sortedAttrs() []int {
	s.order = append(s.order[:0], s.attrs...)
	slices.SortStableFunc(s.order, func(a, b int) int { return len(s.byAttr[b]) - len(s.byAttr[a]) })
	return s.order
}

// branch runs branch and bound over the involved attributes with the
// incumbent s.best/s.bestS; x holds the free attributes. With limit > 0 it
// stops after that many nodes and reports false; true means the search was
// complete (s.best is optimal).
func (s *Solver) branch(x []int, limit int) bool {
	order := s.sortedAttrs()
	var fixed, alivePos, uRem float64
	for j, t := range s.terms {
		s.matched[j] = 0
		s.dead[j] = false
		if t.Weight > 0 {
			alivePos += t.Weight
		}
	}
	for _, a := range order {
		uRem += s.uMax[a]
	}
	copy(s.x, x)
	s.nodes, s.limit = 0, limit
	s.trail = s.trail[:0]
	var rec func(d int, fixed, alivePos, uRem float64) bool
	rec = func(d int, fixed, alivePos, uRem float64) bool {
		s.nodes++
		if s.limit > 0 && s.nodes > s.limit {
			return false
		}
		if d == len(order) {
			if fixed > s.bestS {
				s.bestS = fixed
				copy(s.best, s.x)
			}
			return true
		}
		a := order[d]
		n := s.sizes[a]
		// Value order: optimistic gain, best first.
		g := s.gd[d][:n]
		s.unaryInto(g, a)
		for _, l := range s.byAttr[a] {
			if !s.dead[l.term] && s.terms[l.term].Weight > 0 {
				g[l.val] += s.terms[l.term].Weight
			}
		}
		vals := s.vals[d][:n]
		for v := range vals {
			vals[v] = v
		}
		slices.SortStableFunc(vals, func(u, v int) int {
			switch {
			case g[u] > g[v]:
				return -1
			case g[u] < g[v]:
				return 1
			}
			return 0
		})
		uRem -= s.uMax[a]
		for _, v := range vals {
			f, ap := fixed, alivePos
			if a < len(s.unary) && s.unary[a] != nil {
				f += s.unary[a][v]
			}
			mark := len(s.trail)
			for _, l := range s.byAttr[a] {
				j := l.term
				if s.dead[j] {
					continue
				}
				w := s.terms[j].Weight
				if int(l.val) != v {
					s.dead[j] = true
					s.trail = append(s.trail, ^j)
					if w > 0 {
						ap -= w
					}
					continue
				}
				s.matched[j]++
				s.trail = append(s.trail, j)
				if int(s.matched[j]) == len(s.terms[j].Attrs) {
					f += w
					if w > 0 {
						ap -= w
					}
				}
			}
			// The bound: what is fixed, every positive term still
			// satisfiable, and the best unary score of every open
			// attribute; negative terms only lower it.
			if f+ap+uRem > s.bestS {
				s.x[a] = v
				if !rec(d+1, f, ap, uRem) {
					s.undo(mark)
					return false
				}
			}
			s.undo(mark)
		}
		return true
	}
	return rec(0, fixed, alivePos, uRem)
}

func (s *Solver) undo(mark int) {
	for i := len(s.trail) - 1; i >= mark; i-- {
		j := s.trail[i]
		if j < 0 {
			s.dead[^j] = false
		} else {
			s.matched[j]--
		}
	}
	s.trail = s.trail[:mark]
}

func argmax(g []float64) int {
	best := 0
	for v := 1; v < len(g); v++ {
		if g[v] > g[best] {
			best = v
		}
	}
	return best
}
