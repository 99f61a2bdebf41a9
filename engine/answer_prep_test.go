package engine

import "testing"

// TestModelAnswerSQLPrepare: SQL PREPARE and EXECUTE of a COUNT query on a
// synthetic table work, and run on the rows.
func TestModelAnswerSQLPrepare(t *testing.T) {
	f := newAnswerFixture(t)
	f.exec("PREPARE s FROM 'SELECT sex, COUNT(*) FROM syn.p WHERE age < ? GROUP BY sex'", "SET @a = 5",
		"PREPARE s2 FROM 'SELECT sex, COUNT(*) FROM syn.p GROUP BY sex'")
	for _, c := range []struct{ exec, plain string }{
		{"EXECUTE s USING @a", "SELECT sex, COUNT(*) FROM plain.p WHERE age < 5 GROUP BY sex"},
		{"EXECUTE s2", "SELECT sex, COUNT(*) FROM plain.p GROUP BY sex"},
	} {
		if got, want := f.rows(c.exec), f.rows(c.plain); !sameRows(got, want, false) {
			t.Errorf("%s = %v, the rows give %v", c.exec, got, want)
		}
	}
}
