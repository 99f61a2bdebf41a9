package privbayes

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dpsql/dpsql/internal/widegen"
	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/internal/synthtest"
	"github.com/dpsql/dpsql/synth/noise"
	"github.com/dpsql/dpsql/synth/pgm"
)

var secret = []byte("privbayes test secret, 32 bytes!")

func testInput(seed int64, rho float64) *synth.Input {
	return &synth.Input{
		Data:  synthtest.Chain(5, 3000, []int{4, 3, 5, 2, 4}),
		Rho:   rho,
		Noise: noise.Derive(secret, seed, "t"),
	}
}

// checkResult is synthtest.CheckResult, with rows-only results checked
// here: no model, budget within ρ, rows inside the domain.
func checkResult(t *testing.T, out synth.Output, in *synth.Input, res *synth.Result) {
	t.Helper()
	if out != synth.RowsOnly {
		synthtest.CheckResult(t, out, in, res)
		return
	}
	if res.Model != nil || !(res.RhoUsed > 0) || res.RhoUsed > in.Rho*(1+1e-12) {
		t.Fatalf("rows-only result: model %v, ρ used %v of %v", res.Model != nil, res.RhoUsed, in.Rho)
	}
	dom := in.Data.Domain()
	if len(res.Rows) != dom.Len() {
		t.Fatalf("%d columns, want %d", len(res.Rows), dom.Len())
	}
	for a, col := range res.Rows {
		if len(col) != len(res.Rows[0]) || len(col) == 0 {
			t.Fatalf("column %d has %d rows", a, len(col))
		}
		for _, v := range col {
			if int(v) >= dom.Size(a) {
				t.Fatalf("column %d: code %d outside %d", a, v, dom.Size(a))
			}
		}
	}
}

func randomData(r *rand.Rand, n int, sizes []int) *pgm.Dataset {
	names := make([]string, len(sizes))
	cols := make([][]uint16, len(sizes))
	for i := range sizes {
		names[i] = string(rune('a' + i))
		cols[i] = make([]uint16, n)
		for j := range n {
			// Correlated with column 0 half of the time.
			if i > 0 && r.IntN(2) == 0 {
				cols[i][j] = cols[0][j] % uint16(sizes[i])
			} else {
				cols[i][j] = uint16(r.IntN(sizes[i]))
			}
		}
	}
	dom, _ := pgm.NewDomain(names, sizes)
	ds, err := pgm.NewDataset(dom, cols)
	if err != nil {
		panic(err)
	}
	return ds
}

// bruteMI is I(X; Π) in nats straight from the records.
func bruteMI(ds *pgm.Dataset, x int, parents []int) float64 {
	n := float64(ds.Rows())
	joint, px, pp := map[string]float64{}, map[uint16]float64{}, map[string]float64{}
	for r := range ds.Rows() {
		key := ""
		for _, p := range parents {
			key += string(rune(ds.Column(p)[r] + 1))
		}
		v := ds.Column(x)[r]
		joint[key+"|"+string(rune(v+1))]++
		px[v]++
		pp[key]++
	}
	var mi float64
	for k, c := range joint {
		i := len(k) - 1
		for k[i] != '|' {
			i--
		}
		v := uint16([]rune(k[i+1:])[0] - 1)
		mi += c / n * math.Log(c*n/(px[v]*pp[k[:i]]))
	}
	return mi
}

func TestMutualInformationBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for trial := range 20 {
		sizes := []int{2 + r.IntN(3), 2 + r.IntN(3), 1 + r.IntN(4), 2}
		ds := randomData(r, 5+r.IntN(60), sizes)
		x := r.IntN(4)
		var parents []int
		for a := range 4 {
			if a != x && r.IntN(2) == 0 {
				parents = append(parents, a)
			}
		}
		tab := ds.MarginalTo(nil, append(slices.Clone(parents), x))
		got := CountMI(tab, sizes[x]) / float64(ds.Rows())
		want := bruteMI(ds, x, parents)
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("trial %d: I(%d; %v) = %v, brute force %v", trial, x, parents, got, want)
		}
		if s := Score(tab, sizes[x], 1e9); math.Abs(s-float64(ds.Rows())*want) > 1e-7 {
			t.Errorf("trial %d: score %v, want n·I = %v", trial, s, float64(ds.Rows())*want)
		}
	}
}

// The score's change from adding one record never exceeds Sensitivity, on
// both sides of the public bound N̄ (small here so that n crosses it).
func TestScoreSensitivity(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	const maxRows = 12
	worst := 0.0
	for range 3000 {
		sx, sp := 2+r.IntN(3), 1+r.IntN(4)
		n := 1 + r.IntN(25)
		tab := make([]float64, sx*sp)
		for range n {
			// Skewed tables make the extreme changes likelier.
			tab[r.IntN(1+r.IntN(len(tab)))]++
		}
		s0 := Score(tab, sx, maxRows)
		tab[r.IntN(len(tab))]++
		s1 := Score(tab, sx, maxRows)
		worst = max(worst, math.Abs(s1-s0))
		if bound := Sensitivity(maxRows, max(sx, sp)); math.Abs(s1-s0) > bound {
			t.Fatalf("score changed by %v > Δ = %v (table %v)", math.Abs(s1-s0), bound, tab)
		}
	}
	t.Logf("largest change %.3f, Δ = %.3f", worst, Sensitivity(maxRows, 5))
}

// The budget is spent exactly: (d−1) selections at ε²/8 and m Gaussian
// measurements at 1/(2σ²).
func TestAccounting(t *testing.T) {
	for _, m := range []synth.Mechanism{Mechanism{}, PGM{}} {
		for _, k := range []int{0, 1, 2} {
			in := testInput(int64(k), 0.3)
			opts := []synth.Option{{Name: "DEGREE", Value: k}}
			if m.Name() == "privbayes_pgm" {
				opts = append(opts, synth.Option{Name: "ITERS", Value: 50})
			}
			res := synthtest.MustRun(t, m, opts, in)
			checkResult(t, m.Output(), in, res)
			d := in.Data.Domain().Len()
			sel := d
			if k == 0 {
				sel = 1
			}
			eps, sigma := Budget(in.Rho, DefaultStructure, sel, len(res.Measurements))
			want := float64(sel-1)*eps*eps/8 + float64(len(res.Measurements))/(2*sigma*sigma)
			if math.Abs(res.RhoUsed-want) > 1e-12 || math.Abs(res.RhoUsed-in.Rho) > 1e-12 {
				t.Errorf("%s k=%d: ρ used %v, want %v = budget %v", m.Name(), k, res.RhoUsed, want, in.Rho)
			}
			for _, ms := range res.Measurements {
				if ms.Sigma != sigma || len(ms.Attrs) > k+1 {
					t.Errorf("%s k=%d: measurement over %v with σ %v, want ≤ %d attributes and σ %v", m.Name(), k, ms.Attrs, ms.Sigma, k+1, sigma)
				}
			}
			if k == 0 && len(res.Measurements) != d {
				t.Errorf("k=0 measured %d marginals, want the %d 1-way ones", len(res.Measurements), d)
			}
		}
	}
}

// With a large budget, k = 1 recovers the chain: every attribute's parent
// is a neighbour in the chain.
func TestStructureRecoversChain(t *testing.T) {
	in := testInput(3, 1e4)
	opt := (&Options{Degree: 1, degreeSet: true}).defaults()
	dom := in.Data.Domain()
	maxSize := 5
	eps, _ := Budget(in.Rho, opt.Structure, dom.Len(), dom.Len())
	nodes, rho, err := greedyBayes(context.Background(), in, opt, eps, Sensitivity(opt.MaxRows, maxSize))
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(rho-float64(dom.Len()-1)*eps*eps/8) > 1e-12 {
		t.Errorf("structure ρ %v", rho)
	}
	for _, nd := range nodes[1:] {
		if len(nd.Parents) != 1 || (nd.Parents[0] != nd.Attr-1 && nd.Parents[0] != nd.Attr+1) {
			t.Errorf("node %d has parents %v, want a chain neighbour", nd.Attr, nd.Parents)
		}
	}
}

// Noiseless measurements give the true conditional tables, and sampling
// the network reproduces them.
func TestNetworkConditionals(t *testing.T) {
	ds := synthtest.Chain(11, 4000, []int{3, 4, 2})
	dom := ds.Domain()
	nodes := []Node{{Attr: 1}, {Attr: 0, Parents: []int{1}}, {Attr: 2, Parents: []int{0, 1}}}
	meas := []pgm.Measurement{{Attrs: []int{0, 1, 2}, Y: ds.MarginalTo(nil, []int{0, 1, 2}), Sigma: 1}}
	net, err := NewNetwork(dom, nodes, meas)
	if err != nil {
		t.Fatal(err)
	}
	// P(a2 | a0, a1) from the records.
	joint := ds.MarginalTo(nil, []int{0, 1, 2})
	cpt := net.CPT(2)
	for i := 0; i < len(joint); i += 2 {
		s := joint[i] + joint[i+1]
		for v := range 2 {
			want := 0.5
			if s > 0 {
				want = joint[i+v] / s
			}
			if math.Abs(cpt[i+v]-want) > 1e-12 {
				t.Fatalf("P(a2=%d | cell %d) = %v, want %v", v, i/2, cpt[i+v], want)
			}
		}
	}
	in := &synth.Input{Data: ds, Rho: 1, Noise: noise.Derive(secret, 1, "sample")}
	rows, err := net.Sample(context.Background(), in, 40000)
	if err != nil {
		t.Fatal(err)
	}
	syn, _ := pgm.NewDataset(dom, rows)
	got := syn.MarginalTo(nil, []int{0, 1, 2})
	for i := range got {
		p, q := got[i]/40000, joint[i]/4000
		// 5 standard errors of a binomial proportion.
		if math.Abs(p-q) > 5*math.Sqrt(q*(1-q)/40000)+1e-3 {
			t.Errorf("cell %d: sampled %.4f, network %.4f", i, p, q)
		}
	}
}

// Negative noisy counts are truncated before normalising.
func TestNetworkTruncates(t *testing.T) {
	dom, _ := pgm.NewDomain([]string{"a", "b"}, []int{2, 2})
	meas := []pgm.Measurement{{Attrs: []int{0, 1}, Y: []float64{-5, 10, 0, 0}, Sigma: 1}}
	net, err := NewNetwork(dom, []Node{{Attr: 0}, {Attr: 1, Parents: []int{0}}}, meas)
	if err != nil {
		t.Fatal(err)
	}
	if c := net.CPT(1); c[0] != 0 || c[1] != 1 || c[2] != 0.5 || c[3] != 0.5 {
		t.Errorf("P(b | a) = %v, want [0 1 0.5 0.5]", c)
	}
	if c := net.CPT(0); c[0] != 1 || c[1] != 0 {
		t.Errorf("P(a) = %v, want [1 0]", c)
	}
}

// PrivBayes+PGM fits the same measurements better than the CPT heuristic
// (seed 001's claim), and both beat nothing: on the chain, with k = 1.
func TestQuality(t *testing.T) {
	sets := [][]int{{0, 1}, {1, 2}, {2, 3}, {3, 4}, {0, 2}}
	var errs [2]float64
	for i, m := range []synth.Mechanism{Mechanism{}, PGM{}} {
		for seed := range 3 {
			in := testInput(int64(100+seed), 0.05)
			r, _ := m.New([]synth.Option{{Name: "DEGREE", Value: 1}})
			res, err := r.Run(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			errs[i] += synthtest.Error(t, in.Data, sets, res.Rows) / 3
		}
	}
	t.Logf("workload error: privbayes %.4f, privbayes_pgm %.4f", errs[0], errs[1])
	if errs[0] > 0.3 || errs[1] > 0.3 {
		t.Errorf("workload errors %v, want < 0.3 (an independent model is ≈ 0.8 on adjacent pairs)", errs)
	}
}

func TestL1Loss(t *testing.T) {
	in := testInput(5, 0.2)
	r, err := PGM{}.New([]synth.Option{{Name: "LOSS", Value: 1}, {Name: "ITERS", Value: 300}, {Name: "DEGREE", Value: 1}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	synthtest.CheckResult(t, synth.SyntheticData, in, res)
	if e := synthtest.Error(t, in.Data, [][]int{{0, 1}, {1, 2}}, res.Rows); e > 0.3 {
		t.Errorf("L1 workload error %.4f", e)
	}
}

func TestOptionsAndCancel(t *testing.T) {
	if _, err := (PGM{}).New([]synth.Option{{Name: "LOSS", Value: 3}}); err == nil {
		t.Error("LOSS = 3 accepted")
	}
	if _, err := (Mechanism{}).New([]synth.Option{{Name: "ITERS", Value: 3}}); err == nil {
		t.Error("privbayes accepted the PGM option ITERS")
	}
	r, _ := Mechanism{}.New([]synth.Option{{Name: "MAX_CELLS", Value: 3}})
	if _, err := r.Run(context.Background(), testInput(1, 1)); err == nil {
		t.Error("an attribute larger than MAX_CELLS was accepted")
	}
	for _, m := range []synth.Mechanism{Mechanism{}, PGM{}} {
		r, _ := m.New(nil)
		synthtest.CheckCancel(t, r, testInput(2, 0.5))
	}
}

// Candidate scoring reads the cache's source directly: the cache holds only
// the measured marginals afterwards, not the thousands of scored ones.
func TestCacheHoldsMeasurementsOnly(t *testing.T) {
	in := testInput(6, 0.5)
	cache := synth.NewCache(in.Data)
	in.Data = cache
	r, _ := Mechanism{}.New(nil)
	res, err := r.Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if cache.Fetched() > len(res.Measurements) {
		t.Errorf("the cache fetched %d marginals for %d measurements", cache.Fetched(), len(res.Measurements))
	}
}

// With CHORDAL = 1 (the default) on a wide table, the Private-PGM model's
// cliques are exactly the measured sets: the junction tree does not grow
// beyond the measurements.
func TestChordalModelIsMeasured(t *testing.T) {
	tab, err := widegen.Generate(widegen.Config{Attrs: 40, Rows: 3000, Bins: 6, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	in := &synth.Input{Data: tab.Data, Rho: 0.5, Noise: noise.Derive(secret, 9, "wide")}
	r, _ := PGM{}.New([]synth.Option{{Name: "ITERS", Value: 20}, {Name: "MAX_CANDIDATES", Value: 200}})
	res, err := r.Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, m := range res.Measurements {
		want = append(want, fmt.Sprint(m.Attrs))
	}
	var got []string
	for _, c := range res.Model.Cliques() {
		got = append(got, fmt.Sprint(c))
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("model cliques %v, measured sets %v", got, want)
	}
	for _, m := range res.Measurements {
		if len(m.Attrs) < 3 {
			continue
		}
		return
	}
	t.Error("no 3-attribute measurement: the network has no degree-2 node")
}

// The conditional-table measurements carry discrete Gaussian noise of the
// declared σ, unbiased (statistical, seeded: 200 runs × the cells).
func TestMeasurementNoise(t *testing.T) {
	data := synthtest.Chain(8, 500, []int{3, 4, 2})
	var sum, sq, n float64
	var sigma float64
	for run := range 200 {
		in := &synth.Input{Data: data, Rho: 0.02, Noise: noise.Derive(secret, int64(run), "noise")}
		r, _ := Mechanism{}.New([]synth.Option{{Name: "DEGREE", Value: 1}})
		res, err := r.Run(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range res.Measurements {
			sigma = m.Sigma
			truth := data.MarginalTo(nil, m.Attrs)
			for i, y := range m.Y {
				d := y - truth[i]
				sum += d
				sq += d * d
				n++
			}
		}
	}
	mean, v := sum/n, sq/n
	// n ≈ 200·(12+8) cells: the mean's sd is σ/√n, the variance's relative
	// sd √(2/n) ≈ 2%.
	if math.Abs(mean) > 5*sigma/math.Sqrt(n) || math.Abs(v/(sigma*sigma)-1) > 0.1 {
		t.Errorf("noise mean %.3f, variance %.1f; want 0 and σ² = %.1f", mean, v, sigma*sigma)
	}
}
