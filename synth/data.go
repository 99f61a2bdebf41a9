package synth

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/dpsql/dpsql/synth/internal/marginal"
	"github.com/dpsql/dpsql/synth/pgm"
)

// Data is the one seam through which a mechanism reads the sensitive table:
// a marginal oracle. It answers count marginals over the public domain and
// nothing else, so that a table held in memory (*pgm.Dataset) and a table
// that stays in a remote database (the federated package, which pushes
// every marginal down as a GROUP BY) are interchangeable.
//
// Marginals answers every set of sets: each is a list of distinct attribute
// indexes, in any order, and its marginal is laid out in that order with
// the last attribute varying fastest. The caller owns the returned slices.
// A mechanism should ask for all the marginals it knows it will need in
// one call: a remote source answers one call with as few scans as it can.
type Data interface {
	Domain() *pgm.Domain
	Marginals(ctx context.Context, sets [][]int) ([][]float64, error)
}

// MarginalVisitor is implemented by a Data that computes marginals in
// groups (a remote source's scans) and can hand each over as soon as its
// group is complete. VisitMarginals answers sets as Marginals does, but
// calls fn once per set with its marginal (fn owns it), from one goroutine
// at a time, in any order; an error from fn stops the visit and is
// returned. A Cache uses it to compact each marginal as it arrives, so
// that a synthesis never holds its whole workload densely at once.
type MarginalVisitor interface {
	Data
	VisitMarginals(ctx context.Context, sets [][]int, fn func(i int, x []float64) error) error
}

// RecordMechanism is implemented by a Mechanism whose algorithm needs the
// records themselves, not only their marginals (it returns why). The engine
// refuses to run such a mechanism on a source that only answers marginals
// (a federated table), with that reason.
type RecordMechanism interface {
	NeedsRecords() string
}

// Records is the data of a mechanism that needs the records: the rows
// themselves, column-major codes over the domain. *pgm.Dataset implements
// it; remote sources do not.
type Records interface {
	Data
	Rows() int
	Column(i int) []uint16
}

var _ Records = (*pgm.Dataset)(nil)

// Cache is a Data that asks its source for every marginal once: it keeps
// what it was given, answers a set whose superset it holds by summing that
// superset (counts project exactly), and asks its source for the rest in
// one call. It is safe for concurrent use. Answers are copies, so callers
// may add noise to them in place. It holds what it was given sparsely when
// that is smaller (marginal.Compact): a table's large marginals are mostly
// zeros.
type Cache struct {
	src Data
	dom *pgm.Domain

	mu   sync.Mutex
	held map[string]marginal.Compact // by sorted-attribute key, sorted layout
	sets [][]int                     // the sorted sets held, for superset lookups
}

// NewCache wraps src. A *Cache passed to NewCache is returned as it is.
func NewCache(src Data) *Cache {
	if c, ok := src.(*Cache); ok {
		return c
	}
	return &Cache{src: src, dom: src.Domain(), held: map[string]marginal.Compact{}}
}

// Domain implements Data.
func (c *Cache) Domain() *pgm.Domain { return c.dom }

// Source is the wrapped data.
func (c *Cache) Source() Data { return c.src }

// Fetched is the number of distinct marginals the source was asked for.
func (c *Cache) Fetched() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.held)
}

// Marginals implements Data.
func (c *Cache) Marginals(ctx context.Context, sets [][]int) ([][]float64, error) {
	sorted, err := c.fetch(ctx, sets)
	if err != nil {
		return nil, err
	}
	out := make([][]float64, len(sets))
	err = c.each(sets, sorted, func(i int, h marginal.Compact, sup []int) {
		out[i] = reorder(c.dom, sorted[i], h.ProjectTo(nil, c.dom, sup, sorted[i]), sets[i])
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// each calls fn, under the lock, with the held marginal that answers each
// of sets (sorted: the same sets sorted) and the held marginal's set.
func (c *Cache) each(sets, sorted [][]int, fn func(i int, h marginal.Compact, sup []int)) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, s := range sets {
		sup := c.superset(sorted[i])
		if sup == nil {
			return fmt.Errorf("synth: marginal over %v missing after it was fetched", s)
		}
		fn(i, c.held[Key(sup)], sup)
	}
	return nil
}

// fetch checks sets, asks the source for the maximal ones not held yet,
// and returns each set sorted.
func (c *Cache) fetch(ctx context.Context, sets [][]int) ([][]int, error) {
	sorted, err := c.sorted(sets)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	var missing [][]int
	asked := map[string]bool{}
	for _, s := range sorted {
		k := Key(s)
		if asked[k] || c.superset(s) != nil {
			continue
		}
		asked[k] = true
		missing = append(missing, s)
	}
	c.mu.Unlock()
	// Ask for the maximal missing sets only: their subsets follow.
	missing = maximal(missing)
	if len(missing) > 0 {
		if err := c.ask(ctx, missing); err != nil {
			return nil, err
		}
	}
	return sorted, nil
}

// sorted checks sets and returns each sorted.
func (c *Cache) sorted(sets [][]int) ([][]int, error) {
	sorted := make([][]int, len(sets))
	for i, s := range sets {
		if err := checkSet(c.dom, s); err != nil {
			return nil, err
		}
		sorted[i] = slices.Sorted(slices.Values(s))
	}
	return sorted, nil
}

// checkCells reports a source's answer x for set s that has not s's cells.
func (c *Cache) checkCells(s []int, x []float64) error {
	if len(x) != c.dom.Cells(s) {
		return fmt.Errorf("synth: data answered %d cells for the marginal over %v, want %d", len(x), s, c.dom.Cells(s))
	}
	return nil
}

// has reports whether the marginal keyed k is held; c.mu must be held.
func (c *Cache) has(k string) bool {
	_, ok := c.held[k]
	return ok
}

// ask asks the source for missing (sorted sets, none held) and keeps each
// answer compacted as it arrives (Visit): from a MarginalVisitor, the
// dense answers are never all held at once.
func (c *Cache) ask(ctx context.Context, missing [][]int) error {
	keep := func(i int, x []float64) error {
		s := missing[i]
		if err := c.checkCells(s, x); err != nil {
			return err
		}
		m := marginal.NewCompact(x)
		c.mu.Lock()
		defer c.mu.Unlock()
		if k := Key(s); !c.has(k) {
			c.held[k] = m
			c.sets = append(c.sets, s)
		}
		return nil
	}
	return Visit(ctx, c.src, missing, keep)
}

// Visit hands the marginal of each of sets to fn, as
// MarginalVisitor.VisitMarginals does: through d's own VisitMarginals when
// d has one, else from one Marginals call, each answer let go once fn has
// it.
func Visit(ctx context.Context, d Data, sets [][]int, fn func(i int, x []float64) error) error {
	if v, ok := d.(MarginalVisitor); ok {
		return v.VisitMarginals(ctx, sets, fn)
	}
	got, err := d.Marginals(ctx, sets)
	if err != nil {
		return err
	}
	if len(got) != len(sets) {
		return fmt.Errorf("synth: data answered %d marginals for %d sets", len(got), len(sets))
	}
	for i, x := range got {
		got[i] = nil
		if err := fn(i, x); err != nil {
			return err
		}
	}
	return nil
}

// Lend hands fn the marginal of each of sets as Visit does, to an fn that
// is done with x when it returns (it keeps a copy, a sum or nothing): a
// *pgm.Dataset lends them in a buffer it reuses (LendMarginals) instead of
// allocating each; another source is visited. The test is the concrete
// type, not the method, so that a type wrapping a dataset to change its
// answers is asked through its own Marginals.
func Lend(ctx context.Context, d Data, sets [][]int, fn func(i int, x []float64) error) error {
	if ds, ok := d.(*pgm.Dataset); ok {
		return ds.LendMarginals(ctx, sets, fn)
	}
	return Visit(ctx, d, sets, fn)
}

// Stream hands fn the marginal of each of sets, laid out in the set's
// order, as a Compact that fn may keep but must not change: from what the
// cache holds when it holds the set or a superset, else fetched from the
// source (in one call, each as its scan ends, for a MarginalVisitor) and
// not kept. It is for a caller that keeps a whole synthesis's true answers
// itself (AIM's candidates, in a file): the counts are then never all in
// memory at once, here or there. fn is called once per set, from one
// goroutine at a time, in any order; an error from fn stops the stream and
// is returned.
func (c *Cache) Stream(ctx context.Context, sets [][]int, fn func(i int, m marginal.Compact) error) error {
	sorted, err := c.sorted(sets)
	if err != nil {
		return err
	}
	type fromHeld struct {
		i   int
		h   marginal.Compact
		sup []int
	}
	var (
		held  []fromHeld
		ask   [][]int // distinct sorted sets to fetch
		askOf [][]int // the indexes of sets each answers
	)
	byKey := map[string]int{}
	c.mu.Lock()
	for i, s := range sorted {
		if sup := c.superset(s); sup != nil {
			held = append(held, fromHeld{i, c.held[Key(sup)], sup})
			continue
		}
		k := Key(s)
		j, ok := byKey[k]
		if !ok {
			j = len(ask)
			byKey[k] = j
			ask, askOf = append(ask, s), append(askOf, nil)
		}
		askOf[j] = append(askOf[j], i)
	}
	c.mu.Unlock()
	for _, f := range held {
		m := f.h
		if !slices.Equal(f.sup, sets[f.i]) {
			m = marginal.NewCompact(reorder(c.dom, sorted[f.i], f.h.ProjectTo(nil, c.dom, f.sup, sorted[f.i]), sets[f.i]))
		}
		if err := fn(f.i, m); err != nil {
			return err
		}
	}
	if len(ask) == 0 {
		return nil
	}
	return Lend(ctx, c.src, ask, func(j int, x []float64) error {
		if err := c.checkCells(ask[j], x); err != nil {
			return err
		}
		for _, i := range askOf[j] {
			if err := fn(i, marginal.CompactOf(reorder(c.dom, ask[j], x, sets[i]))); err != nil {
				return err
			}
		}
		return nil
	})
}

// reorder returns marginal x over the sorted set from laid out in the
// order of to (the same attributes): x itself when the orders agree.
func reorder(dom *pgm.Domain, from []int, x []float64, to []int) []float64 {
	if slices.Equal(from, to) {
		return x
	}
	// stride[j]: the stride in x of to[j].
	stride := make([]int, len(to))
	for j, a := range to {
		st := 1
		for k := len(from) - 1; from[k] != a; k-- {
			st *= dom.Size(from[k])
		}
		stride[j] = st
	}
	out := make([]float64, len(x))
	idx := make([]int, len(to))
	src := 0
	for i := range out {
		out[i] = x[src]
		for j := len(to) - 1; j >= 0; j-- {
			idx[j]++
			src += stride[j]
			if idx[j] < dom.Size(to[j]) {
				break
			}
			src -= idx[j] * stride[j]
			idx[j] = 0
		}
	}
	return out
}

// superset returns the smallest held set that contains the sorted set s, or
// nil. The caller holds c.mu.
func (c *Cache) superset(s []int) []int {
	if _, ok := c.held[Key(s)]; ok {
		return c.sets[slices.IndexFunc(c.sets, func(h []int) bool { return slices.Equal(h, s) })]
	}
	var best []int
	for _, h := range c.sets {
		if (best == nil || c.dom.Cells(h) < c.dom.Cells(best)) && containsSorted(h, s) {
			best = h
		}
	}
	return best
}

// maximal drops every set contained in another of sets (all sorted).
func maximal(sets [][]int) [][]int {
	var out [][]int
	for i, s := range sets {
		covered := false
		for j, t := range sets {
			if i != j && len(t) > len(s) && containsSorted(t, s) {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, s)
		}
	}
	return out
}

// containsSorted reports whether sorted set sup contains sorted set sub.
func containsSorted(sup, sub []int) bool {
	i := 0
	for _, a := range sub {
		for i < len(sup) && sup[i] < a {
			i++
		}
		if i == len(sup) || sup[i] != a {
			return false
		}
		i++
	}
	return true
}

// checkSet reports whether s is a non-empty list of distinct attributes of
// dom.
func checkSet(dom *pgm.Domain, s []int) error {
	if len(s) == 0 {
		return fmt.Errorf("synth: marginal over no attributes")
	}
	for i, a := range s {
		if a < 0 || a >= dom.Len() {
			return fmt.Errorf("synth: attribute %d outside the domain of %d attributes", a, dom.Len())
		}
		if slices.Contains(s[:i], a) {
			return fmt.Errorf("synth: attribute %d repeated in %v", a, s)
		}
	}
	return nil
}
