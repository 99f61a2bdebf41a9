package main

import (
	"bytes"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
		fmt.Fprintf(os.Stderr, "building dpsql: no go command on PATH: %v\n", err)
		os.Exit(1)
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

// readyLine matches the ready line in the text or the JSON log format.
var readyLine = regexp.MustCompile(`msg="dpsql ready" addr=(\S+)|"msg":"dpsql ready","addr":"([^"]+)"`)

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
			s.addr = m[1] + m[2]
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

// cli runs the mariadb CLI against s in batch mode and returns its output.
func (s *server) cli(t testing.TB, user, password, script string) (string, error) {
	t.Helper()
	host, port, _ := strings.Cut(s.addr, ":")
	cmd := exec.Command(mariadbCLI(t), "-h"+host, "-P"+port, "-u"+user, "-p"+password, "--batch", "--skip-column-names", "-e", script)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
