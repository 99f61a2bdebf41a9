package pgm

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// randomDataset returns a dataset with the given sizes and rows drawn
// uniformly, from a fixed seed.
func randomDataset(t testing.TB, seed uint64, sizes []int, rows int) *Dataset {
	t.Helper()
	names := make([]string, len(sizes))
	for i := range names {
		names[i] = string(rune('a' + i))
	}
	dom, err := NewDomain(names, sizes)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 0))
	cols := make([][]uint16, len(sizes))
	for i, s := range sizes {
		cols[i] = make([]uint16, rows)
		for r := range cols[i] {
			cols[i][r] = uint16(rng.IntN(s))
		}
	}
	ds, err := NewDataset(dom, cols)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// naiveMarginal is the reference for MarginalTo: one row at a time, index
// built by Horner's rule.
func naiveMarginal(d *Dataset, attrs []int) []float64 {
	out := make([]float64, d.Domain().Cells(attrs))
	for r := 0; r < d.Rows(); r++ {
		idx := 0
		for _, a := range attrs {
			idx = idx*d.Domain().Size(a) + int(d.Column(a)[r])
		}
		out[idx]++
	}
	return out
}

func TestNewDomain(t *testing.T) {
	tests := []struct {
		names []string
		sizes []int
		ok    bool
	}{
		{[]string{"a", "b"}, []int{2, 3}, true},
		{nil, nil, true},
		{[]string{"a", "a"}, []int{2, 3}, false},
		{[]string{"a", "b"}, []int{2, 0}, false},
		{[]string{"a"}, []int{2, 3}, false},
		{[]string{""}, []int{2}, false},
		{[]string{"a"}, []int{MaxSize + 1}, false},
	}
	for _, tt := range tests {
		d, err := NewDomain(tt.names, tt.sizes)
		if (err == nil) != tt.ok {
			t.Errorf("NewDomain(%q, %v) error = %v, want ok=%v", tt.names, tt.sizes, err, tt.ok)
			continue
		}
		if !tt.ok {
			continue
		}
		for i, n := range tt.names {
			if j, ok := d.Index(n); !ok || j != i {
				t.Errorf("Index(%q) = %d, %v; want %d", n, j, ok, i)
			}
		}
	}
	d, _ := NewDomain([]string{"a", "b", "c"}, []int{2, 3, 5})
	if _, ok := d.Index("z"); ok {
		t.Error("Index of unknown name succeeded")
	}
	for _, tt := range []struct {
		attrs []int
		want  int
	}{{nil, 1}, {[]int{1}, 3}, {[]int{0, 2}, 10}, {[]int{0, 1, 2}, 30}} {
		if got := d.Cells(tt.attrs); got != tt.want {
			t.Errorf("Cells(%v) = %d, want %d", tt.attrs, got, tt.want)
		}
	}
}

func TestNewDatasetRejects(t *testing.T) {
	dom, _ := NewDomain([]string{"a", "b"}, []int{2, 3})
	for _, cols := range [][][]uint16{
		{{0, 1}},         // too few columns
		{{0, 1}, {0}},    // ragged
		{{0, 2}, {0, 1}}, // code outside domain
	} {
		if _, err := NewDataset(dom, cols); err == nil {
			t.Errorf("NewDataset(%v) succeeded", cols)
		}
	}
}

func TestMarginalTo(t *testing.T) {
	// 1300 rows crosses the countBlock boundary twice with a ragged tail.
	ds := randomDataset(t, 1, []int{3, 1, 4, 2, 5}, 1300)
	sets := [][]int{{}, {0}, {4}, {1, 3}, {3, 1}, {0, 2, 4}, {4, 0, 2}, {0, 1, 2, 3, 4}}
	for _, attrs := range sets {
		want := naiveMarginal(ds, attrs)
		// Pre-fill a too-long destination with garbage: MarginalTo must clear it.
		dst := make([]float64, len(want)+3)
		for i := range dst {
			dst[i] = -7
		}
		got := ds.MarginalTo(dst, attrs)
		if len(got) != len(want) {
			t.Fatalf("MarginalTo(%v) has %d cells, want %d", attrs, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("MarginalTo(%v)[%d] = %v, want %v", attrs, i, got[i], want[i])
			}
		}
	}
	all, err := ds.Marginals(context.Background(), sets)
	if err != nil {
		t.Fatal(err)
	}
	for k, attrs := range sets {
		want := naiveMarginal(ds, attrs)
		for i := range want {
			if all[k][i] != want[i] {
				t.Fatalf("Marginals: set %v cell %d = %v, want %v", attrs, i, all[k][i], want[i])
			}
		}
	}
	// Into reused buffers, dirty and of every size: the same counts.
	rng := rand.New(rand.NewPCG(5, 6))
	dst := make([][]float64, len(sets)+3)
	for i := range dst {
		dst[i] = make([]float64, rng.IntN(40))
		for j := range dst[i] {
			dst[i][j] = math.NaN()
		}
	}
	for range 2 {
		again, err := ds.MarginalsTo(context.Background(), dst, sets)
		if err != nil {
			t.Fatal(err)
		}
		if len(again) != len(sets) {
			t.Fatalf("MarginalsTo returned %d marginals, want %d", len(again), len(sets))
		}
		for k := range sets {
			if !slices.Equal(again[k], all[k]) {
				t.Fatalf("MarginalsTo: set %v = %v, want %v", sets[k], again[k], all[k])
			}
		}
		dst = again
	}
	if _, err := ds.Marginals(context.Background(), [][]int{{0, 0}}); err == nil {
		t.Error("Marginals with a repeated attribute succeeded")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ds.Marginals(ctx, sets); err == nil {
		t.Error("Marginals with a cancelled context succeeded")
	}
}

func TestMarginalToNoAlloc(t *testing.T) {
	ds := randomDataset(t, 2, []int{3, 4, 5}, 2000)
	dst := make([]float64, 60)
	if n := testing.AllocsPerRun(10, func() { ds.MarginalTo(dst, []int{0, 1, 2}) }); n != 0 {
		t.Errorf("MarginalTo allocates %v times per call", n)
	}
}

func TestLendMarginals(t *testing.T) {
	ds := randomDataset(t, 3, []int{3, 1, 4, 2, 5, 6}, 1300)
	sets := [][]int{{0}, {4, 5}, {}, {1, 3}, {0, 2, 4}, {5, 4, 0}, {0, 1, 2, 3, 4, 5}, {2}}
	want, err := ds.Marginals(context.Background(), sets)
	if err != nil {
		t.Fatal(err)
	}
	defer func(n int) { lendCells = n }(lendCells)
	for _, tt := range []struct {
		name  string
		cells int
	}{
		{"one group", 1 << 20},
		{"groups of a few sets", 130},
		{"a set a group, some larger than a group", 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			lendCells = tt.cells
			var order []int
			err := ds.LendMarginals(context.Background(), sets, func(i int, x []float64) error {
				order = append(order, i)
				if !slices.Equal(x, want[i]) {
					t.Errorf("set %v = %v, want %v", sets[i], x, want[i])
				}
				for j := range x { // the buffer is the callee's to scribble on
					x[j] = math.NaN()
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(order, []int{0, 1, 2, 3, 4, 5, 6, 7}) {
				t.Errorf("fn saw the sets in order %v, want each once in order", order)
			}
		})
	}
	stop := errors.New("stop")
	calls := 0
	err = ds.LendMarginals(context.Background(), sets, func(int, []float64) error { calls++; return stop })
	if !errors.Is(err, stop) || calls != 1 {
		t.Errorf("an error from fn: got %v after %d calls, want it after 1", err, calls)
	}
	if err := ds.LendMarginals(context.Background(), [][]int{{0}, {2, 2}}, func(int, []float64) error {
		t.Error("fn called for a request with a repeated attribute")
		return nil
	}); err == nil {
		t.Error("LendMarginals with a repeated attribute succeeded")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := ds.LendMarginals(ctx, sets, func(int, []float64) error { return nil }); err == nil {
		t.Error("LendMarginals with a cancelled context succeeded")
	}
}
