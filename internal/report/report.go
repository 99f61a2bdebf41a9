// Package report builds the quality report of a synthetic table (`dpsql
// report`): per workload marginal, the error of the synthetic rows and of
// the model, bar plots of the largest 1- and 2-way marginals, the error
// bounds against the observed error, and the table's ledger entry, as one
// self-contained HTML page (inline SVG and CSS, no script, no network).
//
// It is a client: everything comes over SQL from a running server, with
// the privileges of the user who connects. A user who can read the source
// table (its owner) gets the errors measured against the real data; any
// other user gets a report from released information only (the model's
// answers and error bounds, and the synthetic rows), and the page says so.
// Nothing in the report costs privacy budget: reading the real table is
// the owner's right, and the rest is post-processing of the release.
package report

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Limits on what is plotted, so that a wide table gives a readable page.
const (
	max1WayPlots = 12
	max2WayPlots = 4
	maxPlotCells = 20
	maxPairs     = 66 // workload marginals guessed without bounds: the first pairs
)

// Report is what the page shows.
type Report struct {
	Table     string // db.t
	Source    string
	Mechanism string
	Output    string
	Epsilon   float64
	Delta     float64
	Rho       float64
	Rows      int64
	Rounds    int64
	ModelMB   float64
	Created   string
	Creator   string
	User      string // who made the report
	Generated time.Time

	// Owner: the user could read the source, and errors are measured
	// against it; otherwise only released information is used.
	Owner bool
	// HasBounds: the model has error bounds (AIM), and Marginals carry
	// them.
	HasBounds bool
	// Marginals are the workload's (from the bounds), or every pair of
	// columns when the table has no bounds.
	Marginals []*Marginal
	// OneWay are the 1-way marginals of every attribute, for the plots.
	OneWay []*Marginal
	Ledger *LedgerEntry
	Notes  []string
}

// Marginal is one marginal with its cells from each source and its errors.
type Marginal struct {
	Attrs   []string
	Weight  float64
	Bound   float64 // NaN without bounds
	Support string
	Cells   []Cell
	// ErrSynth and ErrModel are L1 distances between normalised
	// marginals (in [0, 2]): for an owner, of the synthetic rows and of
	// the model to the real data; for anyone else ErrSynth is the
	// synthetic rows' distance to the model and ErrModel is NaN.
	ErrSynth, ErrModel float64
	Failed             string // why the marginal could not be computed
}

// Name is the marginal's columns, comma-separated.
func (m *Marginal) Name() string { return strings.Join(m.Attrs, ", ") }

// Cell is one cell's count in each source (NaN where a source is absent).
type Cell struct {
	Key                []string
	Real, Model, Synth float64
}

// LedgerEntry is the ledger entry of the synthesis.
type LedgerEntry struct {
	ID, Time, User, Statement, Mechanism, Status, Note string
	Rho, Epsilon, Delta                                float64
}

// querier is what Collect needs: one connection, since it sets session
// variables.
type querier interface {
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
	ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error)
}

// Collect gathers the report of the synthetic table db.name over conn.
func Collect(ctx context.Context, conn *sql.Conn, table string) (*Report, error) {
	db, name, ok := strings.Cut(table, ".")
	if !ok || db == "" || name == "" {
		return nil, fmt.Errorf("--table %q: want db.table", table)
	}
	r := &Report{Table: table, Generated: time.Now().UTC()}
	if rows, err := queryStrings(ctx, conn, "SELECT CURRENT_USER()"); err == nil && len(rows) == 1 {
		r.User = rows[0][0]
	}
	if err := r.record(ctx, conn, db, name); err != nil {
		return nil, err
	}
	// Is the source readable? Then this is its owner (or someone the owner
	// let read raw data), and the report compares with it.
	if _, err := queryStrings(ctx, conn, "SELECT 1 FROM "+quoteTable(r.Source)+" LIMIT 1"); err == nil {
		r.Owner = true
	}
	if r.answersOnly() {
		r.Notes = append(r.Notes, r.Table+" holds noisy answers, not rows: the “model” columns are its answers, and there are no synthetic rows")
	}
	if err := r.workload(ctx, conn); err != nil {
		return nil, err
	}
	bins := r.oneWay(ctx, conn)
	for _, m := range r.Marginals {
		r.fill(ctx, conn, m, bins)
	}
	r.ledger(ctx, conn, db, name)
	if _, err := conn.ExecContext(ctx, "SET SESSION dpsql_answer_source = 'model'"); err != nil {
		r.Notes = append(r.Notes, "could not restore dpsql_answer_source: "+err.Error())
	}
	return r, nil
}

// record reads the table's line of SHOW SYNTHETIC TABLES.
func (r *Report) record(ctx context.Context, q querier, db, name string) error {
	rows, cols, err := queryNamed(ctx, q, "SHOW SYNTHETIC TABLES FROM "+quoteIdent(db))
	if err != nil {
		return fmt.Errorf("SHOW SYNTHETIC TABLES FROM %s: %w", db, err)
	}
	for _, row := range rows {
		if !strings.EqualFold(row[cols["Name"]], name) {
			continue
		}
		f := func(c string) float64 { x, _ := strconv.ParseFloat(row[cols[c]], 64); return x }
		i := func(c string) int64 { x, _ := strconv.ParseInt(row[cols[c]], 10, 64); return x }
		r.Table = row[cols["Database"]] + "." + row[cols["Name"]]
		r.Source, r.Mechanism, r.Output = row[cols["Source"]], row[cols["Mechanism"]], row[cols["Output"]]
		r.Epsilon, r.Delta, r.Rho = f("Epsilon"), f("Delta"), f("Rho")
		r.Rows, r.Rounds, r.ModelMB = i("Rows"), i("Rounds"), f("Model_size_MB")
		r.Created, r.Creator = row[cols["Created_at"]], row[cols["User"]]
		return nil
	}
	return fmt.Errorf("%s.%s is not a synthetic table this user may read", db, name)
}

// workload sets the marginals: the workload's with their bounds, or every
// pair of the table's columns when the model has no bounds.
func (r *Report) workload(ctx context.Context, q querier) error {
	rows, cols, err := queryNamed(ctx, q, "SHOW ERROR BOUNDS FOR "+quoteTable(r.Table))
	if err == nil {
		r.HasBounds = true
		for _, row := range rows {
			w, _ := strconv.ParseFloat(row[cols["weight"]], 64)
			b, _ := strconv.ParseFloat(row[cols["l1_error_bound"]], 64)
			r.Marginals = append(r.Marginals, &Marginal{
				Attrs: strings.Split(row[cols["attributes"]], ", "), Weight: w, Bound: b, Support: row[cols["support"]],
			})
		}
		return nil
	}
	if r.answersOnly() {
		// The released marginals are the workload's: read their list.
		rows, err := queryStrings(ctx, q, "SELECT DISTINCT dp_columns FROM "+quoteTable(r.Table)+" ORDER BY dp_marginal")
		if err != nil {
			return fmt.Errorf("the released marginals of %s: %w", r.Table, err)
		}
		for _, row := range rows {
			r.Marginals = append(r.Marginals, &Marginal{Attrs: strings.Split(row[0], ","), Weight: math.NaN(), Bound: math.NaN()})
		}
		return nil
	}
	r.Notes = append(r.Notes, "no error bounds for this table ("+err.Error()+"); the marginals shown are the pairs of its columns, not necessarily its workload")
	crow, ccols, err := queryNamed(ctx, q, "SHOW COLUMNS FROM "+quoteTable(r.Table))
	if err != nil {
		return fmt.Errorf("SHOW COLUMNS FROM %s: %w", r.Table, err)
	}
	var attrs []string
	for _, row := range crow {
		if row[ccols["Key"]] == "PRI" || strings.HasPrefix(row[ccols["Field"]], "dp_") {
			continue // the row number key; an answers-only table's own columns
		}
		attrs = append(attrs, row[ccols["Field"]])
	}
	for i := range attrs {
		for j := i + 1; j < len(attrs) && len(r.Marginals) < maxPairs; j++ {
			r.Marginals = append(r.Marginals, &Marginal{Attrs: []string{attrs[i], attrs[j]}, Weight: 1, Bound: math.NaN()})
		}
	}
	if len(attrs) == 1 {
		r.Marginals = append(r.Marginals, &Marginal{Attrs: attrs, Weight: 1, Bound: math.NaN()})
	}
	return nil
}

// answersOnly reports whether the table holds noisy answers, not rows
// (gaussian, hdmm_lls): its "model" is the noisy answers, and it has no
// synthetic rows to compare.
func (r *Report) answersOnly() bool { return strings.Contains(r.Output, "answers") }

// attrs lists the attributes of the workload in order of appearance.
func (r *Report) attrs() []string {
	var out []string
	for _, m := range r.Marginals {
		for _, a := range m.Attrs {
			if !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	return out
}

// oneWay computes the 1-way marginal of every attribute and returns, for
// each numeric attribute, the sorted values the model uses (the lower
// bounds of a binned column's bins), to which row values are mapped.
func (r *Report) oneWay(ctx context.Context, q querier) map[string][]float64 {
	bins := map[string][]float64{}
	for _, a := range r.attrs() {
		m := &Marginal{Attrs: []string{a}, Weight: 1, Bound: math.NaN()}
		if r.HasBounds {
			if model, err := r.dpMarginal(ctx, q, m.Attrs); err == nil {
				var vals []float64
				numeric := true
				for k := range model {
					x, err := strconv.ParseFloat(k, 64)
					if err != nil {
						numeric = false
						break
					}
					vals = append(vals, x)
				}
				if numeric && len(vals) > 0 {
					sort.Float64s(vals)
					bins[a] = vals
				}
			}
		}
		if r.answersOnly() {
			if vals, err := r.cellValues(ctx, q, a); err == nil && len(vals) > 0 {
				bins[a] = vals
			}
		}
		r.OneWay = append(r.OneWay, m)
	}
	for _, m := range r.OneWay {
		r.fill(ctx, q, m, bins)
	}
	return bins
}

// fill computes m's cells from each source and its errors.
func (r *Report) fill(ctx context.Context, q querier, m *Marginal, bins map[string][]float64) {
	var model map[string]float64
	var err error
	switch {
	case r.HasBounds:
		model, err = r.dpMarginal(ctx, q, m.Attrs)
	case r.answersOnly() && len(m.Attrs) > 1:
		model, err = r.answerCells(ctx, q, m.Attrs)
	default:
		model, err = r.groupBy(ctx, q, r.Table, m.Attrs, "model", bins)
	}
	if err != nil {
		m.Failed = "model: " + err.Error()
		m.ErrSynth, m.ErrModel = math.NaN(), math.NaN()
		return
	}
	var synth map[string]float64
	if !r.answersOnly() {
		if synth, err = r.groupBy(ctx, q, r.Table, m.Attrs, "rows", bins); err != nil {
			m.Failed = "synthetic rows: " + err.Error()
			m.ErrSynth, m.ErrModel = math.NaN(), math.NaN()
			return
		}
	}
	var real map[string]float64
	if r.Owner {
		if real, err = r.groupBy(ctx, q, r.Source, m.Attrs, "rows", bins); err != nil {
			m.Failed = "real table: " + err.Error()
		}
	}
	keys := map[string]bool{}
	for _, src := range []map[string]float64{model, synth, real} {
		for k := range src {
			keys[k] = true
		}
	}
	m.ErrSynth, m.ErrModel = math.NaN(), math.NaN()
	get := func(src map[string]float64, k string) float64 {
		if src == nil {
			return math.NaN()
		}
		return src[k]
	}
	for k := range keys {
		m.Cells = append(m.Cells, Cell{Key: strings.Split(k, keySep), Real: get(real, k), Model: get(model, k), Synth: get(synth, k)})
	}
	sort.Slice(m.Cells, func(i, j int) bool {
		return strings.Join(m.Cells[i].Key, keySep) < strings.Join(m.Cells[j].Key, keySep)
	})
	switch {
	case real != nil:
		m.ErrModel = l1(m.Cells, func(c Cell) float64 { return c.Model }, func(c Cell) float64 { return c.Real })
		if synth != nil {
			m.ErrSynth = l1(m.Cells, func(c Cell) float64 { return c.Synth }, func(c Cell) float64 { return c.Real })
		}
	case synth != nil:
		m.ErrSynth = l1(m.Cells, func(c Cell) float64 { return c.Synth }, func(c Cell) float64 { return c.Model })
	}
}

// l1 is the L1 distance between the normalised a and b over cells.
func l1(cells []Cell, a, b func(Cell) float64) float64 {
	var sa, sb float64
	for _, c := range cells {
		sa += max(a(c), 0)
		sb += max(b(c), 0)
	}
	if sa == 0 || sb == 0 {
		return math.NaN()
	}
	var d float64
	for _, c := range cells {
		d += math.Abs(max(a(c), 0)/sa - max(b(c), 0)/sb)
	}
	return d
}

// keySep joins a cell's values into a map key.
const keySep = "\x1f"

// cellValues returns the sorted numeric values attr takes in the cells
// of an answers-only table (a binned column's bin lower bounds), or nil
// if they are not numbers.
func (r *Report) cellValues(ctx context.Context, q querier, attr string) ([]float64, error) {
	if _, err := q.ExecContext(ctx, "SET SESSION dpsql_answer_source = 'rows'"); err != nil {
		return nil, err
	}
	rows, err := queryStrings(ctx, q, "SELECT DISTINCT "+quoteIdent(attr)+" FROM "+quoteTable(r.Table)+" WHERE "+quoteIdent(attr)+" IS NOT NULL")
	if err != nil {
		return nil, err
	}
	var vals []float64
	for _, row := range rows {
		x, err := strconv.ParseFloat(row[0], 64)
		if err != nil {
			return nil, nil
		}
		vals = append(vals, x)
	}
	sort.Float64s(vals)
	return vals, nil
}

// answerCells reads the released noisy marginal on attrs of an
// answers-only table, cell by cell.
func (r *Report) answerCells(ctx context.Context, q querier, attrs []string) (map[string]float64, error) {
	if _, err := q.ExecContext(ctx, "SET SESSION dpsql_answer_source = 'rows'"); err != nil {
		return nil, err
	}
	cols := make([]string, len(attrs))
	for i, a := range attrs {
		cols[i] = quoteIdent(a)
	}
	rows, err := queryStrings(ctx, q, "SELECT "+strings.Join(cols, ", ")+", dp_noisy_count FROM "+quoteTable(r.Table)+
		" WHERE dp_columns = "+quoteString(strings.Join(attrs, ",")))
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, row := range rows {
		x, _ := strconv.ParseFloat(row[len(attrs)], 64)
		out[strings.Join(row[:len(attrs)], keySep)] += x
	}
	return out, nil
}

// dpMarginal reads the model's marginal on attrs with dp_marginal.
func (r *Report) dpMarginal(ctx context.Context, q querier, attrs []string) (map[string]float64, error) {
	args := []string{quoteString(r.Table)}
	for _, a := range attrs {
		args = append(args, quoteString(a))
	}
	rows, cols, err := queryNamed(ctx, q, "SELECT * FROM dp_marginal("+strings.Join(args, ", ")+")")
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, row := range rows {
		key := make([]string, len(attrs))
		for i, a := range attrs {
			key[i] = row[cols[a]]
		}
		x, _ := strconv.ParseFloat(row[cols["estimate"]], 64)
		out[strings.Join(key, keySep)] += x
	}
	return out, nil
}

// groupBy counts table's rows (or, with source "model", asks the model)
// per combination of attrs' values, numeric values mapped to their bins.
func (r *Report) groupBy(ctx context.Context, q querier, table string, attrs []string, source string, bins map[string][]float64) (map[string]float64, error) {
	if _, err := q.ExecContext(ctx, "SET SESSION dpsql_answer_source = "+quoteString(source)); err != nil {
		return nil, err
	}
	cols := make([]string, len(attrs))
	for i, a := range attrs {
		cols[i] = quoteIdent(a)
	}
	list := strings.Join(cols, ", ")
	rows, err := queryStrings(ctx, q, "SELECT "+list+", COUNT(*) FROM "+quoteTable(table)+" GROUP BY "+list)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, row := range rows {
		key := make([]string, len(attrs))
		for i, a := range attrs {
			key[i] = binOf(row[i], bins[a])
		}
		x, _ := strconv.ParseFloat(row[len(attrs)], 64)
		out[strings.Join(key, keySep)] += x
	}
	return out, nil
}

// binOf maps a numeric value to the largest model value not above it
// (the lower bound of its bin), as the model's marginals show it.
func binOf(v string, bins []float64) string {
	if len(bins) == 0 {
		return v
	}
	x, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return v
	}
	i := sort.SearchFloat64s(bins, x)
	if i < len(bins) && bins[i] == x {
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	if i > 0 {
		i--
	}
	return strconv.FormatFloat(bins[i], 'f', -1, 64)
}

// ledger finds the ledger entry that created the table, if the user may
// see it.
func (r *Report) ledger(ctx context.Context, q querier, db, name string) {
	rows, cols, err := queryNamed(ctx, q, "SHOW PRIVACY LEDGER FOR "+quoteTable(r.Source))
	if err != nil {
		r.Notes = append(r.Notes, "the ledger of "+r.Source+" is not visible to this user ("+err.Error()+")")
		return
	}
	prefix := "created " + db + "." + name + ":"
	for i := len(rows) - 1; i >= 0; i-- {
		row := rows[i]
		if !strings.HasPrefix(row[cols["note"]], prefix) {
			continue
		}
		f := func(c string) float64 { x, _ := strconv.ParseFloat(row[cols[c]], 64); return x }
		r.Ledger = &LedgerEntry{
			ID: row[cols["id"]], Time: row[cols["time"]], User: row[cols["user"]], Statement: row[cols["statement"]],
			Mechanism: row[cols["mechanism"]], Status: row[cols["status"]], Note: row[cols["note"]],
			Rho: f("rho"), Epsilon: f("epsilon"), Delta: f("delta"),
		}
		return
	}
	r.Notes = append(r.Notes, "no ledger entry of "+r.Source+" visible to this user created "+r.Table)
}

// queryStrings runs q and returns its rows as strings (NULL as "").
func queryStrings(ctx context.Context, q querier, query string) ([][]string, error) {
	rows, _, err := queryNamed(ctx, q, query)
	return rows, err
}

// queryNamed runs q and returns its rows as strings and the index of each
// column by name.
func queryNamed(ctx context.Context, q querier, query string) ([][]string, map[string]int, error) {
	rs, err := q.QueryContext(ctx, query)
	if err != nil {
		return nil, nil, err
	}
	defer rs.Close()
	names, err := rs.Columns()
	if err != nil {
		return nil, nil, err
	}
	cols := make(map[string]int, len(names))
	for i, n := range names {
		cols[n] = i
	}
	var out [][]string
	for rs.Next() {
		vals := make([]sql.NullString, len(names))
		ptrs := make([]any, len(names))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rs.Scan(ptrs...); err != nil {
			return nil, nil, err
		}
		row := make([]string, len(names))
		for i, v := range vals {
			row[i] = v.String
		}
		out = append(out, row)
	}
	return out, cols, rs.Err()
}

// quoteIdent backquotes a MySQL identifier.
func quoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

// quoteTable backquotes db.t.
func quoteTable(t string) string {
	db, name, ok := strings.Cut(t, ".")
	if !ok {
		return quoteIdent(t)
	}
	return quoteIdent(db) + "." + quoteIdent(name)
}

// quoteString quotes a MySQL string literal.
func quoteString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(s) + "'"
}
