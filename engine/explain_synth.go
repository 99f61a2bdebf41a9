package engine

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"

	"github.com/dpsql/dpsql/budget"
	"github.com/dpsql/dpsql/engine/dpparse"
	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/gaussian"
	"github.com/dpsql/dpsql/synth/hdmm"
	"github.com/dpsql/dpsql/synth/pgm"
)

// EXPLAIN CREATE SYNTHETIC TABLE … and its CALL twin
// dpsql_explain_synthetic_table('CREATE SYNTHETIC TABLE …').
//
// The explanation is phase 1 of the statement (validateSynthetic) and
// nothing more: it reads no row of the source, reserves nothing and writes
// nothing to the ledger. Everything it shows is a function of what the
// caller may already know: the statement, the source's schema and public
// domain, the mechanism's options and the budget's state (which SHOW
// PRIVACY BUDGET shows too). So an analyst learns nothing about the data
// from it, and the same statement explained over two tables with the same
// schema, domain and budget gives the same answer whatever their rows.
//
// The result has three columns (section, item, value), one fact per row:
//
//	cost        epsilon, delta, rho: what the statement would charge
//	budget      rho_total, rho_spent, rho_remaining, rho_remaining_after,
//	            epsilon_remaining_after, fits (yes or no)
//	workload    one row per compiled marginal: its columns; value
//	            "weight=w cells=n"
//	candidates  count, then one row per candidate with its cells and
//	            whether it alone fits the model-size cap
//	model       output, max_model_size_mb (or "none")
//	error       for mechanisms whose noise does not depend on the data
//	            (gaussian, hdmm_lls, hdmm_pgm; independent for 1-way
//	            marginals): one row per workload marginal, "sigma=σ
//	            expected_l1=E" in counts (and expected_l2 for HDMM's
//	            strategies), from σ alone; otherwise one row saying the
//	            error is data-dependent
//
// EXPLAIN cannot take ? placeholders; the CALL twin can.

// explainSynthSchema is the result of EXPLAIN CREATE SYNTHETIC TABLE.
var explainSynthSchema = sql.Schema{
	{Name: "section", Type: types.LongText},
	{Name: "item", Type: types.LongText},
	{Name: "value", Type: types.LongText},
}

// maxExplainCandidates bounds the candidate rows listed (the count is
// always exact).
const maxExplainCandidates = 200

// explainSynthText reports whether query is EXPLAIN followed by a dpsql
// CREATE SYNTHETIC TABLE, and returns the offset in query where CREATE
// starts.
func explainSynthText(query string) (int, bool) {
	s := skipSpaceAndComments(query)
	if len(s) < len("EXPLAIN ") || !strings.EqualFold(s[:len("EXPLAIN")], "EXPLAIN") {
		return 0, false
	}
	rest := s[len("EXPLAIN"):]
	if rest == "" || !(rest[0] == ' ' || rest[0] == '\t' || rest[0] == '\n' || rest[0] == '\r' || rest[0] == '/') {
		return 0, false
	}
	rest = skipSpaceAndComments(rest)
	if !strings.EqualFold(firstKeyword(rest), "CREATE") {
		return 0, false
	}
	p, _, ok, err := dpparse.Prepare(rest)
	if !ok {
		return 0, false
	}
	if err == nil {
		_, isCreate := p.Stmt.(*dpparse.CreateSynthetic)
		_, isHier := p.Stmt.(*dpparse.CreateSyntheticTables)
		if !isCreate && !isHier {
			return 0, false
		}
	}
	return len(query) - len(rest), true
}

// parseExplainSynth is the parser's hook: it parses EXPLAIN CREATE
// SYNTHETIC TABLE into an injected node. ok is false for any other query.
func (p *parser) parseExplainSynth(query string, delimiter rune, multi bool) (stmt ast.Statement, parsed, rest string, ok bool) {
	at, ok := explainSynthText(query)
	if !ok {
		return nil, "", "", false
	}
	body := query[at:]
	parsedStmt, n, _, err := dpparse.Parse(body)
	if err != nil {
		return failed(ErrSyntax.Wrap(err, "EXPLAIN (use CALL dpsql_explain_synthetic_table(?) to pass parameters)")), query, "", true
	}
	cs, isCreate := parsedStmt.(*dpparse.CreateSynthetic)
	hs, isHier := parsedStmt.(*dpparse.CreateSyntheticTables)
	if !isCreate && !isHier {
		return failed(ErrSyntax.New("EXPLAIN expects CREATE SYNTHETIC TABLE here")), query, "", true
	}
	parsed = sql.RemoveSpaceAndDelimiter(query[:at+n], delimiter)
	rest = body[n:]
	if isBlank(rest, delimiter) {
		rest = ""
	}
	if rest != "" && !multi {
		return failed(ErrSyntax.New("unexpected text after EXPLAIN %s: %s", parsedStmt, abbrev(rest))), query, "", true
	}
	return ast.InjectedStatement{Statement: &explainSynthNode{e: p.e, stmt: cs, hier: hs}, Auth: authAnyone}, parsed, rest, true
}

// explainSynthNode is the plan node of EXPLAIN CREATE SYNTHETIC TABLE.
type explainSynthNode struct {
	e    *Engine
	stmt *dpparse.CreateSynthetic
	hier *dpparse.CreateSyntheticTables // EXPLAIN CREATE SYNTHETIC TABLES (stmt is nil)
}

var _ statementNode = (*explainSynthNode)(nil)

// Resolved implements sql.Node.
func (n *explainSynthNode) Resolved() bool { return true }

// String implements sql.Node.
func (n *explainSynthNode) String() string {
	if n.hier != nil {
		return "EXPLAIN " + n.hier.String()
	}
	return "EXPLAIN " + n.stmt.String()
}

// Schema implements sql.Node.
func (n *explainSynthNode) Schema() sql.Schema { return explainSynthSchema }

// Children implements sql.Node.
func (n *explainSynthNode) Children() []sql.Node { return nil }

// WithChildren implements sql.Node.
func (n *explainSynthNode) WithChildren(children ...sql.Node) (sql.Node, error) {
	if len(children) != 0 {
		return nil, sql.ErrInvalidChildrenNumber.New(n, len(children), 0)
	}
	return n, nil
}

// IsReadOnly implements sql.Node.
func (n *explainSynthNode) IsReadOnly() bool { return true }

// WithResolvedChildren implements the parser's Injectable.
func (n *explainSynthNode) WithResolvedChildren(children []any) (any, error) {
	if len(children) != 0 {
		return nil, sql.ErrInvalidChildrenNumber.New(n, len(children), 0)
	}
	return n, nil
}

// RowIter implements sql.ExecSourceRel.
func (n *explainSynthNode) RowIter(ctx *sql.Context, _ sql.Row) (sql.RowIter, error) {
	var rows []sql.Row
	var err error
	if n.hier != nil {
		rows, err = n.e.explainHier(ctx, n.hier)
	} else {
		rows, err = n.e.explainSynthetic(ctx, n.stmt)
	}
	if err != nil {
		return nil, SQLError(err)
	}
	return sql.RowsToRowIter(rows...), nil
}

// explainSyntheticProcedure is CALL dpsql_explain_synthetic_table('CREATE
// SYNTHETIC TABLE …'), the preparable twin of EXPLAIN CREATE SYNTHETIC
// TABLE.
func (e *Engine) explainSyntheticProcedure() sql.ExternalStoredProcedureDetails {
	return sql.ExternalStoredProcedureDetails{
		Name: "dpsql_explain_synthetic_table", Schema: explainSynthSchema, ReadOnly: true,
		Function: func(ctx *sql.Context, statement string) (sql.RowIter, error) {
			parsed, n, ok, err := dpparse.Parse(statement)
			stmt, isCreate := parsed.(*dpparse.CreateSynthetic)
			hier, isHier := parsed.(*dpparse.CreateSyntheticTables)
			switch {
			case !ok || (err == nil && !isCreate && !isHier):
				return nil, SQLError(ErrBadParameter.New("dpsql_explain_synthetic_table expects a CREATE SYNTHETIC TABLE or TABLES statement"))
			case err != nil:
				return nil, SQLError(ErrSyntax.Wrap(err, ""))
			case !isBlank(statement[n:], ';'):
				return nil, SQLError(ErrSyntax.New("unexpected text after %s: %s", parsed, abbrev(statement[n:])))
			}
			var rows []sql.Row
			if isHier {
				rows, err = e.explainHier(ctx, hier)
			} else {
				rows, err = e.explainSynthetic(ctx, stmt)
			}
			if err != nil {
				return nil, SQLError(err)
			}
			return sql.RowsToRowIter(rows...), nil
		},
	}
}

// explainSynthetic validates stmt as CREATE SYNTHETIC TABLE would (phase
// 1) and describes what it would do.
func (e *Engine) explainSynthetic(ctx *sql.Context, stmt *dpparse.CreateSynthetic) ([]sql.Row, error) {
	if err := e.needCatalog("EXPLAIN CREATE SYNTHETIC TABLE"); err != nil {
		return nil, err
	}
	req, exists, err := e.validateSynthetic(ctx, stmt)
	if err != nil {
		return nil, err
	}
	var rows []sql.Row
	add := func(section, item, value string) { rows = append(rows, sql.Row{section, item, value}) }
	g := func(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }
	if exists {
		add("statement", "target", fmt.Sprintf("%s.%s exists: IF NOT EXISTS makes the statement do nothing and charge nothing", req.target.DB, req.target.Name))
		return rows, nil
	}
	add("statement", "source", req.src.DB+"."+req.src.Name)
	add("statement", "target", req.target.DB+"."+req.target.Name)
	add("statement", "mechanism", req.mech.Name())

	add("cost", "epsilon", g(req.epsilon))
	add("cost", "delta", g(req.delta))
	add("cost", "rho", g(req.rho))
	info, err := e.dp.ledger.Budget(req.src.LedgerKey())
	if err != nil {
		return nil, e.ledgerError(err)
	}
	after := info.RhoRemaining - req.rho
	add("budget", "rho_total", g(info.RhoTotal))
	add("budget", "rho_spent", g(info.RhoSpent))
	add("budget", "rho_remaining", g(info.RhoRemaining))
	if after < 0 {
		add("budget", "fits", "no: the statement would fail with the budget exhausted, charging nothing")
	} else {
		add("budget", "rho_remaining_after", g(after))
		if eps, err := budget.EpsilonFromRhoDelta(after, info.Delta); err == nil {
			add("budget", "epsilon_remaining_after", g(eps))
		}
		add("budget", "fits", "yes")
	}

	dom := req.dom
	sizes := dom.Sizes()
	cells := func(attrs []int) float64 {
		c := 1.0
		for _, a := range attrs {
			c *= float64(sizes[a])
		}
		return c
	}
	total := 0.0
	for _, m := range req.margs {
		c := cells(m.Attrs)
		total += c
		add("workload", attrNames(dom, m.Attrs), fmt.Sprintf("weight=%s cells=%s", g(m.Weight), g(c)))
	}
	add("workload", "total", fmt.Sprintf("%d marginals, %s cells", len(req.margs), g(total)))

	capMB, hasCap := modelSizeCap(req)
	add("model", "output", req.mech.Output().String())
	if hasCap {
		add("model", "max_model_size_mb", g(capMB))
	} else {
		add("model", "max_model_size_mb", "none")
	}
	if err := explainCandidates(req, capMB, hasCap, add); err != nil {
		return nil, err
	}
	explainError(req, cells, add)
	return rows, nil
}

// modelSizeCap is the effective MAX_MODEL_SIZE of the request: as stated,
// or the mechanism's default; ok is false for a mechanism without one.
func modelSizeCap(req *synthRequest) (mb float64, ok bool) {
	for _, o := range req.mechOpts {
		if o.Name == "MAX_MODEL_SIZE" {
			if x, err := strconv.ParseFloat(o.Value, 64); err == nil {
				return x, true
			}
		}
	}
	for _, f := range req.mech.Schema() {
		if f.Name == "MAX_MODEL_SIZE" {
			if x, err := strconv.ParseFloat(f.Default, 64); err == nil {
				return x, true
			}
		}
	}
	return 0, false
}

// explainCandidates lists the sets the mechanism would choose among: the
// workload's downward closure (aim), the 1-way marginals (independent),
// all pairs (mst), the workload (gaussian, and the adaptive mechanisms
// that select workload marginals); PrivBayes and HDMM have no such set,
// which is said.
func explainCandidates(req *synthRequest, capMB float64, hasCap bool, add func(section, item, value string)) error {
	d := len(req.dom.Columns)
	var cands [][]int
	what := ""
	switch req.mech.Name() {
	case "aim":
		what = "the workload's downward closure (every non-empty subset of a workload marginal)"
		seen := map[string]bool{}
		for _, m := range req.margs {
			n := len(m.Attrs)
			for mask := 1; mask < 1<<n; mask++ {
				var sub []int
				for i, a := range m.Attrs {
					if mask&(1<<i) != 0 {
						sub = append(sub, a)
					}
				}
				if k := synth.Key(sub); !seen[k] {
					seen[k] = true
					cands = append(cands, sub)
				}
			}
		}
	case "independent":
		what = "every 1-way marginal (all measured, no selection)"
		for a := range d {
			cands = append(cands, []int{a})
		}
	case "mst":
		what = "every 1-way marginal (measured) and every pair of columns (a spanning tree of d-1 pairs is selected)"
		for a := range d {
			cands = append(cands, []int{a})
		}
		for a := range d {
			for b := a + 1; b < d; b++ {
				cands = append(cands, []int{a, b})
			}
		}
	case "gaussian":
		what = "the workload marginals (all measured, no selection)"
		for _, m := range req.margs {
			cands = append(cands, m.Attrs)
		}
	case "privbayes", "privbayes_pgm":
		what = "pairs (attribute, parent set) of a Bayesian network chosen step by step, not the workload: not listed"
	case "hdmm_pgm", "hdmm_lls":
		what = "a measurement strategy optimised for the workload before any data is read, not a selection: not listed"
	default:
		// mwem, pep, pmw, gem, rap, dualquery, fem and the public-data
		// variants select among (or weigh) the workload's marginals.
		what = "the workload marginals, among which " + req.mech.Name() + " selects from the data"
		for _, m := range req.margs {
			cands = append(cands, m.Attrs)
		}
	}
	add("candidates", "set", what)
	add("candidates", "count", strconv.Itoa(len(cands)))
	var pd *pgm.Domain
	if hasCap {
		var err error
		if pd, err = pgmDomain(req.dom); err != nil {
			return ErrDomain.Wrap(err, "domain of %s", req.src)
		}
	}
	for i, c := range cands {
		if i == maxExplainCandidates {
			add("candidates", "…", fmt.Sprintf("%d more not listed", len(cands)-i))
			break
		}
		v := fmt.Sprintf("cells=%d", cellsOf(req.dom.Sizes(), c))
		if hasCap {
			mb := pgm.ModelSize(pd, [][]int{c})
			fits := "fits"
			if mb > capMB {
				fits = "exceeds the cap alone"
			}
			v += fmt.Sprintf(" size_mb=%.3g %s", mb, fits)
		}
		add("candidates", attrNames(req.dom, c), v)
	}
	return nil
}

// cellsOf is the number of cells of the marginal on attrs.
func cellsOf(sizes []int, attrs []int) int {
	c := 1
	for _, a := range attrs {
		c *= sizes[a]
	}
	return c
}

// explainError gives the expected error of each workload marginal for the
// mechanisms whose noise scale is fixed before any data is read. The error
// of a marginal with n cells, each with independent Gaussian noise of
// scale σ, has expectation E‖noise‖₁ = n·σ·sqrt(2/π) counts (the discrete
// Gaussian's is at most that). It is stated in counts: a fraction would
// need the number of rows, which is data.
func explainError(req *synthRequest, cells func([]int) float64, add func(section, item, value string)) {
	l1 := func(n, sigma float64) float64 { return n * sigma * math.Sqrt(2/math.Pi) }
	g := func(x float64) string { return strconv.FormatFloat(x, 'g', 4, 64) }
	switch req.mech.Name() {
	case "gaussian":
		w, err := synth.CanonicalWorkload(len(req.dom.Columns), req.margs)
		if err != nil {
			break
		}
		cs := make([]int, len(w))
		for i, m := range w {
			cs[i] = int(cells(m.Attrs))
		}
		sig := gaussian.Sigmas(req.rho, w, cs)
		for i, m := range w {
			if math.IsInf(sig[i], 1) {
				add("error", attrNames(req.dom, m.Attrs), "not measured (weight 0)")
				continue
			}
			add("error", attrNames(req.dom, m.Attrs), fmt.Sprintf("sigma=%s expected_l1=%s", g(sig[i]), g(l1(float64(cs[i]), sig[i]))))
		}
		add("error", "basis", "data-independent: answers are the noisy marginals; expected L1 error in counts from σ alone")
		return
	case "hdmm_pgm", "hdmm_lls":
		w, err := synth.CanonicalWorkload(len(req.dom.Columns), req.margs)
		if err != nil {
			break
		}
		pd, err := pgmDomain(req.dom)
		if err != nil {
			break
		}
		for _, p := range hdmm.Strategy(pd, w, req.rho) {
			// ‖W A⁺‖²_F·σ² is the expected squared L2 error of the
			// workload entry's answers (A⁺y); for a plain marginal (the
			// identity strategy) each cell has noise σ.
			v := fmt.Sprintf("sigma=%s expected_l2=%s", g(p.Sigma), g(p.Sigma*math.Sqrt(p.Err)))
			if plain(p) {
				v += " expected_l1=" + g(l1(cells(p.Attrs), p.Sigma))
			}
			add("error", attrNames(req.dom, p.Attrs), v)
		}
		basis := "data-independent: the strategy and its noise are fixed before any data is read; expected error in counts from σ alone"
		if req.mech.Name() == "hdmm_pgm" {
			basis += ", of the measurements (the model's estimate is usually closer)"
		}
		add("error", "basis", basis)
		return
	case "independent":
		d := float64(len(req.dom.Columns))
		sigma := math.Sqrt(d / (2 * req.rho))
		for _, m := range req.margs {
			if len(m.Attrs) == 1 {
				add("error", attrNames(req.dom, m.Attrs), fmt.Sprintf("sigma=%s expected_l1=%s", g(sigma), g(l1(cells(m.Attrs), sigma))))
			} else {
				add("error", attrNames(req.dom, m.Attrs), "data-dependent (estimated from the product of 1-way marginals)")
			}
		}
		add("error", "basis", "1-way measurements are data-independent: expected L1 noise in counts from σ alone (before the model's projection)")
		return
	}
	add("error", "basis", fmt.Sprintf("data-dependent: %s selects what to measure from the data, so its error cannot be stated before running; after running see SHOW ERROR BOUNDS", req.mech.Name()))
}

// explainEnd is the offset in query just past its first statement, whose
// text (without delimiter and surrounding space) is parsed.
func explainEnd(query, parsed string) int {
	i := strings.Index(query, parsed)
	if i < 0 {
		return len(query)
	}
	end := i + len(parsed)
	for end < len(query) && (query[end] == ';' || query[end] == ' ' || query[end] == '\t' || query[end] == '\n' || query[end] == '\r') {
		if query[end] == ';' {
			return end + 1
		}
		end++
	}
	return end
}

// plain reports whether p measures its marginal's cells directly (every
// factor the identity).
func plain(p hdmm.Plan) bool {
	for _, f := range p.Factors {
		if f.A != nil {
			return false
		}
	}
	return true
}
