package engine

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dolthub/go-mysql-server/sql"
)

// TestCreateSyntheticIdentifiers: CREATE SYNTHETIC TABLE applies MySQL's
// identifier rules to its target before anything is charged: a name of 65
// characters, with NUL, with invalid UTF-8, with a supplementary character
// or a trailing space, or a database name with '/', is refused with
// MySQL's error and an escaped name; 64 characters (also of two bytes
// each) are accepted; SHOW TABLES keeps working.
func TestCreateSyntheticIdentifiers(t *testing.T) {
	f := newSynthFixture(t)
	const using = " FROM raw.people USING independent WITH EPSILON = 0.5, PGM_ITERS = 10"
	a64, a65 := strings.Repeat("a", 64), strings.Repeat("b", 65)
	e64 := strings.Repeat("é", 64)
	refused := []struct {
		name   string
		target string // as written in the statement
		code   int
		msg    string
	}{
		{"65 characters", "syn.`" + a65 + "`", 1059, "Identifier name '" + a65 + "' is too long"},
		{"65 two-byte characters", "syn.`" + e64 + "é`", 1059, "Identifier name '" + e64 + "é' is too long"},
		{"NUL", "syn.`n\x00ul`", 1103, `Incorrect table name 'n\x00ul'`},
		{"invalid UTF-8", "syn.`\xff\xfe`", 1103, `Incorrect table name '\xFF\xFE'`},
		{"invalid UTF-8 after a prefix", "syn.`x\xff\xfe`", 1103, `Incorrect table name 'x\xFF\xFE'`},
		{"supplementary character", "syn.`t😀`", 1103, `Incorrect table name 't\U0001F600'`},
		{"trailing space", "syn.`t `", 1103, "Incorrect table name 't '"},
		{"database too long", "`" + a65 + "`.t", 1059, "Identifier name '" + a65 + "' is too long"},
		{"database with a slash", "`s/yn`.t", 1102, "Incorrect database name 's/yn'"},
		{"database with invalid UTF-8", "`s\xffyn`.t", 1102, `Incorrect database name 's\xFFyn'`},
		{"IF NOT EXISTS", "IF NOT EXISTS syn.`" + a65 + "`", 1059, "is too long"},
	}
	ledger := func() string { return fmt.Sprint(f.rows("SHOW PRIVACY LEDGER FOR raw.people")) }
	tables := func() []sql.Row { return f.rows("SHOW TABLES FROM syn") }
	before, nEntries, spent := ledger(), len(f.entries()), f.budget().RhoSpent
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			qs := []string{"CREATE SYNTHETIC TABLE " + tt.target + using}
			if utf8.ValidString(tt.target) {
				// The CALL twin takes the statement as a string, which
				// must be valid UTF-8 itself.
				qs = append(qs, "CALL dpsql_create_synthetic_table("+sqlString("CREATE SYNTHETIC TABLE "+tt.target+using)+")")
			}
			for _, q := range qs {
				_, _, err := query(f.e, f.root, q)
				if got := errCode(err); got != tt.code {
					t.Fatalf("%q: code %d (%v), want %d", q, got, err, tt.code)
				}
				msg := sql.CastSQLError(err).Message
				if !strings.Contains(msg, tt.msg) || !utf8.ValidString(msg) || strings.ContainsRune(msg, 0) {
					t.Fatalf("%q: message %q, want it to contain %q and no raw bytes", q, msg, tt.msg)
				}
			}
			if got := ledger(); got != before || len(f.entries()) != nEntries || f.budget().RhoSpent != spent {
				t.Fatalf("the ledger changed:\n%s\nwant\n%s", got, before)
			}
		})
	}
	if got := tables(); len(got) != 0 {
		t.Fatalf("tables after refusals: %v", got)
	}

	// At the limit: 64 characters, also when they take 128 bytes.
	for _, name := range []string{a64, e64} {
		f.exec("CREATE SYNTHETIC TABLE syn.`" + name + "`" + using)
		if got := f.rows("SELECT COUNT(*) FROM syn.`" + name + "`"); toInt(got[0][0]) <= 0 {
			t.Errorf("%s: %v rows", name, got)
		}
	}
	if got := len(f.entries()); got != nEntries+2 {
		t.Errorf("%d ledger entries, want %d", got, nEntries+2)
	}
	got := tables()
	if len(got) != 2 || !utf8.ValidString(fmt.Sprint(got)) {
		t.Errorf("SHOW TABLES FROM syn = %q, want the two valid tables", got)
	}
	if rows := f.rows("SELECT table_name FROM information_schema.tables WHERE table_schema = 'syn'"); len(rows) != 2 {
		t.Errorf("information_schema.tables = %q", rows)
	}
}

// sqlString quotes s as a MySQL string literal, escaping NUL and
// backslashes so that any bytes survive.
func sqlString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, "'", `\'`, "\x00", `\0`)
	return "'" + r.Replace(s) + "'"
}
