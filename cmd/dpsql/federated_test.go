package main

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/dpsql/dpsql/federated"
	"github.com/dpsql/dpsql/internal/fixture"
	"github.com/dpsql/dpsql/internal/testdb"
)

// FEDERATED source tables over the wire, against the real PostgreSQL and
// MariaDB servers of internal/testdb (DPSQL_TEST_POSTGRES and
// DPSQL_TEST_MYSQL; .ci/databases.sh starts both). Each driver's subtest
// skips when its server is not configured.

// remoteDB is a test database a federated table can live in.
type remoteDB struct {
	c     *federated.Conn // the server, no table
	db    *testdb.DB
	table string // this test's table
}

// newRemoteDB connects to the test server of driver, or skips.
func newRemoteDB(t *testing.T, driver string) *remoteDB {
	t.Helper()
	c := testdb.Get(t, driver)
	db := testdb.Open(t, c)
	t.Cleanup(db.Close)
	return &remoteDB{c: c, db: db, table: testdb.Name(t, c, "dpsql_fed")}
}

// connection is the CONNECTION string of remote table name, through
// host:port if given.
func (r *remoteDB) connection(name, hostPort string) string {
	c := testdb.Table(r.c, name)
	if hostPort != "" {
		host, port, _ := net.SplitHostPort(hostPort)
		c.Host = host
		c.Port, _ = strconv.Atoi(port)
	}
	return c.String()
}

// exec runs statements in the remote database.
func (r *remoteDB) exec(t *testing.T, stmts ...string) { t.Helper(); r.db.MustExec(t, stmts...) }

// activeQueries counts the remote queries running whose text contains
// like (a LIKE pattern), other than the counting one.
func (r *remoteDB) activeQueries(t *testing.T, like string) int {
	t.Helper()
	q := "SELECT COUNT(*) FROM information_schema.processlist WHERE info LIKE '" + like + "' AND command = 'Query' AND id <> CONNECTION_ID()"
	if r.c.Driver == federated.Postgres {
		q = "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query ILIKE '" + like + "' AND pid <> pg_backend_pid()"
	}
	n, err := r.db.QueryInt(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	return int(n)
}

// proxy forwards TCP connections to target until closed: a source that can
// be made unreachable.
type proxy struct {
	ln     net.Listener
	mu     sync.Mutex
	conns  []net.Conn
	closed bool
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			d, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, d)
			p.mu.Unlock()
			go func() { _, _ = copyConn(d, c) }()
			go func() { _, _ = copyConn(c, d) }()
		}
	}()
	t.Cleanup(p.close)
	return p
}

func copyConn(dst, src net.Conn) (int64, error) {
	defer dst.Close()
	buf := make([]byte, 32<<10)
	var n int64
	for {
		k, err := src.Read(buf)
		if k > 0 {
			if _, werr := dst.Write(buf[:k]); werr != nil {
				return n, werr
			}
			n += int64(k)
		}
		if err != nil {
			return n, err
		}
	}
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

// close stops accepting and drops every forwarded connection.
func (p *proxy) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	p.ln.Close()
	for _, c := range p.conns {
		c.Close()
	}
}

const fedRows = 600

// fedTuples are the source's rows, the same for every database.
func fedTuples() []string {
	return fixture.PeopleTuples(rand.New(rand.NewPCG(3, 5)), fedRows)
}

func TestFederatedOverTheWire(t *testing.T) {
	if testing.Short() {
		t.Skip("needs source databases and runs syntheses")
	}
	for _, driver := range testdb.Servers {
		t.Run(driver, func(t *testing.T) { testFederated(t, newRemoteDB(t, driver)) })
	}
}

func testFederated(t *testing.T, r *remoteDB) {
	// The source: a table, a view that fails when read, and the same rows
	// imported locally for comparison.
	tbl, bad := r.table, r.table+"_bad"
	strType := "VARCHAR(10)"
	r.exec(t, "CREATE TABLE "+tbl+" (sex "+strType+" NOT NULL, age INT NOT NULL, city "+strType+")",
		"INSERT INTO "+tbl+" (sex, age, city) VALUES "+strings.Join(fedTuples(), ","),
		// Valid to declare, fails when queried (a subquery returning two
		// rows where one is expected).
		"CREATE VIEW "+bad+" AS SELECT sex, age, city FROM "+tbl+" WHERE (SELECT 1 UNION SELECT 2) > 0")
	// Runs before testdb drops the table.
	t.Cleanup(func() { _ = r.db.Exec(context.Background(), "DROP VIEW IF EXISTS "+bad) })

	s := startServer(t, t.TempDir())
	root := s.root()
	columns := "(sex ENUM('F','M') NOT NULL, age INT NOT NULL CHECK (age BETWEEN 0 AND 9), city VARCHAR(10) CHECK (city IN ('a','b','c')))"
	conn := r.connection(tbl, "")
	mustExec(t, root,
		"CREATE DATABASE census", "CREATE DATABASE lab",
		"CREATE TABLE census.big "+columns+" ENGINE = FEDERATED CONNECTION = '"+conn+"'",
		"CREATE TABLE census.bad "+columns+" ENGINE = FEDERATED CONNECTION = '"+r.connection(bad, "")+"'",
		"CREATE TABLE census.loc "+columns,
		"INSERT INTO census.loc (sex, age, city) VALUES "+strings.Join(fedTuples(), ","),
		"SET PRIVACY BUDGET FOR census.big WITH EPSILON = 8000, DELTA = 1e-6",
		"SET PRIVACY BUDGET FOR census.bad WITH EPSILON = 10, DELTA = 1e-6",
		"CREATE USER analyst IDENTIFIED BY 'apw'",
		"GRANT ALL ON lab.* TO analyst",
		"GRANT SYNTHESIZE ON census.big TO analyst",
	)

	t.Run("create refused", func(t *testing.T) {
		wantMySQLError(t, root, 1434, "CREATE TABLE census.x (sex ENUM('F','M'), age INT) ENGINE = FEDERATED CONNECTION = '"+conn+"'")
		wantMySQLError(t, root, 1434, "CREATE TABLE census.x (sex ENUM('F','M'), age INT, city VARCHAR(10), zip INT) ENGINE = FEDERATED CONNECTION = '"+conn+"'")
		wantMySQLError(t, root, 1429, "CREATE TABLE census.x "+columns+" ENGINE = FEDERATED CONNECTION = '"+r.connection(tbl, "127.0.0.1:1")+"'")
		wantMySQLError(t, root, 1432, "CREATE TABLE census.x "+columns+" ENGINE = FEDERATED CONNECTION = 'ftp://h/x'")
		if rows := queryStrings(t, root, "SHOW TABLES FROM census LIKE 'x'"); len(rows) != 0 {
			t.Errorf("a refused federated table exists: %v", rows)
		}
	})

	t.Run("owner reads through, writes refused", func(t *testing.T) {
		q := "SELECT CONCAT(sex), age, IFNULL(city, '-'), COUNT(*) FROM census.%s GROUP BY 1, 2, 3 ORDER BY 1, 2, 3"
		got, want := queryStrings(t, root, fmt.Sprintf(q, "big")), queryStrings(t, root, fmt.Sprintf(q, "loc"))
		if !equalRows(got, want) {
			t.Errorf("read through:\n got %v\nwant %v", got, want)
		}
		wantMySQLError(t, root, 1036, "INSERT INTO census.big VALUES ('F', 1, 'a')")
		wantMySQLError(t, root, 1036, "TRUNCATE TABLE census.big")
	})

	t.Run("masked", func(t *testing.T) {
		create := queryStrings(t, root, "SHOW CREATE TABLE census.big")[0][1]
		if !strings.Contains(create, "ENGINE=FEDERATED") || !strings.Contains(create, "CONNECTION='") {
			t.Errorf("SHOW CREATE TABLE: %s", create)
		}
		engine := queryStrings(t, root, "SELECT ENGINE FROM information_schema.tables WHERE TABLE_SCHEMA = 'census' AND TABLE_NAME = 'big'")
		if len(engine) != 1 || engine[0][0] != "FEDERATED" {
			t.Errorf("information_schema.tables ENGINE: %v", engine)
		}
		dump, _, err := s.mysqldump(t, "root", rootPassword, "census")
		if err != nil {
			t.Fatalf("mysqldump: %v", err)
		}
		if strings.Contains(dump, "INSERT INTO `big`") || !strings.Contains(dump, "ENGINE=FEDERATED") {
			t.Errorf("mysqldump dumped the federated rows or lost the engine")
		}
		pw := r.c.Password
		if pw == "" {
			t.Log("the source has no password: masking checked on the text only")
			return
		}
		for what, text := range map[string]string{"SHOW CREATE TABLE": create, "mysqldump": dump, "server log": s.stderr.String()} {
			if strings.Contains(text, ":"+pw+"@") {
				t.Errorf("%s shows the source's password", what)
			}
		}
		if !strings.Contains(create, ":***@") {
			t.Errorf("SHOW CREATE TABLE does not mask the password: %s", create)
		}
	})

	t.Run("analyst", func(t *testing.T) {
		an := s.open("analyst", "apw")
		if _, err := tryQueryStrings(an, "SELECT * FROM census.big"); err == nil {
			t.Error("analyst read the federated table")
		}
		for _, mech := range []string{"aim", "mst", "mwem"} {
			mustExec(t, an, "CREATE SYNTHETIC TABLE lab.s_"+mech+" FROM census.big USING "+mech+" WITH EPSILON = 1")
		}
		if rows := queryStrings(t, an, "SELECT COUNT(*) FROM lab.s_mst"); rows[0][0] == "0" {
			t.Error("empty synthetic table")
		}
	})

	t.Run("huge epsilon matches the source", func(t *testing.T) {
		mustExec(t, root, "CREATE SYNTHETIC TABLE lab.exact FROM census.big USING aim WITH EPSILON = 3000, ROUNDS = 6, PGM_ITERS = 200, FINAL_ITERS = 500"+
			" WORKLOAD (SELECT sex, age, COUNT(*) FROM census.big GROUP BY sex, age)")
		want := map[string]float64{}
		for _, row := range queryStrings(t, root, "SELECT sex, age, COUNT(*) FROM census.loc GROUP BY sex, age") {
			want[row[0]+"|"+row[1]], _ = strconv.ParseFloat(row[2], 64)
		}
		// The model answers the workload's query (expected counts, no
		// sampling of rows).
		q := "SELECT sex, age, COUNT(*) FROM lab.exact GROUP BY sex, age"
		if plan := strings.Join(flattenRows(queryStrings(t, root, "EXPLAIN "+q)), " "); !strings.Contains(plan, "model") {
			t.Fatalf("not answered by the model: %s", plan)
		}
		worst := 0.0
		for _, row := range queryStrings(t, root, q) {
			got, _ := strconv.ParseFloat(row[2], 64)
			worst = math.Max(worst, math.Abs(got-want[row[0]+"|"+row[1]]))
			delete(want, row[0]+"|"+row[1])
		}
		for k, v := range want {
			worst = math.Max(worst, v)
			_ = k
		}
		if worst > 0.02*fedRows {
			t.Errorf("model answers off by %.1f rows from the source's counts", worst)
		}
		t.Logf("model answers off by at most %.3f rows", worst)
		_, note := lastLedgerEntry(t, root, "census.big")
		t.Logf("ledger note: %s", note)
		if !strings.Contains(note, "remote queries") {
			t.Errorf("ledger note: %q", note)
		}
	})

	t.Run("failures", func(t *testing.T) {
		// The remote query fails after it was sent: charge kept, nothing
		// written.
		before := budgetFloat(t, budgetRow(t, root, "census.bad"), 4)
		_, err := tryQueryStrings(root, "CREATE SYNTHETIC TABLE lab.f FROM census.bad USING mst WITH EPSILON = 1")
		if err == nil {
			t.Fatal("synthesis from a failing source succeeded")
		}
		status, note := lastLedgerEntry(t, root, "census.bad")
		if after := budgetFloat(t, budgetRow(t, root, "census.bad"), 4); after <= before || !strings.Contains(note, "charge is kept") {
			t.Errorf("failed after reading: spent %g → %g, entry %s %q (err %v)", before, after, status, note, err)
		}
		if rows := queryStrings(t, root, "SHOW TABLES FROM lab LIKE 'f'"); len(rows) != 0 {
			t.Error("table written after a remote failure")
		}

		// Unreachable at synthesis: nothing charged.
		p := newProxy(t, net.JoinHostPort(r.c.Host, strconv.Itoa(r.c.Port)))
		mustExec(t, root, "CREATE TABLE census.via "+columns+" ENGINE = FEDERATED CONNECTION = '"+r.connection(tbl, p.addr())+"'",
			"SET PRIVACY BUDGET FOR census.via WITH EPSILON = 10, DELTA = 1e-6")
		p.close()
		before = budgetFloat(t, budgetRow(t, root, "census.via"), 4)
		wantMySQLError(t, root, 1429, "CREATE SYNTHETIC TABLE lab.u FROM census.via USING aim WITH EPSILON = 1")
		if after := budgetFloat(t, budgetRow(t, root, "census.via"), 4); after != before {
			t.Errorf("unreachable source charged: %g → %g", before, after)
		}
	})

	t.Run("kill query", func(t *testing.T) { testFederatedKill(t, r, s, root) })
	t.Run("connecting", func(t *testing.T) { testFederatedConnecting(t, r, s, root, columns) })
}

// testFederatedConnecting: while CREATE TABLE waits for a source that
// accepts connections and never answers, the process list shows the
// statement with its password masked, and KILL QUERY ends it.
func testFederatedConnecting(t *testing.T, r *remoteDB, s *server, root *sql.DB, columns string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // never answers
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := root.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var id string
	if err := conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := conn.ExecContext(ctx, "CREATE TABLE census.hang "+columns+" ENGINE = FEDERATED CONNECTION = '"+r.connection(r.table, ln.Addr().String())+"'")
		done <- err
	}()
	var info string
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(info, "FEDERATED"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("CREATE TABLE never showed in the process list")
		}
		if rows := queryStrings(t, root, "SELECT INFO FROM information_schema.processlist WHERE ID = "+id); len(rows) == 1 {
			info = rows[0][0]
		}
	}
	if strings.Contains(info, ":"+r.c.Password+"@") || !strings.Contains(info, ":***@") {
		t.Errorf("process list Info: %s", info)
	}
	for _, row := range queryStrings(t, root, "SHOW FULL PROCESSLIST") {
		if strings.Contains(strings.Join(row, " "), ":"+r.c.Password+"@") {
			t.Errorf("SHOW PROCESSLIST shows the password: %v", row)
		}
	}
	mustExec(t, root, "KILL QUERY "+id)
	if err := <-done; mysqlCode(err) != 1317 {
		t.Errorf("killed CREATE TABLE: %v", err)
	}
	if rows := queryStrings(t, root, "SHOW TABLES FROM census LIKE 'hang'"); len(rows) != 0 {
		t.Error("killed CREATE TABLE created the table")
	}
	if strings.Contains(s.stderr.String(), ":"+r.c.Password+"@") {
		t.Error("the server log shows the password")
	}
}

// marginalQuery matches a query of a synthesis on this test's table: on
// PostgreSQL the codes table's CREATE (which reads the table), on MySQL a
// GROUP BY. The table's name keeps out the queries of other tests, which
// share the servers and run at the same time in the full suite.
func (r *remoteDB) marginalQuery() string {
	if r.c.Driver == federated.Postgres {
		return "%dpsql_codes%" + r.table + "%"
	}
	return "%" + r.table + "%GROUP BY%"
}

// testFederatedKill blocks the source table with a lock held by another
// session, kills the synthesis waiting for it, and checks that the remote
// query is gone.
func testFederatedKill(t *testing.T, r *remoteDB, s *server, root *sql.DB) {
	// A query of an earlier subtest that the source still lists (one
	// cancelled when a sibling fetch failed ends when the source notices)
	// would pass for the synthesis's own below: wait for none first.
	active := func(like string) func() bool { return func() bool { return r.activeQueries(t, like) != 0 } }
	idle := func(like string) func() bool { return func() bool { return r.activeQueries(t, like) == 0 } }
	waitFor(t, time.Minute, "an earlier query still runs on the source", idle(r.marginalQuery()))
	release := lockTable(t, r, r.table)
	defer release()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := root.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var id string
	if err := conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := conn.ExecContext(ctx, "CREATE SYNTHETIC TABLE lab.k FROM census.big USING mst WITH EPSILON = 1")
		done <- err
	}()
	// Wait until the synthesis waits on the source.
	waitFor(t, time.Minute, "the synthesis never queried the source", active(r.marginalQuery()))
	// The synthesis is the only one querying the source, and it stays
	// blocked on the lock: its State must say so (read until it does, for
	// a slow machine, within the deadline).
	var state [][]string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		state = queryStrings(t, root, "SELECT STATE FROM information_schema.processlist WHERE ID = "+id)
		if len(state) == 1 && strings.Contains(state[0][0], "reading the source") || time.Now().After(deadline) {
			break
		}
	}
	if len(state) != 1 || !strings.Contains(state[0][0], "reading the source") {
		t.Errorf("State while the source is read: %v", state)
	}
	mustExec(t, root, "KILL QUERY "+id)
	if err := <-done; mysqlCode(err) != 1317 {
		t.Errorf("killed synthesis: %v", err)
	}
	waitFor(t, 30*time.Second, "the remote query still runs after KILL QUERY", idle(r.marginalQuery()))
	if rows := queryStrings(t, root, "SHOW TABLES FROM lab LIKE 'k'"); len(rows) != 0 {
		t.Error("killed synthesis wrote its table")
	}

	// An owner's read-through SELECT, killed while the source is locked.
	scan := "%" + r.table + "%"
	go func() {
		_, err := queryStringsContext(ctx, conn, "SELECT * FROM census.big")
		done <- err
	}()
	waitFor(t, time.Minute, "the SELECT never queried the source", active(scan))
	mustExec(t, root, "KILL QUERY "+id)
	if err := <-done; err == nil {
		t.Error("killed SELECT succeeded")
	}
	waitFor(t, 30*time.Second, "the remote scan still runs after KILL QUERY", idle(scan))
}

// waitFor polls cond every 50 ms until it holds, and fails the test with
// what if it does not within d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal(what)
		}
	}
}

// flattenRows joins every row's cells.
func flattenRows(rows [][]string) []string {
	var out []string
	for _, r := range rows {
		out = append(out, strings.Join(r, " "))
	}
	return out
}

// lockTable makes every read of the remote table wait, until release.
func lockTable(t *testing.T, r *remoteDB, table string) (release func()) {
	t.Helper()
	ctx := context.Background()
	if r.c.Driver == federated.Postgres {
		db := testdb.Open(t, r.c)
		db.MustExec(t, "BEGIN", "LOCK TABLE "+table+" IN ACCESS EXCLUSIVE MODE")
		return func() {
			_ = db.Exec(ctx, "ROLLBACK")
			db.Close()
		}
	}
	// LOCK TABLES holds for its connection: one connection of its own.
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.DBName = r.c.User, r.c.Password, "tcp", r.c.Database
	cfg.Addr = net.JoinHostPort(r.c.Host, strconv.Itoa(r.c.Port))
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(connector)
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExecContext(ctx, "LOCK TABLES "+table+" WRITE"); err != nil {
		t.Fatal(err)
	}
	return func() {
		_, _ = c.ExecContext(ctx, "UNLOCK TABLES")
		c.Close()
		db.Close()
	}
}
