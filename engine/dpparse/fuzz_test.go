package dpparse

import (
	"errors"
	"reflect"
	"testing"
)

var fuzzSeeds = []string{
	"SHOW DPSQL STATUS",
	"BACKUP DPSQL",
	"/* c */ show dpsql status; SELECT 1",
	"-- x\n# y\nSHOW MECHANISMS",
	"SHOW SYNTHETIC TABLES FROM `d`",
	"SHOW PRIVACY BUDGET FOR d.t",
	"SHOW PRIVACY LEDGER FOR t",
	"SHOW DOMAIN FOR `a``b`",
	"SHOW ERROR BOUNDS FOR s CONFIDENCE 0.9",
	"SET PRIVACY BUDGET FOR t WITH EPSILON = 1, DELTA = 1e-9",
	"ALTER TABLE t SET DOMAIN c BETWEEN -1 AND 1.5 BINS 4",
	"ALTER TABLE d.t SET DOMAIN c IN (1, 'a', NULL, \"b\\n\")",
	"ALTER TABLE t ADD c INT",
	"GRANT SYNTHESIZE ON t TO 'u'@'h'",
	"REVOKE SYNTHESIZE ON t FROM u",
	"GRANT SELECT ON t TO u",
	"CREATE SYNTHETIC TABLE IF NOT EXISTS s FROM t USING aim WITH epsilon = 1e-9, x = 'y', z = w WORKLOAD ALL 2-WAY",
	"CREATE SYNTHETIC TABLE s FROM t USING aim WORKLOAD (SELECT a, COUNT(*) FROM t WHERE b IN (1, 2) GROUP BY a WEIGHT 2; SELECT COUNT(*) FROM t)",
	"CREATE SYNTHETIC TABLE s FROM t USING aim WORKLOAD (SELECT weight, COUNT(*) FROM t GROUP BY weight WEIGHT 3;)",
	"CREATE SYNTHETIC TABLE s FROM t USING aim WORKLOAD (SELECT COUNT(*) FROM t WHERE c = ')' -- )\n)",
	"CREATE TABLE t (a INT)",
	"/*!50000 SHOW DPSQL STATUS */",
}

// FuzzParse checks that Parse never panics, that its three outcomes are
// exclusive, and that every parsed statement prints to canonical SQL that
// parses back to an equal statement.
func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		stmt, n, ok, err := Parse(text)
		switch {
		case !ok:
			if stmt != nil || n != 0 || err != nil {
				t.Fatalf("not ours but returned %v, %d, %v", stmt, n, err)
			}
			return
		case err != nil:
			var e *Error
			if !errors.As(err, &e) || stmt != nil || n != 0 {
				t.Fatalf("error %v (%T) with statement %v, n %d", err, err, stmt, n)
			}
			if e.Pos < 0 || e.Pos > len(text) {
				t.Fatalf("error position %d outside [0, %d]", e.Pos, len(text))
			}
			return
		}
		if stmt == nil || n <= 0 || n > len(text) {
			t.Fatalf("ok with statement %v, n %d of %d", stmt, n, len(text))
		}
		// The first statement alone parses the same.
		if prefix, m, ok, err := Parse(text[:n]); !ok || err != nil || m != n || !reflect.DeepEqual(prefix, stmt) {
			t.Fatalf("text[:n] = %q parses to %v, %d, %v, %v", text[:n], prefix, m, ok, err)
		}
		canon := stmt.String()
		again, m, ok, err := Parse(canon)
		if !ok || err != nil || m != len(canon) {
			t.Fatalf("canonical %q: ok %v, n %d, err %v", canon, ok, m, err)
		}
		if !reflect.DeepEqual(again, stmt) {
			t.Fatalf("canonical %q re-parses differently:\n%#v\n%#v", canon, again, stmt)
		}
	})
}

// FuzzPrepare checks that Prepare never panics, agrees with Parse on
// texts without placeholders, and that binding numbers to a prepared
// statement's placeholders gives text that Parse handles without panic.
func FuzzPrepare(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Add("SET PRIVACY BUDGET FOR t WITH EPSILON = ?, DELTA = ?")
	f.Add("ALTER TABLE t SET DOMAIN c BETWEEN ? AND ? BINS ?")
	f.Fuzz(func(t *testing.T, text string) {
		p, n, ok, err := Prepare(text)
		if !ok || err != nil {
			return
		}
		if len(p.Params) == 0 {
			stmt, m, _, perr := Parse(text)
			if perr != nil || m != n || !reflect.DeepEqual(stmt, p.Stmt) {
				t.Fatalf("no placeholders but Parse gives %v, %d, %v", stmt, m, perr)
			}
		}
		vals := make([]Value, len(p.Params))
		for i := range vals {
			vals[i] = Number(1)
		}
		bound, err := p.Bind(vals)
		if err != nil {
			t.Fatalf("Bind: %v", err)
		}
		_, _, _, _ = Parse(bound)
	})
}
