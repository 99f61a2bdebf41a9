package federated_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/catalog/domain"
	"github.com/dpsql/dpsql/federated"
	"github.com/dpsql/dpsql/internal/testdb"
	"github.com/dpsql/dpsql/synth/pgm"
)

// oracleColumn is one column of the oracle table: its remote type per
// dialect, its public domain and a generator of values in and out of it.
type oracleColumn struct {
	name     string
	pg, my   string
	dom      domain.Column
	gen      func(r *rand.Rand, driver string) any
	nullFrac float64
}

func must(c domain.Column, err error) domain.Column {
	if err != nil {
		panic(err)
	}
	return c
}

func strs(ss ...string) []domain.Value {
	out := make([]domain.Value, len(ss))
	for i, s := range ss {
		out[i] = domain.StringValue(s)
	}
	return out
}

func ints(is ...int64) []domain.Value {
	out := make([]domain.Value, len(is))
	for i, v := range is {
		out[i] = domain.IntValue(v)
	}
	return out
}

func floats(fs ...float64) []domain.Value {
	out := make([]domain.Value, len(fs))
	for i, v := range fs {
		out[i] = domain.FloatValue(v)
	}
	return out
}

func pick[T any](r *rand.Rand, xs ...T) T { return xs[r.IntN(len(xs))] }

// edgeValues are the bin edges of a binned column and their float
// neighbours, where an encoding that is not exact would go wrong.
func edgeValues(d domain.Column) []float64 {
	var out []float64
	for i := 0; i <= d.Bins(); i++ {
		e := d.Edge(i)
		out = append(out, e, math.Nextafter(e, math.Inf(1)), math.Nextafter(e, math.Inf(-1)))
	}
	return out
}

// floatSpecial writes a float for the dialect: PostgreSQL takes NaN and
// infinities as text; MySQL has none, so they become 0.
func floatSpecial(driver string, f float64) any {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		if driver == federated.MySQL {
			return float64(0)
		}
		switch {
		case math.IsNaN(f):
			return "NaN"
		case f > 0:
			return "Infinity"
		}
		return "-Infinity"
	}
	return f
}

func oracleColumns() []oracleColumn {
	fbin := must(domain.NewBinned("f_bin", -1, 2, 7, false, false))
	ibin := must(domain.NewBinned("i_bin", 0, 100, 9, true, true))
	rbin := must(domain.NewBinned("r_bin", 0, 1, 4, false, true))
	dbin := must(domain.NewBinned("d_bin", 0.5, 10.5, 6, false, true))
	// Bounds whose bin estimate is often one off in both directions, so
	// that the exact-edge correction is exercised.
	fbin2 := must(domain.NewBinned("f_bin2", -2.2, 9.9, 121, false, false))
	fEdges, iEdges, dEdges, f2Edges := edgeValues(fbin), edgeValues(ibin), edgeValues(dbin), edgeValues(fbin2)
	ties := func(r *rand.Rand) float64 { return float64(r.IntN(21)-10) / 2 }
	return []oracleColumn{
		{name: "i_range", pg: "integer", my: "INT", dom: must(domain.NewIntRange("i_range", -3, 12, true)), nullFrac: 0.1,
			gen: func(r *rand.Rand, _ string) any { return int64(r.IntN(31) - 10) }},
		{name: "i_range_nn", pg: "bigint", my: "BIGINT", dom: must(domain.NewIntRange("i_range_nn", 0, 9, false)), nullFrac: 0.1,
			gen: func(r *rand.Rand, _ string) any {
				return pick(r, int64(r.IntN(21)-5), math.MaxInt64, math.MinInt64, int64(9), int64(0))
			}},
		{name: "i_cat", pg: "smallint", my: "SMALLINT", dom: must(domain.NewCategorical("i_cat", domain.Int, ints(5, -2, 7, 0, 100), true, false)), nullFrac: 0.1,
			gen: func(r *rand.Rand, _ string) any { return pick[int64](r, -2, 0, 5, 7, 100, 3, 8, -1) }},
		{name: "i_str", pg: "integer", my: "INT", dom: must(domain.NewCategorical("i_str", domain.String, strs("1", "02", "3", "-4", "x", " 5"), false, false)), nullFrac: 0.05,
			gen: func(r *rand.Rand, _ string) any { return int64(r.IntN(11) - 5) }},
		{name: "i_enum", pg: "integer", my: "INT", dom: must(domain.NewCategorical("i_enum", domain.String, strs("a", "b", "c"), true, true)), nullFrac: 0.1,
			gen: func(r *rand.Rand, _ string) any { return int64(r.IntN(7) - 1) }},
		{name: "u_range", pg: "bigint", my: "INT UNSIGNED", dom: must(domain.NewIntRange("u_range", 2, 40, false)),
			gen: func(r *rand.Rand, _ string) any { return int64(r.IntN(51)) }},
		{name: "f_range", pg: "double precision", my: "DOUBLE", dom: must(domain.NewIntRange("f_range", -3, 3, true)), nullFrac: 0.05,
			gen: func(r *rand.Rand, d string) any {
				return floatSpecial(d, pick(r, ties(r), ties(r), r.Float64()*10-5, math.NaN(), math.Inf(1), math.Inf(-1),
					0.49999999999999994, -0.49999999999999994, 2.5000000000000004, -3.5, 3.5, 1e300, -1e300, math.Copysign(0, -1), 2.4999999999999996))
			}},
		{name: "f_bin", pg: "double precision", my: "DOUBLE", dom: fbin, nullFrac: 0.05,
			gen: func(r *rand.Rand, d string) any {
				return floatSpecial(d, pick(r, pick(r, fEdges...), pick(r, fEdges...), r.Float64()*5-2, math.NaN(), math.Inf(1), -1e308, 5e-324))
			}},
		{name: "f_bin2", pg: "double precision", my: "DOUBLE", dom: fbin2,
			gen: func(r *rand.Rand, _ string) any { return pick(r, f2Edges...) }},
		{name: "i_bin", pg: "integer", my: "INT", dom: ibin, nullFrac: 0.05,
			gen: func(r *rand.Rand, _ string) any {
				if r.IntN(2) == 0 {
					return int64(math.Round(pick(r, iEdges...)))
				}
				return int64(r.IntN(121) - 10)
			}},
		{name: "r_bin", pg: "real", my: "DOUBLE", dom: rbin, nullFrac: 0.05,
			gen: func(r *rand.Rand, _ string) any {
				return float64(float32(pick(r, 0.25, 0.5, 0.75, 1, 0.1, r.Float64()*1.2-0.1)))
			}},
		{name: "f_catf", pg: "double precision", my: "DOUBLE", dom: must(domain.NewCategorical("f_catf", domain.Float, floats(0.1, 0, 2.5, 1e-300, 3), true, false)), nullFrac: 0.05,
			gen: func(r *rand.Rand, d string) any {
				return floatSpecial(d, pick(r, 0.1, 0.1+1e-17, math.Nextafter(0.1, 1), math.Copysign(0, -1), 0, 2.5, 1e-300, 3, 3.0000000000000004, 7, math.NaN()))
			}},
		{name: "f_cati", pg: "double precision", my: "DOUBLE", dom: must(domain.NewCategorical("f_cati", domain.Int, ints(1, -3, 4, 9007199254740993, math.MinInt64), false, false)),
			gen: func(r *rand.Rand, d string) any {
				return floatSpecial(d, pick(r, 1, -3, 4.0000001, 2.5, 4, 9007199254740992, -9223372036854775808, math.Inf(1), math.NaN()))
			}},
		{name: "d_bin", pg: "numeric", my: "DECIMAL(30,10)", dom: dbin, nullFrac: 0.05,
			gen: func(r *rand.Rand, d string) any {
				if d == federated.Postgres && r.IntN(8) == 0 {
					return pick(r, "NaN", "Infinity", "-Infinity", "1e400", "-1e400", "1e-400", "-1e-400", "0.5000000000000000000000000001")
				}
				if r.IntN(3) == 0 {
					return fmt.Sprintf("%.10f", pick(r, dEdges...))
				}
				return fmt.Sprintf("%.10f", r.Float64()*12-0.5)
			}},
		{name: "d_range", pg: "numeric", my: "DECIMAL(30,10)", dom: must(domain.NewIntRange("d_range", 0, 5, false)), nullFrac: 0.05,
			gen: func(r *rand.Rand, d string) any {
				if d == federated.Postgres && r.IntN(8) == 0 {
					return pick(r, "NaN", "Infinity", "-Infinity", "1e400", "1e-400", "2.49999999999999999999999")
				}
				return pick(r, "2.5", "-0.5", "3.4999999999", "0.5", "5.5", "-7", "12", fmt.Sprintf("%.4f", r.Float64()*8-1))
			}},
		{name: "d_str", pg: "numeric(10,2)", my: "DECIMAL(10,2)", dom: must(domain.NewCategorical("d_str", domain.String, strs("12.50", "3.00", "7", "0.10"), true, false)), nullFrac: 0.05,
			gen: func(r *rand.Rand, _ string) any { return pick(r, "12.5", "3", "7", "0.1", "4.25", "-1") }},
		{name: "t_cat", pg: "text", my: "VARCHAR(40)", dom: must(domain.NewCategorical("t_cat", domain.String,
			strs("a", "A", "a ", "", "it's", `back\slash`, `quote"d`, "ünï", "NULL", "{x,y}", "é"), true, false)), nullFrac: 0.1,
			gen: func(r *rand.Rand, _ string) any {
				return pick(r, "a", "A", "a ", "", "it's", `back\slash`, `quote"d`, "ünï", "NULL", "{x,y}", "b", "A ", " a", "ÜNÏ", "e\u0301", "é", "x,y")
			}},
		{name: "t_cat_nn", pg: "varchar(20)", my: "TEXT", dom: must(domain.NewCategorical("t_cat_nn", domain.String, strs("x", "y", "z"), false, false)), nullFrac: 0.1,
			gen: func(r *rand.Rand, _ string) any { return pick(r, "x", "y", "z", "X", "w", "z ") }},
		{name: "e_cat", pg: "text", my: "ENUM('red','green','blue','Red') CHARACTER SET utf8mb4 COLLATE utf8mb4_bin", dom: must(domain.NewCategorical("e_cat", domain.String, strs("green", "red", "blue"), true, true)), nullFrac: 0.1,
			gen: func(r *rand.Rand, _ string) any { return pick(r, "red", "green", "blue", "Red") }},
		{name: "b_range", pg: "boolean", my: "TINYINT(1)", dom: must(domain.NewIntRange("b_range", 0, 1, true)), nullFrac: 0.1,
			gen: func(r *rand.Rand, d string) any {
				if d == federated.Postgres {
					return pick(r, "true", "false")
				}
				return int64(r.IntN(2))
			}},
	}
}

// TestMarginalsOracle writes a random table with values inside and outside
// the domains into each real server and checks that every marginal a
// Snapshot pushes down equals the marginal of the same rows (as Scan reads
// them) encoded locally with domain.Column.Encode.
func TestMarginalsOracle(t *testing.T) {
	for _, driver := range testdb.Servers {
		t.Run(driver, func(t *testing.T) {
			srv := testdb.Get(t, driver)
			ctx := context.Background()
			cols := oracleColumns()
			table := testdb.Name(t, srv, "oracle")
			db := testdb.Open(t, srv)
			defer db.Close()
			defs := make([]string, len(cols))
			names := make([]string, len(cols))
			for i, c := range cols {
				typ := c.pg
				if driver == federated.MySQL {
					typ = c.my
				}
				defs[i] = testdb.Quote(srv, c.name) + " " + typ
				names[i] = c.name
			}
			create := "CREATE TABLE " + testdb.Quote(srv, table) + " (" + strings.Join(defs, ", ") + ")"
			if driver == federated.MySQL {
				create += " DEFAULT CHARSET=utf8mb4"
			}
			db.MustExec(t, create)
			const n = 1500
			r := rand.New(rand.NewPCG(1, 2))
			rows := make([][]any, n)
			for i := range rows {
				rows[i] = make([]any, len(cols))
				for j, c := range cols {
					if r.Float64() >= c.nullFrac {
						rows[i][j] = c.gen(r, driver)
					}
				}
			}
			if err := db.Insert(ctx, table, names, rows); err != nil {
				t.Fatal(err)
			}
			conn := testdb.Table(srv, table)
			src, err := federated.Open(ctx, conn)
			if err != nil {
				t.Fatal(federated.Detail(err))
			}
			defer src.Close()

			want := localDataset(t, src, cols)
			scols := make([]federated.SnapshotColumn, len(cols))
			for i := range cols {
				scols[i] = federated.SnapshotColumn{Name: cols[i].name, Domain: &cols[i].dom}
			}
			var sets [][]int
			for a := range cols {
				sets = append(sets, []int{a})
				for b := a + 1; b < len(cols); b++ {
					sets = append(sets, []int{a, b})
				}
			}
			for range 15 {
				p := r.Perm(len(cols))
				sets = append(sets, p[:3]) // unsorted: laid out in the order asked
			}
			sets = append(sets, []int{2, 0}, []int{0, 2}) // the same set twice, in two orders
			// PostgreSQL: the temp-table path (cover = cell cap of a fetch
			// set, 1: every marginal alone) and the GROUPING SETS path
			// (batch); MySQL: one GROUP BY per marginal.
			type config struct{ batch, parallel, cover int }
			configs := []config{{federated.DefaultBatch, 1, 0}}
			if driver == federated.Postgres {
				configs = append(configs, config{1, 1, 0}, config{13, 1, 0}, config{13, 3, 0},
					config{0, 1, 1}, config{0, 1, federated.DefaultCoverCells}, config{0, 3, federated.DefaultCoverCells}, config{0, 2, 50})
			}
			for _, cfg := range configs {
				batch := cfg.batch
				sn, err := src.Snapshot(ctx, scols)
				if err != nil {
					t.Fatal(federated.Detail(err))
				}
				sn.SetBatch(max(batch, 1))
				sn.SetParallel(cfg.parallel)
				sn.SetTempTable(cfg.cover > 0)
				sn.SetCoverCells(float64(cfg.cover))
				if sn.Touched() {
					t.Fatal("Touched before any query")
				}
				got, err := sn.Marginals(ctx, sets)
				if err != nil {
					t.Fatal(federated.Detail(err))
				}
				if !sn.Touched() {
					t.Fatal("not Touched after queries")
				}
				exp, err := want.Marginals(ctx, sets)
				if err != nil {
					t.Fatal(err)
				}
				bad := map[int]bool{}
				for i, s := range sets {
					if !slices.Equal(got[i], exp[i]) {
						t.Errorf("batch %d: marginal over %v: got %v, want %v", batch, s, got[i], exp[i])
						for _, a := range s {
							bad[a] = true
						}
						if len(bad) > 6 {
							break
						}
					}
				}
				if t.Failed() {
					explain(t, sn, cols, want, bad)
					sn.Close()
					return
				}
				st := sn.Stats()
				distinct := map[string]bool{}
				for _, s := range sets {
					distinct[fmt.Sprint(slices.Sorted(slices.Values(s)))] = true
				}
				switch {
				case cfg.cover > 0:
					// One scan of the table per connection (its codes
					// table), then one GROUP BY per fetch set: one per
					// marginal when nothing may be merged, fewer otherwise.
					fetches := st.Queries - st.Scans
					ok := st.Scans >= 1 && st.Scans <= cfg.parallel && fetches >= 1 && fetches <= len(distinct) && st.Cells > 0
					if cfg.cover == 1 {
						ok = ok && fetches == len(distinct)
					}
					if cfg.cover == federated.DefaultCoverCells {
						ok = ok && fetches < len(distinct)
					}
					if !ok {
						t.Errorf("cover %d, parallel %d: stats %+v for %d distinct marginals", cfg.cover, cfg.parallel, st, len(distinct))
					}
				default:
					wantQueries := len(distinct)
					if driver == federated.Postgres {
						wantQueries = (len(distinct) + batch - 1) / batch
					}
					if st.Queries != wantQueries || st.Scans != st.Queries || st.Cells == 0 {
						t.Errorf("batch %d: stats %+v, want %d queries", batch, st, wantQueries)
					}
				}
				t.Logf("batch %d, parallel %d, cover %d: %d marginals, %+v", batch, cfg.parallel, cfg.cover, len(sets), st)
				// The visiting form hands every marginal over once, as
				// Marginals answers it; an error from its callback stops
				// it and comes back.
				seen := make([]int, len(sets))
				if err := sn.VisitMarginals(ctx, sets, func(i int, x []float64) error {
					seen[i]++
					if !slices.Equal(x, exp[i]) {
						t.Errorf("VisitMarginals: marginal over %v: got %v, want %v", sets[i], x, exp[i])
					}
					return nil
				}); err != nil {
					t.Fatal(federated.Detail(err))
				}
				for i, n := range seen {
					if n != 1 {
						t.Errorf("VisitMarginals handed the marginal over %v over %d times", sets[i], n)
					}
				}
				stop, calls := errors.New("stop"), 0
				if err := sn.VisitMarginals(ctx, sets, func(int, []float64) error {
					calls++
					return stop
				}); !errors.Is(err, stop) || calls != 1 {
					t.Errorf("VisitMarginals with a failing callback: %v after %d calls, want %v after 1", err, calls, stop)
				}
				if err := sn.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// localDataset reads the table with Scan and encodes it locally, with the
// engine's rule for invalid values.
func localDataset(t *testing.T, src *federated.Source, cols []oracleColumn) *pgm.Dataset {
	t.Helper()
	names := make([]string, len(cols))
	sizes := make([]int, len(cols))
	codes := make([][]uint16, len(cols))
	for i := range cols {
		names[i], sizes[i] = cols[i].dom.Name(), cols[i].dom.Size()
	}
	err := src.Scan(context.Background(), names, func(row []any) error {
		for i := range cols {
			d := &cols[i].dom
			code, st := d.Encode(row[i])
			if st == domain.Invalid {
				code = max(d.NullCode(), 0)
			}
			codes[i] = append(codes[i], uint16(code))
		}
		return nil
	})
	if err != nil {
		t.Fatal(federated.Detail(err))
	}
	dom, err := pgm.NewDomain(names, sizes)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := pgm.NewDataset(dom, codes)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// explain prints, for each attribute of a failing marginal, the remote
// values whose pushed-down code differs from the local one.
func explain(t *testing.T, sn *federated.Snapshot, cols []oracleColumn, want *pgm.Dataset, bad map[int]bool) {
	for a := range bad {
		vals, codes, err := federated.DebugCodes(context.Background(), sn, a)
		if err != nil {
			t.Logf("attribute %s: %v", cols[a].name, err)
			continue
		}
		local := want.Column(a)
		shown := map[string]bool{}
		for i := range vals {
			if int64(local[i]) != codes[i] && !shown[vals[i]] {
				shown[vals[i]] = true
				t.Logf("attribute %s: value %q: remote code %d, local %d", cols[a].name, vals[i], codes[i], local[i])
			}
		}
	}
}
