package planner

import (
	"container/list"
	"encoding/binary"
	"math"
	"slices"
	"sync"
)

// DefaultCacheCells is the capacity of a ModelCache created with a
// non-positive capacity: 4 Mi cells, 32 MiB of marginals.
const DefaultCacheCells = 1 << 22

// ModelCache is a ModelSource that remembers the marginals a model computed,
// least recently used first out, up to a capacity in cells. Create one per
// model (a model is immutable, so its answers never go stale) and share it:
// it is safe for concurrent use, and concurrent requests for the same
// marginal compute it once. The slices it returns are shared and must not be
// modified; Execute does not modify them.
type ModelCache struct {
	m        ModelSource
	size     []int // domain size of each attribute
	capacity int

	mu       sync.Mutex
	cells    int                      // cells held
	lru      *list.List               // of *cacheEntry, most recent first
	entries  map[string]*list.Element // key → element of lru
	inflight map[string]*flight
	hits     uint64
	misses   uint64
}

type cacheEntry struct {
	key   string
	attrs []int // nil for MarginalWhere entries
	x     []float64
}

type flight struct {
	done chan struct{}
	x    []float64
}

var _ ModelSource = (*ModelCache)(nil)

// NewModelCache caches the marginals of m, a model over attributes with the
// given domain sizes (domain.Table.Sizes), up to capacity cells in all
// (DefaultCacheCells if capacity ≤ 0). A marginal larger than the capacity is
// computed every time.
func NewModelCache(m ModelSource, sizes []int, capacity int) *ModelCache {
	if capacity <= 0 {
		capacity = DefaultCacheCells
	}
	return &ModelCache{m: m, size: slices.Clone(sizes), capacity: capacity, lru: list.New(),
		entries: map[string]*list.Element{}, inflight: map[string]*flight{}}
}

// Total is the model's total.
func (c *ModelCache) Total() float64 { return c.m.Total() }

// Marginal is the model's Marginal, cached. A marginal that is not cached
// but is contained in a cached one of at most 2^18 cells (in any attribute
// order) is summed from the smallest such one instead of asking the model.
func (c *ModelCache) Marginal(attrs []int) []float64 {
	return c.getAttrs(cacheKey(attrs, nil), attrs, func() []float64 {
		if sup, x := c.superset(attrs); x != nil {
			return sumDown(x, sup, c.sizes(sup), attrs)
		}
		return c.m.Marginal(attrs)
	})
}

// sizes returns the domain sizes of attrs.
func (c *ModelCache) sizes(attrs []int) []int {
	out := make([]int, len(attrs))
	for i, a := range attrs {
		out[i] = c.size[a]
	}
	return out
}

// maxSumDown bounds the cells of a cached marginal that superset offers:
// summing down a larger one can cost more than the model's own clique
// projection.
const maxSumDown = 1 << 18

// superset returns the smallest cached marginal (Marginal entries only, at
// most maxSumDown cells) whose attributes contain attrs, or nil.
func (c *ModelCache) superset(attrs []int) (sup []int, x []float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for e := c.lru.Front(); e != nil; e = e.Next() {
		ce := e.Value.(*cacheEntry)
		if ce.attrs == nil || len(ce.attrs) < len(attrs) || len(ce.x) > maxSumDown || (x != nil && len(ce.x) >= len(x)) {
			continue
		}
		if containsAll(ce.attrs, attrs) {
			sup, x = ce.attrs, ce.x
		}
	}
	return sup, x
}

func containsAll(set, sub []int) bool {
	for _, a := range sub {
		if !slices.Contains(set, a) {
			return false
		}
	}
	return true
}

// sumDown sums the marginal x over attrs (with the given sizes, the last
// varying fastest) down to sub, a subset of attrs in any order, laid out in
// sub's order.
func sumDown(x []float64, attrs, sizes, sub []int) []float64 {
	n := 1
	for _, a := range sub {
		n *= sizes[slices.Index(attrs, a)]
	}
	// stride[k] is the stride in the output of attrs[k] (0 if summed out).
	stride := make([]int, len(attrs))
	s := 1
	for j := len(sub) - 1; j >= 0; j-- {
		k := slices.Index(attrs, sub[j])
		stride[k] = s
		s *= sizes[k]
	}
	out := make([]float64, n)
	idx := make([]int, len(attrs))
	o := 0
	for _, v := range x {
		out[o] += v
		for k := len(attrs) - 1; k >= 0; k-- {
			idx[k]++
			o += stride[k]
			if idx[k] < sizes[k] {
				break
			}
			o -= stride[k] * idx[k]
			idx[k] = 0
		}
	}
	return out
}

// MarginalWhere is the model's MarginalWhere, cached by attributes and
// evidence weights.
func (c *ModelCache) MarginalWhere(attrs []int, weight map[int][]float64) []float64 {
	return c.get(cacheKey(attrs, weight), func() []float64 { return c.m.MarginalWhere(attrs, weight) })
}

// Stats returns the number of cache hits and misses so far.
func (c *ModelCache) Stats() (hits, misses uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits, c.misses
}

func (c *ModelCache) get(key string, compute func() []float64) []float64 {
	return c.getAttrs(key, nil, compute)
}

// getAttrs returns the cached value of key, or computes and caches it;
// attrs is recorded for Marginal entries, so that later requests may sum
// them down.
func (c *ModelCache) getAttrs(key string, attrs []int, compute func() []float64) []float64 {
	c.mu.Lock()
	if e, ok := c.entries[key]; ok {
		c.lru.MoveToFront(e)
		c.hits++
		x := e.Value.(*cacheEntry).x
		c.mu.Unlock()
		return x
	}
	if f, ok := c.inflight[key]; ok {
		c.hits++
		c.mu.Unlock()
		<-f.done
		return f.x
	}
	c.misses++
	f := &flight{done: make(chan struct{})}
	c.inflight[key] = f
	c.mu.Unlock()

	defer func() {
		// Release waiters even if compute panics (they then see nil and
		// fail their shape check rather than hang).
		c.mu.Lock()
		delete(c.inflight, key)
		if f.x != nil && len(f.x) <= c.capacity {
			c.entries[key] = c.lru.PushFront(&cacheEntry{key: key, attrs: slices.Clone(attrs), x: f.x})
			c.cells += len(f.x)
			for c.cells > c.capacity {
				old := c.lru.Remove(c.lru.Back()).(*cacheEntry)
				delete(c.entries, old.key)
				c.cells -= len(old.x)
			}
		}
		c.mu.Unlock()
		close(f.done)
	}()
	f.x = compute()
	return f.x
}

// cacheKey encodes attrs and the evidence weights (attributes ascending)
// as a string.
func cacheKey(attrs []int, weight map[int][]float64) string {
	b := make([]byte, 0, 8*(len(attrs)+1))
	b = binary.AppendUvarint(b, uint64(len(attrs)))
	for _, a := range attrs {
		b = binary.AppendUvarint(b, uint64(a))
	}
	if weight == nil {
		return string(b)
	}
	b = append(b, 0xff)
	keys := make([]int, 0, len(weight))
	for a := range weight {
		keys = append(keys, a)
	}
	slices.Sort(keys)
	for _, a := range keys {
		w := weight[a]
		b = binary.AppendUvarint(b, uint64(a))
		b = binary.AppendUvarint(b, uint64(len(w)))
		for _, v := range w {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
		}
	}
	return string(b)
}
