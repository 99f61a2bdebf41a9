package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/dpsql/dpsql/budget"
	"github.com/dpsql/dpsql/catalog"
	"github.com/dpsql/dpsql/engine"
)

// errCheckFailed reports a check that found problems; they are printed.
var errCheckFailed = errors.New("check failed")

// runCheck verifies a data file: its structure, bbolt's consistency check,
// every record's checksum and the privacy ledger's invariants.
func runCheck(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	dir := fs.String("data-dir", engine.DefaultDataDir, "data directory whose "+catalog.FileName+" to check (the server must be stopped)")
	file := fs.String("file", "", "check this data file instead, e.g. a copy made by dpsql backup")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	path := *file
	if path == "" {
		path = filepath.Join(*dir, catalog.FileName)
	}
	rep, err := checkDataFile(path)
	if err != nil {
		return err
	}
	rep.print(stdout)
	if !rep.ok() {
		fmt.Fprintf(stderr, "dpsql check: %s: %d problem%s found; restore the data file from a backup made by `dpsql backup` (see README: Backup, restore and checking the data file)\n",
			path, len(rep.problems), plural(len(rep.problems)))
		return errCheckFailed
	}
	return nil
}

// checkReport is what checkDataFile found.
type checkReport struct {
	path     string
	size     int64
	format   uint32 // catalog format version
	steps    []string
	problems []string
}

func (r *checkReport) ok() bool { return len(r.problems) == 0 }

func (r *checkReport) print(w io.Writer) {
	fmt.Fprintf(w, "data file %s (%d bytes", r.path, r.size)
	if r.format != 0 {
		fmt.Fprintf(w, ", catalog format %d", r.format)
	}
	fmt.Fprintln(w, ")")
	for _, s := range r.steps {
		fmt.Fprintln(w, "  "+s)
	}
	if r.ok() {
		fmt.Fprintln(w, "no problem found")
		return
	}
	fmt.Fprintf(w, "%d problem%s:\n", len(r.problems), plural(len(r.problems)))
	for _, p := range r.problems {
		fmt.Fprintln(w, "  - "+p)
	}
}

// summary is one line saying what was found.
func (r *checkReport) summary() string {
	if r.ok() {
		return "no problem found"
	}
	s := r.problems[0]
	if n := len(r.problems) - 1; n > 0 {
		s += fmt.Sprintf(" (and %d more)", n)
	}
	return s
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// checkDataFile verifies the data file at path without changing it. It
// returns an error only when the file cannot be checked at all (missing,
// in use by a server, not a dpsql file, a newer format); damage is
// reported in the report's problems.
//
// The file is opened read-only with a shared lock: bbolt cannot read a
// file that a running server holds (its lock is exclusive), so checking
// the live file of a running server is refused; back it up with dpsql
// backup, which checks the copy the same way.
func checkDataFile(path string) (*checkReport, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no data file at %s", path)
	}
	if err != nil {
		return nil, err
	}
	rep := &checkReport{path: path, size: fi.Size()}
	s, err := catalog.OpenReadOnly(path, &catalog.Options{Timeout: 500 * time.Millisecond})
	var de *catalog.DamagedError
	switch {
	case errors.As(err, &de):
		if de.Empty {
			rep.problems = append(rep.problems, "the file is empty (0 bytes)")
		}
		rep.problems = append(rep.problems, de.Problems...)
		if de.More > 0 {
			rep.problems = append(rep.problems, fmt.Sprintf("%d more problems", de.More))
		}
		rep.steps = append(rep.steps, "structure (meta pages, size, every page): DAMAGED")
		return rep, nil
	case errors.Is(err, catalog.ErrLocked):
		return nil, fmt.Errorf("%s is in use by a running dpsql server: stop it before checking, or check a copy made by `dpsql backup` (which checks the copy as it makes it)", path)
	case err != nil:
		return nil, err
	}
	defer s.Close()
	rep.format = s.FormatVersion()
	rep.steps = append(rep.steps, "structure (meta pages, size, every page): ok")

	problems, err := s.Verify()
	if err != nil {
		problems = append(problems, err.Error())
	}
	rep.problems = append(rep.problems, problems...)
	what := "bbolt consistency check and record checksums"
	if rep.format < 2 {
		what = "bbolt consistency check (format 1 records carry no checksums yet; the next dpsql serve adds them)"
	}
	rep.steps = append(rep.steps, what+": "+okOr(len(problems) == 0))

	l, err := budget.OpenLedger(s.DB())
	switch {
	case errors.Is(err, budget.ErrNoLedger):
		rep.steps = append(rep.steps, "privacy ledger: none yet (a server creates it when it starts)")
		return rep, nil
	case err != nil:
		rep.problems = append(rep.problems, err.Error())
		rep.steps = append(rep.steps, "privacy ledger: DAMAGED")
		return rep, nil
	}
	if err := l.Check(); err != nil {
		rep.problems = append(rep.problems, err.Error())
		rep.steps = append(rep.steps, "privacy ledger invariants and checksums: DAMAGED")
		return rep, nil
	}
	budgets, err1 := l.Budgets()
	entries, err2 := l.Entries("", "")
	if err := errors.Join(err1, err2); err != nil {
		rep.problems = append(rep.problems, err.Error())
		return rep, nil
	}
	rep.steps = append(rep.steps, fmt.Sprintf("privacy ledger (%d table%s with a budget, %d entr%s): invariants hold",
		len(budgets), plural(len(budgets)), len(entries), map[bool]string{true: "y", false: "ies"}[len(entries) == 1]))
	return rep, nil
}

func okOr(ok bool) string {
	if ok {
		return "ok"
	}
	return "DAMAGED"
}
