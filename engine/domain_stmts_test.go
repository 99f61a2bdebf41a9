package engine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dolthub/vitess/go/mysql"

	"github.com/dpsql/dpsql/catalog/domain"
)

func TestSetDomainValidation(t *testing.T) {
	f := newDPFixture(t)
	const (
		ok       = 0
		bad      = 9113 // ErrDomain
		noColumn = mysql.ERBadFieldError
	)
	tests := []struct {
		decl string // after ALTER TABLE raw.t SET DOMAIN
		code int
	}{
		{"income BETWEEN 0 AND 1e6 BINS 10", ok},
		{"income BETWEEN -5.5 AND 5.5 BINS 3", ok},
		{"age BETWEEN 0 AND 100 BINS 10", ok},
		{"age BETWEEN 0.5 AND 100 BINS 10", bad},               // integer column, fractional bound
		{"age BETWEEN 0 AND 5 BINS 10", bad},                   // integer bins narrower than 1
		{"income BETWEEN 10 AND 1 BINS 2", mysql.ERParseError}, // the parser checks lo < hi
		{"income BETWEEN 1 AND 1 BINS 2", mysql.ERParseError},
		{"income BETWEEN 0 AND 1 BINS 65536", bad}, // with NULL, more codes than domain.MaxSize
		{"city BETWEEN 0 AND 1 BINS 2", bad},       // not numeric
		{"city IN ('Paris', 'Oslo')", ok},
		{"city IN (1, 2)", bad},
		{"city IN ('a', 'a')", bad},
		{"city IN (NULL)", bad}, // no non-NULL value
		{"age IN ('a')", bad},
		{"age IN (1.5)", bad},
		{"age IN (20, 30.0)", ok},
		{"age IN (NULL, 20)", bad}, // NOT NULL column
		{"grade IN (NULL, 'A')", ok},
		{"color IN ('red', 'purple')", bad}, // not a value of the ENUM
		{"color IN ('red', 'green')", ok},
		{"income IN (1.5, 2)", ok},
		{"flag IN (0, 1)", ok},
		{"nosuch IN (1)", noColumn},
		{"nosuch BETWEEN 0 AND 1 BINS 1", noColumn},
	}
	for _, tt := range tests {
		f.wantCode("owner", "ALTER TABLE raw.t SET DOMAIN "+tt.decl, tt.code)
	}
	// Every accepted declaration is usable by synthesis.
	ref := f.tableRef("raw", "t")
	decls, err := f.e.declaredDomains(f.ctx("owner"), ref)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"income", "age", "city", "grade", "color", "flag"} {
		if _, ok := decls[name]; !ok {
			t.Errorf("no declaration for %s: %v", name, decls)
		}
	}
	if _, errs := domain.FromSchema(ref.Table.Schema(), nil, decls); len(errs) != 1 { // only id lacks a domain
		t.Errorf("FromSchema over the declarations: %v, want only id missing", errs)
	}
	// The last declaration of a column wins.
	if d := decls["income"]; d.Kind() != domain.Categorical || d.Size() != 3 {
		t.Errorf("income = %v with size %d, want the categorical (1.5, 2, NULL)", d.Kind(), d.Size())
	}
}

func TestSetDomainAccess(t *testing.T) {
	f := newDPFixture(t)
	f.mustExec("owner", "GRANT SYNTHESIZE ON raw.t TO analyst")
	f.wantCode("analyst", "ALTER TABLE raw.t SET DOMAIN city IN ('a')", 1142)
	f.wantCode("stranger", "ALTER TABLE raw.t SET DOMAIN city IN ('a')", mysql.ERNoSuchTable)
	f.wantCode("root", "ALTER TABLE raw.t SET DOMAIN city IN ('a')", 0)
	f.mustExec("root", "USE raw")
	// Unqualified names use the session's database.
	ctx := f.ctx("owner")
	ctx.SetCurrentDatabase("raw")
	if _, _, err := query(f.e, ctx, "ALTER TABLE t SET DOMAIN city IN ('b')"); err != nil {
		t.Fatal(err)
	}
}

func TestShowDomain(t *testing.T) {
	f := newDPFixture(t)
	f.mustExec("owner", "GRANT SYNTHESIZE ON raw.t TO analyst")
	f.mustExec("owner", "ALTER TABLE raw.t SET DOMAIN city IN ('Paris', 'Oslo', 'Rome')")
	f.mustExec("owner", "ALTER TABLE raw.t SET DOMAIN age BETWEEN 0 AND 120 BINS 12")

	// column → kind, size, domain, nullable, source, missing
	want := map[string][6]any{
		"id":     {nil, nil, nil, "NO", nil, "YES"},
		"color":  {"categorical", int64(3), "'red', 'green', 'blue'", "NO", "ENUM", "NO"},
		"flag":   {"integer range", int64(2 + 1), "0..1", "YES", "BOOLEAN", "NO"},
		"age":    {"binned", int64(12), "[0, 120] in 12 bins", "NO", "declared", "NO"},
		"grade":  {"categorical", int64(3 + 1), "'A', 'B', 'C'", "YES", "CHECK", "NO"},
		"income": {nil, nil, nil, "YES", nil, "YES"},
		"city":   {"categorical", int64(3 + 1), "'Paris', 'Oslo', 'Rome'", "YES", "declared", "NO"},
	}
	for _, user := range []string{"owner", "analyst"} {
		rows := f.mustExec(user, "SHOW DOMAIN FOR raw.t")
		if len(rows) != len(want) || rows[0][0] != "id" || rows[len(rows)-1][0] != "city" {
			t.Fatalf("%s: rows %v, want one per column in schema order", user, rows)
		}
		for name, r := range showDomainRows(rows) {
			w := want[name]
			got := [6]any{r[2], r[3], r[4], r[5], r[6], r[7]}
			if fmt.Sprint(got) != fmt.Sprint(w) {
				t.Errorf("%s: %s = %v, want %v", user, name, got, w)
			}
			note := r[8]
			switch {
			case w[5] == "YES" && user == "owner":
				if s, _ := note.(string); !strings.Contains(s, "SET DOMAIN `"+name+"`") {
					t.Errorf("owner's note for %s = %v, want how to declare it", name, note)
				}
			case note != nil:
				t.Errorf("%s: note for %s = %v, want NULL", user, name, note)
			}
		}
	}
	if got, want := f.mustExec("analyst", "CALL dpsql_domain('raw.t')"), f.mustExec("analyst", "SHOW DOMAIN FOR raw.t"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("CALL dpsql_domain = %v, want %v", got, want)
	}
	f.wantCode("stranger", "SHOW DOMAIN FOR raw.t", mysql.ERNoSuchTable)
}

// TestStaleDeclarations: a declaration applies while its column keeps its
// name and type.
func TestStaleDeclarations(t *testing.T) {
	f := newDPFixture(t)
	for _, d := range []string{"income BETWEEN 0 AND 100 BINS 4", "city IN ('a', 'b')", "id BETWEEN 0 AND 99 BINS 10"} {
		f.mustExec("owner", "ALTER TABLE raw.t SET DOMAIN "+d)
	}
	f.mustExec("root", "ALTER TABLE raw.t RENAME COLUMN income TO revenue")
	f.mustExec("root", "ALTER TABLE raw.t MODIFY COLUMN city VARCHAR(50)")
	decls, err := f.e.declaredDomains(f.ctx("owner"), f.tableRef("raw", "t"))
	if err != nil {
		t.Fatal(err)
	}
	if id, ok := decls["id"]; len(decls) != 1 || !ok || id.Kind() != domain.Binned {
		t.Errorf("declarations after rename and retype = %v, want only id", decls)
	}
	rows := showDomainRows(f.mustExec("owner", "SHOW DOMAIN FOR raw.t"))
	for _, c := range []string{"revenue", "city"} {
		if rows[c][7] != "YES" {
			t.Errorf("%s after rename/retype: %v, want missing", c, rows[c])
		}
	}
	// The next declaration on the table deletes the stale records.
	f.mustExec("owner", "ALTER TABLE raw.t SET DOMAIN revenue BETWEEN 0 AND 10 BINS 2")
	stored, err := f.e.storedDeclarations(f.ctx("owner"), f.tableRef("raw", "t").ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != 2 || stored["revenue"].Column != "revenue" || stored["id"].Column != "id" {
		t.Errorf("stored declarations = %v, want id and revenue", stored)
	}
	// Dropping a column makes synthesis ignore its declaration too.
	f.mustExec("root", "ALTER TABLE raw.t DROP COLUMN revenue")
	if decls, _ := f.e.declaredDomains(f.ctx("owner"), f.tableRef("raw", "t")); len(decls) != 1 {
		t.Errorf("declarations after DROP COLUMN = %v", decls)
	}
}

func TestSetDomainProcedures(t *testing.T) {
	f := newDPFixture(t)
	f.mustExec("owner", "CALL dpsql_set_domain_between('raw.t', 'income', 0, 1000, 10)")
	f.mustExec("owner", `CALL dpsql_set_domain_in('raw.t', 'city', '["Paris", "Oslo", null]')`)
	f.mustExec("owner", `CALL dpsql_set_domain_in('raw.t', 'age', '[20, 30, 40]')`)
	f.wantCode("owner", `CALL dpsql_set_domain_in('raw.t', 'city', 'Paris')`, 9112)
	f.wantCode("owner", `CALL dpsql_set_domain_in('raw.t', 'city', '[{"a": 1}]')`, 9112)
	f.wantCode("owner", `CALL dpsql_set_domain_in('raw.t', 'age', '["x"]')`, 9113)
	f.wantCode("owner", "CALL dpsql_set_domain_between('raw.t', 'income', 0, 1000, 0)", 9113)
	f.wantCode("owner", "CALL dpsql_set_domain_between('raw.t', 'income', 10, 1, 2)", 9113)
	f.wantCode("stranger", "CALL dpsql_set_domain_between('raw.t', 'income', 0, 1000, 10)", mysql.ERNoSuchTable)

	rows := showDomainRows(f.mustExec("owner", "SHOW DOMAIN FOR raw.t"))
	for col, want := range map[string]string{
		"income": "[0, 1000] in 10 bins",
		"city":   "'Paris', 'Oslo'",
		"age":    "20, 30, 40",
	} {
		if rows[col][4] != want || rows[col][6] != "declared" {
			t.Errorf("%s = %v, want declared %s", col, rows[col], want)
		}
	}
}

func TestJSONValues(t *testing.T) {
	tests := []struct {
		in   string
		want string // printed values; "" for an error
	}{
		{`["a", 1, 2.5, null]`, "['a' 1 2.5 NULL]"},
		{`[]`, "[]"},
		{`["it's"]`, `['it\'s']`},
		{`[1e3]`, "[1e3]"},
		{`[true]`, ""},
		{`{"a": 1}`, ""},
		{`["a"] ["b"]`, ""},
		{`[`, ""},
	}
	for _, tt := range tests {
		got, err := jsonValues(tt.in)
		if tt.want == "" {
			if err == nil {
				t.Errorf("jsonValues(%s) = %v, want an error", tt.in, got)
			}
			continue
		}
		if err != nil || fmt.Sprint(got) != tt.want {
			t.Errorf("jsonValues(%s) = %v, %v; want %s", tt.in, got, err, tt.want)
		}
	}
}
