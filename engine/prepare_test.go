package engine

import (
	"strings"
	"testing"
)

// TestSQLPrepareDpsqlStatements: PREPARE … FROM and EXECUTE … USING of
// dpsql statements bind their placeholders as written literals; a string
// where a number goes is refused naming the parameter, and a text query
// with placeholders says how to give them values.
func TestSQLPrepareDpsqlStatements(t *testing.T) {
	f := newSynthFixture(t)
	f.exec(
		"PREPARE b FROM 'SET PRIVACY BUDGET FOR raw.people WITH EPSILON = ?, DELTA = ?'",
		"SET @e = 2, @d = 1e-9",
		"EXECUTE b USING @e, @d",
		"PREPARE c FROM 'CREATE SYNTHETIC TABLE syn.x FROM raw.people USING independent WITH EPSILON = ?, SEED = ?'",
		"SET @e = 0.5, @s = 3",
		"EXECUTE c USING @e, @s",
	)
	if rows := f.rows("SHOW PRIVACY BUDGET FOR raw.people"); toInt(rows[0][1]) != 2 {
		t.Errorf("budget after EXECUTE b = %v, want ε 2", rows)
	}
	rows := f.rows("SHOW SYNTHETIC TABLES FROM syn")
	if len(rows) != 1 || rows[0][1] != "x" || rows[0][5] != 0.5 {
		t.Errorf("synthetic tables after EXECUTE c = %v", rows)
	}
	ledger := f.rows("SHOW PRIVACY LEDGER FOR raw.people")
	if stmt := ledger[len(ledger)-1][3].(string); !strings.Contains(stmt, "EPSILON = 0.5") || !strings.Contains(stmt, "SEED = 3") {
		t.Errorf("ledger statement %q, want the bound values", stmt)
	}
	// A prepared statement without placeholders runs each time.
	f.exec("PREPARE s FROM 'SHOW PRIVACY BUDGET FOR raw.people'")
	for range 2 {
		if rows := f.rows("EXECUTE s"); len(rows) != 1 || rows[0][0] != "raw.people" {
			t.Errorf("EXECUTE s = %v", rows)
		}
	}

	for _, tc := range []struct {
		q, msg string
	}{
		{"EXECUTE b USING @nope, @d", "parameter 1 (EPSILON) must be a number, not NULL"},
		{"SET PRIVACY BUDGET FOR raw.people WITH EPSILON = ?, DELTA = ?", "has 2 ? placeholders without values"},
		{"SHOW PRIVACY BUDGET FOR ?", "expected table name"},
	} {
		_, _, err := query(f.e, f.root, tc.q)
		if errCode(err) != 1064 || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want 1064 with %q", tc.q, err, tc.msg)
		}
	}
	f.exec("SET @str = '3'")
	if _, _, err := query(f.e, f.root, "EXECUTE b USING @str, @d"); errCode(err) != 1064 ||
		!strings.Contains(err.Error(), "parameter 1 (EPSILON) must be a number, not the string '3'") {
		t.Errorf("a string for EPSILON: %v", err)
	}
	if rows := f.rows("SHOW PRIVACY BUDGET FOR raw.people"); toInt(rows[0][1]) != 2 {
		t.Errorf("budget after refused executions = %v", rows)
	}
}
