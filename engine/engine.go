package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	sqle "github.com/dolthub/go-mysql-server"
	"github.com/dolthub/go-mysql-server/server"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
)

// shutdownGrace bounds how long Serve waits for connection handlers to
// finish after it has closed every connection.
const shutdownGrace = 10 * time.Second

// Engine is a dpsql server: go-mysql-server over the storage, with users and
// grants always enforced, dpsql statements, and a MySQL listener.
type Engine struct {
	cfg     Config
	dataDir string // absolute
	log     *slog.Logger
	store   Storage
	sqle    *sqle.Engine
	started time.Time

	// internalID numbers internal sessions; it starts high so their IDs
	// never collide with connection IDs.
	internalID atomic.Uint32

	srv    *server.Server
	closed atomic.Bool

	// dp is the state of the differential-privacy statements; its fields
	// are nil when the storage is not the durable catalog (unit tests over
	// the memory provider), and those statements then fail with
	// ErrNeedsCatalog.
	dp dpState
	// answers caches the synthetic tables answered from their models
	// (answer.go).
	answers *answerState
	// warnNoFilter logs once that prepared dpsql statements cannot be
	// intercepted (prepare_wire.go).
	warnNoFilter sync.Once

	// remote connects to the source of a FEDERATED table (federated.go);
	// tests substitute a fake.
	remote remoteOpener

	// metrics are the engine's Prometheus instruments (metrics.go).
	metrics *metrics
}

// New opens the data directory (creating it on first start), binds the
// listener, loads users and grants, bootstraps root and dp_internal and
// seeds the demo database if asked. The caller must call Serve or Close.
func New(ctx context.Context, cfg Config) (*Engine, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	dir, err := prepareDataDir(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	st, err := openStorage(dir)
	if err != nil {
		return nil, err
	}
	// Bind before the slow start-up work, so a busy port fails fast.
	ln := cfg.Listener
	if ln == nil {
		if ln, err = listen(cfg.addr()); err != nil {
			st.Close()
			return nil, err
		}
	}
	e, err := build(ctx, cfg, dir, st)
	if err != nil {
		ln.Close()
		st.Close()
		return nil, err
	}
	if err := e.newServer(ln); err != nil {
		ln.Close()
		e.Close()
		return nil, err
	}
	return e, nil
}

// build wires an engine over st without a listener. Unit tests call it with
// a memory storage.
func build(ctx context.Context, cfg Config, dataDir string, st Storage) (*Engine, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	e := &Engine{cfg: cfg, dataDir: dataDir, log: log, store: st, started: time.Now(), remote: openFederated}
	e.internalID.Store(1 << 31)
	e.metrics = newMetrics(e)

	pro := newProvider(st.Provider(), e.procedures())
	pro.dropped = func(ctx *sql.Context, name string) error { return e.dropDatabaseGrants(ctx, name) }
	e.sqle = sqle.New(newAnalyzer(pro), &sqle.Config{})
	e.sqle.Parser = newParser(e)
	e.initAnswers(pro)
	e.isolate(pro)
	e.addFederatedRule()

	if err := setSystemVariables(dataDir, cfg.Version); err != nil {
		return nil, err
	}
	if err := e.loadUsers(ctx); err != nil {
		return nil, err
	}
	if err := e.openDP(); err != nil {
		return nil, err
	}
	if cfg.Demo {
		if err := e.seedDemo(ctx); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// prepareDataDir creates dir if needed, checks that it is a writable
// directory and returns its absolute path.
func prepareDataDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", ErrDataDir.Wrap(err, "data directory %q", dir)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return "", ErrDataDir.Wrap(err, "cannot create data directory %q", abs)
	}
	f, err := os.CreateTemp(abs, ".write-test-*")
	if err != nil {
		return "", ErrDataDir.Wrap(err, "data directory %q is not writable", abs)
	}
	name := f.Name()
	f.Close()
	os.Remove(name)
	if err := os.MkdirAll(filepath.Join(abs, secureFilesDir), 0o700); err != nil {
		return "", ErrDataDir.Wrap(err, "cannot create %q", filepath.Join(abs, secureFilesDir))
	}
	return abs, nil
}

// secureFilesDir, inside the data directory, is the only place server-side
// file statements (LOAD DATA INFILE, SELECT ... INTO OUTFILE) may touch.
const secureFilesDir = "secure-files"

// setSystemVariables sets the process-wide GMS variables the server relies
// on: secure_file_priv confines server-side file access (and silences GMS's
// startup warning about it being empty); local_infile allows LOAD DATA
// LOCAL INFILE, which reads a file the client sends (the client must opt
// in, and the user needs INSERT on the table); version (VERSION(),
// @@version) and version_comment identify dpsql (compat.go).
func setSystemVariables(dataDir, release string) error {
	err := sql.SystemVariables.AssignValues(map[string]any{
		"secure_file_priv": filepath.Join(dataDir, secureFilesDir),
		"local_infile":     int8(1),
		"version":          ServerVersion,
		"version_comment":  versionComment(release),
	})
	if err != nil {
		return ErrInternal.Wrap(err, "setting system variables")
	}
	return nil
}

// listen binds addr.
func listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, ErrListen.New("cannot listen on %s: address already in use (is another server running? pick another --port)", addr)
		}
		return nil, ErrListen.Wrap(err, "cannot listen on %s", addr)
	}
	return ln, nil
}

// newServer creates the MySQL server on ln. A client that disconnects
// cancels its running statement (disconnect.go); dpsql statements can be
// prepared (prepare_wire.go).
func (e *Engine) newServer(ln net.Listener) error {
	installLogBridge(e.log)
	tlsCfg, err := e.cfg.tlsConfig()
	if err != nil {
		return err
	}
	srv, err := server.NewServerWithHandler(server.Config{
		Protocol:                "tcp",
		Address:                 ln.Addr().String(),
		Version:                 ServerVersion,
		Listener:                ln,
		TLSConfig:               tlsCfg,
		RequireSecureTransport:  e.cfg.RequireTLS,
		ProtocolListenerFactory: e.protocolListener,
	}, e.sqle, sql.NewContext, e.newConnSession, nil, e.countMetrics(e.recordErrors(e.handlerWrapper)))
	if err != nil {
		return ErrListen.Wrap(err, "cannot start server on %s", ln.Addr())
	}
	e.srv = srv
	return nil
}

// Addr is the address the server listens on.
func (e *Engine) Addr() net.Addr { return e.srv.Listener.Addr() }

// DataDir is the absolute data directory.
func (e *Engine) DataDir() string { return e.dataDir }

// Serve accepts connections until ctx is cancelled or the listener fails,
// then shuts down: it stops accepting, closes every connection, waits for
// their handlers and closes the storage.
func (e *Engine) Serve(ctx context.Context) error {
	if e.srv == nil {
		return ErrInternal.New("engine has no listener")
	}
	e.log.Info("dpsql ready", "addr", e.Addr().String(), "data_dir", e.dataDir, "version", e.cfg.Version)
	done := make(chan error, 1)
	go func() { done <- e.srv.Start() }()
	var err error
	select {
	case <-ctx.Done():
		e.log.Info("dpsql shutting down")
		e.srv.Close()
		<-done
	case err = <-done:
		if err != nil {
			err = ErrListen.Wrap(err, "serving %s", e.Addr())
		}
	}
	e.dropConnections()
	return errors.Join(err, e.Close())
}

// dropConnections closes every client connection and waits (bounded) for
// their handlers to return.
func (e *Engine) dropConnections() {
	sm := e.srv.SessionManager()
	sm.Iter(func(s sql.Session) (bool, error) {
		sm.KillConnection(s.ID())
		return false, nil
	})
	waited := make(chan struct{})
	go func() { sm.WaitForClosedConnections(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(shutdownGrace):
		e.log.Warn("connections still busy at shutdown", "grace", shutdownGrace)
	}
}

// Close releases the storage. It is safe to call more than once.
func (e *Engine) Close() error {
	if e.closed.Swap(true) {
		return nil
	}
	if e.srv != nil {
		e.srv.Close()
	}
	e.sqle.Close()
	if err := e.store.Close(); err != nil {
		return fmt.Errorf("closing storage: %w", err)
	}
	return nil
}

// newConnSession is the server's session builder: a storage session for the
// authenticated user of conn.
func (e *Engine) newConnSession(_ context.Context, conn *mysql.Conn, addr string) (sql.Session, error) {
	var client sql.Client
	if u, ok := conn.UserData.(sql.MysqlConnectionUser); ok {
		client = sql.Client{User: u.User, Address: u.Host, Capabilities: conn.Capabilities}
	}
	return e.store.NewSession(sql.NewBaseSessionWithClientServer(addr, client, conn.ConnectionID)), nil
}
