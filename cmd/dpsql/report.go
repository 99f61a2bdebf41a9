package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/dpsql/dpsql/internal/report"
)

// runReport writes the quality report of a synthetic table (package
// internal/report) as one self-contained HTML file.
func runReport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	client := declareClientFlags(fs, "user name (an owner of the source gets errors against the real table; anyone else a report from released information only)")
	table := fs.String("table", "", "the synthetic table, db.table")
	out := fs.String("out", "report.html", "HTML file to write")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if *table == "" {
		fmt.Fprintln(stderr, "report needs --table db.table")
		return errUsage
	}
	db, err := client.connect(ctx, false)
	if err != nil {
		return err
	}
	defer db.Close()
	conn, err := db.Conn(ctx) // one session: the report sets dpsql_answer_source
	if err != nil {
		return err
	}
	defer conn.Close()
	r, err := report.Collect(ctx, conn, *table)
	if err != nil {
		return err
	}
	dest, err := filepath.Abs(*out)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dest), "."+filepath.Base(dest)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := r.WriteHTML(tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("writing the report: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), dest); err != nil {
		return err
	}
	basis := "released information only"
	if r.Owner {
		basis = "compared with the real table " + r.Source
	}
	fmt.Fprintf(stdout, "wrote %s: %s, %d marginals, %s\n", dest, r.Table, len(r.Marginals), basis)
	return nil
}
