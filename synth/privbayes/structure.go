package privbayes

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/pgm"
)

// candidate is an (attribute, parents) pair of one GreedyBayes step.
type candidate struct {
	attr    int
	parents []int // in placement order
}

// greedyBayes chooses the network. It returns the nodes in placement order
// and the ρ spent (ε²/8 per step with more than one candidate).
func greedyBayes(ctx context.Context, in *synth.Input, opt Options, eps, delta float64) ([]Node, float64, error) {
	dom := in.Data.Domain()
	d := dom.Len()
	// Structure choices that read no data use the noise source too: they
	// need no secrecy, but nothing about them may be user-seeded.
	rng := in.Noise.Rand()
	// The candidates' marginals are read once each and never again: ask
	// the cache's source directly, so that the cache neither keeps them
	// (up to MAX_CANDIDATES per step) nor scans them on every later call.
	src := in.Data
	if c, ok := src.(*synth.Cache); ok {
		src = c.Source()
	}
	first := rng.IntN(d)
	nodes := []Node{{Attr: first}}
	placed := []int{first}
	free := make([]bool, d)
	for a := range d {
		free[a] = a != first
	}
	var rho float64
	for step := 1; step < d; step++ {
		if err := ctx.Err(); err != nil {
			return nodes, rho, err
		}
		var cands []candidate
		if opt.Chordal {
			cands = chordalCandidates(dom, nodes, free, opt, rng)
		} else {
			cands = candidates(dom, placed, free, opt, rng)
		}
		pick := 0
		if opt.Degree == 0 {
			pick = rng.IntN(len(cands)) // the order does not matter
		} else if len(cands) > 1 {
			sets := make([][]int, len(cands))
			for i, c := range cands {
				sets[i] = append(slices.Clone(c.parents), c.attr) // X fastest
			}
			margs, err := src.Marginals(ctx, sets)
			if err != nil {
				return nodes, rho, fmt.Errorf("structure step %d: %w", step, err)
			}
			scores := make([]float64, len(cands))
			for i, c := range cands {
				scores[i] = Score(margs[i], dom.Size(c.attr), opt.MaxRows)
			}
			pick = in.Noise.Exponential(scores, eps, delta)
			rho += eps * eps / 8
		}
		c := cands[pick]
		nodes = append(nodes, Node{Attr: c.attr, Parents: c.parents})
		placed = append(placed, c.attr)
		free[c.attr] = false
		in.Report(synth.Status{Phase: "round", Round: step, RhoUsed: rho})
	}
	return nodes, rho, nil
}

// candidates lists the (X, Π) pairs of one step: every unplaced X with
// every Π ⊆ placed of size min(k, |placed|) whose marginal has at most
// MaxCells cells, falling back for an X to the largest smaller size that
// fits. Beyond MaxCandidates pairs, a uniform sample of that many
// distinct pairs is drawn instead.
func candidates(dom *pgm.Domain, placed []int, free []bool, opt Options, rng *rand.Rand) []candidate {
	k := min(opt.Degree, len(placed))
	var xs []int
	for a, f := range free {
		if f {
			xs = append(xs, a)
		}
	}
	fits := func(x int, ps []int) bool {
		cells := dom.Size(x)
		for _, p := range ps {
			cells *= dom.Size(p)
			if cells > opt.MaxCells {
				return false
			}
		}
		return true
	}
	// The number of size-k subsets bounds the enumeration.
	total := float64(len(xs)) * binomial(len(placed), k)
	if total <= float64(opt.MaxCandidates) {
		var out []candidate
		for _, x := range xs {
			for size := k; size >= 0; size-- {
				n := len(out)
				forSubsets(len(placed), size, func(idx []int) {
					ps := make([]int, len(idx))
					for i, j := range idx {
						ps[i] = placed[j]
					}
					if fits(x, ps) {
						out = append(out, candidate{x, ps})
					}
				})
				if len(out) > n {
					break
				}
			}
		}
		return out
	}
	// Sample: draw (X, Π) uniformly among size-k sets; pairs that do not
	// fit are replaced by the X's best-fitting prefix of Π.
	seen := map[string]bool{}
	var out []candidate
	for tries := 0; len(out) < opt.MaxCandidates && tries < 4*opt.MaxCandidates; tries++ {
		x := xs[rng.IntN(len(xs))]
		perm := rng.Perm(len(placed))[:k]
		slices.Sort(perm)
		ps := make([]int, 0, k)
		for _, j := range perm {
			ps = append(ps, placed[j])
		}
		for len(ps) > 0 && !fits(x, ps) {
			ps = ps[:len(ps)-1]
		}
		key := fmt.Sprint(x, ps)
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, candidate{x, ps})
	}
	return out
}

// forSubsets calls f with every size-k subset of [0, n) as ascending
// indexes (f must not keep the slice).
func forSubsets(n, k int, f func([]int)) {
	idx := make([]int, k)
	var rec func(pos, from int)
	rec = func(pos, from int) {
		if pos == k {
			f(idx)
			return
		}
		for i := from; i <= n-(k-pos); i++ {
			idx[pos] = i
			rec(pos+1, i+1)
		}
	}
	rec(0, 0)
}

func binomial(n, k int) float64 {
	if k < 0 || k > n {
		return 0
	}
	r := 1.0
	for i := range k {
		r = r * float64(n-i) / float64(i+1)
	}
	return r
}

// Score is min(n, N̄)·I(X; Π) in nats for a count table over Π × X laid
// out with X varying fastest (sx values): I computed from the empirical
// distribution, n the table's total.
func Score(table []float64, sx int, maxRows float64) float64 {
	var n float64
	for _, c := range table {
		n += c
	}
	if n <= 0 {
		return 0
	}
	return min(n, maxRows) / n * CountMI(table, sx)
}

// CountMI is n·I(X; Π) = Σ c log c − Σ c_π log c_π − Σ c_x log c_x + n log n
// for a count table over Π × X (X fastest, sx values).
func CountMI(table []float64, sx int) float64 {
	cx := make([]float64, sx)
	var s, n float64
	for i := 0; i < len(table); i += sx {
		var cp float64
		for x, c := range table[i : i+sx] {
			cp += c
			cx[x] += c
			s += xlogx(c)
		}
		s -= xlogx(cp)
		n += cp
	}
	for _, c := range cx {
		s -= xlogx(c)
	}
	s += xlogx(n)
	return max(s, 0) // rounding
}

func xlogx(c float64) float64 {
	if c <= 0 {
		return 0
	}
	return c * math.Log(c)
}

// chordalCandidates lists the (X, Π) pairs of one step whose Π lies inside
// the attribute set {X_j} ∪ Π_j of some placed node j (any Π of at most one
// attribute does). Adding X joined to such a Π keeps the network's
// moral graph chordal with the sets {X_i} ∪ Π_i as its maximal cliques, so
// Private-PGM's junction tree is exactly those sets and stays as small as
// the measurements (unrestricted parent sets make it grow without bound on
// wide tables). Parent sets are of size min(k, placed), falling back per X
// to the largest smaller size that fits MaxCells; beyond MaxCandidates
// pairs a uniform sample without replacement is kept.
func chordalCandidates(dom *pgm.Domain, nodes []Node, free []bool, opt Options, rng *rand.Rand) []candidate {
	k := min(opt.Degree, len(nodes))
	// Distinct parent sets of each size, drawn from the node sets.
	bySize := make([][][]int, k+1)
	seen := map[string]bool{}
	for _, nd := range nodes {
		set := append(slices.Clone(nd.Parents), nd.Attr)
		slices.Sort(set)
		for size := 0; size <= min(k, len(set)); size++ {
			forSubsets(len(set), size, func(idx []int) {
				ps := make([]int, len(idx))
				for i, j := range idx {
					ps[i] = set[j]
				}
				key := fmt.Sprint(ps)
				if !seen[key] {
					seen[key] = true
					bySize[size] = append(bySize[size], ps)
				}
			})
		}
	}
	fits := func(x int, ps []int) bool {
		cells := dom.Size(x)
		for _, p := range ps {
			cells *= dom.Size(p)
			if cells > opt.MaxCells {
				return false
			}
		}
		return true
	}
	var out []candidate
	for x, f := range free {
		if !f {
			continue
		}
		for size := k; size >= 0; size-- {
			n := len(out)
			for _, ps := range bySize[size] {
				if fits(x, ps) {
					out = append(out, candidate{x, ps})
				}
			}
			if len(out) > n {
				break
			}
		}
	}
	if len(out) > opt.MaxCandidates {
		perm := rng.Perm(len(out))[:opt.MaxCandidates]
		slices.Sort(perm)
		kept := make([]candidate, len(perm))
		for i, j := range perm {
			kept[i] = out[j]
		}
		out = kept
	}
	return out
}
