// Package driver is dpsql's database/sql driver for servers embedded in
// the program (package dpsql). A connection is an in-memory pipe to the
// embedded server, speaking the MySQL protocol: no TCP port is opened, and
// the server authenticates the user, checks grants and runs the statement
// exactly as it does for a network client.
//
// Importing the package registers the driver as "dpsql". Its DSN is
// go-sql-driver/mysql's, with the protocol "dpsql" and the embedded
// server's name as the address:
//
//	srv, err := dpsql.Open(ctx, dpsql.Options{DataDir: dir, RootPassword: pw, Name: "app"})
//	db, err := sql.Open("dpsql", "root:"+pw+"@dpsql(app)/demo")
//
// dpsql.Server.OpenDB and Server.Connector do the same without a DSN.
package driver

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"net"
	"sync"

	"github.com/go-sql-driver/mysql"
)

// Name is the driver's name for sql.Open, and the DSN protocol.
const Name = "dpsql"

// Dialer opens a connection to an embedded server.
type Dialer func(ctx context.Context) (net.Conn, error)

var (
	mu      sync.Mutex
	servers = map[string]Dialer{}
)

// Register makes the embedded server called name reachable through DSNs
// "user:password@dpsql(name)/db" until unregister is called. Names are
// unique in the process.
func Register(name string, dial Dialer) (unregister func(), err error) {
	mu.Lock()
	defer mu.Unlock()
	if name == "" {
		return nil, fmt.Errorf("dpsql driver: empty server name")
	}
	if _, ok := servers[name]; ok {
		return nil, fmt.Errorf("dpsql driver: an embedded server called %q is already open in this process", name)
	}
	servers[name] = dial
	var once sync.Once
	return func() {
		once.Do(func() {
			mu.Lock()
			defer mu.Unlock()
			delete(servers, name)
		})
	}, nil
}

// lookup returns the dialer of the server called name.
func lookup(name string) (Dialer, error) {
	mu.Lock()
	defer mu.Unlock()
	d, ok := servers[name]
	if !ok {
		return nil, fmt.Errorf("dpsql driver: no embedded server called %q is open in this process (open it with dpsql.Open)", name)
	}
	return d, nil
}

// Driver is the database/sql driver.
type Driver struct{}

var (
	_ driver.Driver        = Driver{}
	_ driver.DriverContext = Driver{}
)

func init() { sql.Register(Name, Driver{}) }

// Open implements driver.Driver.
func (d Driver) Open(dsn string) (driver.Conn, error) {
	c, err := d.OpenConnector(dsn)
	if err != nil {
		return nil, err
	}
	return c.Connect(context.Background())
}

// OpenConnector implements driver.DriverContext. The server is looked up
// when a connection is made, so a DSN stays valid across a close and
// re-open of the server under the same name.
func (Driver) OpenConnector(dsn string) (driver.Connector, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("dpsql driver: %w", err)
	}
	if cfg.Net != Name {
		return nil, fmt.Errorf("dpsql driver: DSN %q does not name an embedded server: want user:password@dpsql(name)/database", redact(cfg))
	}
	name := cfg.Addr
	return NewConnector(cfg, func(ctx context.Context) (net.Conn, error) {
		dial, err := lookup(name)
		if err != nil {
			return nil, err
		}
		return dial(ctx)
	})
}

// NewConnector returns a connector that speaks to a server through dial,
// with cfg's user, password, database and options (cfg's Net and Addr are
// ignored).
func NewConnector(cfg *mysql.Config, dial Dialer) (driver.Connector, error) {
	cfg = cfg.Clone()
	cfg.DialFunc = func(ctx context.Context, _, _ string) (net.Conn, error) { return dial(ctx) }
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("dpsql driver: %w", err)
	}
	return c, nil
}

// redact is cfg's DSN without the password.
func redact(cfg *mysql.Config) string {
	c := cfg.Clone()
	if c.Passwd != "" {
		c.Passwd = "xxx"
	}
	return c.FormatDSN()
}
