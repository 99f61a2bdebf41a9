package main

// Helpers shared by the integration tests: running queries and reading
// their results as strings, checking MySQL error numbers, the mariadb
// client, the privacy budget and ledger, and ../shared/data. The server
// harness (building the binary, starting servers) is in server_test.go.

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// multiStatements lets a pool's connections send multi-statement scripts.
func multiStatements(c *mysql.Config) { c.MultiStatements = true }

// mustExec runs statements and fails the test on the first error.
func mustExec(t testing.TB, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// queryStrings runs q and returns every row as strings (NULL as "NULL").
func queryStrings(t testing.TB, db *sql.DB, q string, args ...any) [][]string {
	t.Helper()
	out, err := tryQueryStrings(db, q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return out
}

// queryer runs queries: a *sql.DB or one *sql.Conn.
type queryer interface {
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
}

// tryQueryStrings is queryStrings returning the error.
func tryQueryStrings(db queryer, q string, args ...any) ([][]string, error) {
	return queryStringsContext(context.Background(), db, q, args...)
}

// queryStringsContext runs q on db and returns every row as strings.
func queryStringsContext(ctx context.Context, db queryer, q string, args ...any) ([][]string, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return scanStrings(rows)
}

func scanStrings(rows *sql.Rows) ([][]string, error) {
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out [][]string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		row := make([]string, len(cols))
		for i, v := range vals {
			row[i] = "NULL"
			if v.Valid {
				row[i] = v.String
			}
		}
		out = append(out, row)
	}
	return out, rows.Err()
}

// mysqlCode is the MySQL error number of err, or 0.
func mysqlCode(err error) uint16 {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

// mariadbCLI returns the path of the mariadb (or mysql) client, skipping
// the test if neither is installed.
func mariadbCLI(t testing.TB) string {
	p, err := mariadbLookPath()
	if err != nil {
		t.Skip("mariadb/mysql CLI not installed (apt-get install mariadb-client); .ci/run installs it")
	}
	return p
}

// lines splits CLI output into trimmed lines.
func lines(s string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// sharedData returns the path of a file in ../shared/data relative to the
// repository root, skipping the test if it is absent.
func sharedData(t testing.TB, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "..", "shared", "data", name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Skipf("%s not present (needs ../shared/data next to the repository)", p)
	}
	return p
}

// wantMySQLError checks the error number of running q on db (0: success).
func wantMySQLError(t *testing.T, db *sql.DB, code uint16, q string, args ...any) {
	t.Helper()
	rows, err := db.Query(q, args...)
	if err == nil {
		// Errors of statements that return rows may surface while reading.
		_, err = scanStrings(rows)
		rows.Close()
	}
	if got := mysqlCode(err); got != code {
		t.Errorf("%s: error %d (%v), want %d", q, got, err, code)
	}
}

// columns returns the column names of q's result.
func columns(t *testing.T, db *sql.DB, q string) []string {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	return cols
}

// preparedStrings runs q as a server-side prepared statement.
func preparedStrings(t *testing.T, db *sql.DB, q string, args ...any) [][]string {
	t.Helper()
	stmt, err := db.Prepare(q)
	if err != nil {
		t.Fatalf("prepare %s: %v", q, err)
	}
	defer stmt.Close()
	rows, err := stmt.Query(args...)
	if err != nil {
		t.Fatalf("%s %v: %v", q, args, err)
	}
	defer rows.Close()
	out, err := scanStrings(rows)
	if err != nil {
		t.Fatalf("%s %v: %v", q, args, err)
	}
	return out
}

// mariadbLookPath finds the mariadb or mysql client, for tests that check
// the CLI as one part among others (mariadbCLI skips the whole test).
func mariadbLookPath() (string, error) {
	for _, name := range []string{"mariadb", "mysql"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("mariadb/mysql client not installed")
}

// normalizeTimes rewrites column col (a DATETIME) of rows in one format.
func normalizeTimes(t *testing.T, rows [][]string, col int) [][]string {
	t.Helper()
	out := make([][]string, len(rows))
	for i, r := range rows {
		tm, err := time.Parse("2006-01-02 15:04:05.999999", r[col])
		if err != nil {
			t.Fatalf("row %v: column %d is not a DATETIME: %v", r, col, err)
		}
		out[i] = slices.Clone(r)
		out[i][col] = tm.Format(time.RFC3339Nano)
	}
	return out
}

// sortedRows sorts rows for comparison as sets.
func sortedRows(rows [][]string) [][]string {
	out := slices.Clone(rows)
	slices.SortFunc(out, func(a, b []string) int { return strings.Compare(strings.Join(a, "|"), strings.Join(b, "|")) })
	return out
}

func equalRows(a, b [][]string) bool {
	return slices.EqualFunc(a, b, func(x, y []string) bool { return slices.Equal(x, y) })
}

// inDatabase makes a pool's connections start in database db (table
// functions need a current database).
func inDatabase(db string) func(*mysql.Config) {
	return func(c *mysql.Config) { c.DBName = db }
}

// connQuery runs q on conn and returns its rows as text.
func connQuery(ctx context.Context, conn *sql.Conn, q string) (string, error) {
	got, err := queryStringsContext(ctx, conn, q)
	return fmt.Sprint(got), err
}

// budgetRow returns SHOW PRIVACY BUDGET FOR table as strings.
func budgetRow(t *testing.T, db *sql.DB, table string) []string {
	t.Helper()
	rows := queryStrings(t, db, "SHOW PRIVACY BUDGET FOR "+table)
	if len(rows) != 1 {
		t.Fatalf("SHOW PRIVACY BUDGET FOR %s = %v", table, rows)
	}
	return rows[0]
}

// budgetFloat is column col (rho_total = 3, rho_spent = 4) of a budget row.
func budgetFloat(t *testing.T, row []string, col int) float64 {
	t.Helper()
	x, err := strconv.ParseFloat(row[col], 64)
	if err != nil {
		t.Fatalf("budget row %v column %d: %v", row, col, err)
	}
	return x
}

// lastLedgerEntry returns the status and note of the table's last ledger
// entry.
func lastLedgerEntry(t *testing.T, db *sql.DB, table string) (status, note string) {
	t.Helper()
	rows := queryStrings(t, db, "SHOW PRIVACY LEDGER FOR "+table)
	if len(rows) == 0 {
		t.Fatalf("empty ledger for %s", table)
	}
	last := rows[len(rows)-1]
	return last[6], last[7]
}
