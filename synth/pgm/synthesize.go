package pgm

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/dpsql/dpsql/synth/pgm/internal/kernel"
)

// Synthesize draws rows records by randomized rounding along the junction
// tree and returns them column-major. rng is post-processing randomness.
//
// Attributes are generated in reverse elimination order (a perfect order of
// the triangulated graph). For each attribute a, let S be the attributes
// already generated that share a clique with a; S ∪ {a} lies in one clique.
// The records are grouped by their values on S and each group of g records
// receives g values of a in proportion to the model's conditional of a given
// S: every cell gets the integer part of its share and the remaining units
// go to distinct cells with probability equal to their fractional parts
// (systematic sampling over a random cell order), so that expected counts
// are exact. The values are then dealt to the group's records by herding
// (see herder), so that the records with each value of every other
// attribute already generated receive values of a in proportion, within a
// few records, not by chance; the first attribute, which has no other, is
// dealt in a stratified order (see deal).
//
// Consequently the first attribute's counts are within 1 of rows·p, and for
// every later attribute a, |n(s, v) − n(s)·p(v | s)| < 1 for every value s of
// S and v of a, where n counts the synthetic records: a clique marginal is
// within 1 + p(v|s)·|n(s) − rows·p(s)| of rows·p. Errors of the groups add,
// so cells of cliques generated late can be off by more than 1.
func (m *Model) Synthesize(rng *rand.Rand, rows int) ([][]uint16, error) {
	return m.SynthesizeContext(context.Background(), rng, rows)
}

// SynthesizeContext is Synthesize, stopping with ctx's error (wrapped)
// before each attribute.
func (m *Model) SynthesizeContext(ctx context.Context, rng *rand.Rand, rows int) ([][]uint16, error) {
	if rng == nil {
		return nil, errors.New("pgm: Synthesize needs a random source")
	}
	if rows < 0 {
		return nil, fmt.Errorf("pgm: cannot synthesize %d rows", rows)
	}
	jt, dom := m.jt, m.dom
	d := dom.Len()
	cols := make([][]uint16, d)
	for i := range cols {
		cols[i] = make([]uint16, rows)
	}
	// Each attribute's family, planned before any row is drawn, so that
	// the buffers reused from attribute to attribute are sized once, by
	// the largest: grown attribute by attribute, they were the sum of
	// their sizes in garbage (a model's size at ε = 10 on adult),
	// allocated after the final fit, where the live heap is largest.
	fams := synthesisFamilies(jt)
	var idxCells, margCells, groups int
	for _, f := range fams {
		idxCells = max(idxCells, jt.cells[f.k])
		ns := dom.Cells(f.cond)
		margCells = max(margCells, ns*dom.sizes[f.a])
		groups = max(groups, ns)
	}
	group := make([]int32, rows) // row indices grouped by their S values
	key := make([]int32, rows)
	order := make([]int32, rows) // rows in stratification order
	tmp := make([]int32, rows)   // stratify's second buffer
	var (
		vals    []uint16
		others  []int
		round   rounder
		herd    herder
		parents = make([][]int, d) // the attributes each was generated given
		step    = make([]int, d)   // when each was generated
		// A clique's index map and projection, and the groups' offsets
		// (TestSynthesizeAllocs).
		idxBuf = make([]int32, idxCells)
		// The generated values row by row, for the herding (herder),
		// within rowwiseBytes.
		rowwise  []uint16
		margBuf  = make([]float64, margCells)
		startBuf = make([]int, groups+1)
		nextBuf  = make([]int, groups)
	)
	if d > 1 && rows*d*2 <= rowwiseBytes {
		rowwise = make([]uint16, rows*d)
	}
	for j, f := range fams {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("pgm: synthesis stopped: %w", err)
		}
		a, cond, k, i := f.a, f.cond, f.k, d-1-j
		// Project the clique onto cond (ascending) then a, so that the
		// conditional of a given s is a contiguous row.
		dims := append(positions(jt.cliques[k], cond), slices.Index(jt.cliques[k], a))
		na := dom.sizes[a]
		ns := dom.Cells(cond)
		marg := margBuf[:ns*na]
		clear(marg)
		idx := idxBuf[:jt.cells[k]]
		kernel.MapTo(idx, dom.sizesOf(jt.cliques[k]), dims)
		kernel.Project(marg, jt.block(m.p, k), idx)

		// The rows in stratification order: by the other attributes
		// already generated, largest domain first (equal sizes in a random
		// order), ties in a random order. Large domains first because
		// their marginals carry most of the sampling error: on adult (ε =
		// 1, paired over 3 models) the rows' workload error drops from
		// 0.1855 with a shuffle to 0.1809, against 0.1810 for a random
		// attribute order and 0.1921 (worse than a shuffle) for smallest
		// first.
		others = others[:0]
		for _, b := range jt.order[i+1:] {
			if !slices.Contains(cond, b) {
				others = append(others, b)
			}
		}
		rng.Shuffle(len(others), func(x, y int) { others[x], others[y] = others[y], others[x] })
		slices.SortStableFunc(others, func(x, y int) int { return dom.sizes[y] - dom.sizes[x] })
		// Siblings first: an attribute generated given the same parents
		// was dealt over the same groups, and if the other keys order the
		// rows almost completely (three attributes of 38 values order
		// 20 000 rows), in nearly the same order, so one dealing sequence
		// would tie a's values to the sibling's, a dependence the model
		// does not have (TestSynthesizeSiblingsIndependent: the joint off
		// by 1.07 in L1 in one draw of four). Sorted by its siblings
		// first, each sibling block gets a's values in proportion.
		slices.SortStableFunc(others, func(x, y int) int {
			sx, sy := slices.Equal(parents[x], cond), slices.Equal(parents[y], cond)
			switch {
			case sx && sy:
				return cmp.Compare(step[y], step[x]) // the latest sibling first
			case sx:
				return -1
			case sy:
				return 1
			}
			return 0
		})
		parents[a], step[a] = cond, j
		// Deep keys mostly break ties within blocks of a few rows; at most
		// maxStrata of them bound the sort to that many counting passes on
		// wide tables. (The product of domain sizes is no guide to block
		// sizes: adult's capital-gain has 100 values but is 92% zero.)
		// The herding's keys are the first herdKeys of them (in this
		// order: siblings, then large domains), within herdCells.
		herding := herd.reset(cols, rowwise, d, others, dom, na, rows)
		others = others[:min(len(others), maxStrata)]
		stratify(order, tmp, cols, others, dom, rng)

		// Counting sort of the rows by their S values, stable in order.
		start := startBuf[:ns+1]
		clear(start)
		for r := range rows {
			s := 0
			for _, b := range cond {
				s = s*dom.sizes[b] + int(cols[b][r])
			}
			key[r] = int32(s)
			start[s+1]++
		}
		for s := range ns {
			start[s+1] += start[s]
		}
		next := nextBuf[:ns]
		copy(next, start)
		for _, r := range order {
			s := key[r]
			group[next[s]] = r
			next[s]++
		}
		counts := make([]int, na)
		for s := range ns {
			g := start[s+1] - start[s]
			if g == 0 {
				continue
			}
			round.counts(counts, marg[s*na:(s+1)*na], g, rng)
			if herding && herd.fits(g) {
				herd.deal(cols[a], group[start[s]:start[s+1]], counts, rng)
				continue
			}
			vals = appendValues(vals[:0], counts)
			deal(cols[a], group[start[s]:start[s+1]], vals, rng)
		}
		if rowwise != nil && j < len(fams)-1 { // the last is read by no later herding
			for r, v := range cols[a] {
				rowwise[r*d+a] = v
			}
		}
	}
	return cols, nil
}

// rowwiseBytes bounds the herding's row-wise copy of the generated values
// (herder): a synthesis of more rows × attributes herds from the columns,
// a fifth slower, rather than hold its rows twice. A variable for tests.
var rowwiseBytes = 64 << 20

// synthesisFamily is an attribute a that Synthesize generates given the
// attributes cond (ascending) generated before it, and the clique k that
// holds them all.
type synthesisFamily struct {
	a, k int
	cond []int
}

// synthesisFamilies returns the families in the order Synthesize generates
// them: the reverse elimination order, each attribute given those
// generated before it that share a clique with it.
func synthesisFamilies(jt *junctionTree) []synthesisFamily {
	d := len(jt.order)
	fams := make([]synthesisFamily, 0, d)
	for i := d - 1; i >= 0; i-- {
		a := jt.order[i]
		var cond []int
		for _, b := range slices.Backward(jt.order[i+1:]) {
			if jt.adjacent(a, b) {
				cond = append(cond, b)
			}
		}
		slices.Sort(cond)
		fam := append(slices.Clone(cond), a)
		slices.Sort(fam)
		k := jt.containing(fam)
		if k < 0 {
			panic("pgm: synthesis family outside every clique")
		}
		fams = append(fams, synthesisFamily{a: a, k: k, cond: cond})
	}
	return fams
}

// maxStrata is the most attributes Synthesize sorts rows by. The herding
// balances its keys whatever the order (adult at ε = 1, three models
// paired: rows' error the same sorted by 16 attributes or 4; wide30 the
// same by 16, 4 or 1), but takes rows that share key values one after the
// other, their counts in cache: sorted by 4, BenchmarkSynthesizeWide took
// 1.66–1.77 s against 1.28–1.33 s by 16.
const maxStrata = 16

// stratify writes into order the rows sorted by their values of attrs
// (attrs[0] most significant), ties broken by a random permutation: a
// least-significant-first radix sort of counting passes, each stable, with
// tmp (as long as order) as the second buffer.
func stratify(order, tmp []int32, cols [][]uint16, attrs []int, dom *Domain, rng *rand.Rand) {
	for i := range order {
		order[i] = int32(i)
	}
	rng.Shuffle(len(order), func(x, y int) { order[x], order[y] = order[y], order[x] })
	if len(attrs) == 0 {
		return
	}
	src, dst := order, tmp
	var count []int
	for _, b := range slices.Backward(attrs) {
		col := cols[b]
		n := dom.sizes[b]
		count = slices.Grow(count[:0], n+1)[:n+1]
		clear(count)
		for _, r := range src {
			count[col[r]+1]++
		}
		for v := 1; v <= n; v++ {
			count[v] += count[v-1]
		}
		for _, r := range src {
			v := col[r]
			dst[count[v]] = r
			count[v]++
		}
		src, dst = dst, src
	}
	copy(order, src) // a no-op when the passes ended in order
}

// appendValues appends to dst each value v counts[v] times, ascending: the
// values deal gives a group's rows.
func appendValues(dst []uint16, counts []int) []uint16 {
	for v, c := range counts {
		for range c {
			dst = append(dst, uint16(v))
		}
	}
	return dst
}

// weyl is the golden ratio's fractional part in 64-bit fixed point, odd so
// that k·weyl mod 2⁶⁴ differs for every k: the points k·weyl + u spread
// every run of consecutive k evenly around the circle.
const weyl = 0x9E3779B97F4A7C15

// deal gives the rows (in stratification order) the values vals (sorted
// ascending): the row at position k receives vals[(rank(k) + shift) mod g],
// where rank(k) is the rank of k·weyl + u (mod 2⁶⁴) among the g positions
// and u, shift are uniform. Every run of consecutive rows thus receives
// values from evenly spaced ranks, i.e. each value in proportion to its
// count within a small discrepancy, where a shuffle would give a
// hypergeometric draw; and each row's value is still uniform over vals
// (the random shift), so expected counts are exact as before.
//
// The positions are visited in rank order by the three-gap walk
// (weylWalk), in O(g): sorting them by their points took 60 % of
// Synthesize on a 30-attribute table.
func deal(col []uint16, rows []int32, vals []uint16, rng *rand.Rand) {
	g := len(rows)
	if g == 1 {
		col[rows[0]] = vals[0]
		return
	}
	u := rng.Uint64()
	shift := rng.IntN(g)
	k, up, down := weylWalk(g, u)
	// The position of rank j gets value index (j + shift) mod g.
	v := shift
	for range g {
		col[rows[k]] = vals[v]
		if v++; v == g {
			v = 0
		}
		k = weylNext(k, g, up, down)
	}
}

// weylWalk returns, for the points x_k = k·weyl + u (mod 2⁶⁴) of the
// positions k in [0, g), the position of the smallest point and the two
// steps of the three-gap theorem: up, the k ≥ 1 whose k·weyl is smallest,
// and down, the one whose k·weyl is largest. weylNext then walks the
// positions in increasing order of their points.
func weylWalk(g int, u uint64) (first, up, down int) {
	var (
		x      uint64 // k·weyl
		lo, hi = ^uint64(0), uint64(0)
		least  = ^uint64(0)
	)
	for k := range g {
		if k > 0 {
			if x < lo {
				lo, up = x, k
			}
			if x > hi {
				hi, down = x, k
			}
		}
		if y := x + u; y < least {
			least, first = y, k
		}
		x += weyl
	}
	return first, up, down
}

// weylNext is the position whose point follows position k's among g
// positions (Sós's three-gap theorem: the successor of k·α on the circle
// is at k + up, k − down or k + up − down, the first that is a position).
// The largest point's successor wraps around to the smallest.
func weylNext(k, g, up, down int) int {
	switch {
	case k+up < g:
		return k + up
	case k >= down:
		return k - down
	}
	return k + up - down
}

// adjacent reports whether attributes a and b share a clique.
func (jt *junctionTree) adjacent(a, b int) bool {
	for _, s := range jt.sets {
		if s.has(a) && s.has(b) {
			return true
		}
	}
	return false
}

// rounder allocates units to cells in proportion to weights; its buffers
// are reused from call to call (Synthesize makes one call per group of
// rows of every attribute).
type rounder struct {
	frac  []float64
	order []int
}

// counts writes into counts g units allocated in proportion to w:
// ⌊g·w/Σw⌋ each, plus one more for distinct cells chosen with probability
// equal to their fractional parts. A zero w is treated as uniform.
func (r *rounder) counts(counts []int, w []float64, g int, rng *rand.Rand) {
	var sum float64
	for _, x := range w {
		sum += x
	}
	n := len(w)
	frac := slices.Grow(r.frac[:0], n)[:n]
	r.frac = frac
	left := g
	for i, x := range w {
		share := float64(g) / float64(n)
		if sum > 0 {
			share = float64(g) * x / sum
		}
		f := math.Floor(share)
		counts[i] = int(f)
		frac[i] = share - f
		left -= counts[i]
	}
	if left <= 0 {
		return
	}
	// Systematic sampling over a random order: with u ~ U[0,1), cell i is
	// taken when the running sum of fractions crosses u + j for an integer j,
	// which happens with probability frac[i] and at most once.
	// rng.Perm(n), in the same draws, into the reused buffer.
	order := slices.Grow(r.order[:0], n)[:n]
	r.order = order
	for i := range order {
		order[i] = i
	}
	rng.Shuffle(n, func(i, j int) { order[i], order[j] = order[j], order[i] })
	u := rng.Float64()
	cum := 0.0
	taken := 0
	for _, i := range order {
		before := math.Floor(cum + u)
		cum += frac[i]
		if math.Floor(cum+u) > before && taken < left {
			counts[i]++
			frac[i] = -1
			taken++
		}
	}
	// Rounding in the running sum can leave a unit over: give it to the
	// largest remaining fraction.
	for ; taken < left; taken++ {
		best := 0
		for i := range frac {
			if frac[i] > frac[best] {
				best = i
			}
		}
		counts[best]++
		frac[best] = -1
	}
}
