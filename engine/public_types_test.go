package engine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/dpsql/dpsql/catalog/domain"
)

// TestSyntheticTypesFollowDomain: the column types of a synthetic table
// (and of an answers table, and SHOW DOMAIN's type column) depend only on
// the source's public domain. Two sources with the same domain whose raw
// types differ in width (VARCHAR(13) / VARCHAR(200), BIGINT / INT,
// DECIMAL(9,2) / DOUBLE, BOOLEAN / TINYINT with a CHECK) give identical
// schemas in SHOW CREATE TABLE, DESCRIBE and information_schema.columns,
// and nothing of the raw widths shows.
func TestSyntheticTypesFollowDomain(t *testing.T) {
	f := newSynthFixture(t)
	f.exec(
		"CREATE TABLE raw.wide (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,"+
			" name VARCHAR(13) NOT NULL, salary BIGINT NOT NULL,"+
			" n INT CHECK (n BETWEEN 1 AND 5), score DECIMAL(9,2), e ENUM('x','y','z') NOT NULL, flag BOOLEAN NOT NULL,"+
			" k SMALLINT NOT NULL, city VARCHAR(13))",
		"CREATE TABLE raw.narrow (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,"+
			" name VARCHAR(200) NOT NULL CHECK (name IN ('Al', 'Bo', 'Cyd')), salary INT NOT NULL,"+
			" n TINYINT CHECK (n >= 1 AND n <= 5), score DOUBLE, e ENUM('x','y','z') NOT NULL, flag TINYINT NOT NULL CHECK (flag BETWEEN 0 AND 1),"+
			" k BIGINT NOT NULL, city TEXT)",
		// The longest name has 13 characters and a salary exceeds 2^31.
		"INSERT INTO raw.wide (name, salary, n, score, e, flag, k, city) VALUES"+
			" ('Maximilianus!', 3000000000, 2, 1234567.25, 'x', 1, 7, 'Lyon'), ('Bo', 5, NULL, NULL, 'y', 0, 3, 'Saint-Étienne'), ('Al', 7, 5, 1.5, 'z', 1, 9, NULL)",
		"INSERT INTO raw.narrow (name, salary, n, score, e, flag, k, city) VALUES ('Al', 1, 1, 2, 'x', 0, 1, 'Nice'), ('Bo', 2, 3, 50.5, 'y', 1, 2, NULL)",
	)
	f.exec("ALTER TABLE raw.wide SET DOMAIN name IN ('Al', 'Bo', 'Cyd')") // raw.narrow's is a CHECK
	for _, src := range []string{"raw.wide", "raw.narrow"} {
		f.exec(
			"SET PRIVACY BUDGET FOR "+src+" WITH EPSILON = 10, DELTA = 1e-6",
			"ALTER TABLE "+src+" SET DOMAIN salary BETWEEN 0 AND 5000000000 BINS 10",
			"ALTER TABLE "+src+" SET DOMAIN score BETWEEN 0 AND 100 BINS 4",
			"ALTER TABLE "+src+" SET DOMAIN k IN (1, 2, 3)",
			"ALTER TABLE "+src+" SET DOMAIN city IN ('Lyon', 'Nice', 'Paris')",
		)
	}
	for _, name := range []string{"wide", "narrow"} {
		f.exec(
			"CREATE SYNTHETIC TABLE syn."+name+" FROM raw."+name+" USING independent WITH EPSILON = 1, ROWS = 60, PGM_ITERS = 10",
			"CREATE SYNTHETIC TABLE syn."+name+"_ans FROM raw."+name+" USING gaussian WITH EPSILON = 1",
		)
	}

	// column → type, nullable: from the domain only.
	want := [][3]string{
		{"id", "bigint", "NO"},           // AUTO_INCREMENT surrogate: row numbers
		{"name", "varchar(3)", "NO"},     // longest declared value, 'Cyd'
		{"salary", "bigint", "NO"},       // binned integer column
		{"n", "bigint", "YES"},           // integer range from a CHECK
		{"score", "double", "YES"},       // binned non-integer column
		{"e", "enum('x','y','z')", "NO"}, // the declared ENUM is the domain
		{"flag", "bigint", "NO"},         // BOOLEAN is the range 0..1
		{"k", "bigint", "NO"},            // categorical integers
		{"city", "varchar(5)", "YES"},    // 'Paris'
	}
	infoSchema := func(table string) []sql.Row {
		return f.rows("SELECT column_name, column_type, data_type, character_maximum_length, character_octet_length," +
			" numeric_precision, numeric_scale, is_nullable, column_key, extra, column_default" +
			" FROM information_schema.columns WHERE table_schema = 'syn' AND table_name = '" + table + "' ORDER BY ordinal_position")
	}
	showCreate := func(table string) string {
		// The column definitions: the table's comment names its source.
		sc := fmt.Sprint(f.rows("SHOW CREATE TABLE syn." + table)[0][1])
		sc, _, _ = strings.Cut(sc, " COMMENT='dpsql synthetic copy of raw.")
		return strings.ReplaceAll(sc, "`"+table+"`", "`T`")
	}
	for _, name := range []string{"wide", "narrow"} {
		cols := infoSchema(name)
		if len(cols) != len(want) {
			t.Fatalf("syn.%s has columns %v", name, cols)
		}
		for i, w := range want {
			if got := [3]string{fmt.Sprint(cols[i][0]), fmt.Sprint(cols[i][1]), fmt.Sprint(cols[i][7])}; got != w {
				t.Errorf("syn.%s column %d = %v, want %v", name, i, got, w)
			}
		}
		sc := showCreate(name)
		for _, leak := range []string{"13", "200", "decimal", "smallint", "tinyint", " int", "text", "auto_increment", "PRIMARY"} {
			if strings.Contains(strings.ToLower(sc), strings.ToLower(leak)) {
				t.Errorf("SHOW CREATE TABLE syn.%s shows %q:\n%s", name, leak, sc)
			}
		}
		// The rows fit the types: values of the domain only.
		for _, r := range f.rows("SELECT name, salary, n, score, e, flag, k, city FROM syn." + name) {
			if s := fmt.Sprint(r[0]); s != "Al" && s != "Bo" && s != "Cyd" {
				t.Fatalf("syn.%s: name %q", name, s)
			}
			if v, ok := r[1].(int64); !ok || v < 0 || v > 5000000000 {
				t.Fatalf("syn.%s: salary %#v", name, r[1])
			}
			if v, ok := r[3].(float64); r[3] != nil && (!ok || v < 0 || v > 100) {
				t.Fatalf("syn.%s: score %#v", name, r[3])
			}
		}
	}
	if a, b := showCreate("wide"), showCreate("narrow"); a != b {
		t.Errorf("SHOW CREATE TABLE differs:\n%s\n%s", a, b)
	}
	for _, q := range []string{"DESCRIBE syn.%s", "SHOW COLUMNS FROM syn.%s", "SHOW FULL COLUMNS FROM syn.%s"} {
		if a, b := f.rows(fmt.Sprintf(q, "wide")), f.rows(fmt.Sprintf(q, "narrow")); fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("%s differs:\n%v\n%v", q, a, b)
		}
	}
	if a, b := infoSchema("wide"), infoSchema("narrow"); fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("information_schema.columns differ:\n%v\n%v", a, b)
	}
	// Answers tables: the attributes typed by their domains, nullable.
	if a, b := infoSchema("wide_ans"), infoSchema("narrow_ans"); fmt.Sprint(a) != fmt.Sprint(b) || len(a) != 2+8+1 {
		t.Errorf("answers tables' columns differ:\n%v\n%v", a, b)
	} else if fmt.Sprintf("%v %v %v", a[2][0], a[2][1], a[2][7]) != "name varchar(3) YES" {
		t.Errorf("answers column name = %v", a[2])
	}

	// SHOW DOMAIN shows the same public types, for owner and analyst.
	f.exec("CREATE USER analyst IDENTIFIED BY 'pw'", "GRANT SYNTHESIZE ON raw.wide TO analyst", "GRANT SYNTHESIZE ON raw.narrow TO analyst")
	analyst := sessionCtx(f.e, 2, "analyst", localhost)
	for _, src := range []string{"raw.wide", "raw.narrow"} {
		for _, ctx := range []*sql.Context{f.root, analyst} {
			_, rows, err := query(f.e, ctx, "SHOW DOMAIN FOR "+src)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range rows {
				wantType := want[i][1]
				if i == 0 {
					wantType = "integer" // id has no domain: its family only
				}
				if r[0] != want[i][0] || r[1] != wantType {
					t.Errorf("SHOW DOMAIN FOR %s as %s: %v, want type %s", src, ctx.Client().User, r, wantType)
				}
			}
		}
	}
}

// TestPublicType checks the type of every kind of domain.
func TestPublicType(t *testing.T) {
	must := func(c domain.Column, err error) *domain.Column {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return &c
	}
	strs := func(ss ...string) []domain.Value {
		out := make([]domain.Value, len(ss))
		for i, s := range ss {
			out[i] = domain.StringValue(s)
		}
		return out
	}
	tests := []struct {
		col  *domain.Column
		want string
	}{
		{must(domain.NewCategorical("c", domain.String, strs("a", "größe", "ab"), true, false)), "varchar(5)"},
		{must(domain.NewCategorical("c", domain.String, strs(""), false, false)), "varchar(1)"},
		{must(domain.NewCategorical("c", domain.String, strs(strings.Repeat("x", 20000)), false, false)), "longtext"},
		{must(domain.NewCategorical("c", domain.String, strs("b", "a"), false, true)), "enum('b','a')"},
		{must(domain.NewCategorical("c", domain.Int, []domain.Value{domain.IntValue(-3), domain.IntValue(1 << 40)}, false, false)), "bigint"},
		{must(domain.NewCategorical("c", domain.Float, []domain.Value{domain.FloatValue(1.5)}, false, false)), "double"},
		{must(domain.NewIntRange("c", 0, 1, false)), "bigint"},
		{must(domain.NewBinned("c", 0, 100, 10, true, true)), "bigint"},
		{must(domain.NewBinned("c", 0, 100, 10, false, true)), "double"},
	}
	for _, tt := range tests {
		got, err := publicType(tt.col)
		if err != nil || got.String() != tt.want {
			t.Errorf("publicType(%v %v) = %v, %v; want %s", tt.col.Kind(), tt.col.Values(), got, err, tt.want)
		}
	}
}
