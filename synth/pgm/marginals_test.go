package pgm

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
)

// relNear reports whether a and b agree to tol relatively (cell by cell, no
// absolute floor: zeros must be exact zeros).
func relNear(a, b, tol float64) bool {
	return a == b || math.Abs(a-b) <= tol*math.Max(math.Abs(a), math.Abs(b))
}

// treeModel returns a model over d attributes of sizes 1..maxSize with k
// random cliques of up to 3 attributes, a chain through every attribute so
// that the junction tree is deep, random potentials and some structural
// zeros.
func treeModel(t testing.TB, rng *rand.Rand, d, k, maxSize int) *Model {
	t.Helper()
	dom := randomDomain(t, rng, d, maxSize)
	sets := randomSets(rng, d, k, 3)
	for a := range d - 1 {
		sets = append(sets, []int{a, a + 1})
	}
	jt, err := newJunctionTree(dom, sets, nil)
	if err != nil {
		t.Fatal(err)
	}
	theta := make([]float64, jt.total)
	for i := range theta {
		theta[i] = rng.NormFloat64() * 2
		if rng.IntN(20) == 0 {
			theta[i] = math.Inf(-1)
		}
	}
	m := newModel(jt, theta, 1000)
	if math.IsInf(m.logZ, -1) {
		clear(theta)
		m = newModel(jt, theta, 1000)
	}
	return m
}

// TestMarginalsAgainstOracles checks the batch API against brute force and
// against log-space variable elimination, on sets that span cliques, in any
// order, sharing the batch's cache of reduced cliques.
func TestMarginalsAgainstOracles(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	for trial := range 60 {
		d := 2 + rng.IntN(7)
		m := treeModel(t, rng, d, rng.IntN(5), 3)
		p, _ := normalize(bruteJoint(m.jt, m.potentials()))
		var sets [][]int
		for range 12 {
			sets = append(sets, rng.Perm(d)[:rng.IntN(min(d, 4)+1)])
		}
		got, err := m.Marginals(context.Background(), sets)
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range sets {
			brute := bruteMarginal(m.dom, p, s, nil)
			oracle := m.marginalLog(s)
			if len(got[i]) != len(brute) {
				t.Fatalf("trial %d: marginal over %v has %d cells, want %d", trial, s, len(got[i]), len(brute))
			}
			for j := range brute {
				if !near(got[i][j]/1000, brute[j], 1e-9) {
					t.Fatalf("trial %d: marginal %v (cliques %v) cell %d = %v, brute force %v",
						trial, s, m.jt.cliques, j, got[i][j]/1000, brute[j])
				}
				if !relNear(got[i][j], oracle[j], 1e-9) {
					t.Fatalf("trial %d: marginal %v (cliques %v) cell %d = %v, log-space oracle %v",
						trial, s, m.jt.cliques, j, got[i][j], oracle[j])
				}
			}
		}
	}
}

// TestMarginalsDeepTree checks sets spanning long paths of a larger tree
// against the log-space oracle (too large for brute force).
func TestMarginalsDeepTree(t *testing.T) {
	rng := rand.New(rand.NewPCG(53, 54))
	for trial := range 10 {
		d := 12 + rng.IntN(8)
		m := treeModel(t, rng, d, 6+rng.IntN(6), 5)
		var sets [][]int
		for range 30 {
			sets = append(sets, rng.Perm(d)[:1+rng.IntN(3)])
		}
		got, err := m.Marginals(context.Background(), sets)
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range sets {
			want := m.marginalLog(s)
			single := m.Marginal(s)
			for j := range want {
				if !relNear(got[i][j], want[j], 1e-9) || got[i][j] != single[j] {
					t.Fatalf("trial %d: marginal %v cell %d = %v (alone %v), oracle %v", trial, s, j, got[i][j], single[j], want[j])
				}
			}
		}
	}
}

func TestMarginalsFuncCancelled(t *testing.T) {
	rng := rand.New(rand.NewPCG(55, 56))
	m := treeModel(t, rng, 6, 2, 3)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls := 0
	err := m.MarginalsFunc(ctx, [][]int{{0, 5}, {1, 4}}, func(int, []float64) { calls++ })
	if !errors.Is(err, context.Canceled) || calls != 0 {
		t.Errorf("cancelled MarginalsFunc: err %v after %d calls, want context.Canceled after 0", err, calls)
	}
}

func TestMarginalsConcurrentModels(t *testing.T) {
	// One model answered from several batches at once (run with -race):
	// the conditional tables are built once, each batch has its cache.
	rng := rand.New(rand.NewPCG(57, 58))
	m := treeModel(t, rng, 10, 4, 4)
	sets := [][]int{{0, 9}, {3, 7, 1}, {2, 5}, {8, 0, 4}}
	want, err := m.Marginals(context.Background(), sets)
	if err != nil {
		t.Fatal(err)
	}
	m2 := newModel(m.jt, m.potentials(), m.total)
	done := make(chan [][]float64)
	for range 4 {
		go func() {
			got, _ := m2.Marginals(context.Background(), sets)
			done <- got
		}()
	}
	for range 4 {
		got := <-done
		for i := range want {
			if !slices.Equal(got[i], want[i]) {
				t.Fatalf("concurrent Marginals %v = %v, want %v", sets[i], got[i], want[i])
			}
		}
	}
}

func TestProductEliminationMemory(t *testing.T) {
	// The product of the factors is never materialised: eliminating b from
	// a chain a–b–c allocates about the result (|a||c| cells), not the
	// product (|a||b||c| cells, 50× more).
	dom, _ := NewDomain([]string{"a", "b", "c"}, []int{50, 50, 50})
	f1 := factor{attrs: []int{0, 1}, vals: make([]float64, 2500)}
	f2 := factor{attrs: []int{1, 2}, vals: make([]float64, 2500)}
	for i := range f1.vals {
		f1.vals[i], f2.vals[i] = 1.0/2500, 1.0/50
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	out := productElimination(dom, []factor{f1, f2}, []int{0, 2}, math.Inf(1))
	runtime.ReadMemStats(&after)
	if len(out.vals) != 2500 || !near(out.vals[17], 1.0/2500, 1e-12) {
		t.Fatalf("chain elimination gave %d cells, cell 17 = %v", len(out.vals), out.vals[17])
	}
	if b := after.TotalAlloc - before.TotalAlloc; b > 2*2500*8+1<<12 {
		t.Errorf("chain elimination allocated %d bytes for a %d-byte result", b, 2500*8)
	}
}

// TestProductEliminationLimit checks elimination against the brute-force
// sum of the product, with no workspace limit and with limits that force
// conditioning on one or several attributes.
func TestProductEliminationLimit(t *testing.T) {
	rng := rand.New(rand.NewPCG(59, 60))
	for trial := range 100 {
		d := 1 + rng.IntN(6)
		dom := randomDomain(t, rng, d, 4)
		var fs []factor
		for _, s := range randomSets(rng, d, 1+rng.IntN(5), 3) {
			f := factor{attrs: s, vals: make([]float64, dom.Cells(s))}
			for i := range f.vals {
				if rng.IntN(8) != 0 {
					f.vals[i] = rng.Float64()
				}
			}
			fs = append(fs, f)
		}
		keep := rng.Perm(d)[:rng.IntN(d+1)]
		slices.Sort(keep)
		// Brute force over the full domain: an attribute no factor
		// holds is not summed over (it takes value 0) unless kept, when
		// the product is constant in it.
		want := make([]float64, dom.Cells(keep))
		held := newBitset(d)
		for _, f := range fs {
			for _, a := range f.attrs {
				held.set(a)
			}
		}
		forEachCell(dom, func(x []int) {
			p := 1.0
			for _, f := range fs {
				p *= f.vals[cellIndex(dom, f.attrs, x)]
			}
			for a := range d {
				if !held.has(a) && x[a] != 0 && !slices.Contains(keep, a) {
					return
				}
			}
			want[cellIndex(dom, keep, x)] += p
		})
		for _, limit := range []float64{math.Inf(1), 4, 1} {
			got := productElimination(dom, fs, keep, limit)
			if !slices.Equal(got.attrs, keep) {
				t.Fatalf("trial %d: result over %v, want %v", trial, got.attrs, keep)
			}
			for i := range want {
				if !near(got.vals[i], want[i], 1e-12) {
					t.Fatalf("trial %d (limit %v): factors %v keep %v cell %d = %v, want %v", trial, limit, fs, keep, i, got.vals[i], want[i])
				}
			}
		}
	}
}

// TestProductSumBruteForce checks productSum against a direct sum over the
// cells of over, on random scopes whose factors hold zeros (the inner loop
// skips rows whose constant part is 0) and every stride pattern of the
// inner loop: factors varying along it or not, the result summed along it
// or not.
func TestProductSumBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	for trial := range 300 {
		d := 1 + rng.IntN(5)
		dom := randomDomain(t, rng, d, 6)
		over := make([]int, d)
		for i := range over {
			over[i] = i
		}
		var fs []factor
		for range 1 + rng.IntN(5) {
			var attrs []int
			for _, a := range over {
				if rng.IntN(2) == 0 {
					attrs = append(attrs, a)
				}
			}
			vals := make([]float64, dom.Cells(attrs))
			for i := range vals {
				if rng.IntN(4) > 0 {
					vals[i] = rng.Float64()
				}
			}
			fs = append(fs, factor{attrs: attrs, vals: vals})
		}
		checkProductSum(t, trial, rng, dom, fs, over)
	}
}

// TestMarginalsVisit checks that the reused-buffer batch gives every set
// exactly what Marginal gives it alone, on sets inside one clique, across
// cliques and in unsorted orders, with buffers handed from set to set.
func TestMarginalsVisit(t *testing.T) {
	rng := rand.New(rand.NewPCG(55, 56))
	for trial := range 8 {
		d := 10 + rng.IntN(8)
		m := treeModel(t, rng, d, 5+rng.IntN(6), 5)
		var sets [][]int
		for range 40 {
			sets = append(sets, rng.Perm(d)[:1+rng.IntN(3)])
		}
		got := make([][]float64, len(sets))
		err := m.MarginalsVisit(context.Background(), sets, func(i int, x []float64) {
			got[i] = slices.Clone(x)
		})
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range sets {
			if want := m.Marginal(s); !slices.Equal(got[i], want) {
				t.Fatalf("trial %d: set %v: visit %v, alone %v", trial, s, got[i], want)
			}
		}
	}
}

// TestBatchVisit checks that a Batch's calls, sharing one cache, give the
// marginals of one MarginalsVisit call bit for bit.
func TestBatchVisit(t *testing.T) {
	rng := rand.New(rand.NewPCG(57, 58))
	ctx := context.Background()
	for trial := range 5 {
		d := 8 + rng.IntN(6)
		m := treeModel(t, rng, d, 4+rng.IntN(4), 4)
		var sets [][]int
		for range 24 {
			sets = append(sets, rng.Perm(d)[:1+rng.IntN(3)])
		}
		want, err := m.Marginals(ctx, sets)
		if err != nil {
			t.Fatal(err)
		}
		b := m.NewBatch()
		for lo := 0; lo < len(sets); lo += 5 {
			hi := min(lo+5, len(sets))
			err := b.Visit(ctx, sets[lo:hi], func(i int, x []float64) {
				if !slices.Equal(x, want[lo+i]) {
					t.Errorf("trial %d: batch marginal %v differs from MarginalsVisit's", trial, sets[lo+i])
				}
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestVisitBuffersNotRetained checks that MarginalsVisit keeps no buffer of
// a large marginal once it returns: the process-wide pool held the largest
// marginal ever visited, and AIM's fits between two scorings ran with it
// live (8 MB on adult, twice that in the heap's growth). A chain model of
// three attributes of 64 values visits the 64³-cell marginal (2 MB, above
// maxPooled), and the live heap after a collection may not keep it.
func TestVisitBuffersNotRetained(t *testing.T) {
	dom, err := NewDomain([]string{"a", "b", "c"}, []int{64, 64, 64})
	if err != nil {
		t.Fatal(err)
	}
	m := normalModel(t, rand.New(rand.NewPCG(61, 62)), dom, [][]int{{0, 1}, {1, 2}}, 1, 1000)
	set := [][]int{{0, 1, 2}}
	cells := dom.Cells(set[0])
	if cells <= maxPooled {
		t.Fatalf("the test's marginal has %d cells, want more than maxPooled = %d", cells, maxPooled)
	}
	live := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := live()
	var sum float64
	for range 2 {
		err := m.MarginalsVisit(context.Background(), set, func(_ int, x []float64) {
			for _, v := range x {
				sum += v
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if math.Abs(sum-2000) > 1e-6 {
		t.Fatalf("visited marginals sum to %v, want 2000", sum)
	}
	// One collection moves a pool's contents to its victim cache, where
	// they stay live: a retained buffer shows here.
	after := live()
	runtime.KeepAlive(m)
	if grown := int64(after) - int64(before); grown > int64(cells)*8/2 {
		t.Fatalf("live heap grew by %d bytes after visiting a %d-cell marginal: its buffer is kept", grown, cells)
	}
}

// TestProductSumLargeTables is TestProductSumBruteForce on tables larger
// than L2 (innerCost then weighs strided reads as cache misses, and picks
// another innermost dimension than on small tables), with wide attributes
// as on wide30.
func TestProductSumLargeTables(t *testing.T) {
	rng := rand.New(rand.NewPCG(53, 54))
	sizes := []int{38, 6, 38, 2, 7, 38}
	names := []string{"a", "b", "c", "d", "e", "f"}
	dom, err := NewDomain(names, sizes)
	if err != nil {
		t.Fatal(err)
	}
	over := []int{0, 1, 2, 3, 4, 5}
	for trial := range 6 {
		var fs []factor
		for range 2 + rng.IntN(3) {
			var attrs []int
			for _, a := range over {
				if rng.IntN(3) > 0 {
					attrs = append(attrs, a)
				}
			}
			vals := make([]float64, dom.Cells(attrs))
			for i := range vals {
				vals[i] = rng.Float64()
			}
			fs = append(fs, factor{attrs: attrs, vals: vals})
		}
		checkProductSum(t, trial, rng, dom, fs, over)
	}
}

// TestCoalesce checks that the merged loop visits the same offsets, in the
// same order, as the original one, for every table, on random loops whose
// tables are contiguous across some adjacent dimensions and not others.
func TestCoalesce(t *testing.T) {
	rng := rand.New(rand.NewPCG(59, 60))
	visit := func(sizes []int, strides [][]int) [][]int {
		var seq [][]int
		digit := make([]int, len(sizes))
		for {
			offs := make([]int, len(strides))
			for j, st := range strides {
				for i, d := range digit {
					offs[j] += d * st[i]
				}
			}
			seq = append(seq, offs)
			i := len(sizes) - 1
			for ; i >= 0; i-- {
				if digit[i]++; digit[i] < sizes[i] {
					break
				}
				digit[i] = 0
			}
			if i < 0 {
				return seq
			}
		}
	}
	merged := 0
	for trial := range 500 {
		k := 1 + rng.IntN(5)
		sizes := make([]int, k)
		for i := range sizes {
			sizes[i] = 1 + rng.IntN(4)
		}
		strides := make([][]int, 1+rng.IntN(3))
		for j := range strides {
			st := make([]int, k)
			s := 1
			for i := k - 1; i >= 0; i-- {
				switch rng.IntN(4) {
				case 0:
					st[i] = 0
				case 1:
					st[i] = s * (1 + rng.IntN(3)) // a gap: not mergeable
					s = st[i] * sizes[i]
				default:
					st[i] = s
					s *= sizes[i]
				}
			}
			strides[j] = st
		}
		want := visit(sizes, strides)
		cs, cst := coalesce(slices.Clone(sizes), func() [][]int {
			c := make([][]int, len(strides))
			for j := range strides {
				c[j] = slices.Clone(strides[j])
			}
			return c
		}())
		if len(cs) < k {
			merged++
		}
		got := visit(cs, cst)
		if len(got) != len(want) {
			t.Fatalf("trial %d: %d cells visited, want %d", trial, len(got), len(want))
		}
		for i := range want {
			if !slices.Equal(got[i], want[i]) {
				t.Fatalf("trial %d: sizes %v strides %v → %v %v: cell %d at %v, want %v", trial, sizes, strides, cs, cst, i, got[i], want[i])
			}
		}
	}
	if merged < 50 {
		t.Fatalf("only %d of 500 loops merged any dimension: the test does not exercise coalesce", merged)
	}
}

// checkProductSum checks productSum of fs over the attributes over, kept on
// a random subset of them, against the brute-force sum over every cell.
// bruteProductSum is Σ_{over \ out} Π fs computed cell by cell over the
// whole domain, whose attributes outside over (in no factor) repeat each
// term and are divided out.
func bruteProductSum(dom *Domain, fs []factor, over, out []int) []float64 {
	rep := 1.0
	for a := range dom.Len() {
		if !slices.Contains(over, a) {
			rep *= float64(dom.Size(a))
		}
	}
	want := make([]float64, dom.Cells(out))
	forEachCell(dom, func(x []int) {
		p := 1 / rep
		for _, f := range fs {
			p *= f.vals[cellIndex(dom, f.attrs, x)]
		}
		want[cellIndex(dom, out, x)] += p
	})
	return want
}

func checkProductSum(t *testing.T, trial int, rng *rand.Rand, dom *Domain, fs []factor, over []int) {
	t.Helper()
	var out []int
	for _, a := range over {
		if rng.IntN(2) == 0 {
			out = append(out, a)
		}
	}
	got := productSum(dom, fs, over, out)
	want := bruteProductSum(dom, fs, over, out)
	for i := range want {
		if !near(got.vals[i], want[i], 1e-12) {
			t.Fatalf("trial %d: cell %d = %v, want %v (factors %d, out %v)", trial, i, got.vals[i], want[i], len(fs), out)
		}
	}
}

// TestBatchReusesLargeTables: the visits of one Batch compute a marginal
// above maxPooled cells into one table, reused from set to set and call to
// call, with the values of a fresh computation (the pool does not keep it:
// TestVisitBuffersNotRetained).
func TestBatchReusesLargeTables(t *testing.T) {
	dom, err := NewDomain([]string{"a", "b", "c", "d"}, []int{64, 64, 64, 64})
	if err != nil {
		t.Fatal(err)
	}
	m := normalModel(t, rand.New(rand.NewPCG(63, 64)), dom, [][]int{{0, 1}, {1, 2}, {2, 3}}, 1, 1000)
	sets := [][]int{{0, 1, 2}, {1, 2, 3}, {0, 1, 3}}
	want := make([][]float64, len(sets))
	for i, s := range sets {
		if dom.Cells(s) <= maxPooled {
			t.Fatalf("set %v has %d cells, want more than maxPooled = %d", s, dom.Cells(s), maxPooled)
		}
		want[i] = m.Marginal(s)
	}
	b := m.NewBatch()
	tables := map[*float64]bool{}
	var held [][]float64 // so that no table's address is another's after a collection
	var mu sync.Mutex
	for call := range 2 {
		err := b.Visit(context.Background(), sets, func(i int, x []float64) {
			mu.Lock()
			tables[&x[:1][0]] = true
			held = append(held, x)
			mu.Unlock()
			for j := range x {
				if math.Abs(x[j]-want[i][j]) > 1e-9*(1+math.Abs(want[i][j])) {
					t.Fatalf("call %d, set %v, cell %d = %v, want %v", call, sets[i], j, x[j], want[i][j])
				}
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	runtime.KeepAlive(held)
	if max := runtime.GOMAXPROCS(0); len(tables) > max {
		t.Errorf("6 visits of large marginals used %d tables, want at most one per goroutine (%d)", len(tables), max)
	}
}

func TestLargeTables(t *testing.T) {
	for _, tt := range []struct {
		name     string
		free     []int // capacities
		n        int
		wantCap  int // 0: none returned
		wantFree []int
	}{
		{"none free", nil, 10, 0, nil},
		{"the smallest that fits", []int{40, 20, 30}, 15, 20, []int{40, 30}},
		{"an exact fit", []int{40, 20}, 40, 40, []int{20}},
		{"none fits: the smallest goes", []int{8, 4, 6}, 10, 0, []int{8, 6}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var l largeTables
			for _, c := range tt.free {
				l.put(make([]float64, 0, c))
			}
			got := l.get(tt.n)
			if cap(got) != tt.wantCap || (got == nil) != (tt.wantCap == 0) {
				t.Errorf("get(%d) = a table of %d cells, want %d", tt.n, cap(got), tt.wantCap)
			}
			var left []int
			for _, f := range l.free {
				left = append(left, cap(f))
			}
			if !slices.Equal(left, tt.wantFree) {
				t.Errorf("free after get: %v, want %v", left, tt.wantFree)
			}
		})
	}
}
