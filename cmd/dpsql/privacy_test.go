package main

import (
	"database/sql"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// Over-the-wire attacks on the noise of seeded releases. Each one worked
// when a SEED keyed the mechanism's noise: an attacker who runs a seeded
// statement twice and subtracts learned exact counts. With fresh noise for
// every release the subtraction leaves noise of the combined scale, so each
// test asserts that the attack's estimate is off somewhere; the chance that
// it fails with fresh noise is below 1e-20 (16 cells, σ ≥ 40 each).

// setupAttack creates raw.t with 16 × 16 public values, seeded rows, a
// budget of ε = 50, and the database lab for the releases.
func setupAttack(t *testing.T, root *sql.DB) {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	var values []string
	for range 400 {
		x := rng.IntN(16)
		values = append(values, fmt.Sprintf("(%d, %d)", x, (x+rng.IntN(3))%16))
	}
	mustExec(t, root,
		"CREATE DATABASE raw",
		"CREATE DATABASE lab",
		"CREATE TABLE raw.t (x INT NOT NULL CHECK (x BETWEEN 0 AND 15), y INT NOT NULL CHECK (y BETWEEN 0 AND 15))",
		"INSERT INTO raw.t VALUES "+strings.Join(values, ","),
		"SET PRIVACY BUDGET FOR raw.t WITH EPSILON = 50, DELTA = 0.000001",
	)
}

// release runs a seeded gaussian release of col's 1-way marginal at eps
// and returns its noisy counts by value (the table is dropped again, as an
// attacker reusing the name would).
func release(t *testing.T, root *sql.DB, col string, eps float64) []float64 {
	t.Helper()
	return releaseSeeded(t, root, col, eps, 7)
}

// releaseSeeded is release with another SEED.
func releaseSeeded(t *testing.T, root *sql.DB, col string, eps float64, seed int) []float64 {
	t.Helper()
	mustExec(t, root, fmt.Sprintf("CREATE SYNTHETIC TABLE lab.g FROM raw.t USING gaussian WITH EPSILON = %s, SEED = %d "+
		"WORKLOAD (SELECT %s, COUNT(*) FROM t GROUP BY %s)", strconv.FormatFloat(eps, 'g', -1, 64), seed, col, col))
	out := counts(t, root, fmt.Sprintf("SELECT %s, dp_noisy_count FROM lab.g", col))
	mustExec(t, root, "DROP TABLE lab.g")
	return out
}

// trueCounts returns the raw marginal of col, as the owner sees it.
func trueCounts(t *testing.T, root *sql.DB, col string) []float64 {
	t.Helper()
	return counts(t, root, fmt.Sprintf("SELECT %s, COUNT(*) FROM raw.t GROUP BY %s", col, col))
}

// counts reads (value, count) rows into a vector indexed by value.
func counts(t *testing.T, db *sql.DB, q string) []float64 {
	t.Helper()
	out := make([]float64, 16)
	for _, r := range queryStrings(t, db, q) {
		v, err1 := strconv.Atoi(r[0])
		c, err2 := strconv.ParseFloat(r[1], 64)
		if err1 != nil || err2 != nil || v < 0 || v >= 16 {
			t.Fatalf("%s: row %v", q, r)
		}
		out[v] = c
	}
	return out
}

func sub(a, b []float64) []float64 {
	out := make([]float64, len(a))
	for i := range a {
		out[i] = a[i] - b[i]
	}
	return out
}

func maxAbs(v []float64) float64 {
	m := 0.0
	for _, x := range v {
		m = max(m, math.Abs(x))
	}
	return m
}

// TestSeedAttackTwoWorkloads: the same SEED on workload [x] and then [y]
// used to draw the same noise vector for both; subtracting the true counts
// of one release revealed the other's exactly.
func TestSeedAttackTwoWorkloads(t *testing.T) {
	s := startServer(t, t.TempDir())
	root := s.root()
	setupAttack(t, root)
	nx := sub(release(t, root, "x", 0.1), trueCounts(t, root, "x"))
	ny := sub(release(t, root, "y", 0.1), trueCounts(t, root, "y"))
	if d := maxAbs(sub(nx, ny)); d == 0 {
		t.Fatalf("two seeded releases carry the same noise %v", nx)
	}
}

// TestSeedAttackScaling: with the same SEED at ε = 0.05 and 0.1 the noise
// only scaled (−95, then −49), so 2·R(0.1) − R(0.05) gave the true counts
// to ±3. The two streams stay in step until a rejection sampler draws a
// different number of proposals, so the attack is sharpest on the first
// cell of a release: it is repeated with ten seeds, and the estimate of
// the first cell must not land within ±3 of the truth in half of them
// (fresh noise leaves it σ ≈ 113 wide: each lands there with probability
// about 0.02, five of ten with probability below 1e-6).
func TestSeedAttackScaling(t *testing.T) {
	s := startServer(t, t.TempDir())
	root := s.root()
	setupAttack(t, root)
	truth := trueCounts(t, root, "x")
	close := 0
	for seed := 1; seed <= 10; seed++ {
		r1, r2 := releaseSeeded(t, root, "x", 0.1, seed), releaseSeeded(t, root, "x", 0.05, seed)
		if math.Abs(2*r1[0]-r2[0]-truth[0]) <= 3 {
			close++
		}
	}
	if close >= 5 {
		t.Fatalf("2·R(0.1) − R(0.05) recovers the first count to ±3 in %d of 10 seeded pairs", close)
	}
}

// TestSeedAttackNeighbour: the same SEED before and after the owner adds
// one person gave releases that differed by exactly that person.
func TestSeedAttackNeighbour(t *testing.T) {
	s := startServer(t, t.TempDir())
	root := s.root()
	setupAttack(t, root)
	before := release(t, root, "x", 0.1)
	mustExec(t, root, "INSERT INTO raw.t VALUES (3, 3)")
	after := release(t, root, "x", 0.1)
	diff := sub(after, before)
	diff[3]-- // what the new person explains
	if maxAbs(diff) == 0 {
		t.Fatal("two seeded releases on neighbouring tables differ by exactly the added person")
	}
}

// TestDeltaCapped: a request may not use a δ above its budget's (δ ≈ 1
// once bought ρ = 19.5 under the label ε = 0.1), a budget's δ may not
// exceed 1e-3, and the ledger shows (ε, δ) for every charge.
func TestDeltaCapped(t *testing.T) {
	s := startServer(t, t.TempDir())
	root := s.root()
	setupAttack(t, root)
	mustExec(t, root, "SET PRIVACY BUDGET FOR raw.t WITH EPSILON = 50, DELTA = 1e-9")
	before := budgetRow(t, root, "raw.t")
	_, err := root.Exec("CREATE SYNTHETIC TABLE lab.g FROM raw.t USING gaussian WITH EPSILON = 0.1, DELTA = 0.9999999999999999 " +
		"WORKLOAD (SELECT x, COUNT(*) FROM t GROUP BY x)")
	if mysqlCode(err) != 9112 || !strings.Contains(err.Error(), "exceeds the privacy budget's δ") {
		t.Fatalf("δ above the budget's: %v", err)
	}
	if after := budgetRow(t, root, "raw.t"); !equalRows([][]string{before}, [][]string{after}) {
		t.Fatalf("refused request changed the budget: %v → %v", before, after)
	}
	_, err = root.Exec("SET PRIVACY BUDGET FOR raw.t WITH EPSILON = 1, DELTA = 0.01")
	if mysqlCode(err) != 9112 || !strings.Contains(err.Error(), "1/n") {
		t.Fatalf("budget δ = 0.01: %v", err)
	}
	mustExec(t, root, "CREATE SYNTHETIC TABLE lab.g FROM raw.t USING gaussian WITH EPSILON = 0.1, DELTA = 1e-10 "+
		"WORKLOAD (SELECT x, COUNT(*) FROM t GROUP BY x)")
	rows := queryStrings(t, root, "SHOW PRIVACY LEDGER FOR raw.t")
	last := rows[len(rows)-1]
	if eps, delta := last[8], last[9]; eps != "0.1" || delta != "1e-10" {
		t.Fatalf("ledger entry %v: ε, δ = %q, %q", last, eps, delta)
	}
}
