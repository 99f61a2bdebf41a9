package analyst_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/dpsql/dpsql/engine"
)

// Example runs a dpsql server in-process on a free port and walks through
// the owner's and the analyst's statements. The synthetic data is random,
// so the example prints only what does not depend on the noise: column
// names, domains, row counts, where answers come from and ledger states.
func Example() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, err := os.MkdirTemp("", "dpsql-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	cfg := engine.DefaultConfig()
	cfg.DataDir, cfg.Port, cfg.RootPassword = dir, 0, "secret"
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	e, err := engine.New(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- e.Serve(ctx) }()
	defer func() { cancel(); <-served }()

	// The data owner (root) loads a table whose columns have public
	// domains: an ENUM, a CHECK range, and a declared list for city.
	root := open(e, "root", "secret", "")
	defer root.Close()
	var rows strings.Builder
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		if i > 0 {
			rows.WriteString(",")
		}
		sex, age := "F", 20+rng.IntN(30)
		if rng.IntN(2) == 0 {
			sex, age = "M", 40+rng.IntN(40)
		}
		fmt.Fprintf(&rows, "('%s', %d, '%s')", sex, age, []string{"Lyon", "Nice", "Paris"}[rng.IntN(3)])
	}
	exec(root,
		"CREATE DATABASE raw",
		"CREATE TABLE raw.people (sex ENUM('F', 'M') NOT NULL, age INT NOT NULL CHECK (age BETWEEN 18 AND 90), city VARCHAR(10) NOT NULL)",
		"INSERT INTO raw.people VALUES "+rows.String(),
		"SET PRIVACY BUDGET FOR raw.people WITH EPSILON = 2, DELTA = 1e-6",
		"ALTER TABLE raw.people SET DOMAIN city IN ('Lyon', 'Nice', 'Paris')",
		"CREATE USER bob IDENTIFIED BY 'pw'",
		"CREATE DATABASE bobdb",
		"GRANT ALL ON bobdb.* TO bob",
		"GRANT SYNTHESIZE ON raw.people TO bob",
	)

	// The analyst never reads a raw row: SHOW DOMAIN is how bob learns
	// the columns.
	bob := open(e, "bob", "pw", "bobdb")
	defer bob.Close()
	for _, r := range query(bob, "SHOW DOMAIN FOR raw.people") {
		fmt.Printf("%s: %s, %s values (%s)\n", r[0], r[2], r[3], r[4])
	}
	if _, err := bob.Exec("SELECT * FROM raw.people"); err != nil {
		fmt.Println("raw rows: refused")
	}

	res, err := bob.Exec("CREATE SYNTHETIC TABLE people FROM raw.people USING aim WITH EPSILON = 1, ROWS = 1000")
	if err != nil {
		log.Fatal(err)
	}
	n, _ := res.RowsAffected()
	fmt.Println("synthetic rows:", n)

	// COUNT queries are answered from the model (expected counts, scaled
	// to ROWS); switching the session to 'rows' counts the rows instead.
	fmt.Println(query(bob, "EXPLAIN SELECT sex, COUNT(*) FROM people GROUP BY sex")[0][0][:len("answered from model")])
	fmt.Println("groups by sex:", len(query(bob, "SELECT sex, COUNT(*) FROM people GROUP BY sex")))
	exec(bob, "SET SESSION dpsql_answer_source = 'rows'")
	fmt.Println("rows counted:", query(bob, "SELECT COUNT(*) FROM people")[0][0])

	// Error bounds of the workload marginals (all 2-way by default), and
	// the analyst's own ledger entry.
	for _, r := range query(bob, "SHOW ERROR BOUNDS FOR people") {
		fmt.Println("bound on", r[0])
	}
	for _, r := range query(bob, "SHOW PRIVACY LEDGER FOR raw.people") {
		fmt.Println("ledger:", r[4], r[6])
	}

	// Output:
	// sex: categorical, 2 values ('F', 'M')
	// age: integer range, 73 values (18..90)
	// city: categorical, 3 values ('Lyon', 'Nice', 'Paris')
	// raw rows: refused
	// synthetic rows: 1000
	// answered from model
	// groups by sex: 2
	// rows counted: 1000
	// bound on sex, age
	// bound on sex, city
	// bound on age, city
	// ledger: aim committed
}

// open connects user to e, with database db current ("" for none).
func open(e *engine.Engine, user, password, db string) *sql.DB {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.Addr, cfg.DBName = user, password, "tcp", e.Addr().String(), db
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		log.Fatal(err)
	}
	return sql.OpenDB(c)
}

// exec runs statements, stopping the example at the first error.
func exec(db *sql.DB, stmts ...string) {
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			log.Fatalf("%s: %v", s, err)
		}
	}
}

// query returns every row of q as strings.
func query(db *sql.DB, q string) [][]string {
	rows, err := db.Query(q)
	if err != nil {
		log.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		log.Fatal(err)
	}
	var out [][]string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			log.Fatal(err)
		}
		row := make([]string, len(cols))
		for i, v := range vals {
			row[i] = v.String
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		log.Fatal(err)
	}
	return out
}
