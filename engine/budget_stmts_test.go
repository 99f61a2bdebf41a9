package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"

	"github.com/dpsql/dpsql/budget"
)

// dpFixture is an engine over the catalog with a raw table and three
// users besides root: owner (SELECT and GRANT OPTION on raw.t), analyst
// (granted SYNTHESIZE by some tests) and stranger (no rights).
type dpFixture struct {
	t   *testing.T
	dir string
	e   *Engine
	ids uint32
}

// fixtureSchema is raw.t: every kind of domain source, and columns without
// a domain.
const fixtureSchema = `CREATE TABLE raw.t (
	id INT PRIMARY KEY,
	color ENUM('red', 'green', 'blue') NOT NULL,
	flag BOOLEAN,
	age INT NOT NULL CHECK (age BETWEEN 17 AND 90),
	grade VARCHAR(2) CHECK (grade IN ('A', 'B', 'C')),
	income DOUBLE,
	city VARCHAR(20)
)`

// newDPFixture creates the fixture in a new data directory.
func newDPFixture(t *testing.T) *dpFixture {
	t.Helper()
	f := &dpFixture{t: t, dir: t.TempDir()}
	f.open()
	for _, q := range []string{
		"CREATE DATABASE raw",
		fixtureSchema,
		"INSERT INTO raw.t VALUES (1, 'red', 1, 30, 'A', 1000.5, 'Paris'), (2, 'blue', 0, 40, NULL, NULL, 'Oslo')",
		"CREATE USER owner IDENTIFIED BY 'opw'",
		"GRANT SELECT ON raw.t TO owner WITH GRANT OPTION",
		"CREATE USER analyst IDENTIFIED BY 'apw'",
		"CREATE USER stranger IDENTIFIED BY 'spw'",
	} {
		f.mustExec("root", q)
	}
	return f
}

// open (re)opens the engine over the fixture's data directory.
func (f *dpFixture) open() {
	f.t.Helper()
	f.e = openDiskEngine(f.t, f.dir, nil)
}

// reopen closes the engine and opens a new one over the same directory,
// as a server restart does.
func (f *dpFixture) reopen() {
	f.t.Helper()
	if err := f.e.Close(); err != nil {
		f.t.Fatal(err)
	}
	f.open()
}

// ctx returns a new session of user ("root" connects from localhost, the
// others from 127.0.0.1, matching their '%' accounts).
func (f *dpFixture) ctx(user string) *sql.Context {
	f.ids++
	host := "127.0.0.1"
	if user == RootUser {
		host = localhost
	}
	return sessionCtx(f.e, f.ids, user, host)
}

// exec runs q as user and returns its rows.
func (f *dpFixture) exec(user, q string) ([]sql.Row, error) {
	_, rows, err := query(f.e, f.ctx(user), q)
	return rows, err
}

// mustExec runs q as user and fails the test on error.
func (f *dpFixture) mustExec(user, q string) []sql.Row {
	f.t.Helper()
	rows, err := f.exec(user, q)
	if err != nil {
		f.t.Fatalf("%s: %s: %v", user, q, err)
	}
	return rows
}

// wantCode runs q as user and checks the MySQL error number (0: success).
func (f *dpFixture) wantCode(user, q string, code int) error {
	f.t.Helper()
	_, err := f.exec(user, q)
	if got := errCode(err); got != code {
		f.t.Errorf("%s: %s: error code %d (%v), want %d", user, q, got, err, code)
	}
	return err
}

// tableRef resolves db.name as root.
func (f *dpFixture) tableRef(db, name string) tableRef {
	f.t.Helper()
	t, ok, err := f.e.dp.cat.Table(context.Background(), db, name)
	if err != nil || !ok {
		f.t.Fatalf("table %s.%s: %v, %v", db, name, ok, err)
	}
	return tableRef{DB: db, Name: t.Name(), ID: t.ID(), Table: t}
}

func TestSetBudgetValidation(t *testing.T) {
	f := newDPFixture(t)
	tests := []struct {
		query string
		code  int
	}{
		{"SET PRIVACY BUDGET FOR raw.t WITH EPSILON = 1, DELTA = 1e-6", 0},
		{"SET PRIVACY BUDGET FOR raw.t WITH EPSILON = 0, DELTA = 1e-6", 9112},
		{"SET PRIVACY BUDGET FOR raw.t WITH EPSILON = -1, DELTA = 1e-6", 9112},
		{"SET PRIVACY BUDGET FOR raw.t WITH EPSILON = 1, DELTA = 0", 9112},
		{"SET PRIVACY BUDGET FOR raw.t WITH EPSILON = 1, DELTA = 1", 9112},
		{"SET PRIVACY BUDGET FOR raw.t WITH EPSILON = 1, DELTA = 1.5", 9112},
		{"SET PRIVACY BUDGET FOR raw.t WITH EPSILON = 1, DELTA = -1e-6", 9112},
		// A total above the ledger's maximum ρ.
		{"SET PRIVACY BUDGET FOR raw.t WITH EPSILON = 1e9, DELTA = 1e-6", 9112},
		{"SET PRIVACY BUDGET FOR raw.missing WITH EPSILON = 1, DELTA = 1e-6", mysql.ERNoSuchTable},
		{"SET PRIVACY BUDGET FOR nodb.t WITH EPSILON = 1, DELTA = 1e-6", mysql.ERNoSuchTable},
		{"SET PRIVACY BUDGET FOR t WITH EPSILON = 1, DELTA = 1e-6", mysql.ERNoSuchTable}, // no current database
	}
	for _, tt := range tests {
		err := f.wantCode(RootUser, tt.query, tt.code)
		if tt.code == 9112 && err != nil && !strings.Contains(err.Error(), "=") {
			t.Errorf("%s: message %q does not name the bad value", tt.query, err)
		}
	}
	// Only the valid statement reached the ledger.
	entries, err := f.e.dp.ledger.Entries(f.tableRef("raw", "t").LedgerKey(), "")
	if err != nil || len(entries) != 1 {
		t.Fatalf("ledger = %v, %v; want one budget entry", entries, err)
	}
}

func TestShowBudgetFigures(t *testing.T) {
	f := newDPFixture(t)
	f.mustExec("root", "CREATE TABLE raw.u (x INT)")
	f.mustExec("owner", "SET PRIVACY BUDGET FOR raw.t WITH EPSILON = 2, DELTA = 1e-5")
	f.mustExec("root", "SET PRIVACY BUDGET FOR raw.u WITH EPSILON = 0.5, DELTA = 1e-7")

	// Spend some of raw.t's budget as a mechanism would.
	ref := f.tableRef("raw", "t")
	r, err := f.e.dp.ledger.Reserve(context.Background(), ref.LedgerKey(), budget.Charge{User: "root@localhost", Statement: "test", Mechanism: "aim", Rho: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Commit("ok"); err != nil {
		t.Fatal(err)
	}

	rows := budgetRows(f.mustExec("root", "SHOW PRIVACY BUDGET"))
	if len(rows) != 2 {
		t.Fatalf("root sees %d budgets, want 2: %v", len(rows), rows)
	}
	tests := []struct {
		table      string
		eps, delta float64
		spent      float64
	}{
		{"raw.t", 2, 1e-5, r.Rho()},
		{"raw.u", 0.5, 1e-7, 0},
	}
	for _, tt := range tests {
		row, ok := rows[tt.table]
		if !ok {
			t.Fatalf("no row for %s", tt.table)
		}
		total, err := budget.RhoFromEpsilonDelta(tt.eps, tt.delta)
		if err != nil {
			t.Fatal(err)
		}
		epsSpent, _ := budget.EpsilonFromRhoDelta(tt.spent, tt.delta)
		got := row[1:]
		want := []float64{tt.eps, tt.delta, total, tt.spent, total - tt.spent, epsSpent, math.NaN()}
		for i, w := range want {
			g := got[i].(float64)
			if math.IsNaN(w) {
				// ε remaining: the conversion of ρ remaining.
				rem := got[4].(float64)
				w, _ = budget.EpsilonFromRhoDelta(rem, tt.delta)
			}
			// The ledger stores ρ in units of 2⁻⁴⁰.
			if math.Abs(g-w) > 1e-11*math.Max(1, math.Abs(w)) {
				t.Errorf("%s column %s = %v, want %v", tt.table, budgetSchema[i+1].Name, g, w)
			}
		}
	}

	// FOR one table gives the same row.
	one := f.mustExec("owner", "SHOW PRIVACY BUDGET FOR raw.t")
	if len(one) != 1 || fmt.Sprint(one[0]) != fmt.Sprint(rows["raw.t"]) {
		t.Errorf("SHOW PRIVACY BUDGET FOR raw.t = %v, want %v", one, rows["raw.t"])
	}
	// The owner of raw.t alone does not see raw.u.
	if got := budgetRows(f.mustExec("owner", "SHOW PRIVACY BUDGET")); len(got) != 1 || got["raw.t"] == nil {
		t.Errorf("owner sees %v, want raw.t only", got)
	}
}

func TestBudgetRaiseAndLower(t *testing.T) {
	f := newDPFixture(t)
	f.mustExec("owner", "SET PRIVACY BUDGET FOR raw.t WITH EPSILON = 1, DELTA = 1e-6")
	ref := f.tableRef("raw", "t")
	total1, _ := budget.RhoFromEpsilonDelta(1, 1e-6)
	r, err := f.e.dp.ledger.Reserve(context.Background(), ref.LedgerKey(), budget.Charge{User: "analyst@%", Statement: "test", Mechanism: "mst", Rho: total1 / 2})
	if err != nil {
		t.Fatal(err)
	}
	r.Commit("")

	// Raising is recorded; lowering is allowed down to what is spent.
	f.mustExec("owner", "SET PRIVACY BUDGET FOR raw.t WITH EPSILON = 3, DELTA = 1e-6")
	f.mustExec("owner", "SET PRIVACY BUDGET FOR raw.t WITH EPSILON = 0.8, DELTA = 1e-6")
	err = f.wantCode("owner", "SET PRIVACY BUDGET FOR raw.t WITH EPSILON = 0.1, DELTA = 1e-6", 9112)
	if err != nil && !strings.Contains(err.Error(), "below") {
		t.Errorf("lowering below spent: %v, want a message saying so", err)
	}
	entries, err := f.e.dp.ledger.Entries(ref.LedgerKey(), "")
	if err != nil {
		t.Fatal(err)
	}
	var sets []float64
	for _, en := range entries {
		if en.Status == budget.StatusBudgetSet {
			sets = append(sets, en.Epsilon)
			if en.User != "owner@%" || !strings.HasPrefix(en.Statement, "SET PRIVACY BUDGET") {
				t.Errorf("budget entry %+v: want user owner@%% and the statement", en)
			}
		}
	}
	if fmt.Sprint(sets) != "[1 3 0.8]" {
		t.Errorf("budget entries ε = %v, want [1 3 0.8]", sets)
	}
	if err := f.e.dp.ledger.Check(); err != nil {
		t.Fatal(err)
	}
}

func TestLedgerError(t *testing.T) {
	f := newDPFixture(t)
	f.mustExec("owner", "SET PRIVACY BUDGET FOR raw.t WITH EPSILON = 1, DELTA = 1e-6")
	ref := f.tableRef("raw", "t")
	ctx := context.Background()

	_, err := f.e.dp.ledger.Reserve(ctx, ref.LedgerKey(), budget.Charge{User: "analyst@%", Statement: "test", Mechanism: "aim", Rho: 1e3})
	mapped := f.e.ledgerError(err)
	if !errors.Is(mapped, ErrBudgetExhausted) || errCode(SQLError(mapped)) != 9110 {
		t.Fatalf("exhausted: %v, want ErrBudgetExhausted (9110)", mapped)
	}
	total, _ := budget.RhoFromEpsilonDelta(1, 1e-6)
	for _, want := range []string{"raw.t", fmt.Sprintf("ρ=%.6g", 1e3), fmt.Sprintf("ρ=%.6g", total), "nothing was spent"} {
		if !strings.Contains(mapped.Error(), want) {
			t.Errorf("exhausted message %q lacks %q", mapped, want)
		}
	}

	_, err = f.e.dp.ledger.Reserve(ctx, "999999", budget.Charge{User: "analyst@%", Statement: "test", Mechanism: "aim", Rho: 0.1})
	if mapped := f.e.ledgerError(err); !errors.Is(mapped, ErrNoBudget) || !strings.Contains(mapped.Error(), "SET PRIVACY BUDGET FOR") {
		t.Errorf("no budget: %v, want ErrNoBudget asking for SET PRIVACY BUDGET", mapped)
	}

	_, err = f.e.dp.ledger.Reserve(ctx, "999999", budget.Charge{User: "analyst@%", Statement: "test", Mechanism: "aim", Rho: 0.1})
	for user, want := range map[string]string{"owner": "set one with", "analyst": "ask its owner"} {
		mapped := f.e.ledgerErrorFor(f.ctx(user), ref, err)
		if !errors.Is(mapped, ErrNoBudget) || !strings.Contains(mapped.Error(), "FOR `raw`.`t`") || !strings.Contains(mapped.Error(), want) {
			t.Errorf("ledgerErrorFor(%s) = %v, want ErrNoBudget naming raw.t and saying %q", user, mapped, want)
		}
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = f.e.dp.ledger.Reserve(cctx, ref.LedgerKey(), budget.Charge{User: "analyst@%", Statement: "test", Mechanism: "aim", Rho: 0.1})
	if mapped := f.e.ledgerError(err); !errors.Is(mapped, ErrCancelled) {
		t.Errorf("cancelled: %v, want ErrCancelled", mapped)
	}
	_, err = f.e.dp.ledger.Reserve(ctx, ref.LedgerKey(), budget.Charge{User: "analyst@%", Statement: "test", Mechanism: "aim", Rho: -1})
	if mapped := f.e.ledgerError(err); !errors.Is(mapped, ErrBadParameter) {
		t.Errorf("negative ρ: %v, want ErrBadParameter", mapped)
	}
	if f.e.ledgerError(nil) != nil {
		t.Error("ledgerError(nil) != nil")
	}
	if k := ErrDomain.New("x"); f.e.ledgerError(k) != k {
		t.Error("ledgerError rewrapped an engine error")
	}
	if mapped := f.e.ledgerError(fmt.Errorf("disk: %w", budget.ErrCorrupt)); !errors.Is(mapped, ErrInternal) {
		t.Errorf("corrupt: %v, want ErrInternal", mapped)
	}
}

func TestShowLedger(t *testing.T) {
	f := newDPFixture(t)
	f.mustExec("owner", "GRANT SYNTHESIZE ON raw.t TO analyst")
	f.mustExec("root", "CREATE USER other IDENTIFIED BY 'x'")
	f.mustExec("owner", "GRANT SYNTHESIZE ON raw.t TO other")

	// Before any budget the ledger is empty.
	if rows := f.mustExec("owner", "SHOW PRIVACY LEDGER FOR raw.t"); len(rows) != 0 {
		t.Fatalf("ledger without a budget = %v", rows)
	}
	f.mustExec("owner", "SET PRIVACY BUDGET FOR raw.t WITH EPSILON = 1, DELTA = 1e-6")
	ref := f.tableRef("raw", "t")
	ctx := context.Background()
	// Charges recorded as synthesis records them (ledgerUser), and one
	// recorded under the bare user name.
	users := []string{
		f.e.ledgerUser(f.ctx("analyst")),
		f.e.ledgerUser(f.ctx("other")),
		"analyst",
	}
	for i, u := range users {
		r, err := f.e.dp.ledger.Reserve(ctx, ref.LedgerKey(), budget.Charge{User: u, Statement: fmt.Sprintf("stmt %d", i), Mechanism: "aim", Rho: 0.001})
		if err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			r.Fail(true, "crashed")
		} else {
			r.Commit("")
		}
	}
	if users[0] != "analyst@%" {
		t.Errorf("ledgerUser = %q, want analyst@%%", users[0])
	}

	tests := []struct {
		user  string
		want  []string // statements
		check func(rows []sql.Row)
	}{
		{user: "owner", want: []string{"SET PRIVACY BUDGET", "stmt 0", "stmt 1", "stmt 2"}},
		{user: "root", want: []string{"SET PRIVACY BUDGET", "stmt 0", "stmt 1", "stmt 2"}},
		{user: "analyst", want: []string{"stmt 0", "stmt 2"}},
		{user: "other", want: []string{"stmt 1"}},
	}
	for _, tt := range tests {
		rows := f.mustExec(tt.user, "SHOW PRIVACY LEDGER FOR raw.t")
		var got []string
		for _, r := range rows {
			stmt := r[3].(string)
			if strings.HasPrefix(stmt, "SET PRIVACY BUDGET FOR `raw`.`t`") {
				stmt = "SET PRIVACY BUDGET"
			}
			got = append(got, stmt)
		}
		if strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("%s sees %q, want %q", tt.user, got, tt.want)
		}
	}
	rows := f.mustExec("owner", "SHOW PRIVACY LEDGER FOR raw.t")
	if len(rows) != 4 || len(rows[0]) != len(ledgerSchema) {
		t.Fatalf("rows = %v", rows)
	}
	if rows[0][6] != "budget set" && rows[0][6] != budget.StatusBudgetSet.String() {
		t.Errorf("budget entry status = %v", rows[0][6])
	}
	if rows[0][8] != 1.0 || rows[0][9] != 1e-6 || rows[1][8] != nil {
		t.Errorf("ε/δ columns = %v %v / %v, want 1 1e-06 / NULL", rows[0][8], rows[0][9], rows[1][8])
	}
	if note, _ := rows[2][7].(string); rows[2][6] != budget.StatusFailed.String() || !strings.Contains(note, "crashed") || rows[2][4] != "aim" {
		t.Errorf("failed entry = %v", rows[2])
	}
	f.wantCode("stranger", "SHOW PRIVACY LEDGER FOR raw.t", mysql.ERNoSuchTable)
}

// TestStrangerSeesNothing checks that every statement gives a user without
// rights the same error for an existing table as for a missing one.
func TestStrangerSeesNothing(t *testing.T) {
	f := newDPFixture(t)
	f.mustExec("owner", "SET PRIVACY BUDGET FOR raw.t WITH EPSILON = 1, DELTA = 1e-6")
	statements := []string{
		"SET PRIVACY BUDGET FOR %s WITH EPSILON = 1, DELTA = 1e-6",
		"SHOW PRIVACY BUDGET FOR %s",
		"SHOW PRIVACY LEDGER FOR %s",
		"ALTER TABLE %s SET DOMAIN income BETWEEN 0 AND 10 BINS 2",
		"ALTER TABLE %s SET DOMAIN city IN ('a')",
		"SHOW DOMAIN FOR %s",
		"GRANT SYNTHESIZE ON %s TO stranger",
		"REVOKE SYNTHESIZE ON %s FROM stranger",
		"CALL dpsql_privacy_budget('%s')",
		"CALL dpsql_domain('%s')",
	}
	for _, user := range []string{"stranger", "analyst"} {
		for _, s := range statements {
			_, errReal := f.exec(user, fmt.Sprintf(s, "raw.t"))
			_, errMissing := f.exec(user, fmt.Sprintf(s, "raw.nope"))
			if errCode(errReal) != mysql.ERNoSuchTable || errCode(errMissing) != mysql.ERNoSuchTable {
				t.Errorf("%s: %s: codes %d / %d, want %d for both", user, s, errCode(errReal), errCode(errMissing), mysql.ERNoSuchTable)
				continue
			}
			if a, b := strings.ReplaceAll(errReal.Error(), "raw.t'", "X"), strings.ReplaceAll(errMissing.Error(), "raw.nope'", "X"); a != b {
				t.Errorf("%s: %s: messages differ: %q / %q", user, s, a, b)
			}
		}
		if rows := f.mustExec(user, "SHOW PRIVACY BUDGET"); len(rows) != 0 {
			t.Errorf("%s sees budgets %v", user, rows)
		}
	}
}

// TestDroppedTableForgotten: a table re-created under a dropped one's name
// inherits neither its budget, nor its domains, nor its grants.
func TestDroppedTableForgotten(t *testing.T) {
	f := newDPFixture(t)
	f.mustExec("owner", "SET PRIVACY BUDGET FOR raw.t WITH EPSILON = 1, DELTA = 1e-6")
	f.mustExec("owner", "ALTER TABLE raw.t SET DOMAIN income BETWEEN 0 AND 100 BINS 4")
	f.mustExec("owner", "GRANT SYNTHESIZE ON raw.t TO analyst")
	f.mustExec("root", "DROP TABLE raw.t")
	f.mustExec("root", fixtureSchema)

	if rows := f.mustExec("root", "SHOW PRIVACY BUDGET"); len(rows) != 0 {
		t.Errorf("budgets after re-creation: %v", rows)
	}
	f.wantCode("root", "SHOW PRIVACY BUDGET FOR raw.t", 9111)
	if rows := f.mustExec("root", "SHOW PRIVACY LEDGER FOR raw.t"); len(rows) != 0 {
		t.Errorf("ledger after re-creation: %v", rows)
	}
	if d, err := f.e.declaredDomains(f.ctx("root"), f.tableRef("raw", "t")); err != nil || len(d) != 0 {
		t.Errorf("declarations after re-creation: %v, %v", d, err)
	}
	f.wantCode("analyst", "SHOW DOMAIN FOR raw.t", mysql.ERNoSuchTable)
	// The old budget is still in the ledger, under the old ID.
	if b, err := f.e.dp.ledger.Budgets(); err != nil || len(b) != 1 {
		t.Errorf("ledger budgets = %v, %v; want the dropped table's", b, err)
	}
}

func TestPrivacyPersistsAcrossRestart(t *testing.T) {
	f := newDPFixture(t)
	f.mustExec("owner", "SET PRIVACY BUDGET FOR raw.t WITH EPSILON = 1.5, DELTA = 1e-6")
	f.mustExec("owner", "ALTER TABLE raw.t SET DOMAIN income BETWEEN 0 AND 100 BINS 4")
	f.mustExec("owner", "ALTER TABLE raw.t SET DOMAIN city IN ('Paris', 'Oslo')")
	f.mustExec("owner", "GRANT SYNTHESIZE ON raw.t TO analyst")
	budgetBefore := f.mustExec("analyst", "SHOW PRIVACY BUDGET")
	domainBefore := f.mustExec("analyst", "SHOW DOMAIN FOR raw.t")
	ledgerBefore := f.mustExec("owner", "SHOW PRIVACY LEDGER FOR raw.t")

	f.reopen()
	if got := f.mustExec("analyst", "SHOW PRIVACY BUDGET"); fmt.Sprint(got) != fmt.Sprint(budgetBefore) || len(got) != 1 {
		t.Errorf("budget after restart = %v, want %v", got, budgetBefore)
	}
	if got := f.mustExec("analyst", "SHOW DOMAIN FOR raw.t"); fmt.Sprint(got) != fmt.Sprint(domainBefore) {
		t.Errorf("domain after restart = %v, want %v", got, domainBefore)
	}
	if got := f.mustExec("owner", "SHOW PRIVACY LEDGER FOR raw.t"); fmt.Sprint(got) != fmt.Sprint(ledgerBefore) {
		t.Errorf("ledger after restart = %v, want %v", got, ledgerBefore)
	}
	if _, err := f.e.tableDomain(f.ctx("analyst"), f.tableRef("raw", "t")); !errors.Is(err, ErrDomain) || !strings.Contains(err.Error(), `"id"`) {
		t.Fatalf("tableDomain before id is declared: %v, want ErrDomain naming id", err)
	}
	f.mustExec("owner", "ALTER TABLE raw.t SET DOMAIN id BETWEEN 0 AND 1000 BINS 10")
	dom, err := f.e.tableDomain(f.ctx("analyst"), f.tableRef("raw", "t"))
	if err != nil {
		t.Fatalf("tableDomain after restart: %v", err)
	}
	if c, _ := dom.Column("city"); c.Size() != 3 { // Paris, Oslo, NULL
		t.Errorf("city domain size = %d, want 3", c.Size())
	}
}

func TestNeedsCatalog(t *testing.T) {
	e := newTestEngine(t, newMemStorage(), nil)
	ctx := sessionCtx(e, 1, RootUser, localhost)
	for _, q := range []string{
		"SET PRIVACY BUDGET FOR a.b WITH EPSILON = 1, DELTA = 1e-6",
		"SHOW PRIVACY BUDGET",
		"SHOW PRIVACY LEDGER FOR a.b",
		"SHOW DOMAIN FOR a.b",
		"ALTER TABLE a.b SET DOMAIN c IN (1)",
		"GRANT SYNTHESIZE ON a.b TO root@localhost",
	} {
		if _, _, err := query(e, ctx, q); errCode(err) != 9106 {
			t.Errorf("%s over memory: %v, want ErrNeedsCatalog", q, err)
		}
	}
}

func TestParseTableArg(t *testing.T) {
	tests := []struct {
		in, db, name string
		ok           bool
	}{
		{"t", "", "t", true},
		{"db.t", "db", "t", true},
		{"`my db`.`a.b`", "my db", "a.b", true},
		{" db.t ", "db", "t", true},
		{"", "", "", false},
		{"db.", "", "", false},
		{"t; DROP TABLE x", "", "", false},
		{"t WITH EPSILON = 5", "", "", false},
	}
	for _, tt := range tests {
		got, err := parseTableArg(tt.in)
		if (err == nil) != tt.ok || tt.ok && (got.DB != tt.db || got.Name != tt.name) {
			t.Errorf("parseTableArg(%q) = %+v, %v; want %s.%s ok=%v", tt.in, got, err, tt.db, tt.name, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrBadParameter) {
			t.Errorf("parseTableArg(%q) error kind: %v", tt.in, err)
		}
	}
}

func TestBudgetProcedures(t *testing.T) {
	f := newDPFixture(t)
	f.mustExec("owner", "CALL dpsql_set_privacy_budget('raw.t', 2, 1e-6)")
	f.wantCode("owner", "CALL dpsql_set_privacy_budget('raw.t', 0, 1e-6)", 9112)
	f.wantCode("stranger", "CALL dpsql_set_privacy_budget('raw.t', 1, 1e-6)", mysql.ERNoSuchTable)
	f.mustExec("owner", "CALL dpsql_grant_synthesize('raw.t', 'analyst')")

	stmt := f.mustExec("analyst", "SHOW PRIVACY BUDGET")
	for _, q := range []string{"CALL dpsql_privacy_budget()", "CALL dpsql_privacy_budget('raw.t')"} {
		if got := f.mustExec("analyst", q); fmt.Sprint(got) != fmt.Sprint(stmt) || len(got) != 1 {
			t.Errorf("%s = %v, want %v", q, got, stmt)
		}
	}
	if got, want := f.mustExec("owner", "CALL dpsql_privacy_ledger('raw.t')"), f.mustExec("owner", "SHOW PRIVACY LEDGER FOR raw.t"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ledger procedure = %v, want %v", got, want)
	}
	f.wantCode("owner", "CALL dpsql_privacy_budget('raw.t junk')", 9112)
}
