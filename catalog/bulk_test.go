package catalog

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
)

// sharedData returns ../shared/data relative to the repository root, or
// skips the test if it is absent (as in a plain clone).
func sharedData(tb testing.TB, name string) string {
	tb.Helper()
	p := filepath.Join("..", "..", "shared", "data", name)
	if _, err := os.Stat(p); err != nil {
		tb.Skipf("shared data %s not available: %v", name, err)
	}
	return p
}

// insertBatches loads rows produced by gen into table t with multi-row
// INSERTs of batch rows each.
func insertBatches(tb testing.TB, h *harness, db, table string, n, batch int, gen func(i int) string) {
	tb.Helper()
	var sb strings.Builder
	for i := 0; i < n; i += batch {
		sb.Reset()
		fmt.Fprintf(&sb, "INSERT INTO %s VALUES ", table)
		for j := i; j < min(i+batch, n); j++ {
			if j > i {
				sb.WriteByte(',')
			}
			sb.WriteString(gen(j))
		}
		if _, err := h.query(db, sb.String()); err != nil {
			tb.Fatalf("batch at %d: %v", i, err)
		}
	}
}

// TestBulkLoadGenerated loads 50 000 generated rows (the size of the adult
// table) in batches and checks count, a sum and a point lookup, before and
// after reopen.
func TestBulkLoadGenerated(t *testing.T) {
	if testing.Short() {
		t.Skip("bulk load")
	}
	dir := t.TempDir()
	s := mustOpen(t, dir)
	h := newHarness(t, s)
	h.mustExec("", "CREATE DATABASE raw")
	h.mustExec("raw", "CREATE TABLE g (id INT PRIMARY KEY, a INT, b VARCHAR(20), c DOUBLE)")
	const n = 50000
	insertBatches(t, h, "raw", "g", n, 1000, func(i int) string {
		return fmt.Sprintf("(%d,%d,'s%d',%d.5)", i, i%97, i%13, i%7)
	})
	var wantSum int
	for i := range n {
		wantSum += i % 97
	}
	check := func(h *harness) {
		r := h.mustExec("raw", "SELECT COUNT(*), CAST(SUM(a) AS SIGNED) FROM g")[0]
		if normValue(r[0]) != fmt.Sprint(n) || normValue(r[1]) != fmt.Sprint(wantSum) {
			t.Errorf("count, sum = %v, want %d, %d", r, n, wantSum)
		}
		if r := h.mustExec("raw", "SELECT b FROM g WHERE id = 12345"); len(r) != 1 || normValue(r[0][0]) != "s8" {
			t.Errorf("lookup = %v", r)
		}
	}
	check(h)
	if r := h.mustExec("raw", "SELECT MAX(id), MIN(id) FROM g")[0]; normValue(r[0]) != fmt.Sprint(n-1) || normValue(r[1]) != "0" {
		t.Errorf("max, min = %v", r)
	}
	// A reverse index scan crosses many chunks and must visit every key once,
	// in descending order.
	tbl, _, err := s.Table(context.Background(), "raw", "g")
	if err != nil {
		t.Fatal(err)
	}
	idx := newPKIndex("raw", tbl.meta)
	rows, err := tbl.PartitionRows(sql.NewEmptyContext(), &partition{sortBy: idx.exprs, reverse: true, inOrder: true})
	if err != nil {
		t.Fatal(err)
	}
	got, err := sql.RowIterToRows(sql.NewEmptyContext(), rows)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Fatalf("reverse scan returned %d rows, want %d", len(got), n)
	}
	for i, r := range got {
		if r[0].(int32) != int32(n-1-i) {
			t.Fatalf("reverse scan row %d has id %v", i, r[0])
		}
	}
	closeChecked(t, s)
	check(newHarness(t, mustOpen(t, dir)))
}

// TestBulkLoadAdult loads the real adult table if the shared data is present.
func TestBulkLoadAdult(t *testing.T) {
	path := sharedData(t, "adult.csv")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan()
	header := strings.Split(sc.Text(), ",")
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	s := mustOpen(t, "")
	h := newHarness(t, s)
	h.mustExec("", "CREATE DATABASE raw")
	cols := make([]string, len(header))
	for i, c := range header {
		cols[i] = fmt.Sprintf("`%s` INT NOT NULL", c)
	}
	h.mustExec("raw", "CREATE TABLE adult ("+strings.Join(cols, ", ")+")")
	insertBatches(t, h, "raw", "adult", len(lines), 1000, func(i int) string { return "(" + lines[i] + ")" })
	if got := normValue(h.mustExec("raw", "SELECT COUNT(*) FROM adult")[0][0]); got != fmt.Sprint(len(lines)) {
		t.Errorf("count = %s, want %d", got, len(lines))
	}
	var n int
	if err := s.ScanTable(context.Background(), "raw", "adult", func(r sql.Row) error { n++; return nil }); err != nil || n != len(lines) {
		t.Errorf("ScanTable = %d, %v", n, err)
	}
}

func BenchmarkInsertSingleRow(b *testing.B) {
	s := mustOpen(b, "")
	h := newHarness(b, s)
	h.mustExec("", "CREATE DATABASE d")
	h.mustExec("d", "CREATE TABLE t (id INT PRIMARY KEY, a INT, b VARCHAR(20))")
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := h.query("d", fmt.Sprintf("INSERT INTO t VALUES (%d, %d, 'x%d')", i, i%97, i)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

func BenchmarkInsertBatch1000(b *testing.B) {
	s := mustOpen(b, "")
	h := newHarness(b, s)
	h.mustExec("", "CREATE DATABASE d")
	h.mustExec("d", "CREATE TABLE t (id INT PRIMARY KEY, a INT, b VARCHAR(20))")
	const batch = 1000
	next := 0
	b.ResetTimer()
	for b.Loop() {
		insertBatches(b, h, "d", "t", batch, batch, func(i int) string {
			return fmt.Sprintf("(%d,%d,'x%d')", next+i, i%97, i)
		})
		next += batch
	}
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "rows/s")
}

func BenchmarkScanTable(b *testing.B) {
	s := mustOpen(b, "")
	h := newHarness(b, s)
	h.mustExec("", "CREATE DATABASE d")
	h.mustExec("d", "CREATE TABLE t (id INT PRIMARY KEY, a INT, b VARCHAR(20))")
	const n = 100000
	insertBatches(b, h, "d", "t", n, 1000, func(i int) string { return fmt.Sprintf("(%d,%d,'x%d')", i, i%97, i) })
	b.ResetTimer()
	for b.Loop() {
		if err := s.ScanTable(context.Background(), "d", "t", func(sql.Row) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "rows/s")
}
