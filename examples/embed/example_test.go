package embed_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"strings"

	"github.com/dpsql/dpsql"
	_ "github.com/dpsql/dpsql/driver" // the "dpsql" database/sql driver
)

// Example embeds dpsql: an owner loads a table and grants SYNTHESIZE, an
// analyst synthesizes it through sql.Open("dpsql", …), and everything is
// still there after the server is closed and opened again.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "dpsql-embed")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	srv, err := dpsql.Open(ctx, dpsql.Options{DataDir: dir, RootPassword: "secret", Name: "app"})
	if err != nil {
		log.Fatal(err)
	}
	root := srv.OpenDB("root", "secret", "")
	var vals []string
	rng := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		vals = append(vals, fmt.Sprintf("(%d, '%s')", rng.IntN(5), []string{"a", "b", "c"}[rng.IntN(3)]))
	}
	exec(root,
		"CREATE DATABASE raw",
		"CREATE DATABASE lab",
		"CREATE TABLE raw.visits (day INT NOT NULL CHECK (day BETWEEN 0 AND 4), site ENUM('a','b','c') NOT NULL)",
		"INSERT INTO raw.visits VALUES "+strings.Join(vals, ","),
		"SET PRIVACY BUDGET FOR raw.visits WITH EPSILON = 2, DELTA = 1e-6",
		"CREATE USER analyst IDENTIFIED BY 'apw'",
		"GRANT SYNTHESIZE ON raw.visits TO analyst",
		"GRANT CREATE, SELECT ON lab.* TO analyst",
	)
	root.Close()

	// The analyst connects with a DSN, as with any database/sql driver.
	analyst, err := sql.Open("dpsql", "analyst:apw@dpsql(app)/lab")
	if err != nil {
		log.Fatal(err)
	}
	if _, err := analyst.Query("SELECT COUNT(*) FROM raw.visits"); err != nil {
		fmt.Println("analyst reads raw.visits: denied")
	}
	exec(analyst, "CREATE SYNTHETIC TABLE lab.visits FROM raw.visits USING aim WITH EPSILON = 1, ROWS = 500, ROUNDS = 4, PGM_ITERS = 10, FINAL_ITERS = 50")
	fmt.Println("synthetic rows:", one(analyst, "SELECT COUNT(*) FROM lab.visits"))
	analyst.Close()
	if err := srv.Close(); err != nil {
		log.Fatal(err)
	}

	// Durability: open the directory again.
	srv, err = dpsql.Open(ctx, dpsql.Options{DataDir: dir, RootPassword: "secret", Name: "app"})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	analyst = srv.OpenDB("analyst", "apw", "lab")
	defer analyst.Close()
	fmt.Println("after re-open:", one(analyst, "SELECT COUNT(*) FROM lab.visits"), "rows")
	root = srv.OpenDB("root", "secret", "")
	defer root.Close()
	fmt.Println("ledger:", ledger(root, "raw.visits"))
	// Output:
	// analyst reads raw.visits: denied
	// synthetic rows: 500
	// after re-open: 500 rows
	// ledger: root@localhost  budget set; analyst@% aim committed
}

func exec(db *sql.DB, stmts ...string) {
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			log.Fatalf("%s: %v", s, err)
		}
	}
}

func one(db *sql.DB, q string) string {
	var s string
	if err := db.QueryRow(q).Scan(&s); err != nil {
		log.Fatalf("%s: %v", q, err)
	}
	return s
}

// ledger lists the user, mechanism and status of each ledger entry of t.
func ledger(db *sql.DB, t string) string {
	rows, err := db.Query("SHOW PRIVACY LEDGER FOR " + t)
	if err != nil {
		log.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			log.Fatal(err)
		}
		var e []string
		for i, c := range cols {
			if c == "user" || c == "mechanism" || c == "status" {
				e = append(e, vals[i].String)
			}
		}
		out = append(out, strings.Join(e, " "))
	}
	return strings.Join(out, "; ")
}
