package aim

import (
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/dpsql/dpsql/synth/internal/marginal"
	"github.com/dpsql/dpsql/synth/pgm"
)

// Coarse twins (docs/aim-performance.md, "Issue 19, third pass"). A
// candidate over an attribute with more than `bins` values gets a twin over
// the same attributes whose large ones are grouped into `bins` equal-width
// bins of their codes. A twin is selected and measured like any candidate:
// binning is a partition of the marginal's cells, so the coarse marginal Q·M
// has the same L1 (and L2) sensitivity 1 as M, its score is the same
// quality function on fewer cells and its measurement costs the round's σ
// as any other. It enters Private-PGM as the Kronecker measurement
// y = (⊗ Q_j)·M_r + z on the clique of its fine attributes, so the model,
// its junction tree and the capacity filter are the fine set's. At ε = 1 a
// round's σ is too large for the full marginal of age × marital × income
// (1 190 cells) to pay its noise; its twin with age in 20 bins (280 cells) does.

// coarseMaps returns, per attribute of dom, the bin of each value when the
// attribute has more than bins values (nil otherwise, and for bins ≤ 0).
func coarseMaps(dom *pgm.Domain, bins int) [][]int {
	out := make([][]int, dom.Len())
	if bins <= 0 {
		return out
	}
	for a := range out {
		n := dom.Size(a)
		if n <= bins {
			continue
		}
		m := make([]int, n)
		for v := range m {
			m[v] = v * bins / n // equal width: each bin holds ⌊n/bins⌋ or ⌈n/bins⌉ values
		}
		out[a] = m
	}
	return out
}

// coarsening is a twin's binning of its attributes.
type coarsening struct {
	maps  [][]int // per attribute of the candidate, nil for the identity
	sizes []int   // the coarse sizes (the fine size for the identity)
	fine  []int   // the fine sizes
	cells int     // ∏ sizes
}

func newCoarsening(dom *pgm.Domain, attrs []int, maps [][]int, bins int) *coarsening {
	c := &coarsening{maps: make([][]int, len(attrs)), sizes: make([]int, len(attrs)), fine: make([]int, len(attrs)), cells: 1}
	for j, a := range attrs {
		c.fine[j] = dom.Size(a)
		c.sizes[j] = c.fine[j]
		if maps[a] != nil {
			c.maps[j] = maps[a]
			c.sizes[j] = bins
		}
		c.cells *= c.sizes[j]
	}
	return c
}

// apply writes Q·x into dst (grown to c.cells) and returns it: x is a fine
// marginal laid out row-major over the candidate's attributes. It allocates
// only when dst is too short, so the scoring workers can reuse one buffer.
// observed returns the marginal x on c's attributes as c's measurement
// observes it: x itself for a fine candidate, binned into dst for a twin.
func (c *candidate) observed(dst, x []float64) []float64 {
	if c.coarse == nil {
		return x
	}
	return c.coarse.apply(dst, x)
}

// Scoring bins every eligible twin's model marginal each round, so the
// inner loop runs along the last attribute with one lookup per cell; an
// odometer over the other attributes keeps the row's coarse offset.
func (c *coarsening) apply(dst, x []float64) []float64 {
	if cap(dst) < c.cells {
		dst = make([]float64, c.cells)
	}
	dst = dst[:c.cells]
	clear(dst)
	last := len(c.fine) - 1
	nl, lmap := c.fine[last], c.maps[last]
	var idx [16]int
	digits := idx[:0]
	if last > len(idx) {
		digits = make([]int, 0, last)
	}
	digits = digits[:last]
	clear(digits)
	for lo := 0; lo < len(x); lo += nl {
		base := 0
		for j, d := range digits {
			if m := c.maps[j]; m != nil {
				d = m[d]
			}
			base = base*c.sizes[j] + d
		}
		base *= c.sizes[last]
		row, out := x[lo:lo+nl], dst[base:base+c.sizes[last]]
		if lmap == nil {
			for v, y := range row {
				out[v] += y
			}
		} else {
			lmap = lmap[:len(row)]
			for v, y := range row {
				out[lmap[v]] += y
			}
		}
		for j := last - 1; j >= 0; j-- {
			digits[j]++
			if digits[j] < c.fine[j] {
				break
			}
			digits[j] = 0
		}
	}
	return dst
}

// kron returns Q's factors: the 0/1 bin-membership matrix (bins × n) of a
// binned attribute, nil (the identity) for the others.
func (c *coarsening) kron() []*mat.Dense {
	f := make([]*mat.Dense, len(c.maps))
	for j, m := range c.maps {
		if m == nil {
			continue
		}
		q := mat.NewDense(c.sizes[j], c.fine[j], nil)
		for v, b := range m {
			q.Set(b, v, 1)
		}
		f[j] = q
	}
	return f
}

// addTwins appends to cands (and store, their true marginals) the coarse
// twin of every candidate with an attribute of more than bins values. The
// twins come after every fine candidate, so fine indexes are unchanged.
func addTwins(dom *pgm.Domain, cands []candidate, store *answerStore, bins int) ([]candidate, error) {
	maps := coarseMaps(dom, bins)
	n := len(cands)
	var buf, coarse []float64
	for i := range n {
		c := cands[i]
		twin := false
		for _, a := range c.attrs {
			twin = twin || maps[a] != nil
		}
		if !twin {
			continue
		}
		c.coarse = newCoarsening(dom, c.attrs, maps, bins)
		c.key += "#coarse"
		var err error
		if buf, err = store.Expand(i, buf); err != nil {
			return nil, err
		}
		coarse = c.coarse.apply(coarse, buf)
		store.put(len(cands), marginal.NewCompact(slices.Clone(coarse)))
		cands[i].twin = len(cands)
		cands = append(cands, c)
	}
	return cands, nil
}
