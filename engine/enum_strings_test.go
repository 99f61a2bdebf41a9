package engine

import (
	"fmt"
	"strings"
	"testing"
)

// TestEnumStrings: LIKE, REGEXP and string functions read ENUM and SET
// values as their labels, exactly as they read the same labels stored in a
// VARCHAR column of MySQL's default collation; comparisons, sorting and
// numeric contexts keep MySQL's ENUM meaning.
func TestEnumStrings(t *testing.T) {
	for name, st := range storages(t) {
		t.Run(name, func(t *testing.T) {
			e := newTestEngine(t, st(), nil)
			ctx := sessionCtx(e, 1, RootUser, localhost)
			for _, q := range []string{
				"CREATE DATABASE d",
				"CREATE TABLE d.t (id INT PRIMARY KEY, e ENUM('preschool','hs-grad','Some-College','b,c'), s SET('a','b','c')," +
					" v VARCHAR(20) COLLATE utf8mb4_0900_ai_ci, sv VARCHAR(20) COLLATE utf8mb4_0900_ai_ci)",
				"INSERT INTO d.t VALUES (1, 'hs-grad', 'a,c', 'hs-grad', 'a,c'), (2, 'Some-College', '', 'Some-College', '')," +
					" (3, NULL, NULL, NULL, NULL), (4, 'preschool', 'b', 'preschool', 'b'), (5, 'hs-grad', 'a,b,c', 'hs-grad', 'a,b,c')",
			} {
				if _, _, err := query(e, ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			// Each expression, with %s the column, gives the same on the
			// ENUM (SET) column as on the VARCHAR copy.
			exprs := []string{
				"%s LIKE 'hs%%'", "%s LIKE 'HS%%'", "%s NOT LIKE '%%-%%'", "%s LIKE '%%c%%'", "%s LIKE 'a|_b' ESCAPE '|'",
				"%s REGEXP '^hs'", "%s NOT REGEXP 'college$'", "%s RLIKE 'grad'", "REGEXP_LIKE(%s, '^s')",
				"UPPER(%s)", "LOWER(%s)", "LENGTH(%s)", "CHAR_LENGTH(%s)", "CONCAT(%s, '!')", "CONCAT_WS('/', %s, 'x')",
				"LEFT(%s, 2)", "RIGHT(%s, 3)", "SUBSTRING(%s, 2, 3)", "SUBSTRING_INDEX(%s, '-', 1)", "LOCATE('g', %s)",
				"INSTR(%s, 'r')", "REPLACE(%s, '-', '_')", "REVERSE(%s)", "TRIM(%s)", "LPAD(%s, 14, '*')", "HEX(%s)",
				"MD5(%s)", "CRC32(%s)", "ASCII(%s)", "STRCMP(%s, 'hs-grad')", "FIND_IN_SET('b', %s)", "FIELD(%s, 'hs-grad')",
				"REGEXP_REPLACE(%s, '-', ' ')", "IF(id > 2, %s, 'x')",
				"CAST(%s AS CHAR)", "COALESCE(%s, 'none')",
			}
			for _, col := range [][2]string{{"e", "v"}, {"s", "sv"}} {
				for _, x := range exprs {
					qe := fmt.Sprintf("SELECT id, "+x+" FROM d.t ORDER BY id", col[0])
					qv := fmt.Sprintf("SELECT id, "+x+" FROM d.t ORDER BY id", col[1])
					_, got, err := query(e, ctx, qe)
					if err != nil {
						t.Errorf("%s: %v", qe, err)
						continue
					}
					_, want, err := query(e, ctx, qv)
					if err != nil {
						t.Fatalf("%s: %v", qv, err)
					}
					if fmt.Sprint(got) != fmt.Sprint(want) {
						t.Errorf("%s = %v, the VARCHAR copy gives %v", qe, got, want)
					}
				}
			}
			// The statements: LIKE filters by the label.
			for q, want := range map[string]string{
				"SELECT COUNT(*) FROM d.t WHERE e LIKE 'hs%'":                  "[[2]]",
				"SELECT COUNT(*) FROM d.t WHERE e = 'hs-grad'":                 "[[2]]",
				"SELECT COUNT(*) FROM d.t WHERE e LIKE 'HS-G%'":                "[[2]]",
				"SELECT id FROM d.t WHERE s LIKE '%b%' ORDER BY id":            "[[4] [5]]",
				"SELECT COUNT(*) FROM d.t WHERE e IN ('hs-grad', 'preschool')": "[[3]]",
				// Numeric context and ORDER BY keep the index, as in MySQL.
				"SELECT e + 0 FROM d.t WHERE id = 2":                                               "[[3]]",
				"SELECT id FROM d.t WHERE e IS NOT NULL ORDER BY e, id":                            "[[4] [1] [5] [2]]",
				"SELECT id FROM (SELECT id, e FROM d.t) x WHERE e LIKE '%e' ORDER BY id":           "[[2]]",
				"SELECT id FROM d.t WHERE id IN (SELECT id FROM d.t WHERE UPPER(e) = 'PRESCHOOL')": "[[4]]",
			} {
				_, rows, err := query(e, ctx, q)
				if err != nil {
					t.Errorf("%s: %v", q, err)
					continue
				}
				if got := fmt.Sprint(rows); got != want {
					t.Errorf("%s = %s, want %s", q, got, want)
				}
			}
			// EXPLAIN shows the operand as written.
			_, plan, err := query(e, ctx, "EXPLAIN PLAN SELECT id FROM d.t WHERE e LIKE '%hs%'")
			if err != nil {
				t.Fatal(err)
			}
			if text := fmt.Sprint(plan); !strings.Contains(text, "t.e LIKE '%hs%'") {
				t.Errorf("EXPLAIN = %s", text)
			}
		})
	}
}
