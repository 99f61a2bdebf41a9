// Package bench runs a synthesizer on a CSV dataset and reports its
// workload error, rounds, wall time and peak memory; it is the logic behind
// `dpsql bench`.
//
// The workload error (spec/aim.md) is the mean over the workload marginals
// of ‖M_r(D)/|D| − M_r(D̂)/|D̂|‖₁, computed on the synthetic rows (for an
// answers-only mechanism, on its noisy answers clipped at 0).
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dpsql/dpsql/budget"
	"github.com/dpsql/dpsql/synth"
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
	// Progress, if non-nil, receives one line per progress report.
	Progress io.Writer
}

// Report is the outcome of one seed.
type Report struct {
	Seed    int
	Error   float64
	Rounds  int
	RhoUsed float64
	Wall    time.Duration
	CPU     time.Duration // process CPU time (user + system) during the run
	PeakMB  float64       // peak resident set so far (0 if unknown)
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
	data, err := pgmcsv.Load(cfg.CSV, cfg.Domain)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	work, err := Workload(cfg.Workload, data.Domain().Len())
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	rho, err := budget.RhoFromEpsilonDelta(cfg.Epsilon, cfg.Delta)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	fmt.Fprintf(w, "%s on %s: %d rows, %d attributes; ε = %v, δ = %v → ρ = %.6g; workload %s (%d marginals)\n",
		mech.Name(), cfg.CSV, data.Rows(), data.Domain().Len(), cfg.Epsilon, cfg.Delta, rho,
		workloadName(cfg.Workload), len(work))

	sets := make([][]int, len(work))
	for i, m := range work {
		sets[i] = m.Attrs
	}
	secret := noise.NewSecret()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "seed\terror\trounds\tρ used\twall\tCPU\tpeak MB\t")
	var reports []Report
	for seed := range cfg.Seeds {
		in := &synth.Input{
			Data:     data,
			Workload: work,
			Rho:      rho,
			Noise:    noise.Derive(secret, int64(seed), "bench"),
			Rows:     cfg.Rows,
		}
		start, cpu0 := time.Now(), cpuTime()
		if pw := cfg.Progress; pw != nil {
			in.Progress = func(s synth.Status) {
				fmt.Fprintf(pw, "seed %d %6.1fs %-6s round %4d  ρ used %.6g  model %.2f MB\n",
					seed, time.Since(start).Seconds(), s.Phase, s.Round, s.RhoUsed, s.ModelSize)
			}
		}
		res, err := runner.Run(ctx, in)
		wall, cpu := time.Since(start), cpuTime()-cpu0
		if err != nil {
			tw.Flush()
			return reports, fmt.Errorf("bench: seed %d: %w", seed, err)
		}
		r := Report{Seed: seed, Rounds: len(res.Rounds), RhoUsed: res.RhoUsed, Wall: wall, CPU: cpu, PeakMB: peakMB()}
		if mech.Output() == synth.AnswersOnly {
			r.Error, err = AnswerError(data, res.Measurements)
		} else {
			r.Error, err = WorkloadError(data, sets, res.Rows)
		}
		if err != nil {
			tw.Flush()
			return reports, fmt.Errorf("bench: seed %d: %w", seed, err)
		}
		reports = append(reports, r)
		fmt.Fprintf(tw, "%d\t%.4f\t%d\t%.6g\t%.1fs\t%.1fs\t%.0f\t\n", seed, r.Error, r.Rounds, r.RhoUsed,
			wall.Seconds(), cpu.Seconds(), r.PeakMB)
	}
	var mean Report
	for _, r := range reports {
		mean.Error += r.Error / float64(len(reports))
		mean.Wall += r.Wall / time.Duration(len(reports))
		mean.CPU += r.CPU / time.Duration(len(reports))
		mean.Rounds += r.Rounds
		mean.PeakMB = max(mean.PeakMB, r.PeakMB)
	}
	fmt.Fprintf(tw, "mean\t%.4f\t%.1f\t\t%.1fs\t%.1fs\t%.0f\t\n", mean.Error, float64(mean.Rounds)/float64(len(reports)),
		mean.Wall.Seconds(), mean.CPU.Seconds(), mean.PeakMB)
	return reports, tw.Flush()
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

// WorkloadError is the mean over sets of ‖x/|x| − x̂/|x̂|‖₁ where x are the
// marginals of data and x̂ those of the column-major rows. It counts one
// marginal at a time to keep memory low.
func WorkloadError(data *pgm.Dataset, sets [][]int, rows [][]uint16) (float64, error) {
	syn, err := pgm.NewDataset(data.Domain(), rows)
	if err != nil {
		return 0, fmt.Errorf("synthetic rows: %w", err)
	}
	if syn.Rows() == 0 {
		return 0, errors.New("no synthetic rows")
	}
	var sum float64
	var x, y []float64
	for _, s := range sets {
		x = data.MarginalTo(x, s)
		y = syn.MarginalTo(y, s)
		sum += normL1(x, y)
	}
	return sum / float64(len(sets)), nil
}

// AnswerError is WorkloadError for noisy answers (clipped at 0) to
// marginals of data.
func AnswerError(data *pgm.Dataset, ans []synth.Measurement) (float64, error) {
	if len(ans) == 0 {
		return 0, errors.New("no answers")
	}
	var sum float64
	var x []float64
	for _, a := range ans {
		x = data.MarginalTo(x, a.Attrs)
		if len(x) != len(a.Y) {
			return 0, fmt.Errorf("answer over %v has %d cells, want %d", a.Attrs, len(a.Y), len(x))
		}
		y := make([]float64, len(a.Y))
		for j, v := range a.Y {
			y[j] = max(v, 0)
		}
		sum += normL1(x, y)
	}
	return sum / float64(len(ans)), nil
}

// normL1 is ‖x/Σx − y/Σy‖₁ (a zero vector is compared as uniform).
func normL1(x, y []float64) float64 {
	var sx, sy float64
	for i := range x {
		sx += x[i]
		sy += y[i]
	}
	var s float64
	for i := range x {
		px, py := 1/float64(len(x)), 1/float64(len(y))
		if sx > 0 {
			px = x[i] / sx
		}
		if sy > 0 {
			py = y[i] / sy
		}
		d := px - py
		if d < 0 {
			d = -d
		}
		s += d
	}
	return s
}

// peakMB reads the process's peak resident set (VmHWM) on Linux, falling
// back to the Go runtime's obtained memory.
func peakMB() float64 {
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
				f := strings.Fields(v)
				if len(f) > 0 {
					if kb, err := strconv.ParseFloat(f[0], 64); err == nil {
						return kb / 1024
					}
				}
			}
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.Sys) / (1 << 20)
}
