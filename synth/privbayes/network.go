package privbayes

import (
	"context"
	"fmt"
	"slices"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/pgm"
)

// Network is PrivBayes' estimate: one conditional probability table per
// attribute, in placement order.
type Network struct {
	dom   *pgm.Domain
	nodes []Node
	// cpt[i] is P(X_i | Π_i) over Π_i × X_i (X fastest, parents in
	// Node.Parents order); every row sums to 1.
	cpt [][]float64
}

// NewNetwork reads the conditional tables from the measurements: each
// measured table truncated at 0 and projected onto X_i ∪ Π_i, each row
// normalised (uniform where it has no mass). Every X_i ∪ Π_i must lie in
// some measurement.
func NewNetwork(dom *pgm.Domain, nodes []Node, meas []pgm.Measurement) (*Network, error) {
	trunc := make([][]float64, len(meas))
	for i, m := range meas {
		t := slices.Clone(m.Y)
		for j, v := range t {
			t[j] = max(v, 0)
		}
		trunc[i] = t
	}
	net := &Network{dom: dom, nodes: nodes, cpt: make([][]float64, len(nodes))}
	for i, nd := range nodes {
		order := append(slices.Clone(nd.Parents), nd.Attr)
		need := slices.Sorted(slices.Values(order))
		k := slices.IndexFunc(meas, func(m pgm.Measurement) bool { return subset(need, m.Attrs) })
		if k < 0 {
			return nil, fmt.Errorf("no measurement holds %v", need)
		}
		t := ProjectOrdered(dom, meas[k].Attrs, trunc[k], order)
		sx := dom.Size(nd.Attr)
		for r := 0; r < len(t); r += sx {
			row := t[r : r+sx]
			var s float64
			for _, v := range row {
				s += v
			}
			for j := range row {
				if s > 0 {
					row[j] /= s
				} else {
					row[j] = 1 / float64(sx)
				}
			}
		}
		net.cpt[i] = t
	}
	return net, nil
}

// CPT returns P(X_i | Π_i) of the i-th node (placement order).
func (n *Network) CPT(i int) []float64 { return n.cpt[i] }

// Sample draws rows records ancestrally with in.Post (post-processing).
func (n *Network) Sample(ctx context.Context, in *synth.Input, rows int) ([][]uint16, error) {
	rng := in.Post()
	out := make([][]uint16, n.dom.Len())
	for a := range out {
		out[a] = make([]uint16, rows)
	}
	for i, nd := range n.nodes {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		sx := n.dom.Size(nd.Attr)
		col := out[nd.Attr]
		cpt := n.cpt[i]
		for r := range rows {
			idx := 0
			for _, p := range nd.Parents {
				idx = idx*n.dom.Size(p) + int(out[p][r])
			}
			row := cpt[idx*sx : (idx+1)*sx]
			u := rng.Float64()
			v := 0
			for ; v < sx-1; v++ {
				u -= row[v]
				if u < 0 {
					break
				}
			}
			col[r] = uint16(v)
		}
	}
	return out, nil
}

// ProjectOrdered sums the table over the sorted set attrs onto the listed
// attributes (a subset, any order), laid out in that order, last fastest.
func ProjectOrdered(dom *pgm.Domain, attrs []int, table []float64, order []int) []float64 {
	// stride[j] is the stride in the output of attrs[j] (0 if summed out).
	stride := make([]int, len(attrs))
	st := 1
	for j := len(order) - 1; j >= 0; j-- {
		k := slices.Index(attrs, order[j])
		if k < 0 {
			panic("privbayes: projection onto an attribute outside the table")
		}
		stride[k] = st
		st *= dom.Size(order[j])
	}
	out := make([]float64, st)
	idx := make([]int, len(attrs))
	o := 0
	for _, v := range table {
		out[o] += v
		for j := len(attrs) - 1; j >= 0; j-- {
			idx[j]++
			o += stride[j]
			if idx[j] < dom.Size(attrs[j]) {
				break
			}
			o -= idx[j] * stride[j]
			idx[j] = 0
		}
	}
	return out
}
