package main

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dpsql/dpsql/budget"
	"github.com/go-sql-driver/mysql"
)

// Integration tests: a client that disconnects while its statement runs
// cancels the statement, as KILL QUERY would.

// stopBound bounds how long a cancelled statement may take to leave the
// process list. It is generous: it turns a statement left running into a
// failure, it does not measure speed.
const stopBound = 2 * time.Minute

// socketClient is a single connection whose socket the test can close
// under go-sql-driver, as a client process that dies would.
type socketClient struct {
	conn *sql.Conn
	mu   sync.Mutex
	nc   net.Conn
}

// dialSocketClient opens a connection of root to s and keeps its socket.
func dialSocketClient(t *testing.T, s *server, params ...func(*mysql.Config)) *socketClient {
	t.Helper()
	sc := &socketClient{}
	capture := func(c *mysql.Config) {
		c.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
			var d net.Dialer
			nc, err := d.DialContext(ctx, network, addr)
			if err == nil {
				sc.mu.Lock()
				sc.nc = nc
				sc.mu.Unlock()
			}
			return nc, err
		}
	}
	db := s.open("root", rootPassword, append(params, capture)...)
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.PingContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	sc.conn = conn
	return sc
}

// start runs query (with args) on the connection in the background; the
// returned channel receives its error.
func (sc *socketClient) start(query string, args ...any) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := sc.conn.ExecContext(context.Background(), query, args...)
		done <- err
	}()
	return done
}

// closeSocket closes the connection's socket without a COM_QUIT.
func (sc *socketClient) closeSocket(t *testing.T) {
	t.Helper()
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if err := sc.nc.Close(); err != nil {
		t.Fatal(err)
	}
}

// processState returns the State column of the process whose Info starts
// with prefix (a statement of a script shows with the blanks before it).
func processState(t *testing.T, root *sql.DB, prefix string) (state string, running bool) {
	t.Helper()
	for _, r := range queryStrings(t, root, "SHOW PROCESSLIST") {
		if strings.HasPrefix(strings.TrimSpace(r[7]), prefix) {
			return r[6], true
		}
	}
	return "", false
}

// waitRunning waits until the statement starting with prefix runs and its
// state contains want, failing if done reports that it ended first.
func waitRunning(t *testing.T, root *sql.DB, prefix, want string, done <-chan error) {
	t.Helper()
	deadline := time.Now().Add(stopBound)
	for {
		if state, ok := processState(t, root, prefix); ok && strings.Contains(state, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%q never ran with a state containing %q", prefix, want)
		}
		select {
		case err := <-done:
			t.Fatalf("%q ended before its client left: %v", prefix, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitStopped waits until no statement starting with prefix runs.
func waitStopped(t *testing.T, root *sql.DB, prefix string) {
	t.Helper()
	deadline := time.Now().Add(stopBound)
	for {
		if _, ok := processState(t, root, prefix); !ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%q still running %v after its client left", prefix, stopBound)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDisconnectCancelsSynthesis closes the client of a running CREATE
// SYNTHETIC TABLE, once by closing a go-sql-driver socket and once by
// killing the mariadb CLI with SIGKILL: the statement stops, no table
// appears, and the ledger entry is failed with the charge kept, as after
// KILL QUERY.
func TestDisconnectCancelsSynthesis(t *testing.T) {
	s := startServer(t, t.TempDir(), "--demo")
	root := s.root()
	mustExec(t, root,
		"SET PRIVACY BUDGET FOR demo.census WITH EPSILON = 10, DELTA = 0.000001",
		"ALTER TABLE demo.census SET DOMAIN capital_gain BETWEEN 0 AND 100000 BINS 10",
		"CREATE DATABASE synthetic",
	)
	rho1, err := budget.RhoFromEpsilonDelta(1, 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	// AIM on 30 000 rows whose final estimation (after the rounds the
	// test waits for) takes far longer than stopBound: the statement
	// cannot end on its own while the test watches it.
	synth := func(target string) string {
		return "CREATE SYNTHETIC TABLE synthetic." + target + " FROM demo.census USING aim WITH EPSILON = 1, FINAL_ITERS = 1000000, FINAL_TOL = 0 WORKLOAD ALL 3-WAY"
	}

	// checkCancelled asserts the aftermath of the synthesis of target
	// whose client left once it was in the mechanism.
	checkCancelled := func(t *testing.T, target string, spent0 float64) {
		t.Helper()
		waitStopped(t, root, synth(target))
		if got := queryStrings(t, root, "SHOW TABLES FROM synthetic LIKE '"+target+"'"); len(got) != 0 {
			t.Errorf("table %s exists after its client left: %v", target, got)
		}
		status, note := lastLedgerEntry(t, root, "demo.census")
		if status != "failed" || !strings.Contains(note, "cancel") {
			t.Errorf("ledger entry %q %q, want failed with a note about the cancellation", status, note)
		}
		if d := budgetFloat(t, budgetRow(t, root, "demo.census"), colRhoSpent) - spent0; d < rho1 {
			t.Errorf("ρ spent went up by %g, want the whole charge %g (the data was read)", d, rho1)
		}
	}

	t.Run("socket closed", func(t *testing.T) {
		spent0 := budgetFloat(t, budgetRow(t, root, "demo.census"), colRhoSpent)
		c := dialSocketClient(t, s)
		done := c.start(synth("bysocket"))
		waitRunning(t, root, synth("bysocket"), "round", done)
		c.closeSocket(t)
		if err := <-done; err == nil {
			t.Error("the client's statement succeeded after its socket was closed")
		}
		checkCancelled(t, "bysocket", spent0)
		if log := s.stderr.String(); !strings.Contains(log, "client disconnected, cancelling its statement") {
			t.Errorf("no disconnect in the server log:\n%s", log)
		}
	})

	t.Run("CLI killed", func(t *testing.T) {
		spent0 := budgetFloat(t, budgetRow(t, root, "demo.census"), colRhoSpent)
		host, port, _ := strings.Cut(s.addr, ":")
		cmd := exec.Command(mariadbCLI(t), "-h"+host, "-P"+port, "-uroot", "-p"+rootPassword, "--batch", "-e", synth("bycli"))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		t.Cleanup(func() { cmd.Process.Kill(); <-done })
		waitRunning(t, root, synth("bycli"), "round", done)
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		checkCancelled(t, "bycli", spent0)
	})

	// The server still synthesizes for a client that stays.
	mustExec(t, root, "CREATE SYNTHETIC TABLE synthetic.stays FROM demo.census USING aim WITH EPSILON = 0.5, "+fastAIM+" WORKLOAD ALL 1-WAY")
	if status, _ := lastLedgerEntry(t, root, "demo.census"); status != "committed" {
		t.Errorf("ledger entry of a synthesis whose client stayed: %q, want committed", status)
	}
}

// TestDisconnectCancelsCommands closes the socket under each command that
// runs statements (COM_QUERY, a statement of a multi-statement script,
// COM_STMT_EXECUTE) while it runs a statement answered with an OK packet,
// which go-mysql-server itself never checks: each stops long before its
// SLEEP would end, and the connection of another client is untouched.
func TestDisconnectCancelsCommands(t *testing.T) {
	s := startServer(t, t.TempDir())
	root := s.root()
	const sleep = 3600 // seconds: far beyond stopBound
	tests := []struct {
		name   string
		params []func(*mysql.Config)
		query  string
		args   []any
		prefix string // of the running statement's Info
	}{
		{name: "COM_QUERY", query: fmt.Sprintf("SET @dc_query = SLEEP(%d)", sleep), prefix: "SET @dc_query"},
		{
			name:   "multi-statement",
			params: []func(*mysql.Config){multiStatements},
			query:  fmt.Sprintf("SELECT 1; SET @dc_multi = SLEEP(%d)", sleep),
			prefix: "SET @dc_multi",
		},
		{name: "COM_STMT_EXECUTE", query: "SET @dc_prepared = SLEEP(?)", args: []any{sleep}, prefix: "SET @dc_prepared"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkLeaves(t, s, root, tt.query, tt.args, tt.prefix, tt.params...)
		})
	}
}

// TestDisconnectOverTLS: the socket under a TLS connection is watched too.
func TestDisconnectOverTLS(t *testing.T) {
	certFile, keyFile, pool := selfSigned(t, t.TempDir())
	s := startServer(t, t.TempDir(), "--tls-cert", certFile, "--tls-key", keyFile, "--require-tls")
	var handshakes atomic.Int32
	secure := withTLS(pool, &handshakes)
	root := s.open("root", rootPassword, secure)
	checkLeaves(t, s, root, "SET @dc_tls = SLEEP(3600)", nil, "SET @dc_tls", secure)
	if handshakes.Load() == 0 {
		t.Fatal("no TLS handshake")
	}
}

// checkLeaves runs query (with args, on a connection with params) on s,
// closes its socket once it runs and checks that it stops, while a
// statement of another client runs to its end.
func checkLeaves(t *testing.T, s *server, root *sql.DB, query string, args []any, prefix string, params ...func(*mysql.Config)) {
	t.Helper()
	other := dialSocketClient(t, s, params...)
	otherDone := other.start("SET @dc_other = SLEEP(2)")

	c := dialSocketClient(t, s, params...)
	done := c.start(query, args...)
	waitRunning(t, root, prefix, "", done)
	c.closeSocket(t)
	<-done
	waitStopped(t, root, prefix)

	// The other client's statement ran to its end.
	if err := <-otherDone; err != nil {
		t.Errorf("another client's statement: %v", err)
	}
	var v sql.NullString
	if err := other.conn.QueryRowContext(context.Background(), "SELECT @dc_other").Scan(&v); err != nil {
		t.Fatal(err)
	}
	if n, err := strconv.Atoi(v.String); err != nil || n != 0 {
		t.Errorf("another client's SLEEP returned %q, want 0 (not interrupted)", v.String)
	}
}
