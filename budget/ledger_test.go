package budget

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// openDB opens (or reopens) the bbolt file at path.
func openDB(t *testing.T, path string) *bbolt.DB {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// mustOpen opens a strict-mode ledger on the bbolt file at path and
// registers a cleanup that checks the ledger's invariants and closes it.
func mustOpen(t *testing.T, path string) (*bbolt.DB, *Ledger) {
	t.Helper()
	db := openDB(t, path)
	l, err := OpenLedgerOptions(db, &Options{StrictMode: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Check(); err != nil && !errors.Is(err, bolterrors.ErrDatabaseNotOpen) {
			t.Errorf("ledger check: %v", err)
		}
		db.Close()
	})
	return db, l
}

func tempPath(t *testing.T) string { return filepath.Join(t.TempDir(), "dpsql.db") }

func mustSet(t *testing.T, l *Ledger, table string, eps, delta float64) BudgetInfo {
	t.Helper()
	bi, err := l.SetBudget(context.Background(), table, "name of "+table, "owner", "SET PRIVACY BUDGET", eps, delta)
	if err != nil {
		t.Fatal(err)
	}
	return bi
}

func mustReserve(t *testing.T, l *Ledger, table, user string, rho float64) *Reservation {
	t.Helper()
	r, err := l.Reserve(context.Background(), table, Charge{User: user, Statement: "SELECT SYNTHETIC", Mechanism: "aim", Rho: rho})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func mustBudget(t *testing.T, l *Ledger, table string) BudgetInfo {
	t.Helper()
	bi, err := l.Budget(table)
	if err != nil {
		t.Fatal(err)
	}
	return bi
}

func TestSetBudget(t *testing.T) {
	_, l := mustOpen(t, tempPath(t))
	for _, tc := range []struct{ eps, delta float64 }{{1, 1e-9}, {0.1, 1e-6}, {10, 1e-12}} {
		bi := mustSet(t, l, "t#1", tc.eps, tc.delta)
		rho, _ := RhoFromEpsilonDelta(tc.eps, tc.delta)
		down, _ := floorUnits(rho)
		if bi.RhoTotal != down.rho() || bi.RhoTotal > rho || rho-bi.RhoTotal >= 1.0/(1<<unitShift) {
			t.Errorf("(%v, %v): RhoTotal = %v, want ρ=%v rounded down to a unit", tc.eps, tc.delta, bi.RhoTotal, rho)
		}
		if bi.EpsilonTotal != tc.eps || bi.Delta != tc.delta || bi.RhoSpent != 0 || bi.RhoRemaining != bi.RhoTotal {
			t.Errorf("(%v, %v): %+v", tc.eps, tc.delta, bi)
		}
		if bi.EpsilonSpent != 0 || bi.EpsilonRemaining > tc.eps || relErr(bi.EpsilonRemaining, tc.eps) > 1e-6 {
			t.Errorf("(%v, %v): ε spent %v, remaining %v", tc.eps, tc.delta, bi.EpsilonSpent, bi.EpsilonRemaining)
		}
		if got := mustBudget(t, l, "t#1"); got != bi {
			t.Errorf("Budget = %+v, SetBudget returned %+v", got, bi)
		}
	}
	entries, err := l.Entries("t#1", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 3 {
		t.Fatalf("%d entries after 3 budget changes", len(entries))
	}
	for i, e := range entries {
		if e.Status != StatusBudgetSet || e.ID != uint64(i+1) || e.User != "owner" || e.Rho != 0 {
			t.Errorf("entry %d: %+v", i, e)
		}
	}
}

func TestReserveLifecycle(t *testing.T) {
	tests := []struct {
		name      string
		close     func(r *Reservation) error
		status    Status
		spent     bool
		notePrefx string
	}{
		{"commit", func(r *Reservation) error { return r.Commit("released 1000 rows") }, StatusCommitted, true, "released 1000 rows"},
		{"fail before data", func(r *Reservation) error { return r.Fail(false, "bad option") }, StatusRefunded, false, noteRefunded + ": bad option"},
		{"fail after data", func(r *Reservation) error { return r.Fail(true, "out of memory") }, StatusFailed, true, noteFailed + ": out of memory"},
		{"left open", func(r *Reservation) error { return nil }, StatusReserved, true, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, l := mustOpen(t, tempPath(t))
			mustSet(t, l, "t", 1, 1e-9)
			r := mustReserve(t, l, "t", "ann", 0.004)
			if got := mustBudget(t, l, "t").RhoSpent; got != r.Rho() || r.Rho() < 0.004 {
				t.Fatalf("spent %v after reserving %v (charged %v)", got, 0.004, r.Rho())
			}
			if err := tc.close(r); err != nil {
				t.Fatal(err)
			}
			bi := mustBudget(t, l, "t")
			want := 0.0
			if tc.spent {
				want = r.Rho()
			}
			if bi.RhoSpent != want || bi.RhoRemaining != bi.RhoTotal-want {
				t.Errorf("spent %v remaining %v, want spent %v of %v", bi.RhoSpent, bi.RhoRemaining, want, bi.RhoTotal)
			}
			entries, err := l.Entries("t", "ann")
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != 1 {
				t.Fatalf("%d entries for ann, want 1", len(entries))
			}
			e := entries[0]
			if e.Status != tc.status || e.Note != tc.notePrefx || e.Rho != r.Rho() || e.ID != r.ID() ||
				e.Mechanism != "aim" || e.Statement != "SELECT SYNTHETIC" {
				t.Errorf("entry %+v", e)
			}
			if tc.status == StatusReserved {
				return
			}
			// A reservation closes once.
			for _, again := range []func() error{
				func() error { return r.Commit("") },
				func() error { return r.Fail(false, "") },
			} {
				if err := again(); !errors.Is(err, ErrReservationClosed) {
					t.Errorf("second close: %v, want ErrReservationClosed", err)
				}
			}
			if got := mustBudget(t, l, "t"); got != bi {
				t.Errorf("second close changed the budget: %+v → %+v", bi, got)
			}
		})
	}
}

// TestReserveExhausted fills a budget exactly and checks the refusal that
// follows.
func TestReserveExhausted(t *testing.T) {
	_, l := mustOpen(t, tempPath(t))
	bi := mustSet(t, l, "adult#17", 1, 1e-9)
	half := math.Ldexp(math.Floor(math.Ldexp(bi.RhoTotal, unitShift)/2), -unitShift)
	mustReserve(t, l, "adult#17", "ann", half).Commit("")
	rest := bi.RhoTotal - half
	_, err := l.Reserve(context.Background(), "adult#17", Charge{User: "bob", Statement: "q", Mechanism: "aim", Rho: rest + 1e-9})
	var ex *ExhaustedError
	if !errors.As(err, &ex) || !errors.Is(err, ErrBudgetExhausted) {
		t.Fatalf("over-budget reserve: %v, want *ExhaustedError", err)
	}
	if ex.Table != "adult#17" || ex.Name != "name of adult#17" || ex.Remaining != rest || ex.Requested < rest+1e-9 || ex.Delta != 1e-9 {
		t.Errorf("ExhaustedError %+v", ex)
	}
	wantEps, _ := EpsilonFromRhoDelta(rest, 1e-9)
	if ex.RemainingEpsilon != wantEps || !(ex.RequestedEpsilon > ex.RemainingEpsilon) {
		t.Errorf("ExhaustedError ε figures %+v", ex)
	}
	if got := mustBudget(t, l, "adult#17"); got.RhoSpent != half {
		t.Errorf("refused request changed spent: %v", got.RhoSpent)
	}
	// The exact remainder still fits, and then nothing does.
	mustReserve(t, l, "adult#17", "bob", rest).Commit("")
	if bi := mustBudget(t, l, "adult#17"); bi.RhoRemaining != 0 || bi.RhoSpent != bi.RhoTotal {
		t.Errorf("after spending everything: %+v", bi)
	}
	if _, err := l.Reserve(context.Background(), "adult#17", Charge{User: "bob", Statement: "q", Mechanism: "aim", Rho: 1e-15}); !errors.Is(err, ErrBudgetExhausted) {
		t.Errorf("reserve on an empty budget: %v", err)
	}
	if entries, _ := l.Entries("adult#17", ""); len(entries) != 3 {
		t.Errorf("refused requests must not append entries: %d entries", len(entries))
	}
}

func TestNoBudget(t *testing.T) {
	_, l := mustOpen(t, tempPath(t))
	mustSet(t, l, "other", 1, 1e-9)
	if _, err := l.Reserve(context.Background(), "t", Charge{User: "ann", Statement: "q", Mechanism: "aim", Rho: 0.1}); !errors.Is(err, ErrNoBudget) {
		t.Errorf("Reserve: %v, want ErrNoBudget", err)
	}
	if _, err := l.Budget("t"); !errors.Is(err, ErrNoBudget) {
		t.Errorf("Budget: %v, want ErrNoBudget", err)
	}
	if _, err := l.Entries("t", ""); !errors.Is(err, ErrNoBudget) {
		t.Errorf("Entries: %v, want ErrNoBudget", err)
	}
}

func TestInvalidRequests(t *testing.T) {
	_, l := mustOpen(t, tempPath(t))
	mustSet(t, l, "t", 1, 1e-9)
	ctx := context.Background()
	for _, rho := range []float64{0, -1, math.NaN(), math.Inf(1), 2 * MaxRho} {
		if _, err := l.Reserve(ctx, "t", Charge{User: "ann", Statement: "q", Mechanism: "aim", Rho: rho}); !errors.Is(err, ErrInvalidParameter) {
			t.Errorf("Reserve(ρ=%v): %v, want ErrInvalidParameter", rho, err)
		}
	}
	for _, tc := range []struct {
		table      string
		eps, delta float64
	}{{"t", 0, 1e-9}, {"t", 1, 0}, {"t", 1, 1}, {"t", math.NaN(), 1e-9}, {"", 1, 1e-9}, {"t", 1e6, 1e-9}} {
		if _, err := l.SetBudget(ctx, tc.table, "n", "owner", "s", tc.eps, tc.delta); !errors.Is(err, ErrInvalidParameter) {
			t.Errorf("SetBudget(%q, %v, %v): %v, want ErrInvalidParameter", tc.table, tc.eps, tc.delta, err)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := l.Reserve(cancelled, "t", Charge{User: "ann", Statement: "q", Mechanism: "aim", Rho: 0.1}); !errors.Is(err, context.Canceled) {
		t.Errorf("Reserve with a cancelled context: %v", err)
	}
	if bi := mustBudget(t, l, "t"); bi.RhoSpent != 0 {
		t.Errorf("rejected requests spent %v", bi.RhoSpent)
	}
}

func TestSetBudgetNeverBelowSpent(t *testing.T) {
	_, l := mustOpen(t, tempPath(t))
	mustSet(t, l, "t", 1, 1e-9)
	r := mustReserve(t, l, "t", "ann", 0.001)
	r.Commit("")
	before := mustBudget(t, l, "t")
	if _, err := l.SetBudget(context.Background(), "t", "t", "owner", "s", 0.1, 1e-9); !errors.Is(err, ErrBelowSpent) {
		t.Fatalf("lowering below spent: %v, want ErrBelowSpent", err)
	}
	if got := mustBudget(t, l, "t"); got != before {
		t.Errorf("refused change altered the budget: %+v → %+v", before, got)
	}
	// Lowering to a total still above spent is allowed, and so is raising.
	if bi := mustSet(t, l, "t", 0.5, 1e-9); bi.RhoSpent != r.Rho() {
		t.Errorf("lowering lost the spent figure: %+v", bi)
	}
	if bi := mustSet(t, l, "t", 2, 1e-9); bi.RhoSpent != r.Rho() || bi.RhoTotal <= before.RhoTotal {
		t.Errorf("raising: %+v", bi)
	}
	entries, _ := l.Entries("t", "owner")
	if len(entries) != 3 {
		t.Errorf("%d budget entries, want 3 (the refused change is not recorded)", len(entries))
	}
}

func TestEntriesFilter(t *testing.T) {
	now := time.Date(2026, 5, 22, 9, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Second)
		return now
	}
	db := openDB(t, tempPath(t))
	defer db.Close()
	l, err := OpenLedgerOptions(db, &Options{Now: clock, StrictMode: true})
	if err != nil {
		t.Fatal(err)
	}
	mustSet(t, l, "b", 1, 1e-9)
	mustSet(t, l, "a", 1, 1e-9)
	mustReserve(t, l, "a", "ann", 0.001)
	mustReserve(t, l, "b", "bob", 0.001)
	mustReserve(t, l, "a", "bob", 0.001)

	var got []string
	all, err := l.Entries("", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range all {
		got = append(got, fmt.Sprintf("%s/%d/%s", e.Table, e.ID, e.User))
	}
	if want := []string{"a/1/owner", "a/2/ann", "a/3/bob", "b/1/owner", "b/2/bob"}; !reflect.DeepEqual(got, want) {
		t.Errorf("all entries %v, want %v", got, want)
	}
	bob, _ := l.Entries("", "bob")
	if len(bob) != 2 || bob[0].Table != "a" || bob[1].Table != "b" {
		t.Errorf("bob's entries %+v", bob)
	}
	if e := all[2]; !e.Time.Equal(time.Date(2026, 5, 22, 9, 0, 5, 0, time.UTC)) || !e.Updated.Equal(e.Time) {
		t.Errorf("entry time %v/%v from the injected clock", e.Time, e.Updated)
	}
	budgets, err := l.Budgets()
	if err != nil {
		t.Fatal(err)
	}
	if len(budgets) != 2 || budgets[0].Table != "a" || budgets[1].Table != "b" {
		t.Errorf("Budgets %+v", budgets)
	}
	if err := l.Check(); err != nil {
		t.Error(err)
	}
}

// snapshot returns everything SHOW can see.
func snapshot(t *testing.T, l *Ledger) ([]BudgetInfo, []Entry) {
	t.Helper()
	b, err := l.Budgets()
	if err != nil {
		t.Fatal(err)
	}
	e, err := l.Entries("", "")
	if err != nil {
		t.Fatal(err)
	}
	return b, e
}

// TestConcurrentReserve races 200 requests for a budget that fits exactly 50.
func TestConcurrentReserve(t *testing.T) {
	path := tempPath(t)
	db, l := mustOpen(t, path)
	bi := mustSet(t, l, "census.adult#17", 1, 1e-9)
	total, _ := floorUnits(bi.RhoTotal)
	cost := (total / 50).rho() // 50 fit; 51 do not, as total mod 50 < total/50

	const n = 200
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		ok, full int
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := l.Reserve(context.Background(), "census.adult#17", Charge{User: fmt.Sprint("user", i%7), Statement: "q", Mechanism: "aim", Rho: cost})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
				if err := r.Commit("done"); err != nil {
					t.Error(err)
				}
			case errors.Is(err, ErrBudgetExhausted):
				full++
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if ok != 50 || full != n-50 {
		t.Fatalf("%d reservations succeeded and %d were refused; want 50 and %d", ok, full, n-50)
	}
	bi = mustBudget(t, l, "census.adult#17")
	if bi.RhoSpent != 50*cost || bi.RhoSpent > bi.RhoTotal {
		t.Errorf("spent %v of %v, want %v", bi.RhoSpent, bi.RhoTotal, 50*cost)
	}
	if err := l.Check(); err != nil {
		t.Fatal(err)
	}
	budgets, entries := snapshot(t, l)
	if len(entries) != 51 {
		t.Errorf("%d entries, want 1 budget + 50 charges", len(entries))
	}

	db.Close()
	_, l2 := mustOpen(t, path)
	if err := l2.Check(); err != nil {
		t.Fatal(err)
	}
	budgets2, entries2 := snapshot(t, l2)
	if !reflect.DeepEqual(budgets, budgets2) || !reflect.DeepEqual(entries, entries2) {
		t.Error("the ledger differs after closing and reopening the file")
	}
}

// TestCrashBeforeCommit closes the database between Reserve and Commit: the
// charge must stay spent.
func TestCrashBeforeCommit(t *testing.T) {
	path := tempPath(t)
	db, l := mustOpen(t, path)
	mustSet(t, l, "t", 1, 1e-9)
	r := mustReserve(t, l, "t", "ann", 0.003)
	db.Close()
	if err := r.Commit("too late"); err == nil {
		t.Error("Commit on a closed database succeeded")
	}

	_, l2 := mustOpen(t, path)
	bi := mustBudget(t, l2, "t")
	if bi.RhoSpent != r.Rho() {
		t.Errorf("spent %v after a crash, want the reserved %v", bi.RhoSpent, r.Rho())
	}
	entries, _ := l2.Entries("t", "ann")
	if len(entries) != 1 || entries[0].Status != StatusReserved {
		t.Errorf("entries after crash %+v", entries)
	}
}

// crashEnv names the database a re-executed test binary reserves on before
// exiting without closing anything.
const crashEnv = "DPSQL_BUDGET_CRASH_DB"

// TestCrashProcess kills a process right after Reserve returns: no Commit,
// no Close, no deferred code. The reopened ledger counts the charge.
func TestCrashProcess(t *testing.T) {
	if path := os.Getenv(crashEnv); path != "" {
		db, err := bbolt.Open(path, 0o600, nil)
		if err != nil {
			os.Exit(2)
		}
		l, err := OpenLedger(db)
		if err != nil {
			os.Exit(2)
		}
		if _, err := l.Reserve(context.Background(), "t", Charge{User: "ann", Statement: "q", Mechanism: "aim", Rho: 0.002}); err != nil {
			os.Exit(2)
		}
		os.Exit(3) // crash
	}

	path := tempPath(t)
	db, l := mustOpen(t, path)
	mustSet(t, l, "t", 1, 1e-9)
	db.Close()

	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashProcess$")
	cmd.Env = append(os.Environ(), crashEnv+"="+path)
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Fatalf("crashing child: %v", err)
	}

	_, l2 := mustOpen(t, path)
	cost, _ := ceilUnits(0.002)
	if bi := mustBudget(t, l2, "t"); bi.RhoSpent != cost.rho() {
		t.Errorf("spent %v after the crash, want %v", bi.RhoSpent, cost.rho())
	}
}

// TestLedgerModel runs random operations and compares the ledger with an
// in-memory model in exact units after every step.
func TestLedgerModel(t *testing.T) {
	path := tempPath(t)
	db, l := mustOpen(t, path)
	r := rand.New(rand.NewPCG(7, 8))
	type model struct{ total, spent units }
	tables := []string{"a#1", "b#2", "c#3"}
	m := make(map[string]*model)
	var open []*Reservation
	ctx := context.Background()
	for step := range 400 {
		table := tables[r.IntN(len(tables))]
		switch op := r.IntN(10); {
		case op == 0 || m[table] == nil:
			eps := 0.05 + 2*r.Float64()
			bi, err := l.SetBudget(ctx, table, table, "owner", "s", eps, 1e-9)
			if mt := m[table]; err != nil {
				if !errors.Is(err, ErrBelowSpent) || mt == nil {
					t.Fatalf("step %d: SetBudget: %v", step, err)
				}
				continue
			}
			total, _ := floorUnits(bi.RhoTotal)
			if m[table] == nil {
				m[table] = &model{}
			}
			m[table].total = total
		case op <= 5:
			rho := math.Ldexp(r.Float64(), -r.IntN(12))
			res, err := l.Reserve(ctx, table, Charge{User: "u", Statement: "q", Mechanism: "aim", Rho: rho})
			cost, _ := ceilUnits(rho)
			mt := m[table]
			if fits := cost <= mt.total-mt.spent; fits != (err == nil) {
				t.Fatalf("step %d: reserve %d units with %d of %d spent: %v", step, cost, mt.spent, mt.total, err)
			}
			if err == nil {
				mt.spent += cost
				open = append(open, res)
			}
		case len(open) > 0:
			i := r.IntN(len(open))
			res := open[i]
			open = append(open[:i], open[i+1:]...)
			cost, _ := ceilUnits(res.Rho())
			var err error
			switch r.IntN(3) {
			case 0:
				err = res.Commit("")
			case 1:
				err = res.Fail(true, "")
			case 2:
				err = res.Fail(false, "")
				m[res.Table()].spent -= cost
			}
			if err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
		}
		for name, mt := range m {
			bi := mustBudget(t, l, name)
			if bi.RhoTotal != mt.total.rho() || bi.RhoSpent != mt.spent.rho() {
				t.Fatalf("step %d: %s is %v/%v, model %v/%v", step, name, bi.RhoSpent, bi.RhoTotal, mt.spent.rho(), mt.total.rho())
			}
		}
	}
	b1, e1 := snapshot(t, l)
	db.Close()
	_, l2 := mustOpen(t, path)
	if b2, e2 := snapshot(t, l2); !reflect.DeepEqual(b1, b2) || !reflect.DeepEqual(e1, e2) {
		t.Error("the ledger differs after reopening")
	}
}

func TestOpenLedgerRefuses(t *testing.T) {
	t.Run("NoSync", func(t *testing.T) {
		db := openDB(t, tempPath(t))
		defer db.Close()
		db.NoSync = true
		if _, err := OpenLedger(db); err == nil {
			t.Error("OpenLedger accepted a NoSync database")
		}
	})
	t.Run("version", func(t *testing.T) {
		db := openDB(t, tempPath(t))
		defer db.Close()
		if _, err := OpenLedger(db); err != nil {
			t.Fatal(err)
		}
		db.Update(func(tx *bbolt.Tx) error { return tx.Bucket(metaBucket).Put(formatKey, []byte("99")) })
		if _, err := OpenLedger(db); !errors.Is(err, ErrVersion) {
			t.Errorf("OpenLedger on format 99: %v, want ErrVersion", err)
		}
	})
}

// TestCheckDetectsCorruption damages a valid ledger in several ways and
// expects Check to report each one; strict mode must refuse writes on top.
func TestCheckDetectsCorruption(t *testing.T) {
	editTable := func(f func(*tableRecord)) func(tx *bbolt.Tx) error {
		return func(tx *bbolt.Tx) error {
			rec, _, err := getTable(tx, "t")
			if err != nil {
				return err
			}
			f(&rec)
			return putTable(tx, "t", &rec)
		}
	}
	editEntry := func(id uint64, f func(*entryRecord)) func(tx *bbolt.Tx) error {
		return func(tx *bbolt.Tx) error {
			e, err := getEntry(tx, "t", id)
			if err != nil {
				return err
			}
			f(&e)
			return putEntry(tx, "t", id, &e)
		}
	}
	tests := []struct {
		name   string
		damage func(tx *bbolt.Tx) error
	}{
		{"spent lowered", editTable(func(r *tableRecord) { r.Spent-- })},
		{"spent above total", editTable(func(r *tableRecord) { r.Spent = r.Total + 1 })},
		{"total raised silently", editTable(func(r *tableRecord) { r.Total++ })},
		{"entry refunded silently", editEntry(2, func(e *entryRecord) { e.Status = StatusRefunded })},
		{"entry shrunk", editEntry(2, func(e *entryRecord) { e.Rho-- })},
		{"bad status", editEntry(2, func(e *entryRecord) { e.Status = 0 })},
		{"entry deleted", func(tx *bbolt.Tx) error {
			return tx.Bucket(entriesBucket).Bucket([]byte("t")).Delete(entryKey(3))
		}},
		{"ledger deleted", func(tx *bbolt.Tx) error { return tx.Bucket(entriesBucket).DeleteBucket([]byte("t")) }},
		{"orphan ledger", func(tx *bbolt.Tx) error { return tx.Bucket(tablesBucket).Delete([]byte("t")) }},
		{"garbage record", func(tx *bbolt.Tx) error { return tx.Bucket(tablesBucket).Put([]byte("t"), []byte("{")) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t, tempPath(t))
			defer db.Close()
			l, err := OpenLedgerOptions(db, &Options{StrictMode: true})
			if err != nil {
				t.Fatal(err)
			}
			mustSet(t, l, "t", 1, 1e-9)
			mustReserve(t, l, "t", "ann", 0.004).Commit("")
			mustReserve(t, l, "t", "ann", 0.002)
			if err := l.Check(); err != nil {
				t.Fatalf("before damage: %v", err)
			}
			if err := db.Update(tc.damage); err != nil {
				t.Fatal(err)
			}
			if err := l.Check(); !errors.Is(err, ErrCorrupt) {
				t.Errorf("Check: %v, want ErrCorrupt", err)
			}
			if _, err := l.SetBudget(context.Background(), "u", "u", "owner", "s", 1, 1e-9); err == nil {
				t.Error("strict mode accepted a write on a corrupt ledger")
			}
		})
	}
}

func TestExhaustedErrorMessage(t *testing.T) {
	e := &ExhaustedError{Table: "t#1", Name: "adult", Requested: 0.5, Remaining: 0.25, Delta: 1e-9, RequestedEpsilon: 4.1, RemainingEpsilon: 2.9}
	msg := e.Error()
	// The message must state the cost and the remainder in ρ and ε.
	for _, want := range []string{"adult", "ρ=0.5", "ε=4.1", "ρ=0.25", "ε=2.9"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
}

// TestStoredFormat pins the JSON field names of the stored records, which
// are part of the on-disk format.
func TestStoredFormat(t *testing.T) {
	b, err := json.Marshal(tableRecord{Name: "n", Epsilon: 1, Delta: 1e-9, Total: 3, Spent: 2})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	for _, k := range []string{"name", "epsilon", "delta", "rho_total_units", "rho_spent_units"} {
		if _, ok := m[k]; !ok {
			t.Errorf("table record lacks %q: %s", k, b)
		}
	}
}

// TestCrashAfterDebit panics in the AfterReserve failpoint, as a crash right
// after the debit commits would, and checks the charge is durable.
func TestCrashAfterDebit(t *testing.T) {
	path := tempPath(t)
	db := openDB(t, path)
	l, err := OpenLedgerOptions(db, &Options{
		StrictMode:   true,
		AfterReserve: func(table string, id uint64) { panic("crash after debit") },
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.SetBudget(context.Background(), "t", "t", "owner", "s", 1, 1e-9); err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the failpoint did not fire")
			}
		}()
		l.Reserve(context.Background(), "t", Charge{User: "ann", Statement: "q", Mechanism: "aim", Rho: 0.005})
	}()
	db.Close()

	_, l2 := mustOpen(t, path)
	cost, _ := ceilUnits(0.005)
	if bi := mustBudget(t, l2, "t"); bi.RhoSpent != cost.rho() {
		t.Errorf("spent %v after the crash, want %v", bi.RhoSpent, cost.rho())
	}
}

func TestSetName(t *testing.T) {
	_, l := mustOpen(t, tempPath(t))
	mustSet(t, l, "t#9", 1, 1e-9)
	mustReserve(t, l, "t#9", "ann", 0.001)
	before := mustBudget(t, l, "t#9")
	if err := l.SetName(context.Background(), "t#9", "renamed"); err != nil {
		t.Fatal(err)
	}
	after := mustBudget(t, l, "t#9")
	before.Name = "renamed"
	if after != before {
		t.Errorf("rename changed more than the name: %+v → %+v", before, after)
	}
	if err := l.SetName(context.Background(), "nope", "x"); !errors.Is(err, ErrNoBudget) {
		t.Errorf("SetName on an unknown table: %v, want ErrNoBudget", err)
	}
}

func BenchmarkReserveCommit(b *testing.B) {
	db, err := bbolt.Open(filepath.Join(b.TempDir(), "b.db"), 0o600, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	l, err := OpenLedger(db)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := l.SetBudget(ctx, "t", "t", "owner", "s", 5000, 1e-9); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		r, err := l.Reserve(ctx, "t", Charge{User: "ann", Statement: "q", Mechanism: "aim", Rho: 1e-9})
		if err != nil {
			b.Fatal(err)
		}
		if err := r.Commit(""); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRemainingIsSpendable: what SHOW PRIVACY BUDGET displays as remaining
// can be spent exactly, to the last unit, and never more.
func TestRemainingIsSpendable(t *testing.T) {
	_, l := mustOpen(t, tempPath(t))
	ctx := context.Background()
	info, err := l.SetBudget(ctx, "t", "d.t", "ann", "set", 5, 1e-9)
	if err != nil {
		t.Fatal(err)
	}
	if info.EpsilonRemaining != 5 {
		t.Fatalf("ε remaining right after SET is %v, want 5", info.EpsilonRemaining)
	}
	// Spend a part, then exactly the ε displayed as remaining.
	half, _ := RhoFromEpsilonDelta(1, 1e-9)
	if _, err := l.Reserve(ctx, "t", Charge{User: "ann", Rho: half}); err != nil {
		t.Fatal(err)
	}
	info, _ = l.Budget("t")
	rest, err := RhoFromEpsilonDelta(info.EpsilonRemaining, 1e-9)
	if err != nil {
		t.Fatal(err)
	}
	// A hair more than remains is still refused.
	if _, err := l.Reserve(ctx, "t", Charge{User: "ann", Rho: info.RhoRemaining * (1 + 1e-6)}); !errors.Is(err, ErrBudgetExhausted) {
		t.Fatalf("overspend: %v", err)
	}
	r, err := l.Reserve(ctx, "t", Charge{User: "ann", Rho: rest})
	if err != nil {
		t.Fatalf("spending the displayed ε remaining %v: %v", info.EpsilonRemaining, err)
	}
	if r.Rho() != info.RhoRemaining || r.Rho() > rest {
		t.Errorf("charged ρ = %v for a request of %v with %v remaining", r.Rho(), rest, info.RhoRemaining)
	}
	if info, _ = l.Budget("t"); info.RhoRemaining != 0 || info.RhoSpent != info.RhoTotal {
		t.Errorf("after spending what remained: %+v", info)
	}
	// The whole budget of a fresh table, at its own ε, is spendable too.
	if _, err := l.SetBudget(ctx, "u", "d.u", "ann", "set", 0.3, 1e-6); err != nil {
		t.Fatal(err)
	}
	all, _ := RhoFromEpsilonDelta(0.3, 1e-6)
	if _, err := l.Reserve(ctx, "u", Charge{User: "ann", Rho: all}); err != nil {
		t.Fatalf("spending the whole budget: %v", err)
	}
	if err := l.Check(); err != nil {
		t.Fatal(err)
	}
}
