package pgm

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// The herder deals each value exactly its count, and the rows of every
// value of every key receive each value in proportion within a few
// records, where dealing in stratification order (deal) balances the first
// sort key only and a shuffle none (here, rows in a random order: 15–26
// records off against 1.7–2.6).
func TestHerdBalancesEveryKey(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	sizes := []int{12, 2, 9, 5, 3, 7, 4}
	names := []string{"a", "b", "c", "d", "e", "f", "v"}
	dom, err := NewDomain(names, sizes)
	if err != nil {
		t.Fatal(err)
	}
	const g, na = 3000, 4
	keys := []int{0, 1, 2, 3, 4, 5}
	d := len(sizes)
	rowwise := make([]uint16, g*d)
	for r := range g {
		for _, k := range keys {
			// Skewed keys: value u with weight u+1.
			w := rng.IntN(sizes[k] * (sizes[k] + 1) / 2)
			u := 0
			for w >= u+1 {
				w -= u + 1
				u++
			}
			rowwise[r*d+k] = uint16(u)
		}
	}
	counts := []int{1500, 900, 599, 1}
	rows := make([]int32, g)
	for i := range rows {
		rows[i] = int32(i)
	}
	var h herder
	for run := range 4 {
		rng.Shuffle(g, func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
		col := make([]uint16, g)
		if !h.reset(nil, rowwise, d, keys, dom, na, g) {
			t.Fatal("no key kept")
		}
		h.deal(col, rows, counts, rng)
		got := make([]int, na)
		for _, v := range col {
			got[v]++
		}
		for v := range na {
			if got[v] != counts[v] {
				t.Fatalf("run %d: value %d dealt %d times, want %d", run, v, got[v], counts[v])
			}
		}
		worst := worstImbalance(rowwise, d, keys, sizes, col, counts)
		if worst > 4 {
			t.Errorf("run %d: a key value's rows are off by %.2f records, want ≤ 4", run, worst)
		}
		// The stratified deal, for contrast: off by far more on some key.
		deal(col, rows, appendValues(nil, counts), rng)
		if w := worstImbalance(rowwise, d, keys, sizes, col, counts); w < 3*worst {
			t.Errorf("run %d: dealt without herding, off by %.2f, against %.2f herded", run, w, worst)
		}
	}
	// Reused for a group of other keys and values: no counts carried over.
	col := make([]uint16, g)
	h.reset(nil, rowwise, d, []int{2}, dom, 2, 10)
	h.deal(col, rows[:10], []int{5, 5}, rng)
	n := 0
	for _, r := range rows[:10] {
		n += int(col[r])
	}
	if n != 5 {
		t.Errorf("a reused herder dealt value 1 %d times, want 5", n)
	}
}

// worstImbalance is the largest |dealt(u, v) − n(u)·q_v/g| over the keys'
// values u and the values v.
func worstImbalance(rowwise []uint16, d int, keys, sizes []int, col []uint16, counts []int) float64 {
	g := len(col)
	worst := 0.0
	for _, k := range keys {
		n := make([]int, sizes[k])
		dealt := make([]int, sizes[k]*len(counts))
		for r := range g {
			u := int(rowwise[r*d+k])
			n[u]++
			dealt[u*len(counts)+int(col[r])]++
		}
		for u := range sizes[k] {
			for v, q := range counts {
				want := float64(n[u]) * float64(q) / float64(g)
				worst = max(worst, math.Abs(float64(dealt[u*len(counts)+v])-want))
			}
		}
	}
	return worst
}

// reset keeps at most herdKeys keys, in the order given, leaves out those
// whose counts would pass herdCells, and keeps fewer (or none) for an
// attribute of many values (herdRowCells).
func TestHerdKeysWithinBounds(t *testing.T) {
	sizes := make([]int, 20)
	names := make([]string, 20)
	for i := range sizes {
		sizes[i], names[i] = 3, string(rune('a'+i))
	}
	sizes[1] = 1 << 16 // its counts pass the bound for na ≥ 64
	dom, err := NewDomain(names, sizes)
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]int, 19)
	for i := range keys {
		keys[i] = i + 1
	}
	var h herder
	if !h.reset(nil, nil, 20, keys, dom, 100, 100) {
		t.Fatal("no key kept")
	}
	want := append([]int{}, keys[1:herdKeys+1]...) // without attribute 1
	if len(h.keys) != herdKeys || h.keys[0] != want[0] || h.keys[herdKeys-1] != want[herdKeys-1] {
		t.Errorf("kept keys %v, want %v", h.keys, want)
	}
	if h.reset(nil, nil, 20, []int{1}, dom, 100, 100) {
		t.Errorf("kept a key of %d cells of counts, past herdCells", 100<<16)
	}
	// Many values: fewer keys, then none (each row reads keys × values).
	if !h.reset(nil, nil, 20, keys, dom, herdRowCells/4, 100) || len(h.keys) != 4 {
		t.Errorf("an attribute of %d values kept %d keys, want 4", herdRowCells/4, len(h.keys))
	}
	if h.reset(nil, nil, 20, keys, dom, herdRowCells+1, 100) {
		t.Errorf("an attribute of %d values kept %d keys, want none", herdRowCells+1, len(h.keys))
	}
}

// Herding from the columns, past rowwiseBytes, deals the same rows as from
// the row-wise copy.
func TestHerdFromColumns(t *testing.T) {
	dom, err := NewDomain([]string{"a", "b", "c", "d", "e"}, []int{5, 4, 6, 3, 7})
	if err != nil {
		t.Fatal(err)
	}
	m := normalModel(t, rand.New(rand.NewPCG(9, 10)), dom, [][]int{{0, 1}, {1, 2}, {3}, {0, 4}}, 0.5, 1)
	rows, err := m.Synthesize(rand.New(rand.NewPCG(3, 4)), 5000)
	if err != nil {
		t.Fatal(err)
	}
	defer func(b int) { rowwiseBytes = b }(rowwiseBytes)
	rowwiseBytes = 0
	cols, err := m.Synthesize(rand.New(rand.NewPCG(3, 4)), 5000)
	if err != nil {
		t.Fatal(err)
	}
	for a := range rows {
		if !slices.Equal(rows[a], cols[a]) {
			t.Fatalf("attribute %d differs when herded from the columns", a)
		}
	}
}
