package federated_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/dpsql/dpsql/federated"
	"github.com/dpsql/dpsql/internal/adultgen"
	"github.com/dpsql/dpsql/internal/testdb"
)

// benchTable returns a PostgreSQL adult-like table for benchmarks:
// DPSQL_BENCH_TABLE names an existing one (e.g. made with
// go run ./internal/adultgen/cmd), else one of DPSQL_BENCH_ROWS rows
// (default 100 000) is generated and dropped at the end.
func benchTable(b *testing.B) *federated.Conn {
	srv := testdb.Postgres(b)
	if name := os.Getenv("DPSQL_BENCH_TABLE"); name != "" {
		return testdb.Table(srv, name)
	}
	rows := 100000
	if s := os.Getenv("DPSQL_BENCH_ROWS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			b.Fatal(err)
		}
		rows = n
	}
	db := testdb.Open(b, srv)
	defer db.Close()
	name := testdb.Name(b, srv, "adult_bench")
	if err := adultgen.CopyToPostgres(context.Background(), db.Pg(), name, rows, 1); err != nil {
		b.Fatal(err)
	}
	return testdb.Table(srv, name)
}

// all3Way lists the 364 3-way sets of the 14 attributes.
func all3Way(n int) [][]int {
	var sets [][]int
	for a := range n {
		for b := a + 1; b < n; b++ {
			for c := b + 1; c < n; c++ {
				sets = append(sets, []int{a, b, c})
			}
		}
	}
	return sets
}

// BenchmarkAdult3Way times all 364 3-way marginals of the adult-like table
// through a Snapshot, for several GROUPING SETS batch sizes.
func BenchmarkAdult3Way(b *testing.B) {
	conn := benchTable(b)
	ctx := context.Background()
	src, err := federated.Open(ctx, conn)
	if err != nil {
		b.Fatal(federated.Detail(err))
	}
	defer src.Close()
	dom := adultgen.Domain()
	cols := make([]federated.SnapshotColumn, len(dom.Columns))
	for i := range cols {
		cols[i] = federated.SnapshotColumn{Name: dom.Columns[i].Name(), Domain: &dom.Columns[i]}
	}
	sets := all3Way(len(cols))
	batches := []int{1, 8, 32, 91, 182, 364}
	if s := os.Getenv("DPSQL_BENCH_BATCH"); s != "" {
		n, _ := strconv.Atoi(s)
		batches = []int{n}
	}
	for _, batch := range batches {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			var st federated.Stats
			for b.Loop() {
				sn, err := src.Snapshot(ctx, cols)
				if err != nil {
					b.Fatal(err)
				}
				sn.SetBatch(batch)
				if _, err := sn.Marginals(ctx, sets); err != nil {
					b.Fatal(federated.Detail(err))
				}
				st = sn.Stats()
				sn.Close()
			}
			b.ReportMetric(float64(st.Queries), "queries")
			b.ReportMetric(float64(st.Cells), "cells")
		})
	}
}
