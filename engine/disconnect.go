package engine

// A client that disconnects cancels its running statement.
//
// go-mysql-server v0.20.0 checks the client's socket only while it streams
// result rows (Handler.resultForDefaultIter, on plain TCP), so a statement
// that answers with an OK packet, such as CREATE SYNTHETIC TABLE, runs to
// the end after its client left and then commits. disconnectHandler wraps
// the server's handler: for the duration of every COM_QUERY (one call per
// statement of a multi-statement script) and COM_STMT_EXECUTE it watches
// the connection's socket and, when the peer has closed or reset it,
// cancels the context the command runs under. That context is the parent
// of the one KILL QUERY cancels through the process list, so a statement
// whose client left stops exactly as if it had been killed.
//
// Cancelling the command's own context, rather than killing by connection
// ID, cannot reach another connection, nor a later command of the same
// connection: the context dies with the command.
//
// The watch overlaps GMS's own check while rows stream; GMS's cannot be
// turned off, and ours costs one poll(2) per watchInterval, so the overlap
// is left alone rather than made to depend on GMS internals.

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"syscall"
	"time"

	"github.com/dolthub/go-mysql-server/server"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/netutil"
	"github.com/dolthub/vitess/go/sqltypes"
)

// watchInterval is how often a running command checks its client's
// socket.
const watchInterval = 200 * time.Millisecond

// errClientGone is the cause of a command's cancellation when its client
// closed the connection. It is a context.Canceled, as for KILL QUERY.
var errClientGone = fmt.Errorf("client closed the connection: %w", context.Canceled)

// watchDisconnects returns a server.HandlerWrapper that cancels a running
// command when its client disconnects, logging to log, and that lets
// prepared decide how each prepared statement execution runs.
func watchDisconnects(log *slog.Logger, prepared preparedRouter) server.HandlerWrapper {
	return func(h mysql.Handler) (mysql.Handler, error) {
		return &disconnectHandler{passOn: passOn{h}, log: log, every: watchInterval, prepared: prepared}, nil
	}
}

// A preparedRouter returns the prepared statement execution to run in
// place of prepare (see Engine.routePrepared).
type preparedRouter func(ctx context.Context, c *mysql.Conn, prepare *mysql.PrepareData) *mysql.PrepareData

// disconnectHandler is a mysql.Handler whose statement-running commands
// are cancelled when the client's socket closes.
type disconnectHandler struct {
	passOn
	log      *slog.Logger
	every    time.Duration
	prepared preparedRouter // nil: executions run as prepared
}

// The wrapped handler is GMS's, which implements the optional replication
// interface vitess looks for; keep it visible through the wrapper.
var _ mysql.BinlogReplicaHandler = (*disconnectHandler)(nil)

// ComQuery implements mysql.Handler.
func (h *disconnectHandler) ComQuery(ctx context.Context, c *mysql.Conn, query string, callback mysql.ResultSpoolFn) error {
	ctx, stop := h.watch(ctx, c)
	defer stop()
	return h.Handler.ComQuery(ctx, c, query, callback)
}

// ComMultiQuery implements mysql.Handler. Vitess calls it once per
// statement of a script, so each statement is watched on its own.
func (h *disconnectHandler) ComMultiQuery(ctx context.Context, c *mysql.Conn, query string, callback mysql.ResultSpoolFn) (string, error) {
	ctx, stop := h.watch(ctx, c)
	defer stop()
	return h.Handler.ComMultiQuery(ctx, c, query, callback)
}

// ComStmtExecute implements mysql.Handler.
func (h *disconnectHandler) ComStmtExecute(ctx context.Context, c *mysql.Conn, prepare *mysql.PrepareData, callback func(*sqltypes.Result) error) error {
	ctx, stop := h.watch(ctx, c)
	defer stop()
	if h.prepared != nil {
		prepare = h.prepared(ctx, c, prepare)
	}
	return h.Handler.ComStmtExecute(ctx, c, prepare, callback)
}

// watch starts watching c's socket for the command about to run; the
// command must run under the returned context and call stop when it
// returns. On a connection that cannot be watched (not a socket, or a
// platform without a probe) it returns ctx itself.
func (h *disconnectHandler) watch(ctx context.Context, c *mysql.Conn) (context.Context, func()) {
	probe := newPeerProbe(c.Conn)
	if probe == nil {
		return ctx, func() {}
	}
	id := c.ConnectionID
	return watch(ctx, h.every, probe, func() {
		h.log.Info("client disconnected, cancelling its statement", "conn", id)
	})
}

// watch calls gone every interval until stop is called. When gone reports
// true it calls onGone, cancels the returned context with errClientGone
// and stops calling gone. stop cancels the context and returns after the
// watching goroutine has exited, so gone is never called once stop has
// returned.
func watch(ctx context.Context, every time.Duration, gone func() bool, onGone func()) (_ context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	quit := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if gone() {
				onGone()
				cancel(errClientGone)
				return
			}
		}
	}()
	return ctx, func() {
		close(quit)
		<-exited
		cancel(nil)
	}
}

// maxConnWrappers bounds how many wrappers rawConn looks through.
const maxConnWrappers = 8

// rawConn returns the socket under c, looking through the wrappers vitess
// puts around it (read/write timeouts, TLS), or false when there is none
// (net.Pipe, test doubles).
func rawConn(c net.Conn) (syscall.RawConn, bool) {
	for range maxConnWrappers {
		switch x := c.(type) {
		case syscall.Conn:
			rc, err := x.SyscallConn()
			return rc, err == nil
		case netutil.ConnWithTimeouts:
			c = x.Conn
		case interface{ NetConn() net.Conn }: // *tls.Conn
			c = x.NetConn()
		default:
			return nil, false
		}
	}
	return nil, false
}
