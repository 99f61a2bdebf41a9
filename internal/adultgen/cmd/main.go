// Command adultgen writes a generated adult-like table (package adultgen)
// to a CSV file or into PostgreSQL:
//
//	go run ./internal/adultgen/cmd -rows 10000000 -csv adult10m.csv
//	go run ./internal/adultgen/cmd -rows 10000000 -postgres "$DPSQL_TEST_POSTGRES" -table adult10m
//	go run ./internal/adultgen/cmd -ddl census.big   # the dpsql statements declaring the table
package main

import (
	"context"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dpsql/dpsql/federated"
	"github.com/dpsql/dpsql/internal/adultgen"
)

func main() {
	rows := flag.Int("rows", 1000000, "number of rows")
	seed := flag.Uint64("seed", 1, "generator seed")
	csvPath := flag.String("csv", "", "write a CSV file")
	pgURL := flag.String("postgres", "", "PostgreSQL server, postgresql://user:pw@host:port/db")
	table := flag.String("table", "adult", "PostgreSQL table to create")
	ddl := flag.String("ddl", "", "print the dpsql DDL declaring this table name and exit")
	flag.Parse()
	if err := run(*rows, *seed, *csvPath, *pgURL, *table, *ddl); err != nil {
		fmt.Fprintln(os.Stderr, "adultgen:", err)
		os.Exit(1)
	}
}

func run(rows int, seed uint64, csvPath, pgURL, table, ddl string) error {
	ctx := context.Background()
	if ddl != "" {
		for _, s := range adultgen.DDL(ddl, "") {
			fmt.Println(s + ";")
		}
		return nil
	}
	if csvPath == "" && pgURL == "" {
		return fmt.Errorf("nothing to do: give -csv, -postgres or -ddl")
	}
	start := time.Now()
	if csvPath != "" {
		f, err := os.Create(csvPath)
		if err != nil {
			return err
		}
		if err := adultgen.WriteCSV(ctx, f, rows, seed); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	if pgURL != "" {
		c, err := federated.ParseServer(pgURL)
		if err != nil {
			return err
		}
		u := url.URL{Scheme: "postgres", User: url.UserPassword(c.User, c.Password),
			Host: c.Host + ":" + strconv.Itoa(c.Port), Path: "/" + c.Database, RawQuery: c.Params.Encode()}
		conn, err := pgx.Connect(ctx, u.String())
		if err != nil {
			return fmt.Errorf("connecting: %s", federated.Redact(err))
		}
		defer conn.Close(ctx)
		if err := adultgen.CopyToPostgres(ctx, conn, table, rows, seed); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "%d rows in %v\n", rows, time.Since(start).Round(time.Millisecond))
	return nil
}
