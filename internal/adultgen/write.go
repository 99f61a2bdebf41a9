package adultgen

import (
	"bufio"
	"context"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5"
)

// WriteCSV writes a header and n rows of seed's table to w.
func WriteCSV(ctx context.Context, w io.Writer, n int, seed uint64) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	if _, err := bw.WriteString(CSVHeader() + "\n"); err != nil {
		return fmt.Errorf("adultgen: writing CSV: %w", err)
	}
	g := New(seed)
	row := make([]any, len(Attrs))
	var line []byte
	for i := range n {
		if i%65536 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		g.Next(row)
		line = AppendCSV(line[:0], row)
		if _, err := bw.Write(line); err != nil {
			return fmt.Errorf("adultgen: writing CSV: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("adultgen: writing CSV: %w", err)
	}
	return nil
}

// source streams generated rows to pgx's COPY.
type source struct {
	ctx  context.Context
	g    *Generator
	row  []any
	left int
}

func (s *source) Next() bool {
	if s.left == 0 {
		return false
	}
	s.left--
	s.g.Next(s.row)
	return true
}

func (s *source) Values() ([]any, error) { return s.row, nil }

func (s *source) Err() error { return s.ctx.Err() }

// CopyToPostgres creates table (a plain name, in the search path's first
// schema) and fills it with n rows of seed's table through COPY, streaming.
func CopyToPostgres(ctx context.Context, conn *pgx.Conn, table string, n int, seed uint64) error {
	if _, err := conn.Exec(ctx, PostgresDDL(pgx.Identifier{table}.Sanitize())); err != nil {
		return fmt.Errorf("adultgen: creating %s: %w", table, err)
	}
	src := &source{ctx: ctx, g: New(seed), row: make([]any, len(Attrs)), left: n}
	got, err := conn.CopyFrom(ctx, pgx.Identifier{table}, Names(), src)
	if err != nil {
		return fmt.Errorf("adultgen: copying into %s: %w", table, err)
	}
	if got != int64(n) {
		return fmt.Errorf("adultgen: copied %d rows into %s, want %d", got, table, n)
	}
	if _, err := conn.Exec(ctx, "ANALYZE "+pgx.Identifier{table}.Sanitize()); err != nil {
		return fmt.Errorf("adultgen: analyzing %s: %w", table, err)
	}
	return nil
}
