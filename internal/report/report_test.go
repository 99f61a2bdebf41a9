package report

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dpsql/dpsql"
)

func TestL1(t *testing.T) {
	cells := []Cell{{Real: 1, Model: 2}, {Real: 3, Model: 2}, {Real: 0, Model: 0}}
	got := l1(cells, func(c Cell) float64 { return c.Real }, func(c Cell) float64 { return c.Model })
	// 1/4 vs 2/4, 3/4 vs 2/4: 0.25 + 0.25.
	if math.Abs(got-0.5) > 1e-12 {
		t.Errorf("l1 = %v, want 0.5", got)
	}
	if !math.IsNaN(l1(cells, func(Cell) float64 { return 0 }, func(c Cell) float64 { return c.Model })) {
		t.Error("l1 of an empty marginal is not NaN")
	}
}

func TestBinOf(t *testing.T) {
	bins := []float64{0, 10, 20}
	for v, want := range map[string]string{"0": "0", "9": "0", "10": "10", "19.5": "10", "25": "20", "-3": "0", "x": "x"} {
		if got := binOf(v, bins); got != want {
			t.Errorf("binOf(%s) = %s, want %s", v, got, want)
		}
	}
	if binOf("7", nil) != "7" {
		t.Error("no bins changed the value")
	}
}

// TestCollect builds reports over an embedded server: an AIM table (with
// bounds), an Independent one (without), as the owner and as an analyst.
func TestCollect(t *testing.T) {
	ctx := context.Background()
	srv, err := dpsql.Open(ctx, dpsql.Options{DataDir: t.TempDir(), RootPassword: "pw"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	root := srv.OpenDB("root", "pw", "")
	defer root.Close()
	rng := rand.New(rand.NewPCG(5, 6))
	var vals []string
	for range 2000 {
		a := rng.IntN(4)
		b := (a + rng.IntN(2)) % 4
		vals = append(vals, fmt.Sprintf("(%d, %d, '%s')", a, b*25, []string{"x", "y"}[rng.IntN(2)]))
	}
	exec(t, root,
		"CREATE DATABASE raw", "CREATE DATABASE lab",
		"CREATE TABLE raw.t (a INT NOT NULL CHECK (a BETWEEN 0 AND 3), v INT NOT NULL, c ENUM('x','y') NOT NULL)",
		"ALTER TABLE raw.t SET DOMAIN v BETWEEN 0 AND 100 BINS 4",
		"INSERT INTO raw.t VALUES "+strings.Join(vals, ","),
		"SET PRIVACY BUDGET FOR raw.t WITH EPSILON = 20, DELTA = 1e-6",
		"CREATE SYNTHETIC TABLE lab.aim FROM raw.t USING aim WITH EPSILON = 8, ROWS = 2000, ROUNDS = 12, PGM_ITERS = 20, FINAL_ITERS = 200",
		"CREATE SYNTHETIC TABLE lab.ind FROM raw.t USING independent WITH EPSILON = 2, PGM_ITERS = 20",
		"CREATE SYNTHETIC TABLE lab.g FROM raw.t USING gaussian WITH EPSILON = 4",
		"CREATE USER analyst IDENTIFIED BY 'apw'",
		"GRANT SELECT ON lab.* TO analyst",
	)
	analyst := srv.OpenDB("analyst", "apw", "")
	defer analyst.Close()

	collect := func(db *sql.DB, table string) *Report {
		t.Helper()
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		r, err := Collect(ctx, conn, table)
		if err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		var buf bytes.Buffer
		if err := r.WriteHTML(&buf); err != nil {
			t.Fatal(err)
		}
		return r
	}

	owner := collect(root, "lab.aim")
	if !owner.Owner || !owner.HasBounds || owner.Mechanism != "aim" || owner.Source != "raw.t" || owner.Ledger == nil {
		t.Fatalf("owner report: owner %v bounds %v mech %q source %q ledger %v", owner.Owner, owner.HasBounds, owner.Mechanism, owner.Source, owner.Ledger)
	}
	if len(owner.Marginals) != 3 { // the default workload: all pairs of (a, v, c)
		t.Fatalf("%d marginals", len(owner.Marginals))
	}
	for _, m := range owner.Marginals {
		if m.Failed != "" {
			t.Errorf("%s: %s", m.Name(), m.Failed)
		}
		// Binned v maps rows onto the model's 4 bins: no extra cells.
		if want := cellsWant(m.Attrs); len(m.Cells) != want {
			t.Errorf("%s: %d cells, want %d", m.Name(), len(m.Cells), want)
		}
		// At ε = 8 on 2000 rows, both errors are small and the model's
		// respects its bound.
		if !(m.ErrModel >= 0 && m.ErrModel < 0.15 && m.ErrSynth >= 0 && m.ErrSynth < 0.2) {
			t.Errorf("%s: model error %v, synthetic %v", m.Name(), m.ErrModel, m.ErrSynth)
		}
		if m.ErrModel > m.Bound {
			t.Errorf("%s: model error %v above its bound %v", m.Name(), m.ErrModel, m.Bound)
		}
	}
	if len(owner.OneWay) != 3 {
		t.Errorf("%d 1-way marginals", len(owner.OneWay))
	}

	an := collect(analyst, "lab.aim")
	if an.Owner || !an.HasBounds {
		t.Fatalf("analyst report: owner %v bounds %v", an.Owner, an.HasBounds)
	}
	for _, m := range an.Marginals {
		if !math.IsNaN(m.ErrModel) || !(m.ErrSynth >= 0) {
			t.Errorf("analyst %s: model error %v (want none), synthetic vs model %v", m.Name(), m.ErrModel, m.ErrSynth)
		}
		for _, c := range m.Cells {
			if !math.IsNaN(c.Real) {
				t.Fatalf("analyst report has real counts: %v", c)
			}
		}
	}

	ind := collect(root, "lab.ind")
	if ind.HasBounds || len(ind.Marginals) != 3 || len(ind.Notes) == 0 {
		t.Errorf("independent report: bounds %v, %d marginals, notes %v", ind.HasBounds, len(ind.Marginals), ind.Notes)
	}
	g := collect(root, "lab.g")
	if g.HasBounds || len(g.Marginals) != 3 {
		t.Fatalf("gaussian report: bounds %v, %d marginals", g.HasBounds, len(g.Marginals))
	}
	for _, m := range g.Marginals {
		if m.Failed != "" || !math.IsNaN(m.ErrSynth) || !(m.ErrModel >= 0 && m.ErrModel < 0.2) {
			t.Errorf("gaussian %s: failed %q, synthetic %v (want none), answers' error %v", m.Name(), m.Failed, m.ErrSynth, m.ErrModel)
		}
	}
	if _, err := Collect(ctx, mustConn(t, root), "raw.t"); err == nil {
		t.Error("report of a raw table")
	}
}

func cellsWant(attrs []string) int {
	n := 1
	for _, a := range attrs {
		n *= map[string]int{"a": 4, "v": 4, "c": 2}[a]
	}
	return n
}

func mustConn(t *testing.T, db *sql.DB) *sql.Conn {
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func exec(t *testing.T, db *sql.DB, qs ...string) {
	t.Helper()
	for _, q := range qs {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}
