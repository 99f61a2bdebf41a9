package pgm

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sort"
	"testing"

	"github.com/dpsql/dpsql/internal/gctest"
	"github.com/dpsql/dpsql/synth/pgm/internal/kernel"
	"gonum.org/v1/gonum/mat"
)

// measure returns identity measurements of ds on sets, with Gaussian noise
// of standard deviation sigma (0 = exact) from rng.
func measure(ds *Dataset, sets [][]int, sigma float64, rng *rand.Rand) []Measurement {
	var out []Measurement
	for _, s := range sets {
		y := ds.MarginalTo(nil, s)
		for i := range y {
			y[i] += sigma * rng.NormFloat64()
		}
		out = append(out, Measurement{Attrs: s, Y: y, Sigma: math.Max(sigma, 1)})
	}
	return out
}

// dedupe drops repeated sets.
func dedupe(sets [][]int) [][]int {
	sort.Slice(sets, func(i, j int) bool { return slices.Compare(sets[i], sets[j]) < 0 })
	return slices.CompactFunc(sets, slices.Equal)
}

func TestEstimateExactRecovers(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for trial := range 12 {
		d := 2 + rng.IntN(4)
		dom := randomDomain(t, rng, d, 4)
		sizes := slices.Clone(dom.sizes)
		ds := randomDataset(t, uint64(trial), sizes, 500)
		sets := dedupe(randomSets(rng, d, 1+rng.IntN(4), 3))
		meas := measure(ds, sets, 0, rng)
		for _, method := range []Method{MirrorDescent, Accelerated} {
			m, err := Estimate(context.Background(), ds.Domain(), meas, &EstimateOptions{Iters: 3000, Method: method})
			if err != nil {
				t.Fatal(err)
			}
			if m.Total() != 500 {
				t.Fatalf("estimated total %v from exact measurements, want 500", m.Total())
			}
			for _, mm := range meas {
				got := m.Marginal(mm.Attrs)
				for i := range got {
					// The issue asks for recovery to 1e-6 of the normalised marginal.
					if math.Abs(got[i]-mm.Y[i])/500 > 1e-6 {
						t.Fatalf("trial %d method %d: marginal %v cell %d = %v, want %v (cliques %v)",
							trial, method, mm.Attrs, i, got[i], mm.Y[i], m.Cliques())
					}
				}
			}
		}
	}
}

// projectSimplex projects x onto {z ≥ 0, Σz = total} in place (sort-based).
func projectSimplex(x []float64, total float64) {
	u := slices.Clone(x)
	slices.Sort(u)
	slices.Reverse(u)
	var css, tau float64
	for i, v := range u {
		css += v
		if t := (css - total) / float64(i+1); v-t > 0 {
			tau = t
		}
	}
	for i := range x {
		x[i] = math.Max(x[i]-tau, 0)
	}
}

// bruteEstimate minimises the L2 loss of meas over the full count table on
// the scaled simplex by FISTA (accelerated projected gradient), a slow
// reference optimiser that knows nothing of graphical models.
func bruteEstimate(dom *Domain, meas []Measurement, total float64, iters int) []float64 {
	all := make([]int, dom.Len())
	for i := range all {
		all[i] = i
	}
	n := dom.Cells(all)
	// Row-major index of every cell restricted to each measurement.
	maps := make([][]int, len(meas))
	var lip float64
	for k, m := range meas {
		maps[k] = make([]int, 0, n)
		forEachCell(dom, func(x []int) { maps[k] = append(maps[k], cellIndex(dom, m.Attrs, x)) })
		eig := 1.0
		if m.Query != nil {
			eig = lambdaMax(m.Query)
		}
		// λmax(MᵀQᵀQM) ≤ λmax(QᵀQ)·n/n_m since M Mᵀ = (n/n_m)·I.
		lip += eig * float64(n) / float64(dom.Cells(m.Attrs)) / (m.Sigma * m.Sigma)
	}
	x := make([]float64, n)
	for i := range x {
		x[i] = total / float64(n)
	}
	y := slices.Clone(x)
	prev := slices.Clone(x)
	grad := make([]float64, n)
	tk := 1.0
	for range iters {
		clear(grad)
		for k, m := range meas {
			marg := make([]float64, dom.Cells(m.Attrs))
			for i, j := range maps[k] {
				marg[j] += y[i]
			}
			r := marg
			if m.Query != nil {
				var v mat.VecDense
				v.MulVec(m.Query, mat.NewVecDense(len(marg), marg))
				r = v.RawVector().Data
			}
			for i := range r {
				r[i] = (r[i] - m.Y[i]) / (m.Sigma * m.Sigma)
			}
			if m.Query != nil {
				var g mat.VecDense
				g.MulVec(m.Query.T(), mat.NewVecDense(len(r), r))
				r = g.RawVector().Data
			}
			for i, j := range maps[k] {
				grad[i] += r[j]
			}
		}
		copy(prev, x)
		for i := range x {
			x[i] = y[i] - grad[i]/lip
		}
		projectSimplex(x, total)
		tn := (1 + math.Sqrt(1+4*tk*tk)) / 2
		for i := range y {
			y[i] = x[i] + (tk-1)/tn*(x[i]-prev[i])
		}
		tk = tn
	}
	return x
}

func TestEstimateNoisyMatchesConvexSolution(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for trial := range 8 {
		d := 2 + rng.IntN(3)
		dom := randomDomain(t, rng, d, 3)
		sizes := make([]int, d)
		for i := range sizes {
			sizes[i] = 2 + rng.IntN(2) // no trivial attributes here
		}
		dom, _ = NewDomain(dom.names, sizes)
		const total = 400
		ds := randomDataset(t, uint64(100+trial), sizes, total)
		sets := dedupe(randomSets(rng, d, 1+rng.IntN(4), 2))
		meas := measure(ds, sets, 15, rng)
		if trial%2 == 1 {
			// One measurement through a random invertible query matrix.
			m := &meas[0]
			n := len(m.Y)
			q := mat.NewDense(n, n, nil)
			for i := range n {
				for j := range n {
					if i == j || rng.IntN(3) == 0 {
						q.Set(i, j, 1)
					}
				}
			}
			x := ds.MarginalTo(nil, m.Attrs)
			var qx mat.VecDense
			qx.MulVec(q, mat.NewVecDense(n, x))
			m.Query, m.Y = q, qx.RawVector().Data
			for i := range m.Y {
				m.Y[i] += 15 * rng.NormFloat64()
			}
		}
		ref := bruteEstimate(dom, meas, total, 40000)
		for _, method := range []Method{MirrorDescent, Accelerated} {
			m, err := Estimate(context.Background(), dom, meas, &EstimateOptions{Iters: 10000, Method: method, Total: total})
			if err != nil {
				t.Fatal(err)
			}
			var worst float64
			for _, mm := range meas {
				got := m.Marginal(mm.Attrs)
				want := make([]float64, len(got))
				i := 0
				forEachCell(dom, func(x []int) { want[cellIndex(dom, mm.Attrs, x)] += ref[i]; i++ })
				for j := range got {
					worst = math.Max(worst, math.Abs(got[j]-want[j]))
				}
			}
			// The measured marginals of the optimum are unique (the loss is
			// strictly convex in them); both solvers stop short of it: the
			// largest gap seen was 4e-6 records, so allow 1e-4 of 400.
			if worst > 1e-4 {
				t.Errorf("trial %d method %d: measured marginals differ from the convex optimum by %v records", trial, method, worst)
			}
		}
	}
}

func TestEstimateLossMonotone(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	dom := randomDomain(t, rng, 5, 4)
	sizes := slices.Clone(dom.sizes)
	ds := randomDataset(t, 27, sizes, 1000)
	meas := measure(ds, dedupe(randomSets(rng, 5, 5, 3)), 10, rng)
	for _, rule := range []StepRule{ResetStep, GrowStep, KeepStep} {
		prev := math.Inf(1)
		for iters := 1; iters <= 30; iters++ {
			var st EstimateStats
			if _, err := Estimate(context.Background(), dom, meas, &EstimateOptions{Iters: iters, Step: rule, Stats: &st}); err != nil {
				t.Fatal(err)
			}
			if st.Iters > iters || st.Loss > prev { // a converged fit may stop early
				t.Fatalf("rule %d: after %d iterations (%d run) loss %v, before %v", rule, iters, st.Iters, st.Loss, prev)
			}
			prev = st.Loss
		}
	}
}

// TestEstimateTol: with Tol the fit stops at the first iteration k where the
// loss fell by less than Tol·|loss| per iteration over the last TolWindow,
// checked against fits of fixed lengths (the trajectory is deterministic),
// and its progress reports carry the loss.
func TestEstimateTol(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	dom := randomDomain(t, rng, 6, 5)
	sizes := slices.Clone(dom.sizes)
	ds := randomDataset(t, 63, sizes, 2000)
	meas := measure(ds, dedupe(randomSets(rng, 6, 6, 3)), 1, rng)
	lossAt := func(iters int) float64 {
		var st EstimateStats
		if _, err := Estimate(context.Background(), dom, meas, &EstimateOptions{Iters: iters, Step: KeepStep, Stats: &st}); err != nil {
			t.Fatal(err)
		}
		if st.Iters != iters {
			t.Fatalf("fit of %d iterations converged after %d: pick a harder case", iters, st.Iters)
		}
		return st.Loss
	}
	for _, tol := range []float64{1e-2, 1e-3, 1e-4} {
		var st EstimateStats
		var reported []float64
		_, err := Estimate(context.Background(), dom, meas, &EstimateOptions{Iters: 5000, Tol: tol, Step: KeepStep, Stats: &st,
			Progress: func(p EstimateProgress) { reported = append(reported, p.Loss) }})
		if err != nil {
			t.Fatal(err)
		}
		k := st.Iters
		t.Logf("tol %g: %d iterations, loss %v", tol, k, st.Loss)
		if k < TolWindow || k >= 5000 {
			t.Fatalf("tol %g: stopped after %d iterations", tol, k)
		}
		if got := lossAt(k); got != st.Loss {
			t.Fatalf("tol %g: loss %v after %d iterations, a fixed-length fit %v", tol, st.Loss, k, got)
		}
		if d := lossAt(k-TolWindow) - st.Loss; d >= tol*TolWindow*math.Abs(st.Loss) {
			t.Fatalf("tol %g: stopped at %d with a window decrease %v ≥ %v", tol, k, d, tol*TolWindow*st.Loss)
		}
		if k > TolWindow {
			prev := lossAt(k - 1)
			if d := lossAt(k-1-TolWindow) - prev; d < tol*TolWindow*math.Abs(prev) {
				t.Fatalf("tol %g: should have stopped at %d (window decrease %v)", tol, k-1, d)
			}
		}
		if len(reported) == 0 || reported[0] <= st.Loss || slices.Contains(reported, 0) {
			t.Fatalf("tol %g: progress losses %v, final %v", tol, reported, st.Loss)
		}
	}
}

// TestEstimateModelMarginals: a mirror-descent fit hands its last accepted
// trial's marginals to the model instead of propagating again; they must be
// the marginals of the model's potentials bit for bit, log Z too.
func TestEstimateModelMarginals(t *testing.T) {
	rng := rand.New(rand.NewPCG(71, 72))
	dom := randomDomain(t, rng, 6, 4)
	sizes := slices.Clone(dom.sizes)
	ds := randomDataset(t, 73, sizes, 1500)
	meas := measure(ds, dedupe(randomSets(rng, 6, 7, 3)), 10, rng)
	defer func(n, m int) { chunkCells, minPoolCells = n, m }(chunkCells, minPoolCells)
	chunkCells, minPoolCells = 2, 0 // chunked (and pooled) propagation in the fit
	for _, o := range []EstimateOptions{
		{Iters: 1},
		{Iters: 40},
		{Iters: 40, Step: KeepStep},
		{Iters: 500, Tol: 1e-3, Step: KeepStep},
		{Iters: 40, Loss: L1, StepSize: 0.01},
	} {
		m, err := Estimate(context.Background(), dom, meas, &o)
		if err != nil {
			t.Fatal(err)
		}
		want := newModel(m.jt, m.potentials(), m.total)
		if math.Float64bits(m.logZ) != math.Float64bits(want.logZ) {
			t.Fatalf("%+v: log Z %v, propagated %v", o, m.logZ, want.logZ)
		}
		for i := range want.p {
			if math.Float64bits(m.p[i]) != math.Float64bits(want.p[i]) {
				t.Fatalf("%+v: cell %d = %v, propagated %v", o, i, m.p[i], want.p[i])
			}
		}
	}
}

func TestEstimateOptions(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 29))
	dom := randomDomain(t, rng, 4, 3)
	sizes := slices.Clone(dom.sizes)
	ds := randomDataset(t, 30, sizes, 300)
	ctx := context.Background()
	small := measure(ds, [][]int{{0}, {1, 2}}, 5, rng)
	first, err := Estimate(ctx, dom, small, &EstimateOptions{Iters: 200})
	if err != nil {
		t.Fatal(err)
	}
	var before EstimateStats
	if _, err := Estimate(ctx, dom, small, &EstimateOptions{Iters: 200, Stats: &before}); err != nil {
		t.Fatal(err)
	}
	// Warm-started from its own fit, one more iteration cannot be worse.
	var after EstimateStats
	if _, err := Estimate(ctx, dom, small, &EstimateOptions{Iters: 1, WarmStart: first, Stats: &after}); err != nil {
		t.Fatal(err)
	}
	if after.Loss > before.Loss {
		t.Errorf("warm start loss %v, cold fit %v", after.Loss, before.Loss)
	}
	// A warm start whose cliques the new structure lacks still fits: the
	// uncovered potential is dropped, and the fit converges as a cold one.
	big, _ := Estimate(ctx, dom, measure(ds, [][]int{{0, 3}}, 5, rng), &EstimateOptions{Iters: 5})
	var warm EstimateStats
	if _, err := Estimate(ctx, dom, small, &EstimateOptions{Iters: 200, WarmStart: big, Stats: &warm}); err != nil {
		t.Errorf("uncovered warm start: %v", err)
	} else if !near(warm.Loss, before.Loss, 1e-3) {
		t.Errorf("fit from an uncovered warm start: loss %v, cold %v", warm.Loss, before.Loss)
	}
	other, _ := NewDomain([]string{"x"}, []int{2})
	if _, err := Estimate(ctx, dom, small, &EstimateOptions{Iters: 1, WarmStart: newModel(mustJT(t, other), []float64{0, 0}, 1)}); err == nil {
		t.Error("warm start over another domain accepted")
	}
	// ExtraCliques enter the structure.
	m, err := Estimate(ctx, dom, small, &EstimateOptions{Iters: 1, ExtraCliques: [][]int{{0, 3}}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(m.Cliques(), func(c []int) bool { return isSubset([]int{0, 3}, c) }) {
		t.Errorf("extra clique {0,3} missing from %v", m.Cliques())
	}
	// Cancellation.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Estimate(cctx, dom, small, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Estimate: %v", err)
	}
	// Bad input.
	bad := []Measurement{
		{Attrs: []int{1, 0}, Y: make([]float64, dom.Cells([]int{0, 1})), Sigma: 1},
		{Attrs: []int{0}, Y: make([]float64, dom.Size(0)+1), Sigma: 1},
		{Attrs: []int{0}, Y: make([]float64, dom.Size(0)), Sigma: 0},
		{Attrs: []int{0}, Y: []float64{math.NaN()}[:0:0], Sigma: 1},
	}
	for i, b := range bad[:3] {
		if _, err := Estimate(ctx, dom, []Measurement{b}, nil); !errors.Is(err, ErrBadMeasurement) {
			t.Errorf("bad measurement %d: %v", i, err)
		}
	}
	if _, err := Estimate(ctx, dom, small, &EstimateOptions{Loss: L1}); err == nil {
		t.Error("L1 with line search accepted")
	}
	// L1 with a constant step runs and improves on the start.
	var l1 EstimateStats
	if _, err := Estimate(ctx, dom, small, &EstimateOptions{Loss: L1, StepSize: 0.01, Iters: 100, Stats: &l1}); err != nil {
		t.Fatal(err)
	}
	var l10 EstimateStats
	Estimate(ctx, dom, small, &EstimateOptions{Loss: L1, StepSize: 0.01, Iters: 1, Stats: &l10})
	if !(l1.Loss < l10.Loss) {
		t.Errorf("L1 loss after 100 iterations %v, after 1 %v", l1.Loss, l10.Loss)
	}
}

func TestEstimateTotal(t *testing.T) {
	dom, _ := NewDomain([]string{"a", "b"}, []int{2, 3})
	// Identity: the sum, weighted by 1/(σ²·cells). Two measurements of a
	// 500-record table: Σy = 500 and 520 with variances 4·2 and 1·3.
	meas := []Measurement{
		{Attrs: []int{0}, Y: []float64{200, 300}, Sigma: 2},
		{Attrs: []int{1}, Y: []float64{100, 200, 220}, Sigma: 1},
	}
	want := (500.0/8 + 520.0/3) / (1.0/8 + 1.0/3)
	if got := EstimateTotal(dom, meas); !near(got, want, 1e-12) {
		t.Errorf("EstimateTotal = %v, want %v", got, want)
	}
	// A query whose row space holds 1: Q = [[1,1],[1,-1]]: v = (1, 0).
	q := mat.NewDense(2, 2, []float64{1, 1, 1, -1})
	if got := EstimateTotal(dom, []Measurement{{Attrs: []int{0}, Query: q, Y: []float64{400, 10}, Sigma: 1}}); !near(got, 400, 1e-9) {
		t.Errorf("EstimateTotal with a query = %v, want 400", got)
	}
	// One that does not: Q = [[1, 0]]; no estimate, so 1.
	q1 := mat.NewDense(1, 2, []float64{1, 0})
	if got := EstimateTotal(dom, []Measurement{{Attrs: []int{0}, Query: q1, Y: []float64{400}, Sigma: 1}}); got != 1 {
		t.Errorf("EstimateTotal without a total query = %v, want 1", got)
	}
}

// TestEstimateTiledMaps: the index maps of the objective and of belief
// propagation are tiled (kernel.Tiled); tiles of one cell, of a few cells
// and of whole tables run the same kernels on the same cells, so the fits
// must agree bit for bit, the loss and the oracle calls too.
func TestEstimateTiledMaps(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	for trial := range 6 {
		dom := randomDomain(t, rng, 6, 5)
		sizes := slices.Clone(dom.sizes)
		ds := randomDataset(t, uint64(50+trial), sizes, 1000)
		meas := measure(ds, dedupe(randomSets(rng, 6, 8, 3)), 10, rng)
		fit := func(tile int) (*Model, EstimateStats) {
			defer func(n int) { tileCells = n }(tileCells)
			tileCells = tile
			var st EstimateStats
			m, err := Estimate(context.Background(), dom, meas, &EstimateOptions{Iters: 30, Stats: &st})
			if err != nil {
				t.Fatal(err)
			}
			return m, st
		}
		whole, wst := fit(1 << 30)
		for _, tile := range []int{1, 2, 7} {
			m, st := fit(tile)
			if st != wst {
				t.Fatalf("trial %d tile %d: stats %+v, whole tables %+v", trial, tile, st, wst)
			}
			for _, c := range whole.Cliques() {
				a, b := whole.Marginal(c), m.Marginal(c)
				for i := range a {
					if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
						t.Fatalf("trial %d tile %d: clique %v cell %d: %v, whole tables %v", trial, tile, c, i, b[i], a[i])
					}
				}
			}
		}
	}
}

func TestEstimateParallelMatchesSerial(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	dom := randomDomain(t, rng, 6, 4)
	sizes := slices.Clone(dom.sizes)
	ds := randomDataset(t, 33, sizes, 2000)
	meas := measure(ds, dedupe(randomSets(rng, 6, 8, 3)), 10, rng)
	fit := func(procs int) *Model {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		m, err := Estimate(context.Background(), dom, meas, &EstimateOptions{Iters: 50})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	whole := fit(1)
	defer func(n, m int) { chunkCells, minPoolCells = n, m }(chunkCells, minPoolCells)
	chunkCells, minPoolCells = 2, 0 // split even tiny tables into many chunks, on a pool
	chunked := fit(1)
	for _, c := range whole.Cliques() {
		a, b := whole.Marginal(c), chunked.Marginal(c)
		for i := range a {
			// Only the order of floating-point sums differs.
			if !near(a[i], b[i], 1e-9) {
				t.Fatalf("clique %v cell %d: chunked %v, whole %v", c, i, b[i], a[i])
			}
		}
	}
	// The chunks do not depend on the number of cores, so neither do the
	// results: helpers must change nothing, bit for bit.
	for _, procs := range []int{2, 3} {
		par := fit(procs)
		for _, c := range chunked.Cliques() {
			a, b := chunked.Marginal(c), par.Marginal(c)
			for i := range a {
				if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
					t.Fatalf("%d cores: clique %v cell %d: %v, one core %v", procs, c, i, b[i], a[i])
				}
			}
		}
	}
}

// lambdaMax returns the largest eigenvalue of QᵀQ by power iteration,
// inflated by 1e-6 relative so that it stays an upper bound (for the FISTA
// reference's step).
func lambdaMax(q *mat.Dense) float64 {
	_, c := q.Dims()
	x := mat.NewVecDense(c, nil)
	for i := range c {
		x.SetVec(i, 1+float64(i%7)*1e-3)
	}
	r, _ := q.Dims()
	y := mat.NewVecDense(r, nil)
	var lambda float64
	for range 1000 {
		nrm := mat.Norm(x, 2)
		if nrm == 0 {
			return 0
		}
		x.ScaleVec(1/nrm, x)
		y.MulVec(q, x)
		x.MulVec(q.T(), y)
		next := mat.Norm(x, 2) // ‖QᵀQ x̂‖ → λmax
		if math.Abs(next-lambda) <= 1e-12*next {
			lambda = next
			break
		}
		lambda = next
	}
	return lambda * (1 + 1e-6)
}

func mustJT(t *testing.T, dom *Domain) *junctionTree {
	t.Helper()
	jt, err := newJunctionTree(dom, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return jt
}

// TestEstimateProgress: the progress callback sees the start, then
// increasing iteration counts at least every ProgressEvery iterations, the
// asked-for total and the model's size.
func TestEstimateProgress(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	dom := randomDomain(t, rng, 3, 4)
	sizes := []int{dom.Size(0), dom.Size(1), dom.Size(2)}
	ds := randomDataset(t, 5, sizes, 300)
	meas := measure(ds, [][]int{{0, 1}, {1, 2}}, 10, rng)
	for _, method := range []Method{MirrorDescent, Accelerated} {
		var got []EstimateProgress
		var stats EstimateStats
		m, err := Estimate(context.Background(), ds.Domain(), meas, &EstimateOptions{
			Iters: 400, Method: method, Stats: &stats,
			Progress: func(p EstimateProgress) { got = append(got, p) },
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 || got[0].Iter != 0 {
			t.Fatalf("method %d: progress %v does not start at iteration 0", method, got)
		}
		for i, p := range got {
			if p.Iters != 400 || p.ModelSize != m.Size() {
				t.Errorf("method %d: report %+v, want Iters 400 and model size %v", method, p, m.Size())
			}
			if i > 0 && (p.Iter <= got[i-1].Iter || p.Iter-got[i-1].Iter > ProgressEvery) {
				t.Errorf("method %d: iteration %d reported after %d", method, p.Iter, got[i-1].Iter)
			}
		}
		if last := got[len(got)-1].Iter; stats.Iters-last > ProgressEvery {
			t.Errorf("method %d: last report at iteration %d of %d run", method, last, stats.Iters)
		}
	}
}

// stepProblem is a random fitting problem of the line-search tests: 4–6
// attributes of up to 5 values, 2 000 records drawn with dataSeed, noisy
// measurements (σ = 5) of 3–6 random sets of up to 3 attributes.
func stepProblem(t *testing.T, rng *rand.Rand, dataSeed uint64) (*Domain, []Measurement) {
	t.Helper()
	d := 4 + rng.IntN(3)
	dom := randomDomain(t, rng, d, 5)
	ds := randomDataset(t, dataSeed, slices.Clone(dom.sizes), 2000)
	return dom, measure(ds, dedupe(randomSets(rng, d, 3+rng.IntN(4), 3)), 5, rng)
}

// TestKeepStepSchedule drives the KeepStep rule through a scripted run of
// line searches: it keeps the accepted step, tries keepGrowth times it after
// wait first-trial acceptances, doubles wait when that fails (up to
// keepMaxWait), restarts it at 1 when it passes, and never exceeds max.
func TestKeepStepSchedule(t *testing.T) {
	var k keepStep
	a := 0.25
	g := keepGrowth
	// First search accepted at its third trial: keep a.
	if got := k.next(a, 3, 2); got != a {
		t.Fatalf("after a 3-trial search: start %v, want %v", got, a)
	}
	// One first-trial acceptance reaches wait = 1: try g·a.
	if got := k.next(a, 1, 2); got != g*a {
		t.Fatalf("after a first-trial acceptance: start %v, want %v", got, g*a)
	}
	// The larger step failed (accepted a at trial 2): wait becomes 2.
	wait := 1
	for round := 0; round < 10; round++ {
		wait = min(2*wait, keepMaxWait)
		if got := k.next(a, 2, 2); got != a {
			t.Fatalf("round %d: after a failed larger step: start %v, want %v", round, got, a)
		}
		for i := 1; i < wait; i++ {
			if got := k.next(a, 1, 2); got != a {
				t.Fatalf("round %d: tried a larger step after %d of %d acceptances", round, i, wait)
			}
		}
		if got := k.next(a, 1, 2); got != g*a {
			t.Fatalf("round %d: no larger step after %d acceptances", round, wait)
		}
	}
	// A larger step that passes restarts wait at 1: the next search
	// tries larger again, as GrowStep would.
	a *= g
	if got := k.next(a, 1, 2); got != g*a {
		t.Fatalf("after a passing larger step: start %v, want %v", got, g*a)
	}
	if got := k.next(a, 2, 2); got != a {
		t.Fatalf("after a failed larger step: start %v, want %v", got, a)
	}
	if got := k.next(a, 1, 2); got != a {
		t.Fatalf("tried a larger step after 1 of 2 acceptances")
	}
	// Never beyond max.
	k = keepStep{}
	for range 5 {
		if got := k.next(2, 1, 2); got != 2 {
			t.Fatalf("start %v beyond max 2", got)
		}
	}
}

// TestKeepStepFallsBack: when KeepStep's larger trial fails, the search
// tries the kept step next, then halves it, so an iteration whose kept
// step still passes costs two propagations.
func TestKeepStepFallsBack(t *testing.T) {
	rng := rand.New(rand.NewPCG(45, 46))
	ctx := context.Background()
	fellBack := 0
	for trial := range 6 {
		dom, meas := stepProblem(t, rng, uint64(300+trial))
		var trials []float64
		testTrial = func(alpha float64) { trials = append(trials, alpha) }
		_, err := Estimate(ctx, dom, meas, &EstimateOptions{Iters: 200, Step: KeepStep})
		testTrial = nil
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i < len(trials); i++ {
			// A trial keepGrowth times its predecessor's accepted step
			// that failed is followed by that step.
			if prev, cur := trials[i-1], trials[i]; cur < prev && cur != prev/2 {
				if cur != prev/keepGrowth {
					t.Fatalf("trial %d: step %v after %v: neither the kept step nor half", i, cur, prev)
				}
				fellBack++
			}
		}
	}
	if fellBack == 0 {
		t.Fatal("no larger trial failed: the case does not exercise the fall-back")
	}
}

// TestKeepStepMatchesGrowStep: on random problems KeepStep reaches the loss
// of GrowStep to 1e-6 relative after enough iterations to converge, with
// fewer marginal-oracle calls; from a warm start too.
func TestKeepStepMatchesGrowStep(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	ctx := context.Background()
	for trial := range 6 {
		dom, meas := stepProblem(t, rng, uint64(100+trial))
		warm, err := Estimate(ctx, dom, meas[:len(meas)-1], &EstimateOptions{Iters: 50, Step: GrowStep})
		if err != nil {
			t.Fatal(err)
		}
		for _, ws := range []*Model{nil, warm} {
			var grow, keep EstimateStats
			if _, err := Estimate(ctx, dom, meas, &EstimateOptions{Iters: 2000, Step: GrowStep, Stats: &grow, WarmStart: ws}); err != nil {
				t.Fatal(err)
			}
			if _, err := Estimate(ctx, dom, meas, &EstimateOptions{Iters: 2000, Step: KeepStep, Stats: &keep, WarmStart: ws}); err != nil {
				t.Fatal(err)
			}
			if !near(keep.Loss, grow.Loss, 1e-6) {
				t.Errorf("trial %d (warm %v): KeepStep loss %v, GrowStep %v", trial, ws != nil, keep.Loss, grow.Loss)
			}
			perIter := func(s EstimateStats) float64 { return float64(s.OracleCalls) / float64(max(1, s.Iters)) }
			t.Logf("trial %d warm %v: GrowStep %d calls / %d iterations, KeepStep %d / %d", trial, ws != nil, grow.OracleCalls, grow.Iters, keep.OracleCalls, keep.Iters)
			// Fewer calls per iteration, or fewer in all where KeepStep
			// reaches working precision and stops first.
			if perIter(grow) > 1.5 && perIter(keep) > 0.75*perIter(grow) && float64(keep.OracleCalls) > 0.75*float64(grow.OracleCalls) {
				t.Errorf("trial %d (warm %v): KeepStep %d calls in %d iterations, GrowStep %d in %d", trial, ws != nil, keep.OracleCalls, keep.Iters, grow.OracleCalls, grow.Iters)
			}
		}
	}
}

// TestKeepStepWarmStep: a KeepStep fit warm-started from a KeepStep model
// starts its first line search at the step that fit ended with, so it
// spends fewer oracle calls than one that starts at the full step, and the
// model it returns records its own last step.
func TestKeepStepWarmStep(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 44))
	ctx := context.Background()
	saved := 0
	for trial := range 6 {
		dom, meas := stepProblem(t, rng, uint64(200+trial))
		prev, err := Estimate(ctx, dom, meas[:len(meas)-1], &EstimateOptions{Iters: 100, Step: KeepStep})
		if err != nil {
			t.Fatal(err)
		}
		if !(prev.step > 0 && prev.step <= DefaultStepSize) {
			t.Fatalf("trial %d: fitted model records step %v", trial, prev.step)
		}
		noStep := *prev
		noStep.step = 0
		var from, full EstimateStats
		m, err := Estimate(ctx, dom, meas, &EstimateOptions{Iters: 20, Step: KeepStep, WarmStart: prev, Stats: &from})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Estimate(ctx, dom, meas, &EstimateOptions{Iters: 20, Step: KeepStep, WarmStart: &noStep, Stats: &full}); err != nil {
			t.Fatal(err)
		}
		if from.Iters == full.Iters && from.OracleCalls > full.OracleCalls {
			t.Errorf("trial %d: %d calls from the recorded step, %d from the full step", trial, from.OracleCalls, full.OracleCalls)
		}
		if m.step <= 0 {
			t.Errorf("trial %d: refitted model records step %v", trial, m.step)
		}
		saved += full.OracleCalls - from.OracleCalls
	}
	if saved <= 0 {
		t.Errorf("starting from the recorded step saved %d oracle calls over 6 problems", saved)
	}
}

// TestEstimateReleasesWarmStart: once the warm start is copied, a fit holds
// no reference to the previous model, so a caller that handed over its only
// reference (AIM's rounds) gets that model's arenas freed during the fit
// rather than after it (peak memory). The finalizer runs only if nothing
// reaches the model when the fit's progress callback collects.
func TestEstimateReleasesWarmStart(t *testing.T) {
	rng := rand.New(rand.NewPCG(45, 46))
	ctx := context.Background()
	dom := randomDomain(t, rng, 5, 5)
	sizes := slices.Clone(dom.sizes)
	meas := measure(randomDataset(t, 300, sizes, 2000), dedupe(randomSets(rng, 5, 4, 3)), 5, rng)
	freed := make(chan struct{})
	ws, err := Estimate(ctx, dom, meas[:len(meas)-1], &EstimateOptions{Iters: 20})
	if err != nil {
		t.Fatal(err)
	}
	runtime.SetFinalizer(ws, func(*Model) { close(freed) })
	checked, done := false, false
	o := EstimateOptions{Iters: 60, WarmStart: ws, Step: KeepStep, Progress: func(p EstimateProgress) {
		if p.Iter == 0 || checked {
			return
		}
		checked, done = true, gctest.Collected(freed)
	}}
	ws = nil
	if _, err := Estimate(ctx, dom, meas, &o); err != nil {
		t.Fatal(err)
	}
	if !done {
		t.Error("the warm-start model was still reachable during the fit")
	}
}

// TestEstimateTakeWarmStart: a fit handed its warm start (TakeWarmStart)
// returns the model a copying fit returns, bit for bit. A warm start that
// mirror descent fitted to a prefix of the measurements hands over its step
// tables and the fit holds no arena of potentials; one with potentials
// (here: the same model with its potentials formed) is started from in
// place when the cliques are the warm start's (no second arena while the
// warm start is live), and otherwise copied as without the option. The
// potentials are copied through tiled maps; they must equal the full index
// maps' copy (the oracle below) bit for bit.
func TestEstimateTakeWarmStart(t *testing.T) {
	rng := rand.New(rand.NewPCG(47, 48))
	ctx := context.Background()
	for trial := range 6 {
		d := 4 + rng.IntN(3)
		dom := randomDomain(t, rng, d, 6)
		sizes := slices.Clone(dom.sizes)
		ds := randomDataset(t, uint64(400+trial), sizes, 2000)
		meas := measure(ds, dedupe(randomSets(rng, d, 3+rng.IntN(4), 3)), 5, rng)
		first := meas[:len(meas)-1]
		for _, tc := range []struct {
			name string
			meas []Measurement
		}{{"same cliques", first}, {"one more measurement", meas}} {
			fit := func(ws *Model, take bool) *Model {
				m, err := Estimate(ctx, dom, tc.meas, &EstimateOptions{Iters: 30, Step: KeepStep, WarmStart: ws, TakeWarmStart: take})
				if err != nil {
					t.Fatal(err)
				}
				return m
			}
			same := func(a, b *Model) bool {
				return slices.EqualFunc(a.steps, b.steps, slices.Equal[[]float64]) && slices.Equal(a.theta, b.theta) &&
					slices.Equal(a.p, b.p) && a.logZ == b.logZ && a.step == b.step
			}
			ws, err := Estimate(ctx, dom, first, &EstimateOptions{Iters: 30, Step: KeepStep})
			if err != nil {
				t.Fatal(err)
			}
			if ws.theta != nil || len(ws.steps) != len(first) {
				t.Fatalf("trial %d: a fit from scratch has potentials %v and %d step tables", trial, ws.theta != nil, len(ws.steps))
			}
			// Step tables, taken or copied.
			copied := *ws
			copied.steps = make([][]float64, len(ws.steps))
			for i, x := range ws.steps {
				copied.steps[i] = slices.Clone(x)
			}
			ref := fit(&copied, false)
			if got := fit(ws, true); !same(got, ref) || got.theta != nil || len(got.steps) != len(tc.meas) {
				t.Errorf("trial %d, %s: the fit that took its warm start's step tables differs from the copying one", trial, tc.name)
			}
			// Potentials: the warm start with its potentials formed.
			ws = &Model{dom: copied.dom, jt: copied.jt, theta: copied.potentials(), p: copied.p, logZ: copied.logZ, total: copied.total, step: copied.step}
			// The oracle: the warm start added through full index maps.
			jt, err := newJunctionTree(dom, setsOf(tc.meas), nil)
			if err != nil {
				t.Fatal(err)
			}
			want := make([]float64, jt.total)
			for k, c := range ws.jt.cliques {
				if to := jt.containing(c); to >= 0 {
					kernel.Expand(jt.block(want, to), ws.jt.block(ws.theta, k), jt.projMap(to, c))
				}
			}
			got := make([]float64, jt.total)
			if err := warmStart(got, jt, ws); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("trial %d, %s: the tiled warm start differs from the full maps'", trial, tc.name)
			}
			cp := *ws
			cp.theta = slices.Clone(ws.theta)
			ref = fit(&cp, false)
			arena := &ws.theta[0]
			m := fit(ws, true)
			if !same(m, ref) {
				t.Errorf("trial %d, %s: the fit that took its warm start differs from the copying one", trial, tc.name)
			}
			sameCl := sameCliques(ws.jt, m.jt)
			if inPlace := &m.theta[0] == arena; inPlace != sameCl {
				t.Errorf("trial %d, %s: potentials in place %v, same cliques %v", trial, tc.name, inPlace, sameCl)
			}
			if tc.name == "same cliques" && !sameCl {
				t.Errorf("trial %d: refitting the same measurements changed the cliques", trial)
			}
		}
	}
}

// setsOf returns the measurements' attribute sets.
func setsOf(meas []Measurement) [][]int {
	out := make([][]int, len(meas))
	for i, m := range meas {
		out[i] = m.Attrs
	}
	return out
}

// TestEstimateArenas: a mirror-descent fit from scratch or from a fit of
// the same measurements holds one model-sized arena, the marginals: its
// parameters are step tables of the measurements' sizes
// (objective.initSteps), and it keeps no arena of potentials or gradient;
// one from a model's potentials holds them too, in place when the cliques
// are the same. Each allocates one arena and little else. The model is one
// clique of 24⁴ cells (2.5 MB, below the size at which Estimate collects)
// with 1-way measurements, so the objective's own tables are small.
func TestEstimateArenas(t *testing.T) {
	rng := rand.New(rand.NewPCG(49, 50))
	ctx := context.Background()
	dom, err := NewDomain([]string{"a", "b", "c", "d"}, []int{24, 24, 24, 24})
	if err != nil {
		t.Fatal(err)
	}
	ds := randomDataset(t, 500, slices.Clone(dom.sizes), 3000)
	meas := measure(ds, [][]int{{0}, {1}, {2}, {3}}, 5, rng)
	extra := [][]int{{0, 1, 2, 3}}
	for _, fromPotentials := range []bool{false, true} {
		ws, err := Estimate(ctx, dom, meas, &EstimateOptions{Iters: 10, Step: KeepStep, ExtraCliques: extra})
		if err != nil {
			t.Fatal(err)
		}
		if fromPotentials {
			ws = &Model{dom: ws.dom, jt: ws.jt, theta: ws.potentials(), p: ws.p, logZ: ws.logZ, total: ws.total, step: ws.step}
		}
		arena := float64(ws.jt.total * 8)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		m, err := Estimate(ctx, dom, meas, &EstimateOptions{Iters: 10, Step: KeepStep, ExtraCliques: extra, WarmStart: ws, TakeWarmStart: true})
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		if fromPotentials && &m.theta[0] != &ws.theta[0] {
			t.Fatal("the fit did not take its warm start's potentials in place")
		}
		if !fromPotentials && (m.theta != nil || len(m.steps) != len(meas)) {
			t.Fatalf("a fit from step tables has potentials %v and %d step tables", m.theta != nil, len(m.steps))
		}
		const want = 1 // the marginals
		if got := float64(after.TotalAlloc-before.TotalAlloc) / arena; got < want || got > want+0.45 {
			t.Errorf("from potentials %v: a fit allocated %.2f arenas of %.0f bytes, want %v", fromPotentials, got, arena, want)
		}
	}
}
