package dpsql_test

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/engine"
)

// BenchmarkLatency compares the embedded driver (in-memory pipes) with
// go-sql-driver over TCP loopback to the same engine code, each over its
// own demo data directory.
func BenchmarkLatency(b *testing.B) {
	ctx := context.Background()
	srv, err := dpsql.Open(ctx, dpsql.Options{DataDir: b.TempDir(), RootPassword: "pw", Demo: true})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()

	cfg := engine.DefaultConfig()
	cfg.DataDir, cfg.Port, cfg.RootPassword, cfg.Demo = b.TempDir(), 0, "pw", true
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	e, err := engine.New(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- e.Serve(sctx) }()
	defer func() { cancel(); <-done }()
	tcp := func() *sql.DB {
		c := mysql.NewConfig()
		c.User, c.Passwd, c.Net, c.Addr, c.DBName = "root", "pw", "tcp", e.Addr().String(), "demo"
		conn, err := mysql.NewConnector(c)
		if err != nil {
			b.Fatal(err)
		}
		return sql.OpenDB(conn)
	}

	for _, tr := range []struct {
		name string
		open func() *sql.DB
	}{
		{"embedded", func() *sql.DB { return srv.OpenDB("root", "pw", "demo") }},
		{"tcp", tcp},
	} {
		db := tr.open()
		db.SetMaxOpenConns(1)
		for _, q := range []struct {
			name  string
			query string
			args  []any
		}{
			{"select1", "SELECT 1", nil},
			{"point", "SELECT age FROM census WHERE id = ?", []any{1234}},
			{"count30k", "SELECT COUNT(*) FROM census WHERE age > 40", nil},
		} {
			b.Run(tr.name+"/"+q.name, func(b *testing.B) {
				var s string
				for b.Loop() {
					if err := db.QueryRow(q.query, q.args...).Scan(&s); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		b.Run(tr.name+"/connect", func(b *testing.B) {
			for b.Loop() {
				d := tr.open()
				if err := d.Ping(); err != nil {
					b.Fatal(err)
				}
				d.Close()
			}
		})
		db.Close()
	}
}
