// Command fedbench measures a synthesis from a FEDERATED PostgreSQL table
// against importing the same rows into dpsql and synthesizing locally, end
// to end through a real dpsql server (a child process, so that its peak
// memory is its own):
//
//	. .ci/databases.sh && dpsql_db_start
//	go build -o /tmp/dpsql ./cmd/dpsql
//	go run ./internal/fedbench -dpsql /tmp/dpsql -postgres "$DPSQL_TEST_POSTGRES" -rows 1000000
//
// For each way it reports the wall time of the data phase (CREATE TABLE …
// ENGINE = FEDERATED, or dpsql import), of CREATE SYNTHETIC TABLE … USING
// aim WITH EPSILON = 1 WORKLOAD ALL 3-WAY, the remote statistics the
// ledger note gives, the server's peak resident memory (VmHWM) and its
// peak anonymous memory (RssAnon, sampled: the heap, stacks and runtime,
// without the binary's text, which the kernel may map with 2 MB pages as
// it goes), and the workload error of the synthetic table against the generated rows (mean
// and max over the 364 3-way marginals of ‖p − p̂‖₁).
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"

	"github.com/dpsql/dpsql/catalog/domain"
	"github.com/dpsql/dpsql/federated"
	"github.com/dpsql/dpsql/internal/adultgen"
	"github.com/dpsql/dpsql/synth/pgm"
)

type config struct {
	dpsql, postgres, table, ways string
	rows                         int
	seed                         uint64
	epsilon                      float64
	keep                         bool
	synthRows                    int
	profileDir                   string
}

func main() {
	var c config
	flag.StringVar(&c.dpsql, "dpsql", "", "dpsql binary (go build -o … ./cmd/dpsql)")
	flag.StringVar(&c.postgres, "postgres", os.Getenv("DPSQL_TEST_POSTGRES"), "PostgreSQL server, postgresql://user:pw@host:port/db")
	flag.StringVar(&c.table, "table", "", "PostgreSQL table (default adult_<rows>); generated if missing")
	flag.StringVar(&c.ways, "ways", "federated,import", "which runs: federated, import")
	flag.IntVar(&c.rows, "rows", 1000000, "rows")
	flag.Uint64Var(&c.seed, "seed", 1, "generator seed")
	flag.Float64Var(&c.epsilon, "epsilon", 1, "ε of the synthesis")
	flag.BoolVar(&c.keep, "keep", true, "keep the generated PostgreSQL table")
	flag.IntVar(&c.synthRows, "synth-rows", 100000, "ROWS of the synthetic table (fixed, so that peak memory measures the source side)")
	flag.StringVar(&c.profileDir, "heap-profile", "", "directory: save the server's heap profile (pprof) taken at its highest RSS during each synthesis, and its log")
	flag.Parse()
	if c.dpsql == "" || c.postgres == "" {
		fmt.Fprintln(os.Stderr, "fedbench: need -dpsql and -postgres (or $DPSQL_TEST_POSTGRES)")
		os.Exit(2)
	}
	if c.table == "" {
		c.table = fmt.Sprintf("adult_%d", c.rows)
	}
	if c.profileDir != "" {
		if err := os.MkdirAll(c.profileDir, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "fedbench:", err)
			os.Exit(1)
		}
	}
	if err := run(context.Background(), c); err != nil {
		fmt.Fprintln(os.Stderr, "fedbench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, c config) error {
	srv, err := federated.ParseServer(c.postgres)
	if err != nil {
		return err
	}
	if err := ensureTable(ctx, srv, c); err != nil {
		return err
	}
	truth, err := trueData(ctx, c)
	if err != nil {
		return err
	}
	for _, way := range strings.Split(c.ways, ",") {
		var r *result
		switch way {
		case "federated":
			r, err = federatedRun(ctx, c, srv)
		case "import":
			r, err = importRun(ctx, c)
		default:
			return fmt.Errorf("unknown way %q", way)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", way, err)
		}
		mean, maxe, err := workloadError(ctx, truth, r.syn)
		if err != nil {
			return err
		}
		fmt.Printf("%-9s rows=%d data=%.1fs synth=%.1fs total=%.1fs peak_rss=%.0fMB peak_anon=%.0fMB err_mean=%.4f err_max=%.4f %s\n  note: %s\n",
			way, c.rows, r.data.Seconds(), r.synth.Seconds(), (r.data + r.synth).Seconds(), r.peakMB, r.anonMB, mean, maxe, r.model, r.note)
	}
	return nil
}

// ensureTable generates the PostgreSQL table unless it exists with the
// right number of rows.
func ensureTable(ctx context.Context, srv *federated.Conn, c config) error {
	conn, err := pgx.Connect(ctx, pgURL(srv))
	if err != nil {
		return fmt.Errorf("connecting to PostgreSQL: %w", federated.Redact(err))
	}
	defer conn.Close(ctx)
	var n int64
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{c.table}.Sanitize()).Scan(&n); err == nil && n == int64(c.rows) {
		return nil
	}
	_, _ = conn.Exec(ctx, "DROP TABLE IF EXISTS "+pgx.Identifier{c.table}.Sanitize())
	start := time.Now()
	if err := adultgen.CopyToPostgres(ctx, conn, c.table, c.rows, c.seed); err != nil {
		return err
	}
	fmt.Printf("generated %d rows into PostgreSQL %s in %.1fs\n", c.rows, c.table, time.Since(start).Seconds())
	return nil
}

func pgURL(c *federated.Conn) string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword(c.User, c.Password),
		Host: net.JoinHostPort(c.Host, strconv.Itoa(c.Port)), Path: "/" + c.Database, RawQuery: c.Params.Encode()}
	return u.String()
}

// trueData regenerates the rows and encodes them over the public domain.
func trueData(ctx context.Context, c config) (*pgm.Dataset, error) {
	dom := adultgen.Domain()
	g := adultgen.New(c.seed)
	row := make([]any, len(adultgen.Attrs))
	cols := make([][]uint16, len(dom.Columns))
	for i := range cols {
		cols[i] = make([]uint16, c.rows)
	}
	for r := range c.rows {
		g.Next(row)
		for i := range cols {
			code, _ := dom.Columns[i].Encode(row[i])
			cols[i][r] = uint16(code)
		}
	}
	return dataset(dom, cols)
}

func dataset(dom domain.Table, cols [][]uint16) (*pgm.Dataset, error) {
	pd, err := pgm.NewDomain(dom.Names(), dom.Sizes())
	if err != nil {
		return nil, err
	}
	return pgm.NewDataset(pd, cols)
}

type result struct {
	data, synth time.Duration
	peakMB      float64
	anonMB      float64 // peak RssAnon, sampled
	note        string
	model       string // "rounds=… model_mb=…" from the server's log
	syn         *pgm.Dataset
	way         string
}

// server is a dpsql child process on a fresh data directory.
type server struct {
	cmd       *exec.Cmd
	dir       string
	addr      string
	debugAddr string // metrics and pprof listener, when profiling
	pw        string
	db        *sql.DB

	anonStop chan struct{} // closed (once, by stopAnon) to end the RssAnon sampler
	anonDone chan struct{}
	anonOnce sync.Once
	anonMB   float64 // peak RssAnon seen by the sampler; read after anonStop
}

// freePort returns a TCP port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func startServer(ctx context.Context, bin string, profile bool) (*server, error) {
	dir, err := os.MkdirTemp("", "fedbench-")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s := &server{dir: dir, addr: fmt.Sprintf("127.0.0.1:%d", port), pw: "bench-pw"}
	pwFile := filepath.Join(dir, "pw")
	if err := os.WriteFile(pwFile, []byte(s.pw+"\n"), 0o600); err != nil {
		return nil, err
	}
	args := []string{"serve", "--data-dir", filepath.Join(dir, "data"), "--port", strconv.Itoa(port),
		"--root-password-file", pwFile, "--log-level", "info"}
	if profile {
		dport, err := freePort()
		if err != nil {
			return nil, err
		}
		s.debugAddr = fmt.Sprintf("127.0.0.1:%d", dport)
		args = append(args, "--metrics-addr", s.debugAddr, "--pprof")
	}
	s.cmd = exec.CommandContext(ctx, bin, args...)
	log, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		return nil, err
	}
	s.cmd.Stdout, s.cmd.Stderr = log, log
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	s.anonStop, s.anonDone = make(chan struct{}), make(chan struct{})
	go s.sampleAnon()
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.Addr = "root", s.pw, "tcp", s.addr
	cfg.MultiStatements = false
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	s.db = sql.OpenDB(connector)
	s.db.SetMaxOpenConns(1)
	for i := 0; ; i++ {
		if err := s.db.PingContext(ctx); err == nil {
			break
		} else if i > 100 {
			s.stop()
			return nil, fmt.Errorf("server did not start: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return s, nil
}

func (s *server) exec(ctx context.Context, stmts ...string) error {
	for _, q := range stmts {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", firstLine(q), err)
		}
	}
	return nil
}

func firstLine(q string) string {
	if len(q) > 80 {
		q = q[:80] + "…"
	}
	return q
}

// peakMB is the server's peak resident set size.
func (s *server) peakMB() float64 { return s.status("VmHWM:") }

// sampleAnon keeps the highest RssAnon of the server, read every 20 ms,
// until anonStop is closed. The kernel keeps no high-water mark of it.
func (s *server) sampleAnon() {
	defer close(s.anonDone)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if v := s.status("RssAnon:"); v > s.anonMB {
			s.anonMB = v
		}
		select {
		case <-s.anonStop:
			return
		case <-tick.C:
		}
	}
}

// peakAnonMB stops the sampler and returns the peak it saw.
func (s *server) peakAnonMB() float64 {
	s.stopAnon()
	return s.anonMB
}

// stopAnon ends the RssAnon sampler and waits for it.
func (s *server) stopAnon() {
	s.anonOnce.Do(func() { close(s.anonStop) })
	<-s.anonDone
}

// status reads one memory line of the server's /proc status, in MB.
func (s *server) status(key string) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return math.NaN()
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == key {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return math.NaN()
}

// watchHeap saves the server's heap profile to path each time its RSS
// passes the highest seen by 8 MB or more, until stop is closed, so that
// the file ends as the profile nearest the peak. It returns when stopped.
func (s *server) watchHeap(path string, stop <-chan struct{}) {
	best := 0.0
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		rss := s.status("VmRSS:")
		if !(rss >= best+8) {
			continue
		}
		best = rss
		resp, err := http.Get("http://" + s.debugAddr + "/debug/pprof/heap")
		if err != nil {
			continue
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err == nil && resp.StatusCode == http.StatusOK {
			_ = os.WriteFile(path, b, 0o644)
			fmt.Printf("  %s heap profile at RSS %.0f MB: %s\n", time.Now().UTC().Format("15:04:05.0"), rss, path)
		}
	}
}

// modelLine is the rounds and model size the server logged for the
// synthesis.
func (s *server) modelLine() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.Contains(line, "synthetic table created") {
			continue
		}
		var out []string
		for _, f := range strings.Fields(line) {
			if strings.HasPrefix(f, "rounds=") || strings.HasPrefix(f, "model_mb=") {
				out = append(out, f)
			}
		}
		return strings.Join(out, " ")
	}
	return ""
}

func (s *server) stop() {
	s.stopAnon()
	if s.db != nil {
		s.db.Close()
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	os.RemoveAll(s.dir)
}

// synthesize runs the synthesis and reads back the synthetic rows and
// the ledger note.
func (s *server) synthesize(ctx context.Context, c config, r *result) error {
	if err := s.exec(ctx, "SET PRIVACY BUDGET FOR census.big WITH EPSILON = 10, DELTA = 1e-9"); err != nil {
		return err
	}
	// The watcher stops when the synthesis returns: reading its rows back
	// (below) is fedbench's work, not the synthesis's.
	stopWatch := func() {}
	if c.profileDir != "" {
		stop := make(chan struct{})
		done := make(chan struct{})
		path := filepath.Join(c.profileDir, fmt.Sprintf("%s-%d-heap.pb.gz", r.way, c.rows))
		go func() { s.watchHeap(path, stop); close(done) }()
		var once sync.Once
		stopWatch = func() { once.Do(func() { close(stop); <-done }) }
		defer stopWatch()
	}
	start := time.Now()
	q := fmt.Sprintf("CREATE SYNTHETIC TABLE census.syn FROM census.big USING aim WITH EPSILON = %g, ROWS = %d WORKLOAD ALL 3-WAY", c.epsilon, c.synthRows)
	if err := s.exec(ctx, q); err != nil {
		return err
	}
	r.synth = time.Since(start)
	stopWatch()
	if c.profileDir != "" {
		// The log's per-round lines date the profiles' RSS highs.
		if b, err := os.ReadFile(filepath.Join(s.dir, "server.log")); err == nil {
			_ = os.WriteFile(filepath.Join(c.profileDir, fmt.Sprintf("%s-%d-server.log", r.way, c.rows)), b, 0o644)
		}
	}
	r.peakMB = s.peakMB()
	r.anonMB = s.peakAnonMB()
	r.model = s.modelLine()
	rows, err := s.db.QueryContext(ctx, "SHOW PRIVACY LEDGER FOR census.big")
	if err != nil {
		return err
	}
	cols, _ := rows.Columns()
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		for i, col := range cols {
			if col == "note" && vals[i].Valid && strings.Contains(vals[i].String, "census.syn") {
				r.note = vals[i].String
			}
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	r.syn, err = s.readSynthetic(ctx)
	return err
}

// readSynthetic encodes the synthetic table over the public domain.
func (s *server) readSynthetic(ctx context.Context) (*pgm.Dataset, error) {
	dom := adultgen.Domain()
	rows, err := s.db.QueryContext(ctx, "SELECT "+strings.Join(adultgen.Names(), ", ")+" FROM census.syn")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols := make([][]uint16, len(dom.Columns))
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		for i := range cols {
			v := vals[i]
			if b, ok := v.([]byte); ok {
				s := string(b)
				if dom.Columns[i].Type() == domain.String {
					v = s
				} else if n, err := strconv.ParseInt(s, 10, 64); err == nil {
					v = n
				} else {
					v = s
				}
			}
			code, _ := dom.Columns[i].Encode(v)
			cols[i] = append(cols[i], uint16(max(code, 0)))
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return dataset(dom, cols)
}

func federatedRun(ctx context.Context, c config, srv *federated.Conn) (*result, error) {
	s, err := startServer(ctx, c.dpsql, c.profileDir != "")
	if err != nil {
		return nil, err
	}
	defer s.stop()
	conn := *srv
	conn.Schema, conn.Table = "public", c.table
	r := &result{way: "federated"}
	start := time.Now()
	stmts := append([]string{"CREATE DATABASE census"},
		adultgen.DDL("census.big", " ENGINE = FEDERATED CONNECTION = '"+strings.ReplaceAll(conn.String(), "'", "''")+"'")...)
	if err := s.exec(ctx, stmts...); err != nil {
		return nil, err
	}
	r.data = time.Since(start)
	return r, s.synthesize(ctx, c, r)
}

func importRun(ctx context.Context, c config) (*result, error) {
	dir, err := os.MkdirTemp("", "fedbench-csv-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	csvPath := filepath.Join(dir, "adult.csv")
	f, err := os.Create(csvPath)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if err := adultgen.WriteCSV(ctx, f, c.rows, c.seed); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	fmt.Printf("wrote the CSV export in %.1fs (not counted)\n", time.Since(start).Seconds())

	s, err := startServer(ctx, c.dpsql, c.profileDir != "")
	if err != nil {
		return nil, err
	}
	defer s.stop()
	r := &result{way: "import"}
	start = time.Now()
	if err := s.exec(ctx, append([]string{"CREATE DATABASE census"}, adultgen.DDL("census.big", "")...)...); err != nil {
		return nil, err
	}
	imp := exec.CommandContext(ctx, c.dpsql, "import", "--addr", s.addr, "--table", "census.big", "--csv", csvPath)
	imp.Env = append(os.Environ(), "DPSQL_PASSWORD="+s.pw)
	if out, err := imp.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("import: %v: %s", err, out)
	}
	r.data = time.Since(start)
	return r, s.synthesize(ctx, c, r)
}

// workloadError is the mean and max over all 3-way marginals of the L1
// distance between the normalised marginals of truth and syn.
func workloadError(ctx context.Context, truth, syn *pgm.Dataset) (mean, maxe float64, err error) {
	d := truth.Domain().Len()
	var sets [][]int
	for a := 0; a < d; a++ {
		for b := a + 1; b < d; b++ {
			for c := b + 1; c < d; c++ {
				sets = append(sets, []int{a, b, c})
			}
		}
	}
	nx, ny := float64(truth.Rows()), float64(syn.Rows())
	if os.Getenv("FEDBENCH_DEBUG") != "" {
		for a := 0; a < d; a++ {
			x1 := truth.MarginalTo(nil, []int{a})
			y1 := syn.MarginalTo(nil, []int{a})
			e := 0.0
			for i := range x1 {
				e += math.Abs(x1[i]/nx - y1[i]/ny)
			}
			fmt.Printf("  1-way %s: %.4f\n", truth.Domain().Name(a), e)
		}
	}
	// A few marginals at a time into reused buffers: the 364 of the
	// adult-like domain hold 21 million cells, twice.
	const chunk = 8
	var x, y [][]float64
	for lo := 0; lo < len(sets); lo += chunk {
		part := sets[lo:min(lo+chunk, len(sets))]
		var err error
		if x, err = truth.MarginalsTo(ctx, x, part); err != nil {
			return 0, 0, err
		}
		if y, err = syn.MarginalsTo(ctx, y, part); err != nil {
			return 0, 0, err
		}
		for k := range part {
			e := 0.0
			for i := range x[k] {
				e += math.Abs(x[k][i]/nx - y[k][i]/ny)
			}
			mean += e
			maxe = max(maxe, e)
		}
	}
	return mean / float64(len(sets)), maxe, nil
}
