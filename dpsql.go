// Package dpsql runs a dpsql server inside a Go program, with no TCP port.
//
// Open starts the same engine as `dpsql serve` over a data directory (the
// same users and grants, privacy ledger, synthetic tables and durability;
// a directory may be used by the embedded server and, at another time, by
// `dpsql serve`), listening on an in-memory listener instead of a socket.
// Clients connect through database/sql with the "dpsql" driver (package
// driver): every connection is an in-memory pipe speaking the MySQL
// protocol, so authentication, grants, isolation, the ledger and prepared
// statements work exactly as for a network client. A connection counts as
// coming from localhost, as a MySQL Unix-socket connection does.
//
//	srv, err := dpsql.Open(ctx, dpsql.Options{DataDir: "app-data", RootPassword: pw})
//	defer srv.Close()
//	db := srv.OpenDB("root", pw, "demo") // a *sql.DB
//
// Install does the same over the databases of a go-mysql-server
// application (its own sql.DatabaseProvider): dpsql as an extension.
// See docs/embedding.md.
package dpsql

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"sync"

	gmssql "github.com/dolthub/go-mysql-server/sql"
	"github.com/go-sql-driver/mysql"

	"github.com/dpsql/dpsql/driver"
	"github.com/dpsql/dpsql/engine"
)

// Options configures an embedded server.
type Options struct {
	// DataDir holds all durable state; created on first open. Required.
	DataDir string
	// RootPassword is root@localhost's password: stored (hashed) on first
	// open, replacing the stored one on later opens. Required, since an
	// embedding program has no log a generated password could be read from.
	RootPassword string
	// Name is the server's name in DSNs ("user:pw@dpsql(NAME)/db"); it must
	// be unique among the embedded servers open in the process. Default:
	// the absolute data directory.
	Name string
	// Demo creates the demo database (demo.census) if it does not exist.
	Demo bool
	// Logger receives the server's log; nil discards it.
	Logger *slog.Logger
	// Version is reported by SHOW DPSQL STATUS; default "embedded".
	Version string
	// Listener, if set, also serves network clients (e.g. the MySQL port
	// of an application that installs dpsql): connections accepted on it
	// are served beside the in-memory ones. Close closes it.
	Listener net.Listener
}

// Server is an embedded dpsql server.
type Server struct {
	e          *engine.Engine
	ln         *pipeListener
	name       string
	unregister func()
	cancel     context.CancelFunc
	done       chan error

	closeOnce sync.Once
	closeErr  error
}

// Open opens (creating on first use) the data directory and starts serving
// it in the process. The data directory is locked until Close, as it is by
// `dpsql serve`.
func Open(ctx context.Context, o Options) (*Server, error) {
	return open(ctx, o, nil)
}

// Install adds dpsql to a go-mysql-server application's own databases,
// with one call: it returns a server over host's databases (read and
// written as they are) beside dpsql's metadata in o.DataDir, the file
// DataDir/dpsql.db holding users and grants, budgets and the privacy
// ledger, declared domains and the synthetic tables with their models.
// Every dpsql statement works on the host's tables: SET PRIVACY BUDGET,
// SET DOMAIN, GRANT SYNTHESIZE, CREATE SYNTHETIC TABLE (which scans the
// host table through its sql.Table), model answers, error bounds. Users
// and grants are enforced on the host's tables too, with dpsql's
// isolation: a user sees only the tables they hold a privilege on.
// Clients connect as to an embedded server (OpenDB, Connector, the
// "dpsql" driver), and new databases (e.g. for synthetic tables) are
// created in the metadata file.
func Install(ctx context.Context, host Host, o Options) (*Server, error) {
	if host.Provider == nil {
		return nil, errors.New("dpsql.Install: Host.Provider is required")
	}
	return open(ctx, o, &host)
}

// Host is the application's side of Install.
type Host struct {
	// Provider serves the application's databases.
	Provider gmssql.DatabaseProvider
	// NewSession makes a session from its base, as the application's
	// databases need: for go-mysql-server's memory databases,
	//
	//	func(b *sql.BaseSession) sql.Session { return memory.NewSession(b, pro) }
	//
	// nil uses the base session.
	NewSession func(*gmssql.BaseSession) gmssql.Session
}

// open starts an embedded server, over host's databases if host is set.
func open(ctx context.Context, o Options, host *Host) (*Server, error) {
	if o.DataDir == "" {
		return nil, errors.New("dpsql.Open: Options.DataDir is required")
	}
	if o.RootPassword == "" {
		return nil, errors.New("dpsql.Open: Options.RootPassword is required")
	}
	abs, err := filepath.Abs(o.DataDir)
	if err != nil {
		return nil, fmt.Errorf("dpsql.Open: data directory: %w", err)
	}
	name := o.Name
	if name == "" {
		name = abs
	}
	cfg := engine.DefaultConfig()
	cfg.DataDir, cfg.RootPassword, cfg.Demo = abs, o.RootPassword, o.Demo
	cfg.Version = "embedded"
	if o.Version != "" {
		cfg.Version = o.Version
	}
	cfg.Logger = o.Logger
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ln := newPipeListener(name)
	cfg.Listener = ln
	if o.Listener != nil {
		ln.also(o.Listener)
	}
	s := &Server{ln: ln, name: name, done: make(chan error, 1)}
	if s.unregister, err = driver.Register(name, ln.Dial); err != nil {
		return nil, err
	}
	if host != nil {
		s.e, err = engine.NewExtension(ctx, cfg, host.Provider, host.NewSession)
	} else {
		s.e, err = engine.New(ctx, cfg)
	}
	if err != nil {
		s.unregister()
		ln.Close()
		return nil, err
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel = cancel
	go func() { s.done <- s.e.Serve(sctx) }()
	return s, nil
}

// Name is the server's name in DSNs.
func (s *Server) Name() string { return s.name }

// DSN is the data source name of user on database (may be empty) for
// sql.Open("dpsql", …).
func (s *Server) DSN(user, password, database string) string {
	return s.config(user, password, database).FormatDSN()
}

func (s *Server) config(user, password, database string) *mysql.Config {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.DBName = user, password, database
	cfg.Net, cfg.Addr = driver.Name, s.name
	return cfg
}

// Connector returns a database/sql connector for user on database (may be
// empty), for sql.OpenDB.
func (s *Server) Connector(user, password, database string) sqldriver.Connector {
	c, err := driver.NewConnector(s.config(user, password, database), s.ln.Dial)
	if err != nil {
		// NewConnector only fails on an invalid configuration, and this
		// one is built here.
		panic(fmt.Sprintf("dpsql: connector: %v", err))
	}
	return c
}

// OpenDB returns a *sql.DB of user on database (may be empty). Close it
// before the server.
func (s *Server) OpenDB(user, password, database string) *sql.DB {
	return sql.OpenDB(s.Connector(user, password, database))
}

// Engine is the server's engine (metrics, data directory).
func (s *Server) Engine() *engine.Engine { return s.e }

// MetricsHandler serves the server's Prometheus metrics (docs/metrics.md).
func (s *Server) MetricsHandler() http.Handler { return s.e.MetricsHandler() }

// Close stops the server: it refuses new connections, closes the open ones
// (their statements are cancelled), waits for them and closes the data
// directory. Everything committed is durable. Safe to call more than once.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.unregister()
		s.cancel()
		s.closeErr = <-s.done
	})
	return s.closeErr
}

// pipeListener is a net.Listener whose connections are in-memory pipes
// made by Dial.
type pipeListener struct {
	net    net.Listener // also accepted from, if set
	name   string
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newPipeListener(name string) *pipeListener {
	return &pipeListener{name: name, conns: make(chan net.Conn), closed: make(chan struct{})}
}

// Accept implements net.Listener.
func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

// Close implements net.Listener. It closes the network listener too.
func (l *pipeListener) Close() error {
	l.once.Do(func() {
		close(l.closed)
		if l.net != nil {
			l.net.Close()
		}
	})
	return nil
}

// also serves the connections accepted on ln beside the pipes.
func (l *pipeListener) also(ln net.Listener) {
	l.net = ln
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return // closed
			}
			select {
			case l.conns <- c:
			case <-l.closed:
				c.Close()
				return
			}
		}
	}()
}

// Addr implements net.Listener.
func (l *pipeListener) Addr() net.Addr { return pipeAddr(l.name) }

// Dial returns the client end of a new connection to the server.
func (l *pipeListener) Dial(ctx context.Context) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- pipeConn{Conn: server}:
		return client, nil
	case <-l.closed:
		client.Close()
		server.Close()
		return nil, fmt.Errorf("dpsql: embedded server %q is closed", l.name)
	case <-ctx.Done():
		client.Close()
		server.Close()
		return nil, ctx.Err()
	}
}

// pipeConn is the server end of a pipe. Its peer address is a Unix socket
// address, so the server takes the client as localhost, as MySQL does for
// its socket clients.
type pipeConn struct{ net.Conn }

// RemoteAddr implements net.Conn.
func (pipeConn) RemoteAddr() net.Addr { return &net.UnixAddr{Name: "dpsql-embedded", Net: "unix"} }

// LocalAddr implements net.Conn.
func (pipeConn) LocalAddr() net.Addr { return &net.UnixAddr{Name: "dpsql-embedded", Net: "unix"} }

// pipeAddr is the listener's address: the server's name.
type pipeAddr string

func (a pipeAddr) Network() string { return "dpsql" }
func (a pipeAddr) String() string  { return "dpsql(" + string(a) + ")" }
