package catalog

import (
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
)

// scripts run in order against one database, then again after a reopen to
// check that everything persisted.
var scripts = []scriptTest{
	{
		name: "crud and primary key lookups",
		setup: []string{
			"CREATE TABLE people (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL, age INT, score DECIMAL(10,2), born DATETIME, note TEXT, data BLOB)",
			"INSERT INTO people VALUES (1, 'ann', 34, 1.50, '1990-01-02 03:04:05', 'x', 'bin'), (2, 'bob', NULL, NULL, NULL, NULL, NULL), (3, 'cy', 51, -7.25, '2001-12-31 23:59:59', '', '')",
			"UPDATE people SET age = age + 1 WHERE id = 1",
			"DELETE FROM people WHERE id = 3",
			"REPLACE INTO people (id, name) VALUES (2, 'bobby')",
		},
		assertions: []assertion{
			{query: "SELECT id, name, age, score, born, note, data FROM people ORDER BY id", expected: []sql.Row{
				{1, "ann", 35, "1.5", "1990-01-02 03:04:05 +0000 UTC", "x", "bin"},
				{2, "bobby", nil, nil, nil, nil, nil},
			}},
			{query: "SELECT name FROM people WHERE id = 2", expected: []sql.Row{{"bobby"}}},
			{query: "SELECT name FROM people WHERE id IN (1, 2, 9) ORDER BY name", expected: []sql.Row{{"ann"}, {"bobby"}}},
			{query: "SELECT name FROM people WHERE id > 1", expected: []sql.Row{{"bobby"}}},
			{query: "INSERT INTO people (id, name) VALUES (1, 'dup')", err: sql.ErrPrimaryKeyViolation},
			{query: "INSERT INTO people (id, name) VALUES (7, 'new'), (1, 'dup')", err: sql.ErrPrimaryKeyViolation},
			{query: "SELECT COUNT(*) FROM people", expected: []sql.Row{{2}}},
			{query: "UPDATE people SET id = 1 WHERE id = 2", err: sql.ErrPrimaryKeyViolation},
			{query: "INSERT INTO people (id, name) VALUES (1, 'up') ON DUPLICATE KEY UPDATE name = 'annie'", expected: []sql.Row{{"ok(2)"}}},
			{query: "INSERT IGNORE INTO people (id, name) VALUES (1, 'ignored'), (5, 'eve')", expected: []sql.Row{{"ok(1)"}}},
			{query: "SELECT id, name FROM people ORDER BY id", expected: []sql.Row{{1, "annie"}, {2, "bobby"}, {5, "eve"}}},
			{query: "SELECT id FROM people ORDER BY id DESC", expected: []sql.Row{{5}, {2}, {1}}},
			{query: "SELECT MAX(id), MIN(id) FROM people", expected: []sql.Row{{5, 1}}},
			{query: "SELECT id FROM people WHERE id > 1 ORDER BY id DESC LIMIT 1", expected: []sql.Row{{5}}},
		},
	},
	{
		name: "string primary key with case-insensitive collation",
		setup: []string{
			"CREATE TABLE tags (tag VARCHAR(20) COLLATE utf8mb4_0900_ai_ci PRIMARY KEY, n INT)",
			"INSERT INTO tags VALUES ('Red', 1), ('blue', 2)",
		},
		assertions: []assertion{
			{query: "INSERT INTO tags VALUES ('RED', 3)", err: sql.ErrPrimaryKeyViolation},
			{query: "SELECT n FROM tags WHERE tag = 'BLUE'", expected: []sql.Row{{2}}},
			{query: "SELECT MAX(tag), MIN(tag) FROM tags", expected: []sql.Row{{"Red", "blue"}}},
			{query: "SELECT tag FROM tags ORDER BY tag DESC", expected: []sql.Row{{"Red"}, {"blue"}}},
		},
	},
	{
		name: "composite key, joins, group by",
		setup: []string{
			"CREATE TABLE visits (pid INT, day DATE, n INT, PRIMARY KEY (pid, day))",
			"INSERT INTO visits VALUES (1, '2024-01-01', 2), (1, '2024-01-02', 3), (2, '2024-01-01', 5)",
		},
		assertions: []assertion{
			{query: "SELECT p.name, SUM(v.n) FROM people p JOIN visits v ON p.id = v.pid GROUP BY p.name ORDER BY p.name",
				expected: []sql.Row{{"annie", "5"}, {"bobby", "5"}}},
			{query: "SELECT n FROM visits WHERE pid = 1 AND day = '2024-01-02'", expected: []sql.Row{{3}}},
			{query: "INSERT INTO visits VALUES (2, '2024-01-01', 9)", err: sql.ErrPrimaryKeyViolation},
		},
	},
	{
		name: "keyless table keeps duplicates",
		setup: []string{
			"CREATE TABLE events (kind VARCHAR(10), v DOUBLE)",
			"INSERT INTO events VALUES ('a', 1), ('a', 1), ('a', 1), ('b', 2.5)",
			"UPDATE events SET v = 3 WHERE kind = 'b'",
		},
		assertions: []assertion{
			{query: "SELECT kind, COUNT(*), SUM(v) FROM events GROUP BY kind ORDER BY kind", expected: []sql.Row{{"a", 3, 3}, {"b", 1, 3}}},
			{query: "DELETE FROM events WHERE kind = 'a' LIMIT 2", expected: []sql.Row{{"ok(2)"}}},
			{query: "SELECT COUNT(*) FROM events WHERE kind = 'a'", expected: []sql.Row{{1}}},
		},
	},
	{
		name: "auto increment, enum, set, check",
		setup: []string{
			"CREATE TABLE items (id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY, color ENUM('red','green','blue') NOT NULL DEFAULT 'green', flags SET('x','y','z'), qty INT CHECK (qty >= 0), j JSON, t TIME, y YEAR, f FLOAT, b BIT(4)) COMMENT 'stock'",
			"INSERT INTO items (color, flags, qty, j, t, y, f, b) VALUES ('red', 'x,z', 3, '{\"a\": [1, 2]}', '12:34:56', 2024, 1.25, b'1010')",
			"INSERT INTO items (qty) VALUES (4)",
			"INSERT INTO items (id, qty) VALUES (10, 5)",
			"INSERT INTO items (qty) VALUES (6)",
		},
		assertions: []assertion{
			{query: "SELECT id, color, flags, qty FROM items ORDER BY id", expected: []sql.Row{
				// ENUM and SET values are their stored index and bitmap.
				{1, 1, 5, 3}, {2, 2, nil, 4}, {10, 2, nil, 5}, {11, 2, nil, 6}}},
			{query: "SELECT j, t, y, f, b FROM items WHERE id = 1", expected: []sql.Row{{`{"a": [1, 2]}`, "12:34:56", 2024, 1.25, 10}}},
			{query: "INSERT INTO items (qty) VALUES (-1)", err: sql.ErrCheckConstraintViolated},
			{query: "INSERT INTO items (color, qty) VALUES ('purple', 1)", anyErr: true},
			{query: "SELECT COUNT(*) FROM items", expected: []sql.Row{{4}}},
		},
	},
	{
		name: "alter table",
		setup: []string{
			"CREATE TABLE alt (id INT PRIMARY KEY, a VARCHAR(10), b INT)",
			"INSERT INTO alt VALUES (1, 'x', 10), (2, 'y', 20)",
			"ALTER TABLE alt ADD COLUMN c INT NOT NULL DEFAULT 7",
			"ALTER TABLE alt ADD COLUMN e INT DEFAULT (1 + 2)",
			"ALTER TABLE alt ADD COLUMN d VARCHAR(5) FIRST",
			"ALTER TABLE alt DROP COLUMN b",
			"ALTER TABLE alt MODIFY COLUMN a VARCHAR(20) AFTER c",
			"ALTER TABLE alt RENAME COLUMN c TO cc",
			"ALTER TABLE alt ADD CONSTRAINT cc_small CHECK (cc < 100)",
		},
		assertions: []assertion{
			{query: "SELECT * FROM alt ORDER BY id", expected: []sql.Row{{nil, 1, 7, "x", 3}, {nil, 2, 7, "y", 3}}},
			{query: "UPDATE alt SET cc = 500 WHERE id = 1", err: sql.ErrCheckConstraintViolated},
			{query: "ALTER TABLE alt MODIFY COLUMN a INT", anyErr: true},
			{query: "SELECT a FROM alt WHERE id = 2", expected: []sql.Row{{"y"}}},
		},
	},
	{
		name: "secondary indexes are access paths",
		setup: []string{
			"CREATE TABLE ix (id INT PRIMARY KEY, v INT, w VARCHAR(10), KEY v_idx (v))",
			"INSERT INTO ix VALUES (1, 10, 'a'), (2, 20, 'b'), (3, 10, 'c')",
			"CREATE INDEX w_idx ON ix (w)",
		},
		assertions: []assertion{
			{query: "SELECT id FROM ix WHERE v = 10 ORDER BY id", expected: []sql.Row{{1}, {3}}},
			{query: "SELECT id FROM ix WHERE w > 'a' ORDER BY id", expected: []sql.Row{{2}, {3}}},
			{query: "SELECT MAX(v), MIN(w) FROM ix", expected: []sql.Row{{20, "a"}}},
			{query: "CREATE UNIQUE INDEX uv ON ix (v)", err: sql.ErrUniqueKeyViolation}, // v = 10 twice
			{query: "CREATE UNIQUE INDEX u ON ix (w)", expected: []sql.Row{{"ok(0)"}}},
			{query: "INSERT INTO ix VALUES (4, 1, 'a')", err: sql.ErrUniqueKeyViolation},
			{query: "INSERT INTO ix VALUES (4, 1, 'd'), (5, 1, 'd')", err: sql.ErrUniqueKeyViolation},
			{query: "INSERT INTO ix VALUES (4, 1, NULL), (5, 1, NULL)", expected: []sql.Row{{"ok(2)"}}}, // NULLs never collide
			{query: "UPDATE ix SET w = 'b' WHERE id = 1", err: sql.ErrUniqueKeyViolation},
			// Checked row by row, as InnoDB does: the first row collides with the second's old value.
			{query: "UPDATE ix SET w = CASE id WHEN 1 THEN 'b' ELSE 'a' END WHERE id IN (1, 2)", err: sql.ErrUniqueKeyViolation},
			{query: "UPDATE ix SET w = 'z' WHERE id = 1", expected: []sql.Row{{"ok(1)"}}},
			{query: "UPDATE ix SET w = 'a' WHERE id = 2", expected: []sql.Row{{"ok(1)"}}},      // 'a' was freed above
			{query: "UPDATE ix SET id = id + 10 WHERE id = 2", expected: []sql.Row{{"ok(1)"}}}, // key moves, unique value stays
			{query: "INSERT IGNORE INTO ix VALUES (6, 1, 'a'), (7, 1, 'e')", expected: []sql.Row{{"ok(1)"}}},
			{query: "SELECT id, w FROM ix ORDER BY id", expected: []sql.Row{{1, "z"}, {3, "c"}, {4, nil}, {5, nil}, {7, "e"}, {12, "a"}}},
			{query: "DROP INDEX w_idx ON ix", expected: []sql.Row{{"ok(0)"}}},
			{query: "SELECT index_name, non_unique FROM information_schema.statistics WHERE table_schema = 'mydb' AND table_name = 'ix' ORDER BY index_name",
				expected: []sql.Row{{"PRIMARY", 0}, {"u", 0}, {"v_idx", 1}}},
		},
	},
	{
		name: "alter auto_increment, drop database",
		setup: []string{
			"CREATE TABLE seq (id INT PRIMARY KEY AUTO_INCREMENT, v INT)",
			"INSERT INTO seq (v) VALUES (1)",
			"ALTER TABLE seq AUTO_INCREMENT = 100",
			"INSERT INTO seq (v) VALUES (2)",
			"CREATE DATABASE scratch",
			"CREATE TABLE scratch.s (x INT)",
			"INSERT INTO scratch.s VALUES (1)",
			"DROP DATABASE scratch",
		},
		assertions: []assertion{
			{query: "SELECT id, v FROM seq ORDER BY id", expected: []sql.Row{{1, 1}, {100, 2}}},
			{query: "SELECT * FROM scratch.s", err: sql.ErrDatabaseNotFound},
			{query: "CREATE DATABASE mydb", err: sql.ErrDatabaseExists},
		},
	},
	{
		name: "truncate, rename, drop, views",
		setup: []string{
			"CREATE TABLE tmp (id INT PRIMARY KEY AUTO_INCREMENT, v INT)",
			"INSERT INTO tmp (v) VALUES (1), (2), (3)",
			"TRUNCATE TABLE tmp",
			"INSERT INTO tmp (v) VALUES (4)",
			"RENAME TABLE tmp TO tmp2",
			"CREATE TABLE gone (x INT)",
			"DROP TABLE gone",
			"CREATE VIEW adults AS SELECT name FROM people WHERE id < 5",
		},
		assertions: []assertion{
			{query: "SELECT id, v FROM tmp2", expected: []sql.Row{{1, 4}}},
			{query: "SELECT * FROM tmp", err: sql.ErrTableNotFound},
			{query: "SELECT * FROM gone", err: sql.ErrTableNotFound},
			{query: "SELECT name FROM adults ORDER BY name", expected: []sql.Row{{"annie"}, {"bobby"}}},
		},
	},
}

// checksAfterReopen are run after closing and reopening the store.
var checksAfterReopen = []assertion{
	{query: "SELECT id, name, age, score, born, note, data FROM people ORDER BY id", expected: []sql.Row{
		{1, "annie", 35, "1.5", "1990-01-02 03:04:05 +0000 UTC", "x", "bin"},
		{2, "bobby", nil, nil, nil, nil, nil},
		{5, "eve", nil, nil, nil, nil, nil},
	}},
	{query: "INSERT INTO people (id, name) VALUES (5, 'dup')", err: sql.ErrPrimaryKeyViolation},
	// Collations survive the reopen (LIKE and key weights depend on them).
	{query: "SELECT name FROM people WHERE name LIKE 'bob%'", expected: []sql.Row{{"bobby"}}},
	{query: "SELECT id FROM people WHERE name = 'eve'", expected: []sql.Row{{5}}},
	{query: "INSERT INTO tags VALUES ('RED', 3)", err: sql.ErrPrimaryKeyViolation},
	{query: "SELECT kind, COUNT(*) FROM events GROUP BY kind ORDER BY kind", expected: []sql.Row{{"a", 1}, {"b", 1}}},
	{query: "INSERT INTO items (qty) VALUES (-1)", err: sql.ErrCheckConstraintViolated},
	{query: "INSERT INTO items (qty) VALUES (8)", expected: []sql.Row{{"ok(1)"}}},
	{query: "SELECT id, color, j, t, y, b FROM items WHERE qty = 8 OR id = 1 ORDER BY id", expected: []sql.Row{
		// 12 was burnt by the failed INSERT just above, as in MySQL.
		{1, 1, `{"a": [1, 2]}`, "12:34:56", 2024, 10}, {13, 2, nil, nil, nil, nil}}},
	{query: "SELECT * FROM alt ORDER BY id", expected: []sql.Row{{nil, 1, 7, "x", 3}, {nil, 2, 7, "y", 3}}},
	// Expression defaults survive several metadata rewrites and a reopen.
	{query: "SELECT column_default FROM information_schema.columns WHERE table_schema = 'mydb' AND table_name = 'alt' AND column_name IN ('cc', 'e') ORDER BY column_name",
		expected: []sql.Row{{"7"}, {"(1 + 2)"}}},
	{query: "INSERT INTO alt (id, a) VALUES (3, 'z')", expected: []sql.Row{{"ok(1)"}}},
	{query: "SELECT cc, e FROM alt WHERE id = 3", expected: []sql.Row{{7, 3}}},
	{query: "UPDATE alt SET cc = 500 WHERE id = 1", err: sql.ErrCheckConstraintViolated},
	{query: "SELECT id, v FROM tmp2", expected: []sql.Row{{1, 4}}},
	{query: "SELECT id FROM ix WHERE v = 10 ORDER BY id", expected: []sql.Row{{1}, {3}}},
	{query: "INSERT INTO ix VALUES (9, 1, 'c')", err: sql.ErrUniqueKeyViolation},
	{query: "ALTER TABLE ix MODIFY COLUMN w VARCHAR(10) COLLATE utf8mb4_0900_ai_ci", expected: []sql.Row{{"ok(0)"}}},
	{query: "INSERT INTO ix VALUES (9, 1, 'C')", err: sql.ErrUniqueKeyViolation}, // rebuilt under the new collation
	{query: "INSERT INTO seq (v) VALUES (3)", expected: []sql.Row{{"ok(1)"}}},
	{query: "SELECT MAX(id) FROM seq", expected: []sql.Row{{101}}},
	{query: "SHOW DATABASES", expected: []sql.Row{{"information_schema"}, {"mydb"}}},
	{query: "SELECT name FROM adults ORDER BY name", expected: []sql.Row{{"annie"}, {"bobby"}}},
	{query: "SHOW TABLES", expected: []sql.Row{{"adults"}, {"alt"}, {"events"}, {"items"}, {"ix"}, {"people"}, {"seq"}, {"tags"}, {"tmp2"}, {"visits"}}},
	{query: "SELECT table_name, table_rows FROM information_schema.tables WHERE table_schema = 'mydb' AND table_type = 'BASE TABLE' ORDER BY table_name",
		expected: []sql.Row{{"alt", 3}, {"events", 2}, {"items", 5}, {"ix", 6}, {"people", 3}, {"seq", 3}, {"tags", 2}, {"tmp2", 1}, {"visits", 3}}},
	{query: "SELECT column_name, column_type, is_nullable, column_key FROM information_schema.columns WHERE table_schema = 'mydb' AND table_name = 'items' ORDER BY ordinal_position",
		expected: []sql.Row{
			{"id", "bigint unsigned", "NO", "PRI"},
			{"color", "enum('red','green','blue')", "NO", ""},
			{"flags", "set('x','y','z')", "YES", ""},
			{"qty", "int", "YES", ""},
			{"j", "json", "YES", ""},
			{"t", "time(6)", "YES", ""},
			{"y", "year", "YES", ""},
			{"f", "float", "YES", ""},
			{"b", "bit(4)", "YES", ""},
		}},
	{query: "SHOW CREATE TABLE visits", expected: []sql.Row{{"visits", "CREATE TABLE `visits` (\n" +
		"  `pid` int NOT NULL,\n" +
		"  `day` date NOT NULL,\n" +
		"  `n` int,\n" +
		"  PRIMARY KEY (`pid`,`day`)\n" +
		") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_0900_bin"}}},
	{query: "SELECT table_comment, auto_increment FROM information_schema.tables WHERE table_schema = 'mydb' AND table_name = 'items'",
		expected: []sql.Row{{"stock", 14}}},
	{query: "SELECT constraint_name, check_clause FROM information_schema.check_constraints WHERE constraint_schema = 'mydb' ORDER BY constraint_name",
		expected: []sql.Row{{"cc_small", "(cc < 100)"}, {"items_chk_1", "(qty >= 0)"}}},
}

func TestSQLScriptsPersist(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir)
	h := newHarness(t, s)
	h.mustExec("", "CREATE DATABASE mydb")
	for _, st := range scripts {
		h.run("mydb", st)
	}
	closeChecked(t, s)

	s2 := mustOpen(t, dir)
	h2 := newHarness(t, s2)
	h2.run("mydb", scriptTest{name: "after reopen", assertions: checksAfterReopen})
}
