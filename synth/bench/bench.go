// Package bench runs a synthesizer on a CSV dataset and reports its
// workload error, rounds, wall time and peak memory; it is the logic behind
// `dpsql bench`.
//
// Three error metrics are computed on the synthetic rows (for an
// answers-only mechanism, on its noisy answers clipped at 0), all on
// normalised answers (fractions of the table):
//
//   - l1 (spec/aim.md's workload error): the mean over the workload
//     marginals of ‖M_r(D)/|D| − M_r(D̂)/|D̂|‖₁;
//   - max (seed 000's metric): max over every cell of every workload
//     marginal of |q(D) − q(D̂)|;
//   - mean (seed 000 App. D.2): the mean of that absolute error over all
//     cells.
//
// Config.Metric picks the one in the "error" column and the mean row; the
// other two are printed beside it.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/dpsql/dpsql/budget"
	"github.com/dpsql/dpsql/internal/cputime"
	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/hdmm"
	"github.com/dpsql/dpsql/synth/noise"
	"github.com/dpsql/dpsql/synth/pgm"
	"github.com/dpsql/dpsql/synth/pgm/pgmcsv"
	"github.com/dpsql/dpsql/synth/registry"
)

// DefaultDelta is the δ used when Config.Delta is 0.
const DefaultDelta = 1e-9

// Config describes one benchmark.
type Config struct {
	CSV       string         // integer-coded CSV with a header row
	Domain    string         // JSON domain file {"attr": size, ...}
	Mechanism string         // registry name; "" means the default (aim)
	Epsilon   float64        // ε > 0
	Delta     float64        // δ; 0 means DefaultDelta
	Workload  string         // "all-3way" (default) or "all-2way"
	Seeds     int            // runs, seeds 0..Seeds−1; 0 means 1
	Options   []synth.Option // mechanism options
	Rows      int            // synthetic rows; 0 means the model's estimate
	// Metric is "l1" (default), "max" or "mean" (see the package comment).
	Metric string
	// Attrs, if set, restricts the data to these columns, in this order;
	// "name:k" also coarsens the column into k equal-width bins of its
	// codes (seed 000's reduced adult uses age:10).
	Attrs []string
	// Public, if set, is a CSV of public records with the same header and
	// domain file as CSV; it is restricted like CSV and passed to the
	// mechanism as Input.Public.
	Public string
	// Progress, if non-nil, receives one line per progress report.
	Progress io.Writer
	// ModelBudget bounds the model's error evaluation: workload sets whose
	// inference is planned to sweep more table cells than this
	// (pgm.Model.MarginalCost) are left out of the "model" column, and a
	// note says how many. 0 means DefaultModelBudget; negative, no bound.
	ModelBudget float64
}

// DefaultModelBudget is Config.ModelBudget's default: 2^32 cells, a few
// seconds of inference. On adult at ε = 10 (a 69 MB model, cliques of 2–5 M
// cells joined by separators of 24–52 k cells) it leaves out 1 of the 364
// 3-way sets, age × hours-per-week × native-country, planned at 6·10^11
// cells (the rest together: about 10^10).
const DefaultModelBudget = 1 << 32

// Report is the outcome of one seed.
type Report struct {
	Seed   int
	Error  float64 // the Config.Metric error
	Errors Errors  // all three metrics
	// ModelErrors are the same metrics for the answers of the released
	// graphical model itself (its marginals by inference, before any row
	// is drawn); Model is false for mechanisms that release no model.
	ModelErrors Errors
	Model       bool
	// ModelSets is the number of workload sets in ModelErrors (fewer than
	// the workload's when Config.ModelBudget left some out).
	ModelSets int
	Rounds    int
	RhoUsed   float64
	Wall      time.Duration
	CPU       time.Duration // process CPU time (user + system) during the run
	ModelMB   float64       // the released model's size (0 without a model)
	PeakMB    float64       // this run's peak resident set (0 if unknown)
	HeapMB    float64       // this run's peak Go heap (objects), sampled
	// BaseMB is the resident set when the run started (0 if unknown):
	// the binary's touched pages, the runtime, the loaded data and the
	// bench's state, which PeakMB includes (see memWatch).
	BaseMB float64
}

// Run executes the benchmark described by cfg and writes a table to w.
func Run(ctx context.Context, cfg Config, w io.Writer) error {
	_, err := Execute(ctx, cfg, w)
	return err
}

// Execute is Run returning the per-seed reports as well.
func Execute(ctx context.Context, cfg Config, w io.Writer) ([]Report, error) {
	if !(cfg.Epsilon > 0) {
		return nil, fmt.Errorf("bench: epsilon = %v, want > 0", cfg.Epsilon)
	}
	if cfg.Delta == 0 {
		cfg.Delta = DefaultDelta
	}
	if !(cfg.Delta > 0 && cfg.Delta < 1) {
		return nil, fmt.Errorf("bench: delta = %v, want in (0, 1)", cfg.Delta)
	}
	if cfg.Seeds <= 0 {
		cfg.Seeds = 1
	}
	mech := registry.Default()
	if cfg.Mechanism != "" {
		m, err := registry.Lookup(cfg.Mechanism)
		if err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		mech = m
	}
	runner, err := mech.New(cfg.Options)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	metric, err := metricOf(cfg.Metric)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	data, err := pgmcsv.Load(cfg.CSV, cfg.Domain)
	if err == nil {
		data, err = Restrict(data, cfg.Attrs)
	}
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	var public *pgm.Dataset
	if cfg.Public != "" {
		public, err = pgmcsv.Load(cfg.Public, cfg.Domain)
		if err == nil {
			public, err = Restrict(public, cfg.Attrs)
		}
		if err == nil && !public.Domain().Equal(data.Domain()) {
			err = errors.New("the public data's domain differs from the data's")
		}
		if err != nil {
			return nil, fmt.Errorf("bench: public data: %w", err)
		}
	}
	if public != nil && synth.PublicUseOf(mech) == synth.PublicNone {
		return nil, fmt.Errorf("bench: %s takes no public data", mech.Name())
	}
	if public == nil && synth.PublicUseOf(mech) == synth.PublicRequired {
		return nil, fmt.Errorf("bench: %s needs public data (--public FILE)", mech.Name())
	}
	work, err := Workload(cfg.Workload, data.Domain().Len())
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	rho, err := budget.RhoFromEpsilonDelta(cfg.Epsilon, cfg.Delta)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	// CPU is the process's, summed over the cores the run may use: on
	// two cores a run can take less wall time for more CPU
	// (docs/aim-performance.md, "Issue 19, twenty-third pass").
	fmt.Fprintf(w, "%s on %s: %d rows, %d attributes; ε = %v, δ = %v → ρ = %.6g; workload %s (%d marginals); metric %s; GOMAXPROCS %d (CPU is summed over the cores)\n",
		mech.Name(), cfg.CSV, data.Rows(), data.Domain().Len(), cfg.Epsilon, cfg.Delta, rho,
		workloadName(cfg.Workload), len(work), metric, runtime.GOMAXPROCS(0))
	if public != nil {
		fmt.Fprintf(w, "public data %s: %d rows\n", cfg.Public, public.Rows())
	}

	sets := make([][]int, len(work))
	for i, m := range work {
		sets[i] = m.Attrs
	}
	secret := noise.NewSecret()
	// One line per seed, written as soon as the seed finishes (fixed
	// widths instead of a tabwriter, which holds lines until its flush).
	// "error" and l1/max/mean are the synthetic rows'; "model" is the
	// released model's own answers under the chosen metric.
	fmt.Fprintf(w, "%4s  %10s  %10s  %7s  %7s  %8s  %6s  %10s  %7s  %7s  %8s  %7s  %7s  %7s\n", "seed", "error ("+metric+")",
		"model", "l1", "max", "mean", "rounds", "ρ used", "wall", "CPU", "model MB", "peak MB", "heap MB", "base MB")
	line := func(seed string, r Report, rounds string) {
		model := "-"
		if r.Model {
			model = fmt.Sprintf("%.4f", r.ModelErrors.Of(metric))
		}
		rho := "-"
		if r.RhoUsed > 0 {
			rho = fmt.Sprintf("%.6g", r.RhoUsed)
		}
		fmt.Fprintf(w, "%4s  %10.4f  %10s  %7.4f  %7.4f  %8.5f  %6s  %10s  %6.1fs  %6.1fs  %8.2f  %7.0f  %7.0f  %7.0f\n", seed, r.Error, model,
			r.Errors.L1, r.Errors.Max, r.Errors.Mean, rounds, rho, r.Wall.Seconds(), r.CPU.Seconds(), r.ModelMB, r.PeakMB, r.HeapMB, r.BaseMB)
	}
	var reports []Report
	for seed := range cfg.Seeds {
		in := &synth.Input{
			Data:     data,
			Workload: work,
			Rho:      rho,
			Noise:    noise.Derive(secret, int64(seed), "bench"),
			Rows:     cfg.Rows,
			Public:   public,
			// As the server gives its data directory.
			TempDir: os.TempDir(),
		}
		mem := startMemWatch()
		start, cpu0 := time.Now(), cputime.Process()
		if pw := cfg.Progress; pw != nil {
			in.Progress = func(s synth.Status) {
				fmt.Fprintf(pw, "seed %d %6.1fs %-6s round %4d  ρ used %.6g  model %.2f MB\n",
					seed, time.Since(start).Seconds(), s.Phase, s.Round, s.RhoUsed, s.ModelSize)
			}
		}
		res, err := runner.Run(ctx, in)
		wall, cpu := time.Since(start), cputime.Process()-cpu0
		peak, heap := mem.end()
		if err != nil {
			return reports, fmt.Errorf("bench: seed %d: %w", seed, err)
		}
		note := res.Note
		largest, largestRound := largestModel(res.Rounds)
		r := Report{Seed: seed, Rounds: len(res.Rounds), RhoUsed: res.RhoUsed, Wall: wall, CPU: cpu, PeakMB: peak, BaseMB: mem.baseMB, HeapMB: heap}
		if mech.Output() == synth.AnswersOnly {
			// hdmm_lls releases Kronecker measurements; its answers are
			// their least-squares marginals.
			var ans []synth.Measurement
			if ans, err = hdmm.LeastSquares(res.Measurements, domSizes(data.Domain())); err == nil {
				r.Errors, err = AnswerErrors(data, ans)
			}
		} else {
			r.Errors, err = WorkloadErrors(data, sets, res.Rows)
		}
		if err == nil && res.Model != nil {
			// The model's answers read its marginals only: the rest of
			// the result (the snapshots, the measurements, the rows)
			// goes before the evaluation's inference tables come (at
			// ε = 10 the process's peak, 627 → 594 MB, is still this
			// evaluation's, not the run's: docs/aim-performance.md).
			model := res.Model.Lean()
			res = nil
			synth.ReleaseAfter(model.Size())
			r.Model, r.ModelMB = true, model.Size()
			r.ModelErrors, r.ModelSets, err = ModelErrorsWithin(ctx, data, sets, model, cfg.ModelBudget)
		}
		if err != nil {
			return reports, fmt.Errorf("bench: seed %d: %w", seed, err)
		}
		r.Error = r.Errors.Of(metric)
		reports = append(reports, r)
		line(strconv.Itoa(seed), r, strconv.Itoa(r.Rounds))
		if note != "" {
			fmt.Fprintf(w, "seed %d note: %s\n", seed, note)
		}
		if r.Model && largest > r.ModelMB+0.005 { // sizes print to 0.01 MB
			fmt.Fprintf(w, "seed %d note: the run held a %.2f MB model (round %d), larger than the %.2f MB it released\n",
				seed, largest, largestRound, r.ModelMB)
		}
		if r.Model && r.ModelSets < len(sets) {
			fmt.Fprintf(w, "seed %d note: model error over %d of %d workload marginals; the others need more than %.3g cells of inference each (--model-budget)\n",
				seed, r.ModelSets, len(sets), modelBudget(cfg.ModelBudget))
		}
		// As the server does after a synthesis: the next seed starts on
		// the memory this one left, not on top of its garbage (res is
		// not read again).
		synth.ReleaseAfter(r.ModelMB)
	}
	var mean Report
	mean.Model = len(reports) > 0
	for _, r := range reports {
		mean.Model = mean.Model && r.Model
		mean.ModelErrors.L1 += r.ModelErrors.L1 / float64(len(reports))
		mean.ModelErrors.Max += r.ModelErrors.Max / float64(len(reports))
		mean.ModelErrors.Mean += r.ModelErrors.Mean / float64(len(reports))
		mean.HeapMB = max(mean.HeapMB, r.HeapMB)
		mean.ModelMB = max(mean.ModelMB, r.ModelMB)
		mean.Error += r.Error / float64(len(reports))
		mean.Errors.L1 += r.Errors.L1 / float64(len(reports))
		mean.Errors.Max += r.Errors.Max / float64(len(reports))
		mean.Errors.Mean += r.Errors.Mean / float64(len(reports))
		mean.Wall += r.Wall / time.Duration(len(reports))
		mean.CPU += r.CPU / time.Duration(len(reports))
		mean.Rounds += r.Rounds
		mean.PeakMB = max(mean.PeakMB, r.PeakMB)
		mean.BaseMB = max(mean.BaseMB, r.BaseMB)
	}
	// The mean row's size and memory columns are the largest of the seeds'.
	line("mean", mean, fmt.Sprintf("%.1f", float64(mean.Rounds)/float64(len(reports))))
	return reports, nil
}

// largestModel returns the largest model size of the rounds (MB) and the
// first round that held it (0, 0 without rounds). A refit can triangulate
// the model more tightly than the round before, so a run may hold a
// larger model than it releases; its memory is bounded by that one.
func largestModel(rounds []synth.Round) (mb float64, round int) {
	for _, r := range rounds {
		if r.ModelSize > mb {
			mb, round = r.ModelSize, r.Round
		}
	}
	return mb, round
}

func workloadName(s string) string {
	if s == "" {
		return "all-3way"
	}
	return s
}

// Workload returns the named workload over d attributes: "all-kway" (k ≥ 1)
// is every k-subset with weight 1; "" means all-3way.
func Workload(name string, d int) ([]synth.Marginal, error) {
	name = workloadName(strings.ToLower(strings.TrimSpace(name)))
	ks, ok := strings.CutPrefix(name, "all-")
	ks, ok2 := strings.CutSuffix(ks, "way")
	k, err := strconv.Atoi(ks)
	if !ok || !ok2 || err != nil || k < 1 {
		return nil, fmt.Errorf("unknown workload %q (want all-2way, all-3way, ...)", name)
	}
	if k > d {
		return nil, fmt.Errorf("workload %s needs at least %d attributes, have %d", name, k, d)
	}
	var out []synth.Marginal
	set := make([]int, k)
	var rec func(start, i int)
	rec = func(start, i int) {
		if i == k {
			out = append(out, synth.Marginal{Attrs: append([]int(nil), set...), Weight: 1})
			return
		}
		for a := start; a < d; a++ {
			set[i] = a
			rec(a+1, i+1)
		}
	}
	rec(0, 0)
	return out, nil
}

// Errors are a release's workload errors under the three metrics.
type Errors struct {
	L1   float64 // mean over marginals of the L1 distance of normalised marginals
	Max  float64 // max over all cells of the absolute error of normalised answers
	Mean float64 // mean over all cells of that absolute error
}

// Of returns the error under metric ("l1", "max" or "mean").
func (e Errors) Of(metric string) float64 {
	switch metric {
	case "max":
		return e.Max
	case "mean":
		return e.Mean
	}
	return e.L1
}

func metricOf(s string) (string, error) {
	switch m := strings.ToLower(strings.TrimSpace(s)); m {
	case "", "l1":
		return "l1", nil
	case "max", "mean":
		return m, nil
	}
	return "", fmt.Errorf("unknown metric %q (want l1, max or mean)", s)
}

// WorkloadError is the l1 workload error of rows (see WorkloadErrors).
func WorkloadError(data *pgm.Dataset, sets [][]int, rows [][]uint16) (float64, error) {
	e, err := WorkloadErrors(data, sets, rows)
	return e.L1, err
}

// WorkloadErrors compares the marginals over sets of data and of the
// column-major rows, normalised to fractions, under the three metrics. It
// counts one marginal at a time to keep memory low.
func WorkloadErrors(data *pgm.Dataset, sets [][]int, rows [][]uint16) (Errors, error) {
	syn, err := pgm.NewDataset(data.Domain(), rows)
	if err != nil {
		return Errors{}, fmt.Errorf("synthetic rows: %w", err)
	}
	if syn.Rows() == 0 {
		return Errors{}, errors.New("no synthetic rows")
	}
	var acc errorAcc
	var x, y []float64
	for _, s := range sets {
		x = data.MarginalTo(x, s)
		y = syn.MarginalTo(y, s)
		acc.add(x, y)
	}
	return acc.errors(), nil
}

// ModelErrors is WorkloadErrors for the model's own answers: the marginals
// over sets inferred from model, compared with the data's.
func ModelErrors(ctx context.Context, data *pgm.Dataset, sets [][]int, model *pgm.Model) (Errors, error) {
	e, _, err := ModelErrorsWithin(ctx, data, sets, model, -1)
	return e, err
}

func modelBudget(b float64) float64 {
	switch {
	case b == 0:
		return DefaultModelBudget
	case b < 0:
		return math.Inf(1)
	}
	return b
}

// ModelErrorsWithin is ModelErrors over the sets whose inference is
// planned to sweep at most budget cells (0: DefaultModelBudget; negative:
// every set); it returns how many sets it compared. It is an evaluation,
// not the mechanism's work, so it runs on every CPU whatever GOMAXPROCS
// says, and restores GOMAXPROCS on return.
func ModelErrorsWithin(ctx context.Context, data *pgm.Dataset, sets [][]int, model *pgm.Model, budget float64) (Errors, int, error) {
	if !model.Domain().Equal(data.Domain()) {
		return Errors{}, 0, errors.New("the model's domain differs from the data's")
	}
	limit := modelBudget(budget)
	var within [][]int
	for _, s := range sets {
		if math.IsInf(limit, 1) || model.MarginalCost(s) <= limit {
			within = append(within, s)
		}
	}
	if n := runtime.NumCPU(); n > runtime.GOMAXPROCS(0) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(n))
	}
	// Inference runs concurrently: each set's comparison is kept apart and
	// accumulated in order afterwards, so that the sums do not depend on
	// the schedule. The marginals are only read, so they come in reused
	// buffers (the path AIM's scoring takes).
	per := make([]errorAcc, len(within))
	err := model.MarginalsVisit(ctx, within, func(i int, y []float64) {
		per[i].add(data.MarginalTo(nil, within[i]), y)
	})
	if err != nil {
		return Errors{}, 0, fmt.Errorf("model marginals: %w", err)
	}
	var acc errorAcc
	for _, p := range per {
		acc.merge(p)
	}
	return acc.errors(), len(within), nil
}

// AnswerError is the l1 error of noisy answers (see AnswerErrors).
func AnswerError(data *pgm.Dataset, ans []synth.Measurement) (float64, error) {
	e, err := AnswerErrors(data, ans)
	return e.L1, err
}

// AnswerErrors is WorkloadErrors for noisy answers (clipped at 0) to
// marginals of data.
func AnswerErrors(data *pgm.Dataset, ans []synth.Measurement) (Errors, error) {
	if len(ans) == 0 {
		return Errors{}, errors.New("no answers")
	}
	var acc errorAcc
	var x []float64
	for _, a := range ans {
		x = data.MarginalTo(x, a.Attrs)
		if len(x) != len(a.Y) {
			return Errors{}, fmt.Errorf("answer over %v has %d cells, want %d", a.Attrs, len(a.Y), len(x))
		}
		y := make([]float64, len(a.Y))
		for j, v := range a.Y {
			y[j] = max(v, 0)
		}
		acc.add(x, y)
	}
	return acc.errors(), nil
}

// errorAcc accumulates the three metrics marginal by marginal.
type errorAcc struct {
	l1, max, sum float64
	marginals    int
	cells        int
}

// add compares x/Σx with y/Σy (a zero vector is compared as uniform).
func (a *errorAcc) add(x, y []float64) {
	var sx, sy float64
	for i := range x {
		sx += x[i]
		sy += y[i]
	}
	var l1 float64
	for i := range x {
		px, py := 1/float64(len(x)), 1/float64(len(y))
		if sx > 0 {
			px = x[i] / sx
		}
		if sy > 0 {
			py = y[i] / sy
		}
		d := math.Abs(px - py)
		l1 += d
		a.max = max(a.max, d)
	}
	a.l1 += l1
	a.sum += l1
	a.marginals++
	a.cells += len(x)
}

// merge adds b's marginals to a.
func (a *errorAcc) merge(b errorAcc) {
	a.l1 += b.l1
	a.sum += b.sum
	a.max = max(a.max, b.max)
	a.marginals += b.marginals
	a.cells += b.cells
}

func (a *errorAcc) errors() Errors {
	if a.marginals == 0 {
		return Errors{}
	}
	return Errors{L1: a.l1 / float64(a.marginals), Max: a.max, Mean: a.sum / float64(a.cells)}
}

// Restrict returns data restricted to the named columns, in that order;
// "name:k" coarsens a column of size s into k equal-width bins (code v
// becomes v·k/s). No names means data itself.
func Restrict(data *pgm.Dataset, attrs []string) (*pgm.Dataset, error) {
	if len(attrs) == 0 {
		return data, nil
	}
	dom := data.Domain()
	names := make([]string, len(attrs))
	sizes := make([]int, len(attrs))
	cols := make([][]uint16, len(attrs))
	seen := map[int]bool{}
	for j, spec := range attrs {
		name, bins, coarse := strings.Cut(strings.TrimSpace(spec), ":")
		i, ok := dom.Index(name)
		if !ok {
			return nil, fmt.Errorf("no column %q", name)
		}
		if seen[i] {
			return nil, fmt.Errorf("column %q listed twice", name)
		}
		seen[i] = true
		size, col := dom.Size(i), data.Column(i)
		names[j], sizes[j], cols[j] = name, size, col
		if !coarse {
			continue
		}
		k, err := strconv.Atoi(bins)
		if err != nil || k < 1 || k > size {
			return nil, fmt.Errorf("column %q: bins %q, want an integer in [1, %d]", name, bins, size)
		}
		out := make([]uint16, len(col))
		for r, v := range col {
			out[r] = uint16(int(v) * k / size)
		}
		sizes[j], cols[j] = k, out
	}
	d, err := pgm.NewDomain(names, sizes)
	if err != nil {
		return nil, err
	}
	return pgm.NewDataset(d, cols)
}
