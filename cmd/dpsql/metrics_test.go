package main

import (
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var metricsLine = regexp.MustCompile(`msg="metrics ready" addr=(\S+)`)

// scrape fetches the Prometheus text exposition at url and returns its
// samples, "name{labels}" → value.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	out := map[string]float64{}
	for _, l := range strings.Split(string(body), "\n") {
		if l == "" || l[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(l, ' ')
		v, err := strconv.ParseFloat(l[i+1:], 64)
		if err != nil {
			t.Fatalf("bad sample %q", l)
		}
		out[l[:i]] = v
	}
	return out
}

// TestMetricsEndpoint scrapes `dpsql serve --metrics-addr` after a few
// statements, an error and a synthesis.
func TestMetricsEndpoint(t *testing.T) {
	s := startServer(t, t.TempDir(), "--metrics-addr", "127.0.0.1:0")
	m := metricsLine.FindStringSubmatch(s.stderr.String())
	if m == nil {
		t.Fatalf("no metrics line in the log:\n%s", s.stderr)
	}
	url := "http://" + m[1] + "/metrics"
	root := s.root()
	setupTiny(t, root, 5)
	mustExec(t, root, "CREATE SYNTHETIC TABLE syn.c FROM raw.t USING independent WITH EPSILON = 1, PGM_ITERS = 5")
	queryStrings(t, root, "SELECT COUNT(*) FROM syn.c")
	if _, err := root.Exec("SELECT * FROM raw.nope"); err == nil {
		t.Fatal("no error from a missing table")
	}
	got := scrape(t, url)
	for name, want := range map[string]float64{
		`dpsql_statements_total{kind="create_synthetic",outcome="ok"}`:                 1,
		`dpsql_statements_total{kind="set_budget",outcome="ok"}`:                       1,
		`dpsql_statements_total{kind="insert",outcome="ok"}`:                           1,
		`dpsql_statements_total{kind="select",outcome="error"}`:                        1,
		`dpsql_errors_total{code="1146"}`:                                              1,
		`dpsql_synthesis_duration_seconds_count{mechanism="independent",outcome="ok"}`: 1,
		`dpsql_synthesis_rounds_count{mechanism="independent"}`:                        1,
		`dpsql_syntheses_running`:                                                      0,
	} {
		if got[name] != want {
			t.Errorf("%s = %v, want %v", name, got[name], want)
		}
	}
	if got[`dpsql_connections`] < 1 || got[`dpsql_connections_total`] < 1 {
		t.Errorf("connections %v, total %v", got[`dpsql_connections`], got[`dpsql_connections_total`])
	}
	spent, total := got[`dpsql_rho_spent{table="raw.t"}`], got[`dpsql_rho_budget{table="raw.t"}`]
	if !(spent > 0 && spent < total) {
		t.Errorf("rho spent %v of %v", spent, total)
	}
	if got[`go_goroutines`] == 0 {
		t.Error("no Go runtime metrics")
	}
}

// TestPprofEndpoint: --pprof adds the runtime's profiles to the metrics
// listener, they are absent without it, and --pprof alone is refused.
func TestPprofEndpoint(t *testing.T) {
	get := func(url string) int {
		t.Helper()
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	for _, tc := range []struct {
		flags []string
		want  int
	}{
		{[]string{"--metrics-addr", "127.0.0.1:0", "--pprof"}, http.StatusOK},
		{[]string{"--metrics-addr", "127.0.0.1:0"}, http.StatusNotFound},
	} {
		s := startServer(t, t.TempDir(), tc.flags...)
		m := metricsLine.FindStringSubmatch(s.stderr.String())
		if m == nil {
			t.Fatalf("no metrics line in the log:\n%s", s.stderr)
		}
		if got := get("http://" + m[1] + "/debug/pprof/heap"); got != tc.want {
			t.Errorf("%v: GET /debug/pprof/heap = %d, want %d", tc.flags, got, tc.want)
		}
	}
	_, stderr, code := runDpsql(t, "serve", "--data-dir", t.TempDir(), "--port", "0", "--pprof")
	if code == 0 || !strings.Contains(stderr, "--metrics-addr") {
		t.Errorf("--pprof without --metrics-addr: exit %d, %q", code, stderr)
	}
}
