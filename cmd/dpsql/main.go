// Command dpsql runs the dpsql server and its client-side tools.
//
// Usage:
//
//	dpsql serve  [--data-dir DIR] [--host HOST] [--port N] [--root-password PW] [--demo]
//	dpsql import --table DB.TABLE --csv FILE [--domain FILE] [--addr HOST:PORT] [--user U] [--password PW]
//	dpsql backup --out FILE [--addr HOST:PORT] [--user U] [--password PW]
//	dpsql check  [--data-dir DIR | --file FILE]
//	dpsql bench pgm --csv FILE --domain FILE
//	dpsql audit  [--mechanism NAME|all] [--runs N] [--epsilon E] [--delta D] [--short] [--repeat]
//	dpsql version
//
// backup copies a running server's data file (BACKUP DPSQL, superusers
// only) to FILE and checks the copy; restore by starting dpsql serve on a
// directory holding the copy as dpsql.db. check verifies a stopped server's
// data file (structure, bbolt's consistency check, record checksums, ledger
// invariants) and exits non-zero listing the problems.
//
// Run "dpsql COMMAND -h" for a command's flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/dpsql/dpsql/internal/heapgoal"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// command is one dpsql subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

var commands = []command{
	{"serve", "run the server", runServe},
	{"import", "load a CSV file into a table over the wire", runImport},
	{"backup", "copy a running server's data file over the wire (--out FILE) and check the copy", runBackup},
	{"check", "verify a data file (--data-dir DIR or --file FILE) of a stopped server", runCheck},
	{"bench", "run a benchmark (bench pgm --csv FILE --domain FILE)", runBench},
	{"report", "write a synthetic table's quality report as one HTML page (--table db.t --out FILE)", runReport},
	{"audit", "estimate each mechanism's ε empirically and check it against the claim", runAudit},
	{"version", "print the version", func(_ context.Context, _ []string, stdout, _ io.Writer) error {
		fmt.Fprintln(stdout, "dpsql", version)
		return nil
	}},
}

// heapGoal is how the collector is paced unless the environment sets GOGC
// (internal/heapgoal). dpsql's live heap is mostly pointer-free numeric
// tables (data, models, marginals) that the collector marks at almost no
// cost, but the default GOGC = 100 lets a 60 MB live heap peak at 120 MB.
// GOGC follows the live heap within [20, 100], letting it grow by about
// 12 MB: a small heap (a synthesis at ε = 1, 20–40 MB) keeps about the
// default and its CPU, a large one is held to 1.2 × what is live. Unless
// the environment sets GOMEMLIMIT, the memory limit is 1.25 × the heap
// goal and at least 72 MB, so that the pages a collection frees go
// back to the system within a cycle rather than at the scavenger's pace
// (docs/aim-performance.md, "Issue 19, thirteenth pass" and "fourteenth
// pass"). At 80 MB a wide table's small model (wide30, 2–5 MB) peaked at
// the floor, 5–6 MB higher, for no CPU saved; 64 MB lowered nothing more
// ("twenty-second pass").
var heapGoal = heapgoal.Options{Headroom: 12 << 20, MinPercent: 20, MaxPercent: 100,
	RetainPercent: 125, RetainFloor: 72 << 20}

func main() {
	if _, set := os.LookupEnv("GOGC"); !set {
		o := heapGoal
		if _, set := os.LookupEnv("GOMEMLIMIT"); set {
			o.RetainPercent = 0
		}
		heapgoal.Start(o)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-ctx.Done()
		stop() // a second signal kills at once
	}()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run executes the command line args and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 0:
		usage(stderr)
		return 2
	case args[0] == "-h" || args[0] == "--help" || args[0] == "help":
		if len(args) > 1 && args[0] == "help" { // dpsql help COMMAND
			return run(ctx, []string{args[1], "--help"}, stdout, stderr)
		}
		usage(stdout)
		return 0
	case args[0] == "--version" || args[0] == "-version" || args[0] == "-v":
		args = []string{"version"}
	}
	for _, c := range commands {
		if c.name != args[0] {
			continue
		}
		err := c.run(ctx, args[1:], stdout, stderr)
		switch {
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp):
			return 0
		case errors.Is(err, errUsage):
			return 2
		case errors.Is(err, errCheckFailed): // the problems are printed
			return 1
		default:
			fmt.Fprintf(stderr, "dpsql %s: %v\n", c.name, err)
			return 1
		}
	}
	fmt.Fprintf(stderr, "dpsql: unknown command %q\n", args[0])
	usage(stderr)
	return 2
}

// errUsage reports bad flags; the flag package has already printed why.
var errUsage = errors.New("usage error")

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: dpsql COMMAND [flags]\n\ncommands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `
"dpsql help COMMAND" or "dpsql COMMAND --help" lists a command's flags; "dpsql --version" prints the version.
Passwords: --password-file FILE or $DPSQL_PASSWORD (serve: --root-password-file or $DPSQL_ROOT_PASSWORD) keep
them out of the process list.
Documentation: README.md (running the server, the SQL statements, a first session on the demo), docs/privacy.md
(the privacy model) and docs/server.md (the server's design), in the dpsql source tree.
`)
}

// parseFlags parses args into fs, mapping errors to errUsage.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) error {
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "unexpected arguments: %v\n", fs.Args())
		return errUsage
	}
	return nil
}
