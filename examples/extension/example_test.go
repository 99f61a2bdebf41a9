package extension_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/dolthub/go-mysql-server/memory"
	gms "github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"

	"github.com/dpsql/dpsql"
)

// hostDatabases is the application's own data: go-mysql-server's memory
// databases with a table shop.customers.
func hostDatabases() *memory.DbProvider {
	db := memory.NewDatabase("shop")
	pro := memory.NewDBProvider(db)
	ctx := gms.NewContext(context.Background(), gms.WithSession(memory.NewSession(gms.NewBaseSession(), pro)))
	tier := types.MustCreateEnumType([]string{"free", "pro", "team"}, gms.Collation_Default)
	region := types.MustCreateEnumType([]string{"eu", "us", "asia"}, gms.Collation_Default)
	t := memory.NewTable(db, "customers", gms.NewPrimaryKeySchema(gms.Schema{
		{Name: "id", Type: types.Int64, Source: "customers", PrimaryKey: true, AutoIncrement: true},
		{Name: "tier", Type: tier, Source: "customers"},
		{Name: "region", Type: region, Source: "customers"},
		{Name: "churned", Type: types.Boolean, Source: "customers"},
	}), db.GetForeignKeyCollection())
	db.AddTable("customers", t)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 3000 {
		tr := rng.IntN(3)
		churn := int8(0)
		if rng.IntN(10) < 4-tr { // free customers churn more
			churn = 1
		}
		if err := t.Insert(ctx, gms.NewRow(int64(i+1), uint16(tr+1), uint16(rng.IntN(3)+1), churn)); err != nil {
			log.Fatal(err)
		}
	}
	return pro
}

// Example installs dpsql over the application's memory databases, then
// runs the owner's and an analyst's statements on its table.
func Example() {
	ctx := context.Background()
	meta, err := os.MkdirTemp("", "dpsql-extension")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(meta)

	pro := hostDatabases()
	// One call: dpsql's metadata goes to meta/dpsql.db.
	srv, err := dpsql.Install(ctx, dpsql.Host{
		Provider:   pro,
		NewSession: func(b *gms.BaseSession) gms.Session { return memory.NewSession(b, pro) },
	}, dpsql.Options{DataDir: meta, RootPassword: "secret"})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	if _, err := os.Stat(filepath.Join(meta, "dpsql.db")); err == nil {
		fmt.Println("metadata in dpsql.db")
	}

	root := srv.OpenDB("root", "secret", "")
	defer root.Close()
	fmt.Println("host rows:", one(root, "SELECT COUNT(*) FROM shop.customers"))
	exec(root,
		"SET PRIVACY BUDGET FOR shop.customers WITH EPSILON = 3, DELTA = 1e-6",
		"CREATE DATABASE lab",
		"CREATE USER analyst IDENTIFIED BY 'apw'",
		"GRANT SYNTHESIZE ON shop.customers TO analyst",
		"GRANT CREATE, SELECT ON lab.* TO analyst",
	)

	analyst := srv.OpenDB("analyst", "apw", "lab")
	defer analyst.Close()
	if _, err := analyst.Query("SELECT COUNT(*) FROM shop.customers"); err != nil {
		fmt.Println("analyst reads shop.customers: denied")
	}
	exec(analyst, "CREATE SYNTHETIC TABLE lab.customers FROM shop.customers USING aim WITH EPSILON = 1, ROWS = 3000, ROUNDS = 8, PGM_ITERS = 20, FINAL_ITERS = 100")
	fmt.Println("synthetic rows:", one(analyst, "SELECT COUNT(*) FROM lab.customers"))
	fmt.Println(one(analyst, "EXPLAIN SELECT tier, COUNT(*) FROM lab.customers GROUP BY tier")[:len("answered from model")])
	// The model's churn rate per tier keeps the host data's ordering.
	rates := map[string]float64{}
	rows, err := analyst.Query("SELECT tier, churned, COUNT(*) FROM lab.customers GROUP BY tier, churned")
	if err != nil {
		log.Fatal(err)
	}
	totals := map[string]float64{}
	for rows.Next() {
		var tier string
		var churned bool
		var n float64
		if err := rows.Scan(&tier, &churned, &n); err != nil {
			log.Fatal(err)
		}
		totals[tier] += n
		if churned {
			rates[tier] += n
		}
	}
	rows.Close()
	fmt.Println("free churns more than team:", rates["free"]/totals["free"] > rates["team"]/totals["team"])
	fmt.Println("budget spent:", strings.HasPrefix(one(root, "SELECT 1"), "1"), ledgerStatus(root))
	// Output:
	// metadata in dpsql.db
	// host rows: 3000
	// analyst reads shop.customers: denied
	// synthetic rows: 3000
	// answered from model
	// free churns more than team: true
	// budget spent: true committed
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

// ledgerStatus is the status of the last ledger entry of shop.customers.
func ledgerStatus(db *sql.DB) string {
	rows, err := db.Query("SHOW PRIVACY LEDGER FOR shop.customers")
	if err != nil {
		log.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	status := ""
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			log.Fatal(err)
		}
		for i, c := range cols {
			if c == "status" {
				status = vals[i].String
			}
		}
	}
	return status
}
