package engine

import (
	"fmt"
	"strings"
	"sync"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/analyzer"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

// Notes on answers from synthetic rows.
//
// A SELECT that reads a synthetic table with a model but is not answered
// from the model gets a Note-level warning (SHOW WARNINGS) per such table:
// "answered from the synthetic rows of db.t, not the model: <reason>", so
// that a rephrasing that changes the answer's source never goes unseen.
//
// The parser decides the routing, but go-mysql-server clears a statement's
// warnings after parsing it, so the parser leaves the notes pending for the
// session and an analyzer rule (once-before, on the top-level plan) emits
// those whose table the analyzed statement really reads, then drops them.
// Every statement the parser sees first drops what an earlier one left (one
// that failed before its analysis).

// codeAnsweredFromRows is the code of the note.
const codeAnsweredFromRows = 9117

// ruleRowsNotes is the analyzer rule of emitRowsNotes.
const ruleRowsNotes analyzer.RuleId = 10200

// reasonNotAlone is why a synthetic table that is not a SELECT's only
// table is read from its rows.
const reasonNotAlone = "the model answers a SELECT whose FROM is this table alone"

// rowsNote is a pending note: a table read from its rows, and why; cells
// marks an answers-only table, whose rows are its released cells.
type rowsNote struct {
	db, name, reason string
	cells            bool
}

// message is the note's text.
func (n rowsNote) message() string {
	t := quoteIdent(n.db) + "." + quoteIdent(n.name)
	if n.cells {
		return fmt.Sprintf("answered from the cells of the answers-only table %s (one row per released cell), not from its noisy counts: %s", t, n.reason)
	}
	return fmt.Sprintf("answered from the synthetic rows of %s, not the model: %s", t, n.reason)
}

// maxPendingNotes bounds the sessions with pending notes; a session's notes
// are dropped by its next statement, so only sessions that closed right
// after a failed statement leave some behind.
const maxPendingNotes = 1 << 12

// rowsNotes holds the pending notes of each session.
type rowsNotes struct {
	mu      sync.Mutex
	pending map[uint32][]rowsNote
}

// set replaces the pending notes of session id.
func (r *rowsNotes) set(id uint32, notes []rowsNote) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(notes) == 0 {
		delete(r.pending, id)
		return
	}
	if r.pending == nil || len(r.pending) >= maxPendingNotes {
		r.pending = map[uint32][]rowsNote{}
	}
	r.pending[id] = notes
}

// take returns and drops the pending notes of session id.
func (r *rowsNotes) take(id uint32) []rowsNote {
	r.mu.Lock()
	defer r.mu.Unlock()
	notes := r.pending[id]
	delete(r.pending, id)
	return notes
}

// noteRows leaves pending, for the session of ctx, a note for each
// synthetic table with a model that sel reads from its rows: sel is not
// answered from a model (r, which may be nil, is its routing, for the
// reason).
func (e *Engine) noteRows(ctx *sql.Context, sel ast.SQLNode, r *routed) {
	var notes []rowsNote
	seen := map[string]bool{}
	for _, tn := range fromTables(sel) {
		db, name := tn.DbQualifier.String(), tn.Name.String()
		if db == "" {
			db = ctx.GetCurrentDatabase()
		}
		key := strings.ToLower(db) + "." + strings.ToLower(name)
		if db == "" || seen[key] || strings.EqualFold(db, "information_schema") || strings.EqualFold(db, "mysql") {
			continue
		}
		seen[key] = true
		syn, err := e.answers.lookup(ctx, db, name)
		if err != nil || syn == nil {
			continue
		}
		reason := reasonNotAlone
		if r != nil && strings.EqualFold(r.db, db) && strings.EqualFold(r.name, name) && r.reason != "" {
			reason = r.reason
		} else if syn.answersOnly() {
			continue // joins and subqueries read the cells as any table
		}
		notes = append(notes, rowsNote{db: db, name: name, reason: reason, cells: syn.answersOnly()})
	}
	e.answers.notes.set(ctx.Session.ID(), notes)
}

// fromTables returns the tables named in the FROM clauses of n, its
// subqueries and derived tables included.
func fromTables(n ast.SQLNode) []ast.TableName {
	var out []ast.TableName
	_ = ast.Walk(func(n ast.SQLNode) (bool, error) {
		if at, ok := n.(*ast.AliasedTableExpr); ok {
			if tn, ok := at.Expr.(ast.TableName); ok && !tn.Name.IsEmpty() {
				out = append(out, tn)
			}
		}
		return true, nil
	}, n)
	return out
}

// emitRowsNotes is the analyzer rule that emits the session's pending
// notes whose table the top-level plan n reads.
func (e *Engine) emitRowsNotes(ctx *sql.Context, _ *analyzer.Analyzer, n sql.Node, scope *plan.Scope, _ analyzer.RuleSelector, _ *sql.QueryFlags) (sql.Node, transform.TreeIdentity, error) {
	if !scope.IsEmpty() || ctx.Session == nil {
		return n, transform.SameTree, nil
	}
	notes := e.answers.notes.take(ctx.Session.ID())
	for _, note := range notes {
		if readsTable(n, note.db, note.name) {
			ctx.Session.Warn(&sql.Warning{
				Level:   "Note",
				Code:    codeAnsweredFromRows,
				Message: note.message(),
			})
		}
	}
	return n, transform.SameTree, nil
}

// readsTable reports whether the plan n reads the table db.name, in a
// subquery or not.
func readsTable(n sql.Node, db, name string) bool {
	found := false
	var visit func(sql.Node)
	visit = func(n sql.Node) {
		transform.Inspect(n, func(n sql.Node) bool {
			if rt, ok := n.(*plan.ResolvedTable); ok && rt.SqlDatabase != nil &&
				strings.EqualFold(rt.SqlDatabase.Name(), db) && strings.EqualFold(rt.Name(), name) {
				found = true
			}
			if x, ok := n.(sql.Expressioner); ok && !found {
				for _, ex := range x.Expressions() {
					sql.Inspect(ex, func(ex sql.Expression) bool {
						if sq, ok := ex.(*plan.Subquery); ok {
							visit(sq.Query)
						}
						return !found
					})
				}
			}
			return !found
		})
	}
	visit(n)
	return found
}
