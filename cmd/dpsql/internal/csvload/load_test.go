package csvload

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// plan runs the first pass and the type decision on a CSV text.
func plan(text string, domain map[string]int) ([]Column, error) {
	header, st, _, err := scan(strings.NewReader(text), domain)
	if err != nil {
		return nil, err
	}
	return decide(header, st, domain, nil)
}

// TestInference: inferred types are fixed per kind of syntax, never sized
// to the values (the longest text, the largest integer) and nullable by
// kind, not by whether some field is empty.
func TestInference(t *testing.T) {
	cols, err := plan("a,b,c,income>50K,e,f,g\n1,1.5,x,0,,3000000000,99999999999999999999\n-2,2,yy,1,,1,1.5\n3,1e3,,1,,,\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		kind     Kind
		sqlType  string
		nullable bool
	}{
		{KindInt, "BIGINT", true},
		{KindDouble, "DOUBLE", true},
		{KindText, "VARCHAR(255)", false},
		{KindInt, "BIGINT", true},
		{KindText, "VARCHAR(255)", false},
		{KindInt, "BIGINT", true},
		{KindDouble, "DOUBLE", true}, // an integer beyond BIGINT among other numbers
	}
	for i, w := range want {
		c := cols[i]
		if c.Kind != w.kind || c.SQLType != w.sqlType || c.Nullable != w.nullable {
			t.Errorf("column %s = %+v, want %+v", c.Name, c, w)
		}
	}
	if got := cols[3].Definition(); got != "`income>50K` BIGINT" {
		t.Errorf("definition = %s", got)
	}
}

// TestInferenceIgnoresSizes: two files whose values differ only in length
// and magnitude get the same columns.
func TestInferenceIgnoresSizes(t *testing.T) {
	small, err := plan("name,salary,score\nAl,12,0.5\nBo,7,1\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	big, err := plan("name,salary,score\nMaximilianus!,3000000000,1e300\nBo,-9000000000000000000,-2.5\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(small) != fmt.Sprint(big) {
		t.Errorf("columns depend on the values:\n%v\n%v", small, big)
	}
	if got := CreateTableSQL("d", "t", big); !strings.Contains(got, "`name` VARCHAR(255) NOT NULL") || !strings.Contains(got, "`salary` BIGINT,") {
		t.Errorf("CREATE TABLE = %s", got)
	}
}

// TestTextTooLong: a value longer than VARCHAR(255) (in characters, not
// bytes) stops the load and tells the owner to create the table first.
func TestTextTooLong(t *testing.T) {
	ok := strings.Repeat("é", 255)
	if _, err := plan("a,b\n1,"+ok+"\n", nil); err != nil {
		t.Fatalf("255 two-byte characters refused: %v", err)
	}
	_, err := plan("a,b\n1,x\n2,"+ok+"é\n3,y\n", nil)
	var re *RowError
	if !errors.As(err, &re) || re.Line != 3 || re.Column != "b" || !strings.Contains(re.Msg, "create the table first") {
		t.Fatalf("err = %v, want line 3, column b, telling to create the table first", err)
	}
	// Into an existing table, the table's type decides (the server checks).
	header, st, _, err := scan(strings.NewReader("a,b\n1,"+ok+"é\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := decide(header, st, nil, map[string]Kind{"a": KindInt, "b": KindText}); err != nil {
		t.Errorf("long value into an existing text column: %v", err)
	}
}

func TestDomainColumns(t *testing.T) {
	cols, err := plan("age,sex,name\n3,0,a\n4,1,b\n", map[string]int{"age": 85, "sex": 2})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cols[0].Definition(), "`age` INT NOT NULL CHECK (`age` BETWEEN 0 AND 84)"; got != want {
		t.Errorf("age = %s, want %s", got, want)
	}
	if cols[2].Kind != KindText {
		t.Errorf("name kind = %v, want text (not in the domain, inferred)", cols[2].Kind)
	}
}

func TestMalformed(t *testing.T) {
	tests := []struct {
		name     string
		text     string
		domain   map[string]int
		wantLine int
		wantCol  string
	}{
		{"too few fields", "a,b\n1,2\n3\n4,5\n", nil, 3, ""},
		{"too many fields", "a,b\n1,2\n3,4\n5,6,7\n", nil, 4, ""},
		{"non-numeric in domain column", "a,b\n1,2\n3,x\n", map[string]int{"b": 5}, 3, "b"},
		{"out of domain", "a,b\n1,2\n3,4\n5,9\n", map[string]int{"b": 5}, 4, "b"},
		{"negative in domain", "a,b\n1,-1\n", map[string]int{"b": 5}, 2, "b"},
		{"empty in domain", "a,b\n1,\n", map[string]int{"b": 5}, 2, "b"},
		{"bad quote", "a,b\n1,2\n\"3,4\n", nil, 3, ""},
		{"duplicate header", "a,A\n1,2\n", nil, 1, "A"},
		{"empty header field", "a,,c\n1,2,3\n", nil, 1, ""},
		{"integer beyond BIGINT", "a,b\n1,2\n3,-99999999999999999999\n", nil, 3, "b"},
		{"integer beyond BIGINT in domain column", "a,b\n1,99999999999999999999\n", map[string]int{"b": 5}, 2, "b"},
		{"multi-line field keeps line numbers", "a,b\n\"x\ny\",1\n2\n", nil, 4, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := plan(tt.text, tt.domain)
			var re *RowError
			if !errors.As(err, &re) {
				t.Fatalf("err = %v, want a *RowError", err)
			}
			if re.Line != tt.wantLine || re.Column != tt.wantCol {
				t.Fatalf("error at line %d column %q (%v), want line %d column %q", re.Line, re.Column, err, tt.wantLine, tt.wantCol)
			}
		})
	}
	if _, err := plan("a\n1\n", map[string]int{"zz": 3}); err == nil {
		t.Error("domain column missing from the header was accepted")
	}
}

func TestNumberSyntax(t *testing.T) {
	for _, tt := range []struct {
		v          string
		isInt, num bool
	}{
		{"0", true, true}, {"-12", true, true}, {"+7", true, true}, {"007", true, true},
		{"1.5", false, true}, {".5", false, true}, {"5.", false, true}, {"-1e-3", false, true}, {"2E10", false, true},
		{"", false, false}, {"-", false, false}, {".", false, false}, {"1e", false, false}, {"NaN", false, false},
		{"Inf", false, false}, {"0x10", false, false}, {"1_000", false, false}, {" 1", false, false}, {"1.2.3", false, false},
		{"99999999999999999999", false, true},
	} {
		_, gotInt := parseInt(tt.v)
		if gotInt != tt.isInt || isNumber(tt.v) != tt.num {
			t.Errorf("%q: int %v number %v, want %v %v", tt.v, gotInt, isNumber(tt.v), tt.isInt, tt.num)
		}
	}
}

func TestAppendLiteral(t *testing.T) {
	for _, tt := range []struct {
		v    string
		k    Kind
		want string
	}{
		{"12", KindInt, "12"},
		{"", KindInt, "NULL"},
		{"", KindDouble, "NULL"},
		{"", KindText, "''"},
		{"it's", KindText, `'it\'s'`},
		{"a\\b\nc\x00\x1a", KindText, `'a\\b\nc\0\Z'`},
		{"1.5", KindOther, "'1.5'"},
	} {
		if got := string(appendLiteral(nil, tt.v, tt.k)); got != tt.want {
			t.Errorf("appendLiteral(%q) = %s, want %s", tt.v, got, tt.want)
		}
	}
}
