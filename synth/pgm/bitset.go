package pgm

import "math/bits"

// bitset is a set of attribute indices.
type bitset []uint64

func newBitset(n int) bitset { return make(bitset, (n+63)/64) }

func bitsetOf(n int, attrs []int) bitset {
	b := newBitset(n)
	for _, a := range attrs {
		b.set(a)
	}
	return b
}

func (b bitset) set(i int)      { b[i>>6] |= 1 << (uint(i) & 63) }
func (b bitset) clear(i int)    { b[i>>6] &^= 1 << (uint(i) & 63) }
func (b bitset) has(i int) bool { return b[i>>6]&(1<<(uint(i)&63)) != 0 }

// or sets b to b ∪ c.
func (b bitset) or(c bitset) {
	for i := range b {
		b[i] |= c[i]
	}
}

// subsetOf reports whether b ⊆ c.
func (b bitset) subsetOf(c bitset) bool {
	for i := range b {
		if b[i]&^c[i] != 0 {
			return false
		}
	}
	return true
}

func (b bitset) empty() bool {
	for _, w := range b {
		if w != 0 {
			return false
		}
	}
	return true
}

func (b bitset) count() int {
	n := 0
	for _, w := range b {
		n += bits.OnesCount64(w)
	}
	return n
}

// attrs lists the members in ascending order.
func (b bitset) attrs() []int {
	out := make([]int, 0, b.count())
	for i, w := range b {
		for w != 0 {
			t := bits.TrailingZeros64(w)
			out = append(out, i*64+t)
			w &= w - 1
		}
	}
	return out
}

// within returns the members of b among attrs, in attrs' order (a clique's
// attributes kept by a query, say).
func (b bitset) within(attrs []int) []int {
	var out []int
	for _, a := range attrs {
		if b.has(a) {
			out = append(out, a)
		}
	}
	return out
}

// cells is the product of the domain sizes of the members, as a float64 so
// that it cannot overflow.
func (b bitset) cells(dom *Domain) float64 {
	c := 1.0
	for i, w := range b {
		for w != 0 {
			c *= float64(dom.sizes[i*64+bits.TrailingZeros64(w)])
			w &= w - 1
		}
	}
	return c
}

func (b bitset) clone() bitset { return append(bitset(nil), b...) }
