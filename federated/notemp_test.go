package federated_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/dpsql/dpsql/catalog/domain"
	"github.com/dpsql/dpsql/federated"
	"github.com/dpsql/dpsql/internal/testdb"
)

// TestNoTempFallback: a PostgreSQL user who may not create temporary
// tables still gets exact marginals, through GROUPING SETS over the table,
// and the snapshot reports one scan per batch, no codes table.
func TestNoTempFallback(t *testing.T) {
	srv := testdb.Postgres(t)
	admin := testdb.Open(t, srv)
	defer admin.Close()
	ctx := context.Background()
	suffix := fmt.Sprintf("%d_%d", os.Getpid(), len(t.Name()))
	dbName, role := "dpsql_notemp_"+suffix, "dpsql_notemp_"+suffix
	admin.MustExec(t,
		"DROP DATABASE IF EXISTS "+dbName, "DROP ROLE IF EXISTS "+role,
		"CREATE DATABASE "+dbName,
		"REVOKE TEMPORARY ON DATABASE "+dbName+" FROM PUBLIC",
		"CREATE ROLE "+role+" LOGIN PASSWORD 'pw'")
	t.Cleanup(func() {
		a := testdb.Open(t, srv)
		defer a.Close()
		_ = a.Exec(context.Background(), "DROP DATABASE IF EXISTS "+dbName+" WITH (FORCE)", "DROP ROLE IF EXISTS "+role)
	})
	owner := *srv
	owner.Database = dbName
	odb := testdb.Open(t, &owner)
	odb.MustExec(t, "CREATE TABLE t (x INT, y INT)", "GRANT SELECT ON t TO "+role)
	var rows [][]any
	for i := range 500 {
		rows = append(rows, []any{int64(i % 5), int64(i % 3)})
	}
	if err := odb.Insert(ctx, "t", []string{"x", "y"}, rows); err != nil {
		t.Fatal(err)
	}
	odb.Close()

	conn := *testdb.Table(&owner, "t")
	conn.User, conn.Password = role, "pw"
	src, err := federated.Open(ctx, &conn)
	if err != nil {
		t.Fatal(federated.Detail(err))
	}
	defer src.Close()
	x := must(domain.NewIntRange("x", 0, 4, false))
	y := must(domain.NewIntRange("y", 0, 2, false))
	// One fetch set (one connection), then one per marginal, whose two
	// connections both fail to build their codes tables at once.
	for _, tc := range []struct {
		cover   float64
		queries int
	}{{federated.DefaultCoverCells, 2}, {1, 3}} {
		sn, err := src.Snapshot(ctx, []federated.SnapshotColumn{{Name: "x", Domain: &x}, {Name: "y", Domain: &y}})
		if err != nil {
			t.Fatal(federated.Detail(err))
		}
		sn.SetCoverCells(tc.cover)
		got, err := sn.Marginals(ctx, [][]int{{0}, {1, 0}})
		if err != nil {
			t.Fatal(federated.Detail(err))
		}
		// x = i mod 5, y = i mod 3 over i < 500: 100 of each x; the pair
		// (x, y) has 33 or 34 rows (i mod 15).
		if !slices.Equal(got[0], []float64{100, 100, 100, 100, 100}) {
			t.Errorf("cover %g: marginal of x = %v", tc.cover, got[0])
		}
		var sum float64
		for _, v := range got[1] {
			sum += v
			if v != 33 && v != 34 {
				t.Errorf("cover %g: cell of (y, x) = %v, want 33 or 34", tc.cover, v)
			}
		}
		if sum != 500 {
			t.Errorf("cover %g: (y, x) sums to %v", tc.cover, sum)
		}
		if st := sn.Stats(); st.Scans != st.Queries || st.Queries != tc.queries {
			// Each failed codes table counts as a query and a scan, then
			// one batch of GROUPING SETS.
			t.Errorf("cover %g: stats %+v, want %d queries, each a scan", tc.cover, st, tc.queries)
		}
		sn.Close()
	}
}
