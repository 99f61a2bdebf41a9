package federated

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
)

// Source is an open connection to a remote table's database. It is safe
// for concurrent use; Scan and Snapshot each use a connection of their own.
type Source struct {
	conn *Conn

	pgConfig *pgx.ConnConfig // Postgres
	db       *sql.DB         // MySQL (a pool)

	mu   sync.Mutex
	meta *pgx.Conn // Postgres: metadata queries
}

// Column is a column of the remote table.
type Column struct {
	Name     string
	Type     string // the remote type name (information_schema data_type)
	Nullable bool

	class    typeClass
	unsigned bool // MySQL integer types
}

const connectTimeout = 15 * time.Second

// Open connects to c's database and checks that it answers. It does not
// check the table; see Columns.
func Open(ctx context.Context, c *Conn) (*Source, error) {
	s := &Source{conn: c}
	switch c.Driver {
	case Postgres:
		cfg, err := pgConfig(c)
		if err != nil {
			return nil, err
		}
		s.pgConfig = cfg
		conn, err := s.pgConnect(ctx)
		if err != nil {
			return nil, err
		}
		s.meta = conn
	case MySQL:
		cfg, err := mysqlConfig(c)
		if err != nil {
			return nil, err
		}
		connector, err := mysql.NewConnector(cfg)
		if err != nil {
			return nil, s.newError("connect", ErrConnect, err)
		}
		s.db = sql.OpenDB(connector)
		s.db.SetMaxIdleConns(2)
		pctx, cancel := context.WithTimeout(ctx, connectTimeout)
		defer cancel()
		if err := s.db.PingContext(pctx); err != nil {
			s.db.Close()
			return nil, s.newError("connect", connectKind(err), err)
		}
	default:
		return nil, fmt.Errorf("federated: unknown driver %q", c.Driver)
	}
	return s, nil
}

// pgConfig builds pgx's configuration from fields, never from the
// environment or a password file, with TLS per the ssl* parameters.
func pgConfig(c *Conn) (*pgx.ConnConfig, error) {
	kv := []string{
		"host=" + pgQuoteDSN(c.Host),
		"port=" + strconv.Itoa(c.Port),
		"user=" + pgQuoteDSN(c.User),
		"password=" + pgQuoteDSN(c.Password),
		"dbname=" + pgQuoteDSN(c.Database),
		"connect_timeout=" + strconv.Itoa(int(connectTimeout/time.Second)),
		"sslmode=" + pgQuoteDSN(cmpOr(c.Params.Get("sslmode"), "prefer")),
	}
	for _, k := range []string{"sslrootcert", "sslcert", "sslkey"} {
		if v := c.Params.Get(k); v != "" {
			kv = append(kv, k+"="+pgQuoteDSN(v))
		}
	}
	cfg, err := pgx.ParseConfig(strings.Join(kv, " "))
	if err != nil {
		// pgx's message may quote the DSN; keep it out.
		msg := scrub(err.Error(), c.Password)
		return nil, &Error{Op: "configure", Kind: ErrConnect, Target: c.target(), detail: msg}
	}
	cfg.Password = c.Password // no fallback to a password file
	// On cancellation, ask the server to cancel the running query (a cancel
	// request on a side connection) rather than only dropping the socket,
	// which would leave the backend running it.
	cfg.BuildContextWatcherHandler = func(pc *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: pc, CancelRequestDelay: 0, DeadlineDelay: 5 * time.Second}
	}
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	return cfg, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// pgQuoteDSN quotes a value for a libpq key=value string.
func pgQuoteDSN(v string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}

var tlsSeq atomic.Int64

// mysqlConfig builds the MySQL driver's configuration; tls-ca registers a
// TLS configuration trusting that CA for this host.
func mysqlConfig(c *Conn) (*mysql.Config, error) {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd = c.User, c.Password
	cfg.Net, cfg.Addr = "tcp", netJoin(c.Host, c.Port)
	cfg.DBName = c.Database
	cfg.Timeout = connectTimeout
	cfg.ParseTime = true
	cfg.AllowNativePasswords = true
	if v := c.Params.Get("tls"); v != "" {
		cfg.TLSConfig = v
	}
	if path := c.Params.Get("tls-ca"); path != "" {
		pem, err := os.ReadFile(path)
		if err != nil {
			return nil, &Error{Op: "read tls-ca", Kind: ErrConnect, Target: c.target(), detail: err.Error()}
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, &Error{Op: "read tls-ca", Kind: ErrConnect, Target: c.target(), detail: "no PEM certificate in " + path}
		}
		tc := &tls.Config{RootCAs: pool, ServerName: c.Host, MinVersion: tls.VersionTLS12}
		if c.Params.Get("tls") == "skip-verify" {
			tc.InsecureSkipVerify = true
		}
		name := "dpsql-federated-" + strconv.FormatInt(tlsSeq.Add(1), 10)
		if err := mysql.RegisterTLSConfig(name, tc); err != nil {
			return nil, &Error{Op: "configure TLS", Kind: ErrConnect, Target: c.target(), detail: err.Error()}
		}
		cfg.TLSConfig = name
	}
	return cfg, nil
}

func netJoin(host string, port int) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + strconv.Itoa(port)
	}
	return host + ":" + strconv.Itoa(port)
}

func (s *Source) pgConnect(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, s.pgConfig)
	if err != nil {
		return nil, s.newError("connect", connectKind(err), err)
	}
	return conn, nil
}

// connectKind tells refused credentials from other connection failures.
func connectKind(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "28P01" || pe.Code == "28000") {
		return ErrAuth
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) && (me.Number == 1045 || me.Number == 1044 || me.Number == 1698) {
		return ErrAuth
	}
	if strings.Contains(err.Error(), "SQLSTATE 28P01") || strings.Contains(err.Error(), "password authentication failed") {
		return ErrAuth
	}
	return ErrConnect
}

// Conn is the source's connection description.
func (s *Source) Conn() *Conn { return s.conn }

// Close closes the source's connections.
func (s *Source) Close() error {
	switch {
	case s.db != nil:
		return s.db.Close()
	case s.meta != nil:
		s.mu.Lock()
		defer s.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return s.meta.Close(ctx)
	}
	return nil
}

// Columns lists the remote table's columns in their order. A missing table
// is an *Error of kind ErrNoTable.
func (s *Source) Columns(ctx context.Context) ([]Column, error) {
	var cols []Column
	add := func(name, typ, nullable, colType string) {
		c := Column{Name: name, Type: typ, Nullable: strings.EqualFold(nullable, "YES")}
		c.class, c.unsigned = classify(s.conn.Driver, typ, colType)
		cols = append(cols, c)
	}
	switch s.conn.Driver {
	case Postgres:
		s.mu.Lock()
		defer s.mu.Unlock()
		rows, err := s.meta.Query(ctx, `SELECT column_name::text, data_type::text, is_nullable::text
			FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2
			ORDER BY ordinal_position`, s.conn.Schema, s.conn.Table)
		if err != nil {
			return nil, s.newError("list columns", ErrQuery, err)
		}
		for rows.Next() {
			var name, typ, null string
			if err := rows.Scan(&name, &typ, &null); err != nil {
				rows.Close()
				return nil, s.newError("list columns", ErrQuery, err)
			}
			add(name, typ, null, "")
		}
		if err := rows.Err(); err != nil {
			return nil, s.newError("list columns", ErrQuery, err)
		}
	case MySQL:
		rows, err := s.db.QueryContext(ctx, `SELECT CAST(column_name AS CHAR), CAST(data_type AS CHAR),
			CAST(is_nullable AS CHAR), CAST(column_type AS CHAR)
			FROM information_schema.columns WHERE table_schema = ? AND table_name = ?
			ORDER BY ordinal_position`, s.conn.Database, s.conn.Table)
		if err != nil {
			return nil, s.newError("list columns", ErrQuery, err)
		}
		defer rows.Close()
		for rows.Next() {
			var name, typ, null, colType string
			if err := rows.Scan(&name, &typ, &null, &colType); err != nil {
				return nil, s.newError("list columns", ErrQuery, err)
			}
			add(name, strings.ToLower(typ), null, strings.ToLower(colType))
		}
		if err := rows.Err(); err != nil {
			return nil, s.newError("list columns", ErrQuery, err)
		}
	}
	if len(cols) == 0 {
		return nil, s.newError("list columns", ErrNoTable, nil)
	}
	return cols, nil
}

// CheckColumns checks that the declared column names are exactly the remote
// table's (case-insensitively, in any order); the error lists what is
// missing on either side.
func (s *Source) CheckColumns(ctx context.Context, names []string) error {
	cols, err := s.Columns(ctx)
	if err != nil {
		return err
	}
	remote := make(map[string]bool, len(cols))
	for _, c := range cols {
		remote[strings.ToLower(c.Name)] = true
	}
	declared := make(map[string]bool, len(names))
	var notRemote, notDeclared, dup []string
	for _, n := range names {
		k := strings.ToLower(n)
		if declared[k] {
			dup = append(dup, n)
		}
		declared[k] = true
		if !remote[k] {
			notRemote = append(notRemote, n)
		}
	}
	for _, c := range cols {
		if !declared[strings.ToLower(c.Name)] {
			notDeclared = append(notDeclared, c.Name)
		}
	}
	if len(notRemote)+len(notDeclared)+len(dup) == 0 {
		return nil
	}
	var parts []string
	if len(notRemote) > 0 {
		parts = append(parts, "not in the remote table: "+strings.Join(notRemote, ", "))
	}
	if len(notDeclared) > 0 {
		parts = append(parts, "remote columns not declared: "+strings.Join(notDeclared, ", "))
	}
	if len(dup) > 0 {
		parts = append(parts, "declared twice: "+strings.Join(dup, ", "))
	}
	return fmt.Errorf("federated %s: %w: %s", s.conn.target(), ErrColumns, strings.Join(parts, "; "))
}

// resolve maps declared names to the remote columns (exact match first,
// then case-insensitive).
func resolve(cols []Column, names []string) ([]Column, error) {
	out := make([]Column, len(names))
	for i, n := range names {
		j := slices.IndexFunc(cols, func(c Column) bool { return c.Name == n })
		if j < 0 {
			j = slices.IndexFunc(cols, func(c Column) bool { return strings.EqualFold(c.Name, n) })
		}
		if j < 0 {
			return nil, fmt.Errorf("%w: column %q is not in the remote table", ErrColumns, n)
		}
		out[i] = cols[j]
	}
	return out, nil
}

// tableRef is the quoted remote table.
func (s *Source) tableRef() string {
	if s.conn.Driver == Postgres {
		return quoteIdent(Postgres, s.conn.Schema) + "." + quoteIdent(Postgres, s.conn.Table)
	}
	return quoteIdent(MySQL, s.conn.Table)
}

// Scan reads the named columns of every row, in the remote table's order
// of storage, calling fn with each row. Values are int64, float64, string,
// []byte (binary strings), time.Time or nil; NUMERIC/DECIMAL values are
// their exact decimal text, booleans 0 or 1, other types their text. The
// row slice is reused between calls. Memory stays bounded: rows stream.
func (s *Source) Scan(ctx context.Context, names []string, fn func(row []any) error) error {
	cols, err := s.Columns(ctx)
	if err != nil {
		return err
	}
	rc, err := resolve(cols, names)
	if err != nil {
		return fmt.Errorf("federated %s: %w", s.conn.target(), err)
	}
	sel := make([]string, len(rc))
	for i, c := range rc {
		sel[i] = scanExpr(s.conn.Driver, c)
	}
	q := "SELECT " + strings.Join(sel, ", ") + " FROM " + s.tableRef()
	row := make([]any, len(rc))
	switch s.conn.Driver {
	case Postgres:
		conn, err := s.pgConnect(ctx)
		if err != nil {
			return err
		}
		defer conn.Close(context.WithoutCancel(ctx))
		rows, err := conn.Query(ctx, q)
		if err != nil {
			return s.newError("scan", ErrQuery, err)
		}
		defer rows.Close()
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				return s.newError("scan", ErrQuery, err)
			}
			for i, v := range vals {
				row[i] = normalize(v)
			}
			if err := fn(row); err != nil {
				return err
			}
		}
		if err := rows.Err(); err != nil {
			return s.newError("scan", ErrQuery, err)
		}
	case MySQL:
		conn, err := s.db.Conn(ctx)
		if err != nil {
			return s.newError("connect", connectKind(err), err)
		}
		defer conn.Close()
		id, err := connectionID(ctx, conn)
		if err != nil {
			return s.newError("scan", ErrQuery, err)
		}
		stop := s.killOnCancel(ctx, id)
		rows, err := conn.QueryContext(context.WithoutCancel(ctx), q)
		if err != nil {
			stop()
			return s.queryError(ctx, "scan", err)
		}
		defer rows.Close()
		ptrs := make([]any, len(rc))
		for i := range ptrs {
			ptrs[i] = &row[i]
		}
		for rows.Next() {
			if err := ctx.Err(); err != nil {
				stop()
				return s.newError("scan", ErrQuery, err)
			}
			if err := rows.Scan(ptrs...); err != nil {
				stop()
				return s.newError("scan", ErrQuery, err)
			}
			for i := range row {
				row[i] = mysqlValue(row[i], rc[i])
			}
			if err := fn(row); err != nil {
				stop()
				return err
			}
		}
		err = rows.Err()
		stop()
		if err != nil {
			return s.queryError(ctx, "scan", err)
		}
	}
	return nil
}

// queryError reports a failed query: a cancelled context wins over the
// driver's "query interrupted".
func (s *Source) queryError(ctx context.Context, op string, err error) error {
	if ctx.Err() != nil {
		return s.newError(op, ErrQuery, ctx.Err())
	}
	return s.newError(op, ErrQuery, err)
}

// normalize converts a pgx value to the types Scan documents.
func normalize(v any) any {
	switch x := v.(type) {
	case int16:
		return int64(x)
	case int32:
		return int64(x)
	case int8:
		return int64(x)
	case float32:
		return float64(x)
	case bool:
		if x {
			return int64(1)
		}
		return int64(0)
	}
	return v
}

// mysqlValue converts a value of the MySQL driver: text columns to string,
// unsigned integers to int64 when they fit.
func mysqlValue(v any, c Column) any {
	switch x := v.(type) {
	case []byte:
		if c.class == classBytes {
			return append([]byte(nil), x...)
		}
		return string(x)
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x)
		}
	case int32:
		return int64(x)
	case float32:
		return float64(x)
	}
	return v
}

// connectionID is the MySQL connection id of conn, for KILL QUERY.
func connectionID(ctx context.Context, conn *sql.Conn) (int64, error) {
	var id int64
	err := conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id)
	return id, err
}

// killOnCancel kills the running query of MySQL connection id from a side
// connection when ctx is cancelled. stop waits for a kill under way, so
// that it cannot hit a later query.
func (s *Source) killOnCancel(ctx context.Context, id int64) (stop func()) {
	done := make(chan struct{})
	unreg := context.AfterFunc(ctx, func() {
		defer close(done)
		kctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = s.db.ExecContext(kctx, "KILL QUERY "+strconv.FormatInt(id, 10))
	})
	return sync.OnceFunc(func() {
		if !unreg() {
			<-done
		}
	})
}
