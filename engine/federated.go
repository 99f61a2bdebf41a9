package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/analyzer"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"

	"github.com/dpsql/dpsql/catalog"
	"github.com/dpsql/dpsql/federated"
	"github.com/dpsql/dpsql/synth"
)

// FEDERATED source tables.
//
// A data owner declares a table whose rows stay in a remote database with
// MySQL's convention for remote tables:
//
//	CREATE TABLE census.big (age INT CHECK (age BETWEEN 0 AND 99), ...)
//	  ENGINE = FEDERATED CONNECTION = 'postgresql://user:pw@host:5432/db/public.adult'
//
// go-mysql-server parses and plans it as any CREATE TABLE (privileges,
// column types, CHECKs); an analyzer rule (federatedCreateRule) then
// replaces the plan by a createFederated node, which parses the connection,
// connects, checks the declared columns against the remote table and stores
// the declaration with the connection string in the catalog
// (catalog.CreateFederatedTable). Domains come from the declaration as for
// a local table (CHECKs, ENUMs, SET DOMAIN).
//
// The connection string's credentials are never shown: SHOW CREATE TABLE
// prints it masked, SHOW PROCESSLIST and the log mask it in statement
// texts (maskConnections), errors from the source go through
// federated.Redact. An owner reads the rows through (federatedTable, one
// remote scan per SELECT); writes are refused. CREATE SYNTHETIC TABLE reads
// the source through a snapshot that pushes every marginal down
// (synthesize.go, openRemoteData).

// Error kinds of federated tables, with MySQL's numbers for FEDERATED.
var (
	// ErrFederatedConnection: the CONNECTION string is missing or invalid
	// (MySQL ER_FOREIGN_DATA_STRING_INVALID_CANT_CREATE).
	ErrFederatedConnection = &Kind{"invalid federated connection", 1432, mysql.SSUnknownSQLState}
	// ErrFederatedSource: the source cannot be reached or a remote query
	// failed (MySQL ER_CONNECT_TO_FOREIGN_DATA_SOURCE).
	ErrFederatedSource = &Kind{"federated source unavailable", 1429, mysql.SSUnknownSQLState}
	// ErrFederatedTable: the declaration does not fit the remote table, or
	// the statement cannot make a FEDERATED table (MySQL
	// ER_CANT_CREATE_FEDERATED_TABLE).
	ErrFederatedTable = &Kind{"cannot create federated table", 1434, mysql.SSUnknownSQLState}
	// ErrFederatedReadOnly: a write into a FEDERATED table (MySQL
	// ER_OPEN_AS_READONLY).
	ErrFederatedReadOnly = &Kind{"federated table is read only", 1036, mysql.SSUnknownSQLState}
)

// federatedEngine is the ENGINE table option of a federated table.
const federatedEngine = "FEDERATED"

// remoteConnectTimeout bounds connecting to a source (and the column check
// of CREATE TABLE). Statements stay cancellable by KILL QUERY meanwhile.
const remoteConnectTimeout = 30 * time.Second

// remoteSource is what the engine uses of an open source
// (*federated.Source); tests substitute their own.
type remoteSource interface {
	CheckColumns(ctx context.Context, names []string) error
	Scan(ctx context.Context, names []string, fn func(row []any) error) error
	Snapshot(ctx context.Context, cols []federated.SnapshotColumn) (remoteSnapshot, error)
	Close() error
}

// remoteSnapshot is a source's consistent read-only view
// (*federated.Snapshot): a marginal oracle that knows whether it has sent a
// data query.
type remoteSnapshot interface {
	synth.Data
	Touched() bool
	Stats() federated.Stats
	Close() error
}

// remoteOpener connects to a source.
type remoteOpener func(ctx context.Context, c *federated.Conn) (remoteSource, error)

// openFederated is the engine's remoteOpener: the federated package.
func openFederated(ctx context.Context, c *federated.Conn) (remoteSource, error) {
	s, err := federated.Open(ctx, c)
	if err != nil {
		return nil, err
	}
	return federatedSource{s}, nil
}

// federatedSource adapts *federated.Source to remoteSource.
type federatedSource struct{ *federated.Source }

// Snapshot implements remoteSource.
func (s federatedSource) Snapshot(ctx context.Context, cols []federated.SnapshotColumn) (remoteSnapshot, error) {
	sn, err := s.Source.Snapshot(ctx, cols)
	if err != nil {
		return nil, err
	}
	return sn, nil
}

// remoteError is the error a client sees for a failure of the source of
// table. For an analyst (detail false) federated.Redact removes the remote
// text, which may quote data; the table's owner, who may read its rows
// anyway (read-through, or declaring it with the credentials), sees the
// remote message too (federated.Detail, password scrubbed).
func remoteError(ctx context.Context, table string, conn *federated.Conn, what string, err error, detail bool) error {
	if ctx.Err() != nil || errors.Is(err, context.Canceled) {
		return ErrCancelled.Wrap(context.Canceled, "statement cancelled")
	}
	if detail {
		return ErrFederatedSource.New("%s of %s: %s", what, table, remoteDetail(conn, err))
	}
	return ErrFederatedSource.New("%s of %s: %v", what, table, federated.Redact(err))
}

// remoteDetail is the full message of a source's error, for the table's
// owner and the log, with the password removed should a driver quote it.
func remoteDetail(conn *federated.Conn, err error) string {
	msg := federated.Detail(err)
	if conn != nil && conn.Password != "" {
		msg = strings.ReplaceAll(msg, conn.Password, "***")
	}
	return msg
}

// parseConnection parses the connection string of a federated table. Its
// errors never quote the string.
func parseConnection(s string) (*federated.Conn, error) {
	if strings.TrimSpace(s) == "" {
		return nil, ErrFederatedConnection.New("a FEDERATED table needs CONNECTION = 'postgresql://user:password@host:port/database/schema.table' or 'mysql://user:password@host:port/database/table'")
	}
	c, err := federated.ParseConnection(s)
	if err != nil {
		return nil, ErrFederatedConnection.New("CONNECTION: %s", scrubConnection(err.Error(), s))
	}
	return c, nil
}

// scrubConnection removes from msg the credentials of connection string
// conn (everything between "://" and the last '@' of its authority), should
// msg quote it.
func scrubConnection(msg, conn string) string {
	_, rest, ok := strings.Cut(conn, "://")
	if !ok {
		return strings.ReplaceAll(msg, conn, "<connection>")
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	if at := strings.LastIndexByte(rest, '@'); at > 0 {
		msg = strings.ReplaceAll(msg, rest[:at], "***")
	}
	return msg
}

// connectionText matches a CONNECTION table option and its string in a
// statement's text.
var connectionText = regexp.MustCompile(`(?i)(\bCONNECTION\s*=?\s*)('(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.|"")*")`)

// maskConnections returns the statement text q with the credentials of its
// CONNECTION strings masked, for SHOW PROCESSLIST and the log.
func maskConnections(q string) string {
	if !strings.Contains(strings.ToUpper(q), "CONNECTION") {
		return q
	}
	return connectionText.ReplaceAllStringFunc(q, func(m string) string {
		sub := connectionText.FindStringSubmatch(m)
		lit := sub[2]
		raw := lit[1 : len(lit)-1]
		if c, err := federated.ParseConnection(raw); err == nil {
			return sub[1] + "'" + strings.ReplaceAll(maskedConnection(c), "'", "''") + "'"
		}
		return sub[1] + "'" + scrubConnection(raw, raw) + "'"
	})
}

// maskStatement masks the credentials of a statement's text: its
// CONNECTION strings and any other URL with a password.
func maskStatement(q string) string {
	return maskCredentials(maskConnections(q))
}

// urlCredentials matches the password of a URL's user information.
var urlCredentials = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://[^:/@\s'"]*:)[^@\s'"]*@`)

// maskCredentials masks the passwords of the URLs in s.
func maskCredentials(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	return urlCredentials.ReplaceAllString(s, "${1}***@")
}

// maskErrorCredentials masks URL passwords in an error a client is sent
// (the MySQL parser may quote a statement's CONNECTION string in a syntax
// error).
func maskErrorCredentials(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if maskCredentials(msg) == msg {
		return err
	}
	var se *mysql.SQLError
	if errors.As(err, &se) {
		return mysql.NewSQLError(se.Num, se.State, "%s", maskCredentials(se.Message))
	}
	return errors.New(maskCredentials(msg))
}

// ruleFederatedCreate is the analyzer rule of federatedCreateRule.
const ruleFederatedCreate analyzer.RuleId = 10200

// addFederatedRule runs federatedCreateRule last in the post-analyzer
// batch, after quoteCheckColumns has made the CHECK texts storable.
func (e *Engine) addFederatedRule() {
	for _, b := range e.sqle.Analyzer.Batches {
		if b.Desc == "post-analyzer" {
			b.Rules = append(b.Rules, analyzer.Rule{Id: ruleFederatedCreate, Apply: e.federatedCreateRule})
		}
	}
}

// federatedCreateRule replaces a CREATE TABLE with ENGINE = FEDERATED by
// a createFederated node (go-mysql-server has checked the CREATE privilege
// while building the plan), and the CHECK added to a federated table by a
// node that declares it without reading the remote rows to validate it: a
// CHECK there declares a public domain, and dpsql cannot enforce it on the
// source anyway (values outside the domain are clipped when encoded).
func (e *Engine) federatedCreateRule(_ *sql.Context, _ *analyzer.Analyzer, n sql.Node, _ *plan.Scope, _ analyzer.RuleSelector, _ *sql.QueryFlags) (sql.Node, transform.TreeIdentity, error) {
	return transform.Node(n, func(n sql.Node) (sql.Node, transform.TreeIdentity, error) {
		switch n := n.(type) {
		case *plan.CreateTable:
			engine, _ := n.TableOpts["engine"].(string)
			if strings.EqualFold(engine, federatedEngine) {
				return &createFederated{e: e, ct: n}, transform.NewTree, nil
			}
		case *plan.CreateCheck:
			if n.Table != nil {
				if ft, ok := n.Table.Table.(*federatedTable); ok {
					return &declareCheck{t: ft, check: n.Check}, transform.NewTree, nil
				}
			}
		}
		return n, transform.SameTree, nil
	})
}

var _ sql.ExecSourceRel = (*declareCheck)(nil)

// declareCheck adds a CHECK constraint to a federated table without
// validating the remote rows.
type declareCheck struct {
	t     *federatedTable
	check *sql.CheckConstraint
}

// Resolved implements sql.Node.
func (n *declareCheck) Resolved() bool { return true }

// String implements sql.Node.
func (n *declareCheck) String() string { return "ADD CHECK ON FEDERATED " + n.t.Name() }

// Schema implements sql.Node.
func (n *declareCheck) Schema() sql.Schema { return types.OkResultSchema }

// Children implements sql.Node.
func (n *declareCheck) Children() []sql.Node { return nil }

// WithChildren implements sql.Node.
func (n *declareCheck) WithChildren(children ...sql.Node) (sql.Node, error) {
	if len(children) != 0 {
		return nil, sql.ErrInvalidChildrenNumber.New(n, len(children), 0)
	}
	return n, nil
}

// IsReadOnly implements sql.Node.
func (n *declareCheck) IsReadOnly() bool { return false }

// RowIter implements sql.ExecSourceRel.
func (n *declareCheck) RowIter(ctx *sql.Context, _ sql.Row) (sql.RowIter, error) {
	def, err := plan.NewCheckDefinition(ctx, n.check)
	if err != nil {
		return nil, err
	}
	if err := n.t.CreateCheck(ctx, def); err != nil {
		return nil, err
	}
	return sql.RowsToRowIter(sql.Row{types.NewOkResult(0)}), nil
}

var _ sql.ExecSourceRel = (*createFederated)(nil)

// createFederated is the plan node of CREATE TABLE ... ENGINE = FEDERATED.
type createFederated struct {
	e  *Engine
	ct *plan.CreateTable
}

// Resolved implements sql.Node.
func (n *createFederated) Resolved() bool { return true }

// String implements sql.Node. It never shows the connection.
func (n *createFederated) String() string {
	return fmt.Sprintf("CREATE TABLE %s ENGINE=FEDERATED", n.ct.Name())
}

// Schema implements sql.Node.
func (n *createFederated) Schema() sql.Schema { return types.OkResultSchema }

// Children implements sql.Node.
func (n *createFederated) Children() []sql.Node { return nil }

// WithChildren implements sql.Node.
func (n *createFederated) WithChildren(children ...sql.Node) (sql.Node, error) {
	if len(children) != 0 {
		return nil, sql.ErrInvalidChildrenNumber.New(n, len(children), 0)
	}
	return n, nil
}

// IsReadOnly implements sql.Node.
func (n *createFederated) IsReadOnly() bool { return false }

// RowIter implements sql.ExecSourceRel.
func (n *createFederated) RowIter(ctx *sql.Context, _ sql.Row) (sql.RowIter, error) {
	if err := n.e.createFederated(ctx, n.ct); err != nil {
		return nil, SQLError(err)
	}
	return sql.RowsToRowIter(sql.Row{types.NewOkResult(0)}), nil
}

// createFederated validates and stores a FEDERATED table. Nothing is
// created unless the source answers and its columns are the declared ones.
func (e *Engine) createFederated(ctx *sql.Context, ct *plan.CreateTable) error {
	if err := e.needCatalog("CREATE TABLE ... ENGINE = FEDERATED"); err != nil {
		return err
	}
	db, name := ct.Database().Name(), ct.Name()
	table := quoteIdent(db) + "." + quoteIdent(name)
	switch {
	case ct.Temporary():
		return ErrFederatedTable.New("a FEDERATED table cannot be TEMPORARY")
	case ct.Like() != nil || ct.Select() != nil:
		return ErrFederatedTable.New("CREATE TABLE ... LIKE or ... SELECT cannot make a FEDERATED table: declare its columns")
	case len(ct.ForeignKeys()) > 0:
		return ErrFederatedTable.New("a FEDERATED table cannot have foreign keys")
	}
	for _, idx := range ct.Indexes() {
		if !idx.IsPrimary() {
			return ErrFederatedTable.New("a FEDERATED table cannot have indexes (index %s): the source keeps its own", quoteIdent(idx.Name))
		}
	}
	sch := ct.PkSchema()
	names := make([]string, len(sch.Schema))
	for i, c := range sch.Schema {
		if c.AutoIncrement || c.Generated != nil {
			return ErrFederatedTable.New("column %s of a FEDERATED table cannot be AUTO_INCREMENT or generated: its values come from the source", quoteIdent(c.Name))
		}
		names[i] = c.Name
	}
	raw, _ := ct.TableOpts["connection"].(string)
	conn, err := parseConnection(raw)
	if err != nil {
		return err
	}
	if _, exists, err := e.dp.cat.TableID(db, name); err != nil {
		return ErrInternal.Wrap(err, "looking up %s", table)
	} else if exists {
		if ct.IfNotExists() {
			ctx.Warn(1050, "Table '%s' already exists", name)
			return nil
		}
		return ErrExists.New("Table '%s' already exists", name)
	}
	var checks []sql.CheckDefinition
	for _, c := range ct.Checks() {
		def, err := plan.NewCheckDefinition(ctx, c)
		if err != nil {
			return ErrFederatedTable.Wrap(err, "CHECK constraint of %s", table)
		}
		checks = append(checks, *def)
	}

	cctx, cancel := context.WithTimeout(ctx, remoteConnectTimeout)
	defer cancel()
	src, err := e.remote(cctx, conn)
	if err != nil {
		return remoteError(ctx, table, conn, "cannot connect to the source "+sourceName(conn), err, true)
	}
	defer src.Close()
	if err := src.CheckColumns(cctx, names); err != nil {
		if ctx.Err() != nil {
			return ErrCancelled.Wrap(ctx.Err(), "statement cancelled")
		}
		return ErrFederatedTable.New("the columns of %s do not match the source table %s: %s", table, sourceName(conn), remoteDetail(conn, err))
	}
	comment, _ := ct.TableOpts["comment"].(string)
	if _, err := e.dp.cat.CreateFederatedTable(ctx, db, name, sch, ct.Collation, comment, checks, conn.String()); err != nil {
		if sql.ErrTableAlreadyExists.Is(err) {
			if ct.IfNotExists() {
				ctx.Warn(1050, "Table '%s' already exists", name)
				return nil
			}
			return ErrExists.New("Table '%s' already exists", name)
		}
		return ErrInternal.Wrap(err, "creating %s", table)
	}
	e.log.Info("federated table created", "table", db+"."+name, "source", maskedConnection(conn))
	return nil
}

// maskedConnection is c's connection string with the password as ***
// (federated.Conn.Masked escapes the asterisks as a URL would).
func maskedConnection(c *federated.Conn) string {
	return strings.Replace(c.Masked(), ":%2A%2A%2A@", ":***@", 1)
}

// sourceName names a source in messages: driver, host, port, database and
// table, never the credentials.
func sourceName(c *federated.Conn) string {
	t := c.Table
	if c.Schema != "" {
		t = c.Schema + "." + t
	}
	return fmt.Sprintf("%s://%s:%d/%s/%s", c.Driver, c.Host, c.Port, c.Database, t)
}

// federatedTables wraps the federated tables of the catalog databases the
// provider serves: they read through to their source and refuse writes.
func (e *Engine) federatedTables(t sql.Table) sql.Table {
	ct, ok := t.(*catalog.Table)
	if !ok || !ct.Federated() {
		return t
	}
	return &federatedTable{t: ct, e: e}
}

var (
	_ sql.Table               = (*federatedTable)(nil)
	_ sql.PrimaryKeyTable     = (*federatedTable)(nil)
	_ sql.CommentedTable      = (*federatedTable)(nil)
	_ sql.CheckAlterableTable = (*federatedTable)(nil)
	_ sql.InsertableTable     = (*federatedTable)(nil)
	_ sql.UpdatableTable      = (*federatedTable)(nil)
	_ sql.DeletableTable      = (*federatedTable)(nil)
	_ sql.ReplaceableTable    = (*federatedTable)(nil)
	_ sql.TruncateableTable   = (*federatedTable)(nil)
	_ sql.TableWrapper        = (*federatedTable)(nil)
	_ sql.RowInserter         = readOnlyEditor{}
	_ sql.RowReplacer         = readOnlyEditor{}
	_ sql.RowUpdater          = readOnlyEditor{}
	_ sql.RowDeleter          = readOnlyEditor{}
	_ sql.PartitionIter       = (*onePartition)(nil)
	_ sql.RowIter             = (*remoteRows)(nil)
	_ sql.CheckTable          = (*federatedTable)(nil)
)

// federatedTable is a FEDERATED table as SQL sees it: its declaration, its
// rows read from the source (one remote scan per read), no writes.
type federatedTable struct {
	t *catalog.Table
	e *Engine
}

// Underlying implements sql.TableWrapper.
func (f *federatedTable) Underlying() sql.Table { return f.t }

// Name implements sql.Table.
func (f *federatedTable) Name() string { return f.t.Name() }

// String implements sql.Table.
func (f *federatedTable) String() string { return f.t.String() }

// Schema implements sql.Table.
func (f *federatedTable) Schema() sql.Schema { return f.t.Schema() }

// PrimaryKeySchema implements sql.PrimaryKeyTable.
func (f *federatedTable) PrimaryKeySchema() sql.PrimaryKeySchema { return f.t.PrimaryKeySchema() }

// Collation implements sql.Table.
func (f *federatedTable) Collation() sql.CollationID { return f.t.Collation() }

// Comment implements sql.CommentedTable.
func (f *federatedTable) Comment() string { return f.t.Comment() }

// GetChecks implements sql.CheckTable.
func (f *federatedTable) GetChecks(ctx *sql.Context) ([]sql.CheckDefinition, error) {
	return f.t.GetChecks(ctx)
}

// CreateCheck implements sql.CheckAlterableTable: CHECKs declare domains.
func (f *federatedTable) CreateCheck(ctx *sql.Context, c *sql.CheckDefinition) error {
	return f.t.CreateCheck(ctx, c)
}

// DropCheck implements sql.CheckAlterableTable.
func (f *federatedTable) DropCheck(ctx *sql.Context, name string) error {
	return f.t.DropCheck(ctx, name)
}

// readOnly is the error of every write.
func (f *federatedTable) readOnly() error {
	return SQLError(ErrFederatedReadOnly.New("%s.%s is a FEDERATED table: its rows live in its source database, which dpsql does not write", quoteIdent(f.t.Database()), quoteIdent(f.t.Name())))
}

// Inserter implements sql.InsertableTable: every row is refused.
func (f *federatedTable) Inserter(*sql.Context) sql.RowInserter { return readOnlyEditor{f.readOnly()} }

// Updater implements sql.UpdatableTable.
func (f *federatedTable) Updater(*sql.Context) sql.RowUpdater { return readOnlyEditor{f.readOnly()} }

// Deleter implements sql.DeletableTable.
func (f *federatedTable) Deleter(*sql.Context) sql.RowDeleter { return readOnlyEditor{f.readOnly()} }

// Replacer implements sql.ReplaceableTable.
func (f *federatedTable) Replacer(*sql.Context) sql.RowReplacer { return readOnlyEditor{f.readOnly()} }

// Truncate implements sql.TruncateableTable.
func (f *federatedTable) Truncate(*sql.Context) (int, error) { return 0, f.readOnly() }

// readOnlyEditor refuses every row with err.
type readOnlyEditor struct{ err error }

func (r readOnlyEditor) StatementBegin(*sql.Context)                 {}
func (r readOnlyEditor) DiscardChanges(*sql.Context, error) error    { return nil }
func (r readOnlyEditor) StatementComplete(*sql.Context) error        { return nil }
func (r readOnlyEditor) Close(*sql.Context) error                    { return nil }
func (r readOnlyEditor) Insert(*sql.Context, sql.Row) error          { return r.err }
func (r readOnlyEditor) Update(*sql.Context, sql.Row, sql.Row) error { return r.err }
func (r readOnlyEditor) Delete(*sql.Context, sql.Row) error          { return r.err }

// Partitions implements sql.Table: one partition, the remote table.
func (f *federatedTable) Partitions(*sql.Context) (sql.PartitionIter, error) {
	return &onePartition{}, nil
}

// onePartition iterates over the single partition of a federated table.
type onePartition struct{ done bool }

func (p *onePartition) Next(*sql.Context) (sql.Partition, error) {
	if p.done {
		return nil, io.EOF
	}
	p.done = true
	return remotePartition{}, nil
}

func (p *onePartition) Close(*sql.Context) error { return nil }

// remotePartition is the partition of a federated table.
type remotePartition struct{}

// Key implements sql.Partition.
func (remotePartition) Key() []byte { return []byte("remote") }

// PartitionRows implements sql.Table: the source's rows, read by a remote
// scan that runs while the rows are consumed and stops with the statement.
func (f *federatedTable) PartitionRows(ctx *sql.Context, _ sql.Partition) (sql.RowIter, error) {
	table := quoteIdent(f.t.Database()) + "." + quoteIdent(f.t.Name())
	conn, err := federated.ParseConnection(f.t.Connection())
	if err != nil {
		return nil, SQLError(ErrFederatedConnection.New("the stored connection of %s is invalid", table))
	}
	sch := f.t.Schema()
	names := make([]string, len(sch))
	for i, c := range sch {
		names[i] = c.Name
	}
	sctx, cancel := context.WithCancel(ctx)
	it := &remoteRows{sch: sch, rows: make(chan []any, 256), cancel: cancel, done: make(chan struct{})}
	cctx, ccancel := context.WithTimeout(sctx, remoteConnectTimeout)
	src, err := f.e.remote(cctx, conn)
	ccancel()
	if err != nil {
		cancel()
		return nil, SQLError(remoteError(ctx, table, conn, "cannot connect to the source "+sourceName(conn), err, true))
	}
	go func() {
		defer close(it.done)
		defer close(it.rows)
		defer src.Close()
		err := src.Scan(sctx, names, func(vals []any) error {
			// The scan reuses vals; the statement's goroutine converts
			// the copy (Next).
			select {
			case it.rows <- slices.Clone(vals):
				return nil
			case <-sctx.Done():
				return sctx.Err()
			}
		})
		if err != nil && sctx.Err() == nil {
			var ee *Error
			if !errors.As(err, &ee) {
				err = remoteError(ctx, table, conn, "reading the source", err, true)
			}
			it.err = SQLError(err)
		}
	}()
	return it, nil
}

// remoteRow converts the values of a remote row to the declared types.
func remoteRow(ctx *sql.Context, sch sql.Schema, vals []any) (sql.Row, error) {
	if len(vals) != len(sch) {
		return nil, ErrFederatedSource.New("the source returned %d columns, want %d", len(vals), len(sch))
	}
	row := make(sql.Row, len(vals))
	for i, v := range vals {
		if b, ok := v.([]byte); ok {
			v = string(b)
		}
		if v == nil {
			continue
		}
		x, _, err := sch[i].Type.Convert(ctx, v)
		if err != nil {
			// The value is the source's data: name the column only.
			return nil, ErrFederatedSource.New("a value of column %s does not fit its declared type %s", quoteIdent(sch[i].Name), sch[i].Type.String())
		}
		row[i] = x
	}
	return row, nil
}

// remoteRows is the row iterator of a remote scan: a goroutine runs the
// scan and hands over the raw values, converted in Next.
type remoteRows struct {
	sch    sql.Schema
	rows   chan []any
	cancel context.CancelFunc
	done   chan struct{}
	err    error // set by the scan before rows is closed
}

// Next implements sql.RowIter.
func (r *remoteRows) Next(ctx *sql.Context) (sql.Row, error) {
	select {
	case vals, ok := <-r.rows:
		if ok {
			row, err := remoteRow(ctx, r.sch, vals)
			if err != nil {
				return nil, SQLError(err)
			}
			return row, nil
		}
		if r.err != nil {
			return nil, r.err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close implements sql.RowIter: it stops the scan and waits for it.
func (r *remoteRows) Close(*sql.Context) error {
	r.cancel()
	<-r.done
	return nil
}

// isFederated reports whether db.name is a FEDERATED table.
func (e *Engine) isFederated(ctx *sql.Context, db, name string) bool {
	if e.dp.cat == nil {
		return false
	}
	t, ok, err := e.dp.cat.Table(ctx, db, name)
	return err == nil && ok && t.Federated()
}

// showCreateFederated patches SHOW CREATE TABLE of a FEDERATED table:
// ENGINE=FEDERATED and its connection, masked, as MySQL prints them.
// mysqldump reads the same text (and, seeing the engine in SHOW TABLE
// STATUS, skips the table's rows, as it does for MySQL's FEDERATED tables).
func (e *Engine) showCreateFederated(n *plan.ShowCreateTable) func(*sql.Context, []sql.Row) ([]sql.Row, error) {
	return func(_ *sql.Context, rows []sql.Row) ([]sql.Row, error) {
		var ct *catalog.Table
		transform.Inspect(n.Child, func(c sql.Node) bool {
			if rt, ok := c.(*plan.ResolvedTable); ok {
				ct, _ = sql.GetUnderlyingTable(rt.Table).(*catalog.Table)
			}
			return ct == nil
		})
		if ct == nil || !ct.Federated() {
			return rows, nil
		}
		masked := "<invalid>"
		if c, err := federated.ParseConnection(ct.Connection()); err == nil {
			masked = maskedConnection(c)
		}
		for _, r := range rows {
			if s, ok := r[1].(string); ok && len(r) > 1 {
				r[1] = federatedCreateText(s, masked)
			}
		}
		return rows, nil
	}
}

// federatedCreateText turns go-mysql-server's CREATE TABLE text into that
// of a FEDERATED table with the (masked) connection.
func federatedCreateText(s, masked string) string {
	const innodb = "\n) ENGINE=InnoDB"
	if i := strings.Index(s, innodb); i >= 0 {
		s = s[:i] + "\n) ENGINE=" + federatedEngine + s[i+len(innodb):]
	}
	return s + " CONNECTION='" + strings.ReplaceAll(masked, "'", "''") + "'"
}
