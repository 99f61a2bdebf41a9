package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/dpsql/dpsql/catalog"
	"github.com/dpsql/dpsql/internal/format1"
)

// Integration tests of the data file's protections through the real
// binary: dpsql serve refuses empty and damaged files with one clear line
// (never a Go crash), damaged records are reported instead of served, old
// files are migrated, and dpsql check and dpsql backup work.

// crashWords must never appear in the output of a refused start.
var crashWords = []string{"goroutine ", "panic", "SIGSEGV", "SIGBUS", "runtime error"}

// wantRefusal checks a failed start: non-zero exit, one line on stderr
// containing every want, no crash.
func wantRefusal(t *testing.T, what, stderr string, code int, want ...string) {
	t.Helper()
	if code == 0 {
		t.Errorf("%s: dpsql serve exited 0, want a refusal", what)
		return
	}
	for _, w := range crashWords {
		if strings.Contains(stderr, w) {
			t.Errorf("%s: stderr shows a crash (%q):\n%s", what, w, stderr)
			return
		}
	}
	if n := len(lines(stderr)); n != 1 {
		t.Errorf("%s: %d lines on stderr, want one:\n%s", what, n, stderr)
	}
	for _, w := range want {
		if !strings.Contains(stderr, w) {
			t.Errorf("%s: stderr lacks %q:\n%s", what, w, stderr)
		}
	}
}

// serveOnce runs dpsql serve on dir, expecting it to refuse to start. If
// it starts instead, it is stopped and the exit code reported is 0.
func serveOnce(t *testing.T, dir string) (stderr string, code int) {
	t.Helper()
	s, err := launch(t, dir)
	if err == nil {
		s.kill()
		return s.stderr.String(), 0
	}
	var ee *exec.ExitError
	if !errors.As(s.waitErr, &ee) {
		t.Fatalf("dpsql serve: %v", err)
	}
	return s.stderr.String(), ee.ExitCode()
}

// seedDataDir makes a stopped server's data directory holding raw.t (with
// a budget, ledger entries and a synthetic copy syn.s) and an analyst, and
// returns the results of queries that read all of it.
func seedDataDir(t *testing.T, dir string) map[string][][]string {
	t.Helper()
	s := startServer(t, dir)
	root := s.root()
	setupTiny(t, root, 2)
	mustExec(t, root,
		"CREATE TABLE raw.notes (id INT PRIMARY KEY, note VARCHAR(60))",
		"INSERT INTO raw.notes VALUES (1, 'marker-row-one-0123456789'), (2, 'second row'), (3, 'third row')",
		"CREATE USER bob IDENTIFIED BY 'bpw'",
		"GRANT SYNTHESIZE ON raw.t TO bob",
		"CREATE SYNTHETIC TABLE syn.s FROM raw.t USING independent WITH EPSILON = 0.5, SEED = 1",
	)
	snap := readAllOf(t, root)
	s.stop(syscall.SIGTERM)
	return snap
}

// snapshotQueries read everything seedDataDir wrote.
var snapshotQueries = []string{
	"SELECT x, y, COUNT(*) FROM raw.t GROUP BY x, y ORDER BY x, y",
	"SELECT * FROM raw.notes ORDER BY id",
	"SELECT x, y FROM syn.s ORDER BY x, y",
	"SHOW PRIVACY BUDGET",
	"SHOW PRIVACY LEDGER FOR raw.t",
	"SHOW SYNTHETIC TABLES FROM syn",
	"SELECT user, host FROM mysql.user ORDER BY user, host",
}

func readAllOf(t *testing.T, db *sql.DB) map[string][][]string {
	t.Helper()
	out := map[string][][]string{}
	for _, q := range snapshotQueries {
		out[q] = queryStrings(t, db, q)
	}
	return out
}

func dataFile(dir string) string { return filepath.Join(dir, catalog.FileName) }

// usedBytes is the size of the pages bbolt uses in a (healthy) data file;
// the file may be longer.
func usedBytes(t *testing.T, path string) int {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int64
	db.View(func(tx *bbolt.Tx) error { n = tx.Size(); return nil })
	return int(n)
}

// dirWith returns a new data directory whose data file holds b.
func dirWith(t *testing.T, b []byte) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(dataFile(dir), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestServeRefusesEmptyDataFile(t *testing.T) {
	dir := dirWith(t, nil)
	stderr, code := serveOnce(t, dir)
	wantRefusal(t, "empty data file", stderr, code, dataFile(dir), "empty", "dpsql backup", "move it away")
	if fi, err := os.Stat(dataFile(dir)); err != nil || fi.Size() != 0 {
		t.Errorf("the empty data file was changed: %v %v", fi, err)
	}
}

// TestServeRefusesTruncatedDataFile cuts a data file at many sizes: the
// server refuses every cut that loses data or a page boundary, and starts
// with every row intact when only unused pages were cut.
func TestServeRefusesTruncatedDataFile(t *testing.T) {
	src := t.TempDir()
	want := seedDataDir(t, src)
	full, err := os.ReadFile(dataFile(src))
	if err != nil {
		t.Fatal(err)
	}
	used := usedBytes(t, dataFile(src))
	started := 0
	for _, n := range []int{0, 1, 4095, 4096, 3 * 4096, len(full) / 2, used / 2, used - 4096, used - 1, used, len(full) - 1} {
		dir := dirWith(t, full[:n])
		harmless := n >= used && n%4096 == 0
		if !harmless {
			stderr, code := serveOnce(t, dir)
			wantRefusal(t, fmt.Sprintf("cut to %d of %d bytes (%d used)", n, len(full), used), stderr, code, "dpsql backup")
			if b, _ := os.ReadFile(dataFile(dir)); len(b) != n {
				t.Errorf("cut to %d: the refused file now has %d bytes", n, len(b))
			}
			continue
		}
		started++
		s := startServer(t, dir)
		if got := readAllOf(t, s.root()); !reflect.DeepEqual(got, want) {
			t.Errorf("cut to %d (only unused pages): data differs", n)
		}
		s.stop(syscall.SIGTERM)
	}
	t.Logf("file %d bytes, %d used; %d harmless cuts started", len(full), used, started)
}

// flipAll flips one byte in every copy of marker in b (stale copies may
// remain in free pages).
func flipAll(t *testing.T, b []byte, marker string) []byte {
	t.Helper()
	if !bytes.Contains(b, []byte(marker)) {
		t.Fatalf("%q not in the data file", marker)
	}
	d := bytes.Clone(b)
	for off := 0; ; {
		i := bytes.Index(d[off:], []byte(marker))
		if i < 0 {
			return d
		}
		d[off+i+len(marker)/2] ^= 0x01
		off += i + len(marker)
	}
}

// TestServeRefusesDamagedDataFile damages data files with flipped bytes:
// the server either refuses to start with one clear line, or starts and
// serves every record unchanged or refuses it with a corruption error;
// it never crashes and never serves changed data.
func TestServeRefusesDamagedDataFile(t *testing.T) {
	src := t.TempDir()
	want := seedDataDir(t, src)
	full, err := os.ReadFile(dataFile(src))
	if err != nil {
		t.Fatal(err)
	}
	used := usedBytes(t, dataFile(src))

	t.Run("meta pages", func(t *testing.T) {
		for _, off := range []int{20, 60, 4096 + 40} {
			d := bytes.Clone(full)
			d[off] ^= 0x04
			stderr, code := serveOnce(t, dirWith(t, d))
			wantRefusal(t, fmt.Sprintf("flip at byte %d", off), stderr, code, "damaged", "dpsql backup")
		}
	})

	t.Run("random flips", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(11, 12))
		refused, failed := 0, 0
		for round := range 8 {
			flips := []int{2000, 3}[round%2]
			d := bytes.Clone(full)
			for range flips {
				d[rng.IntN(used)] ^= byte(1 + rng.IntN(255))
			}
			dir := dirWith(t, d)
			s, err := launch(t, dir)
			if err != nil {
				refused++
				wantRefusal(t, fmt.Sprintf("round %d (%d flips)", round, flips), s.stderr.String(), 1)
				continue
			}
			root := s.root()
			for _, q := range snapshotQueries {
				got, err := tryQueryStrings(root, q)
				switch {
				case err != nil:
					failed++
					if !strings.Contains(err.Error(), "corrupt") && !strings.Contains(err.Error(), "damaged") {
						t.Logf("round %d: %s: %v", round, q, err) // e.g. a lost name: not found
					}
				case !reflect.DeepEqual(got, want[q]):
					t.Errorf("round %d (%d flips): %s served changed data:\n got %v\nwant %v", round, flips, q, got, want[q])
				}
			}
			s.stop(syscall.SIGTERM)
			for _, w := range crashWords {
				if strings.Contains(s.stderr.String(), w) {
					t.Errorf("round %d: the server log shows a crash:\n%s", round, s.stderr)
				}
			}
		}
		t.Logf("%d of 8 damaged files refused at start, %d reads refused", refused, failed)
	})

	t.Run("one row", func(t *testing.T) {
		s := startServer(t, dirWith(t, flipAll(t, full, "marker-row-one-0123456789")))
		root := s.root()
		_, err := tryQueryStrings(root, "SELECT note FROM raw.notes")
		if err == nil || !strings.Contains(err.Error(), "corrupt") || !strings.Contains(err.Error(), "notes") ||
			!strings.Contains(err.Error(), "dpsql check") || !strings.Contains(err.Error(), "dpsql backup") {
			t.Errorf("reading a damaged row: %v, want a corruption error naming the table, dpsql check and dpsql backup", err)
		}
		if got := queryStrings(t, root, snapshotQueries[0]); !reflect.DeepEqual(got, want[snapshotQueries[0]]) {
			t.Errorf("an intact table: %v", got)
		}
	})

	t.Run("one ledger entry", func(t *testing.T) {
		s := startServer(t, dirWith(t, flipAll(t, full, "USING independent WITH EPSILON = 0.5, SEED = 1")))
		_, err := tryQueryStrings(s.root(), "SHOW PRIVACY LEDGER FOR raw.t")
		if err == nil || !strings.Contains(err.Error(), "ledger entry") || !strings.Contains(err.Error(), "corrupt") {
			t.Errorf("reading a damaged ledger entry: %v", err)
		}
		// Nothing can be charged to a table whose ledger is damaged.
		if _, err := s.root().Exec("CREATE SYNTHETIC TABLE syn.again FROM raw.t USING independent WITH EPSILON = 0.1"); err == nil {
			t.Error("a synthesis was charged against a damaged ledger")
		}
	})
}

// format1Fixture returns the data file written by the last format-1 dpsql and
// what its queries returned then (internal/format1).
func format1Fixture(t *testing.T) ([]byte, map[string][][]string) {
	t.Helper()
	b, err := format1.File()
	if err != nil {
		t.Fatal(err)
	}
	var golden map[string][][]string
	if err := json.Unmarshal(format1.Golden, &golden); err != nil {
		t.Fatal(err)
	}
	return b, golden
}

// TestServeMigratesFormat1 starts on a data file of the previous format:
// users, grants, budgets, the ledger and the synthetic tables are all
// there, and the file then checks clean with checksums.
func TestServeMigratesFormat1(t *testing.T) {
	old, golden := format1Fixture(t)
	dir := dirWith(t, old)
	s := startServer(t, dir)
	root, bob := s.root(), s.open("bob", "bpw")
	check := func(db *sql.DB, who, q string, cols int) {
		t.Helper()
		want, ok := golden[who+": "+q]
		if !ok {
			t.Fatalf("no golden result for %s: %s", who, q)
		}
		got := queryStrings(t, db, q)
		trim := func(rows [][]string) [][]string { // columns stable across releases
			out := make([][]string, len(rows))
			for i, r := range rows {
				out[i] = r[:min(cols, len(r))]
			}
			return out
		}
		if !reflect.DeepEqual(trim(got), trim(want)) {
			t.Errorf("%s: %s\n got %v\nwant %v", who, q, got, want)
		}
	}
	check(root, "root", "SHOW PRIVACY LEDGER FOR raw.people", 8)
	check(root, "root", "SHOW PRIVACY BUDGET", 8)
	check(root, "root", "SHOW DOMAIN FOR raw.people", 9)
	check(root, "root", "SELECT sex, age, city FROM syn.people ORDER BY sex, age, city", 3)
	check(root, "root", "SELECT * FROM raw.items ORDER BY id", 3)
	check(root, "root", "SELECT sex, age, city, COUNT(*) FROM raw.people GROUP BY sex, age, city ORDER BY sex, age, city", 4)
	check(root, "root", "SHOW SYNTHETIC TABLES FROM syn", 13)
	check(bob, "bob", "SHOW PRIVACY LEDGER FOR raw.people", 8)
	check(bob, "bob", "SELECT COUNT(*) FROM syn.people_mst", 1)
	// The migrated ledger takes new charges.
	mustExec(t, bob, "CREATE SYNTHETIC TABLE syn.more FROM raw.people USING independent WITH EPSILON = 0.1, SEED = 3")
	s.stop(syscall.SIGTERM)

	stdout, stderr, code := runDpsql(t, "check", "--data-dir", dir)
	if code != 0 || !strings.Contains(stdout, fmt.Sprintf("catalog format %d", catalog.FormatVersion)) || !strings.Contains(stdout, "no problem found") {
		t.Errorf("dpsql check after migration: exit %d\n%s%s", code, stdout, stderr)
	}
}

// TestCheckCommand runs dpsql check on clean, damaged, empty, missing and
// in-use data files.
func TestCheckCommand(t *testing.T) {
	src := t.TempDir()
	seedDataDir(t, src)
	full, err := os.ReadFile(dataFile(src))
	if err != nil {
		t.Fatal(err)
	}

	stdout, stderr, code := runDpsql(t, "check", "--data-dir", src)
	if code != 0 || !strings.Contains(stdout, "no problem found") || !strings.Contains(stdout, "invariants hold") {
		t.Errorf("clean: exit %d\n%s%s", code, stdout, stderr)
	}
	if b, _ := os.ReadFile(dataFile(src)); !bytes.Equal(b, full) {
		t.Error("dpsql check changed the data file")
	}
	if stdout, _, code := runDpsql(t, "check", "--file", dataFile(src)); code != 0 || !strings.Contains(stdout, "no problem found") {
		t.Errorf("--file: exit %d\n%s", code, stdout)
	}

	for _, tc := range []struct {
		name string
		file []byte
		want []string
	}{
		{"damaged row", flipAll(t, full, "marker-row-one-0123456789"), []string{"corrupt", "dpsql_tables"}},
		{"damaged ledger entry", flipAll(t, full, "USING independent WITH EPSILON = 0.5, SEED = 1"), []string{"ledger entry"}},
		{"truncated", full[:len(full)/3+5], []string{"truncated"}},
		{"empty", nil, []string{"empty"}},
	} {
		dir := dirWith(t, tc.file)
		stdout, stderr, code := runDpsql(t, "check", "--data-dir", dir)
		if code == 0 {
			t.Errorf("%s: dpsql check exited 0:\n%s", tc.name, stdout)
			continue
		}
		for _, w := range append(tc.want, "problem") {
			if !strings.Contains(stdout+stderr, w) {
				t.Errorf("%s: output lacks %q:\n%s%s", tc.name, w, stdout, stderr)
			}
		}
		if !strings.Contains(stderr, "dpsql backup") {
			t.Errorf("%s: stderr does not point to backups:\n%s", tc.name, stderr)
		}
		for _, w := range crashWords {
			if strings.Contains(stdout+stderr, w) {
				t.Errorf("%s: crash in the output:\n%s%s", tc.name, stdout, stderr)
			}
		}
	}

	if _, stderr, code := runDpsql(t, "check", "--data-dir", t.TempDir()); code == 0 || !strings.Contains(stderr, "no data file") {
		t.Errorf("missing file: exit %d, %s", code, stderr)
	}

	s := startServer(t, src)
	_, stderr, code = runDpsql(t, "check", "--data-dir", src)
	if code == 0 || !strings.Contains(stderr, "in use by a running dpsql server") {
		t.Errorf("while the server runs: exit %d, %s", code, stderr)
	}
	if got := queryStrings(t, s.root(), "SELECT COUNT(*) FROM raw.notes"); got[0][0] != "3" {
		t.Errorf("the server was disturbed: %v", got)
	}
}

// TestBackupRestore backs up a running server (with writes going on),
// restores the copy in a second server and compares the budgets and the
// ledger; analysts are refused.
func TestBackupRestore(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	root := s.root()
	setupTiny(t, root, 2)
	mustExec(t, root,
		"CREATE USER bob IDENTIFIED BY 'bpw'",
		"GRANT SYNTHESIZE ON raw.t TO bob",
		"GRANT CREATE ON syn.* TO bob",
		"CREATE TABLE raw.log (id INT PRIMARY KEY, v INT)",
	)
	bob := s.open("bob", "bpw")
	mustExec(t, root, "CREATE SYNTHETIC TABLE syn.a FROM raw.t USING independent WITH EPSILON = 0.5, SEED = 1")
	mustExec(t, bob, "CREATE SYNTHETIC TABLE syn.b FROM raw.t USING independent WITH EPSILON = 0.25, SEED = 2")

	// Writes go on during the backup; they touch neither the budget nor
	// the ledger.
	stop, done := make(chan struct{}), make(chan error)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			if _, err := root.Exec("INSERT INTO raw.log VALUES (?, ?)", i, i); err != nil {
				done <- err
				return
			}
		}
	}()
	outDir := t.TempDir()
	out := filepath.Join(outDir, catalog.FileName)
	stdout, stderr, code := runDpsql(t, "backup", "--addr", s.addr, "--user", "root", "--password", rootPassword, "--out", out)
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if code != 0 || !strings.Contains(stdout, "no problem found") {
		t.Fatalf("dpsql backup: exit %d\n%s%s", code, stdout, stderr)
	}
	if fi, err := os.Stat(out); err != nil || fi.Mode().Perm()&0o077 != 0 {
		t.Errorf("backup file %v, %v: must exist, readable by its owner only", fi, err)
	}
	for _, d := range []string{dir, outDir} {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			if strings.Contains(e.Name(), "tmp") {
				t.Errorf("temporary file %s left in %s", e.Name(), d)
			}
		}
	}

	restored := startServer(t, outDir)
	rroot, rbob := restored.root(), restored.open("bob", "bpw")
	for _, q := range []string{"SHOW PRIVACY LEDGER FOR raw.t", "SHOW PRIVACY BUDGET", "SHOW PRIVACY BUDGET FOR raw.t", "SELECT x, y FROM syn.a ORDER BY x, y", "SHOW SYNTHETIC TABLES FROM syn"} {
		if a, b := queryStrings(t, root, q), queryStrings(t, rroot, q); !reflect.DeepEqual(a, b) {
			t.Errorf("%s:\n original %v\n restored %v", q, a, b)
		}
	}
	if a, b := queryStrings(t, bob, "SHOW PRIVACY LEDGER FOR raw.t"), queryStrings(t, rbob, "SHOW PRIVACY LEDGER FOR raw.t"); !reflect.DeepEqual(a, b) || len(a) != 1 {
		t.Errorf("bob's ledger:\n original %v\n restored %v", a, b)
	}
	// The copy holds the rows written up to the backup, consistently.
	if got := queryStrings(t, rroot, "SELECT COUNT(*), COUNT(DISTINCT id) FROM raw.log"); got[0][0] != got[0][1] {
		t.Errorf("restored raw.log: %v", got)
	}

	// Analysts are refused, over the command and in SQL.
	stdout, stderr, code = runDpsql(t, "backup", "--addr", s.addr, "--user", "bob", "--password", "bpw", "--out", filepath.Join(t.TempDir(), "x.db"))
	if code == 0 || !strings.Contains(stderr, "SUPER") {
		t.Errorf("backup as bob: exit %d\n%s%s", code, stdout, stderr)
	}
	wantMySQLError(t, bob, 1227, "BACKUP DPSQL")
	wantMySQLError(t, bob, 1227, "CALL dpsql_backup()")
	if _, err := os.Stat(filepath.Join(t.TempDir(), "x.db")); err == nil {
		t.Error("a refused backup wrote a file")
	}
}
