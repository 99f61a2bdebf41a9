package catalog

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	sqle "github.com/dolthub/go-mysql-server"
	"github.com/dolthub/go-mysql-server/enginetest/queries"
	"github.com/dolthub/go-mysql-server/enginetest/scriptgen/setup"
	"github.com/dolthub/go-mysql-server/memory"
	"github.com/dolthub/go-mysql-server/sql"
)

// TestDifferentialAgainstMemory loads go-mysql-server's standard enginetest
// fixtures into both the reference memory backend and a Store, then runs the
// enginetest QueryTests on both and compares the results: the memory
// backend is the oracle. Statements the Store does not support (UNIQUE
// secondary indexes, foreign keys, triggers) are skipped on the Store side;
// they do not change what a SELECT returns.
func TestDifferentialAgainstMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("differential run")
	}
	memPro := memory.NewDBProvider()
	memEng := sqle.NewDefault(memPro)
	memCtx := sql.NewContext(context.Background(), sql.WithSession(memory.NewSession(sql.NewBaseSession(), memPro)))

	s := mustOpen(t, "")
	h := newHarness(t, s)
	ctx := h.ctx("")

	run := func(e *sqle.Engine, ctx *sql.Context, q string) ([]sql.Row, error) {
		_, iter, _, err := e.Query(ctx, q)
		if err != nil {
			return nil, err
		}
		return sql.RowIterToRows(ctx, iter)
	}

	skippedTables := map[string]bool{}
	for _, group := range setup.SimpleSetup {
		for _, script := range group {
			for _, q := range script {
				if _, err := run(memEng, memCtx, q); err != nil {
					t.Fatalf("memory setup %q: %v", q, err)
				}
				if _, err := run(h.eng, ctx, q); err != nil {
					t.Logf("store skips setup statement %.80q: %v", q, err)
					if f := strings.Fields(strings.ToLower(q)); len(f) > 2 && f[0] == "create" && f[1] == "table" {
						skippedTables[strings.Trim(f[2], "`(")] = true
					}
				}
			}
		}
	}

	var compared, failed int
	for _, qt := range queries.QueryTests {
		if qt.Bindings != nil || mentionsAny(qt.Query, skippedTables) || mentionsAny(qt.Query, sessionDependent) {
			continue
		}
		want, err := run(memEng, memCtx, qt.Query)
		if err != nil {
			continue // not a query the reference answers
		}
		got, err := run(h.eng, ctx, qt.Query)
		compared++
		if err != nil {
			failed++
			t.Errorf("%s: store error %v; memory returned %d rows", qt.Query, err, len(want))
			continue
		}
		g, w := normRows(got), normRows(want)
		if !strings.Contains(strings.ToLower(qt.Query), "order by") {
			sortRows(g)
			sortRows(w)
		}
		if fmt.Sprint(g) != fmt.Sprint(w) {
			failed++
			t.Errorf("%s:\n store  %v\n memory %v", qt.Query, g, w)
		}
	}
	t.Logf("compared %d queries, %d differ", compared, failed)
	if compared < 500 {
		t.Errorf("only %d queries compared; fixtures did not load", compared)
	}
}

// sessionDependent marks queries whose answer depends on the session, not
// the storage backend.
var sessionDependent = map[string]bool{"connection_id": true, "is_used_lock": true}

func mentionsAny(q string, names map[string]bool) bool {
	lq := strings.ToLower(q)
	for n := range names {
		if strings.Contains(lq, n) {
			return true
		}
	}
	return false
}

func sortRows(rows [][]string) {
	sort.Slice(rows, func(i, j int) bool { return fmt.Sprint(rows[i]) < fmt.Sprint(rows[j]) })
}
