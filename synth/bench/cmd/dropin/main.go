// Command dropin runs the Private-PGM drop-in experiments of seed 001
// (docs/pgm-dropin.md):
//
//	go run ./synth/bench/cmd/dropin fig1 --csv adult.csv --domain adult-domain.json \
//	    --numeric age,fnlwgt,capital-gain,capital-loss,hours-per-week \
//	    --mechs privbayes,privbayes_pgm,hdmm_lls,hdmm_pgm,mwem --runs 5
//	go run ./synth/bench/cmd/dropin scaling --attrs 3,10,30,100,300,1000 --iters 20 --svg docs/pgm-scaling.svg
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/dpsql/dpsql/synth/bench"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: dropin fig1|scaling [flags]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var err error
	switch os.Args[1] {
	case "fig1":
		err = fig1(ctx, os.Args[2:])
	case "scaling":
		err = scaling(ctx, os.Args[2:])
	default:
		err = fmt.Errorf("unknown experiment %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "dropin:", err)
		os.Exit(1)
	}
}

func fig1(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("fig1", flag.ContinueOnError)
	var cfg bench.DropInConfig
	fs.StringVar(&cfg.CSV, "csv", "", "integer-coded CSV")
	fs.StringVar(&cfg.Domain, "domain", "", "domain JSON")
	attrs := fs.String("attrs", "", "restrict/coarsen columns: a,b:k,... (see dpsql bench --attrs)")
	numeric := fs.String("numeric", "", "comma-separated numeric (binned) attributes: prefix ranges")
	mechs := fs.String("mechs", "privbayes,privbayes_pgm,hdmm_lls,hdmm_pgm,mwem", "mechanisms")
	opts := fs.String("options", "", "per-mechanism options: mech:NAME=V,NAME=V;mech2:...")
	fs.IntVar(&cfg.Subsets, "subsets", 15, "random attribute subsets")
	fs.IntVar(&cfg.Size, "size", 3, "attributes per subset")
	fs.Uint64Var(&cfg.WorkloadSeed, "workload-seed", 1, "seed of the workload draw")
	fs.Float64Var(&cfg.Epsilon, "epsilon", 1, "ε")
	fs.Float64Var(&cfg.Delta, "delta", bench.DefaultDelta, "δ")
	fs.IntVar(&cfg.Runs, "runs", 5, "runs per mechanism (median reported)")
	fs.DurationVar(&cfg.Timeout, "timeout", 20*time.Minute, "bound on each run")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if cfg.CSV == "" || cfg.Domain == "" {
		return fmt.Errorf("fig1 needs --csv and --domain")
	}
	cfg.Numeric = strings.Split(*numeric, ",")
	if *attrs != "" {
		cfg.Attrs = strings.Split(*attrs, ",")
	}
	cfg.Mechanisms = strings.Split(*mechs, ",")
	var err error
	if cfg.Options, err = bench.ParseOptions(*opts); err != nil {
		return err
	}
	_, err = bench.DropIn(ctx, cfg, os.Stdout)
	return err
}

func scaling(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("scaling", flag.ContinueOnError)
	attrs := fs.String("attrs", "3,10,30,100,300,1000", "numbers of attributes")
	iters := fs.Int("iters", 20, "estimation iterations per point")
	svg := fs.String("svg", "", "write a log-log SVG plot here")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var ds []int
	for _, s := range strings.Split(*attrs, ",") {
		d, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("--attrs: %w", err)
		}
		ds = append(ds, d)
	}
	rows, err := bench.Scaling(ctx, ds, *iters, os.Stdout)
	if err != nil {
		return err
	}
	if *svg != "" {
		return os.WriteFile(*svg, []byte(bench.ScalingSVG(rows)), 0o644)
	}
	return nil
}
