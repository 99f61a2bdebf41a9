package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/sirupsen/logrus"

	"github.com/dpsql/dpsql/engine"
)

// TestLoad runs 64 concurrent connections against an in-process server
// (so that `go test -race` instruments the server too): owner writes to the
// raw table, CREATE SYNTHETIC TABLE by four analysts, queries on a
// synthetic table, analysts attacking the raw table, and metadata
// statements. It lasts DPSQL_LOAD_SECONDS seconds (default 10, 3 with
// -short); the long run is
//
//	DPSQL_LOAD_SECONDS=120 go test -race -run TestLoad -v ./cmd/dpsql
//
// It checks that no statement fails unexpectedly, that every attack is
// refused, that the ledger agrees with the syntheses clients saw succeed,
// and that the server still serves and shuts down cleanly. The figures
// (statements and latency per kind) go to the test log.
func TestLoad(t *testing.T) {
	seconds := 10
	if testing.Short() {
		seconds = 3
	}
	if v := os.Getenv("DPSQL_LOAD_SECONDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("DPSQL_LOAD_SECONDS=%q: want a positive number of seconds", v)
		}
		seconds = n
	}

	// Connections closed at shutdown are logged by GMS at error level.
	logrus.SetOutput(io.Discard)
	t.Cleanup(func() { logrus.SetOutput(os.Stderr) })
	cfg := engine.DefaultConfig()
	cfg.DataDir, cfg.Port, cfg.RootPassword = t.TempDir(), 0, rootPassword
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, stop := context.WithCancel(context.Background())
	e, err := engine.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- e.Serve(ctx) }()
	defer func() {
		stop()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	open := func(user, pw string) *sql.DB {
		c := mysql.NewConfig()
		c.User, c.Passwd, c.Net, c.Addr = user, pw, "tcp", e.Addr().String()
		conn, err := mysql.NewConnector(c)
		if err != nil {
			t.Fatal(err)
		}
		db := sql.OpenDB(conn)
		db.SetMaxIdleConns(64)
		t.Cleanup(func() { db.Close() })
		return db
	}

	const analysts = 4
	root := open("root", rootPassword)
	setup := []string{
		"CREATE DATABASE raw",
		"CREATE TABLE raw.people (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, sex ENUM('F','M') NOT NULL, age INT NOT NULL CHECK (age BETWEEN 0 AND 9), city ENUM('a','b','c') NOT NULL, note VARCHAR(20) NOT NULL DEFAULT 'SECRET-ROW-42')",
		"ALTER TABLE raw.people SET DOMAIN id BETWEEN 1 AND 1000000 BINS 8",
		"ALTER TABLE raw.people SET DOMAIN note IN ('x')",
		"SET PRIVACY BUDGET FOR raw.people WITH EPSILON = 1000, DELTA = 1e-6",
		"CREATE DATABASE labm",
	}
	var ins strings.Builder
	ins.WriteString("INSERT INTO raw.people (sex, age, city) VALUES ")
	for i := range 2000 {
		if i > 0 {
			ins.WriteByte(',')
		}
		fmt.Fprintf(&ins, "('%s', %d, '%s')", []string{"F", "M"}[i%2], (i*7)%10, []string{"a", "b", "c"}[i%3])
	}
	setup = append(setup, ins.String(),
		"CREATE SYNTHETIC TABLE labm.base FROM raw.people USING independent WITH EPSILON = 1, SEED = 1, PGM_ITERS = 20")
	for a := range analysts {
		setup = append(setup,
			fmt.Sprintf("CREATE USER a%d IDENTIFIED BY 'pw%d'", a, a),
			fmt.Sprintf("CREATE DATABASE lab%d", a),
			fmt.Sprintf("GRANT ALL ON lab%d.* TO a%d", a, a),
			fmt.Sprintf("GRANT SELECT ON labm.base TO a%d", a),
			fmt.Sprintf("GRANT SYNTHESIZE ON raw.people TO a%d", a))
	}
	mustExec(t, root, setup...)
	pools := make([]*sql.DB, analysts)
	for a := range pools {
		pools[a] = open(fmt.Sprintf("a%d", a), fmt.Sprintf("pw%d", a))
	}

	// Kinds of work and their statements; each worker draws from its kind.
	type kind struct {
		name   string
		attack bool // every statement must fail
		next   func(w int, n int, rng *rand.Rand) string
	}
	kinds := []kind{
		{name: "owner-write", next: func(_, _ int, rng *rand.Rand) string {
			switch rng.IntN(3) {
			case 0:
				return fmt.Sprintf("INSERT INTO raw.people (sex, age, city) VALUES ('%s', %d, '%s')", []string{"F", "M"}[rng.IntN(2)], rng.IntN(10), []string{"a", "b", "c"}[rng.IntN(3)])
			case 1:
				return fmt.Sprintf("UPDATE raw.people SET age = %d WHERE id = %d", rng.IntN(10), 1+rng.IntN(2500))
			default:
				return fmt.Sprintf("DELETE FROM raw.people WHERE id = %d", 1+rng.IntN(2500))
			}
		}},
		{name: "synthesize", next: func(w, n int, rng *rand.Rand) string {
			if n%4 == 3 {
				return "SHOW PRIVACY LEDGER FOR raw.people"
			}
			return fmt.Sprintf("CREATE SYNTHETIC TABLE lab%d.t%d_%d FROM raw.people USING independent WITH EPSILON = 0.05, PGM_ITERS = 5", w%analysts, w, n)
		}},
		{name: "model-query", next: func(_, _ int, rng *rand.Rand) string {
			return []string{
				"SELECT sex, COUNT(*) FROM labm.base GROUP BY sex",
				"SELECT city, age, COUNT(*) FROM labm.base WHERE sex = 'F' GROUP BY city, age",
				"SELECT COUNT(*) FROM labm.base WHERE age BETWEEN 2 AND 5",
				"SHOW SYNTHETIC TABLES",
				"SHOW PRIVACY BUDGET",
			}[rng.IntN(5)]
		}},
		{name: "attack", attack: true, next: func(_, _ int, rng *rand.Rand) string {
			return []string{
				"SELECT * FROM raw.people",
				"SELECT note FROM raw.people LIMIT 1",
				"INSERT INTO lab0.x SELECT * FROM raw.people",
				"SET PRIVACY BUDGET FOR raw.people WITH EPSILON = 1e6, DELTA = 1e-6",
			}[rng.IntN(4)]
		}},
		{name: "metadata", next: func(_, _ int, rng *rand.Rand) string {
			return []string{
				"SHOW DOMAIN FOR raw.people",
				"SELECT table_schema, table_name FROM information_schema.tables",
				"SHOW DPSQL STATUS",
				"SHOW DATABASES",
				// An analyst sees their own threads only (its output
				// must be empty, see below).
				"SELECT user, info FROM information_schema.processlist WHERE user <> SUBSTRING_INDEX(CURRENT_USER(), '@', 1)",
			}[rng.IntN(5)]
		}},
	}
	// 64 workers: 8 owner writers, 16 synthesizers, 24 model queries, 8
	// attackers, 8 metadata readers.
	plan := []int{0, 1, 1, 2, 2, 2, 3, 4}
	const workers = 64

	type sample struct {
		kind int
		d    time.Duration
		err  error
		out  string
		stmt string
	}
	var (
		mu        sync.Mutex
		samples   []sample
		created   atomic.Int64
		wg        sync.WaitGroup
		deadline  = time.Now().Add(time.Duration(seconds) * time.Second)
		startGate = make(chan struct{})
	)
	for w := range workers {
		k := plan[w%len(plan)]
		db := root
		if k != 0 {
			db = pools[w%analysts]
		}
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatalf("worker %d: %v", w, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer conn.Close()
			rng := rand.New(rand.NewPCG(uint64(w), 99))
			var local []sample
			<-startGate
			for n := 0; time.Now().Before(deadline); n++ {
				q := kinds[k].next(w, n, rng)
				start := time.Now()
				out, err := connQuery(ctx, conn, q)
				local = append(local, sample{kind: k, d: time.Since(start), err: err, out: out, stmt: q})
				if err == nil && strings.HasPrefix(q, "CREATE SYNTHETIC") {
					created.Add(1)
				}
			}
			mu.Lock()
			samples = append(samples, local...)
			mu.Unlock()
		}()
	}
	began := time.Now()
	close(startGate)
	wg.Wait()
	elapsed := time.Since(began)

	// Figures and checks.
	var unexpected []string
	for k, kd := range kinds {
		var ds []time.Duration
		errs := 0
		for _, s := range samples {
			if s.kind != k {
				continue
			}
			ds = append(ds, s.d)
			if strings.Contains(s.out, "SECRET-ROW-42") || kd.attack && strings.Contains(s.out, "people") && strings.Contains(s.stmt, "information_schema") ||
				strings.Contains(s.stmt, "processlist") && s.err == nil && s.out != "[]" {
				t.Errorf("%s leaked: %s", s.stmt, s.out)
			}
			switch {
			case kd.attack && s.err == nil:
				unexpected = append(unexpected, "attack succeeded: "+s.stmt)
			case !kd.attack && s.err != nil:
				errs++
				unexpected = append(unexpected, fmt.Sprintf("%s: %v", s.stmt, s.err))
			}
		}
		slices.Sort(ds)
		q := func(p float64) time.Duration {
			if len(ds) == 0 {
				return 0
			}
			return ds[min(len(ds)-1, int(p*float64(len(ds))))].Round(100 * time.Microsecond)
		}
		t.Logf("%-12s statements=%-6d per_s=%-8.1f errors=%-4d p50=%-8v p99=%-8v max=%v",
			kd.name, len(ds), float64(len(ds))/elapsed.Seconds(), errs, q(0.5), q(0.99), q(1))
	}
	t.Logf("load: %d connections for %v, %d statements (%.0f/s), %d synthetic tables created",
		workers, elapsed.Round(time.Millisecond), len(samples), float64(len(samples))/elapsed.Seconds(), created.Load())
	for i, u := range unexpected {
		if i == 10 {
			t.Errorf("... and %d more", len(unexpected)-10)
			break
		}
		t.Error(u)
	}

	// The ledger holds one committed entry per synthesis a client saw
	// succeed (plus the fixture's), and what it says is spent is their sum.
	ledger := queryStrings(t, root, "SHOW PRIVACY LEDGER FOR raw.people")
	var committed int64
	var rho float64
	for _, r := range ledger {
		switch r[6] {
		case "committed", "failed":
			v, err := strconv.ParseFloat(r[5], 64)
			if err != nil {
				t.Fatal(err)
			}
			rho += v
			if r[6] == "committed" && strings.HasPrefix(r[3], "CREATE SYNTHETIC") {
				committed++
			}
		case "reserved":
			t.Errorf("entry left reserved: %v", r)
		}
	}
	if want := created.Load() + 1; committed != want {
		t.Errorf("ledger has %d committed syntheses, clients saw %d succeed", committed, want)
	}
	var spent float64
	for _, r := range queryStrings(t, root, "SHOW PRIVACY BUDGET") {
		if strings.Contains(r[0], "people") {
			spent, _ = strconv.ParseFloat(r[4], 64)
		}
	}
	if d := spent - rho; d > 1e-9*max(1, spent) || d < -1e-9*max(1, spent) {
		t.Errorf("budget says ρ spent %v, the ledger's entries sum to %v", spent, rho)
	}
	if got := queryStrings(t, root, "SELECT 1"); got[0][0] != "1" {
		t.Fatal("server not serving after the load")
	}
}
