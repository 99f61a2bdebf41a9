package adultgen

import (
	"bytes"
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/catalog/domain"
	"github.com/dpsql/dpsql/internal/testdb"
)

func TestDeterministic(t *testing.T) {
	a, b, c := New(7), New(7), New(8)
	ra, rb, rc := make([]any, 14), make([]any, 14), make([]any, 14)
	same := true
	for range 1000 {
		a.Next(ra)
		b.Next(rb)
		c.Next(rc)
		if !slices.Equal(ra, rb) {
			t.Fatalf("same seed, different rows: %v vs %v", ra, rb)
		}
		same = same && slices.Equal(ra, rc)
	}
	if same {
		t.Error("seeds 7 and 8 gave the same 1000 rows")
	}
}

// TestValuesInDomain checks that every generated value encodes in its
// domain to the code it was drawn with.
func TestValuesInDomain(t *testing.T) {
	dom := Domain()
	if len(dom.Columns) != 14 || dom.Validate() != nil {
		t.Fatalf("domain: %d columns, %v", len(dom.Columns), dom.Validate())
	}
	want := []int{85, 9, 100, 16, 7, 15, 6, 5, 2, 100, 100, 99, 42, 2}
	if !slices.Equal(dom.Sizes(), want) {
		t.Errorf("sizes %v, want the Adult data's %v", dom.Sizes(), want)
	}
	g := New(1)
	row := make([]any, 14)
	for range 20000 {
		// Next draws the codes then values; replay the codes with a twin.
		g.Next(row)
		for i := range row {
			code, st := dom.Columns[i].Encode(row[i])
			if st != domain.InDomain || code != g.codes[i] {
				t.Fatalf("%s = %v: code %d (%v), drawn %d", Attrs[i].Name, row[i], code, st, g.codes[i])
			}
		}
	}
}

// TestCorrelated checks with a chi-square test that income depends on
// education (a parent) and that sex and race (both roots) look independent.
func TestCorrelated(t *testing.T) {
	g := New(3)
	codes := make([]int, 14)
	const n = 50000
	edInc := make([][]float64, 16)
	for i := range edInc {
		edInc[i] = make([]float64, 2)
	}
	sexRace := [][]float64{make([]float64, 5), make([]float64, 5)}
	for range n {
		g.NextCodes(codes)
		edInc[codes[3]][codes[13]]++
		sexRace[codes[8]][codes[7]]++
	}
	// Critical values at p = 1e-6: df 15 → 54.1; df 4 → 33.4.
	if x := chi2(edInc); x < 54.1 {
		t.Errorf("education/income chi-square %.1f: no dependence", x)
	}
	if x := chi2(sexRace); x > 33.4 {
		t.Errorf("sex/race chi-square %.1f: dependence between independent roots", x)
	}
}

func chi2(tab [][]float64) float64 {
	rows := make([]float64, len(tab))
	cols := make([]float64, len(tab[0]))
	total := 0.0
	for i := range tab {
		for j, v := range tab[i] {
			rows[i] += v
			cols[j] += v
			total += v
		}
	}
	x := 0.0
	for i := range tab {
		for j, v := range tab[i] {
			e := rows[i] * cols[j] / total
			if e > 0 {
				x += (v - e) * (v - e) / e
			}
		}
	}
	if math.IsNaN(x) {
		return 0
	}
	return x
}

func TestCSVAndDDL(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteCSV(context.Background(), &buf, 10, 1); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 11 || lines[0] != CSVHeader() || strings.Count(lines[1], ",") != 13 {
		t.Errorf("CSV:\n%s", buf.String())
	}
	ddl := DDL("census.big", " ENGINE = FEDERATED")
	if len(ddl) != 4 || !strings.Contains(ddl[0], "sex ENUM('Female', 'Male') NOT NULL") ||
		!strings.Contains(ddl[0], "age INT NOT NULL CHECK (age BETWEEN 17 AND 101)") ||
		!strings.HasSuffix(ddl[0], ") ENGINE = FEDERATED") ||
		ddl[1] != "ALTER TABLE census.big SET DOMAIN fnlwgt BETWEEN 12285 AND 1484705 BINS 100" {
		t.Errorf("DDL: %q", ddl)
	}
	if !strings.Contains(PostgresDDL("t"), `"native_country" text NOT NULL`) {
		t.Errorf("PostgresDDL: %s", PostgresDDL("t"))
	}
}

func TestCopyToPostgres(t *testing.T) {
	srv := testdb.Postgres(t)
	db := testdb.Open(t, srv)
	defer db.Close()
	name := testdb.Name(t, srv, "adult")
	ctx := context.Background()
	if err := CopyToPostgres(ctx, db.Pg(), name, 1000, 5); err != nil {
		t.Fatal(err)
	}
	n, err := db.QueryInt(ctx, "SELECT count(*) FROM "+testdb.Quote(srv, name)+" WHERE sex IN ('Female', 'Male') AND age BETWEEN 17 AND 101")
	if err != nil || n != 1000 {
		t.Errorf("%d rows in domain, %v", n, err)
	}
}
