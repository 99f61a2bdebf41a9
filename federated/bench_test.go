package federated_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dpsql/dpsql/budget"
	"github.com/dpsql/dpsql/catalog/domain"
	"github.com/dpsql/dpsql/federated"
	"github.com/dpsql/dpsql/internal/adultgen"
	"github.com/dpsql/dpsql/internal/testdb"
	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/aim"
	"github.com/dpsql/dpsql/synth/bench"
	"github.com/dpsql/dpsql/synth/noise"
	"github.com/dpsql/dpsql/synth/pgm"
)

// benchTable returns an adult-like table for benchmarks, in PostgreSQL or,
// with DPSQL_BENCH_DRIVER=mysql, in MySQL/MariaDB: DPSQL_BENCH_TABLE names
// an existing one (e.g. made with go run ./internal/adultgen/cmd), else one
// of DPSQL_BENCH_ROWS rows (default 100 000) is generated and dropped at
// the end.
func benchTable(b *testing.B) *federated.Conn {
	driver := federated.Postgres
	if os.Getenv("DPSQL_BENCH_DRIVER") == federated.MySQL {
		driver = federated.MySQL
	}
	srv := testdb.Get(b, driver)
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
	ctx := context.Background()
	if driver == federated.Postgres {
		if err := adultgen.CopyToPostgres(ctx, db.Pg(), name, rows, 1); err != nil {
			b.Fatal(err)
		}
		return testdb.Table(srv, name)
	}
	dom := adultgen.Domain()
	defs := make([]string, len(dom.Columns))
	for i := range dom.Columns {
		typ := "INT NOT NULL"
		if dom.Columns[i].Kind() == domain.Categorical {
			typ = "VARCHAR(40) NOT NULL"
		}
		defs[i] = testdb.Quote(srv, dom.Columns[i].Name()) + " " + typ
	}
	db.MustExec(b, "CREATE TABLE "+testdb.Quote(srv, name)+" ("+strings.Join(defs, ", ")+") DEFAULT CHARSET=utf8mb4")
	g := adultgen.New(1)
	const chunk = 20000
	for lo := 0; lo < rows; lo += chunk {
		batch := make([][]any, min(chunk, rows-lo))
		for i := range batch {
			batch[i] = make([]any, len(dom.Columns))
			g.Next(batch[i])
		}
		if err := db.Insert(ctx, name, dom.Names(), batch); err != nil {
			b.Fatal(err)
		}
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
	parallel := 1
	if s := os.Getenv("DPSQL_BENCH_PARALLEL"); s != "" {
		parallel, _ = strconv.Atoi(s)
	}
	for _, batch := range batches {
		b.Run(fmt.Sprintf("batch=%d/parallel=%d", batch, parallel), func(b *testing.B) {
			var st federated.Stats
			for b.Loop() {
				sn, err := src.Snapshot(ctx, cols)
				if err != nil {
					b.Fatal(err)
				}
				sn.SetBatch(batch)
				sn.SetParallel(parallel)
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

// BenchmarkAIM compares AIM (ε = 1, all 3-way workload) on the
// adult-like PostgreSQL table read two ways: federated, every marginal
// pushed down through a Snapshot; and imported, the rows read with Scan,
// encoded locally into a pgm.Dataset, then synthesized from memory. It
// reports the data phase (remote marginals or import) separately from
// the whole run.
func BenchmarkAIM(b *testing.B) {
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
	work, err := bench.Workload("all-3way", len(cols))
	if err != nil {
		b.Fatal(err)
	}
	rho, err := budget.RhoFromEpsilonDelta(1, 1e-9)
	if err != nil {
		b.Fatal(err)
	}
	runner, err := aim.Mechanism{}.New(nil)
	if err != nil {
		b.Fatal(err)
	}
	secret := noise.NewSecret()
	run := func(b *testing.B, data synth.Data) {
		in := &synth.Input{Data: synth.NewCache(data), Workload: work, Rho: rho, Noise: noise.Derive(secret, 0, "bench")}
		res, err := runner.Run(ctx, in)
		if err != nil {
			b.Fatal(federated.Detail(err))
		}
		b.ReportMetric(float64(len(res.Rounds)), "rounds")
	}
	b.Run("federated", func(b *testing.B) {
		for b.Loop() {
			start := time.Now()
			sn, err := src.Snapshot(ctx, cols)
			if err != nil {
				b.Fatal(err)
			}
			// The data phase: what AIM's first call asks for.
			sets := make([][]int, len(work))
			for i, m := range work {
				sets[i] = m.Attrs
			}
			c := synth.NewCache(sn)
			if _, err := c.Marginals(ctx, sets); err != nil {
				b.Fatal(federated.Detail(err))
			}
			b.ReportMetric(time.Since(start).Seconds(), "data-s")
			run(b, c)
			st := sn.Stats()
			b.ReportMetric(float64(st.Queries), "queries")
			sn.Close()
		}
	})
	b.Run("import", func(b *testing.B) {
		for b.Loop() {
			start := time.Now()
			ds := importDataset(b, src, cols)
			b.ReportMetric(time.Since(start).Seconds(), "data-s")
			run(b, ds)
		}
	})
}

// importDataset reads the table with Scan and encodes it locally, as an
// import into dpsql would.
func importDataset(b *testing.B, src *federated.Source, cols []federated.SnapshotColumn) *pgm.Dataset {
	codes := make([][]uint16, len(cols))
	names := make([]string, len(cols))
	sizes := make([]int, len(cols))
	for i := range cols {
		names[i], sizes[i] = cols[i].Name, cols[i].Domain.Size()
	}
	err := src.Scan(context.Background(), names, func(row []any) error {
		for i, v := range row {
			d := cols[i].Domain
			code, st := d.Encode(v)
			if st == domain.Invalid {
				code = max(d.NullCode(), 0)
			}
			codes[i] = append(codes[i], uint16(code))
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	pd, err := pgm.NewDomain(names, sizes)
	if err != nil {
		b.Fatal(err)
	}
	ds, err := pgm.NewDataset(pd, codes)
	if err != nil {
		b.Fatal(err)
	}
	return ds
}

// BenchmarkAdult3WayImport is the import alternative to BenchmarkAdult3Way:
// read every row with Scan, encode locally, count the 364 marginals in
// memory.
func BenchmarkAdult3WayImport(b *testing.B) {
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
	for b.Loop() {
		start := time.Now()
		ds := importDataset(b, src, cols)
		b.ReportMetric(time.Since(start).Seconds(), "import-s")
		if _, err := ds.Marginals(ctx, all3Way(len(cols))); err != nil {
			b.Fatal(err)
		}
	}
}
