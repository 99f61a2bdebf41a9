package dpparse

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func num(s string) Value  { return Value{Kind: ValueNumber, Text: s} }
func str(s string) Value  { return Value{Kind: ValueString, Text: s} }
func word(s string) Value { return Value{Kind: ValueIdent, Text: s} }
func tn(s string) TableName {
	if db, name, ok := strings.Cut(s, "."); ok {
		return TableName{DB: db, Name: name}
	}
	return TableName{Name: s}
}

// stripSelects checks that every workload query carries a parsed SELECT and
// clears it, so expected values can be written without vitess ASTs.
func stripSelects(t *testing.T, s Statement) Statement {
	t.Helper()
	cs, ok := s.(*CreateSynthetic)
	if !ok {
		return s
	}
	c := *cs
	c.Workload.Queries = append([]WorkloadQuery(nil), cs.Workload.Queries...)
	for i := range c.Workload.Queries {
		if c.Workload.Queries[i].Select == nil {
			t.Errorf("query %d: no parsed SELECT", i+1)
		}
		c.Workload.Queries[i].Select = nil
	}
	return &c
}

func TestParse(t *testing.T) {
	tests := []struct {
		in   string
		want Statement
	}{
		{"SHOW DPSQL STATUS", &ShowStatus{}},
		{"show dpsql status;", &ShowStatus{}},
		{"  sHoW\tDpSqL\n StAtUs  ", &ShowStatus{}},
		{"-- a comment\nSHOW DPSQL STATUS", &ShowStatus{}},
		{"# hash comment\n/* block\n comment */ SHOW /* inner */ DPSQL STATUS", &ShowStatus{}},
		{"--\nSHOW DPSQL STATUS", &ShowStatus{}},
		{"SHOW MECHANISMS", &ShowMechanisms{}},
		{"BACKUP DPSQL", &Backup{}},
		{"backup dpsql ;", &Backup{}},
		{"SHOW SYNTHETIC TABLES", &ShowSyntheticTables{}},
		{"SHOW SYNTHETIC TABLES FROM mydb", &ShowSyntheticTables{DB: "mydb"}},
		{"show synthetic tables in `my db`", &ShowSyntheticTables{DB: "my db"}},
		{"SHOW PRIVACY BUDGET", &ShowBudget{}},
		{"SHOW PRIVACY BUDGET FOR adult", &ShowBudget{Table: tn("adult")}},
		{"SHOW PRIVACY BUDGET FOR raw.adult", &ShowBudget{Table: tn("raw.adult")}},
		{"SHOW PRIVACY LEDGER FOR `raw`.`adult`", &ShowLedger{Table: tn("raw.adult")}},
		{"SHOW DOMAIN FOR adult", &ShowDomain{Table: tn("adult")}},
		{"SHOW ERROR BOUNDS FOR syn", &ShowErrorBounds{Table: tn("syn")}},
		{"SHOW ERROR BOUNDS FOR d.syn CONFIDENCE .95", &ShowErrorBounds{Table: tn("d.syn"), Confidence: num(".95")}},
		{"SET PRIVACY BUDGET FOR adult WITH EPSILON = 1.5, DELTA = 1e-9",
			&SetBudget{Table: tn("adult"), Epsilon: num("1.5"), Delta: num("1e-9")}},
		{"set privacy budget for d.adult with delta=0, epsilon=+10",
			&SetBudget{Table: tn("d.adult"), Epsilon: num("10"), Delta: num("0")}},
		{"ALTER TABLE adult SET DOMAIN age BETWEEN 17 AND 90 BINS 74",
			&SetDomainBetween{Table: tn("adult"), Column: "age", Lo: num("17"), Hi: num("90"), Bins: 74}},
		{"alter table d.t set domain `x y` between -1.5 and 2.5E3 bins 10",
			&SetDomainBetween{Table: tn("d.t"), Column: "x y", Lo: num("-1.5"), Hi: num("2.5E3"), Bins: 10}},
		{"ALTER TABLE t SET DOMAIN c IN ('a', \"b\", 3, -4, NULL, 'it''s', 'back\\\\slash')",
			&SetDomainIn{Table: tn("t"), Column: "c", Values: []Value{str("a"), str("b"), num("3"), num("-4"), {Kind: ValueNull}, str("it's"), str(`back\slash`)}}},
		{"ALTER TABLE d.pub SET PUBLIC", &SetPublic{Table: tn("d.pub"), Public: true}},
		{"alter table pub set not public", &SetPublic{Table: tn("pub")}},
		{"CREATE SYNTHETIC TABLE s FROM d.t USING pep_pub WITH EPSILON = 1, PUBLIC = d.pub",
			&CreateSynthetic{Table: tn("s"), Source: tn("d.t"), Mechanism: "pep_pub", Options: []Option{
				{"EPSILON", num("1")}, {"PUBLIC", Value{Kind: ValueTable, Text: "`d`.`pub`", Table: tn("d.pub")}}}}},
		{"GRANT SYNTHESIZE ON adult TO alice", &GrantSynthesize{Table: tn("adult"), Account: Account{"alice", "%"}}},
		{"GRANT SYNTHESIZE ON d.adult TO 'alice'@'localhost'", &GrantSynthesize{Table: tn("d.adult"), Account: Account{"alice", "localhost"}}},
		{"grant synthesize on adult to `bob`@`%`", &GrantSynthesize{Table: tn("adult"), Account: Account{"bob", "%"}}},
		{"REVOKE SYNTHESIZE ON adult FROM \"carol\"@localhost", &RevokeSynthesize{Table: tn("adult"), Account: Account{"carol", "localhost"}}},
		{"GRANT SYNTHESIZE ON d.* TO alice", &GrantSynthesize{Table: TableName{DB: "d"}, AllTables: true, Account: Account{"alice", "%"}}},
		{"GRANT SYNTHESIZE ON * TO alice", &GrantSynthesize{AllTables: true, Account: Account{"alice", "%"}}},
		{"GRANT SYNTHESIZE ON TABLE d.t TO alice", &GrantSynthesize{Table: tn("d.t"), Account: Account{"alice", "%"}}},
		{"GRANT SELECT, SYNTHESIZE ON d.t TO alice",
			&GrantSynthesize{Table: tn("d.t"), Account: Account{"alice", "%"}, Others: []string{"SELECT"}}},
		{"grant select, synthesize, insert (a, `b c`) on d.* to alice",
			&GrantSynthesize{Table: TableName{DB: "d"}, AllTables: true, Account: Account{"alice", "%"}, Others: []string{"select", "insert (a, `b c`)"}}},
		{"GRANT SYNTHESIZE, ALL PRIVILEGES ON d.t TO alice",
			&GrantSynthesize{Table: tn("d.t"), Account: Account{"alice", "%"}, Others: []string{"ALL PRIVILEGES"}}},
		{"REVOKE SELECT, SYNTHESIZE ON `my db`.* FROM bob@localhost",
			&RevokeSynthesize{Table: TableName{DB: "my db"}, AllTables: true, Account: Account{"bob", "localhost"}, Others: []string{"SELECT"}}},
		{"SHOW SYNTHESIZE GRANTS FOR adult", &ShowSynthesizeGrants{Table: tn("adult")}},
		{"show synthesize grants for d.*", &ShowSynthesizeGrants{Table: TableName{DB: "d"}, AllTables: true}},
		{"CREATE SYNTHETIC TABLE syn FROM adult USING aim WITH EPSILON = 1",
			&CreateSynthetic{Table: tn("syn"), Source: tn("adult"), Mechanism: "aim", Options: []Option{{"EPSILON", num("1")}}}},
		{"CREATE SYNTHETIC TABLE syn FROM adult USING mst",
			&CreateSynthetic{Table: tn("syn"), Source: tn("adult"), Mechanism: "mst"}},
		{"create synthetic table if not exists pub.syn from raw.`adult-2` using `aim` with epsilon=1e-9, delta = 1E-6, rounds = 'auto', init = independent, max_size = -3 workload all 3-way",
			&CreateSynthetic{IfNotExists: true, Table: tn("pub.syn"), Source: tn("raw.adult-2"), Mechanism: "aim",
				Options:  []Option{{"epsilon", num("1e-9")}, {"delta", num("1E-6")}, {"rounds", str("auto")}, {"init", word("independent")}, {"max_size", num("-3")}},
				Workload: Workload{AllKWay: 3}}},
		{"CREATE SYNTHETIC TABLE s FROM t USING aim WITH EPSILON = 1 WORKLOAD (SELECT sex, race, COUNT(*) FROM t GROUP BY sex, race)",
			&CreateSynthetic{Table: tn("s"), Source: tn("t"), Mechanism: "aim", Options: []Option{{"EPSILON", num("1")}},
				Workload: Workload{Queries: []WorkloadQuery{{Text: "SELECT sex, race, COUNT(*) FROM t GROUP BY sex, race", Weight: 1}}}}},
		{"CREATE SYNTHETIC TABLE s FROM t USING aim WORKLOAD (\n  SELECT COUNT(*) FROM t WHERE `income>50K` = ';)' WEIGHT 2.5 ;\n  select a, count(*) from t where (b in (1,2)) group by a -- trailing ) comment\n  weight 1e1;\n)",
			&CreateSynthetic{Table: tn("s"), Source: tn("t"), Mechanism: "aim",
				Workload: Workload{Queries: []WorkloadQuery{
					{Text: "SELECT COUNT(*) FROM t WHERE `income>50K` = ';)'", Weight: 2.5},
					{Text: "select a, count(*) from t where (b in (1,2)) group by a", Weight: 10},
				}}}},
		{"CREATE SYNTHETIC TABLE s FROM t USING aim WORKLOAD (SELECT COUNT(*) FROM t WHERE a = 0x1F)",
			&CreateSynthetic{Table: tn("s"), Source: tn("t"), Mechanism: "aim",
				Workload: Workload{Queries: []WorkloadQuery{{Text: "SELECT COUNT(*) FROM t WHERE a = 0x1F", Weight: 1}}}}},
		{"CREATE SYNTHETIC TABLE s FROM t USING aim WORKLOAD (SELECT weight, COUNT(*) FROM t GROUP BY weight WEIGHT 3)",
			&CreateSynthetic{Table: tn("s"), Source: tn("t"), Mechanism: "aim",
				Workload: Workload{Queries: []WorkloadQuery{{Text: "SELECT weight, COUNT(*) FROM t GROUP BY weight", Weight: 3}}}}},
		// Commas between queries, for command-line clients that split at ';'.
		{"CREATE SYNTHETIC TABLE s FROM t USING aim WORKLOAD (SELECT a, b, COUNT(*) FROM t GROUP BY a, b WEIGHT 2, select c, COUNT(*) FROM t WHERE d IN (1, 2) GROUP BY c, SELECT COUNT(*) FROM t)",
			&CreateSynthetic{Table: tn("s"), Source: tn("t"), Mechanism: "aim",
				Workload: Workload{Queries: []WorkloadQuery{
					{Text: "SELECT a, b, COUNT(*) FROM t GROUP BY a, b", Weight: 2},
					{Text: "select c, COUNT(*) FROM t WHERE d IN (1, 2) GROUP BY c", Weight: 1},
					{Text: "SELECT COUNT(*) FROM t", Weight: 1},
				}}}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, n, ok, err := Parse(tt.in)
			if !ok || err != nil {
				t.Fatalf("Parse = ok %v, err %v; want a statement", ok, err)
			}
			if n != len(tt.in) {
				t.Errorf("n = %d, want %d", n, len(tt.in))
			}
			if g := stripSelects(t, got); !reflect.DeepEqual(g, tt.want) {
				t.Errorf("got  %#v\nwant %#v", g, tt.want)
			}
			checkRoundTrip(t, got)
		})
	}
}

// checkRoundTrip asserts that s.String() parses back to a statement equal to s.
func checkRoundTrip(t *testing.T, s Statement) {
	t.Helper()
	text := s.String()
	again, n, ok, err := Parse(text)
	if !ok || err != nil {
		t.Fatalf("re-parsing %q: ok %v, err %v", text, ok, err)
	}
	if n != len(text) {
		t.Errorf("re-parsing %q: n = %d, want %d", text, n, len(text))
	}
	if !reflect.DeepEqual(again, s) {
		t.Errorf("re-parsing %q:\ngot  %#v\nwant %#v", text, again, s)
	}
	if again.String() != text {
		t.Errorf("String not canonical: %q then %q", text, again.String())
	}
}

func TestParseNotOurs(t *testing.T) {
	for _, in := range []string{
		"", "   ", "-- only a comment", ";",
		"SELECT 1",
		"SHOW TABLES", "SHOW ERRORS", "SHOW WARNINGS", "SHOW GRANTS",
		"show `dpsql` status", // backquoted words are identifiers, not keywords
		"CREATE TABLE t (a int)",
		"SET @x = 1", "SET privacy = 1", "SET PRIVACY budgetx",
		"ALTER TABLE t ADD COLUMN c INT",
		"ALTER TABLE t ALTER COLUMN c SET DEFAULT 1",
		"ALTER TABLE d.t RENAME TO u",
		"ALTER DATABASE d",
		"GRANT SELECT ON t TO alice",
		"REVOKE ALL ON *.* FROM alice",
		"GRANT SELECT (synthesize) ON t TO alice", // a column named synthesize
		"GRANT synthesize_role TO alice",
		"GRANT r1, synthesize TO alice", // a role named synthesize: no ON
		"/*! SHOW DPSQL STATUS */",
		"/*!80000 SHOW */ DPSQL STATUS",
		"/*+ hint */ SHOW DPSQL STATUS",
		"SELECT 'unterminated",
		"(SHOW DPSQL STATUS)",
		"/* unterminated comment SHOW DPSQL STATUS",
		"SHOW",
		"ALTER TABLE t SET",
		"BACKUP", "BACKUP TABLE t", "backup `dpsql`",
	} {
		stmt, n, ok, err := Parse(in)
		if ok || stmt != nil || n != 0 || err != nil {
			t.Errorf("Parse(%q) = %v, %d, %v, %v; want not ours", in, stmt, n, ok, err)
		}
	}
}

func TestParseMulti(t *testing.T) {
	tests := []struct {
		in   string
		n    int // bytes of the first statement
		want string
	}{
		{"SHOW DPSQL STATUS; SELECT 1", len("SHOW DPSQL STATUS;"), "SHOW DPSQL STATUS"},
		{"SHOW MECHANISMS ;SHOW MECHANISMS", len("SHOW MECHANISMS ;"), "SHOW MECHANISMS"},
		{"/* c */ SHOW MECHANISMS /* ; */ ;", len("/* c */ SHOW MECHANISMS /* ; */ ;"), "SHOW MECHANISMS"},
		{"SHOW MECHANISMS -- ;\n;x", len("SHOW MECHANISMS -- ;\n;"), "SHOW MECHANISMS"},
		{"GRANT SYNTHESIZE ON t TO 'a;b'@'%';REVOKE SYNTHESIZE ON t FROM x", len("GRANT SYNTHESIZE ON t TO 'a;b'@'%';"), "GRANT SYNTHESIZE ON `t` TO 'a;b'@'%'"},
		{"CREATE SYNTHETIC TABLE s FROM t USING aim WORKLOAD (SELECT COUNT(*) FROM t; SELECT a, COUNT(*) FROM t GROUP BY a); SELECT 2",
			len("CREATE SYNTHETIC TABLE s FROM t USING aim WORKLOAD (SELECT COUNT(*) FROM t; SELECT a, COUNT(*) FROM t GROUP BY a);"),
			"CREATE SYNTHETIC TABLE `s` FROM `t` USING aim WORKLOAD (SELECT COUNT(*) FROM t; SELECT a, COUNT(*) FROM t GROUP BY a)"},
	}
	for _, tt := range tests {
		stmt, n, ok, err := Parse(tt.in)
		if !ok || err != nil {
			t.Errorf("Parse(%q): ok %v err %v", tt.in, ok, err)
			continue
		}
		if n != tt.n || stmt.String() != tt.want {
			t.Errorf("Parse(%q) = %q, n=%d; want %q, n=%d", tt.in, stmt, n, tt.want, tt.n)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		in   string
		kind ErrorKind
		near string // the error's Near text must start with this
	}{
		{"SHOW DPSQL", KindUnexpected, ""},
		{"SHOW DPSQL STATUSES", KindUnexpected, "STATUSES"},
		{"SHOW DPSQL STATUS extra", KindUnexpected, "extra"},

		{"SHOW PRIVACY", KindUnexpected, ""},
		{"SHOW PRIVACY LEDGER", KindUnexpected, ""},
		{"SHOW PRIVACY LEDGER FOR", KindUnexpected, ""},
		{"SHOW PRIVACY BUDGET FOR 12", KindUnexpected, "12"},
		{"SHOW PRIVACY BUDGET FOR d.", KindUnexpected, ""},
		{"SHOW PRIVACY BUDGET FOR ``", KindBadValue, "``"},
		{"SHOW PRIVACY POLICY", KindUnexpected, "POLICY"},
		{"SHOW DOMAIN adult", KindUnexpected, "adult"},
		{"SHOW SYNTHETIC TABLE", KindUnexpected, "TABLE"},
		{"SHOW SYNTHETIC TABLES FROM", KindUnexpected, ""},
		{"SHOW ERROR BOUNDS FOR s CONFIDENCE", KindUnexpected, ""},
		{"SHOW ERROR BOUNDS FOR s CONFIDENCE 95", KindBadValue, "95"},
		{"SHOW ERROR BOUNDS FOR s CONFIDENCE 0", KindBadValue, "0"},
		{"SHOW ERROR BOUNDS FOR s CONFIDENCE 'x'", KindUnexpected, "'x'"},
		{"SHOW ERROR BOUNDS s", KindUnexpected, "s"},
		{"SHOW MECHANISMS 'x", KindUnterminated, "'x"},
		{"SHOW MECHANISMS `x", KindUnterminated, "`x"},
		{"SHOW MECHANISMS /* x", KindUnterminated, "/* x"},
		{"SHOW MECHANISMS /*! x */", KindUnexpected, "/*! x */"},
		{"SET PRIVACY BUDGET adult", KindUnexpected, "adult"},
		{"SET PRIVACY BUDGET FOR adult EPSILON = 1", KindUnexpected, "EPSILON"},
		{"SET PRIVACY BUDGET FOR adult WITH EPSILON = 1", KindUnexpected, ""},
		{"SET PRIVACY BUDGET FOR adult WITH EPSILON = 1, EPSILON = 2", KindDuplicate, "EPSILON = 2"},
		{"SET PRIVACY BUDGET FOR adult WITH EPSILON = 1, RHO = 2", KindUnexpected, "RHO"},
		{"SET PRIVACY BUDGET FOR adult WITH EPSILON 1, DELTA = 0", KindUnexpected, "1,"},
		{"SET PRIVACY BUDGET FOR adult WITH EPSILON = 'one', DELTA = 0", KindUnexpected, "'one'"},
		{"SET PRIVACY BUDGET FOR adult WITH EPSILON = 1e999, DELTA = 0", KindBadNumber, "1e999"},
		{"SET PRIVACY BUDGET FOR adult WITH EPSILON = 12abc, DELTA = 0", KindBadNumber, "12abc"},
		{"SET PRIVACY BUDGET FOR adult WITH EPSILON = 0x10, DELTA = 0", KindBadNumber, "0x10"},
		{"SET PRIVACY BUDGET FOR adult WITH EPSILON = 1 DELTA = 0", KindUnexpected, "DELTA"},
		{"ALTER TABLE t SET DOMAIN", KindUnexpected, ""},
		{"ALTER TABLE t SET DOMAIN c", KindUnexpected, ""},
		{"ALTER TABLE t SET DOMAIN c FROM 1", KindUnexpected, "FROM"},
		{"ALTER TABLE t SET DOMAIN c BETWEEN 1 AND 10", KindUnexpected, ""},
		{"ALTER TABLE t SET DOMAIN c BETWEEN 1 AND 10 BINS 0", KindBadValue, "0"},
		{"ALTER TABLE t SET DOMAIN c BETWEEN 1 AND 10 BINS 2.5", KindBadValue, "2.5"},
		{"ALTER TABLE t SET DOMAIN c BETWEEN 1 AND 10 BINS -3", KindBadValue, "-3"},
		{"ALTER TABLE t SET DOMAIN c BETWEEN 10 AND 10 BINS 3", KindBadValue, "10 BINS"},
		{"ALTER TABLE t SET DOMAIN c BETWEEN 'a' AND 'z' BINS 3", KindUnexpected, "'a'"},
		{"ALTER TABLE t SET DOMAIN c BETWEEN 1 10 BINS 3", KindUnexpected, "10"},
		{"ALTER TABLE t SET DOMAIN c IN ()", KindUnexpected, ")"},
		{"ALTER TABLE t SET DOMAIN c IN (1, )", KindUnexpected, ")"},
		{"ALTER TABLE t SET DOMAIN c IN (1 2)", KindUnexpected, "2)"},
		{"ALTER TABLE t SET DOMAIN c IN (a)", KindUnexpected, "a)"},
		{"ALTER TABLE t SET DOMAIN c IN (1", KindUnexpected, ""},
		{"ALTER TABLE t SET DOMAIN c IN 1", KindUnexpected, "1"},
		{"GRANT SYNTHESIZE adult TO bob", KindUnexpected, "adult"},
		{"GRANT SYNTHESIZE ON adult FROM bob", KindUnexpected, "FROM"},
		{"GRANT SYNTHESIZE ON adult TO", KindUnexpected, ""},
		{"GRANT SYNTHESIZE ON adult TO ''", KindBadValue, "''"},
		{"GRANT SYNTHESIZE ON adult TO bob@", KindUnexpected, ""},
		{"GRANT SYNTHESIZE ON adult TO bob@12", KindUnexpected, "12"},
		{"REVOKE SYNTHESIZE ON adult TO bob", KindUnexpected, "TO"},
		{"GRANT SYNTHESIZE ON *.* TO bob", KindBadValue, ".*"},
		{"GRANT SYNTHESIZE, SYNTHESIZE ON t TO bob", KindDuplicate, "SYNTHESIZE ON"},
		{"GRANT SELECT 'x', SYNTHESIZE ON t TO bob", KindUnexpected, "'x'"},
		{"GRANT , SYNTHESIZE ON t TO bob", KindUnexpected, ","},
		{"SHOW SYNTHESIZE GRANTS adult", KindUnexpected, "adult"},
		{"CREATE SYNTHETIC syn FROM t USING aim", KindUnexpected, "syn"},
		{"CREATE SYNTHETIC TABLE IF EXISTS syn FROM t USING aim", KindUnexpected, "EXISTS"},
		{"CREATE SYNTHETIC TABLE syn USING aim", KindUnexpected, "USING"},
		{"CREATE SYNTHETIC TABLE syn FROM t", KindUnexpected, ""},
		{"CREATE SYNTHETIC TABLE syn FROM t USING 'aim'", KindUnexpected, "'aim'"},
		{"CREATE SYNTHETIC TABLE syn FROM t USING aim WITH", KindUnexpected, ""},
		{"CREATE SYNTHETIC TABLE syn FROM t USING aim WITH EPSILON", KindUnexpected, ""},
		{"CREATE SYNTHETIC TABLE syn FROM t USING aim WITH EPSILON = ", KindUnexpected, ""},
		{"CREATE SYNTHETIC TABLE syn FROM t USING aim WITH EPSILON = 1,", KindUnexpected, ""},
		{"CREATE SYNTHETIC TABLE syn FROM t USING aim WITH EPSILON = 1, epsilon = 2", KindDuplicate, "epsilon = 2"},
		{"CREATE SYNTHETIC TABLE syn FROM t USING aim WITH EPSILON = (1)", KindUnexpected, "(1)"},
		{"CREATE SYNTHETIC TABLE syn FROM t USING aim WORKLOAD", KindUnexpected, ""},
		{"CREATE SYNTHETIC TABLE syn FROM t USING aim WORKLOAD SELECT 1", KindUnexpected, "SELECT 1"},
		{"CREATE SYNTHETIC TABLE syn FROM t USING aim WORKLOAD ()", KindUnexpected, ")"},
		{"CREATE SYNTHETIC TABLE syn FROM t USING aim WORKLOAD (;)", KindUnexpected, ";)"},
		{"CREATE SYNTHETIC TABLE syn FROM t USING aim WORKLOAD (SELECT COUNT(*) FROM t", KindUnexpected, ""},
		{"CREATE SYNTHETIC TABLE syn FROM t USING aim WORKLOAD (SELECT COUNT(*) FROM t;; SELECT 1)", KindUnexpected, "; SELECT 1)"},
		{"CREATE SYNTHETIC TABLE syn FROM t USING aim WORKLOAD (SELECT COUNT(*) FROM t WEIGHT 0)", KindBadValue, "WEIGHT 0"},
		{"CREATE SYNTHETIC TABLE syn FROM t USING aim WORKLOAD (SELECT COUNT(*) FROM t WEIGHT -1)", KindBadValue, "WEIGHT -1"},
		{"CREATE SYNTHETIC TABLE syn FROM t USING aim WORKLOAD (SELECT COUNT(*) FROM t WEIGHT 1e999)", KindBadValue, "WEIGHT 1e999"},
		{"CREATE SYNTHETIC TABLE syn FROM t USING aim WORKLOAD (SELECT COUNT(*) FROM t; SELEC a FROM t)", KindWorkloadQuery, "SELEC a"},
		{"CREATE SYNTHETIC TABLE syn FROM t USING aim WORKLOAD (SELECT a FROM t UNION SELECT b FROM t)", KindWorkloadQuery, "SELECT a"},
		{"CREATE SYNTHETIC TABLE syn FROM t USING aim WORKLOAD (DELETE FROM t)", KindWorkloadQuery, "DELETE"},
		{"CREATE SYNTHETIC TABLE syn FROM t USING aim WORKLOAD (SELECT'')", KindWorkloadQuery, "SELECT''"}, // vitess panics on this text
		{"CREATE SYNTHETIC TABLE syn FROM t USING aim WORKLOAD (SELECT COUNT(*) FROM t) extra", KindUnexpected, "extra"},
		{"CREATE SYNTHETIC TABLE syn FROM t USING aim WORKLOAD ALL", KindUnexpected, ""},
		{"CREATE SYNTHETIC TABLE syn FROM t USING aim WORKLOAD ALL 0-WAY", KindBadValue, "0-WAY"},
		{"CREATE SYNTHETIC TABLE syn FROM t USING aim WORKLOAD ALL 2.5-WAY", KindBadValue, "2.5-WAY"},
		{"CREATE SYNTHETIC TABLE syn FROM t USING aim WORKLOAD ALL 2 WAY", KindUnexpected, "WAY"},
		{"CREATE SYNTHETIC TABLE syn FROM t USING aim WORKLOAD ALL 2-WAYS", KindUnexpected, "WAYS"},
		{"CREATE SYNTHETIC TABLE syn FROM t USING aim WORKLOAD ALL two-WAY", KindUnexpected, "two-WAY"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			stmt, n, ok, err := Parse(tt.in)
			if !ok {
				t.Fatalf("Parse: not ours; want ours")
			}
			if tt.kind == 0 {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Parse = %q, n=%d; want an error", stmt, n)
			}
			if stmt != nil || n != 0 {
				t.Errorf("Parse returned a statement (%v, %d) together with an error", stmt, n)
			}
			if !errors.Is(err, ErrSyntax) {
				t.Errorf("error %v does not wrap ErrSyntax", err)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T is not *Error", err)
			}
			if e.Kind != tt.kind {
				t.Errorf("kind = %v, want %v (%v)", e.Kind, tt.kind, err)
			}
			if !strings.HasPrefix(e.Near, tt.near) || (tt.near == "" && e.Near != "") {
				t.Errorf("near = %q, want prefix %q (%v)", e.Near, tt.near, err)
			}
			if e.Pos < 0 || e.Pos > len(tt.in) || !strings.HasPrefix(tt.in[e.Pos:], tt.near) {
				t.Errorf("Pos %d does not point at %q", e.Pos, tt.near)
			}
			if !strings.Contains(err.Error(), "near '"+e.Near+"'") && e.Near != "" {
				t.Errorf("message %q does not quote the position", err)
			}
		})
	}
}

func TestErrorPosition(t *testing.T) {
	in := "/* header */\nSHOW PRIVACY\n  BUDGET FOR 42"
	_, _, ok, err := Parse(in)
	var e *Error
	if !ok || !errors.As(err, &e) {
		t.Fatalf("Parse(%q) = ok %v, err %v; want *Error", in, ok, err)
	}
	if want := strings.Index(in, "42"); e.Pos != want || e.Line != 3 || e.Column != 14 {
		t.Errorf("position = %d (line %d, col %d); want %d (line 3, col 14)", e.Pos, e.Line, e.Column, want)
	}
}

func TestWorkloadQueryError(t *testing.T) {
	in := "CREATE SYNTHETIC TABLE s FROM t USING aim WORKLOAD (SELECT COUNT(*) FROM t; SELECT FROM WHERE)"
	_, _, _, err := Parse(in)
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindWorkloadQuery || e.Query != 2 || e.Err == nil {
		t.Fatalf("got %#v; want a KindWorkloadQuery error for query 2 with the vitess cause", err)
	}
}

func TestValue(t *testing.T) {
	for _, tt := range []struct {
		v       Value
		f       float64
		i       int64
		fErr    bool
		iErr    bool
		printed string
	}{
		{v: num("1e-9"), f: 1e-9, iErr: true, printed: "1e-9"},
		{v: num("-42"), f: -42, i: -42, printed: "-42"},
		{v: num("2.0"), f: 2, i: 2, printed: "2.0"},
		{v: Number(0.1), f: 0.1, iErr: true, printed: "0.1"},
		{v: str("a'b\\c"), fErr: true, iErr: true, printed: `'a\'b\\c'`},
		{v: word("auto"), fErr: true, iErr: true, printed: "auto"},
		{v: word("NULL"), fErr: true, iErr: true, printed: "`NULL`"},
		{v: word("a-b"), fErr: true, iErr: true, printed: "`a-b`"},
		{v: Value{Kind: ValueNull}, fErr: true, iErr: true, printed: "NULL"},
	} {
		f, err := tt.v.Float64()
		if (err != nil) != tt.fErr || err == nil && f != tt.f {
			t.Errorf("%v.Float64() = %v, %v", tt.v, f, err)
		}
		i, err := tt.v.Int64()
		if (err != nil) != tt.iErr || err == nil && i != tt.i {
			t.Errorf("%v.Int64() = %v, %v", tt.v, i, err)
		}
		if s := tt.v.String(); s != tt.printed {
			t.Errorf("String() = %s, want %s", s, tt.printed)
		}
	}
}

// TestQuoting checks that identifiers, strings and option values with
// awkward characters survive String and Parse.
func TestQuoting(t *testing.T) {
	stmts := []Statement{
		&ShowBudget{Table: TableName{DB: "we`ird", Name: "t;x"}},
		&GrantSynthesize{Table: tn("t"), Account: Account{User: "o'neil\\", Host: "10.0.0.%"}},
		&SetDomainIn{Table: tn("t"), Column: "a`b", Values: []Value{str("x\ny\r\x00\x1a'\"")}},
		&CreateSynthetic{Table: tn("s"), Source: tn("t"), Mechanism: "my-mech",
			Options: []Option{{"with", word("NULL")}, {"x y", word("select")}, {"z", Value{Kind: ValueNull}}}},
		&ShowSyntheticTables{DB: "-- not a comment"},
		&SetPublic{Table: TableName{DB: "p`b", Name: "x y"}, Public: true},
		&CreateSynthetic{Table: tn("s"), Source: tn("t"), Mechanism: "pmw_pub",
			Options: []Option{{"PUBLIC", Value{Kind: ValueTable, Text: "`we``ird`.`t`", Table: TableName{DB: "we`ird", Name: "t"}}}}},
	}
	for _, s := range stmts {
		checkRoundTrip(t, s)
	}
}
