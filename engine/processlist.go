package engine

import (
	"sort"
	"strconv"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

// Who sees which threads in SHOW PROCESSLIST and
// information_schema.processlist, and what their State says.
//
// As in MySQL, every user sees the threads of connections authenticated
// with their user name, and a user holding the global PROCESS privilege
// sees all of them: a thread's Info is the text of its statement (an
// owner's INSERT of raw values, say), which must not reach anyone else.
// GMS requires PROCESS to see anything; dpsql lifts the planbuilder's check
// of SHOW PROCESSLIST (dpAuthHandler, access.go) and serves both from the
// filtered list below (showProcessList, replacing GMS's node in
// compatNodes, and processListReader for information_schema).
//
// A thread's State is one line: GMS renders every progress entry as a tree
// (a newline, its name, then "(done/total partitions)"), which turns
// dpsql's synthesis progress (synthProgress) into a multi-line State with
// a stray "(0/? partitions)". Here an entry whose name starts with
// synthStatePrefix is shown as its name alone, GMS's own table-scan entries
// as "name (done/total partitions)", joined by ", "; a thread running a
// statement without (named) progress entries is "running", as in GMS.

// visibleProcesses returns the threads the session's user may see.
//
// GMS records a thread's user only when its connection selects a database
// (COM_INIT_DB), so a client that connects without one runs as
// "unauthenticated user" in GMS's list. The user is taken from the
// connection's session instead; a thread without a session has not run
// anything yet and belongs to no one.
func (e *Engine) visibleProcesses(ctx *sql.Context) []sql.Process {
	if ctx.ProcessList == nil {
		return nil
	}
	procs := ctx.ProcessList.Processes()
	if e.srv != nil {
		users := make(map[uint32]string)
		_ = e.srv.SessionManager().Iter(func(s sql.Session) (bool, error) {
			users[s.ID()] = s.Client().User
			return false, nil
		})
		for i, p := range procs {
			if u, ok := users[p.Connection]; ok {
				procs[i].User = u
			} else if p.Command == sql.ProcessCommandConnect {
				procs[i].User = "unauthenticated user"
			}
		}
	}
	if e.hasGlobalPrivilege(ctx, sql.PrivilegeType_Process) {
		return procs
	}
	user := ctx.Session.Client().User
	out := procs[:0]
	for _, p := range procs {
		if p.User == user && p.Command != sql.ProcessCommandConnect {
			out = append(out, p)
		}
	}
	return out
}

// processState is the State of thread p.
func processState(p sql.Process) string {
	names := make([]string, 0, len(p.Progress))
	for name := range p.Progress {
		names = append(names, name)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, name := range names {
		switch {
		case strings.HasPrefix(name, synthStatePrefix):
			parts = append(parts, name)
		case name != "": // GMS's entry for a query without tables has no name
			parts = append(parts, p.Progress[name].String())
		}
	}
	if len(parts) == 0 && p.Command == sql.ProcessCommandQuery {
		return "running"
	}
	return strings.Join(parts, ", ")
}

// processListReader is the reader of information_schema.processlist.
func (e *Engine) processListReader(ctx *sql.Context, _ sql.Catalog) (sql.RowIter, error) {
	return e.processRows(ctx, func(id uint32, secs uint64) (any, any) { return uint64(id), int32(secs) }), nil
}

var _ sql.ExecSourceRel = (*showProcessList)(nil)

// processListSchema is GMS's schema of SHOW [FULL] PROCESSLIST.
var processListSchema = sql.Schema{
	{Name: "Id", Type: types.Int64},
	{Name: "User", Type: types.LongText},
	{Name: "Host", Type: types.LongText},
	{Name: "db", Type: types.LongText},
	{Name: "Command", Type: types.LongText},
	{Name: "Time", Type: types.Int64},
	{Name: "State", Type: types.LongText},
	{Name: "Info", Type: types.LongText},
}

// showProcessList is SHOW [FULL] PROCESSLIST over visibleProcesses.
type showProcessList struct {
	e *Engine
}

// Resolved implements sql.Node.
func (n *showProcessList) Resolved() bool { return true }

// String implements sql.Node.
func (n *showProcessList) String() string { return "ProcessList" }

// Schema implements sql.Node.
func (n *showProcessList) Schema() sql.Schema { return processListSchema }

// Children implements sql.Node.
func (n *showProcessList) Children() []sql.Node { return nil }

// WithChildren implements sql.Node.
func (n *showProcessList) WithChildren(children ...sql.Node) (sql.Node, error) {
	if len(children) != 0 {
		return nil, sql.ErrInvalidChildrenNumber.New(n, len(children), 0)
	}
	return n, nil
}

// IsReadOnly implements sql.Node.
func (n *showProcessList) IsReadOnly() bool { return true }

// RowIter implements sql.ExecSourceRel.
func (n *showProcessList) RowIter(ctx *sql.Context, _ sql.Row) (sql.RowIter, error) {
	return n.e.processRows(ctx, func(id uint32, secs uint64) (any, any) { return int64(id), int64(secs) }), nil
}

// ownsThread reports whether connection id (a KILL's literal) runs under
// the session's own account.
func (e *Engine) ownsThread(ctx *sql.Context, id *ast.SQLVal) bool {
	if e.srv == nil || id == nil || id.Type != ast.IntVal {
		return false
	}
	target, err := strconv.ParseUint(string(id.Val), 10, 32)
	if err != nil {
		return false
	}
	user, host := e.sessionAccount(ctx)
	owns := false
	_ = e.srv.SessionManager().Iter(func(s sql.Session) (bool, error) {
		if uint64(s.ID()) != target {
			return false, nil
		}
		c := s.Client()
		tu, th := e.accountOf(c.User, c.Address)
		owns = tu == user && th == host
		return true, nil
	})
	return owns
}

// processRows returns the visible threads as rows of SHOW PROCESSLIST and
// information_schema.processlist, which type the id and time columns
// differently (typed gives them).
func (e *Engine) processRows(ctx *sql.Context, typed func(id uint32, secs uint64) (any, any)) sql.RowIter {
	procs := e.visibleProcesses(ctx)
	rows := make([]sql.Row, len(procs))
	for i, p := range procs {
		var db any
		if p.Database != "" {
			db = p.Database
		}
		id, secs := typed(p.Connection, p.Seconds())
		rows[i] = sql.Row{id, p.User, p.Host, db, string(p.Command), secs, processState(p), maskStatement(p.Query)}
	}
	return sql.RowsToRowIter(rows...)
}
