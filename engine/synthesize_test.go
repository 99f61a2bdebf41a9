package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
	"go.etcd.io/bbolt"

	"github.com/dpsql/dpsql/budget"
	"github.com/dpsql/dpsql/catalog"
	"github.com/dpsql/dpsql/engine/dpparse"
	"github.com/dpsql/dpsql/internal/fixture"
	"github.com/dpsql/dpsql/internal/gctest"
	"github.com/dpsql/dpsql/internal/par"
	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/noise"
	"github.com/dpsql/dpsql/synth/pgm"
)

// synthFixture is an engine over the catalog with a raw table raw.people
// (ENUM, CHECK-bounded and nullable CHECK IN columns, an AUTO_INCREMENT
// key) holding generated rows, and a budget on it.
type synthFixture struct {
	t    *testing.T
	dir  string
	e    *Engine
	root *sql.Context
	src  tableRef
}

const (
	fixtureRows   = 400
	fixtureEps    = 20.0
	fixtureDelta  = 1e-6
	fastAIMOption = "ROUNDS = 6, PGM_ITERS = 10, FINAL_ITERS = 50"
)

func newSynthFixture(t *testing.T) *synthFixture {
	t.Helper()
	f := &synthFixture{t: t, dir: t.TempDir()}
	f.open()
	f.exec(
		"CREATE DATABASE raw",
		"CREATE DATABASE syn",
		"CREATE TABLE raw.people (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, sex ENUM('F','M') NOT NULL,"+
			" age INT NOT NULL CHECK (age BETWEEN 0 AND 9), city VARCHAR(10) CHECK (city IN ('a','b','c')))",
		"CREATE TABLE raw.nobudget (x INT NOT NULL CHECK (x BETWEEN 1 AND 3))",
		"INSERT INTO raw.nobudget (x) VALUES (1), (2)",
	)
	// Correlated rows: age follows sex, city follows age; some NULL cities
	// and one out-of-domain age (clipped, never widening the domain).
	rng := rand.New(rand.NewPCG(7, 11))
	f.exec("INSERT INTO raw.people (sex, age, city) VALUES " + strings.Join(fixture.PeopleTuples(rng, fixtureRows), ","))
	var err error
	f.src, err = f.e.resolveTable(f.root, dpparse.TableName{DB: "raw", Name: "people"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.e.dp.ledger.SetBudget(context.Background(), f.src.LedgerKey(), "raw.people", "root@localhost", "test budget", fixtureEps, fixtureDelta); err != nil {
		t.Fatal(err)
	}
	return f
}

// open (re)opens the engine over the fixture's data directory.
func (f *synthFixture) open() {
	f.t.Helper()
	f.e = openDiskEngine(f.t, f.dir, nil)
	f.root = sessionCtx(f.e, 1, RootUser, localhost)
}

func (f *synthFixture) restart() {
	f.t.Helper()
	if err := f.e.Close(); err != nil {
		f.t.Fatal(err)
	}
	f.open()
}

func (f *synthFixture) exec(qs ...string) {
	f.t.Helper()
	for _, q := range qs {
		if _, _, err := query(f.e, f.root, q); err != nil {
			f.t.Fatalf("%s: %v", abbrev(q), err)
		}
	}
}

func (f *synthFixture) rows(q string) []sql.Row {
	f.t.Helper()
	_, rows, err := query(f.e, f.root, q)
	if err != nil {
		f.t.Fatalf("%s: %v", q, err)
	}
	return rows
}

func (f *synthFixture) budget() budget.BudgetInfo {
	f.t.Helper()
	info, err := f.e.dp.ledger.Budget(f.src.LedgerKey())
	if err != nil {
		f.t.Fatal(err)
	}
	return info
}

func (f *synthFixture) entries() []budget.Entry {
	f.t.Helper()
	es, err := f.e.dp.ledger.Entries(f.src.LedgerKey(), "")
	if err != nil {
		f.t.Fatal(err)
	}
	return es
}

func (f *synthFixture) tableExists(db, name string) bool {
	_, ok, err := f.e.dp.cat.TableID(db, name)
	if err != nil {
		f.t.Fatal(err)
	}
	return ok
}

// record returns the synthetic record of db.name.
func (f *synthFixture) record(db, name string) (*catalog.Synthetic, []byte, []byte) {
	f.t.Helper()
	id, ok, err := f.e.dp.cat.TableID(db, name)
	if err != nil || !ok {
		f.t.Fatalf("%s.%s: ok=%v err=%v", db, name, ok, err)
	}
	var rec *catalog.Synthetic
	var model, release []byte
	err = f.e.dp.cat.View(context.Background(), func(tx *catalog.Tx) error {
		var found bool
		var err error
		if rec, found, err = tx.Synthetic(id); err != nil || !found {
			return fmt.Errorf("no record (%v)", err)
		}
		if model, err = tx.SyntheticModel(id); err != nil {
			return err
		}
		release, err = tx.SyntheticRelease(id)
		return err
	})
	if err != nil {
		f.t.Fatalf("record of %s.%s: %v", db, name, err)
	}
	return rec, model, release
}

// wantRho is the ρ the ledger charges for ε at the fixture's δ.
func wantRho(t *testing.T, eps float64) float64 {
	rho, err := budget.RhoFromEpsilonDelta(eps, fixtureDelta)
	if err != nil {
		t.Fatal(err)
	}
	return rho
}

func TestCreateSyntheticAIM(t *testing.T) {
	f := newSynthFixture(t)
	before := f.budget()
	f.exec("CREATE SYNTHETIC TABLE syn.p FROM raw.people USING aim WITH EPSILON = 1, ROWS = 300, SEED = 5, " + fastAIMOption)

	// The budget went down by exactly the declared ρ (rounded up to the
	// ledger's unit of 2^-40), and the entry is committed.
	after := f.budget()
	spent := after.RhoSpent - before.RhoSpent
	if rho := wantRho(t, 1); spent < rho || spent > rho+math.Ldexp(1, -40) {
		t.Errorf("ρ spent %.15g, want %.15g rounded up", spent, rho)
	}
	es := f.entries()
	last := es[len(es)-1]
	if last.Status != budget.StatusCommitted || last.Mechanism != "aim" || last.User != "root@localhost" ||
		!strings.HasPrefix(last.Statement, "CREATE SYNTHETIC TABLE") || last.Rho != spent {
		t.Errorf("ledger entry = %+v", last)
	}

	// The table has the requested rows, the source's columns, and only
	// values of the public domain.
	rows := f.rows("SELECT id, sex, age, city FROM syn.p ORDER BY id")
	if len(rows) != 300 {
		t.Fatalf("%d rows, want 300", len(rows))
	}
	for i, r := range rows {
		if toInt(r[0]) != int64(i+1) {
			t.Fatalf("row %d: id %v, want %d (row numbers)", i, r[0], i+1)
		}
		// In process an ENUM reads as its 1-based index.
		if s := fmt.Sprint(r[1]); s != "1" && s != "2" {
			t.Fatalf("row %d: sex %q", i, s)
		}
		if a := toInt(r[2]); a < 0 || a > 9 {
			t.Fatalf("row %d: age %d outside 0..9", i, a)
		}
		if c := r[3]; c != nil && c != "a" && c != "b" && c != "c" {
			t.Fatalf("row %d: city %v", i, c)
		}
	}
	// Group-bys work on the copy like on any table.
	if got := f.rows("SELECT COUNT(*) FROM syn.p WHERE sex IN ('F','M')"); toInt(got[0][0]) != 300 {
		t.Errorf("count = %v", got)
	}

	rec, model, release := f.record("syn", "p")
	if rec.Rows != 300 || rec.Mechanism != "aim" || rec.Epsilon != 1 || rec.Delta != fixtureDelta || rec.Rho != spent ||
		rec.SourceID != f.src.ID || rec.Seed == nil || *rec.Seed != 5 || rec.Output != "synthetic data" || rec.Rounds == 0 {
		t.Errorf("record = %+v", rec)
	}
	if len(rec.Domain.Columns) != 3 || len(rec.Workload) != 3 { // sex, age, city: 3 pairs
		t.Errorf("record domain %v, workload %+v", rec.Domain.Names(), rec.Workload)
	}
	m, err := pgm.UnmarshalModel(model)
	if err != nil {
		t.Fatalf("stored model: %v", err)
	}
	if m.Size() != rec.ModelSize {
		t.Errorf("model size %g, record says %g", m.Size(), rec.ModelSize)
	}
	rel, err := synth.UnmarshalRelease(release)
	if err != nil {
		t.Fatalf("stored release: %v", err)
	}
	if rel.RhoUsed > spent*(1+1e-12) || len(rel.Rounds) != rec.Rounds || len(rel.Measurements) == 0 {
		t.Errorf("release: ρ used %g of %g, %d rounds, %d measurements", rel.RhoUsed, spent, len(rel.Rounds), len(rel.Measurements))
	}

	show := f.rows("SHOW SYNTHETIC TABLES FROM syn")
	if len(show) != 1 || show[0][1] != "p" || show[0][2] != "raw.people" || show[0][3] != "aim" || toInt(show[0][8]) != 300 {
		t.Errorf("SHOW SYNTHETIC TABLES = %v", show)
	}
	if _, _, err := query(f.e, f.root, "SHOW SYNTHETIC TABLES FROM nodb"); errCode(err) != mysql.ERBadDb {
		t.Errorf("SHOW SYNTHETIC TABLES FROM a missing database: %v", err)
	}
	if call := f.rows("CALL dpsql_show_synthetic_tables('syn')"); len(call) != 1 {
		t.Errorf("CALL twin = %v", call)
	}

	// Restart: the table, its record and its model survive.
	f.restart()
	if got := f.rows("SELECT COUNT(*) FROM syn.p"); toInt(got[0][0]) != 300 {
		t.Errorf("after restart: count = %v", got)
	}
	_, model2, _ := f.record("syn", "p")
	if string(model2) != string(model) {
		t.Error("model changed across a restart")
	}
	if b := f.budget(); b.RhoSpent != after.RhoSpent {
		t.Errorf("ρ spent after restart %g, want %g", b.RhoSpent, after.RhoSpent)
	}

	// DROP TABLE drops the records and refunds nothing.
	id, _, _ := f.e.dp.cat.TableID("syn", "p")
	f.exec("DROP TABLE syn.p")
	err = f.e.dp.cat.View(context.Background(), func(tx *catalog.Tx) error {
		_, ok, err := tx.Synthetic(id)
		mb, _ := tx.SyntheticModel(id)
		rb, _ := tx.SyntheticRelease(id)
		if ok || mb != nil || rb != nil {
			t.Errorf("after DROP: record %v, model %d bytes, release %d bytes", ok, len(mb), len(rb))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if b := f.budget(); b.RhoSpent != after.RhoSpent {
		t.Errorf("DROP changed ρ spent: %g, want %g", b.RhoSpent, after.RhoSpent)
	}
	if show := f.rows("SHOW SYNTHETIC TABLES FROM syn"); len(show) != 0 {
		t.Errorf("SHOW SYNTHETIC TABLES after DROP = %v", show)
	}
}

// TestCreateSyntheticSeedGivesFreshNoise: a SEED never reproduces a
// release's noise. The same seeded statement run twice (dropping the
// table between) gives two different models.
func TestCreateSyntheticSeedGivesFreshNoise(t *testing.T) {
	f := newSynthFixture(t)
	create := func() []byte {
		f.exec("CREATE SYNTHETIC TABLE syn.s FROM raw.people USING independent WITH EPSILON = 0.5, SEED = 42, PGM_ITERS = 20")
		_, _, release := f.record("syn", "s")
		f.exec("DROP TABLE syn.s")
		return release
	}
	if a, b := create(), create(); bytes.Equal(a, b) {
		t.Error("the same SEED gave the same noisy measurements twice")
	}
}

// TestReleaseRandomness: the mechanism's noise is fresh whatever the SEED;
// only the post-processing streams follow it.
func TestReleaseRandomness(t *testing.T) {
	f := newSynthFixture(t)
	draw := func(s *noise.Source) uint64 { return s.Uint64() }
	seed := int64(9)
	r := &synthRequest{releaseOptions: releaseOptions{seed: &seed}}
	m1, p1, d1 := f.e.releaseRandomness(r)
	m2, p2, d2 := f.e.releaseRandomness(r)
	if draw(m1) == draw(m2) {
		t.Error("seeded mechanism noise repeated")
	}
	if draw(p1) != draw(p2) || draw(d1) != draw(d2) {
		t.Error("seeded post-processing is not reproducible")
	}
	if draw(p1) == draw(d1) {
		t.Error("sampling and decoding share a stream")
	}
	m3, p3, d3 := f.e.releaseRandomness(&synthRequest{})
	m4, p4, d4 := f.e.releaseRandomness(&synthRequest{})
	if draw(m3) == draw(m4) || draw(p3) == draw(p4) || draw(d3) == draw(d4) {
		t.Error("unseeded streams repeated")
	}
}

// TestCreateSyntheticRunsAtRequestedRho: the ledger charges ρ rounded up
// to its unit, and the mechanism spends the requested ρ, not the rounded
// charge (at ε = 1e-7 the rounding is a factor of about 200).
func TestCreateSyntheticRunsAtRequestedRho(t *testing.T) {
	f := newSynthFixture(t)
	f.exec("CREATE SYNTHETIC TABLE syn.tiny FROM raw.people USING independent WITH EPSILON = 1e-7, PGM_ITERS = 5")
	want, err := budget.RhoFromEpsilonDelta(1e-7, fixtureDelta)
	if err != nil {
		t.Fatal(err)
	}
	rec, _, _ := f.record("syn", "tiny")
	if rec.RhoUsed > want*(1+1e-12) {
		t.Errorf("mechanism spent ρ = %g, requested %g", rec.RhoUsed, want)
	}
	if rec.Rho < want {
		t.Errorf("ledger charged ρ = %g < requested %g", rec.Rho, want)
	}
	last := f.entries()[len(f.entries())-1]
	if last.Epsilon != 1e-7 || last.Delta != fixtureDelta {
		t.Errorf("ledger entry (ε, δ) = (%g, %g), want (1e-7, %g)", last.Epsilon, last.Delta, fixtureDelta)
	}
}

// panicRunner panics in a worker goroutine, as a bug in a mechanism's
// parallel kernel would.
type panicRunner struct{}

func (panicRunner) Run(ctx context.Context, in *synth.Input) (*synth.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	par.For(ctx, 8, 2, func(k int) {
		if k == 5 {
			panic("kernel index out of range")
		}
	})
	return nil, errors.New("unreachable")
}

// TestCreateSyntheticPanicAfterCharge: a panic after the charge, even in a
// helper goroutine, becomes a failed ledger entry (the charge stays spent)
// and an error to the client; the server keeps serving.
func TestCreateSyntheticPanicAfterCharge(t *testing.T) {
	f := newSynthFixture(t)
	stmt, _, _, err := dpparse.Parse("CREATE SYNTHETIC TABLE syn.boom FROM raw.people USING independent WITH EPSILON = 0.5")
	if err != nil {
		t.Fatal(err)
	}
	req, _, err := f.e.validateSynthetic(f.root, stmt.(*dpparse.CreateSynthetic))
	if err != nil {
		t.Fatal(err)
	}
	req.runner = panicRunner{}
	before := f.budget()
	_, err = f.e.runSynthetic(f.root, req)
	if errCode(err) != ErrInternal.Code() || !strings.Contains(err.Error(), "kernel index out of range") || !strings.Contains(err.Error(), "stays spent") {
		t.Fatalf("error %v", err)
	}
	last := f.entries()[len(f.entries())-1]
	if last.Status != budget.StatusFailed {
		t.Errorf("ledger entry %v, want failed", last.Status)
	}
	if b := f.budget(); b.RhoSpent <= before.RhoSpent {
		t.Error("the charge was refunded although the data was read")
	}
	if f.tableExists("syn", "boom") {
		t.Error("a table was created")
	}
	f.exec("CREATE SYNTHETIC TABLE syn.after FROM raw.people USING independent WITH EPSILON = 0.5, PGM_ITERS = 5")
}

func TestCreateSyntheticAnswersOnly(t *testing.T) {
	f := newSynthFixture(t)
	f.exec("CREATE SYNTHETIC TABLE syn.ans FROM raw.people USING gaussian WITH EPSILON = 1 " +
		"WORKLOAD (SELECT sex, COUNT(*) FROM people GROUP BY sex; SELECT age, city, COUNT(*) FROM people GROUP BY age, city WEIGHT 2)")
	// sex: 2 cells; age × city: 10 × 4 (a, b, c, NULL).
	rows := f.rows("SELECT dp_marginal, dp_columns, sex, age, city, dp_noisy_count FROM syn.ans ORDER BY dp_marginal")
	if len(rows) != 2+40 {
		t.Fatalf("%d rows, want 42", len(rows))
	}
	var total float64
	for _, r := range rows[:2] {
		if toInt(r[0]) != 1 || r[1] != "sex" || r[3] != nil || r[4] != nil {
			t.Fatalf("first marginal row %v", r)
		}
		total += r[5].(float64)
	}
	// The noisy total of the sex marginal is near the true count (σ is a
	// few units at ρ≈0.015 over two marginals).
	if math.Abs(total-fixtureRows) > 100 {
		t.Errorf("noisy total %g, true %d", total, fixtureRows)
	}
	for _, r := range rows[2:] {
		if toInt(r[0]) != 2 || r[1] != "age,city" || r[2] != nil {
			t.Fatalf("second marginal row %v", r)
		}
	}
	show := f.rows("SHOW SYNTHETIC TABLES FROM syn")
	if len(show) != 1 || show[0][4] != "answers only" {
		t.Errorf("SHOW SYNTHETIC TABLES = %v", show)
	}
	rec, model, _ := f.record("syn", "ans")
	if model != nil || rec.Rows != 42 {
		t.Errorf("answers-only record: rows %d, model %d bytes", rec.Rows, len(model))
	}
}

// TestCreateSyntheticFailures checks that every failure leaves no table
// and the right ledger state: nothing spent before the reservation.
func TestCreateSyntheticFailures(t *testing.T) {
	f := newSynthFixture(t)
	f.exec("CREATE TABLE syn.taken (x INT)")
	const ok = "CREATE SYNTHETIC TABLE syn.x FROM raw.people USING independent WITH "
	tests := []struct {
		name  string
		query string
		code  int
	}{
		{"unknown option", ok + "EPSILON = 1, FOO = 3", 9112},
		{"option of another mechanism", ok + "EPSILON = 1, MAX_MODEL_SIZE = 3", 9112},
		{"rounds below the 1-way marginals", "CREATE SYNTHETIC TABLE syn.x FROM raw.people USING aim WITH EPSILON = 1, ROUNDS = 2", 9112},
		{"option out of range", "CREATE SYNTHETIC TABLE syn.x FROM raw.people USING aim WITH EPSILON = 1, MAX_MODEL_SIZE = -1", 9112},
		{"missing epsilon", ok + "ROWS = 10", 9112},
		{"epsilon zero", ok + "EPSILON = 0", 9112},
		{"epsilon negative", ok + "EPSILON = -1", 9112},
		{"epsilon not a number", ok + "EPSILON = 'abc'", 9112},
		{"epsilon twice", ok + "EPSILON = 1, epsilon = 2", mysql.ERParseError},
		{"delta zero", ok + "EPSILON = 1, DELTA = 0", 9112},
		{"delta one", ok + "EPSILON = 1, DELTA = 1", 9112},
		{"rows zero", ok + "EPSILON = 1, ROWS = 0", 9112},
		{"rows fractional", ok + "EPSILON = 1, ROWS = 1.5", 9112},
		{"seed fractional", ok + "EPSILON = 1, SEED = 0.5", 9112},
		{"unknown mechanism", "CREATE SYNTHETIC TABLE syn.x FROM raw.people USING magic WITH EPSILON = 1", 9115},
		{"workload aggregate", ok + "EPSILON = 1 WORKLOAD (SELECT AVG(age) FROM people)", 9114},
		{"workload unknown column", ok + "EPSILON = 1 WORKLOAD (SELECT zip, COUNT(*) FROM people GROUP BY zip)", 9114},
		{"workload too wide", ok + "EPSILON = 1 WORKLOAD ALL 4-WAY", 9114},
		{"exhausted", ok + "EPSILON = 1000", 9110},
		{"existing target", "CREATE SYNTHETIC TABLE syn.taken FROM raw.people USING independent WITH EPSILON = 1", mysql.ERTableExists},
		{"missing target database", "CREATE SYNTHETIC TABLE nodb.x FROM raw.people USING independent WITH EPSILON = 1", mysql.ERBadDb},
		{"missing source", "CREATE SYNTHETIC TABLE syn.x FROM raw.nothing USING independent WITH EPSILON = 1", mysql.ERNoSuchTable},
		{"no budget", "CREATE SYNTHETIC TABLE syn.x FROM raw.nobudget USING independent WITH EPSILON = 1", 9111},
		{"delta above the budget's", ok + "EPSILON = 0.1, DELTA = 0.9999999999999999", 9112},
		{"delta slightly above the budget's", ok + "EPSILON = 0.1, DELTA = 0.0000011", 9112},
		// ε → 0 leaves ρ ≈ δ-dependent floor; a tiny δ makes σ > 2⁴⁰.
		{"sigma beyond the sampler", ok + "EPSILON = 1e-200, DELTA = 1e-300", 9112},
		{"gaussian sigma beyond the sampler", "CREATE SYNTHETIC TABLE syn.x FROM raw.people USING gaussian WITH EPSILON = 1e-200, DELTA = 1e-300 WORKLOAD (SELECT sex, COUNT(*) FROM people GROUP BY sex)", 9112},
		{"aim sigma beyond the sampler", "CREATE SYNTHETIC TABLE syn.x FROM raw.people USING aim WITH EPSILON = 1e-200, DELTA = 1e-300", 9112},
		{"aim rounds above the maximum", "CREATE SYNTHETIC TABLE syn.x FROM raw.people USING aim WITH EPSILON = 1, ROUNDS = 1000000000", 9112},
		{"mst sigma beyond the sampler", "CREATE SYNTHETIC TABLE syn.x FROM raw.people USING mst WITH EPSILON = 1e-200, DELTA = 1e-300", 9112},
		{"mwem sigma beyond the sampler", "CREATE SYNTHETIC TABLE syn.x FROM raw.people USING mwem WITH EPSILON = 1e-200, DELTA = 1e-300", 9112},
		{"weights 1e300 and 1e-300", "CREATE SYNTHETIC TABLE syn.x FROM raw.people USING gaussian WITH EPSILON = 1 WORKLOAD (SELECT sex, COUNT(*) FROM people GROUP BY sex WEIGHT 1e300; SELECT age, COUNT(*) FROM people GROUP BY age WEIGHT 1e-300)", 9114},
	}
	before, nEntries := f.budget(), len(f.entries())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := query(f.e, f.root, tt.query)
			if got := errCode(err); got != tt.code {
				t.Fatalf("code %d (%v), want %d", got, err, tt.code)
			}
			if f.tableExists("syn", "x") {
				t.Fatal("a table was created")
			}
			if b, n := f.budget(), len(f.entries()); b.RhoSpent != before.RhoSpent || n != nEntries {
				t.Fatalf("ρ spent %g → %g, entries %d → %d", before.RhoSpent, b.RhoSpent, nEntries, n)
			}
		})
	}
	// IF NOT EXISTS on an existing target succeeds without spending.
	f.exec("CREATE SYNTHETIC TABLE IF NOT EXISTS syn.taken FROM raw.people USING independent WITH EPSILON = 1")
	if b := f.budget(); b.RhoSpent != before.RhoSpent {
		t.Errorf("IF NOT EXISTS spent ρ %g", b.RhoSpent-before.RhoSpent)
	}
}

// cancelOnRound is a process list that cancels the statement when the
// synthesis reports the given round, as KILL QUERY would.
type cancelOnRound struct {
	sql.EmptyProcessList
	round  string
	cancel context.CancelFunc
}

func (c *cancelOnRound) AddTableProgress(_ uint64, name string, _ int64) {
	if strings.Contains(name, c.round) {
		c.cancel()
	}
}

func TestCreateSyntheticCancelled(t *testing.T) {
	f := newSynthFixture(t)
	before := f.budget()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pl := &cancelOnRound{round: "round 2,", cancel: cancel}
	base := sql.NewBaseSessionWithClientServer("", sql.Client{User: RootUser, Address: localhost}, 9)
	sctx := sql.NewContext(ctx, sql.WithSession(f.e.store.NewSession(base)), sql.WithProcessList(pl))
	_, _, err := query(f.e, sctx, "CREATE SYNTHETIC TABLE syn.k FROM raw.people USING aim WITH EPSILON = 1, "+fastAIMOption)
	if got := errCode(err); got != mysql.ERQueryInterrupted {
		t.Fatalf("code %d (%v), want %d", got, err, mysql.ERQueryInterrupted)
	}
	if f.tableExists("syn", "k") {
		t.Fatal("a cancelled synthesis left a table")
	}
	// The data was read: the charge stays spent and the entry says why.
	es := f.entries()
	last := es[len(es)-1]
	if last.Status != budget.StatusFailed || !strings.Contains(last.Note, "cancel") {
		t.Errorf("entry = %+v, want failed and a note about the cancellation", last)
	}
	if spent := f.budget().RhoSpent - before.RhoSpent; spent != last.Rho || spent < wantRho(t, 1) {
		t.Errorf("ρ spent %g, entry %g, want ≥ %g", spent, last.Rho, wantRho(t, 1))
	}

	// Cancelled before the statement starts: nothing is spent.
	before = f.budget()
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	sctx = sql.NewContext(cctx, sql.WithSession(f.e.store.NewSession(base)))
	_, _, err = query(f.e, sctx, "CREATE SYNTHETIC TABLE syn.k FROM raw.people USING aim WITH EPSILON = 1")
	if err == nil {
		t.Fatal("statement on a cancelled context succeeded")
	}
	if b := f.budget(); b.RhoSpent != before.RhoSpent || f.tableExists("syn", "k") {
		t.Errorf("cancelled before start: spent %g, table %v", b.RhoSpent-before.RhoSpent, f.tableExists("syn", "k"))
	}
	if err := f.e.dp.ledger.Check(); err != nil {
		t.Fatal(err)
	}
}

func TestCreateSyntheticAccess(t *testing.T) {
	f := newSynthFixture(t)
	f.exec(
		"CREATE USER analyst IDENTIFIED BY 'pw'",
		"CREATE USER other IDENTIFIED BY 'pw'",
		"CREATE DATABASE mine",
		"CREATE DATABASE pub",
		"GRANT CREATE ON pub.* TO analyst",
		"GRANT SELECT ON pub.* TO other",
	)
	analyst := sessionCtx(f.e, 2, "analyst", localhost)
	other := sessionCtx(f.e, 3, "other", localhost)
	const stmt = " FROM raw.people USING independent WITH EPSILON = 0.5, PGM_ITERS = 10"
	steps := []struct {
		name string
		ctx  *sql.Context
		q    string
		code int
	}{
		// Without SYNTHESIZE the source does not exist for the analyst.
		{"no grant", analyst, "CREATE SYNTHETIC TABLE pub.a" + stmt, mysql.ERNoSuchTable},
		{"grant", f.root, "GRANT SYNTHESIZE ON raw.people TO analyst", 0},
		// The source's database is for its owners only.
		{"source database", analyst, "CREATE SYNTHETIC TABLE raw.a" + stmt, 1142},
		// CREATE on the target database is needed.
		{"no CREATE", analyst, "CREATE SYNTHETIC TABLE mine.a" + stmt, 1142},
		{"allowed", analyst, "CREATE SYNTHETIC TABLE pub.a" + stmt, 0},
		// The creator may read what they made (granted SELECT on the
		// table); the raw source stays closed.
		{"read copy", analyst, "SELECT COUNT(*) FROM pub.a", 0},
		{"read source", analyst, "SELECT COUNT(*) FROM raw.people", mysql.ERUnknownError}, // GMS: 1105
		// The owner may create next to the source.
		{"owner in source database", f.root, "CREATE SYNTHETIC TABLE raw.copy" + stmt, 0},
	}
	var spent float64
	for _, st := range steps {
		before := f.budget().RhoSpent
		_, _, err := query(f.e, st.ctx, st.q)
		if got := errCode(err); got != st.code {
			t.Fatalf("%s: code %d (%v), want %d", st.name, got, err, st.code)
		}
		if d := f.budget().RhoSpent - before; st.code != 0 && d != 0 {
			t.Fatalf("%s: refused but spent ρ %g", st.name, d)
		} else {
			spent += d
		}
	}
	if want := 2 * wantRho(t, 0.5); spent < want || spent > want+1e-9 {
		t.Errorf("ρ spent %g, want two charges of %g", spent, want/2)
	}
	// SHOW SYNTHETIC TABLES lists only what the user may read: the
	// analyst their table, another reader of pub.* the same, root all.
	count := func(ctx *sql.Context) int {
		_, rows, err := query(f.e, ctx, "SHOW SYNTHETIC TABLES")
		if err != nil {
			t.Fatal(err)
		}
		return len(rows)
	}
	if a, o, r := count(analyst), count(other), count(f.root); a != 1 || o != 1 || r != 2 {
		t.Errorf("SHOW SYNTHETIC TABLES rows: analyst %d, other %d, root %d; want 1, 1, 2", a, o, r)
	}
	es := f.entries()
	if u := es[len(es)-2].User; u != "analyst@%" {
		t.Errorf("ledger user %q, want analyst@%%", u)
	}
}

func TestShowMechanisms(t *testing.T) {
	e := newTestEngine(t, newMemStorage(), nil)
	ctx := sessionCtx(e, 1, RootUser, localhost)
	for _, q := range []string{"SHOW MECHANISMS", "CALL dpsql_show_mechanisms()"} {
		_, rows, err := query(e, ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, r := range rows {
			seen[fmt.Sprint(r[0])] = true
			if r[0] == "aim" && r[3] == "MAX_MODEL_SIZE" && (r[4] != "float" || r[5] == "") {
				t.Errorf("aim MAX_MODEL_SIZE row %v", r)
			}
			if r[0] == "gaussian" && r[2] != "answers only" {
				t.Errorf("gaussian output %v", r[2])
			}
		}
		for _, m := range []string{"aim", "mst", "mwem", "independent", "gaussian"} {
			if !seen[m] {
				t.Errorf("%s: %s missing from %v", q, m, seen)
			}
		}
	}
}

// TestErrorTextsSayItOnce: an error names what failed once (no "workload:
// workload:", "budget: … budget:", "aim: … aim:", "dpsql statement: dpsql
// syntax error") and says what to do.
func TestErrorTextsSayItOnce(t *testing.T) {
	f := newSynthFixture(t)
	tests := []struct{ query, want string }{
		{"CREATE SYNTHETIC TABLE syn.x FROM raw.people USING independent WITH EPSILON = 1 WORKLOAD (SELECT zip, COUNT(*) FROM people GROUP BY zip)",
			"workload query 1: unknown column zip"},
		{"CREATE SYNTHETIC TABLE syn.x FROM raw.people USING aim WITH EPSILON = 1, ROUNDS = 2", "ROUNDS = 2 must exceed"},
		{"SET PRIVACY BUDGET FOR raw.people WITH EPSILON = 1", "DELTA is missing"},
		{"SET PRIVACY BUDGET FOR raw.people WITH DELTA = 1e-9", "EPSILON is missing"},
		{"SET PRIVACY BUDGET FOR raw.people WITH EPSILON = 1e6, DELTA = 1e-9", "exceeds the maximum 8192"},
		{"CREATE SYNTHETIC TABLE syn.x FROM raw.people USING independent WITH EPSILON = 1e300", "exceeds the maximum"},
		{"ALTER TABLE raw.people SET DOMAIN age BETWEEN 0 AND 5 BINS 0", "BINS must be a positive integer"},
	}
	for _, tt := range tests {
		_, _, err := query(f.e, f.root, tt.query)
		if err == nil {
			t.Errorf("%s: accepted", tt.query)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, tt.want) {
			t.Errorf("%s: %q, want %q", tt.query, msg, tt.want)
		}
		for _, twice := range []string{"workload: workload", "budget: ", "aim: aim", "dpsql statement", "invalid privacy parameter"} {
			if strings.Contains(msg, twice) {
				t.Errorf("%s: %q says %q", tt.query, msg, twice)
			}
		}
	}
	// Lowering a budget below what was spent says how much was spent.
	f.exec("CREATE SYNTHETIC TABLE syn.y FROM raw.people USING independent WITH EPSILON = 1, PGM_ITERS = 5")
	_, _, err := query(f.e, f.root, "SET PRIVACY BUDGET FOR raw.people WITH EPSILON = 0.0001, DELTA = 1e-9")
	if err == nil || !strings.Contains(err.Error(), "below what was already spent (ρ=") || strings.Contains(err.Error(), "budget: ") {
		t.Errorf("lowering below spent: %v", err)
	}
}

// TestReleaseDropsModel: once the model is encoded nothing holds it while
// the release (its snapshots, a few models' worth at large ε) is encoded
// beside it, so the two are never live together with the encodings.
func TestReleaseDropsModel(t *testing.T) {
	f := newSynthFixture(t)
	freed := make(chan struct{})
	testRunResult = func(out *synth.Result) {
		if out.Model == nil {
			t.Error("aim returned no model")
			return
		}
		runtime.AddCleanup(out.Model, func(ch chan struct{}) { close(ch) }, freed)
	}
	checked, held := false, false
	testEncodingRelease = func() {
		checked = true
		held = !gctest.Collected(freed)
	}
	defer func() { testRunResult, testEncodingRelease = nil, nil }()
	f.exec("CREATE SYNTHETIC TABLE syn.p FROM raw.people USING aim WITH EPSILON = 1, ROWS = 300, SEED = 5, " + fastAIMOption)
	if !checked {
		t.Fatal("the release was not encoded")
	}
	if held {
		t.Error("the model was still reachable when the release was encoded")
	}
}

// TestLargeReleaseStaged: a model of megabytes is written as a blob ahead
// of the table's transaction (catalog.StageBlob), so that its
// commit does not copy them; they read back whole after a restart, and
// dropping the table deletes them.
func TestLargeReleaseStaged(t *testing.T) {
	f := newSynthFixture(t)
	f.exec("CREATE TABLE raw.wide (a INT NOT NULL CHECK (a BETWEEN 0 AND 599), b INT NOT NULL CHECK (b BETWEEN 0 AND 599))")
	rng := rand.New(rand.NewPCG(5, 6))
	var vals []string
	for range 300 {
		a := rng.IntN(600)
		vals = append(vals, fmt.Sprintf("(%d, %d)", a, (a+rng.IntN(20))%600))
	}
	f.exec("INSERT INTO raw.wide (a, b) VALUES "+strings.Join(vals, ","),
		"SET PRIVACY BUDGET FOR raw.wide WITH EPSILON = 10, DELTA = 1e-6",
		"CREATE SYNTHETIC TABLE syn.wide FROM raw.wide USING mst WITH EPSILON = 1, ROWS = 100")
	id, _, _ := f.e.dp.cat.TableID("syn", "wide")
	stored := func() (model, release []byte) {
		t.Helper()
		err := f.e.dp.cat.View(context.Background(), func(tx *catalog.Tx) error {
			var err error
			key := binary.BigEndian.AppendUint64(nil, id)
			if model, err = tx.Get(catalog.BucketSyntheticModel, key); err != nil {
				return err
			}
			release, err = tx.Get(catalog.BucketSyntheticRelease, key)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return model, release
	}
	// MST's release (its noisy marginals, compacted) is small: it stays
	// inline.
	if m, r := stored(); !catalog.IsBlobRef(m) || catalog.IsBlobRef(r) {
		t.Fatalf("model stored as %d bytes (a reference: %v), release as %d bytes (a reference: %v); want the model staged, the release inline",
			len(m), catalog.IsBlobRef(m), len(r), catalog.IsBlobRef(r))
	}
	f.restart()
	_, model, release := f.record("syn", "wide")
	m, err := pgm.UnmarshalModel(model)
	if err != nil {
		t.Fatal(err)
	}
	if m.Size() < 2 {
		t.Fatalf("model of %.2f MB, want one of megabytes", m.Size())
	}
	if _, err := synth.UnmarshalRelease(release); err != nil {
		t.Fatal(err)
	}
	if _, rows, err := query(f.e, f.root, "SELECT COUNT(*) FROM syn.wide"); err != nil || fmt.Sprint(rows) != "[[100]]" {
		t.Fatalf("SELECT COUNT(*): %v, %v", rows, err)
	}
	f.exec("DROP TABLE syn.wide")
	err = f.e.dp.cat.View(context.Background(), func(tx *catalog.Tx) error {
		return tx.ForEach(catalog.BucketBlob, func(k, _ []byte) error {
			return fmt.Errorf("chunk %x left after the table was dropped", k)
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestStagedReleaseDropped: when the table cannot be created after its
// model was staged (here another statement created the target while the
// release was encoded), the staged chunks are deleted, the statement fails
// and its charge stays spent.
func TestStagedReleaseDropped(t *testing.T) {
	f := newSynthFixture(t)
	f.exec("CREATE TABLE raw.wide (a INT NOT NULL CHECK (a BETWEEN 0 AND 599), b INT NOT NULL CHECK (b BETWEEN 0 AND 599))",
		"INSERT INTO raw.wide (a, b) VALUES (1, 2), (3, 4), (5, 6)",
		"SET PRIVACY BUDGET FOR raw.wide WITH EPSILON = 10, DELTA = 1e-6")
	chunks := func() int {
		t.Helper()
		n := 0
		err := f.e.dp.cat.View(context.Background(), func(tx *catalog.Tx) error {
			return tx.Bolt().ForEach(func(name []byte, b *bbolt.Bucket) error {
				if string(name) == "meta_"+catalog.BucketBlob {
					n = b.Stats().KeyN
				}
				return nil
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	staged := -1
	testEncodingRelease = func() {
		staged = chunks()
		sch := sql.NewPrimaryKeySchema(sql.Schema{{Name: "x", Type: types.Int64}})
		if err := f.e.dp.cat.Update(context.Background(), func(tx *catalog.Tx) error {
			_, err := tx.CreateTable("syn", "wide", sch, sql.Collation_Default, "")
			return err
		}); err != nil {
			t.Error(err)
		}
	}
	defer func() { testEncodingRelease = nil }()
	_, _, err := query(f.e, f.root, "CREATE SYNTHETIC TABLE syn.wide FROM raw.wide USING mst WITH EPSILON = 1, ROWS = 10")
	if err == nil || !strings.Contains(err.Error(), "created by another statement") {
		t.Fatalf("CREATE SYNTHETIC TABLE: %v, want the target-exists error", err)
	}
	if staged <= 0 {
		t.Fatalf("%d chunks staged when the release was encoded, want the model's", staged)
	}
	if n := chunks(); n != 0 {
		t.Fatalf("%d chunks left after the statement failed", n)
	}
	_, rows, err := query(f.e, f.root, "SHOW PRIVACY LEDGER FOR raw.wide")
	if err != nil || len(rows) != 2 || !strings.Contains(fmt.Sprint(rows[1]), "budget stays spent") {
		t.Fatalf("ledger: %v, %v; want the budget and a failed entry whose charge stays spent", rows, err)
	}
}
