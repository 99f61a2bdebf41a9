package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/bench"
	"github.com/dpsql/dpsql/synth/pgm/pgmbench"
	"github.com/dpsql/dpsql/synth/registry"
)

const benchUsage = `usage:
  dpsql bench pgm --csv FILE --domain FILE
  dpsql bench MECHANISM --csv FILE --domain FILE [--epsilon E] [--delta D] [--workload all-3way|all-2way]
              [--seeds N] [--rows N] [--option NAME=VALUE ...] [--progress] [--cpuprofile FILE] [--memprofile FILE]
              [--metric l1|max|mean] [--attrs COL[:BINS],...] [--public FILE] [--model-budget CELLS]
MECHANISM is one of: %s`

// runBench runs a benchmark: "pgm" times the Private-PGM engine; a
// mechanism name runs that synthesizer (package synth/bench) and reports
// its workload error, rounds, time and memory per seed.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var names []string
	for _, m := range registry.All() {
		names = append(names, m.Name())
	}
	if len(args) == 0 {
		fmt.Fprintf(stderr, benchUsage+"\n", strings.Join(names, ", "))
		return errUsage
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintf(stdout, benchUsage+"\n", strings.Join(names, ", "))
		return nil
	}
	if args[0] == "pgm" {
		return runBenchPGM(ctx, args[1:], stdout, stderr)
	}
	mech, err := registry.Lookup(args[0])
	if err != nil {
		fmt.Fprintf(stderr, "dpsql bench: unknown benchmark %q\n"+benchUsage+"\n", args[0], strings.Join(names, ", "))
		return errUsage
	}
	fs := flag.NewFlagSet("bench "+mech.Name(), flag.ContinueOnError)
	cfg := bench.Config{Mechanism: mech.Name()}
	fs.StringVar(&cfg.CSV, "csv", "", "CSV file of encoded attributes, with a header line")
	fs.StringVar(&cfg.Domain, "domain", "", `JSON domain file {"column": size, ...}`)
	fs.Float64Var(&cfg.Epsilon, "epsilon", 1, "ε of the (ε, δ) guarantee")
	fs.Float64Var(&cfg.Delta, "delta", bench.DefaultDelta, "δ of the (ε, δ) guarantee")
	fs.StringVar(&cfg.Workload, "workload", "all-3way", "workload: all-kway for k = 1, 2, 3, ...")
	fs.IntVar(&cfg.Seeds, "seeds", 1, "number of runs (seeds 0..N-1)")
	fs.IntVar(&cfg.Rows, "rows", 0, "synthetic rows (0: the model's estimated total)")
	fs.StringVar(&cfg.Metric, "metric", "l1", "error metric: l1 (mean L1 over marginals), max or mean (over all cells)")
	fs.StringVar(&cfg.Public, "public", "", "CSV of public records (same header and domain file) for public-data mechanisms")
	fs.Func("attrs", "restrict to these columns, COL or COL:BINS to coarsen (e.g. sex,race,age:10)", func(s string) error {
		for _, a := range strings.Split(s, ",") {
			if a = strings.TrimSpace(a); a != "" {
				cfg.Attrs = append(cfg.Attrs, a)
			}
		}
		return nil
	})
	fs.Float64Var(&cfg.ModelBudget, "model-budget", 0, "model error: leave out workload sets whose inference sweeps more cells than this (0: 2^32; -1: none)")
	progress := fs.Bool("progress", false, "print a line per round to stderr")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole benchmark to this file (go tool pprof)")
	memProfile := fs.String("memprofile", "", "write a heap profile to this file at the end: -sample_index=alloc_space shows where the benchmark allocated")
	fs.Func("option", "mechanism option NAME=VALUE (repeatable; see SHOW MECHANISMS)", func(s string) error {
		name, value, ok := strings.Cut(s, "=")
		if !ok || strings.TrimSpace(name) == "" {
			return fmt.Errorf("option %q: want NAME=VALUE", s)
		}
		cfg.Options = append(cfg.Options, synth.Option{Name: strings.TrimSpace(name), Value: strings.TrimSpace(value)})
		return nil
	})
	if err := parseFlags(fs, args[1:], stderr); err != nil {
		return err
	}
	if cfg.CSV == "" || cfg.Domain == "" {
		fmt.Fprintf(stderr, "bench %s needs --csv FILE and --domain FILE\n", mech.Name())
		return errUsage
	}
	if *progress {
		cfg.Progress = stderr
	}
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	if *memProfile != "" {
		// One sample per 4 KB allocated instead of per 512 KB, so that
		// small allocations in hot loops show.
		runtime.MemProfileRate = 1 << 12
	}
	err = bench.Run(ctx, cfg, stdout)
	if *memProfile != "" && err == nil {
		err = writeHeapProfile(*memProfile)
	}
	return err
}

// writeHeapProfile writes the heap profile (allocations since the start
// and, as of the last collection, what is in use) to path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("bench: heap profile: %w", err)
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("bench: heap profile: %w", err)
	}
	return f.Close()
}

// startCPUProfile profiles the process's CPU into path until stop is called.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("bench: cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("bench: cpu profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// runBenchPGM is "dpsql bench pgm": the Private-PGM engine on a CSV file
// and its domain.
func runBenchPGM(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench pgm", flag.ContinueOnError)
	csvPath := fs.String("csv", "", "CSV file of encoded attributes, with a header line")
	domain := fs.String("domain", "", `JSON domain file {"column": size, ...}`)
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if *csvPath == "" || *domain == "" {
		fmt.Fprintln(stderr, "bench pgm needs --csv FILE and --domain FILE")
		return errUsage
	}
	return pgmbench.Run(ctx, *csvPath, *domain, stdout)
}
