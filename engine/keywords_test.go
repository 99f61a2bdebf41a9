package engine

import (
	"strings"
	"testing"

	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

// firstDayKeywords are MySQL non-reserved keywords a data team names
// databases after; vitess's grammar refuses them in some positions.
var firstDayKeywords = []string{"work", "status", "data", "level", "value", "comment", "action", "names", "events", "account", "begin", "commit"}

// TestQuoteKeywords: statements that vitess refuses because a MySQL
// non-reserved keyword names a database, table or column parse once
// quoteKeywords backquotes it, in every position; statements wrong for
// other reasons keep their error.
func TestQuoteKeywords(t *testing.T) {
	parse := func(q string) error {
		_, err := ast.Parse(q)
		return err
	}
	forms := []string{
		"CREATE DATABASE %s", "CREATE DATABASE IF NOT EXISTS %s", "DROP DATABASE %s", "DROP SCHEMA IF EXISTS %s",
		"USE %s", "CREATE TABLE %s.t (a INT, %s INT)", "SELECT %s.t.%s, t.a FROM %s.t", "SELECT * FROM %s.t JOIN %s.u",
		"INSERT INTO %s.t VALUES (1)", "UPDATE %s.t SET a = 1", "DELETE FROM %s.t", "SHOW TABLES FROM %s",
		"GRANT SELECT ON %s.* TO u", "  \n CREATE DATABASE %s;",
	}
	words := append(append([]string(nil), firstDayKeywords...), "events", "data", "status", "json", "year", "text", "date", "point", "source", "user")
	for _, f := range forms {
		for _, kw := range words {
			q := strings.ReplaceAll(f, "%s", kw)
			err := parse(q)
			if err == nil {
				continue
			}
			fixed, inserted, ok := quoteKeywords(q, err, parse)
			if !ok {
				t.Errorf("%s: not fixed (%v)", q, err)
				continue
			}
			if perr := parse(fixed); perr != nil {
				t.Errorf("%s: fixed to %s, which fails: %v", q, fixed, perr)
			}
			if strings.ReplaceAll(fixed, "`", "") != q || len(inserted) != strings.Count(fixed, "`") {
				t.Errorf("%s: fixed to %s with insertions %v", q, fixed, inserted)
			}
			if got := originalOffset(len(fixed), inserted); got != len(q) {
				t.Errorf("%s: end of %s maps to %d, want %d", q, fixed, got, len(q))
			}
		}
	}
	for _, q := range []string{
		"CREATE DATABSE work",            // a typo
		"SELECT * FORM status.t",         // another
		"SELECT status FROM t WHERE",     // incomplete
		"CREATE DATABASE select",         // a reserved word
		"CREATE TABLE work.t (a INTEGR)", // a bad type after a keyword
	} {
		err := parse(q)
		if err == nil {
			t.Fatalf("%s parses", q)
		}
		if fixed, _, ok := quoteKeywords(q, err, parse); ok {
			t.Errorf("%s: fixed to %s", q, fixed)
		}
	}
}
