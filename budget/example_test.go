package budget_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"go.etcd.io/bbolt"

	"github.com/dpsql/dpsql/budget"
)

// The life of one release: reserve before reading data, commit before
// releasing the result.
func ExampleLedger_Reserve() {
	dir, err := os.MkdirTemp("", "ledger")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db, err := bbolt.Open(filepath.Join(dir, "dpsql.db"), 0o600, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	l, err := budget.OpenLedger(db)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	if _, err := l.SetBudget(ctx, "census.adult#17", "census.adult", "owner",
		"SET PRIVACY BUDGET ON census.adult EPSILON 1 DELTA 1e-9", 1, 1e-9); err != nil {
		log.Fatal(err)
	}

	rho, _ := budget.GaussianCost(1, 20) // one marginal measured with σ = 20
	r, err := l.Reserve(ctx, "census.adult#17", budget.Charge{User: "ann", Statement: "SELECT ...", Mechanism: "aim", Rho: rho})
	if err != nil {
		log.Fatal(err) // *ExhaustedError or ErrNoBudget: nothing was read
	}
	// ... read the data, run the mechanism; on error call r.Fail(touched, why) ...
	if err := r.Commit("released 32561 rows"); err != nil {
		log.Fatal(err) // do not release the result
	}

	_, err = l.Reserve(ctx, "census.adult#17", budget.Charge{User: "ann", Statement: "SELECT ...", Mechanism: "aim", Rho: 1})
	fmt.Println(errors.Is(err, budget.ErrBudgetExhausted))
	// Output: true
}
