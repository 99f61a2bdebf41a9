package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/dpsql/dpsql/synth/pgm/pgmbench"
)

// runBench runs a benchmark; the only one so far is "pgm", the Private-PGM
// engine on a CSV file and its domain.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "pgm" {
		fmt.Fprintln(stderr, "usage: dpsql bench pgm --csv FILE --domain FILE")
		return errUsage
	}
	fs := flag.NewFlagSet("bench pgm", flag.ContinueOnError)
	csvPath := fs.String("csv", "", "CSV file of encoded attributes, with a header line")
	domain := fs.String("domain", "", `JSON domain file {"column": size, ...}`)
	if err := parseFlags(fs, args[1:], stderr); err != nil {
		return err
	}
	if *csvPath == "" || *domain == "" {
		fmt.Fprintln(stderr, "bench pgm needs --csv FILE and --domain FILE")
		return errUsage
	}
	return pgmbench.Run(ctx, *csvPath, *domain, stdout)
}
