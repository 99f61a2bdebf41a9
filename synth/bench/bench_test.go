package bench

import (
	"bytes"
	"context"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/internal/synthtest"
	"github.com/dpsql/dpsql/synth/pgm"
)

func TestWorkload(t *testing.T) {
	for _, tt := range []struct {
		name string
		d, n int
	}{{"all-3way", 14, 364}, {"ALL-2WAY", 14, 91}, {"", 5, 10}, {"all-1way", 3, 3}} {
		w, err := Workload(tt.name, tt.d)
		if err != nil || len(w) != tt.n {
			t.Errorf("Workload(%q, %d): %d marginals, %v; want %d", tt.name, tt.d, len(w), err, tt.n)
		}
		if _, err := synth.CanonicalWorkload(tt.d, w); err != nil {
			t.Errorf("Workload(%q): %v", tt.name, err)
		}
	}
	for _, bad := range []string{"all-way", "3way", "all-0way", "all-4way"} {
		if _, err := Workload(bad, 3); err == nil {
			t.Errorf("Workload(%q) accepted", bad)
		}
	}
}

func TestErrorAcc(t *testing.T) {
	tests := []struct {
		name string
		x, y [][]float64
		want Errors
	}{
		{"equal up to scale", [][]float64{{1, 1}}, [][]float64{{5, 5}}, Errors{}},
		{"disjoint", [][]float64{{1, 0}}, [][]float64{{0, 3}}, Errors{L1: 2, Max: 1, Mean: 1}},
		{"skewed", [][]float64{{3, 1}}, [][]float64{{1, 1}}, Errors{L1: 0.5, Max: 0.25, Mean: 0.25}},
		{"zero is uniform", [][]float64{{0, 0}}, [][]float64{{1, 1}}, Errors{}},
		// Two marginals of 2 and 4 cells: l1 is the mean over marginals,
		// mean is over the 6 cells, max over all of them.
		{"two marginals", [][]float64{{1, 0}, {1, 1, 1, 1}}, [][]float64{{1, 1}, {2, 0, 1, 1}},
			Errors{L1: (1 + 0.5) / 2, Max: 0.5, Mean: 1.5 / 6}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var acc errorAcc
			for i := range tt.x {
				acc.add(tt.x[i], tt.y[i])
			}
			got := acc.errors()
			if math.Abs(got.L1-tt.want.L1) > 1e-15 || math.Abs(got.Max-tt.want.Max) > 1e-15 || math.Abs(got.Mean-tt.want.Mean) > 1e-15 {
				t.Errorf("errors = %+v, want %+v", got, tt.want)
			}
			for _, m := range []string{"l1", "max", "mean"} {
				if got.Of(m) != map[string]float64{"l1": got.L1, "max": got.Max, "mean": got.Mean}[m] {
					t.Errorf("Of(%q) = %v", m, got.Of(m))
				}
			}
		})
	}
	if _, err := metricOf("median"); err == nil {
		t.Error("metric median accepted")
	}
}

func TestRestrict(t *testing.T) {
	dom, _ := pgm.NewDomain([]string{"a", "b", "c"}, []int{10, 2, 3})
	ds, _ := pgm.NewDataset(dom, [][]uint16{{0, 4, 5, 9}, {1, 0, 1, 0}, {2, 2, 0, 1}})
	got, err := Restrict(ds, []string{"c", "a:2"})
	if err != nil {
		t.Fatal(err)
	}
	d := got.Domain()
	if d.Len() != 2 || d.Name(0) != "c" || d.Size(0) != 3 || d.Name(1) != "a" || d.Size(1) != 2 {
		t.Fatalf("domain %v", d)
	}
	if c := got.Column(1); c[0] != 0 || c[1] != 0 || c[2] != 1 || c[3] != 1 {
		t.Errorf("a binned in 2 = %v, want [0 0 1 1]", c)
	}
	if c := got.Column(0); c[0] != 2 || c[3] != 1 {
		t.Errorf("c = %v", c)
	}
	for _, bad := range [][]string{{"z"}, {"a", "a"}, {"a:0"}, {"b:3"}, {"a:x"}} {
		if _, err := Restrict(ds, bad); err == nil {
			t.Errorf("Restrict(%v) accepted", bad)
		}
	}
	if same, _ := Restrict(ds, nil); same != ds {
		t.Error("no attrs should return the data itself")
	}
}

// TestWorkloadErrorOfData: the data itself has error 0, and a copy with one
// column reversed has the error computed by hand.
func TestWorkloadErrorOfData(t *testing.T) {
	dom, _ := pgm.NewDomain([]string{"a", "b"}, []int{2, 2})
	cols := [][]uint16{{0, 0, 1, 1}, {0, 1, 1, 1}}
	ds, _ := pgm.NewDataset(dom, cols)
	sets := [][]int{{0}, {1}, {0, 1}}
	if e, err := WorkloadError(ds, sets, cols); err != nil || e != 0 {
		t.Errorf("error of the data itself = %v, %v", e, err)
	}
	flipped := [][]uint16{cols[0], {1, 0, 0, 0}}
	// a: unchanged → 0; b: (1/4, 3/4) vs (3/4, 1/4) → 1; ab: true pairs
	// (0,0),(0,1),(1,1),(1,1) vs flipped (0,1),(0,0),(1,0),(1,0): cells
	// (1/4, 1/4, 0, 1/2) vs (1/4, 1/4, 1/2, 0) → 1. Mean 2/3.
	e, err := WorkloadError(ds, sets, flipped)
	if err != nil || math.Abs(e-2.0/3) > 1e-15 {
		t.Errorf("error = %v, %v; want %v", e, err, 2.0/3)
	}
}

// adult locates the shared adult data relative to the repository root, or
// skips.
func adult(t *testing.T) (csv, domain string) {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	csv = filepath.Join(root, "..", "shared", "data", "adult.csv")
	domain = filepath.Join(root, "..", "shared", "data", "adult-domain.json")
	if _, err := os.Stat(csv); err != nil {
		t.Skip("shared adult data not present")
	}
	return csv, domain
}

// envOptions parses DPSQL_ADULT_OPTS ("NAME=value,NAME=value").
func envOptions(t *testing.T) []synth.Option {
	var opts []synth.Option
	for _, kv := range strings.Split(os.Getenv("DPSQL_ADULT_OPTS"), ",") {
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			t.Fatalf("DPSQL_ADULT_OPTS: %q is not NAME=value", kv)
		}
		opts = append(opts, synth.Option{Name: k, Value: v})
	}
	return opts
}

// progress returns os.Stderr when DPSQL_ADULT_PROGRESS is set.
func progress() io.Writer {
	if os.Getenv("DPSQL_ADULT_PROGRESS") != "" {
		return os.Stderr
	}
	return nil
}

// TestAdult checks the accuracy targets of reference/targets.md on adult
// (ε = 1, δ = 1e-9, all 3-way marginals). It takes minutes, so it runs only
// when DPSQL_ADULT names the mechanisms to check (e.g. "aim,mst") and the
// data is present. Tolerances: the targets are means of 2–5 reference runs;
// one run of ours may be up to 10% worse and still be on target on average.
func TestAdult(t *testing.T) {
	which := os.Getenv("DPSQL_ADULT")
	if which == "" {
		t.Skip("set DPSQL_ADULT=aim,mst,mwem,independent to run")
	}
	csv, domain := adult(t)
	targets := map[string]float64{"aim": 0.19, "mst": 0.227, "mwem": 0.258, "independent": 0.350}
	seeds := 1
	if s, err := strconv.Atoi(os.Getenv("DPSQL_ADULT_SEEDS")); err == nil && s > 0 {
		seeds = s
	}
	for _, name := range strings.Split(which, ",") {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			reports, err := Execute(context.Background(), Config{
				CSV: csv, Domain: domain, Mechanism: name, Epsilon: 1, Workload: "all-3way", Seeds: seeds,
				Progress: progress(), Options: envOptions(t),
			}, &buf)
			t.Log("\n" + buf.String())
			if err != nil {
				t.Fatal(err)
			}
			var mean float64
			for _, r := range reports {
				mean += r.Error / float64(len(reports))
			}
			if target, ok := targets[name]; ok && mean > target*1.1 {
				t.Errorf("%s: mean error %.4f above target %.3f", name, mean, target)
			}
		})
	}
}

func TestAnswerError(t *testing.T) {
	dom, _ := pgm.NewDomain([]string{"a"}, []int{3})
	ds, _ := pgm.NewDataset(dom, [][]uint16{{0, 1, 1, 2}})
	ans := []synth.Measurement{{Measurement: pgm.Measurement{Attrs: []int{0}, Y: []float64{-5, 2, 2}, Sigma: 1}}}
	// (1/4, 1/2, 1/4) vs clipped (0, 2, 2)/4 = (0, 1/2, 1/2) → 1/2.
	if e, err := AnswerError(ds, ans); err != nil || math.Abs(e-0.5) > 1e-15 {
		t.Errorf("AnswerError = %v, %v; want 0.5", e, err)
	}
}

// TestModelErrors: a model fitted to exact 1-way marginals of two perfectly
// correlated columns is the independent (uniform) product, so its answers
// are exact on {a} and {b} and off by 1 in l1 on {a, b} (0.25 each against
// 0.5, 0, 0, 0.5); a model fitted to the exact joint answers it.
func TestModelErrors(t *testing.T) {
	ctx := context.Background()
	dom, _ := pgm.NewDomain([]string{"a", "b"}, []int{2, 2})
	ds, _ := pgm.NewDataset(dom, [][]uint16{{0, 0, 1, 1}, {0, 0, 1, 1}})
	sets := [][]int{{0}, {1}, {0, 1}}
	for _, tt := range []struct {
		name string
		meas []pgm.Measurement
		want Errors
	}{
		{"independent", []pgm.Measurement{{Attrs: []int{0}, Y: []float64{2, 2}, Sigma: 1}, {Attrs: []int{1}, Y: []float64{2, 2}, Sigma: 1}},
			Errors{L1: 1.0 / 3, Max: 0.25, Mean: 1.0 / 8}},
		{"joint", []pgm.Measurement{{Attrs: []int{0, 1}, Y: []float64{2, 0, 0, 2}, Sigma: 1}}, Errors{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, err := pgm.Estimate(ctx, dom, tt.meas, &pgm.EstimateOptions{Iters: 3000})
			if err != nil {
				t.Fatal(err)
			}
			got, err := ModelErrors(ctx, ds, sets, m)
			if err != nil {
				t.Fatal(err)
			}
			// The joint fit only approaches the zeros (exp-family model).
			const tol = 2e-3
			if math.Abs(got.L1-tt.want.L1) > tol || math.Abs(got.Max-tt.want.Max) > tol || math.Abs(got.Mean-tt.want.Mean) > tol {
				t.Errorf("ModelErrors = %+v, want %+v", got, tt.want)
			}
		})
	}
	other, _ := pgm.NewDomain([]string{"a", "b"}, []int{2, 3})
	m, _ := pgm.Estimate(ctx, other, []pgm.Measurement{{Attrs: []int{0}, Y: []float64{1, 1}, Sigma: 1}}, nil)
	if _, err := ModelErrors(ctx, ds, sets, m); err == nil {
		t.Error("a model over another domain was accepted")
	}
}

// TestMemWatch: a run that holds 64 MB peaks at least that high, and the
// next run, which holds nothing, does not inherit that peak where the
// high-water mark can be reset.
func TestMemWatch(t *testing.T) {
	const mb = 64
	w := startMemWatch()
	buf := make([]byte, mb<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	time.Sleep(3 * samplePeriod) // let the sampler see the heap
	runtime.KeepAlive(buf)
	rss, heap := w.end()
	if heap < mb {
		t.Errorf("heap peak %.0f MB while holding %d MB", heap, mb)
	}
	if rss != 0 && rss < mb {
		t.Errorf("RSS peak %.0f MB while holding %d MB", rss, mb)
	}
	if rss != 0 && !(w.baseMB > 0 && w.baseMB+mb <= rss+1) {
		t.Errorf("RSS %.0f MB at the start and %.0f MB at the peak while holding %d MB more", w.baseMB, rss, mb)
	}
	w = startMemWatch()
	rss2, heap2 := w.end()
	if heap2 >= mb {
		t.Errorf("heap peak %.0f MB after freeing", heap2)
	}
	if w.hwmReset && rss2 >= rss {
		t.Errorf("RSS peak %.0f MB after freeing, %.0f MB before: the high-water mark was not reset", rss2, rss)
	}
}

// TestStatmMB: the sampler's resident set (statm, one pread) is status's
// VmRSS, read back to back, and a second read of the open file gives it
// again.
func TestStatmMB(t *testing.T) {
	f, err := os.Open("/proc/self/statm")
	if err != nil {
		t.Skip("no /proc/self/statm")
	}
	defer f.Close()
	mem := make([]byte, 32<<20)
	for i := range mem {
		mem[i] = 1
	}
	var buf [128]byte
	for range 2 {
		got, ok := statmMB(f, buf[:])
		want := statusMB("VmRSS:")
		if !ok || want < 32 || math.Abs(got-want) > 2 {
			t.Errorf("statm gives %.1f MB resident (ok %v), status %.1f MB", got, ok, want)
		}
	}
	runtime.KeepAlive(mem)
}

// TestModelErrorsBudget: with a budget, ModelErrorsWithin compares exactly
// the sets whose planned inference fits it, and gives ModelErrors' answer
// over those sets; with no budget it is ModelErrors. The model is fitted
// to a chain's pairs, so the 3-way sets spread over several cliques and
// cost more than the pairs inside one.
func TestModelErrorsBudget(t *testing.T) {
	ctx := context.Background()
	ds := synthtest.Chain(3, 2000, []int{4, 5, 6, 3, 7})
	dom := ds.Domain()
	var meas []pgm.Measurement
	for a := range dom.Len() - 1 {
		s := []int{a, a + 1}
		meas = append(meas, pgm.Measurement{Attrs: s, Y: ds.MarginalTo(nil, s), Sigma: 1})
	}
	m, err := pgm.Estimate(ctx, dom, meas, &pgm.EstimateOptions{Iters: 200})
	if err != nil {
		t.Fatal(err)
	}
	var sets [][]int
	for _, w := range synthtest.AllK(dom.Len(), 3) {
		sets = append(sets, w.Attrs)
	}
	sets = append(sets, []int{0, 1}, []int{2, 3})
	all, err := ModelErrors(ctx, ds, sets, m)
	if err != nil {
		t.Fatal(err)
	}
	for _, budget := range []float64{-1, 1e9, 200, 60} {
		var within [][]int
		for _, s := range sets {
			if budget < 0 || m.MarginalCost(s) <= budget {
				within = append(within, s)
			}
		}
		got, n, err := ModelErrorsWithin(ctx, ds, sets, m, budget)
		if err != nil {
			t.Fatal(err)
		}
		want := all
		if len(within) < len(sets) {
			if want, err = ModelErrors(ctx, ds, within, m); err != nil {
				t.Fatal(err)
			}
		}
		if n != len(within) || got != want {
			t.Errorf("budget %v: %d sets, %+v; want %d, %+v", budget, n, got, len(within), want)
		}
		if budget == 60 && (n == 0 || n == len(sets)) {
			t.Errorf("budget 60 kept %d of %d sets: the case does not split them", n, len(sets))
		}
	}
}

// TestLargestModel checks the largest model a run held, which the bench
// notes when it is above the released one.
func TestLargestModel(t *testing.T) {
	for _, tt := range []struct {
		name  string
		sizes []float64
		mb    float64
		round int
	}{
		{"no rounds", nil, 0, 0},
		{"growing", []float64{1, 2, 3}, 3, 3},
		{"shrunk at the end", []float64{1, 7.98, 7.98, 5.31}, 7.98, 2},
	} {
		var rounds []synth.Round
		for i, s := range tt.sizes {
			rounds = append(rounds, synth.Round{Round: i + 1, ModelSize: s})
		}
		if mb, round := largestModel(rounds); mb != tt.mb || round != tt.round {
			t.Errorf("%s: largest model %v MB in round %d, want %v in round %d", tt.name, mb, round, tt.mb, tt.round)
		}
	}
}
