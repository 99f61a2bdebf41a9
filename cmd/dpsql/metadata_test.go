package main

import (
	"database/sql"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// Integration tests of the metadata clients see: the types `dpsql import`
// gives columns, the types of synthetic tables, and the names CREATE
// SYNTHETIC TABLE accepts.

// columnTypes returns column_name, column_type, data_type,
// character_maximum_length, numeric_precision and is_nullable of
// db.table's columns, as db's user sees them in information_schema.
func columnTypes(t *testing.T, db *sql.DB, schema, table string) [][]string {
	t.Helper()
	return queryStrings(t, db, "SELECT column_name, column_type, data_type, character_maximum_length, numeric_precision, is_nullable"+
		" FROM information_schema.columns WHERE table_schema = ? AND table_name = ? ORDER BY ordinal_position", schema, table)
}

// TestImportTypesAreFixed: the importer's types never come from the
// values' lengths or magnitudes: a file whose longest name has 13
// characters and whose largest salary exceeds 2^31 gets the same columns
// as one of short names and small salaries.
func TestImportTypesAreFixed(t *testing.T) {
	s := startServer(t, t.TempDir())
	root := s.root()
	header := []string{"name", "salary", "score", "age"}
	long := writeCSV(t, header, [][]string{
		{"Maximilianus!", "3000000000", "0.5", "41"},
		{"Bo", "12", "1e3", ""},
	})
	short := writeCSV(t, header, [][]string{{"Al", "7", "2.25", "30"}, {"Cy", "-8", "3", "52"}})
	for table, path := range map[string]string{"imp.long": long, "imp.short": short} {
		if _, stderr, code := runDpsql(t, importArgs(s, table, path)...); code != 0 {
			t.Fatalf("import %s: %s", table, stderr)
		}
	}
	want := [][]string{
		{"name", "varchar(255)", "varchar", "255", "NULL", "NO"},
		{"salary", "bigint", "bigint", "NULL", "19", "YES"},
		{"score", "double", "double", "NULL", "22", "YES"},
		{"age", "bigint", "bigint", "NULL", "19", "YES"},
	}
	for _, table := range []string{"long", "short"} {
		if got := columnTypes(t, root, "imp", table); !reflect.DeepEqual(got, want) {
			t.Errorf("imp.%s columns =\n%v\nwant\n%v", table, got, want)
		}
	}
	if got := queryStrings(t, root, "SELECT name, salary FROM imp.long WHERE salary > 2147483647"); len(got) != 1 || got[0][0] != "Maximilianus!" {
		t.Errorf("imp.long rows = %v", got)
	}

	// A text value longer than VARCHAR(255) stops the import, which says
	// how to proceed; importing into a table created with TEXT works.
	tooLong := writeCSV(t, []string{"id", "note"}, [][]string{{"1", "short"}, {"2", strings.Repeat("x", 256)}})
	_, stderr, code := runDpsql(t, importArgs(s, "imp.notes", tooLong)...)
	if code != 1 || !strings.Contains(stderr, "line 3, column `note`") || !strings.Contains(stderr, "create the table first") {
		t.Fatalf("import of a 256-character value: exit %d, %s", code, stderr)
	}
	if got := queryStrings(t, root, "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'imp' AND table_name = 'notes'"); got[0][0] != "0" {
		t.Error("the table was created although the import failed")
	}
	mustExec(t, root, "CREATE TABLE imp.notes (id BIGINT, note TEXT)")
	if _, stderr, code := runDpsql(t, importArgs(s, "imp.notes", tooLong)...); code != 0 {
		t.Fatalf("import into a TEXT column: %s", stderr)
	}
}

// TestSyntheticTypesOverTheWire: an analyst sees, for two synthetic tables
// made from sources with the same public domain but different raw types
// (an imported VARCHAR(255)/BIGINT table and a hand-made VARCHAR(13)/INT
// one), the same column types everywhere (information_schema, SHOW CREATE
// TABLE, DESCRIBE, result metadata, SHOW DOMAIN), derived from the domain.
func TestSyntheticTypesOverTheWire(t *testing.T) {
	s := startServer(t, t.TempDir())
	root := s.root()
	var rows [][]string
	for i := range 40 {
		rows = append(rows, []string{[]string{"Maximilianus!", "Bo", "Al"}[i%3], fmt.Sprint(3000000000 + i*7), []string{"F", "M"}[i%2]})
	}
	path := writeCSV(t, []string{"name", "salary", "sex"}, rows)
	if _, stderr, code := runDpsql(t, importArgs(s, "raw.imported", path)...); code != 0 {
		t.Fatalf("import: %s", stderr)
	}
	mustExec(t, root,
		"CREATE TABLE raw.handmade (name VARCHAR(13) NOT NULL, salary INT, sex VARCHAR(1) NOT NULL)",
		"INSERT INTO raw.handmade VALUES ('Bo', 12, 'F'), ('Maximilianus!', 2000000000, 'M'), ('Al', NULL, 'M')",
		"CREATE DATABASE syn",
		"CREATE USER analyst IDENTIFIED BY 'apw'",
		"GRANT CREATE ON syn.* TO analyst",
	)
	for _, src := range []string{"raw.imported", "raw.handmade"} {
		mustExec(t, root,
			"SET PRIVACY BUDGET FOR "+src+" WITH EPSILON = 10, DELTA = 1e-6",
			"ALTER TABLE "+src+" SET DOMAIN name IN ('Al', 'Bo', 'Maximilianus!', 'Zoé')",
			"ALTER TABLE "+src+" SET DOMAIN salary BETWEEN 0 AND 4000000000 BINS 8",
			"ALTER TABLE "+src+" SET DOMAIN sex IN ('F', 'M')",
			"GRANT SYNTHESIZE ON "+src+" TO analyst",
		)
	}
	analyst := s.open("analyst", "apw")
	mustExec(t, analyst,
		"CREATE SYNTHETIC TABLE syn.a FROM raw.imported USING independent WITH EPSILON = 1, ROWS = 30, PGM_ITERS = 10",
		"CREATE SYNTHETIC TABLE syn.b FROM raw.handmade USING independent WITH EPSILON = 1, ROWS = 30, PGM_ITERS = 10",
	)
	want := [][]string{
		{"name", "varchar(13)", "varchar", "13", "NULL", "NO"}, // 'Maximilianus!' is a declared value
		{"salary", "bigint", "bigint", "NULL", "19", "YES"},
		{"sex", "varchar(1)", "varchar", "1", "NULL", "NO"},
	}
	for _, table := range []string{"a", "b"} {
		if got := columnTypes(t, analyst, "syn", table); !reflect.DeepEqual(got, want) {
			t.Errorf("syn.%s columns =\n%v\nwant\n%v", table, got, want)
		}
	}
	showCreate := func(table string) string {
		// The column definitions: the table's comment names its source.
		sc, _, _ := strings.Cut(queryStrings(t, analyst, "SHOW CREATE TABLE syn."+table)[0][1], " COMMENT='dpsql synthetic copy of raw.")
		return strings.Replace(sc, "`"+table+"`", "`T`", 1)
	}
	if a, b := showCreate("a"), showCreate("b"); a != b {
		t.Errorf("SHOW CREATE TABLE differs:\n%s\n%s", a, b)
	}
	if a, b := queryStrings(t, analyst, "DESCRIBE syn.a"), queryStrings(t, analyst, "DESCRIBE syn.b"); !reflect.DeepEqual(a, b) {
		t.Errorf("DESCRIBE differs:\n%v\n%v", a, b)
	}
	meta := func(table string) string {
		r, err := analyst.Query("SELECT * FROM syn." + table)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		cts, err := r.ColumnTypes()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, ct := range cts {
			n, _ := ct.Nullable()
			out = append(out, fmt.Sprint(ct.Name(), " ", ct.DatabaseTypeName(), " ", n))
		}
		return strings.Join(out, ", ")
	}
	if a, b := meta("a"), meta("b"); a != b {
		t.Errorf("result metadata differs: %s / %s", a, b)
	}
	domainOf := func(src string) [][]string {
		var out [][]string
		for _, r := range queryStrings(t, analyst, "SHOW DOMAIN FOR "+src) {
			out = append(out, r[:7])
		}
		return out
	}
	wantDomain := [][]string{
		{"name", "varchar(13)", "categorical", "4", "'Al', 'Bo', 'Maximilianus!', 'Zoé'", "NO", "declared"},
		{"salary", "bigint", "binned", "9", "[0, 4e+09] in 8 bins", "YES", "declared"},
		{"sex", "varchar(1)", "categorical", "2", "'F', 'M'", "NO", "declared"},
	}
	for _, src := range []string{"raw.imported", "raw.handmade"} {
		if got := domainOf(src); !reflect.DeepEqual(got, wantDomain) {
			t.Errorf("SHOW DOMAIN FOR %s =\n%v\nwant\n%v", src, got, wantDomain)
		}
	}
}

// TestCreateSyntheticIdentifiersOverTheWire: names that MySQL refuses are
// refused with MySQL's error before anything is charged, and SHOW TABLES
// keeps working for everyone.
func TestCreateSyntheticIdentifiersOverTheWire(t *testing.T) {
	s := startServer(t, t.TempDir())
	root := s.root()
	setupTiny(t, root, 5)
	mustExec(t, root,
		"CREATE USER analyst IDENTIFIED BY 'apw'",
		"GRANT SYNTHESIZE ON raw.t TO analyst",
		"GRANT CREATE, SELECT ON syn.* TO analyst",
	)
	analyst := s.open("analyst", "apw")
	const using = " FROM raw.t USING independent WITH EPSILON = 0.5, PGM_ITERS = 10"
	a64, a65 := strings.Repeat("a", 64), strings.Repeat("b", 65)
	ledger := func() [][]string { return queryStrings(t, root, "SHOW PRIVACY LEDGER FOR raw.t") }
	before := ledger()
	for _, tt := range []struct {
		name string
		code uint16
	}{
		{a65, 1059},
		{"n\x00ul", 1103},
		{"\xff\xfe", 1103},
		{"t ", 1103},
	} {
		_, err := analyst.Exec("CREATE SYNTHETIC TABLE syn.`" + tt.name + "`" + using)
		if got := mysqlCode(err); got != tt.code {
			t.Errorf("name %q: error %d (%v), want %d", tt.name, got, err, tt.code)
		} else if msg := err.Error(); !utf8.ValidString(msg) || strings.ContainsRune(msg, 0) {
			t.Errorf("name %q: message %q echoes raw bytes", tt.name, msg)
		}
	}
	if after := ledger(); !reflect.DeepEqual(after, before) {
		t.Errorf("refusals changed the ledger:\n%v\nwant\n%v", after, before)
	}
	mustExec(t, analyst, "CREATE SYNTHETIC TABLE syn.`"+a64+"`"+using)
	if n := len(ledger()); n != len(before)+1 {
		t.Errorf("%d ledger entries after a valid name, want %d", n, len(before)+1)
	}
	for _, db := range []*sql.DB{root, analyst} {
		got := queryStrings(t, db, "SHOW TABLES FROM syn")
		if len(got) != 1 || got[0][0] != a64 {
			t.Errorf("SHOW TABLES FROM syn = %q, want only the 64-character table", got)
		}
	}
}
