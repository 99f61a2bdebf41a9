package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/dpsql/dpsql/engine"
)

// runServe parses the serve flags into an engine.Config and serves until
// ctx is cancelled (SIGTERM or SIGINT).
func runServe(ctx context.Context, args []string, _, stderr io.Writer) error {
	cfg := engine.DefaultConfig()
	cfg.Version = version
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "data directory, created on first start")
	fs.StringVar(&cfg.Host, "host", cfg.Host, "address to listen on (0.0.0.0 for every interface)")
	fs.IntVar(&cfg.Port, "port", cfg.Port, "TCP port (0 picks a free one)")
	rootPassword := passwordFlags(fs, "root-password", "DPSQL_ROOT_PASSWORD", "root@localhost's password; generated and printed once on first start if none is given, replaced if given later")
	fs.BoolVar(&cfg.Demo, "demo", false, "create the demo database (demo.census) if it does not exist")
	fs.StringVar(&cfg.TLSCert, "tls-cert", "", "PEM certificate file; enables TLS (with --tls-key)")
	fs.StringVar(&cfg.TLSKey, "tls-key", "", "PEM private key file of --tls-cert")
	fs.BoolVar(&cfg.RequireTLS, "require-tls", false, "refuse clients that do not use TLS (needs --tls-cert and --tls-key)")
	logFormat := fs.String("log-format", "text", "log format: text (key=value) or json (one object per line)")
	logLevel := fs.String("log-level", "info", "least severe log level shown: debug, info, warn or error")
	metricsAddr := fs.String("metrics-addr", "", "HOST:PORT to serve Prometheus metrics on at /metrics (docs/metrics.md); off if empty")
	withPprof := fs.Bool("pprof", false, "also serve Go runtime profiles at /debug/pprof/ on --metrics-addr")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if *withPprof && *metricsAddr == "" {
		return fmt.Errorf("--pprof serves on the metrics listener: give --metrics-addr HOST:PORT too")
	}
	logger, err := newLogger(stderr, *logFormat, *logLevel)
	if err != nil {
		return err
	}
	if cfg.RootPassword, _, err = rootPassword.get(); err != nil {
		return err
	}
	cfg.Logger = logger
	e, err := engine.New(ctx, cfg)
	if err != nil {
		return err
	}
	if *metricsAddr != "" {
		stop, err := serveMetrics(ctx, *metricsAddr, *withPprof, e, logger)
		if err != nil {
			e.Close()
			return err
		}
		defer stop()
	}
	return e.Serve(ctx)
}

// newLogger returns the server's one log: slog in the given format, from
// the given level up.
func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}
