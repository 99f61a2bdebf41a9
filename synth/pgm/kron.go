package pgm

import (
	"gonum.org/v1/gonum/mat"
)

// kronOp applies a Kronecker product of per-attribute factors to a table
// laid out row-major over the attributes (the last varying fastest), one
// mode product per non-identity factor. Factors are kept as their non-zero
// entries, so a sparse factor (a hierarchy, a 0/1 evidence row) costs its
// non-zeros, not its size.
type kronOp struct {
	sizes []int // n_j, the attribute sizes
	rows  []int // r_j (n_j for an identity factor)
	nz    [][]kronEntry
	a, b  []float64 // ping-pong buffers for the intermediate tables
	cur   []int     // the current table's shape (apply's scratch)
}

type kronEntry struct {
	i, l int // row, column
	v    float64
}

func newKronOp(factors []*mat.Dense, sizes []int) *kronOp {
	k := &kronOp{sizes: sizes, rows: make([]int, len(sizes)), nz: make([][]kronEntry, len(sizes)), cur: make([]int, len(sizes))}
	for j, f := range factors {
		k.rows[j] = sizes[j]
		if f == nil {
			continue
		}
		r, c := f.Dims()
		if c != sizes[j] {
			panic("pgm: Kronecker factor has the wrong number of columns")
		}
		k.rows[j] = r
		var nz []kronEntry
		for i := range r {
			for l := range c {
				if v := f.At(i, l); v != 0 {
					nz = append(nz, kronEntry{i, l, v})
				}
			}
		}
		if nz == nil {
			nz = []kronEntry{} // a zero factor still maps to r rows
		}
		k.nz[j] = nz
	}
	// The largest intermediate table, over either direction.
	peak := 1
	for _, n := range sizes {
		peak *= n
	}
	for _, order := range []bool{false, true} {
		cur := append([]int(nil), sizes...)
		if order {
			copy(cur, k.rows)
		}
		for j := range sizes {
			if k.nz[j] == nil {
				continue
			}
			if order {
				cur[j] = sizes[j]
			} else {
				cur[j] = k.rows[j]
			}
			p := 1
			for _, n := range cur {
				p *= n
			}
			peak = max(peak, p)
		}
	}
	k.a, k.b = make([]float64, peak), make([]float64, peak)
	return k
}

// outLen is the number of queries, ∏ r_j.
func (k *kronOp) outLen() int {
	p := 1
	for _, r := range k.rows {
		p *= r
	}
	return p
}

// apply writes Q·x (transpose false: x over the cells, dst over the
// queries) or Qᵀ·x (transpose true) into dst and returns it. It uses the
// op's buffers, so it is not safe for concurrent use.
func (k *kronOp) apply(dst, x []float64, transpose bool) []float64 {
	cur := k.cur
	if transpose {
		copy(cur, k.rows)
	} else {
		copy(cur, k.sizes)
	}
	n := 1
	for _, s := range cur {
		n *= s
	}
	src := x
	buf, other := k.a, k.b
	for j := range cur {
		if k.nz[j] == nil {
			continue
		}
		inner := 1
		for _, s := range cur[j+1:] {
			inner *= s
		}
		outer := n / (cur[j] * inner)
		from, to := cur[j], k.rows[j]
		if transpose {
			from, to = k.rows[j], k.sizes[j]
		}
		out := buf[:outer*to*inner]
		clear(out)
		for o := range outer {
			xs := src[o*from*inner : (o+1)*from*inner]
			ys := out[o*to*inner : (o+1)*to*inner]
			for _, e := range k.nz[j] {
				i, l := e.i, e.l
				if transpose {
					i, l = l, i
				}
				yr := ys[i*inner : (i+1)*inner]
				xr := xs[l*inner : (l+1)*inner]
				for t, v := range xr {
					yr[t] += e.v * v
				}
			}
		}
		cur[j] = to
		n = outer * to * inner
		src = out
		buf, other = other, buf
	}
	if len(dst) < n {
		dst = make([]float64, n)
	}
	dst = dst[:n]
	copy(dst, src)
	return dst
}

// KronMul returns Q·x for the Kronecker product Q = factors[0] ⊗ … of
// per-attribute factors (nil = identity) over attributes of the given
// sizes, x laid out row-major over the attributes; with transpose, Qᵀ·x for
// x over the queries. A nil factors slice is the identity.
func KronMul(factors []*mat.Dense, sizes []int, x []float64, transpose bool) []float64 {
	if factors == nil {
		factors = make([]*mat.Dense, len(sizes))
	}
	if len(factors) != len(sizes) {
		panic("pgm: one Kronecker factor per attribute")
	}
	return newKronOp(factors, sizes).apply(nil, x, transpose)
}
