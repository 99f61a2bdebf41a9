package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/audit"
	"github.com/dpsql/dpsql/synth/registry"
)

// runAudit is "dpsql audit": the empirical privacy audit of package
// synth/audit on every registered mechanism (or one), one line each. It
// fails if any audit does.
func runAudit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var names []string
	for _, m := range registry.All() {
		names = append(names, m.Name())
	}
	fs := flag.NewFlagSet("audit", flag.ContinueOnError)
	mechanism := fs.String("mechanism", "all", "mechanism to audit ("+strings.Join(names, ", ")+") or all")
	runs := fs.Int("runs", 0, fmt.Sprintf("runs on each dataset (default %d, %d with --short)", audit.DefaultRuns, audit.ShortRuns))
	epsilon := fs.Float64("epsilon", 1, "ε of the (ε, δ) guarantee each mechanism is run at and checked against")
	delta := fs.Float64("delta", 1e-6, "δ of the (ε, δ) guarantee")
	alpha := fs.Float64("alpha", audit.DefaultAlpha, "level of each Clopper–Pearson bound")
	short := fs.Bool("short", false, "the short version CI runs")
	repeat := fs.Bool("repeat", false, "also run each request twice and subtract (the audit of the noise derivation)")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	var mechs []synth.Mechanism
	if *mechanism == "all" {
		mechs = registry.All()
	} else {
		m, err := registry.Lookup(*mechanism)
		if err != nil {
			fmt.Fprintf(stderr, "dpsql audit: %v\n", err)
			return errUsage
		}
		mechs = []synth.Mechanism{m}
	}
	n := *runs
	if n == 0 {
		n = audit.DefaultRuns
		if *short {
			n = audit.ShortRuns
		}
	}
	attacks := []func(context.Context, audit.Config) (*audit.Report, error){audit.Release}
	if *repeat {
		attacks = append(attacks, audit.Repeat)
	}
	failed, total := 0, 0
	for _, m := range mechs {
		r, err := m.New(audit.Options(m.Name()))
		if err != nil {
			return err
		}
		c := audit.Config{Mechanism: m.Name(), Runner: r, Epsilon: *epsilon, Delta: *delta, Runs: n, Alpha: *alpha}
		for _, attack := range attacks {
			rep, err := attack(ctx, c)
			if err != nil {
				return err
			}
			fmt.Fprintln(stdout, rep)
			total++
			if !rep.Pass {
				failed++
			}
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d audits failed", failed, total)
	}
	return nil
}
