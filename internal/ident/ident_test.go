package ident

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCheck(t *testing.T) {
	a64, a65 := strings.Repeat("a", 64), strings.Repeat("a", 65)
	e64 := strings.Repeat("é", 64) // 128 bytes: the limit counts characters
	tests := []struct {
		name    string
		kind    Kind
		in      string
		problem Problem // 0: valid
		code    int
	}{
		{"plain", Table, "people", 0, 0},
		{"64 characters", Table, a64, 0, 0},
		{"64 two-byte characters", Table, e64, 0, 0},
		{"65 characters", Table, a65, TooLong, ERTooLongIdent},
		{"65 two-byte characters", Table, e64 + "é", TooLong, ERTooLongIdent},
		{"65 characters, database", Database, a65, TooLong, ERTooLongIdent},
		{"65 characters, column", Column, a65, TooLong, ERTooLongIdent},
		{"empty", Table, "", Empty, ERWrongTableName},
		{"empty database", Database, "", Empty, ERWrongDBName},
		{"NUL", Table, "a\x00b", NUL, ERWrongTableName},
		{"NUL alone", Table, "\x00", NUL, ERWrongTableName},
		{"invalid UTF-8", Table, "\xff\xfe", InvalidUTF8, ERWrongTableName},
		{"truncated UTF-8", Table, "caf\xc3", InvalidUTF8, ERWrongTableName},
		{"overlong UTF-8", Table, "\xc0\xaf", InvalidUTF8, ERWrongTableName},
		{"surrogate in UTF-8", Table, "\xed\xa0\x80", InvalidUTF8, ERWrongTableName},
		{"invalid UTF-8, database", Database, "d\xff", InvalidUTF8, ERWrongDBName},
		{"invalid UTF-8, column", Column, "c\xff", InvalidUTF8, ERWrongColumnName},
		{"U+FFFD itself is a character", Table, "a\uFFFDb", 0, 0},
		{"BMP characters", Table, "größe_表_ü€", 0, 0},
		{"last BMP character", Table, "a\uFFFF", 0, 0},
		{"supplementary character", Table, "smile😀", Supplementary, ERWrongTableName},
		{"trailing space", Table, "t ", TrailingSpace, ERWrongTableName},
		{"trailing space, database", Database, "d ", TrailingSpace, ERWrongDBName},
		{"only spaces", Table, "   ", TrailingSpace, ERWrongTableName},
		{"leading and inner spaces", Table, " my table", 0, 0},
		{"trailing tab is not a space", Table, "t\t", 0, 0},
		{"65 characters ending with a space", Table, a64 + " ", TrailingSpace, ERWrongTableName},
		{"quotes and backquotes", Table, "a`b'c\"d", 0, 0},
		{"slash in a table name", Table, "a/b", 0, 0},
		{"dot in a table name", Table, "a.b", 0, 0},
		{"slash in a database name", Database, "a/b", PathChar, ERWrongDBName},
		{"backslash in a database name", Database, `a\b`, PathChar, ERWrongDBName},
		{"dot in a database name", Database, "a.b", PathChar, ERWrongDBName},
		{"digits only", Database, "123", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check(tt.kind, tt.in)
			if tt.problem == 0 {
				if err != nil {
					t.Fatalf("Check(%v, %q) = %v, want valid", tt.kind, tt.in, err)
				}
				return
			}
			var ie *Error
			if !errors.As(err, &ie) {
				t.Fatalf("Check(%v, %q) = %v, want an *Error", tt.kind, tt.in, err)
			}
			if ie.Problem != tt.problem || ie.Code() != tt.code || ie.Name != tt.in || ie.Kind != tt.kind {
				t.Fatalf("Check(%v, %q) = %+v (code %d), want problem %v, code %d", tt.kind, tt.in, ie, ie.Code(), tt.problem, tt.code)
			}
			msg := err.Error()
			if !utf8.ValidString(msg) || strings.ContainsRune(msg, 0) {
				t.Errorf("message %q is not clean UTF-8", msg)
			}
			want := map[int]string{
				ERTooLongIdent:    "Identifier name '",
				ERWrongDBName:     "Incorrect database name '",
				ERWrongTableName:  "Incorrect table name '",
				ERWrongColumnName: "Incorrect column name '",
			}[tt.code]
			if !strings.HasPrefix(msg, want) {
				t.Errorf("message %q, want it to start with %q", msg, want)
			}
		})
	}
}

func TestErrorMessages(t *testing.T) {
	a65 := strings.Repeat("a", 65)
	for _, tt := range []struct {
		kind Kind
		in   string
		want string
	}{
		{Table, a65, "Identifier name '" + a65 + "' is too long"},
		{Table, "t ", "Incorrect table name 't '"},
		{Database, "a/b", "Incorrect database name 'a/b'"},
		{Table, "\xff\xfe", `Incorrect table name '\xFF\xFE'`},
		{Table, "n\x00ul", `Incorrect table name 'n\x00ul'`},
		{Column, "x😀", `Incorrect column name 'x\U0001F600'`},
	} {
		if got := Check(tt.kind, tt.in).Error(); got != tt.want {
			t.Errorf("Check(%v, %q) message %q, want %q", tt.kind, tt.in, got, tt.want)
		}
	}
}

func TestEscape(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"plain", "plain"},
		{"größe 表", "größe 表"},
		{"a\x00b", `a\x00b`},
		{"\xff\xfe", `\xFF\xFE`},
		{"tab\tnl\n", `tab\x09nl\x0A`},
		{`back\slash`, `back\\slash`},
		{"it's `q`", "it's `q`"},
		{"rtl\u202eoverride", `rtl\u202Eoverride`},
		{"😀", `\U0001F600`},
		{"caf\xc3", `caf\xC3`},
		{strings.Repeat("b", 101), strings.Repeat("b", 100) + "..."},
		{strings.Repeat("é", 100), strings.Repeat("é", 100)},
	} {
		if got := Escape(tt.in); got != tt.want {
			t.Errorf("Escape(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
