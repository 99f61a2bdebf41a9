package mst

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/independent"
	"github.com/dpsql/dpsql/synth/internal/marginal"
	"github.com/dpsql/dpsql/synth/internal/synthtest"
	"github.com/dpsql/dpsql/synth/noise"
	"github.com/dpsql/dpsql/synth/pgm"
)

// TestCompression checks the compression maps, the re-expressed 1-way
// measurement, spreading and expansion against direct computations.
func TestCompression(t *testing.T) {
	dom, _ := pgm.NewDomain([]string{"a", "b"}, []int{5, 3})
	noisy := [][]float64{{10, 1, 12, -2, 0.5}, {9, 10, 11}}
	c, err := compress(dom, noisy, 3)
	if err != nil {
		t.Fatal(err)
	}
	if c.dom.Size(0) != 3 || c.dom.Size(1) != 3 {
		t.Fatalf("compressed sizes %d, %d; want 3 (2 kept + other), 3 (unchanged)", c.dom.Size(0), c.dom.Size(1))
	}
	if !slices.Equal(c.code[0], []int{0, 2, 1, 2, 2}) || !slices.Equal(c.merged[0], []int{1, 3, 4}) {
		t.Errorf("codes %v merged %v", c.code[0], c.merged[0])
	}
	m := c.oneWay(0, noisy[0], 2)
	k := math.Sqrt(3)
	if !slices.Equal(m.Y, []float64{10, 12, (1 - 2 + 0.5) / k}) || m.Query.At(2, 2) != 1/k || m.Query.At(0, 0) != 1 {
		t.Errorf("re-expressed measurement Y = %v", m.Y)
	}
	if m2 := c.oneWay(1, noisy[1], 2); m2.Query != nil {
		t.Error("uncompressed attribute got a query matrix")
	}
	// Spreading conserves mass per compressed cell and is uniform inside
	// merged cells.
	x := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9} // over (a, b) compressed: 3×3
	full := c.spread(dom, []int{0, 1}, x)
	back := make([]float64, 9)
	for va := range 5 {
		for vb := range 3 {
			back[c.code[0][va]*3+vb] += full[va*3+vb]
		}
	}
	if marginal.L1(back, x) > 1e-12 {
		t.Errorf("spread does not sum back: %v vs %v", back, x)
	}
	if full[1*3+0] != full[3*3+0] || math.Abs(full[1*3+0]-7.0/3) > 1e-15 {
		t.Errorf("merged values not uniform: %v", full)
	}
	// Expansion: kept codes map back, "other" becomes a merged value, and
	// all merged values occur.
	col := make([]uint16, 3000)
	for i := range col {
		col[i] = uint16(i % 3)
	}
	orig := slices.Clone(col)
	cols := [][]uint16{slices.Clone(col), slices.Clone(col)}
	rng := rand.New(rand.NewPCG(1, 1))
	c.expand(cols, rng.IntN)
	count := make([]int, 5)
	for i, v := range cols[0] {
		count[v]++
		switch i % 3 {
		case 0:
			if v != 0 {
				t.Fatalf("code 0 became %d", v)
			}
		case 1:
			if v != 2 {
				t.Fatalf("code 1 became %d", v)
			}
		case 2:
			if !slices.Contains(c.merged[0], int(v)) {
				t.Fatalf("other became unmerged value %d", v)
			}
		}
	}
	for _, v := range c.merged[0] {
		if count[v] < 250 { // expect 333 each
			t.Errorf("merged value %d drawn %d times of 1000", v, count[v])
		}
	}
	if !slices.Equal(cols[1], orig) {
		t.Error("uncompressed column changed")
	}
}

func testInput(seed int64) *synth.Input {
	return &synth.Input{
		// Attribute 4 has 12 values of which the chain only makes the
		// first few common, so compression kicks in.
		Data:  synthtest.Chain(4, 3000, []int{3, 5, 4, 2, 12, 3}),
		Rho:   0.3,
		Noise: noise.Derive([]byte("mst test secret, thirty-two bytes"), seed, "t"),
	}
}

func TestRun(t *testing.T) {
	in := testInput(1)
	r, _ := Mechanism{}.New([]synth.Option{{Name: "PGM_ITERS", Value: 300}})
	res, err := r.Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	synthtest.CheckResult(t, synth.SyntheticData, in, res)
	d := in.Data.Domain().Len()
	if math.Abs(res.RhoUsed-in.Rho) > 1e-12 {
		t.Errorf("ρ used %v, want %v", res.RhoUsed, in.Rho)
	}
	// d 1-way and d−1 2-way measurements; the 2-way ones form a spanning tree.
	var edges [][]int
	for _, m := range res.Measurements {
		if len(m.Attrs) == 2 {
			edges = append(edges, m.Attrs)
		}
	}
	if len(res.Measurements) != 2*d-1 || len(edges) != d-1 {
		t.Fatalf("%d measurements (%d 2-way), want %d and %d", len(res.Measurements), len(edges), 2*d-1, d-1)
	}
	uf := newUnionFind(d)
	for _, e := range edges {
		if uf.find(e[0]) == uf.find(e[1]) {
			t.Errorf("edge %v closes a cycle", e)
		}
		uf.union(e[0], e[1])
	}
	// Recompute the budget from the releases: stacked sensitivities sqrt(d)
	// and sqrt(d−1), d−1 selections.
	var spent float64
	for _, m := range res.Measurements {
		k := float64(d)
		if len(m.Attrs) == 2 {
			k = float64(d - 1)
			spent += m.Epsilon * m.Epsilon / 8
		}
		spent += 1 / (2 * m.Sigma * m.Sigma / k) / k
	}
	if math.Abs(spent-in.Rho) > 1e-9 {
		t.Errorf("releases cost %v, want %v", spent, in.Rho)
	}

	ind, _ := independent.Mechanism{}.New(nil)
	ires, err := ind.Run(context.Background(), testInput(1))
	if err != nil {
		t.Fatal(err)
	}
	w := synthtest.AllK(d, 2)
	sets := make([][]int, len(w))
	for i, m := range w {
		sets[i] = m.Attrs
	}
	em := synthtest.Error(t, in.Data, sets, res.Rows)
	ei := synthtest.Error(t, in.Data, sets, ires.Rows)
	t.Logf("2-way workload error: MST %.4f, Independent %.4f", em, ei)
	if em > 0.75*ei {
		t.Errorf("MST error %.4f not well below Independent's %.4f", em, ei)
	}
}

func TestCancel(t *testing.T) {
	r, _ := Mechanism{}.New(nil)
	synthtest.CheckCancel(t, r, testInput(2))
}
