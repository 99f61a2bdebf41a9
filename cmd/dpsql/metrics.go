package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/dpsql/dpsql/engine"
)

// serveMetrics serves e's Prometheus metrics at http://addr/metrics until
// ctx is cancelled or stop is called, and with withPprof the Go runtime's
// profiles at /debug/pprof/ (heap, CPU, goroutines: how an operator finds
// where a long synthesis spends its time and memory). The endpoint has no
// authentication and a goroutine dump shows call arguments: it is the
// operator's, bind it to a private address (docs/metrics.md).
func serveMetrics(ctx context.Context, addr string, withPprof bool, e *engine.Engine, log *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", e.MetricsHandler())
	if withPprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server failed", "err", err)
		}
	}()
	log.Info("metrics ready", "addr", ln.Addr().String(), "path", "/metrics")
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
		case <-done:
		}
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	return func() { close(done) }, nil
}
