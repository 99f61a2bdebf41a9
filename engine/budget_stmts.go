package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"

	"github.com/dpsql/dpsql/budget"
	"github.com/dpsql/dpsql/engine/dpparse"
)

// This file holds the privacy-budget statements:
//
//	SET PRIVACY BUDGET FOR t WITH EPSILON = e, DELTA = d   CALL dpsql_set_privacy_budget('t', e, d)
//	SHOW PRIVACY BUDGET [FOR t]                            CALL dpsql_privacy_budget(['t'])
//	SHOW PRIVACY LEDGER FOR t                              CALL dpsql_privacy_ledger('t')
//
// and the generic plan node the budget, domain and grant statements share.

// ledgerError maps an error of the privacy ledger to the engine error a
// client sees:
//
//   - a refused request (*budget.ExhaustedError) is ErrBudgetExhausted, with
//     the request's cost and what remains, as ρ and as ε at the table's δ;
//   - a table without a budget is ErrNoBudget, telling the user to ask the
//     owner for SET PRIVACY BUDGET;
//   - an invalid parameter or a total below what is spent is ErrBadParameter;
//   - a cancelled context is ErrCancelled;
//   - anything else (a corrupt ledger, a failed write) is ErrInternal.
//
// A nil err stays nil. Errors that already carry an engine kind are returned
// unchanged.
func (e *Engine) ledgerError(err error) error {
	if err == nil {
		return nil
	}
	var ee *Error
	if errors.As(err, &ee) {
		return err
	}
	var ex *budget.ExhaustedError
	switch {
	case errors.As(err, &ex):
		name := ex.Name
		if name == "" {
			name = "the table"
		}
		return ErrBudgetExhausted.New("privacy budget of %s exhausted: the request costs ρ=%.6g (ε=%.4g at δ=%.3g) but only ρ=%.6g (ε=%.4g) remains; nothing was spent",
			name, ex.Requested, ex.RequestedEpsilon, ex.Delta, ex.Remaining, ex.RemainingEpsilon)
	case errors.Is(err, budget.ErrNoBudget):
		return ErrNoBudget.New("the table has no privacy budget: ask its owner to run SET PRIVACY BUDGET FOR <table> WITH EPSILON = <ε>, DELTA = <δ>")
	case errors.Is(err, budget.ErrBelowSpent), errors.Is(err, budget.ErrInvalidParameter):
		if errors.Is(err, budget.ErrInvalidParameter) {
			return ErrBadParameter.New("the privacy ledger refused the request: %s", budget.Reason(err))
		}
		return ErrBadParameter.Wrap(err, "privacy budget")
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return ErrCancelled.Wrap(err, "statement cancelled")
	default:
		return ErrInternal.Wrap(err, "privacy ledger")
	}
}

// ledgerErrorFor is ledgerError for a request on t: a missing budget is
// reported naming t, addressed to its owner or to an analyst.
func (e *Engine) ledgerErrorFor(ctx *sql.Context, t tableRef, err error) error {
	var ee *Error
	if errors.Is(err, budget.ErrNoBudget) && !errors.As(err, &ee) {
		return noBudget(t, e.isOwner(ctx, t))
	}
	return e.ledgerError(err)
}

// noBudget is the error for a table without a budget, addressed to its
// owner or to an analyst.
func noBudget(t tableRef, owner bool) error {
	if owner {
		return ErrNoBudget.New("%s has no privacy budget: set one with SET PRIVACY BUDGET FOR %s WITH EPSILON = <ε>, DELTA = <δ>", t, t)
	}
	return ErrNoBudget.New("%s has no privacy budget: ask its owner to run SET PRIVACY BUDGET FOR %s WITH EPSILON = <ε>, DELTA = <δ>", t, t)
}

// dpNode is the plan node of a dpsql statement computed by a function: the
// budget, domain and grant statements. The function runs when the node is
// executed, never while planning, so a statement prepared in a
// multi-statement script sees the effects of the statements before it.
type dpNode struct {
	stmt     dpparse.Statement
	schema   sql.Schema
	readOnly bool
	run      func(*sql.Context) ([]sql.Row, error)
}

var _ statementNode = (*dpNode)(nil)

// okSchema is the schema of statements that return an OK packet.
var okSchema = types.OkResultSchema

// okRows is the result of a statement that changed metadata, not rows.
func okRows() []sql.Row { return []sql.Row{{types.NewOkResult(0)}} }

// okNode is the node of a statement s that changes metadata with run and
// returns an OK packet.
func okNode(s dpparse.Statement, run func(*sql.Context) error) *dpNode {
	return &dpNode{stmt: s, schema: okSchema, run: func(ctx *sql.Context) ([]sql.Row, error) {
		if err := run(ctx); err != nil {
			return nil, err
		}
		return okRows(), nil
	}}
}

// Resolved implements sql.Node.
func (n *dpNode) Resolved() bool { return true }

// String implements sql.Node.
func (n *dpNode) String() string { return n.stmt.String() }

// Schema implements sql.Node.
func (n *dpNode) Schema() sql.Schema { return n.schema }

// Children implements sql.Node.
func (n *dpNode) Children() []sql.Node { return nil }

// WithChildren implements sql.Node.
func (n *dpNode) WithChildren(children ...sql.Node) (sql.Node, error) {
	if len(children) != 0 {
		return nil, sql.ErrInvalidChildrenNumber.New(n, len(children), 0)
	}
	return n, nil
}

// IsReadOnly implements sql.Node.
func (n *dpNode) IsReadOnly() bool { return n.readOnly }

// WithResolvedChildren implements the parser's Injectable.
func (n *dpNode) WithResolvedChildren(children []any) (any, error) {
	if len(children) != 0 {
		return nil, sql.ErrInvalidChildrenNumber.New(n, len(children), 0)
	}
	return n, nil
}

// RowIter implements sql.ExecSourceRel.
func (n *dpNode) RowIter(ctx *sql.Context, _ sql.Row) (sql.RowIter, error) {
	rows, err := n.run(ctx)
	if err != nil {
		return nil, SQLError(err)
	}
	return sql.RowsToRowIter(rows...), nil
}

// procResult turns a statement's result into a procedure's.
func procResult(rows []sql.Row, err error) (sql.RowIter, error) {
	if err != nil {
		return nil, SQLError(err)
	}
	return sql.RowsToRowIter(rows...), nil
}

// parseTableArg parses the table argument of a CALL twin, written as in
// the statement: name, db.name, `quoted`.`names`.
func parseTableArg(s string) (dpparse.TableName, error) {
	text := "SHOW DOMAIN FOR " + s
	stmt, n, ok, err := dpparse.Parse(text)
	sd, isDomain := stmt.(*dpparse.ShowDomain)
	if !ok || err != nil || !isDomain || n != len(text) || strings.TrimSpace(s) == "" {
		return dpparse.TableName{}, ErrBadParameter.New("invalid table name %q: write it as table or db.table", s)
	}
	return sd.Table, nil
}

// SET PRIVACY BUDGET

// setBudgetNode returns the node of SET PRIVACY BUDGET.
func (e *Engine) setBudgetNode(s *dpparse.SetBudget) *dpNode {
	return okNode(s, func(ctx *sql.Context) error { return e.setBudget(ctx, s) })
}

// setBudget records a new total budget for a table: owner only, ε > 0
// finite and δ in (0, 1). The total may be raised, or lowered down to what
// is already spent (lowering is never less private); every change is an
// entry of the table's ledger.
func (e *Engine) setBudget(ctx *sql.Context, s *dpparse.SetBudget) error {
	if err := e.needCatalog("SET PRIVACY BUDGET"); err != nil {
		return err
	}
	eps, err := s.Epsilon.Float64()
	if err != nil || !(eps > 0) || math.IsInf(eps, 0) {
		return ErrBadParameter.New("EPSILON = %s: must be a positive finite number", s.Epsilon)
	}
	delta, err := s.Delta.Float64()
	if err != nil || !(delta > 0 && delta < 1) {
		return ErrBadParameter.New("DELTA = %s: must be in (0, 1), e.g. 1e-9", s.Delta)
	}
	if delta > budget.MaxBudgetDelta {
		return ErrBadParameter.New("DELTA = %s is too large: δ is the chance that the privacy guarantee fails outright and must be far below 1/n for a table of n rows; budgets allow at most %g (1e-9 is usual)", s.Delta, budget.MaxBudgetDelta)
	}
	t, err := e.openTable(ctx, "SET PRIVACY BUDGET", s.Table, roleOwner)
	if err != nil {
		return err
	}
	if l, err := e.privacyUnitOf(ctx, t); err != nil {
		return err
	} else if l != nil {
		return ErrBadParameter.New("%s belongs to the privacy unit %s, whose budget and ledger it shares: SET PRIVACY BUDGET FOR %s", t, l.unit, l.unit)
	}
	_, err = e.dp.ledger.SetBudget(ctx, t.LedgerKey(), t.DB+"."+t.Name, e.ledgerUser(ctx), s.String(), eps, delta)
	switch {
	case errors.Is(err, budget.ErrBelowSpent):
		spent := ""
		if b, berr := e.dp.ledger.Budget(t.LedgerKey()); berr == nil {
			spent = fmt.Sprintf(" (ρ=%.6g, ε=%.4g at δ=%g)", b.RhoSpent, b.EpsilonSpent, b.Delta)
		}
		return ErrBadParameter.New("EPSILON = %s, DELTA = %s for %s is below what was already spent%s: a budget can be lowered only down to that", s.Epsilon, s.Delta, t, spent)
	case errors.Is(err, budget.ErrInvalidParameter):
		return ErrBadParameter.New("EPSILON = %s, DELTA = %s for %s: %s", s.Epsilon, s.Delta, t, budget.Reason(err))
	}
	return e.ledgerError(err)
}

// setBudgetProcedure is CALL dpsql_set_privacy_budget('t', ε, δ).
func (e *Engine) setBudgetProcedure() sql.ExternalStoredProcedureDetails {
	return sql.ExternalStoredProcedureDetails{
		Name:   "dpsql_set_privacy_budget",
		Schema: okSchema,
		Function: func(ctx *sql.Context, table string, epsilon, delta float64) (sql.RowIter, error) {
			tn, err := parseTableArg(table)
			if err != nil {
				return procResult(nil, err)
			}
			s := &dpparse.SetBudget{Table: tn, Epsilon: dpparse.Number(epsilon), Delta: dpparse.Number(delta)}
			return procResult(e.setBudgetNode(s).run(ctx))
		},
	}
}

// SHOW PRIVACY BUDGET

// budgetSchema is the result of SHOW PRIVACY BUDGET: one row per table. ε
// figures are the tight conversions of the ρ figures at the table's δ; as
// the conversion is not linear, spent and remaining do not add up to the
// total.
var budgetSchema = sql.Schema{
	{Name: "table", Type: types.LongText},
	{Name: "epsilon_total", Type: types.Float64},
	{Name: "delta", Type: types.Float64},
	{Name: "rho_total", Type: types.Float64},
	{Name: "rho_spent", Type: types.Float64},
	{Name: "rho_remaining", Type: types.Float64},
	{Name: "epsilon_spent", Type: types.Float64},
	{Name: "epsilon_remaining", Type: types.Float64},
}

// budgetRow is the row of one table's budget.
func budgetRow(name string, b budget.BudgetInfo) sql.Row {
	return sql.Row{name, b.EpsilonTotal, b.Delta, b.RhoTotal, b.RhoSpent, b.RhoRemaining, b.EpsilonSpent, b.EpsilonRemaining}
}

// showBudgetNode returns the node of SHOW PRIVACY BUDGET.
func (e *Engine) showBudgetNode(s *dpparse.ShowBudget) *dpNode {
	return &dpNode{stmt: s, schema: budgetSchema, readOnly: true, run: func(ctx *sql.Context) ([]sql.Row, error) {
		if s.Table.IsZero() {
			return e.showBudgets(ctx)
		}
		return e.showBudget(ctx, s.Table)
	}}
}

// showBudget is SHOW PRIVACY BUDGET FOR t, for its owner and SYNTHESIZE
// grantees; a table without a budget is ErrNoBudget.
func (e *Engine) showBudget(ctx *sql.Context, tn dpparse.TableName) ([]sql.Row, error) {
	t, err := e.openTable(ctx, "SHOW PRIVACY BUDGET", tn, roleSynthesizer)
	if err != nil {
		return nil, err
	}
	b, err := e.dp.ledger.Budget(t.LedgerKey())
	if errors.Is(err, budget.ErrNoBudget) {
		return nil, noBudget(t, e.isOwner(ctx, t))
	}
	if err != nil {
		return nil, e.ledgerError(err)
	}
	return []sql.Row{budgetRow(t.DB+"."+t.Name, b)}, nil
}

// showBudgets is SHOW PRIVACY BUDGET: every live table with a budget that
// the user owns or holds SYNTHESIZE on, ordered by name. The ledger is
// keyed by stable table IDs, so budgets of dropped tables (whose IDs no
// live table has) are never listed, and a table re-created under a dropped
// one's name shows only its own budget. Tables are named as they are now,
// even if renamed since their budget was set.
func (e *Engine) showBudgets(ctx *sql.Context) ([]sql.Row, error) {
	if err := e.needCatalog("SHOW PRIVACY BUDGET"); err != nil {
		return nil, err
	}
	budgets, err := e.dp.ledger.Budgets()
	if err != nil {
		return nil, e.ledgerError(err)
	}
	live, err := e.liveTables(ctx)
	if err != nil {
		return nil, err
	}
	var rows []sql.Row
	for _, b := range budgets {
		t, ok := live[b.Table]
		if !ok {
			continue
		}
		ok, err := e.canSynthesize(ctx, t)
		if err != nil {
			return nil, err
		}
		if ok {
			rows = append(rows, budgetRow(t.DB+"."+t.Name, b))
		}
	}
	slices.SortFunc(rows, func(a, b sql.Row) int { return strings.Compare(a[0].(string), b[0].(string)) })
	return rows, nil
}

// liveTables maps the ledger key of every table of the catalog to the
// table (without its handle: Table is nil).
func (e *Engine) liveTables(ctx *sql.Context) (map[string]tableRef, error) {
	live := make(map[string]tableRef)
	for _, db := range e.dp.cat.Provider().AllDatabases(ctx) {
		names, err := db.GetTableNames(ctx)
		if err != nil {
			return nil, ErrInternal.Wrap(err, "listing the tables of %s", quoteIdent(db.Name()))
		}
		for _, name := range names {
			id, ok, err := e.dp.cat.TableID(db.Name(), name)
			if err != nil {
				return nil, ErrInternal.Wrap(err, "looking up %s.%s", quoteIdent(db.Name()), quoteIdent(name))
			}
			if ok {
				t := tableRef{DB: db.Name(), Name: name, ID: id}
				live[t.LedgerKey()] = t
			}
		}
	}
	return live, nil
}

// showBudgetProcedures are CALL dpsql_privacy_budget() and
// CALL dpsql_privacy_budget('t').
func (e *Engine) showBudgetProcedures() []sql.ExternalStoredProcedureDetails {
	return []sql.ExternalStoredProcedureDetails{
		{
			Name:     "dpsql_privacy_budget",
			Schema:   budgetSchema,
			ReadOnly: true,
			Function: func(ctx *sql.Context) (sql.RowIter, error) {
				return procResult(e.showBudgetNode(&dpparse.ShowBudget{}).run(ctx))
			},
		},
		{
			Name:     "dpsql_privacy_budget",
			Schema:   budgetSchema,
			ReadOnly: true,
			Function: func(ctx *sql.Context, table string) (sql.RowIter, error) {
				tn, err := parseTableArg(table)
				if err != nil {
					return procResult(nil, err)
				}
				return procResult(e.showBudgetNode(&dpparse.ShowBudget{Table: tn}).run(ctx))
			},
		},
	}
}

// SHOW PRIVACY LEDGER

// ledgerSchema is the result of SHOW PRIVACY LEDGER: one row per entry, in
// order. epsilon and delta are the total set by budget entries (NULL for
// charges); rho is the charge of other entries (0 for budget entries).
var ledgerSchema = sql.Schema{
	{Name: "id", Type: types.Uint64},
	{Name: "time", Type: types.DatetimeMaxPrecision},
	{Name: "user", Type: types.LongText},
	{Name: "statement", Type: types.LongText},
	{Name: "mechanism", Type: types.LongText, Nullable: true},
	{Name: "rho", Type: types.Float64},
	{Name: "status", Type: types.LongText},
	{Name: "note", Type: types.LongText, Nullable: true},
	{Name: "epsilon", Type: types.Float64, Nullable: true},
	{Name: "delta", Type: types.Float64, Nullable: true},
}

// showLedgerNode returns the node of SHOW PRIVACY LEDGER.
func (e *Engine) showLedgerNode(s *dpparse.ShowLedger) *dpNode {
	return &dpNode{stmt: s, schema: ledgerSchema, readOnly: true, run: func(ctx *sql.Context) ([]sql.Row, error) {
		return e.showLedger(ctx, s.Table)
	}}
}

// showLedger is SHOW PRIVACY LEDGER FOR t: the owner sees every entry, a
// SYNTHESIZE grantee only the entries recorded under their own account. A
// table without a budget has an empty ledger.
func (e *Engine) showLedger(ctx *sql.Context, tn dpparse.TableName) ([]sql.Row, error) {
	t, err := e.openTable(ctx, "SHOW PRIVACY LEDGER", tn, roleSynthesizer)
	if err != nil {
		return nil, err
	}
	entries, err := e.dp.ledger.Entries(t.LedgerKey(), "")
	if errors.Is(err, budget.ErrNoBudget) {
		return nil, nil
	}
	if err != nil {
		return nil, e.ledgerError(err)
	}
	mine := func(budget.Entry) bool { return true }
	if !e.isOwner(ctx, t) {
		// The account as recorded by ledgerUser, and the bare user name
		// for callers that record only that.
		user, _ := e.sessionAccount(ctx)
		acct := e.ledgerUser(ctx)
		mine = func(en budget.Entry) bool { return en.User == acct || en.User == user }
	}
	var rows []sql.Row
	for _, en := range entries {
		if !mine(en) {
			continue
		}
		var mech, note, eps, delta any
		if en.Mechanism != "" {
			mech = en.Mechanism
		}
		if en.Note != "" {
			note = en.Note
		}
		if en.Epsilon != 0 { // entries written before charges recorded (ε, δ) have none
			eps, delta = en.Epsilon, en.Delta
		}
		rows = append(rows, sql.Row{en.ID, en.Time.UTC(), en.User, en.Statement, mech, en.Rho, en.Status.String(), note, eps, delta})
	}
	return rows, nil
}

// showLedgerProcedure is CALL dpsql_privacy_ledger('t').
func (e *Engine) showLedgerProcedure() sql.ExternalStoredProcedureDetails {
	return sql.ExternalStoredProcedureDetails{
		Name:     "dpsql_privacy_ledger",
		Schema:   ledgerSchema,
		ReadOnly: true,
		Function: func(ctx *sql.Context, table string) (sql.RowIter, error) {
			tn, err := parseTableArg(table)
			if err != nil {
				return procResult(nil, err)
			}
			return procResult(e.showLedgerNode(&dpparse.ShowLedger{Table: tn}).run(ctx))
		},
	}
}

// privacyProcedures are the CALL twins of the budget, domain and grant
// statements.
func (e *Engine) privacyProcedures() []sql.ExternalStoredProcedureDetails {
	procs := []sql.ExternalStoredProcedureDetails{
		e.setBudgetProcedure(),
		e.showLedgerProcedure(),
		e.showDomainProcedure(),
	}
	procs = append(procs, e.showBudgetProcedures()...)
	procs = append(procs, e.setDomainProcedures()...)
	return append(procs, e.grantProcedures()...)
}
