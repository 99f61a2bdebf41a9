package catalog

import (
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
)

func TestSmoke(t *testing.T) {
	s := mustOpen(t, "")
	h := newHarness(t, s)
	h.mustExec("", "CREATE DATABASE mydb")
	h.run("mydb", scriptTest{
		name: "smoke",
		setup: []string{
			"CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(20), score DECIMAL(10,2))",
			"INSERT INTO t VALUES (1, 'a', 1.50), (2, 'b', NULL)",
		},
		assertions: []assertion{
			{query: "SELECT * FROM t ORDER BY id", expected: []sql.Row{{1, "a", "1.5"}, {2, "b", nil}}},
			{query: "SELECT name FROM t WHERE id = 2", expected: []sql.Row{{"b"}}},
		},
	})
}
