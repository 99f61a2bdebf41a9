package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"

	"github.com/dpsql/dpsql/budget"
	"github.com/dpsql/dpsql/engine/dpparse"
	"github.com/dpsql/dpsql/federated"
	"github.com/dpsql/dpsql/internal/fixture"
	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/pgm"
)

// The engine's side of FEDERATED tables, against a fake source that serves
// the rows of a local table (fakeSource): the same rows are then both a
// local and a federated table, so a federated synthesis can be compared
// with the exact counts. The real drivers are tested in cmd/dpsql against
// PostgreSQL and MariaDB.

// fakeSource is a remote database holding one table: the rows of a local
// table of the engine, answered the way the federated package answers
// (CheckColumns, Scan, a snapshot of marginals).
type fakeSource struct {
	e         *Engine
	db, table string   // the local table whose rows are served
	cols      []string // the remote columns; default: the local table's

	mu        sync.Mutex
	openErr   error         // Open fails with it
	queryErr  error         // every marginal query fails with it
	block     chan struct{} // if set, a marginal query waits for its context; closed when one starts
	asked     []string      // every marginal set asked, by key
	touched   bool
	cancelled bool // a query ended by its context
	visit     bool // snapshots hand marginals over one at a time (synth.MarginalVisitor)
	visits    int  // VisitMarginals calls
	opens     int
	closes    int // sources and snapshots closed
	conns     []string
}

func (f *fakeSource) open(_ context.Context, c *federated.Conn) (remoteSource, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.conns = append(f.conns, c.String())
	if f.openErr != nil {
		return nil, f.openErr
	}
	f.opens++
	return &fakeConn{f: f}, nil
}

// rows reads the served table.
func (f *fakeSource) rows(ctx context.Context) (sql.Schema, []sql.Row, error) {
	t, ok, err := f.e.dp.cat.Table(ctx, f.db, f.table)
	if err != nil || !ok {
		return nil, nil, fmt.Errorf("fake source: no table %s.%s (%v)", f.db, f.table, err)
	}
	var rows []sql.Row
	err = f.e.dp.cat.ScanTable(ctx, f.db, f.table, func(r sql.Row) error {
		rows = append(rows, r)
		return nil
	})
	return t.Schema(), rows, err
}

type fakeConn struct{ f *fakeSource }

func (c *fakeConn) CheckColumns(ctx context.Context, names []string) error {
	want := c.f.cols
	if want == nil {
		sch, _, err := c.f.rows(ctx)
		if err != nil {
			return err
		}
		for _, col := range sch {
			want = append(want, col.Name)
		}
	}
	var missing, extra []string
	for _, n := range names {
		if !slices.ContainsFunc(want, func(w string) bool { return strings.EqualFold(w, n) }) {
			missing = append(missing, n)
		}
	}
	for _, w := range want {
		if !slices.ContainsFunc(names, func(n string) bool { return strings.EqualFold(w, n) }) {
			extra = append(extra, w)
		}
	}
	if missing != nil || extra != nil {
		return fmt.Errorf("federated: the source table lacks %v and has undeclared %v", missing, extra)
	}
	return nil
}

// Scan returns the rows as a remote driver would: ENUMs as their labels.
func (c *fakeConn) Scan(ctx context.Context, names []string, fn func(row []any) error) error {
	sch, rows, err := c.f.rows(ctx)
	if err != nil {
		return err
	}
	for _, r := range rows {
		out := make([]any, len(names))
		for i, n := range names {
			j := sch.IndexOfColName(n)
			v := r[j]
			if et, ok := sch[j].Type.(sql.EnumType); ok && v != nil {
				v, _ = et.At(int(v.(uint16)))
			}
			out[i] = v
		}
		if err := fn(out); err != nil {
			return err
		}
	}
	return nil
}

func (c *fakeConn) Snapshot(ctx context.Context, cols []federated.SnapshotColumn) (remoteSnapshot, error) {
	sch, rows, err := c.f.rows(ctx)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(cols))
	sizes := make([]int, len(cols))
	codes := make([][]uint16, len(cols))
	for i, col := range cols {
		names[i], sizes[i] = col.Name, col.Domain.Size()
		j := sch.IndexOfColName(col.Name)
		for _, r := range rows {
			code, _ := col.Domain.Encode(r[j])
			codes[i] = append(codes[i], uint16(max(code, 0)))
		}
	}
	dom, err := pgm.NewDomain(names, sizes)
	if err != nil {
		return nil, err
	}
	ds, err := pgm.NewDataset(dom, codes)
	if err != nil {
		return nil, err
	}
	if c.f.visit {
		return visitingSnapshot{&fakeSnapshot{f: c.f, ds: ds}}, nil
	}
	return &fakeSnapshot{f: c.f, ds: ds}, nil
}

func (c *fakeConn) Close() error {
	c.f.mu.Lock()
	c.f.closes++
	c.f.mu.Unlock()
	return nil
}

type fakeSnapshot struct {
	f  *fakeSource
	ds *pgm.Dataset
}

func (s *fakeSnapshot) Domain() *pgm.Domain { return s.ds.Domain() }

func (s *fakeSnapshot) Marginals(ctx context.Context, sets [][]int) ([][]float64, error) {
	f := s.f
	f.mu.Lock()
	f.touched = true
	for _, set := range sets {
		f.asked = append(f.asked, synth.Key(slices.Sorted(slices.Values(set))))
	}
	block, qerr := f.block, f.queryErr
	f.mu.Unlock()
	if block != nil {
		close(block)
		<-ctx.Done()
		f.mu.Lock()
		f.cancelled = true
		f.mu.Unlock()
		return nil, fmt.Errorf("federated: remote query: %w", ctx.Err())
	}
	if qerr != nil {
		return nil, qerr
	}
	return s.ds.Marginals(ctx, sets)
}

// visitingSnapshot hands its marginals over one at a time, as
// *federated.Snapshot does.
type visitingSnapshot struct{ *fakeSnapshot }

func (s visitingSnapshot) VisitMarginals(ctx context.Context, sets [][]int, fn func(int, []float64) error) error {
	s.f.mu.Lock()
	s.f.visits++
	s.f.mu.Unlock()
	for i, set := range sets {
		x, err := s.Marginals(ctx, [][]int{set})
		if err != nil {
			return err
		}
		if err := fn(i, x[0]); err != nil {
			return err
		}
	}
	return nil
}

func (s *fakeSnapshot) Touched() bool {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	return s.f.touched
}

func (s *fakeSnapshot) Stats() federated.Stats {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	return federated.Stats{Queries: len(s.f.asked), Scans: len(s.f.asked)}
}

func (s *fakeSnapshot) Close() error { return (&fakeConn{f: s.f}).Close() }

// fedFixture: raw.loc holds generated rows; raw.fed is a FEDERATED table
// over a fake source serving raw.loc, with a budget.
type fedFixture struct {
	*synthFixture
	src *fakeSource
	fed tableRef
}

const (
	fedConnection = "postgresql://alice:s3cr3t-pw@127.0.0.1:5432/warehouse/public.people"
	fedColumns    = "(sex ENUM('F','M') NOT NULL, age INT NOT NULL CHECK (age BETWEEN 0 AND 9), city VARCHAR(10) CHECK (city IN ('a','b','c')))"
)

func newFedFixture(t *testing.T) *fedFixture {
	t.Helper()
	sf := &synthFixture{t: t, dir: t.TempDir()}
	sf.open()
	f := &fedFixture{synthFixture: sf}
	f.src = &fakeSource{e: f.e, db: "raw", table: "loc"}
	f.e.remote = f.src.open
	rng := rand.New(rand.NewPCG(7, 11))
	f.exec(
		"CREATE DATABASE raw",
		"CREATE DATABASE syn",
		"CREATE TABLE raw.loc "+fedColumns,
		"INSERT INTO raw.loc (sex, age, city) VALUES "+strings.Join(fixture.PeopleTuples(rng, fixtureRows), ","),
		"CREATE TABLE raw.fed "+fedColumns+" ENGINE = FEDERATED CONNECTION = '"+fedConnection+"'",
	)
	for _, name := range []string{"loc", "fed"} {
		ref, err := f.e.resolveTable(f.root, dpparse.TableName{DB: "raw", Name: name})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.e.dp.ledger.SetBudget(context.Background(), ref.LedgerKey(), "raw."+name, "root@localhost", "test budget", 8000, fixtureDelta); err != nil {
			t.Fatal(err)
		}
		if name == "fed" {
			f.fed = ref
		}
	}
	f.src.asked = nil
	return f
}

// fedEntries is the ledger of raw.fed.
func (f *fedFixture) fedEntries() []budget.Entry {
	f.t.Helper()
	es, err := f.e.dp.ledger.Entries(f.fed.LedgerKey(), "")
	if err != nil {
		f.t.Fatal(err)
	}
	return es
}

// spent is ρ spent on raw.fed.
func (f *fedFixture) spent() float64 {
	f.t.Helper()
	info, err := f.e.dp.ledger.Budget(f.fed.LedgerKey())
	if err != nil {
		f.t.Fatal(err)
	}
	return info.RhoSpent
}

func TestFederatedCreate(t *testing.T) {
	f := newFedFixture(t)
	tb, ok, err := f.e.dp.cat.Table(f.root, "raw", "fed")
	if err != nil || !ok || tb.Connection() != fedConnection {
		t.Fatalf("stored: ok %v err %v", ok, err)
	}
	for _, tc := range []struct {
		name string
		q    string
		prep func(*fakeSource)
		kind *Kind
		code int
	}{
		{name: "missing column", q: "CREATE TABLE raw.bad1 (sex ENUM('F','M'), age INT, city VARCHAR(10), zip INT) ENGINE=FEDERATED CONNECTION='" + fedConnection + "'", kind: ErrFederatedTable, code: 1434},
		{name: "extra remote column", q: "CREATE TABLE raw.bad2 (sex ENUM('F','M'), age INT) ENGINE=FEDERATED CONNECTION='" + fedConnection + "'", kind: ErrFederatedTable, code: 1434},
		{name: "unreachable", q: "CREATE TABLE raw.bad3 " + fedColumns + " ENGINE=FEDERATED CONNECTION='" + fedConnection + "'",
			prep: func(s *fakeSource) {
				s.openErr = errors.New("dial tcp 127.0.0.1:5432: connection refused (password s3cr3t-pw)")
			}, kind: ErrFederatedSource, code: 1429},
		{name: "no connection", q: "CREATE TABLE raw.bad4 " + fedColumns + " ENGINE=FEDERATED", kind: ErrFederatedConnection, code: 1432},
		{name: "bad scheme", q: "CREATE TABLE raw.bad5 " + fedColumns + " ENGINE=FEDERATED CONNECTION='oracle://u:s3cr3t-pw@h/db/t'", kind: ErrFederatedConnection, code: 1432},
		{name: "index", q: "CREATE TABLE raw.bad6 (sex ENUM('F','M'), age INT, city VARCHAR(10), INDEX (age)) ENGINE=FEDERATED CONNECTION='" + fedConnection + "'", kind: ErrFederatedTable, code: 1434},
		{name: "auto increment", q: "CREATE TABLE raw.bad7 (sex ENUM('F','M'), age INT AUTO_INCREMENT PRIMARY KEY, city VARCHAR(10)) ENGINE=FEDERATED CONNECTION='" + fedConnection + "'", kind: ErrFederatedTable, code: 1434},
		{name: "exists", q: "CREATE TABLE raw.fed " + fedColumns + " ENGINE=FEDERATED CONNECTION='" + fedConnection + "'", kind: ErrExists, code: 1050},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.src.openErr = nil
			if tc.prep != nil {
				tc.prep(f.src)
			}
			_, _, err := query(f.e, f.root, tc.q)
			if !errors.Is(err, tc.kind) && errCode(err) != tc.code {
				t.Fatalf("err %v (code %d), want %s (%d)", err, errCode(err), tc.kind, tc.code)
			}
			if errCode(err) != tc.code {
				t.Errorf("code %d, want %d (%v)", errCode(err), tc.code, err)
			}
			if strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("error shows the password: %v", err)
			}
			name := strings.Fields(tc.q)[2]
			if db, tbl, _ := strings.Cut(name, "."); tbl != "fed" && f.tableExists(db, tbl) {
				t.Errorf("%s created", name)
			}
		})
	}
	f.src.openErr = nil
	// IF NOT EXISTS on an existing table: a warning, nothing contacted.
	opens := f.src.opens
	f.exec("CREATE TABLE IF NOT EXISTS raw.fed " + fedColumns + " ENGINE=FEDERATED CONNECTION='" + fedConnection + "'")
	if f.src.opens != opens {
		t.Error("IF NOT EXISTS connected to the source of an existing table")
	}
	// A user without CREATE on the database may not declare one.
	f.exec("CREATE USER analyst IDENTIFIED BY 'apw'", "GRANT SELECT ON syn.* TO analyst")
	an := sessionCtx(f.e, 7, "analyst", localhost)
	if _, _, err := query(f.e, an, "CREATE TABLE syn.x "+fedColumns+" ENGINE=FEDERATED CONNECTION='"+fedConnection+"'"); err == nil {
		t.Error("analyst without CREATE declared a federated table")
	}
	// A CHECK declares a domain: it is added without reading the source,
	// whose rows may violate it (age 9 does).
	opens = f.src.opens
	f.exec("ALTER TABLE raw.fed ADD CONSTRAINT young CHECK (age < 5)")
	if f.src.opens != opens {
		t.Error("adding a CHECK read the source")
	}
	if rows := f.rows("SHOW DOMAIN FOR raw.fed"); !strings.Contains(fmt.Sprint(rows), "0..4") {
		t.Errorf("domain after ADD CHECK: %v", rows)
	}
	// DROP TABLE drops the declaration only.
	f.exec("CREATE TABLE raw.fed2 "+fedColumns+" ENGINE=FEDERATED CONNECTION='"+fedConnection+"'", "DROP TABLE raw.fed2")
	if f.tableExists("raw", "fed2") {
		t.Error("DROP TABLE left the federated table")
	}
}

// TestFederatedMasked: the connection's password shows nowhere a user
// looks.
func TestFederatedMasked(t *testing.T) {
	f := newFedFixture(t)
	var seen []string
	for _, q := range []string{
		"SHOW CREATE TABLE raw.fed",
		"SELECT ENGINE FROM information_schema.tables WHERE table_schema = 'raw' AND table_name = 'fed'",
		"SHOW TABLE STATUS FROM raw LIKE 'fed'",
		"SHOW DOMAIN FOR raw.fed",
		"SHOW PRIVACY BUDGET FOR raw.fed",
		"SHOW PROCESSLIST",
		"DESCRIBE raw.fed",
	} {
		rows := f.rows(q)
		seen = append(seen, fmt.Sprint(rows))
	}
	all := strings.Join(seen, "\n")
	if strings.Contains(all, "s3cr3t") {
		t.Errorf("password shown:\n%s", all)
	}
	create := seen[0]
	for _, want := range []string{"ENGINE=FEDERATED", "CONNECTION='postgresql://alice:***@127.0.0.1:5432/warehouse/public.people'", "CHECK"} {
		if !strings.Contains(create, want) {
			t.Errorf("SHOW CREATE TABLE lacks %q: %s", want, create)
		}
	}
	if !strings.Contains(seen[1], "FEDERATED") || !strings.Contains(seen[2], "FEDERATED") {
		t.Errorf("engine not FEDERATED: %s / %s", seen[1], seen[2])
	}
	if !strings.Contains(seen[3], "age") {
		t.Errorf("SHOW DOMAIN: %s", seen[3])
	}
}

func TestMaskErrorCredentials(t *testing.T) {
	err := maskErrorCredentials(mysql.NewSQLError(1064, "42000", "syntax error near 'mysql://u:pw@h/d/t' x"))
	var se *mysql.SQLError
	if !errors.As(err, &se) || se.Num != 1064 || se.Message != "syntax error near 'mysql://u:***@h/d/t' x" {
		t.Errorf("masked: %v", err)
	}
	plain := errors.New("no url here")
	if maskErrorCredentials(plain) != plain {
		t.Error("an error without credentials changed")
	}
	if got := maskStatement("SELECT 'postgresql://a:b@c/d'"); got != "SELECT 'postgresql://a:***@c/d'" {
		t.Errorf("maskStatement: %s", got)
	}
}

func TestMaskConnections(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"SELECT 1", "SELECT 1"},
		{"CREATE TABLE t (a INT) ENGINE=FEDERATED CONNECTION='mysql://u:pw@h:3306/d/t'", "CREATE TABLE t (a INT) ENGINE=FEDERATED CONNECTION='mysql://u:***@h:3306/d/t'"},
		{"create table t (a int) engine federated connection = \"postgresql://u:p%40ss@h/d/s.t?sslmode=require\"", "create table t (a int) engine federated connection = 'postgresql://u:***@h:5432/d/s.t?sslmode=require'"},
		{"CREATE TABLE t (a INT) CONNECTION='bogus://u:pw@h/x'", "CREATE TABLE t (a INT) CONNECTION='bogus://***@h/x'"},
		{"CREATE TABLE t (a INT) CONNECTION 'mysql://u:it''s@h/d/t'", "CREATE TABLE t (a INT) CONNECTION 'mysql://u:***@h:3306/d/t'"},
	} {
		if got := maskConnections(tc.in); got != tc.want {
			t.Errorf("maskConnections(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
}

func TestFederatedReadThrough(t *testing.T) {
	f := newFedFixture(t)
	for _, q := range []string{
		"SELECT sex, age, city FROM raw.%s ORDER BY sex, age, city",
		"SELECT sex, COUNT(*) FROM raw.%s WHERE age > 3 GROUP BY sex ORDER BY sex",
		"SELECT COUNT(*) FROM raw.%s WHERE city IS NULL",
	} {
		want := f.rows(fmt.Sprintf(q, "loc"))
		got := f.rows(fmt.Sprintf(q, "fed"))
		if len(want) == 0 || !sameRows(got, want, true) {
			t.Errorf("%s: federated %d rows, local %d (first: %v / %v)", q, len(got), len(want), first(got), first(want))
		}
	}
	for _, q := range []string{
		"INSERT INTO raw.fed VALUES ('F', 1, 'a')",
		"UPDATE raw.fed SET age = 1",
		"DELETE FROM raw.fed WHERE age = 1",
		"TRUNCATE TABLE raw.fed",
		"REPLACE INTO raw.fed VALUES ('F', 1, 'a')",
	} {
		_, _, err := query(f.e, f.root, q)
		if errCode(err) != 1036 {
			t.Errorf("%s: %v (code %d), want read-only 1036", q, err, errCode(err))
		}
	}
	// An analyst with SYNTHESIZE only may not read it, but may synthesize.
	f.exec("CREATE USER analyst IDENTIFIED BY 'apw'", "GRANT ALL ON syn.* TO analyst", "GRANT SYNTHESIZE ON raw.fed TO analyst")
	an := sessionCtx(f.e, 7, "analyst", localhost)
	if _, rows, err := query(f.e, an, "SELECT * FROM raw.fed"); err == nil {
		t.Errorf("analyst read %d rows of the federated table", len(rows))
	}
	if _, _, err := query(f.e, an, "CREATE SYNTHETIC TABLE syn.a FROM raw.fed USING mst WITH EPSILON = 1"); err != nil {
		t.Fatalf("analyst synthesis: %v", err)
	}
	if !f.tableExists("syn", "a") {
		t.Error("no synthetic table")
	}
	// A read of an unreachable source fails cleanly.
	f.src.openErr = errors.New("connection refused")
	if _, _, err := query(f.e, f.root, "SELECT * FROM raw.fed"); errCode(err) != 1429 {
		t.Errorf("unreachable read: %v", err)
	}
}

func first(rows []sql.Row) any {
	if len(rows) == 0 {
		return nil
	}
	return rows[0]
}

// TestFederatedSynthesisExact: with a huge ε, the model of a federated
// synthesis has the source's marginals (within the estimation's
// convergence), for every marginal-based mechanism; each marginal is asked
// of the source once.
func TestFederatedSynthesisExact(t *testing.T) {
	f := newFedFixture(t)
	// Exact 2-way counts of (sex, age) and (age, city) from the local copy.
	exact := map[string]map[string]float64{}
	for _, pair := range [][2]string{{"sex", "age"}, {"age", "city"}} {
		m := map[string]float64{}
		for _, r := range f.rows(fmt.Sprintf("SELECT CONCAT(%s), CONCAT(%s), COUNT(*) FROM raw.loc GROUP BY 1, 2", pair[0], pair[1])) {
			m[fmt.Sprint(r[0], "|", r[1])] = float64(toInt(r[2]))
		}
		exact[pair[0]+","+pair[1]] = m
	}
	for _, tc := range []struct {
		mech, opts string
		visit      bool // the source hands marginals over one at a time
	}{
		{"aim", ", ROUNDS = 6, PGM_ITERS = 200, FINAL_ITERS = 500", false},
		{"aim", ", ROUNDS = 6, PGM_ITERS = 200, FINAL_ITERS = 500", true},
		{"mst", "", false},
		{"mwem", "", false},
	} {
		name := "x_" + tc.mech
		if tc.visit {
			name += "_visit"
		}
		t.Run(name, func(t *testing.T) {
			f.src.asked, f.src.visit, f.src.visits = nil, tc.visit, 0
			f.exec("CREATE SYNTHETIC TABLE syn." + name + " FROM raw.fed USING " + tc.mech + " WITH EPSILON = 2000" + tc.opts +
				" WORKLOAD (SELECT sex, age, COUNT(*) FROM raw.fed GROUP BY sex, age; SELECT age, city, COUNT(*) FROM raw.fed GROUP BY age, city)")
			seen := map[string]bool{}
			for _, k := range f.src.asked {
				if seen[k] {
					t.Errorf("marginal %s asked of the source twice (asked %v)", k, f.src.asked)
				}
				seen[k] = true
			}
			if len(f.src.asked) == 0 {
				t.Fatal("the source was never asked")
			}
			if tc.visit != (f.src.visits > 0) {
				t.Errorf("visiting source: %d VisitMarginals calls", f.src.visits)
			}
			rec, model, _ := f.record("syn", name)
			m, err := pgm.UnmarshalModel(model)
			if err != nil {
				t.Fatal(err)
			}
			for _, pair := range [][2]string{{"sex", "age"}, {"age", "city"}} {
				attrs, err := m.Domain().Attrs(pair[0], pair[1])
				if err != nil {
					t.Fatal(err)
				}
				got, err := m.Marginals(context.Background(), [][]int{attrs})
				if err != nil {
					t.Fatal(err)
				}
				a, b := &rec.Domain.Columns[attrs[0]], &rec.Domain.Columns[attrs[1]]
				worst := 0.0
				for i := 0; i < a.Size(); i++ {
					for j := 0; j < b.Size(); j++ {
						want := exact[pair[0]+","+pair[1]][fmt.Sprint(label(a, i), "|", label(b, j))]
						worst = math.Max(worst, math.Abs(got[0][i*b.Size()+j]-want))
					}
				}
				// Exact measurements: the model is off by its estimation's
				// convergence only; a wrong encoding is off by tens of rows.
				if worst > 0.02*fixtureRows {
					t.Errorf("%s: marginal (%s, %s) off by %.2f rows", tc.mech, pair[0], pair[1], worst)
				}
			}
			es := f.fedEntries()
			last := es[len(es)-1]
			if last.Status != budget.StatusCommitted || !strings.Contains(last.Note, "remote queries") {
				t.Errorf("ledger entry %v: %q", last.Status, last.Note)
			}
		})
	}
}

// label is how a GROUP BY of the local table prints value code i of c.
func label(c interface {
	Label(int) string
}, i int) string {
	l := c.Label(i)
	if l == "NULL" {
		return "<nil>"
	}
	return l
}

// TestFederatedFailures: what a failing source costs, whether it hands
// marginals over whole or one at a time.
func TestFederatedFailures(t *testing.T) {
	for _, visit := range []bool{false, true} {
		t.Run(fmt.Sprint("visit=", visit), func(t *testing.T) { federatedFailures(t, visit) })
	}
}

func federatedFailures(t *testing.T, visit bool) {
	f := newFedFixture(t)
	f.src.visit = visit
	const stmt = "CREATE SYNTHETIC TABLE syn.%s FROM raw.fed USING aim WITH EPSILON = 1, ROUNDS = 6, PGM_ITERS = 10, FINAL_ITERS = 20"

	// Unreachable: nothing charged, no ledger entry, nothing written.
	f.src.openErr = errors.New("dial tcp: connection refused; password=s3cr3t-pw")
	before, entries := f.spent(), len(f.fedEntries())
	_, _, err := query(f.e, f.root, fmt.Sprintf(stmt, "u"))
	if errCode(err) != 1429 || !strings.Contains(err.Error(), "nothing was charged") {
		t.Errorf("unreachable: %v", err)
	}
	if f.spent() != before || len(f.fedEntries()) != entries || f.tableExists("syn", "u") {
		t.Errorf("unreachable source charged: spent %g→%g, entries %d→%d", before, f.spent(), entries, len(f.fedEntries()))
	}
	f.src.openErr = nil

	// The remote query fails after it was sent: the charge is kept, the
	// ledger says so, nothing is written, and the remote text is redacted.
	f.src.queryErr = errors.New("ERROR: division by zero near value 'SECRET-ROW'")
	_, _, err = query(f.e, f.root, fmt.Sprintf(stmt, "q"))
	if err == nil || strings.Contains(err.Error(), "SECRET-ROW") || !strings.Contains(err.Error(), "stays spent") {
		t.Errorf("remote failure: %v", err)
	}
	es := f.fedEntries()
	last := es[len(es)-1]
	if last.Status != budget.StatusFailed || f.spent() <= before || !strings.Contains(last.Note, "the charge is kept") {
		t.Errorf("remote failure: entry %v %q, spent %g", last.Status, last.Note, f.spent())
	}
	if f.tableExists("syn", "q") {
		t.Error("table written after a remote failure")
	}
	f.src.queryErr = nil

	// KILL QUERY while the remote query runs: the query's context ends
	// (the remote query is cancelled) and the charge is kept.
	started := make(chan struct{})
	f.src.block = started
	ctx, cancel := context.WithCancel(context.Background())
	kctx := f.root.WithContext(ctx)
	done := make(chan error, 1)
	go func() {
		_, _, err := query(f.e, kctx, fmt.Sprintf(stmt, "k"))
		done <- err
	}()
	<-started
	cancel()
	err = <-done
	if !errors.Is(err, ErrCancelled) && errCode(err) != 1317 {
		t.Errorf("killed synthesis: %v", err)
	}
	f.src.mu.Lock()
	cancelled := f.src.cancelled
	f.src.mu.Unlock()
	if !cancelled {
		t.Error("the remote query was not cancelled")
	}
	es = f.fedEntries()
	if last := es[len(es)-1]; last.Status != budget.StatusFailed || !strings.Contains(last.Note, "the charge is kept") {
		t.Errorf("killed: entry %v %q", last.Status, last.Note)
	}
	f.src.block = nil
	if f.tableExists("syn", "k") {
		t.Error("killed synthesis wrote its table")
	}
	// Every source and snapshot opened was closed.
	if f.src.closes < f.src.opens {
		t.Errorf("opened %d sources, closed %d", f.src.opens, f.src.closes)
	}
}

// recordsMechanism needs records.
type recordsMechanism struct{ synth.Mechanism }

func (recordsMechanism) NeedsRecords() string { return "it resamples rows" }

func TestNeedsRecords(t *testing.T) {
	if why := needsRecords(recordsMechanism{}, nil); why != "it resamples rows" {
		t.Errorf("needsRecords = %q", why)
	}
	if why := needsRecords(nil, nil); why != "" {
		t.Errorf("needsRecords(nil) = %q", why)
	}
}
