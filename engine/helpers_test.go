package engine

// Helpers shared by the engine's tests: building engines over memory or
// catalog storage, sessions, running queries, and reading results and
// error numbers. Fixtures with data live beside the tests that use them
// (dpFixture in budget_stmts_test.go, synthFixture in synthesize_test.go,
// answerFixture in answer_test.go).

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/shopspring/decimal"
)

// newTestEngine builds an engine over st with root's password "pw".
func newTestEngine(t testing.TB, st Storage, mod func(*Config)) *Engine {
	t.Helper()
	cfg := DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.RootPassword = "pw"
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	if mod != nil {
		mod(&cfg)
	}
	e, err := build(context.Background(), cfg, cfg.DataDir, st)
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// openDiskEngine opens a test engine over the catalog storage in dir, as
// a server (re)start does; mod, if not nil, adjusts the config.
func openDiskEngine(t testing.TB, dir string, mod func(*Config)) *Engine {
	t.Helper()
	st, err := openStorage(dir)
	if err != nil {
		t.Fatal(err)
	}
	return newTestEngine(t, st, mod)
}

// sessionCtx returns a context for a session of user@host, as a connection
// would get.
func sessionCtx(e *Engine, id uint32, user, host string) *sql.Context {
	base := sql.NewBaseSessionWithClientServer("", sql.Client{User: user, Address: host}, id)
	return sql.NewContext(context.Background(), sql.WithSession(e.store.NewSession(base)))
}

// query runs q in ctx and drains it.
func query(e *Engine, ctx *sql.Context, q string) (sql.Schema, []sql.Row, error) {
	sch, iter, _, err := e.sqle.Query(ctx, q)
	if err != nil {
		return nil, nil, err
	}
	rows, err := sql.RowIterToRows(ctx, iter)
	return sch, rows, err
}

// errCode is the MySQL error number a client would see for err (0 if nil).
func errCode(err error) int {
	if err == nil {
		return 0
	}
	return sql.CastSQLError(err).Num
}

// toInt converts a numeric result value (int64, or a decimal for SUM).
func toInt(v any) int64 {
	switch v := v.(type) {
	case int64:
		return v
	case int32:
		return int64(v)
	case float64:
		return int64(v)
	case interface{ IntPart() int64 }:
		return v.IntPart()
	}
	return -1
}

// sameRows compares results, numbers by value; unordered ones as sets.
func sameRows(got, want []sql.Row, ordered bool) bool {
	key := func(r sql.Row) string {
		parts := make([]string, len(r))
		for i, v := range r {
			switch x := v.(type) {
			case int64, int32, int8, int16, uint8, uint16, uint32, uint64, int:
				parts[i] = fmt.Sprint(x)
			case float64:
				if x == math.Trunc(x) {
					parts[i] = fmt.Sprint(int64(x))
				} else {
					parts[i] = fmt.Sprint(x)
				}
			case decimal.Decimal:
				parts[i] = x.String()
			default:
				parts[i] = fmt.Sprintf("%v", x)
			}
		}
		return strings.Join(parts, "|")
	}
	g := make([]string, len(got))
	for i, r := range got {
		g[i] = key(r)
	}
	w := make([]string, len(want))
	for i, r := range want {
		w[i] = key(r)
	}
	if !ordered {
		slices.Sort(g)
		slices.Sort(w)
	}
	return slices.Equal(g, w)
}

// budgetRows maps SHOW PRIVACY BUDGET rows by table.
func budgetRows(rows []sql.Row) map[string]sql.Row {
	m := make(map[string]sql.Row, len(rows))
	for _, r := range rows {
		m[r[0].(string)] = r
	}
	return m
}

// showDomainRows maps SHOW DOMAIN rows by column.
func showDomainRows(rows []sql.Row) map[string]sql.Row {
	m := make(map[string]sql.Row, len(rows))
	for _, r := range rows {
		m[r[0].(string)] = r
	}
	return m
}
