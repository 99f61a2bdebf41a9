package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dpsql/dpsql/budget"
	"github.com/dpsql/dpsql/synth/registry"
)

// Integration tests of CREATE SYNTHETIC TABLE through the real binary.

// fastAIM keeps AIM short in tests: few rounds and estimation iterations.
const fastAIM = "ROUNDS = 24, PGM_ITERS = 10, FINAL_ITERS = 50"

const (
	colRhoTotal = 3
	colRhoSpent = 4
)

// setupTiny creates raw.t, a small table with public domains, and gives it
// a budget of (eps, 1e-6).
func setupTiny(t *testing.T, root *sql.DB, eps float64) {
	t.Helper()
	var values []string
	for i := range 60 {
		values = append(values, fmt.Sprintf("(%d, '%s')", i%4, []string{"a", "b"}[i%3%2]))
	}
	mustExec(t, root,
		"CREATE DATABASE raw",
		"CREATE DATABASE syn",
		"CREATE TABLE raw.t (x INT NOT NULL CHECK (x BETWEEN 0 AND 3), y ENUM('a','b') NOT NULL)",
		"INSERT INTO raw.t VALUES "+strings.Join(values, ","),
		"SET PRIVACY BUDGET FOR raw.t WITH EPSILON = "+strconv.FormatFloat(eps, 'g', -1, 64)+", DELTA = 0.000001",
	)
}

func TestSynthesizeDemo(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, "--demo")
	root := s.root()
	mustExec(t, root,
		"SET PRIVACY BUDGET FOR demo.census WITH EPSILON = 10, DELTA = 0.000001",
		"ALTER TABLE demo.census SET DOMAIN capital_gain BETWEEN 0 AND 100000 BINS 10",
		"CREATE DATABASE synthetic",
		"CREATE USER analyst IDENTIFIED BY 'apw'",
		"GRANT SYNTHESIZE ON demo.census TO analyst",
		"GRANT CREATE ON synthetic.* TO analyst",
	)
	analyst := s.open("analyst", "apw")
	spent0 := budgetFloat(t, budgetRow(t, root, "demo.census"), colRhoSpent)

	mustExec(t, analyst, "CREATE SYNTHETIC TABLE synthetic.census FROM demo.census USING aim WITH EPSILON = 1, ROWS = 2000, SEED = 3, "+fastAIM)

	// The analyst reads the copy (granted SELECT on it as its creator) but
	// still not the source.
	if got := queryStrings(t, analyst, "SELECT COUNT(*), MIN(id), MAX(id) FROM synthetic.census"); got[0][0] != "2000" || got[0][1] != "1" || got[0][2] != "2000" {
		t.Fatalf("synthetic rows = %v", got)
	}
	sexes := queryStrings(t, analyst, "SELECT sex, COUNT(*) FROM synthetic.census GROUP BY sex ORDER BY sex")
	if len(sexes) == 0 || len(sexes) > 2 {
		t.Fatalf("sex groups = %v", sexes)
	}
	if _, err := tryQueryStrings(analyst, "SELECT COUNT(*) FROM demo.census"); err == nil {
		t.Fatal("the analyst read the raw table")
	}
	rho1, err := budget.RhoFromEpsilonDelta(1, 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	spent1 := budgetFloat(t, budgetRow(t, root, "demo.census"), colRhoSpent)
	if d := spent1 - spent0; d < rho1 || d > rho1*(1+1e-9) {
		t.Errorf("ρ spent went up by %.12g, want %.12g", d, rho1)
	}
	if status, _ := lastLedgerEntry(t, root, "demo.census"); status != "committed" {
		t.Errorf("ledger entry status %q, want committed", status)
	}

	show := queryStrings(t, analyst, "SHOW SYNTHETIC TABLES FROM synthetic")
	if len(show) != 1 || show[0][1] != "census" || show[0][2] != "demo.census" || show[0][3] != "aim" || show[0][8] != "2000" {
		t.Fatalf("SHOW SYNTHETIC TABLES = %v", show)
	}
	// The preparable twin, through a server-side prepared statement.
	if got := queryStrings(t, analyst, "CALL dpsql_show_synthetic_tables(?)", "synthetic"); len(got) != 1 {
		t.Errorf("CALL dpsql_show_synthetic_tables = %v", got)
	}
	mechs := queryStrings(t, analyst, "SHOW MECHANISMS")
	names := map[string]bool{}
	for _, r := range mechs {
		names[r[0]] = true
	}
	if len(names) != len(registry.All()) {
		t.Errorf("SHOW MECHANISMS lists %v", names)
	}

	// The mariadb CLI sees the same.
	out, err := s.cli(t, "analyst", "apw", "SHOW SYNTHETIC TABLES FROM synthetic; SHOW MECHANISMS")
	if err != nil || !strings.Contains(out, "demo.census") || !strings.Contains(out, "answers only") {
		t.Fatalf("CLI: %v\n%s", err, out)
	}

	// A restart keeps the table, its listing and the budget.
	before := budgetRow(t, root, "demo.census")
	s.stop(syscall.SIGTERM)
	s = startServer(t, dir)
	root, analyst = s.root(), s.open("analyst", "apw")
	if got := queryStrings(t, analyst, "SELECT COUNT(*) FROM synthetic.census"); got[0][0] != "2000" {
		t.Fatalf("after restart: %v", got)
	}
	if again := queryStrings(t, analyst, "SHOW SYNTHETIC TABLES FROM synthetic"); fmt.Sprint(again) != fmt.Sprint(show) {
		t.Errorf("after restart SHOW SYNTHETIC TABLES = %v, want %v", again, show)
	}
	if after := budgetRow(t, root, "demo.census"); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("after restart budget = %v, want %v", after, before)
	}

	// DROP removes it from the listing and refunds nothing.
	mustExec(t, root, "DROP TABLE synthetic.census")
	if got := queryStrings(t, root, "SHOW SYNTHETIC TABLES FROM synthetic"); len(got) != 0 {
		t.Errorf("after DROP: %v", got)
	}
	if after := budgetRow(t, root, "demo.census"); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("after DROP budget = %v, want %v", after, before)
	}
}

// TestSynthesizeKillQuery kills a running synthesis: the statement fails
// with ER_QUERY_INTERRUPTED, no table appears, and the charge stays spent
// with a failed ledger entry. While it runs, SHOW PROCESSLIST shows its
// progress.
func TestSynthesizeKillQuery(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, "--demo")
	root := s.root()
	mustExec(t, root,
		"SET PRIVACY BUDGET FOR demo.census WITH EPSILON = 10, DELTA = 0.000001",
		"ALTER TABLE demo.census SET DOMAIN capital_gain BETWEEN 0 AND 100000 BINS 10",
		"CREATE DATABASE synthetic",
	)
	spent0 := budgetFloat(t, budgetRow(t, root, "demo.census"), colRhoSpent)

	ctx := context.Background()
	conn, err := root.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var id int64
	if err := conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		// Default AIM options on 30 000 rows: long enough to be killed.
		_, err := conn.ExecContext(ctx, "CREATE SYNTHETIC TABLE synthetic.k FROM demo.census USING aim WITH EPSILON = 1 WORKLOAD ALL 3-WAY")
		done <- err
	}()

	// Wait for a round after the initialisation (round 0 is shown before
	// the first progress report, which is also the first log line) to show
	// in the process list, then kill.
	var state string
	deadline := time.Now().Add(2 * time.Minute)
	for !roundAfterInit.MatchString(state) {
		if time.Now().After(deadline) {
			t.Fatalf("no synthesis progress in SHOW PROCESSLIST; last state %q\n%s", state, s.stderr)
		}
		select {
		case err := <-done:
			t.Fatalf("synthesis finished before it could be killed: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
		state = ""
		for _, r := range queryStrings(t, root, "SHOW PROCESSLIST") {
			if r[0] == strconv.FormatInt(id, 10) {
				state = r[6]
			}
		}
	}
	if !strings.Contains(state, "synthesizing synthetic.k: ") || !strings.Contains(state, "rho used") || !strings.Contains(state, "model") {
		t.Errorf("process state %q lacks the round, ρ used or model size", state)
	}
	mustExec(t, root, fmt.Sprintf("KILL QUERY %d", id))
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		t.Fatal("the killed synthesis did not stop")
	}
	if code := mysqlCode(err); code != 1317 {
		t.Fatalf("killed statement: %v (code %d), want 1317", err, code)
	}
	if got := queryStrings(t, root, "SHOW TABLES FROM synthetic"); len(got) != 0 {
		t.Fatalf("tables after KILL: %v", got)
	}
	status, note := lastLedgerEntry(t, root, "demo.census")
	if status != "failed" || !strings.Contains(note, "cancel") {
		t.Errorf("ledger entry %q %q, want failed with a note about the cancellation", status, note)
	}
	rho1, _ := budget.RhoFromEpsilonDelta(1, 1e-6)
	if d := budgetFloat(t, budgetRow(t, root, "demo.census"), colRhoSpent) - spent0; d < rho1 {
		t.Errorf("ρ spent went up by %g after KILL, want the whole charge %g", d, rho1)
	}
	if !strings.Contains(s.stderr.String(), "synthesis progress") {
		t.Error("no progress lines in the server log")
	}
}

// roundAfterInit matches a process state of a round after round 0.
var roundAfterInit = regexp.MustCompile(`round [1-9]`)

// TestSynthesizeCrashAfterReserve crashes the server right after a
// reservation is durable (DPSQL_FAILPOINT=after-reserve): after a restart
// the charge is spent, its entry is still reserved, and there is no table.
func TestSynthesizeCrashAfterReserve(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	setupTiny(t, s.root(), 5)
	before := budgetRow(t, s.root(), "raw.t")
	s.stop(syscall.SIGTERM)

	t.Setenv("DPSQL_FAILPOINT", "after-reserve")
	s = startServer(t, dir)
	os.Unsetenv("DPSQL_FAILPOINT")
	_, err := s.root().Exec("CREATE SYNTHETIC TABLE syn.c FROM raw.t USING independent WITH EPSILON = 1")
	if err == nil {
		t.Fatal("the failpoint did not fire")
	}
	select {
	case <-s.exited:
	case <-time.After(time.Minute):
		t.Fatal("server still running after the failpoint")
	}
	var ee *exec.ExitError
	if !errors.As(s.waitErr, &ee) || ee.ExitCode() != 86 {
		t.Fatalf("exit = %v, want status 86", s.waitErr)
	}

	s = startServer(t, dir)
	root := s.root()
	after := budgetRow(t, root, "raw.t")
	rho1, _ := budget.RhoFromEpsilonDelta(1, 1e-6)
	if d := budgetFloat(t, after, colRhoSpent) - budgetFloat(t, before, colRhoSpent); d < rho1 || d > rho1*(1+1e-9) {
		t.Errorf("ρ spent after the crash went up by %g, want %g", d, rho1)
	}
	if status, _ := lastLedgerEntry(t, root, "raw.t"); status != "reserved" {
		t.Errorf("entry status %q, want reserved", status)
	}
	if got := queryStrings(t, root, "SHOW TABLES FROM syn"); len(got) != 0 {
		t.Errorf("tables after the crash: %v", got)
	}
}

// TestSynthesizeConcurrentBudget races 200 statements for a budget that
// fits exactly 50 of them (issue 8).
func TestSynthesizeConcurrentBudget(t *testing.T) {
	const (
		clients = 200
		fits    = 50
		eps     = 0.05
		delta   = 1e-6
	)
	// ρ of one request, rounded up to the ledger's unit as it charges it;
	// a total of 50.5 requests rounds down to between 50 and 51 of them.
	unit := math.Ldexp(1, -40)
	rhoReq, err := budget.RhoFromEpsilonDelta(eps, delta)
	if err != nil {
		t.Fatal(err)
	}
	rhoReq = math.Ceil(rhoReq/unit) * unit
	epsTotal, err := budget.EpsilonFromRhoDelta((fits+0.5)*rhoReq, delta)
	if err != nil {
		t.Fatal(err)
	}
	if total, _ := budget.RhoFromEpsilonDelta(epsTotal, delta); total < fits*rhoReq || total >= (fits+1)*rhoReq {
		t.Fatalf("test setup: ε_total %g gives ρ %g, not in [%d, %d) requests of %g", epsTotal, total, fits, fits+1, rhoReq)
	}

	dir := t.TempDir()
	s := startServer(t, dir)
	root := s.root()
	setupTiny(t, root, epsTotal)
	root.SetMaxOpenConns(clients)

	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		succeeded int
		others    []error
	)
	start := make(chan struct{})
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, err := root.Exec(fmt.Sprintf("CREATE SYNTHETIC TABLE syn.t%d FROM raw.t USING independent WITH EPSILON = %g, PGM_ITERS = 5", i, eps))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				succeeded++
			case mysqlCode(err) != 9110:
				others = append(others, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if len(others) > 0 {
		t.Fatalf("%d statements failed other than by exhaustion, e.g. %v", len(others), others[0])
	}
	if succeeded != fits {
		t.Fatalf("%d statements succeeded, want exactly %d", succeeded, fits)
	}
	if got := queryStrings(t, root, "SHOW TABLES FROM syn"); len(got) != fits {
		t.Errorf("%d synthetic tables, want %d", len(got), fits)
	}
	row := budgetRow(t, root, "raw.t")
	if spent, total := budgetFloat(t, row, colRhoSpent), budgetFloat(t, row, colRhoTotal); spent > total || spent != fits*rhoReq {
		t.Errorf("ρ spent %g of %g, want exactly %d × %g", spent, total, fits, rhoReq)
	}
	s.stop(syscall.SIGTERM)
	s = startServer(t, dir)
	if again := budgetRow(t, s.root(), "raw.t"); fmt.Sprint(again) != fmt.Sprint(row) {
		t.Errorf("after restart SHOW PRIVACY BUDGET = %v, want %v", again, row)
	}
}

func TestSynthesizeAnswersOnlyAndMechanisms(t *testing.T) {
	s := startServer(t, t.TempDir())
	root := s.root()
	setupTiny(t, root, 20)
	for _, mech := range []string{"mst", "mwem", "independent"} {
		mustExec(t, root, "CREATE SYNTHETIC TABLE syn."+mech+" FROM raw.t USING "+mech+" WITH EPSILON = 1, ROWS = 30")
		if got := queryStrings(t, root, "SELECT COUNT(*) FROM syn."+mech+" WHERE x BETWEEN 0 AND 3 AND y IN ('a','b')"); got[0][0] != "30" {
			t.Errorf("%s: %v rows in domain, want 30", mech, got)
		}
	}
	mustExec(t, root, "CREATE SYNTHETIC TABLE syn.g FROM raw.t USING gaussian WITH EPSILON = 1 WORKLOAD (SELECT x, COUNT(*) FROM t GROUP BY x)")
	got := queryStrings(t, root, "SELECT dp_marginal, dp_columns, x, y FROM syn.g ORDER BY x")
	if len(got) != 4 || got[0][1] != "x" || got[0][2] != "0" || got[0][3] != "NULL" {
		t.Errorf("answers table = %v", got)
	}
	var output string
	for _, r := range queryStrings(t, root, "SHOW SYNTHETIC TABLES FROM syn") {
		if r[1] == "g" {
			output = r[4]
		}
	}
	if output != "answers only" {
		t.Errorf("gaussian output %q, want answers only", output)
	}
	// An unknown option names the valid ones; nothing is created.
	_, err := root.Exec("CREATE SYNTHETIC TABLE syn.bad FROM raw.t USING mst WITH EPSILON = 1, ROUNDS = 3")
	if mysqlCode(err) != 9112 || !strings.Contains(err.Error(), "PGM_ITERS") {
		t.Errorf("unknown option: %v", err)
	}
	// The CALL twin of CREATE SYNTHETIC TABLE, prepared on the server.
	rows := queryStrings(t, root, "CALL dpsql_create_synthetic_table(?)", "CREATE SYNTHETIC TABLE syn.viacall FROM raw.t USING independent WITH EPSILON = 1, ROWS = 7")
	if len(rows) != 1 || rows[0][0] != "syn.viacall" || rows[0][1] != "7" {
		t.Errorf("CALL twin = %v", rows)
	}
}

func TestBenchMechanism(t *testing.T) {
	dir := t.TempDir()
	var rows [][]string
	for i := range 300 {
		rows = append(rows, []string{strconv.Itoa(i % 3), strconv.Itoa(i % 3 % 2), strconv.Itoa((i / 3) % 4)})
	}
	csvPath := writeCSV(t, []string{"a", "b", "c"}, rows)
	domain := filepath.Join(dir, "domain.json")
	if err := os.WriteFile(domain, []byte(`{"a": 3, "b": 2, "c": 4}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args     []string
		wantCode int
		wantOut  string
	}{
		{[]string{"bench", "independent", "--csv", csvPath, "--domain", domain, "--epsilon", "1", "--workload", "all-2way", "--seeds", "2"}, 0, "mean"},
		{[]string{"bench", "aim", "--csv", csvPath, "--domain", domain, "--option", "ROUNDS=4", "--option", "FINAL_ITERS=20"}, 0, "mean"},
		{[]string{"bench", "gaussian", "--csv", csvPath, "--domain", domain}, 0, "mean"},
		{[]string{"bench", "nosuch", "--csv", csvPath, "--domain", domain}, 2, ""},
		{[]string{"bench", "mst", "--csv", csvPath}, 2, ""},
		{[]string{"bench", "mst", "--csv", csvPath, "--domain", domain, "--option", "NOPE=1"}, 1, ""},
	}
	for _, tt := range tests {
		stdout, stderr, code := runDpsql(t, tt.args...)
		if code != tt.wantCode || !strings.Contains(stdout, tt.wantOut) {
			t.Errorf("%v: exit %d stdout %q stderr %q; want exit %d and %q", tt.args[1:2], code, stdout, stderr, tt.wantCode, tt.wantOut)
		}
	}
	// --cpuprofile and --memprofile write pprof profiles (gzip-compressed
	// protobuf).
	prof := filepath.Join(t.TempDir(), "cpu.prof")
	mem := filepath.Join(t.TempDir(), "mem.prof")
	if _, stderr, code := runDpsql(t, "bench", "gaussian", "--csv", csvPath, "--domain", domain, "--cpuprofile", prof, "--memprofile", mem); code != 0 {
		t.Fatalf("bench --cpuprofile --memprofile: exit %d, stderr %q", code, stderr)
	}
	for _, f := range []string{prof, mem} {
		if b, err := os.ReadFile(f); err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
			t.Errorf("bench wrote %d bytes to %s (%v), want a gzip-compressed profile", len(b), filepath.Base(f), err)
		}
	}
	// AIM, two seeds: a line per seed and the mean, each with the rows'
	// error, the model's own error, and the seed's peak memory.
	stdout, stderr, code := runDpsql(t, "bench", "aim", "--csv", csvPath, "--domain", domain, "--seeds", "2",
		"--option", "ROUNDS=6", "--option", "FINAL_ITERS=50")
	if code != 0 {
		t.Fatalf("bench aim: exit %d, stderr %q", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 5 || !strings.Contains(lines[1], "model") || !strings.Contains(lines[1], "peak MB") {
		t.Fatalf("bench aim output:\n%s", stdout)
	}
	for i, want := range []string{"0", "1", "mean"} {
		f := strings.Fields(lines[2+i])
		if len(f) != 14 || f[0] != want {
			t.Errorf("line %q: want 14 fields starting with %q", lines[2+i], want)
			continue
		}
		rows, err1 := strconv.ParseFloat(f[1], 64)
		model, err2 := strconv.ParseFloat(f[2], 64)
		peak, err3 := strconv.ParseFloat(f[11], 64)
		base, err4 := strconv.ParseFloat(f[13], 64)
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil || !(rows >= 0 && rows <= 2) || !(model >= 0 && model <= 2) || !(peak > 0) || !(base > 0 && base <= peak) {
			t.Errorf("line %q: rows error, model error, peak MB or base MB unreadable or out of range", lines[2+i])
		}
	}
	// An answers-only mechanism has no model: its model column is "-".
	stdout, _, _ = runDpsql(t, "bench", "gaussian", "--csv", csvPath, "--domain", domain)
	if lines := strings.Split(strings.TrimSpace(stdout), "\n"); len(lines) != 4 || strings.Fields(lines[2])[2] != "-" {
		t.Errorf("bench gaussian output:\n%s", stdout)
	}
}
