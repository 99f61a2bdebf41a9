package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/dpsql/dpsql/cmd/dpsql/internal/csvload"
)

// runImport loads a CSV file into a table of a running server.
func runImport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	client := declareClientFlags(fs, "user name")
	target := fs.String("table", "", "target table as DB.TABLE (created, with its database, if missing)")
	csvPath := fs.String("csv", "", "CSV file with a header line")
	domainPath := fs.String("domain", "", `optional JSON domain file {"column": size, ...}: those columns become INT CHECK (col BETWEEN 0 AND size-1)`)
	batch := fs.Int("batch-rows", csvload.DefaultBatchRows, "rows per INSERT statement")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	db, table, ok := strings.Cut(*target, ".")
	if !ok || db == "" || table == "" || *csvPath == "" {
		fmt.Fprintln(stderr, "import needs --table DB.TABLE and --csv FILE")
		return errUsage
	}
	opts := &csvload.Options{BatchRows: *batch}
	if *domainPath != "" {
		b, err := os.ReadFile(*domainPath)
		if err != nil {
			return fmt.Errorf("reading domain file: %w", err)
		}
		if err := json.Unmarshal(b, &opts.Domain); err != nil {
			return fmt.Errorf("domain file %s: %w", *domainPath, err)
		}
	}
	if isTerminal(os.Stderr) {
		opts.Progress = progressBar(stderr, *target)
	}

	conn, err := client.connect(ctx, true)
	if err != nil {
		return err
	}
	defer conn.Close()

	start := time.Now()
	res, err := csvload.Load(ctx, conn, db, table, *csvPath, opts)
	if opts.Progress != nil {
		fmt.Fprintln(stderr)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", *csvPath, err)
	}
	took := time.Since(start)
	verb := "into existing table"
	if res.Created {
		verb = "into new table"
	}
	fmt.Fprintf(stdout, "imported %d rows %s %s in %v (%.0f rows/s)\n", res.Rows, verb, *target,
		took.Round(time.Millisecond), float64(res.Rows)/took.Seconds())
	return nil
}

// isTerminal reports whether f is a character device (a terminal).
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// progressBar returns a csvload progress callback drawing a bar on w.
func progressBar(w io.Writer, label string) func(done, total int64, rows int) {
	const width = 30
	start := time.Now()
	return func(done, total int64, rows int) {
		frac := 1.0
		if total > 0 {
			frac = min(float64(done)/float64(total), 1)
		}
		filled := int(frac * width)
		rate := float64(rows) / max(time.Since(start).Seconds(), 1e-9)
		fmt.Fprintf(w, "\r%s [%s%s] %3.0f%% %d rows %.0f rows/s", label,
			strings.Repeat("=", filled), strings.Repeat(" ", width-filled), 100*frac, rows, rate)
	}
}
