package main

import (
	"bufio"
	"bytes"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// This file holds the harness of the integration tests: they build the
// real dpsql binary once, start it on a free port in a temporary data
// directory, and drive it with go-sql-driver/mysql and the mariadb CLI.

const rootPassword = "secret"

// binPath is the dpsql binary built by TestMain.
var binPath string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "dpsql-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binPath = filepath.Join(dir, "dpsql")
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	build := exec.Command(gobin, "build", "-o", binPath, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building dpsql: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// server is a running dpsql serve process.
type server struct {
	t       testing.TB
	dir     string
	addr    string
	cmd     *exec.Cmd
	stderr  *syncBuffer
	exited  chan struct{}
	waitErr error
}

// syncBuffer is a bytes.Buffer safe for one writer and many readers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var readyLine = regexp.MustCompile(`msg="dpsql ready" addr=(\S+)`)

// startServer starts dpsql serve on dir on a free port and waits until it
// accepts connections. The server is killed at the end of the test.
func startServer(t testing.TB, dir string, extra ...string) *server {
	t.Helper()
	s, err := launch(t, dir, extra...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// launch starts dpsql serve with root's password and waits for its ready
// line or its exit.
func launch(t testing.TB, dir string, extra ...string) (*server, error) {
	return launchArgs(t, dir, append([]string{"--root-password", rootPassword}, extra...)...)
}

// launchArgs starts dpsql serve on dir and a free port with extra flags.
func launchArgs(t testing.TB, dir string, extra ...string) (*server, error) {
	args := append([]string{"serve", "--data-dir", dir, "--port", "0"}, extra...)
	s := &server{t: t, dir: dir, cmd: exec.Command(binPath, args...), stderr: &syncBuffer{}, exited: make(chan struct{})}
	s.cmd.Stderr = s.stderr
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { s.waitErr = s.cmd.Wait(); close(s.exited) }()
	t.Cleanup(func() { s.kill() })
	deadline := time.After(2 * time.Minute)
	for {
		if m := readyLine.FindStringSubmatch(s.stderr.String()); m != nil {
			s.addr = m[1]
			return s, nil
		}
		select {
		case <-s.exited:
			return s, fmt.Errorf("dpsql serve exited (%v) before it was ready:\n%s", s.waitErr, s.stderr)
		case <-deadline:
			return s, fmt.Errorf("dpsql serve not ready after 2 minutes:\n%s", s.stderr)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// stop sends sig and waits for the process to exit.
func (s *server) stop(sig syscall.Signal) {
	s.t.Helper()
	if err := s.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		s.t.Fatalf("signal: %v", err)
	}
	select {
	case <-s.exited:
	case <-time.After(time.Minute):
		s.t.Fatalf("dpsql did not exit after %v:\n%s", sig, s.stderr)
	}
	if sig == syscall.SIGTERM && s.waitErr != nil {
		s.t.Fatalf("dpsql exited with %v after SIGTERM:\n%s", s.waitErr, s.stderr)
	}
}

func (s *server) kill() {
	select {
	case <-s.exited:
	default:
		s.cmd.Process.Kill()
		<-s.exited
	}
}

// open returns a connection pool for user; params are extra DSN settings.
func (s *server) open(user, password string, params ...func(*mysql.Config)) *sql.DB {
	s.t.Helper()
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.Addr = user, password, "tcp", s.addr
	for _, p := range params {
		p(cfg)
	}
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		s.t.Fatal(err)
	}
	db := sql.OpenDB(c)
	s.t.Cleanup(func() { db.Close() })
	return db
}

// root returns a pool for root.
func (s *server) root() *sql.DB { return s.open("root", rootPassword) }

func multiStatements(c *mysql.Config) { c.MultiStatements = true }

// mustExec runs statements and fails the test on the first error.
func mustExec(t testing.TB, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// queryStrings runs q and returns every row as strings (NULL as "NULL").
func queryStrings(t testing.TB, db *sql.DB, q string, args ...any) [][]string {
	t.Helper()
	out, err := tryQueryStrings(db, q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return out
}

func tryQueryStrings(db *sql.DB, q string, args ...any) ([][]string, error) {
	rows, err := db.Query(q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return scanStrings(rows)
}

func scanStrings(rows *sql.Rows) ([][]string, error) {
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out [][]string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		row := make([]string, len(cols))
		for i, v := range vals {
			row[i] = "NULL"
			if v.Valid {
				row[i] = v.String
			}
		}
		out = append(out, row)
	}
	return out, rows.Err()
}

// mysqlCode is the MySQL error number of err, or 0.
func mysqlCode(err error) uint16 {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

// runDpsql runs the dpsql binary to completion.
func runDpsql(t testing.TB, args ...string) (stdout, stderr string, exitCode int) {
	t.Helper()
	cmd := exec.Command(binPath, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return o.String(), e.String(), ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return o.String(), e.String(), 0
	case <-time.After(3 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("dpsql %v did not finish:\n%s", args, e.String())
		return
	}
}

// mariadbCLI returns the path of the mariadb (or mysql) client, skipping
// the test if neither is installed.
func mariadbCLI(t testing.TB) string {
	for _, name := range []string{"mariadb", "mysql"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("mariadb/mysql CLI not installed (apt-get install mariadb-client); .ci/run installs it")
	return ""
}

// cli runs the mariadb CLI against s in batch mode and returns its output.
func (s *server) cli(t testing.TB, user, password, script string) (string, error) {
	t.Helper()
	host, port, _ := strings.Cut(s.addr, ":")
	cmd := exec.Command(mariadbCLI(t), "-h"+host, "-P"+port, "-u"+user, "-p"+password, "--batch", "--skip-column-names", "-e", script)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// lines splits CLI output into trimmed lines.
func lines(s string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// sharedData returns the path of a file in ../shared/data relative to the
// repository root, skipping the test if it is absent.
func sharedData(t testing.TB, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "..", "shared", "data", name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Skipf("%s not present (needs ../shared/data next to the repository)", p)
	}
	return p
}
