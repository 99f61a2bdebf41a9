package engine

import (
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"

	"github.com/dpsql/dpsql/catalog"
	"github.com/dpsql/dpsql/catalog/domain"
	"github.com/dpsql/dpsql/engine/dpparse"
	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/pgm"
)

// TestEncodeTableOutOfDomain reads values outside declared domains: they
// are clipped or mapped to NULL by domain.Column.Encode's rules, and the
// domain never grows.
func TestEncodeTableOutOfDomain(t *testing.T) {
	f := newSynthFixture(t)
	f.exec(
		"CREATE TABLE raw.m (v INT NOT NULL, c VARCHAR(5), e ENUM('p','q') NOT NULL)",
		"INSERT INTO raw.m VALUES (-5, 'z', 'q'), (50, 'x', 'p'), (3, NULL, 'p'), (10, 'y', 'q')",
		"ALTER TABLE raw.m SET DOMAIN v BETWEEN 0 AND 10 BINS 5",
		"ALTER TABLE raw.m SET DOMAIN c IN ('x', 'y')",
	)
	src, err := f.e.resolveTable(f.root, dpparse.TableName{DB: "raw", Name: "m"})
	if err != nil {
		t.Fatal(err)
	}
	dom, err := f.e.tableDomain(f.root, src)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := encodeTable(context.Background(), f.e.dp.cat, src, dom)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := dom.Sizes(), []int{5, 3, 2}; !reflect.DeepEqual(got, want) {
		t.Fatalf("domain sizes %v, want %v (never widened)", got, want)
	}
	// v: -5 clips to bin 0, 50 to the last bin, 3 is in [2, 4), 10 (the
	// upper bound) in the last bin. c: 'z' is not in the list and c is
	// nullable, so NULL (code 2). e: ENUM labels in declaration order.
	want := [][]uint16{{0, 4, 1, 4}, {2, 0, 2, 1}, {1, 0, 0, 1}}
	for i, w := range want {
		if got := ds.Column(i); !reflect.DeepEqual(got, w) {
			t.Errorf("column %s codes %v, want %v", dom.Columns[i].Name(), got, w)
		}
	}

	// Decoding draws binned values inside their bin and keeps the types.
	pos, err := columnMap(src.Table.Schema(), dom)
	if err != nil {
		t.Fatal(err)
	}
	sch, err := syntheticSchema(src.Table.Schema(), dom, pos, nil)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := decodeRows(context.Background(), [][]uint16{ds.Column(0), ds.Column(1), ds.Column(2)}, dom, pos, nil, sch, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	for r, row := range rows {
		lo, hi, _ := dom.Columns[0].Bin(int(ds.Column(0)[r]))
		v, ok := row[0].(int64) // BIGINT: the domain is integral; the source's INT is not public
		if !ok || float64(v) < lo || float64(v) > hi {
			t.Errorf("row %d: v = %#v, want an int64 in bin [%g, %g]", r, row[0], lo, hi)
		}
	}
	if rows[0][1] != nil || rows[1][1] != "x" || rows[3][1] != "y" {
		t.Errorf("c decoded as %v %v %v", rows[0][1], rows[1][1], rows[3][1])
	}
	if e0, _, _ := types.MustCreateEnumType([]string{"p", "q"}, sql.Collation_Default).Convert(context.Background(), "q"); rows[0][2] != e0 {
		t.Errorf("e decoded as %#v, want the ENUM index of 'q' (%#v)", rows[0][2], e0)
	}
}

// TestEncodeTableInvalidValue reads values that cannot be read in the
// domain's type at all: they are encoded like NULL (NULL when nullable,
// else code 0) instead of failing the statement, so that whether a
// synthesis succeeds never depends on one row's value.
func TestEncodeTableInvalidValue(t *testing.T) {
	f := newSynthFixture(t)
	f.exec(
		"CREATE TABLE raw.bad (a VARCHAR(20), b VARCHAR(20) NOT NULL)",
		"INSERT INTO raw.bad VALUES ('2', '1'), ('not-a-number', 'zzz'), (NULL, '0')",
	)
	src, err := f.e.resolveTable(f.root, dpparse.TableName{DB: "raw", Name: "bad"})
	if err != nil {
		t.Fatal(err)
	}
	// Integer domains over text columns: 'not-a-number' and 'zzz' are
	// domain.Invalid.
	a, err := domain.NewIntRange("a", 0, 3, true)
	if err != nil {
		t.Fatal(err)
	}
	b, err := domain.NewIntRange("b", 0, 3, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, st := b.Encode("zzz"); st != domain.Invalid {
		t.Fatalf("Encode(\"zzz\") status %v, want invalid (the test needs an unreadable value)", st)
	}
	dom := &domain.Table{Columns: []domain.Column{a, b}}
	ds, err := encodeTable(context.Background(), f.e.dp.cat, src, dom)
	if err != nil {
		t.Fatalf("encodeTable failed on an unreadable value: %v", err)
	}
	// a: 2, unreadable → NULL (code 4), NULL → 4. b: 1, unreadable → 0, 0.
	want := [][]uint16{{2, 4, 4}, {1, 0, 0}}
	for i, w := range want {
		if got := ds.Column(i); !reflect.DeepEqual(got, w) {
			t.Errorf("column %s codes %v, want %v", dom.Columns[i].Name(), got, w)
		}
	}
}

// TestAnswerRows checks the layout of an answers table against a direct
// enumeration of the marginal's cells.
func TestAnswerRows(t *testing.T) {
	a, _ := domain.NewIntRange("a", 1, 3, false)
	b, _ := domain.NewCategorical("b", domain.String, []domain.Value{domain.StringValue("u"), domain.StringValue("v")}, true, false)
	c, _ := domain.NewBinned("c", 0, 1, 2, false, false)
	dom := &domain.Table{Columns: []domain.Column{a, b, c}}
	sch, err := answersSchema(dom)
	if err != nil {
		t.Fatal(err)
	}
	// Marginal on (a, b): 3 × 3 cells (b has NULL), Y[i] = i; then on (c).
	y1 := make([]float64, 9)
	for i := range y1 {
		y1[i] = float64(i)
	}
	meas := []synth.Measurement{
		{Measurement: pgm.Measurement{Attrs: []int{0, 1}, Y: y1}},
		{Measurement: pgm.Measurement{Attrs: []int{2}, Y: []float64{-1.5, 7}}},
	}
	rows, err := answerRows(context.Background(), meas, dom, sch)
	if err != nil {
		t.Fatal(err)
	}
	var want []sql.Row
	bvals := []any{"u", "v", nil}
	for i := range 3 {
		for j := range 3 {
			want = append(want, sql.Row{int32(1), "a,b", int64(i + 1), bvals[j], nil, float64(i*3 + j)})
		}
	}
	want = append(want, sql.Row{int32(2), "c", nil, nil, 0.0, -1.5}, sql.Row{int32(2), "c", nil, nil, 0.5, 7.0})
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("rows\n got %v\nwant %v", rows, want)
	}
	// A source column named like an answers column is refused.
	reserved, _ := domain.NewIntRange("DP_Columns", 0, 1, false)
	if _, err := answersSchema(&domain.Table{Columns: []domain.Column{reserved}}); err == nil {
		t.Error("a source column named dp_columns was accepted")
	}
	// Measurements that are not plain marginals are refused.
	meas[1].Coarse = [][]int{{0, 0}}
	if _, err := answerRows(context.Background(), meas, dom, sch); err == nil {
		t.Error("a coarsened measurement was laid out")
	}
}

// benchTable creates raw.b with n rows over three columns with public
// domains, written directly into the catalog.
func benchTable(b *testing.B, n int) (*synthFixture, tableRef, *domain.Table) {
	f := &synthFixture{dir: b.TempDir()}
	st, err := openStorage(f.dir)
	if err != nil {
		b.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.RootPassword = "pw"
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	f.e, err = build(context.Background(), cfg, f.dir, st)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.e.Close() })
	f.root = sessionCtx(f.e, 1, RootUser, localhost)
	if _, _, err := query(f.e, f.root, "CREATE DATABASE raw"); err != nil {
		b.Fatal(err)
	}
	if _, _, err := query(f.e, f.root, "CREATE TABLE raw.b (a INT NOT NULL CHECK (a BETWEEN 0 AND 99), s ENUM('x','y','z') NOT NULL, v VARCHAR(3) CHECK (v IN ('p','q')))"); err != nil {
		b.Fatal(err)
	}
	src, err := f.e.resolveTable(f.root, dpparse.TableName{DB: "raw", Name: "b"})
	if err != nil {
		b.Fatal(err)
	}
	rows := make([]sql.Row, n)
	for i := range rows {
		rows[i] = sql.Row{int32(i % 100), uint16(1 + i%3), []any{"p", "q", nil}[i%3]}
	}
	// Rows go straight into the catalog, in one transaction.
	err = f.e.dp.cat.Update(context.Background(), func(tx *catalog.Tx) error { return tx.InsertRows("raw", "b", rows) })
	if err != nil {
		b.Fatal(err)
	}
	dom, err := f.e.tableDomain(f.root, src)
	if err != nil {
		b.Fatal(err)
	}
	return f, src, dom
}

func BenchmarkEncodeTable(b *testing.B) {
	f, src, dom := benchTable(b, 100_000)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := encodeTable(context.Background(), f.e.dp.cat, src, dom); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeRows(b *testing.B) {
	_, src, dom := benchTable(b, 1)
	const n = 100_000
	codes := make([][]uint16, len(dom.Columns))
	for j := range codes {
		codes[j] = make([]uint16, n)
		for i := range codes[j] {
			codes[j][i] = uint16(i % dom.Columns[j].Size())
		}
	}
	pos, _ := columnMap(src.Table.Schema(), dom)
	sch, err := syntheticSchema(src.Table.Schema(), dom, pos, nil)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeRows(context.Background(), codes, dom, pos, nil, sch, rng); err != nil {
			b.Fatal(err)
		}
	}
}
