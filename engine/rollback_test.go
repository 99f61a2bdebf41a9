package engine

import (
	"strings"
	"testing"
)

// TestRollbackWarns: ROLLBACK succeeds, keeps what the transaction's
// statements wrote (every statement commits on its own) and says so with
// MySQL's warning 1196; COMMIT and an empty ROLLBACK work as before.
func TestRollbackWarns(t *testing.T) {
	e := openDiskEngine(t, t.TempDir(), nil)
	ctx := sessionCtx(e, 1, "root", "localhost")
	for _, q := range []string{
		"CREATE DATABASE d", "CREATE TABLE d.t (id INT PRIMARY KEY)",
		"BEGIN", "INSERT INTO d.t VALUES (1)", "COMMIT",
		"START TRANSACTION", "INSERT INTO d.t VALUES (2)",
	} {
		if _, _, err := query(e, ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	ctx.ClearWarnings()
	if _, _, err := query(e, ctx, "ROLLBACK"); err != nil {
		t.Fatalf("ROLLBACK: %v", err)
	}
	w := ctx.Warnings()
	if len(w) != 1 || w[0].Code != codeNotRolledBack || !strings.Contains(w[0].Message, "commits every statement") {
		t.Errorf("ROLLBACK warnings = %+v, want one %d", w, codeNotRolledBack)
	}
	if _, rows, err := query(e, ctx, "SELECT COUNT(*) FROM d.t"); err != nil || toInt(rows[0][0]) != 2 {
		t.Errorf("rows after ROLLBACK: %v %v, want 2 (both inserts kept)", rows, err)
	}
	// An analyst may roll back too: the statement reads nothing.
	if _, _, err := query(e, ctx, "CREATE USER a IDENTIFIED BY 'x'"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := query(e, sessionCtx(e, 2, "a", "%"), "ROLLBACK"); err != nil {
		t.Errorf("analyst ROLLBACK: %v", err)
	}
}
