package engine

import (
	"context"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/dolthub/go-mysql-server/server"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/dpsql/dpsql/engine/dpparse"
)

// Prometheus metrics (docs/metrics.md). Every engine has its own registry,
// so that several engines in one process (tests, embedding) never share or
// collide; `dpsql serve --metrics-addr` serves it over HTTP.
//
// Labels are bounded: a statement's kind is its leading keyword from a
// fixed list (or "other"), or the snake-cased type of a dpsql statement;
// an error's label is its MySQL error number. The ρ of each table is read
// from the durable ledger at scrape time, so it is exact and survives
// restarts; it is budget metadata, not data, but it names tables, so the
// endpoint should listen on a private address.

// metrics is the engine's instruments.
type metrics struct {
	reg *prometheus.Registry

	statements  *prometheus.CounterVec   // kind, outcome
	errors      *prometheus.CounterVec   // code
	connOpen    prometheus.Gauge         // open connections
	connTotal   prometheus.Counter       // accepted connections
	synthDur    *prometheus.HistogramVec // mechanism, outcome
	synthRounds *prometheus.HistogramVec // mechanism
	synthActive prometheus.Gauge
}

// newMetrics registers the engine's instruments, the ledger collector and
// Go's runtime and process collectors in a fresh registry.
func newMetrics(e *Engine) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		statements: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dpsql_statements_total",
			Help: "Statements (and prepared executions) by kind and outcome (ok or error).",
		}, []string{"kind", "outcome"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dpsql_errors_total",
			Help: "Failed statements by MySQL error number.",
		}, []string{"code"}),
		connOpen: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "dpsql_connections",
			Help: "Client connections open now.",
		}),
		connTotal: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "dpsql_connections_total",
			Help: "Client connections accepted since start.",
		}),
		synthDur: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "dpsql_synthesis_duration_seconds",
			Help:    "Wall time of charged syntheses (CREATE SYNTHETIC TABLE from the reservation to the release), by mechanism and outcome.",
			Buckets: prometheus.ExponentialBuckets(0.01, 4, 10), // 10 ms .. ~45 min
		}, []string{"mechanism", "outcome"}),
		synthRounds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "dpsql_synthesis_rounds",
			Help:    "Rounds of the mechanism in successful syntheses, by mechanism.",
			Buckets: []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000},
		}, []string{"mechanism"}),
		synthActive: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "dpsql_syntheses_running",
			Help: "Charged syntheses running now.",
		}),
	}
	m.reg.MustRegister(m.statements, m.errors, m.connOpen, m.connTotal, m.synthDur, m.synthRounds, m.synthActive,
		ledgerCollector{e: e},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// MetricsHandler serves the engine's metrics in Prometheus' text format.
func (e *Engine) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(e.metrics.reg, promhttp.HandlerOpts{})
}

// MetricsRegistry is the engine's registry, for an embedding application
// that serves it with its own metrics (prometheus.Gatherers).
func (e *Engine) MetricsRegistry() *prometheus.Registry { return e.metrics.reg }

// statement counts one statement.
func (m *metrics) statement(kind string, err error) {
	if m == nil {
		return
	}
	if err == nil {
		m.statements.WithLabelValues(kind, "ok").Inc()
		return
	}
	m.statements.WithLabelValues(kind, "error").Inc()
	code := 1105 // ER_UNKNOWN_ERROR, what the client sees for an unclassified error
	if se := sql.CastSQLError(err); se != nil {
		code = se.Number()
	}
	m.errors.WithLabelValues(strconv.Itoa(code)).Inc()
}

// synthesisStarted counts a charged synthesis in and returns the function
// that counts it out with its outcome and rounds.
func (m *metrics) synthesisStarted(mechanism string) func(rounds int, err error) {
	if m == nil {
		return func(int, error) {}
	}
	start := time.Now()
	m.synthActive.Inc()
	return func(rounds int, err error) {
		m.synthActive.Dec()
		outcome := "ok"
		if err != nil {
			outcome = "error"
		} else {
			m.synthRounds.WithLabelValues(mechanism).Observe(float64(rounds))
		}
		m.synthDur.WithLabelValues(mechanism, outcome).Observe(time.Since(start).Seconds())
	}
}

// ledgerCollector exports every table's budget and spent ρ from the ledger.
type ledgerCollector struct{ e *Engine }

var (
	rhoSpentDesc = prometheus.NewDesc("dpsql_rho_spent",
		"Privacy budget spent (zCDP ρ, committed and failed-after-reading charges, and reservations in flight) per source table, from the ledger.",
		[]string{"table"}, nil)
	rhoTotalDesc = prometheus.NewDesc("dpsql_rho_budget",
		"Privacy budget (zCDP ρ) of each table that has one, from the ledger.",
		[]string{"table"}, nil)
)

// Describe implements prometheus.Collector.
func (c ledgerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- rhoSpentDesc
	ch <- rhoTotalDesc
}

// Collect implements prometheus.Collector.
func (c ledgerCollector) Collect(ch chan<- prometheus.Metric) {
	l := c.e.dp.ledger
	if l == nil {
		return
	}
	infos, err := l.Budgets()
	if err != nil {
		c.e.log.Warn("metrics: reading the ledger", "err", err)
		return
	}
	seen := map[string]bool{}
	for _, b := range infos {
		name := b.Name
		if name == "" || seen[name] {
			name = name + "#" + b.Table // a dropped and re-created table keeps its own ledger
		}
		seen[name] = true
		ch <- prometheus.MustNewConstMetric(rhoSpentDesc, prometheus.GaugeValue, b.RhoSpent, name)
		ch <- prometheus.MustNewConstMetric(rhoTotalDesc, prometheus.GaugeValue, b.RhoTotal, name)
	}
}

// countMetrics returns a server.HandlerWrapper that puts metricsHandler
// around the handler next returns.
func (e *Engine) countMetrics(next server.HandlerWrapper) server.HandlerWrapper {
	return func(h mysql.Handler) (mysql.Handler, error) {
		h, err := next(h)
		if err != nil {
			return nil, err
		}
		return &metricsHandler{passOn: passOn{h}, m: e.metrics}, nil
	}
}

// metricsHandler counts connections and statements.
type metricsHandler struct {
	passOn
	m *metrics
}

var _ mysql.BinlogReplicaHandler = (*metricsHandler)(nil)

// NewConnection implements mysql.Handler.
func (h *metricsHandler) NewConnection(c *mysql.Conn) {
	h.m.connOpen.Inc()
	h.m.connTotal.Inc()
	h.Handler.NewConnection(c)
}

// ConnectionClosed implements mysql.Handler.
func (h *metricsHandler) ConnectionClosed(c *mysql.Conn) {
	h.m.connOpen.Dec()
	h.Handler.ConnectionClosed(c)
}

// ComQuery implements mysql.Handler.
func (h *metricsHandler) ComQuery(ctx context.Context, c *mysql.Conn, query string, callback mysql.ResultSpoolFn) error {
	err := h.Handler.ComQuery(ctx, c, query, callback)
	h.m.statement(statementKind(query), err)
	return err
}

// ComMultiQuery implements mysql.Handler. It runs the first statement of
// query, so that is the one counted.
func (h *metricsHandler) ComMultiQuery(ctx context.Context, c *mysql.Conn, query string, callback mysql.ResultSpoolFn) (string, error) {
	rest, err := h.Handler.ComMultiQuery(ctx, c, query, callback)
	h.m.statement(statementKind(query), err)
	return rest, err
}

// ComPrepare implements mysql.Handler. Preparing counts as kind "prepare";
// each execution counts as the prepared statement's kind.
func (h *metricsHandler) ComPrepare(ctx context.Context, c *mysql.Conn, query string, prepare *mysql.PrepareData) ([]*querypb.Field, error) {
	fields, err := h.Handler.ComPrepare(ctx, c, query, prepare)
	h.m.statement("prepare", err)
	return fields, err
}

// ComStmtExecute implements mysql.Handler.
func (h *metricsHandler) ComStmtExecute(ctx context.Context, c *mysql.Conn, prepare *mysql.PrepareData, callback func(*sqltypes.Result) error) error {
	err := h.Handler.ComStmtExecute(ctx, c, prepare, callback)
	kind := "other"
	if prepare != nil {
		kind = statementKind(prepare.PrepareStmt)
	}
	h.m.statement(kind, err)
	return err
}

// mysqlKinds are the leading keywords counted as their own statement kind;
// anything else is "other", so a client cannot grow the label set.
var mysqlKinds = map[string]bool{
	"select": true, "insert": true, "update": true, "delete": true, "replace": true,
	"create": true, "drop": true, "alter": true, "truncate": true, "rename": true,
	"grant": true, "revoke": true, "show": true, "set": true, "use": true, "call": true,
	"explain": true, "describe": true, "desc": true, "with": true, "load": true,
	"begin": true, "start": true, "commit": true, "rollback": true, "savepoint": true, "release": true,
	"prepare": true, "execute": true, "deallocate": true, "analyze": true, "flush": true,
	"kill": true, "lock": true, "unlock": true, "do": true, "checksum": true, "optimize": true,
}

// statementKind is the kind label of query's first statement: the snake-
// cased statement type of a dpsql statement ("create_synthetic",
// "set_budget", "explain_create_synthetic", ...), else its leading keyword
// in lower case if it is in mysqlKinds, else "other".
func statementKind(query string) string {
	if p, _, ok, err := dpparse.Prepare(query); ok {
		if err != nil {
			return "dpsql_invalid"
		}
		return snakeType(p.Stmt)
	}
	if _, ok := explainSynthText(query); ok {
		return "explain_create_synthetic"
	}
	kw := strings.ToLower(firstKeyword(query))
	if mysqlKinds[kw] {
		return kw
	}
	return "other"
}

// snakeType is the snake-cased name of v's type: *dpparse.SetBudget is
// "set_budget".
func snakeType(v any) string {
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var b strings.Builder
	for i, r := range t.Name() {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// firstKeyword is the first word of query after whitespace and comments.
func firstKeyword(query string) string {
	s := skipSpaceAndComments(query)
	end := strings.IndexFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && r != '_' })
	if end < 0 {
		end = len(s)
	}
	return s[:end]
}

// skipSpaceAndComments drops leading whitespace and comments (/* */, --
// and #) from s.
func skipSpaceAndComments(s string) string {
	for {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
		switch {
		case strings.HasPrefix(s, "/*"):
			end := strings.Index(s[2:], "*/")
			if end < 0 {
				return ""
			}
			s = s[2+end+2:]
		case strings.HasPrefix(s, "-- ") || strings.HasPrefix(s, "--\t") || strings.HasPrefix(s, "--\n") || s == "--" || strings.HasPrefix(s, "#"):
			end := strings.IndexByte(s, '\n')
			if end < 0 {
				return ""
			}
			s = s[end+1:]
		default:
			return s
		}
	}
}
