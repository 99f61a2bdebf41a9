package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dpsql/dpsql/budget"
	"github.com/dpsql/dpsql/internal/cputime"
	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/hdmm"
	"github.com/dpsql/dpsql/synth/internal/marginal"
	"github.com/dpsql/dpsql/synth/noise"
	"github.com/dpsql/dpsql/synth/pgm"
	"github.com/dpsql/dpsql/synth/pgm/pgmcsv"
	"github.com/dpsql/dpsql/synth/registry"
	"gonum.org/v1/gonum/mat"
)

// DropInConfig describes seed 001's Figure 1 experiment on one dataset:
// several mechanisms (each with and without Private-PGM) on a workload of
// random attribute subsets with prefix-range queries on the numeric
// attributes, the median of several runs of seed 001's error metric.
type DropInConfig struct {
	CSV, Domain string
	// Attrs, if set, restricts and coarsens the columns as Config.Attrs
	// does ("name:k" bins a column into k equal-width bins).
	Attrs []string
	// Numeric names the binned numeric attributes: the workload asks for
	// their prefix ranges [0, z] instead of their unit cells.
	Numeric []string
	// Subsets random Size-attribute subsets (default 15 of 3), drawn with
	// WorkloadSeed (public; the same workload for every mechanism).
	Subsets, Size int
	WorkloadSeed  uint64
	Epsilon       float64
	Delta         float64 // default DefaultDelta
	Runs          int     // default 5
	Mechanisms    []string
	// Options per mechanism name.
	Options map[string][]synth.Option
	// Timeout bounds each run (0: none).
	Timeout time.Duration
}

// DropInResult is one mechanism's runs.
type DropInResult struct {
	Mechanism string
	Errors    []float64 // per run, seed 001's metric
	Wall, CPU []time.Duration
	PeakMB    float64
	Failed    string // why the mechanism did not finish, if it did not
}

// Median is the median error.
func (r DropInResult) Median() float64 { return median(r.Errors) }

// PrefixWorkload returns n random size-attribute subsets of d attributes
// (without repetition, drawn with seed) as workload entries whose factor
// on each numeric attribute is the prefix-range matrix (seed 001, Section
// 5: "that attribute's unit queries are replaced by prefix range queries").
func PrefixWorkload(dom *pgm.Domain, numeric []bool, n, size int, seed uint64) []synth.Marginal {
	r := rand.New(rand.NewPCG(seed, 0xf16))
	seen := map[string]bool{}
	var out []synth.Marginal
	for tries := 0; len(out) < n && tries < 1000*n; tries++ {
		s := r.Perm(dom.Len())[:size]
		slices.Sort(s)
		if k := fmt.Sprint(s); seen[k] {
			continue
		} else {
			seen[k] = true
		}
		m := synth.Marginal{Attrs: s, Weight: 1}
		for j, a := range s {
			if numeric[a] {
				if m.Kron == nil {
					m.Kron = make([]*mat.Dense, len(s))
				}
				m.Kron[j] = prefix(dom.Size(a))
			}
		}
		out = append(out, m)
	}
	return out
}

func prefix(n int) *mat.Dense {
	p := mat.NewDense(n, n, nil)
	for z := range n {
		for v := 0; v <= z; v++ {
			p.Set(z, v, 1)
		}
	}
	return p
}

// PGMError is seed 001's workload error: the mean over the workload
// entries C of ‖W_C(μ_C − μ̂_C)‖₁ / (2‖W_C μ_C‖₁), μ and μ̂ normalised to
// sum to 1 (the total variation distance when W_C = I). est returns μ̂_C.
func PGMError(data *pgm.Dataset, work []synth.Marginal, est func(i int, attrs []int) []float64) float64 {
	dom := data.Domain()
	var sum float64
	for i, m := range work {
		sizes := make([]int, len(m.Attrs))
		for j, a := range m.Attrs {
			sizes[j] = dom.Size(a)
		}
		mu := normalised(data.MarginalTo(nil, m.Attrs))
		hat := normalised(est(i, m.Attrs))
		wt := pgm.KronMul(m.Kron, sizes, mu, false)
		we := pgm.KronMul(m.Kron, sizes, hat, false)
		var num, den float64
		for k := range wt {
			num += math.Abs(wt[k] - we[k])
			den += math.Abs(wt[k])
		}
		sum += num / (2 * den)
	}
	return sum / float64(len(work))
}

func normalised(x []float64) []float64 {
	var s float64
	for _, v := range x {
		s += v
	}
	out := make([]float64, len(x))
	if s == 0 {
		return out
	}
	for i, v := range x {
		out[i] = v / s
	}
	return out
}

func median(x []float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	s := slices.Clone(x)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func medianDur(x []time.Duration) time.Duration {
	f := make([]float64, len(x))
	for i, d := range x {
		f[i] = float64(d)
	}
	return time.Duration(median(f))
}

// DropIn runs the experiment and writes a table to w.
func DropIn(ctx context.Context, cfg DropInConfig, w io.Writer) ([]DropInResult, error) {
	if cfg.Subsets <= 0 {
		cfg.Subsets = 15
	}
	if cfg.Size <= 0 {
		cfg.Size = 3
	}
	if cfg.Runs <= 0 {
		cfg.Runs = 5
	}
	if cfg.Delta == 0 {
		cfg.Delta = DefaultDelta
	}
	data, err := pgmcsv.Load(cfg.CSV, cfg.Domain)
	if err == nil {
		data, err = Restrict(data, cfg.Attrs)
	}
	if err != nil {
		return nil, fmt.Errorf("dropin: %w", err)
	}
	dom := data.Domain()
	numeric := make([]bool, dom.Len())
	for _, name := range cfg.Numeric {
		if name == "" {
			continue
		}
		i, ok := dom.Index(name)
		if !ok {
			return nil, fmt.Errorf("dropin: no numeric column %q", name)
		}
		numeric[i] = true
	}
	if cfg.Size > dom.Len() {
		return nil, fmt.Errorf("dropin: subsets of %d attributes of %d", cfg.Size, dom.Len())
	}
	work := PrefixWorkload(dom, numeric, cfg.Subsets, cfg.Size, cfg.WorkloadSeed)
	rho, err := budget.RhoFromEpsilonDelta(cfg.Epsilon, cfg.Delta)
	if err != nil {
		return nil, fmt.Errorf("dropin: %w", err)
	}
	var ranged int
	for _, m := range work {
		if m.Kron != nil {
			ranged++
		}
	}
	fmt.Fprintf(w, "%s: %d rows, %d attributes (%d numeric); ε = %v, δ = %v → ρ = %.6g; %d random %d-subsets (%d with prefix ranges), workload seed %d, %d runs\n",
		cfg.CSV, data.Rows(), dom.Len(), len(cfg.Numeric), cfg.Epsilon, cfg.Delta, rho, len(work), cfg.Size, ranged, cfg.WorkloadSeed, cfg.Runs)
	secret := noise.NewSecret()
	var results []DropInResult
	for _, name := range cfg.Mechanisms {
		mech, err := registry.Lookup(name)
		if err != nil {
			results = append(results, DropInResult{Mechanism: name, Failed: "not registered"})
			continue
		}
		runner, err := mech.New(cfg.Options[mech.Name()])
		if err != nil {
			return results, fmt.Errorf("dropin: %w", err)
		}
		res := DropInResult{Mechanism: mech.Name()}
		for run := range cfg.Runs {
			rctx, cancel := ctx, context.CancelFunc(func() {})
			if cfg.Timeout > 0 {
				rctx, cancel = context.WithTimeout(ctx, cfg.Timeout)
			}
			in := &synth.Input{Data: synth.NewCache(data), Workload: work, Rho: rho,
				Noise: noise.Derive(secret, int64(run), "dropin", mech.Name())}
			start, cpu0 := time.Now(), cputime.Process()
			out, err := runner.Run(rctx, in)
			wall, cpu := time.Since(start), cputime.Process()-cpu0
			cancel()
			if err != nil {
				res.Failed = fmt.Sprintf("run %d: %v", run, err)
				break
			}
			e := PGMError(data, work, estimator(mech.Output(), out, dom))
			res.Errors = append(res.Errors, e)
			res.Wall = append(res.Wall, wall)
			res.CPU = append(res.CPU, cpu)
			res.PeakMB = peakMB()
			fmt.Fprintf(w, "  %s run %d: error %.4f, wall %.1fs, CPU %.1fs\n", mech.Name(), run, e, wall.Seconds(), cpu.Seconds())
		}
		results = append(results, res)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "mechanism\tmedian error\truns\tmedian wall\tmedian CPU\tpeak MB\t\n")
	for _, r := range results {
		if r.Failed != "" && len(r.Errors) == 0 {
			fmt.Fprintf(tw, "%s\t—\t0\t\t\t\t%s\n", r.Mechanism, r.Failed)
			continue
		}
		fmt.Fprintf(tw, "%s\t%.4f\t%d\t%.1fs\t%.1fs\t%.0f\t\n", r.Mechanism, r.Median(), len(r.Errors),
			medianDur(r.Wall).Seconds(), medianDur(r.CPU).Seconds(), r.PeakMB)
	}
	return results, tw.Flush()
}

// estimator answers a workload marginal from a release: from the model
// (Private-PGM's inference; no sampling), from the rows, or from the
// noisy answers (the measurement on the set, or projected from one on a
// superset).
func estimator(out synth.Output, res *synth.Result, dom *pgm.Domain) func(int, []int) []float64 {
	switch {
	case res.Model != nil:
		return func(_ int, attrs []int) []float64 { return res.Model.Marginal(attrs) }
	case res.Rows != nil:
		syn, err := pgm.NewDataset(dom, res.Rows)
		if err != nil {
			panic(err)
		}
		return func(_ int, attrs []int) []float64 { return syn.MarginalTo(nil, attrs) }
	}
	ans, err := hdmm.LeastSquares(res.Measurements, domSizes(dom))
	if err != nil {
		panic(err)
	}
	return func(_ int, attrs []int) []float64 {
		best := -1
		for k, m := range ans {
			if m.Query != nil || m.Coarse != nil || !marginal.Subset(attrs, m.Attrs) {
				continue
			}
			if best < 0 || len(m.Attrs) < len(ans[best].Attrs) {
				best = k
			}
		}
		if best < 0 {
			return make([]float64, dom.Cells(attrs))
		}
		m := ans[best]
		return marginal.ProjectTo(nil, dom, m.Attrs, m.Y, attrs)
	}
}

// ParseOptions reads "mech:NAME=V,NAME=V;mech2:..." into per-mechanism
// options.
func ParseOptions(s string) (map[string][]synth.Option, error) {
	out := map[string][]synth.Option{}
	for _, part := range strings.Split(s, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		mech, opts, ok := strings.Cut(part, ":")
		if !ok {
			return nil, fmt.Errorf("options %q: want mech:NAME=V,...", part)
		}
		for _, o := range strings.Split(opts, ",") {
			k, v, ok := strings.Cut(o, "=")
			if !ok {
				return nil, fmt.Errorf("option %q: want NAME=V", o)
			}
			out[mech] = append(out[mech], synth.Option{Name: strings.TrimSpace(k), Value: strings.TrimSpace(v)})
		}
	}
	return out, nil
}

// domSizes lists the attribute sizes of dom.
func domSizes(dom *pgm.Domain) []int {
	s := make([]int, dom.Len())
	for a := range s {
		s[a] = dom.Size(a)
	}
	return s
}
