package vtparse

import (
	"strings"
	"testing"

	"github.com/dolthub/vitess/go/vt/sqlparser"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		text   string
		ok     bool
		errHas string
	}{
		{"SELECT a, COUNT(*) FROM t GROUP BY a", true, ""},
		{"SELECT''", false, "syntax error"}, // sqlparser.Parse panics on this text
		{"SELEC a FROM t", false, "syntax error"},
	} {
		stmt, err := Parse(tc.text)
		if tc.ok {
			if _, isSel := stmt.(*sqlparser.Select); err != nil || !isSel {
				t.Errorf("Parse(%q) = %T, %v; want a *sqlparser.Select", tc.text, stmt, err)
			}
			continue
		}
		if err == nil || stmt != nil || !strings.Contains(err.Error(), tc.errHas) {
			t.Errorf("Parse(%q) = %v, %v; want no statement and an error with %q", tc.text, stmt, err, tc.errHas)
		}
	}
}
