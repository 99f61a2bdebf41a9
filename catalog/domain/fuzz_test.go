package domain

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzTableJSON checks that decoding never panics, that whatever decodes is
// a valid table that re-encodes to an equal one, and that Encode keeps its
// codes inside the domain.
func FuzzTableJSON(f *testing.F) {
	b, _ := json.Marshal(Table{Columns: testColumns()})
	f.Add(b)
	f.Add([]byte(`{"columns":[{"name":"a","kind":"range","type":"int","lo":-3,"hi":4,"nullable":true}]}`))
	f.Add([]byte(`{"columns":[{"name":"b","kind":"binned","type":"int","lo":0,"hi":10,"bins":3}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var tbl Table
		if err := json.Unmarshal(data, &tbl); err != nil {
			return
		}
		if err := tbl.Validate(); err != nil {
			t.Fatalf("decoded an invalid table: %v", err)
		}
		out, err := json.Marshal(tbl)
		if err != nil {
			t.Fatal(err)
		}
		var again Table
		if err := json.Unmarshal(out, &again); err != nil || !reflect.DeepEqual(again, tbl) {
			t.Fatalf("re-decoding %s: %v", out, err)
		}
		for i := range tbl.Columns {
			c := &tbl.Columns[i]
			for _, v := range []any{nil, "x", -1e18, 1e18, 0, 0.5, int64(-7), "3"} {
				code, status := c.Encode(v)
				if status != Invalid && (code < 0 || code >= c.Size()) {
					t.Fatalf("%s.Encode(%v) = %d outside [0, %d)", c.Name(), v, code, c.Size())
				}
			}
		}
	})
}
