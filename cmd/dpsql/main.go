// Command dpsql runs the dpsql server and its client-side tools.
//
// Usage:
//
//	dpsql serve  [--data-dir DIR] [--host HOST] [--port N] [--root-password PW] [--demo]
//	dpsql import --table DB.TABLE --csv FILE [--domain FILE] [--addr HOST:PORT] [--user U] [--password PW]
//	dpsql bench pgm --csv FILE --domain FILE
//	dpsql audit  [--mechanism NAME|all] [--runs N] [--epsilon E] [--delta D] [--short] [--repeat]
//	dpsql version
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
	{"bench", "run a benchmark (bench pgm --csv FILE --domain FILE)", runBench},
	{"audit", "estimate each mechanism's ε empirically and check it against the claim", runAudit},
	{"version", "print the version", func(_ context.Context, _ []string, stdout, _ io.Writer) error {
		fmt.Fprintln(stdout, "dpsql", version)
		return nil
	}},
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-ctx.Done()
		stop() // a second signal kills at once
	}()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run executes the command line args and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
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
