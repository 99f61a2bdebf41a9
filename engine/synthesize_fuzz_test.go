package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/budget"
	"github.com/dpsql/dpsql/engine/dpparse"
)

// FuzzSynthOptions runs CREATE SYNTHETIC TABLE with arbitrary ε, δ, ROWS,
// ROUNDS, SEED and workload weights on every mechanism. Whatever the
// values, a request is either refused before its charge or runs to a
// committed or failed ledger entry: never a panic (which the engine would
// turn into an internal error), never an entry left reserved, never a
// ledger whose invariants break.
func FuzzSynthOptions(f *testing.F) {
	seeds := []struct {
		mech               uint8
		eps, delta, w1, w2 float64
		rows, rounds, seed int64
	}{
		{0, 1, 1e-7, 1, 1, 50, 4, 1},
		{4, 1, 0, 1e300, 1e-300, 0, 0, 0},    // σ = +Inf once
		{4, 1, 0, 1e6, 1e-6, 0, 0, 0},        // the widest weights allowed
		{0, 1e-200, 1e-300, 1, 1, 0, 1e9, 0}, // ROUNDS far above the maximum
		{2, 1e-7, 1e-300, 1, 1, 0, 63, 0},
		{1, 0.1, 0.9999999999999999, 1, 1, 0, 0, 0}, // δ above the budget's
		{3, 5e-324, 1e-7, 1, 2, 1, 0, -1},
		{0, 1e308, 1e-7, 1, 1, 4194305, 3, 0},
		{2, 3, 1e-7, 0, 1, 10, 2, 0},
		{2, 1e-7, 1e-300, 1, 1, 0, 3, 0}, // σ ≈ 1e11: the estimated total is huge
	}
	for _, s := range seeds {
		f.Add(s.mech, s.eps, s.delta, s.w1, s.w2, s.rows, s.rounds, s.seed)
	}
	e := openDiskEngine(f, f.TempDir(), nil)
	root := sessionCtx(e, 1, RootUser, localhost)
	for _, q := range []string{
		"CREATE DATABASE raw", "CREATE DATABASE syn",
		"CREATE TABLE raw.t (a INT NOT NULL CHECK (a BETWEEN 0 AND 2), b ENUM('x','y') NOT NULL)",
		"INSERT INTO raw.t VALUES (0,'x'),(1,'y'),(2,'x'),(1,'x'),(0,'y'),(2,'y'),(1,'y')",
		"SET PRIVACY BUDGET FOR raw.t WITH EPSILON = 1000, DELTA = 1e-7",
	} {
		if _, _, err := query(e, root, q); err != nil {
			f.Fatalf("%s: %v", q, err)
		}
	}
	src, err := e.resolveTable(root, dpparse.TableName{DB: "raw", Name: "t"})
	if err != nil {
		f.Fatal(err)
	}
	mechs := []string{"aim", "mst", "mwem", "independent", "gaussian"}
	num := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

	f.Fuzz(func(t *testing.T, mech uint8, eps, delta, w1, w2 float64, rows, rounds, seed int64) {
		name := mechs[int(mech)%len(mechs)]
		opts := []string{"EPSILON = " + num(eps)}
		if delta != 0 {
			opts = append(opts, "DELTA = "+num(delta))
		}
		if rows != 0 {
			opts = append(opts, "ROWS = "+strconv.FormatInt(rows, 10))
		}
		if seed != 0 {
			opts = append(opts, "SEED = "+strconv.FormatInt(seed, 10))
		}
		// Many rounds are valid but slow (each one fits a model): keep the
		// accepted range short and let values past the maximum through.
		if rounds > 64 && rounds <= 100000 {
			rounds %= 64
		}
		switch name {
		case "aim":
			opts = append(opts, "PGM_ITERS = 3", "FINAL_ITERS = 3")
			if rounds != 0 {
				opts = append(opts, "ROUNDS = "+strconv.FormatInt(rounds, 10))
			}
		case "mwem":
			opts = append(opts, "PGM_ITERS = 3", "FINAL_ITERS = 3")
			if rounds != 0 {
				opts = append(opts, "ROUNDS = "+strconv.FormatInt(rounds, 10))
			}
		default:
			if name != "gaussian" {
				opts = append(opts, "PGM_ITERS = 3")
			}
		}
		q := fmt.Sprintf("CREATE SYNTHETIC TABLE syn.f FROM raw.t USING %s WITH %s WORKLOAD "+
			"(SELECT a, COUNT(*) FROM t GROUP BY a WEIGHT %s; SELECT a, b, COUNT(*) FROM t GROUP BY a, b WEIGHT %s)",
			name, strings.Join(opts, ", "), num(w1), num(w2))
		_, _, err := query(e, root, q)
		if errors.Is(err, ErrInternal) || err != nil && strings.Contains(err.Error(), "internal error") {
			t.Fatalf("%s: %v", q, err)
		}
		if err == nil {
			if _, _, err := query(e, root, "DROP TABLE syn.f"); err != nil {
				t.Fatal(err)
			}
		}
		entries, lerr := e.dp.ledger.Entries(src.LedgerKey(), "")
		if lerr != nil {
			t.Fatal(lerr)
		}
		if last := entries[len(entries)-1]; last.Status == budget.StatusReserved {
			t.Fatalf("%s: entry %d left reserved (err %v)", q, last.ID, err)
		}
		if err := e.dp.ledger.Check(); err != nil {
			t.Fatal(err)
		}
		// Keep the budget from running out over a long fuzzing run.
		if info, _ := e.dp.ledger.Budget(src.LedgerKey()); info.RhoRemaining < info.RhoTotal/2 {
			if _, err := e.dp.ledger.SetBudget(context.Background(), src.LedgerKey(), "raw.t", "root", "fuzz", info.EpsilonTotal*2, info.Delta); err != nil {
				t.Fatal(err)
			}
		}
	})
}
