package federated_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dpsql/dpsql/catalog/domain"
	"github.com/dpsql/dpsql/federated"
	"github.com/dpsql/dpsql/internal/testdb"
)

// people creates a small table on the server and returns its connection.
func people(t *testing.T, srv *federated.Conn) *federated.Conn {
	t.Helper()
	db := testdb.Open(t, srv)
	defer db.Close()
	name := testdb.Name(t, srv, "people")
	q := func(s string) string { return testdb.Quote(srv, s) }
	text, dbl, date := "text", "double precision", "date"
	if srv.Driver == federated.MySQL {
		text, dbl, date = "VARCHAR(20)", "DOUBLE", "DATE"
	}
	db.MustExec(t, "CREATE TABLE "+q(name)+" ("+q("Age")+" INT NOT NULL, "+q("sex")+" "+text+", "+q("w")+" "+dbl+", "+q("born")+" "+date+")")
	if err := db.Insert(context.Background(), name, []string{"Age", "sex", "w", "born"}, [][]any{
		{int64(30), "F", 1.5, "1990-01-02"},
		{int64(-4), nil, nil, nil},
		{int64(7), "M", -0.25, "2001-12-31"},
	}); err != nil {
		t.Fatal(err)
	}
	return testdb.Table(srv, name)
}

func TestSource(t *testing.T) {
	for _, driver := range testdb.Servers {
		t.Run(driver, func(t *testing.T) {
			srv := testdb.Get(t, driver)
			ctx := context.Background()
			conn := people(t, srv)
			src, err := federated.Open(ctx, conn)
			if err != nil {
				t.Fatal(federated.Detail(err))
			}
			defer src.Close()

			cols, err := src.Columns(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, c := range cols {
				names = append(names, c.Name)
			}
			if want := []string{"Age", "sex", "w", "born"}; !reflect.DeepEqual(names, want) || cols[0].Nullable || !cols[1].Nullable {
				t.Errorf("Columns = %+v", cols)
			}

			if err := src.CheckColumns(ctx, []string{"age", "SEX", "w", "born"}); err != nil {
				t.Errorf("CheckColumns, other case: %v", err)
			}
			err = src.CheckColumns(ctx, []string{"age", "sex", "weight"})
			if !errors.Is(err, federated.ErrColumns) || !strings.Contains(err.Error(), "not in the remote table: weight") ||
				!strings.Contains(err.Error(), "remote columns not declared: w, born") {
				t.Errorf("CheckColumns mismatch: %v", err)
			}

			var got [][]any
			err = src.Scan(ctx, []string{"sex", "age", "w", "born"}, func(row []any) error {
				got = append(got, append([]any(nil), row...))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			want := [][]any{
				{"F", int64(30), 1.5, time.Date(1990, 1, 2, 0, 0, 0, 0, time.UTC)},
				{nil, int64(-4), nil, nil},
				{"M", int64(7), -0.25, time.Date(2001, 12, 31, 0, 0, 0, 0, time.UTC)},
			}
			if len(got) != len(want) {
				t.Fatalf("Scan: %d rows, want %d", len(got), len(want))
			}
			for i := range want {
				for j := range want[i] {
					w, g := want[i][j], got[i][j]
					if tw, ok := w.(time.Time); ok {
						if tg, ok := g.(time.Time); !ok || !tg.Equal(tw) {
							t.Errorf("row %d col %d: %#v, want %v", i, j, g, w)
						}
						continue
					}
					if !reflect.DeepEqual(g, w) {
						t.Errorf("row %d col %d: %#v, want %#v", i, j, g, w)
					}
				}
			}
			stop := errors.New("stop")
			if err := src.Scan(ctx, []string{"age"}, func([]any) error { return stop }); err != stop {
				t.Errorf("Scan callback error: %v", err)
			}

			// An unsupported pair of remote type and domain is refused when the
			// snapshot begins, before any data query.
			age := must(domain.NewIntRange("age", 0, 99, false))
			sex := must(domain.NewCategorical("sex", domain.String, strs("F", "M"), true, false))
			born := must(domain.NewIntRange("born", 0, 9, true))
			wcat := must(domain.NewCategorical("w", domain.String, strs("1.5"), true, false))
			for _, bad := range [][]federated.SnapshotColumn{
				{{Name: "born", Domain: &born}},
				{{Name: "sex", Domain: &age}},
				{{Name: "w", Domain: &wcat}},
			} {
				if sn, err := src.Snapshot(ctx, bad); !errors.Is(err, federated.ErrUnsupported) {
					t.Errorf("Snapshot(%s): %v, want ErrUnsupported", bad[0].Name, err)
					if sn != nil {
						sn.Close()
					}
				}
			}
			if _, err := src.Snapshot(ctx, []federated.SnapshotColumn{{Name: "nope", Domain: &age}}); !errors.Is(err, federated.ErrColumns) {
				t.Errorf("Snapshot of a missing column: %v", err)
			}

			sn, err := src.Snapshot(ctx, []federated.SnapshotColumn{{Name: "AGE", Domain: &age}, {Name: "sex", Domain: &sex}})
			if err != nil {
				t.Fatal(err)
			}
			if d := sn.Domain(); d.Len() != 2 || d.Name(0) != "age" || d.Size(0) != 100 || d.Size(1) != 3 {
				t.Errorf("Domain: %+v", d)
			}
			m, err := sn.Marginals(ctx, [][]int{{1}, {1, 0}})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(m[0], []float64{1, 1, 1}) || m[1][0*100+30] != 1 || m[1][2*100+0] != 1 || m[1][1*100+7] != 1 {
				t.Errorf("Marginals: %v", m[0])
			}
			if _, err := sn.Marginals(ctx, [][]int{{0, 0}}); err == nil {
				t.Error("repeated attribute accepted")
			}
			if err := sn.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := sn.Marginals(ctx, [][]int{{0}}); err == nil {
				t.Error("Marginals after Close succeeded")
			}

			missing := *conn
			missing.Table = "no_such_table"
			src2, err := federated.Open(ctx, &missing)
			if err != nil {
				t.Fatal(err)
			}
			defer src2.Close()
			if _, err := src2.Columns(ctx); !errors.Is(err, federated.ErrNoTable) {
				t.Errorf("Columns of a missing table: %v", err)
			}
		})
	}
}

func TestOpenErrors(t *testing.T) {
	for _, driver := range testdb.Servers {
		t.Run(driver, func(t *testing.T) {
			srv := testdb.Get(t, driver)
			ctx := context.Background()
			bad := *testdb.Table(srv, "t")
			bad.Password = "Wrong-" + srv.Password + "-Secret"
			_, err := federated.Open(ctx, &bad)
			if !errors.Is(err, federated.ErrAuth) {
				t.Errorf("wrong password: %v (%s), want ErrAuth", err, federated.Detail(err))
			}
			for _, text := range []string{err.Error(), federated.Detail(err), federated.Redact(err).Error()} {
				if strings.Contains(text, bad.Password) {
					t.Errorf("error text contains the password: %s", text)
				}
			}
			if federated.Detail(err) == err.Error() {
				t.Errorf("no remote detail kept for the logs: %s", federated.Detail(err))
			}

			// A port where nothing listens.
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			port := l.Addr().(*net.TCPAddr).Port
			l.Close()
			down := *testdb.Table(srv, "t")
			down.Port = port
			if _, err := federated.Open(ctx, &down); !errors.Is(err, federated.ErrConnect) || strings.Contains(federated.Detail(err), srv.Password) {
				t.Errorf("unreachable server: %v", err)
			}
		})
	}
}

func TestRedact(t *testing.T) {
	if federated.Redact(nil) != nil {
		t.Error("Redact(nil) != nil")
	}
	if err := federated.Redact(errors.New(`invalid input syntax for type integer: "Alice Smith"`)); strings.Contains(err.Error(), "Alice") {
		t.Errorf("Redact kept remote text: %v", err)
	}
	cols := fmt.Errorf("x: %w: not in the remote table: weight", federated.ErrColumns)
	if err := federated.Redact(cols); err != cols {
		t.Errorf("Redact(column mismatch) = %v, want it unchanged", err)
	}
	if err := federated.Redact(context.Canceled); !errors.Is(err, context.Canceled) {
		t.Errorf("Redact(context.Canceled) = %v", err)
	}
}

// slowTable creates a view that sleeps 10 ms per row of a 3000-row table,
// so that a marginal query over it runs for about 30 s.
func slowTable(t *testing.T, srv *federated.Conn) *federated.Conn {
	db := testdb.Open(t, srv)
	defer db.Close()
	base := testdb.Name(t, srv, "base")
	view := testdb.Name(t, srv, "slow")
	q := func(s string) string { return testdb.Quote(srv, s) }
	db.MustExec(t, "CREATE TABLE "+q(base)+" (x INT)")
	rows := make([][]any, 3000)
	for i := range rows {
		rows[i] = []any{int64(i % 7)}
	}
	if err := db.Insert(context.Background(), base, []string{"x"}, rows); err != nil {
		t.Fatal(err)
	}
	if srv.Driver == federated.Postgres {
		db.MustExec(t, "CREATE VIEW "+q(view)+" AS SELECT x FROM "+q(base)+" WHERE pg_sleep(0.01) IS NOT NULL")
	} else {
		db.MustExec(t, "CREATE VIEW "+q(view)+" AS SELECT x FROM "+q(base)+" WHERE SLEEP(0.01) = 0")
	}
	t.Cleanup(func() {
		db := testdb.Open(t, srv)
		defer db.Close()
		_ = db.Exec(context.Background(), "DROP VIEW IF EXISTS "+q(view))
	})
	return testdb.Table(srv, view)
}

// TestCancel cancels a running marginal query and checks that the remote
// server stops running it (PostgreSQL: a cancel request; MySQL: KILL
// QUERY), not only that the client gives up.
func TestCancel(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	for _, driver := range testdb.Servers {
		t.Run(driver, func(t *testing.T) {
			srv := testdb.Get(t, driver)
			conn := slowTable(t, srv)
			admin := testdb.Open(t, srv)
			defer admin.Close()
			running := func() int64 {
				// The codes table's CREATE reads the table (see buildCodes).
				q := "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND (query LIKE '%GROUP BY%' OR query LIKE '%CREATE TEMP TABLE%') AND pid <> pg_backend_pid()"
				if driver == federated.MySQL {
					q = "SELECT COUNT(*) FROM information_schema.processlist WHERE command = 'Query' AND info LIKE '%GROUP BY%' AND id <> CONNECTION_ID()"
				}
				n, err := admin.QueryInt(context.Background(), q)
				if err != nil {
					t.Fatal(err)
				}
				return n
			}
			src, err := federated.Open(context.Background(), conn)
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			x := must(domain.NewIntRange("x", 0, 6, false))
			sn, err := src.Snapshot(context.Background(), []federated.SnapshotColumn{{Name: "x", Domain: &x}})
			if err != nil {
				t.Fatal(err)
			}
			defer sn.Close()
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				_, err := sn.Marginals(ctx, [][]int{{0}})
				done <- err
			}()
			if !testdb.Wait(8*time.Second, func() bool { return running() == 1 }) {
				cancel()
				t.Fatalf("the marginal query never showed as running (%v)", <-done)
			}
			cancel()
			// The query would run for 30 s more; a cancellation that only
			// gives up on the client side returns when it ends.
			select {
			case err = <-done:
			case <-time.After(15 * time.Second):
				t.Fatal("Marginals did not return after cancellation")
			}
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Marginals after cancel: %v, want context.Canceled", err)
			}
			if !sn.Touched() {
				t.Error("a query was sent but Touched is false")
			}
			if !testdb.Wait(5*time.Second, func() bool { return running() == 0 }) {
				t.Error("the remote query still runs after cancellation")
			}
			if _, err := sn.Marginals(context.Background(), [][]int{{0}}); err == nil {
				t.Error("snapshot usable after a failed query")
			}
		})
	}
}

// TestSnapshotConsistent writes to the table after the snapshot began:
// no marginal may see the new rows, including those computed later on
// connections that join the snapshot (SetParallel).
func TestSnapshotConsistent(t *testing.T) {
	for _, driver := range testdb.Servers {
		t.Run(driver, func(t *testing.T) {
			srv := testdb.Get(t, driver)
			ctx := context.Background()
			conn := people(t, srv)
			src, err := federated.Open(ctx, conn)
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			age := must(domain.NewIntRange("age", 0, 99, false))
			sex := must(domain.NewCategorical("sex", domain.String, strs("F", "M"), true, false))
			sn, err := src.Snapshot(ctx, []federated.SnapshotColumn{{Name: "age", Domain: &age}, {Name: "sex", Domain: &sex}})
			if err != nil {
				t.Fatal(err)
			}
			defer sn.Close()
			sn.SetBatch(1)
			sn.SetParallel(3)
			db := testdb.Open(t, srv)
			defer db.Close()
			if err := db.Insert(ctx, conn.Table, []string{"Age", "sex"}, [][]any{{int64(50), "F"}, {int64(51), "M"}}); err != nil {
				t.Fatal(err)
			}
			m, err := sn.Marginals(ctx, [][]int{{0}, {1}, {0, 1}})
			if err != nil {
				t.Fatal(err)
			}
			for i, x := range m {
				total := 0.0
				for _, v := range x {
					total += v
				}
				if total != 3 {
					t.Errorf("marginal %d counts %v rows, want the 3 of the snapshot", i, total)
				}
			}
		})
	}
}
