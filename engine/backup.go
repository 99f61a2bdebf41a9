package engine

import (
	"fmt"
	"io"
	"os"
	"runtime"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
)

var _ sql.ExecSourceRel = (*Backup)(nil)

// backupChunk is the size of the LONGBLOB chunks BACKUP DPSQL returns. GMS
// buffers a few hundred rows between the iterator and the connection, so
// chunks stay small to bound the memory a slow client costs.
const backupChunk = 64 << 10

// backupSchema is the result of BACKUP DPSQL and CALL dpsql_backup(): the
// data file as consecutive chunks, each with its byte offset.
var backupSchema = sql.Schema{
	{Name: "offset", Type: types.Int64, Nullable: false},
	{Name: "data", Type: types.LongBlob, Nullable: false},
}

// Backup is the plan node of BACKUP DPSQL: a consistent copy of the whole
// data file (users and password hashes, grants, the server secret, raw
// tables, budgets, the ledger, synthetic tables), for superusers only.
//
// The copy is written, from one read transaction, to a temporary file in
// the data directory (unlinked at once where the OS allows, so a crash
// leaves nothing behind), then streamed from it: the transaction ends as
// soon as the copy is on disk, whatever the client's speed, and writers are
// never held up by a slow download.
type Backup struct {
	e *Engine
}

// Resolved implements sql.Node.
func (n *Backup) Resolved() bool { return true }

// String implements sql.Node.
func (n *Backup) String() string { return "BACKUP DPSQL" }

// Schema implements sql.Node.
func (n *Backup) Schema() sql.Schema { return backupSchema }

// Children implements sql.Node.
func (n *Backup) Children() []sql.Node { return nil }

// WithChildren implements sql.Node.
func (n *Backup) WithChildren(children ...sql.Node) (sql.Node, error) {
	if len(children) != 0 {
		return nil, sql.ErrInvalidChildrenNumber.New(n, len(children), 0)
	}
	return n, nil
}

// IsReadOnly implements sql.Node.
func (n *Backup) IsReadOnly() bool { return true }

// WithResolvedChildren implements the parser's Injectable.
func (n *Backup) WithResolvedChildren(children []any) (any, error) {
	if len(children) != 0 {
		return nil, sql.ErrInvalidChildrenNumber.New(n, len(children), 0)
	}
	return n, nil
}

// RowIter implements sql.ExecSourceRel.
func (n *Backup) RowIter(ctx *sql.Context, _ sql.Row) (sql.RowIter, error) {
	return n.e.backupRows(ctx)
}

// backupProcedure is CALL dpsql_backup(), the preparable twin of BACKUP
// DPSQL.
func (e *Engine) backupProcedure() sql.ExternalStoredProcedureDetails {
	return sql.ExternalStoredProcedureDetails{
		Name:     "dpsql_backup",
		Schema:   backupSchema,
		ReadOnly: true,
		Function: func(ctx *sql.Context) (sql.RowIter, error) { return e.backupRows(ctx) },
	}
}

// backupRows checks that the session's user is a superuser, copies the
// data file and returns the iterator over the copy.
func (e *Engine) backupRows(ctx *sql.Context) (sql.RowIter, error) {
	if err := e.needCatalog("BACKUP DPSQL"); err != nil {
		return nil, SQLError(err)
	}
	// The copy holds every raw row, password hash and the secret that keys
	// the DP noise: the SUPER privilege, as MySQL asks of its own backup
	// locks, and never an analyst.
	if !e.hasGlobalPrivilege(ctx, sql.PrivilegeType_Super) {
		return nil, denied(ctx, "SUPER", "BACKUP DPSQL (it copies every table, password hash and the server secret)")
	}
	f, err := os.CreateTemp(e.dataDir, ".backup-*.tmp")
	if err != nil {
		return nil, SQLError(ErrInternal.Wrap(err, "BACKUP DPSQL: creating the temporary copy"))
	}
	it := &backupIter{f: f, name: f.Name()}
	if runtime.GOOS != "windows" {
		os.Remove(it.name) // the open descriptor keeps the copy alive
	}
	size, err := e.dp.cat.Backup(f)
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		it.Close(ctx)
		return nil, SQLError(ErrInternal.Wrap(err, "BACKUP DPSQL"))
	}
	it.size = size
	e.log.Info("backup copied", "user", e.ledgerUser(ctx), "bytes", size)
	return it, nil
}

// backupIter streams the temporary copy in chunks.
type backupIter struct {
	f    *os.File
	name string
	off  int64
	size int64
}

// Next implements sql.RowIter.
func (it *backupIter) Next(ctx *sql.Context) (sql.Row, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if it.off >= it.size {
		return nil, io.EOF
	}
	b := make([]byte, min(backupChunk, it.size-it.off))
	if _, err := io.ReadFull(it.f, b); err != nil {
		return nil, SQLError(ErrInternal.Wrap(err, "BACKUP DPSQL: reading the temporary copy at byte %d", it.off))
	}
	row := sql.Row{it.off, b}
	it.off += int64(len(b))
	return row, nil
}

// Close implements sql.RowIter: the temporary copy is removed.
func (it *backupIter) Close(*sql.Context) error {
	if it.f == nil {
		return nil
	}
	err := it.f.Close()
	it.f = nil
	if rerr := os.Remove(it.name); rerr != nil && !os.IsNotExist(rerr) && err == nil {
		err = rerr
	}
	if err != nil {
		return fmt.Errorf("BACKUP DPSQL: removing the temporary copy: %w", err)
	}
	return nil
}
