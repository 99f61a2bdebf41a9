package engine

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/netutil"
	"github.com/dolthub/vitess/go/sqltypes"
)

// waitBound bounds waits for something that must happen; it is generous
// and only turns a hang into a failure.
const waitBound = 10 * time.Second

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(t *testing.T) (client, srv *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s := <-accepted
	if s == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return c.(*net.TCPConn), s.(*net.TCPConn)
}

// eventually reports whether cond became true within waitBound.
func eventually(cond func() bool) bool {
	deadline := time.Now().Add(waitBound)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}

func TestWatchStop(t *testing.T) {
	var calls, late atomic.Int32
	var stopped atomic.Bool
	probed := make(chan struct{}, 100)
	gone := func() bool {
		if stopped.Load() {
			late.Add(1)
		}
		calls.Add(1)
		select {
		case probed <- struct{}{}:
		default:
		}
		return false
	}
	ctx, stop := watch(context.Background(), time.Millisecond, gone, func() { t.Error("onGone called for a live peer") })
	for range 3 {
		<-probed
	}
	if err := ctx.Err(); err != nil {
		t.Fatalf("context of a running command with a live peer: %v", err)
	}
	stop()
	stopped.Store(true)
	time.Sleep(20 * time.Millisecond) // many intervals: a leaked watcher would probe
	if n := late.Load(); n != 0 {
		t.Errorf("probed %d times after stop returned", n)
	}
	if cause := context.Cause(ctx); cause != context.Canceled {
		t.Errorf("cause after stop = %v, want context.Canceled (not a disconnect)", cause)
	}
}

func TestWatchGone(t *testing.T) {
	var calls, onGone atomic.Int32
	gone := func() bool { return calls.Add(1) >= 3 }
	ctx, stop := watch(context.Background(), time.Millisecond, gone, func() { onGone.Add(1) })
	select {
	case <-ctx.Done():
	case <-time.After(waitBound):
		t.Fatal("context not cancelled after the probe reported the peer gone")
	}
	cause := context.Cause(ctx)
	if cause != errClientGone || !errors.Is(cause, context.Canceled) {
		t.Errorf("cause = %v, want errClientGone (a context.Canceled)", cause)
	}
	stop()
	if n := calls.Load(); n != 3 {
		t.Errorf("probed %d times, want 3 (none after the peer was gone)", n)
	}
	if n := onGone.Load(); n != 1 {
		t.Errorf("onGone called %d times, want 1", n)
	}
	if context.Cause(ctx) != errClientGone {
		t.Errorf("stop replaced the cause: %v", context.Cause(ctx))
	}
}

// TestPeerProbe checks the socket probe against what a client can do to
// its end of the connection.
func TestPeerProbe(t *testing.T) {
	c, s := tcpPair(t)
	if newPeerProbe(s) == nil {
		t.Skip("no socket probe on this platform")
	}
	c.Close()

	tests := []struct {
		name string
		// wrap is what vitess may put around the accepted socket.
		wrap func(net.Conn) net.Conn
		// live is done by a client that is still there; gone by one that
		// left.
		live, gone func(*net.TCPConn) error
	}{
		{name: "close", gone: (*net.TCPConn).Close},
		{
			name: "pipelined data then close",
			live: func(c *net.TCPConn) error { _, err := c.Write([]byte("next command")); return err },
			gone: (*net.TCPConn).Close,
		},
		{
			name: "reset",
			gone: func(c *net.TCPConn) error {
				if err := c.SetLinger(0); err != nil {
					return err
				}
				return c.Close()
			},
		},
		{name: "half close", gone: (*net.TCPConn).CloseWrite},
		{
			name: "timeouts wrapper",
			wrap: func(c net.Conn) net.Conn { return netutil.NewConnWithTimeouts(c, time.Minute, time.Minute) },
			gone: (*net.TCPConn).Close,
		},
		{
			name: "tls over timeouts wrapper",
			wrap: func(c net.Conn) net.Conn {
				return tls.Server(netutil.NewConnWithTimeouts(c, time.Minute, time.Minute), &tls.Config{})
			},
			gone: (*net.TCPConn).Close,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client, srv := tcpPair(t)
			var conn net.Conn = srv
			if tt.wrap != nil {
				conn = tt.wrap(srv)
			}
			gone := newPeerProbe(conn)
			if gone == nil {
				t.Fatalf("no probe for %T", conn)
			}
			if tt.live != nil {
				if err := tt.live(client); err != nil {
					t.Fatal(err)
				}
			}
			if gone() {
				t.Fatal("peer reported gone before it left")
			}
			if err := tt.gone(client); err != nil {
				t.Fatal(err)
			}
			if !eventually(gone) {
				t.Fatal("peer never reported gone")
			}
		})
	}

	t.Run("closed on this side", func(t *testing.T) {
		_, srv := tcpPair(t)
		gone := newPeerProbe(srv)
		srv.Close()
		if !gone() {
			t.Error("a connection closed by the server not reported gone")
		}
	})
	t.Run("not a socket", func(t *testing.T) {
		a, b := net.Pipe()
		defer a.Close()
		defer b.Close()
		if newPeerProbe(a) != nil {
			t.Error("a probe for net.Pipe")
		}
	})
}

func BenchmarkPeerProbe(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			defer c.Close()
			c.Read(make([]byte, 1))
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	gone := newPeerProbe(c)
	if gone == nil {
		b.Skip("no socket probe on this platform")
	}
	b.ReportAllocs()
	for b.Loop() {
		if gone() {
			b.Fatal("peer gone")
		}
	}
}

// blockingHandler is a mysql.Handler whose statement commands run until
// their context is cancelled (or return at once when quick), recording
// the context they ran under.
type blockingHandler struct {
	mysql.Handler // nil: other methods are not called
	quick         bool
	ran           chan context.Context
}

func (h *blockingHandler) run(ctx context.Context) error {
	h.ran <- ctx
	if h.quick {
		return nil
	}
	<-ctx.Done()
	return context.Cause(ctx)
}

func (h *blockingHandler) ComQuery(ctx context.Context, _ *mysql.Conn, _ string, _ mysql.ResultSpoolFn) error {
	return h.run(ctx)
}

func (h *blockingHandler) ComMultiQuery(ctx context.Context, _ *mysql.Conn, _ string, _ mysql.ResultSpoolFn) (string, error) {
	return "", h.run(ctx)
}

func (h *blockingHandler) ComStmtExecute(ctx context.Context, _ *mysql.Conn, _ *mysql.PrepareData, _ func(*sqltypes.Result) error) error {
	return h.run(ctx)
}

// TestDisconnectHandler runs each statement command through the wrapper:
// a client that closes its connection cancels the command with
// errClientGone; a command that returns leaves nothing watching.
func TestDisconnectHandler(t *testing.T) {
	if c, s := tcpPair(t); newPeerProbe(s) == nil {
		c.Close()
		t.Skip("no socket probe on this platform")
	}
	commands := []struct {
		name string
		run  func(h mysql.Handler, c *mysql.Conn) error
	}{
		{"COM_QUERY", func(h mysql.Handler, c *mysql.Conn) error {
			return h.ComQuery(context.Background(), c, "q", nil)
		}},
		{"COM_QUERY multi-statement", func(h mysql.Handler, c *mysql.Conn) error {
			_, err := h.ComMultiQuery(context.Background(), c, "q", nil)
			return err
		}},
		{"COM_STMT_EXECUTE", func(h mysql.Handler, c *mysql.Conn) error {
			return h.ComStmtExecute(context.Background(), c, &mysql.PrepareData{}, nil)
		}},
	}
	for _, cmd := range commands {
		t.Run(cmd.name+"/client leaves", func(t *testing.T) {
			client, srv := tcpPair(t)
			inner := &blockingHandler{ran: make(chan context.Context, 1)}
			h := &disconnectHandler{passOn: passOn{inner}, log: slog.New(slog.DiscardHandler), every: time.Millisecond}
			done := make(chan error, 1)
			go func() { done <- cmd.run(h, &mysql.Conn{Conn: srv, ConnectionID: 7}) }()
			<-inner.ran
			client.Close()
			select {
			case err := <-done:
				if err != errClientGone {
					t.Errorf("command returned %v, want errClientGone", err)
				}
			case <-time.After(waitBound):
				t.Fatal("command not cancelled after its client left")
			}
		})
		t.Run(cmd.name+"/command returns", func(t *testing.T) {
			_, srv := tcpPair(t)
			inner := &blockingHandler{quick: true, ran: make(chan context.Context, 1)}
			h := &disconnectHandler{passOn: passOn{inner}, log: slog.New(slog.DiscardHandler), every: time.Millisecond}
			if err := cmd.run(h, &mysql.Conn{Conn: srv, ConnectionID: 7}); err != nil {
				t.Fatal(err)
			}
			ctx := <-inner.ran
			if cause := context.Cause(ctx); cause != context.Canceled {
				t.Errorf("command context after return: cause %v, want context.Canceled (watch stopped)", cause)
			}
		})
	}

	t.Run("not a socket", func(t *testing.T) {
		a, b := net.Pipe()
		defer a.Close()
		defer b.Close()
		inner := &blockingHandler{quick: true, ran: make(chan context.Context, 1)}
		h := &disconnectHandler{passOn: passOn{inner}, log: slog.New(slog.DiscardHandler), every: time.Millisecond}
		if err := h.ComQuery(context.Background(), &mysql.Conn{Conn: a}, "q", nil); err != nil {
			t.Fatal(err)
		}
		if ctx := <-inner.ran; ctx != context.Background() {
			t.Error("an unwatchable connection got a watched context")
		}
	})
}
