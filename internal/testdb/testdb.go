// Package testdb gives tests the real PostgreSQL and MariaDB (MySQL-wire)
// servers that .ci/databases.sh starts.
//
// The servers are named by two environment variables holding admin
// connection URLs in the federated form without a table:
//
//	DPSQL_TEST_POSTGRES=postgresql://user:password@127.0.0.1:5432/dbname
//	DPSQL_TEST_MYSQL=mysql://user:password@127.0.0.1:3306/dbname
//
// A test that asks for a server that is not configured is skipped, unless
// DPSQL_TEST_REQUIRE is set (as CI does), when it fails: a CI run must not
// pass by skipping its database tests.
package testdb

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"

	"github.com/dpsql/dpsql/federated"
)

// Environment variables.
const (
	EnvPostgres = "DPSQL_TEST_POSTGRES"
	EnvMySQL    = "DPSQL_TEST_MYSQL"
	EnvRequire  = "DPSQL_TEST_REQUIRE"
)

// Postgres returns the test PostgreSQL server (no table), or skips.
func Postgres(t testing.TB) *federated.Conn { return server(t, EnvPostgres) }

// MySQL returns the test MariaDB/MySQL server (no table), or skips.
func MySQL(t testing.TB) *federated.Conn { return server(t, EnvMySQL) }

// Servers returns every configured server by driver name, for table-driven
// tests over both; each missing one is skipped (or fails under
// DPSQL_TEST_REQUIRE) in its own subtest by the caller through Get.
var Servers = []string{federated.Postgres, federated.MySQL}

// Get returns the server of a driver name (see Servers).
func Get(t testing.TB, driver string) *federated.Conn {
	if driver == federated.Postgres {
		return Postgres(t)
	}
	return MySQL(t)
}

func server(t testing.TB, env string) *federated.Conn {
	t.Helper()
	s := os.Getenv(env)
	if s == "" {
		if os.Getenv(EnvRequire) != "" {
			t.Fatalf("%s is not set and %s requires the test databases (source .ci/databases.sh; dpsql_db_start)", env, EnvRequire)
		}
		t.Skipf("%s not set: no test database (source .ci/databases.sh; dpsql_db_start)", env)
	}
	c, err := federated.ParseServer(s)
	if err != nil {
		t.Fatalf("%s: %v", env, err)
	}
	return c
}

// Table returns a copy of server c naming table (in schema public for
// PostgreSQL).
func Table(c *federated.Conn, table string) *federated.Conn {
	cp := *c
	cp.Table = table
	if cp.Driver == federated.Postgres && cp.Schema == "" {
		cp.Schema = "public"
	}
	cp.Params = url.Values{}
	for k, v := range c.Params {
		cp.Params[k] = append([]string(nil), v...)
	}
	if len(cp.Params) == 0 {
		cp.Params = nil
	}
	return &cp
}

var seq atomic.Int64

// Name returns a table name unique to this test process, to create in the
// shared test database; the table is dropped when the test ends.
func Name(t testing.TB, c *federated.Conn, prefix string) string {
	name := fmt.Sprintf("%s_%d_%d", prefix, os.Getpid(), seq.Add(1))
	t.Cleanup(func() {
		db := Open(t, c)
		defer db.Close()
		_ = db.Exec(context.Background(), "DROP TABLE IF EXISTS "+Quote(c, name))
	})
	return name
}

// Quote quotes an identifier for c's dialect.
func Quote(c *federated.Conn, name string) string {
	if c.Driver == federated.Postgres {
		return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
	}
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
}

// DB is a plain admin connection for setting up test tables.
type DB struct {
	c  *federated.Conn
	pg *pgx.Conn
	my *sql.DB
}

// Open connects to server c, failing the test on error.
func Open(t testing.TB, c *federated.Conn) *DB {
	t.Helper()
	db, err := Connect(context.Background(), c)
	if err != nil {
		t.Fatalf("test database: %v", err)
	}
	return db
}

// Connect connects to server c.
func Connect(ctx context.Context, c *federated.Conn) (*DB, error) {
	db := &DB{c: c}
	switch c.Driver {
	case federated.Postgres:
		u := url.URL{Scheme: "postgres", User: url.UserPassword(c.User, c.Password),
			Host: c.Host + ":" + strconv.Itoa(c.Port), Path: "/" + c.Database, RawQuery: "sslmode=disable"}
		cfg, err := pgx.ParseConfig(u.String())
		if err != nil {
			return nil, fmt.Errorf("postgres config: %w", err)
		}
		cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("postgres: %w", err)
		}
		db.pg = conn
	default:
		cfg := mysql.NewConfig()
		cfg.User, cfg.Passwd, cfg.Net = c.User, c.Password, "tcp"
		cfg.Addr = c.Host + ":" + strconv.Itoa(c.Port)
		cfg.DBName = c.Database
		cfg.MultiStatements = true
		connector, err := mysql.NewConnector(cfg)
		if err != nil {
			return nil, err
		}
		db.my = sql.OpenDB(connector)
		if err := db.my.PingContext(ctx); err != nil {
			db.my.Close()
			return nil, fmt.Errorf("mysql: %w", err)
		}
	}
	return db, nil
}

// Close closes the connection.
func (db *DB) Close() {
	if db.pg != nil {
		db.pg.Close(context.Background())
	}
	if db.my != nil {
		db.my.Close()
	}
}

// Exec runs statements in order.
func (db *DB) Exec(ctx context.Context, stmts ...string) error {
	for _, s := range stmts {
		var err error
		if db.pg != nil {
			_, err = db.pg.Exec(ctx, s)
		} else {
			_, err = db.my.ExecContext(ctx, s)
		}
		if err != nil {
			return fmt.Errorf("%.200s: %w", s, err)
		}
	}
	return nil
}

// MustExec runs statements, failing the test on error.
func (db *DB) MustExec(t testing.TB, stmts ...string) {
	t.Helper()
	if err := db.Exec(context.Background(), stmts...); err != nil {
		t.Fatal(err)
	}
}

// QueryInt runs a query returning one integer.
func (db *DB) QueryInt(ctx context.Context, q string) (int64, error) {
	var n int64
	var err error
	if db.pg != nil {
		err = db.pg.QueryRow(ctx, q).Scan(&n)
	} else {
		err = db.my.QueryRowContext(ctx, q).Scan(&n)
	}
	return n, err
}

// Insert inserts rows into table, batched. Values are nil, int64,
// float64, string or []byte; a string goes to any column type (the server
// converts it), so NaN or 1e400 can be written to a numeric column as
// text.
func (db *DB) Insert(ctx context.Context, table string, cols []string, rows [][]any) error {
	qcols := make([]string, len(cols))
	for i, c := range cols {
		qcols[i] = Quote(db.c, c)
	}
	head := "INSERT INTO " + Quote(db.c, table) + " (" + strings.Join(qcols, ", ") + ") VALUES "
	const batch = 500
	for lo := 0; lo < len(rows); lo += batch {
		hi := min(lo+batch, len(rows))
		var b strings.Builder
		b.WriteString(head)
		var args []any
		for r := lo; r < hi; r++ {
			if r > lo {
				b.WriteString(", ")
			}
			b.WriteByte('(')
			for j, v := range rows[r] {
				if j > 0 {
					b.WriteString(", ")
				}
				args = append(args, v)
				if db.pg != nil {
					b.WriteString("$" + strconv.Itoa(len(args)))
				} else {
					b.WriteByte('?')
				}
			}
			b.WriteByte(')')
		}
		var err error
		if db.pg != nil {
			_, err = db.pg.Exec(ctx, b.String(), args...)
		} else {
			_, err = db.my.ExecContext(ctx, b.String(), args...)
		}
		if err != nil {
			return fmt.Errorf("insert into %s: %w", table, err)
		}
	}
	return nil
}

// Pg returns the PostgreSQL connection (nil for MySQL).
func (db *DB) Pg() *pgx.Conn { return db.pg }

// SQL returns the MySQL connection pool (nil for PostgreSQL).
func (db *DB) SQL() *sql.DB { return db.my }

// Wait polls cond every 50 ms until it is true or d has passed.
func Wait(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return cond()
}
