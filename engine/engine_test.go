package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/dolthub/go-mysql-server/memory"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

// memStorage is a Storage over GMS's memory provider, for unit tests only.
type memStorage struct {
	pro *memory.DbProvider

	mu     sync.Mutex
	grants []byte
	saves  int
}

func newMemStorage() *memStorage { return &memStorage{pro: memory.NewDBProvider()} }

func (m *memStorage) Provider() sql.MutableDatabaseProvider { return m.pro }
func (m *memStorage) NewSession(base *sql.BaseSession) sql.Session {
	return memory.NewSession(base, m.pro)
}
func (m *memStorage) LoadGrants() ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return bytes.Clone(m.grants), nil
}
func (m *memStorage) Persist(_ *sql.Context, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.grants = bytes.Clone(data)
	m.saves++
	return nil
}
func (m *memStorage) Close() error { return nil }

func TestStatementRouting(t *testing.T) {
	e := newTestEngine(t, newMemStorage(), nil)
	ctx := sessionCtx(e, 1, RootUser, localhost)
	statusNames := []string{"version", "data_dir", "started_at", "uptime_seconds"}
	tests := []struct {
		query    string
		wantCode int      // MySQL error number; 0 for success
		firstCol []string // expected first column, nil to skip
	}{
		{query: "SHOW DPSQL STATUS", firstCol: statusNames},
		{query: "show dpsql status;", firstCol: statusNames},
		{query: "/* leading */ -- comment\n  SHOW DPSQL STATUS", firstCol: statusNames},
		{query: "CALL dpsql_status()", firstCol: statusNames},
		{query: "SELECT 'a' UNION ALL SELECT 'b'", firstCol: []string{"a", "b"}},
		{query: "SHOW DPSQL STATUS junk", wantCode: mysql.ERParseError},
		{query: "SHOW ERROR BOUNDS FOR t", wantCode: ErrNeedsCatalog.Code()},
		{query: "SHOW DPSQL STATUS; SELECT 1", wantCode: mysql.ERParseError},
		{query: "SHOW DPSQL STATUS 'unterminated", wantCode: mysql.ERParseError},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			_, rows, err := query(e, ctx, tt.query)
			if got := errCode(err); got != tt.wantCode {
				t.Fatalf("error code = %d (%v), want %d", got, err, tt.wantCode)
			}
			if tt.firstCol == nil {
				return
			}
			if len(rows) != len(tt.firstCol) {
				t.Fatalf("got %d rows %v, want %d", len(rows), rows, len(tt.firstCol))
			}
			for i, r := range rows {
				if r[0] != tt.firstCol[i] {
					t.Errorf("row %d: first column %v, want %v", i, r[0], tt.firstCol[i])
				}
			}
		})
	}
}

func TestStatusValues(t *testing.T) {
	e := newTestEngine(t, newMemStorage(), func(c *Config) { c.Version = "v9.9" })
	_, rows, err := query(e, sessionCtx(e, 1, RootUser, localhost), "SHOW DPSQL STATUS")
	if err != nil {
		t.Fatal(err)
	}
	got := map[any]any{}
	for _, r := range rows {
		got[r[0]] = r[1]
	}
	if got["version"] != "v9.9" || got["data_dir"] != e.DataDir() {
		t.Errorf("status = %v, want version v9.9 and data_dir %s", got, e.DataDir())
	}
}

// TestParserMultiStatement walks a script the way the server's
// multi-statement handler does: parse the first statement, continue with
// the remainder.
func TestParserMultiStatement(t *testing.T) {
	e := newTestEngine(t, newMemStorage(), nil)
	ctx := sessionCtx(e, 1, RootUser, localhost)
	tests := []struct {
		script string
		want   []string // "select", "dpsql" or "show"
	}{
		{"SELECT 1; SHOW DPSQL STATUS; SELECT 2", []string{"select", "dpsql", "select"}},
		{"SHOW DPSQL STATUS;SHOW DPSQL STATUS ;  ", []string{"dpsql", "dpsql"}},
		{"/* a */ SHOW DPSQL STATUS; -- b\nSHOW TABLES", []string{"dpsql", "show"}},
		{"SELECT ';' ; SHOW DPSQL STATUS", []string{"select", "dpsql"}},
	}
	for _, tt := range tests {
		t.Run(tt.script, func(t *testing.T) {
			var got []string
			rest := tt.script
			for rest != "" && len(got) < 10 {
				stmt, _, rem, err := e.sqle.Parser.Parse(ctx, rest, true)
				if err != nil {
					t.Fatalf("parse %q: %v", rest, err)
				}
				switch stmt.(type) {
				case *ast.Select, *ast.SetOp:
					got = append(got, "select")
				case ast.InjectedStatement:
					got = append(got, "dpsql")
				case *ast.Show:
					got = append(got, "show")
				default:
					got = append(got, "other")
				}
				rest = rem
			}
			if len(got) != len(tt.want) {
				t.Fatalf("statements = %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("statements = %v, want %v", got, tt.want)
				}
			}
		})
	}
}

// storages are the storages the engine tests run over: the catalog (the
// server's) and GMS's memory provider.
func storages(t *testing.T) map[string]func() Storage {
	return map[string]func() Storage{
		"memory": func() Storage { return newMemStorage() },
		"catalog": func() Storage {
			st, err := openStorage(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return st
		},
	}
}

func TestQueryInternalDoesNotEscalate(t *testing.T) {
	for name, st := range storages(t) {
		t.Run(name, func(t *testing.T) { testQueryInternal(t, newTestEngine(t, st(), nil)) })
	}
}

func testQueryInternal(t *testing.T, e *Engine) {
	root := sessionCtx(e, 1, RootUser, localhost)
	for _, q := range []string{
		"CREATE DATABASE raw",
		"CREATE TABLE raw.secret (id INT PRIMARY KEY, v INT)",
		"INSERT INTO raw.secret VALUES (1, 10), (2, 20)",
		"CREATE USER analyst IDENTIFIED BY 'apw'",
	} {
		if _, _, err := query(e, root, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	analyst := sessionCtx(e, 2, "analyst", "%")
	if _, _, err := query(e, analyst, "SELECT * FROM raw.secret"); err == nil {
		t.Fatal("analyst read raw.secret without a grant")
	}
	_, rows, err := e.QueryInternal(analyst, "raw", "SELECT SUM(v) FROM secret")
	if err != nil {
		t.Fatalf("QueryInternal: %v", err)
	}
	if len(rows) != 1 || toInt(rows[0][0]) != 30 {
		t.Fatalf("QueryInternal rows = %v, want [[30]]", rows)
	}
	if u := analyst.Session.Client().User; u != "analyst" {
		t.Fatalf("caller's session user became %q", u)
	}
	if _, _, err := query(e, analyst, "SELECT * FROM raw.secret"); err == nil {
		t.Fatal("analyst can read raw.secret after QueryInternal ran on its behalf")
	}
	mdb := e.sqle.Analyzer.Catalog.MySQLDb
	rd := mdb.Reader()
	u := mdb.GetUser(rd, InternalUser, localhost, false)
	rd.Close()
	if u == nil || !u.Locked || !u.IsSuperUser {
		t.Fatalf("dp_internal = %+v, want a locked superuser", u)
	}
}

func TestUsersBootstrapAndReload(t *testing.T) {
	st := newMemStorage()
	e1 := newTestEngine(t, st, func(c *Config) { c.RootPassword = "" })
	mdb := e1.sqle.Analyzer.Catalog.MySQLDb
	rd := mdb.Reader()
	root := mdb.GetUser(rd, RootUser, localhost, false)
	rd.Close()
	if root == nil || root.AuthString == "" {
		t.Fatalf("first start without a password: root = %+v, want a generated password", root)
	}
	generated := root.AuthString
	if st.saves == 0 {
		t.Fatal("bootstrap did not persist users")
	}
	if _, _, err := query(e1, sessionCtx(e1, 1, RootUser, localhost), "CREATE USER analyst IDENTIFIED BY 'apw'"); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name     string
		password string
		wantHash string
	}{
		{"restart keeps the generated password", "", generated},
		{"restart with a password replaces it", "new", nativePasswordHash("new")},
	}
	for _, tt := range tests {
		e := newTestEngine(t, st, func(c *Config) { c.RootPassword = tt.password })
		mdb := e.sqle.Analyzer.Catalog.MySQLDb
		rd := mdb.Reader()
		root := mdb.GetUser(rd, RootUser, localhost, false)
		analyst := mdb.GetUser(rd, "analyst", "%", false)
		rd.Close()
		if root == nil || root.AuthString != tt.wantHash {
			t.Errorf("%s: root hash = %v, want %s", tt.name, root, tt.wantHash)
		}
		if analyst == nil || analyst.AuthString != nativePasswordHash("apw") {
			t.Errorf("%s: analyst not reloaded: %+v", tt.name, analyst)
		}
		if !mdb.Enabled() {
			t.Errorf("%s: authentication disabled", tt.name)
		}
	}
}

func TestNativePasswordHash(t *testing.T) {
	// MySQL's documented example: PASSWORD('mypass').
	if got, want := nativePasswordHash("mypass"), "*6C8989366EAF75BB670AD8EA7A7FC1176A95CEF4"; got != want {
		t.Fatalf("hash = %s, want %s", got, want)
	}
}

func TestSQLError(t *testing.T) {
	base := errors.New("boom")
	tests := []struct {
		name     string
		err      error
		kind     *Kind
		wantCode int
	}{
		{"kind", ErrUnsupported.New("x"), ErrUnsupported, mysql.ERNotSupportedYet},
		{"wrapped kind", fmt.Errorf("outer: %w", ErrSyntax.Wrap(base, "y")), ErrSyntax, mysql.ERParseError},
		{"own code", ErrDataDirLocked.New("z"), ErrDataDirLocked, 9102},
		{"sql error passes", mysql.NewSQLError(1045, "28000", "denied"), nil, 1045},
		{"gms kind", sql.ErrTableNotFound.New("t"), nil, mysql.ERNoSuchTable},
	}
	for _, tt := range tests {
		got := SQLError(tt.err)
		var se *mysql.SQLError
		if !errors.As(got, &se) || se.Num != tt.wantCode {
			t.Errorf("%s: SQLError = %v, want code %d", tt.name, got, tt.wantCode)
		}
		if tt.kind != nil && !errors.Is(tt.err, tt.kind) {
			t.Errorf("%s: errors.Is(err, kind) = false", tt.name)
		}
	}
	if !errors.Is(ErrSyntax.Wrap(base, "y"), base) {
		t.Error("Wrap lost the cause")
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		mod  func(*Config)
		want error
	}{
		{func(*Config) {}, nil},
		{func(c *Config) { c.DataDir = "" }, ErrConfig},
		{func(c *Config) { c.Port = 70000 }, ErrConfig},
		{func(c *Config) { c.Port = -1 }, ErrConfig},
		{func(c *Config) { c.Port = 0 }, nil},
	}
	for i, tt := range tests {
		c := DefaultConfig()
		tt.mod(&c)
		if err := c.validate(); !errors.Is(err, tt.want) && (err != nil || tt.want != nil) {
			t.Errorf("case %d: validate = %v, want %v", i, err, tt.want)
		}
	}
}

// TestDemoSeed seeds over the catalog (GMS's memory tables take minutes
// for 30 000 inserts).
func TestDemoSeed(t *testing.T) {
	dir := t.TempDir()
	open := func() *Engine { return openDiskEngine(t, dir, func(c *Config) { c.Demo = true }) }
	count := func(e *Engine, where string) int64 {
		_, rows, err := e.QueryInternal(context.Background(), DemoDatabase, "SELECT COUNT(*) FROM "+DemoTable+where)
		if err != nil {
			t.Fatal(err)
		}
		return toInt(rows[0][0])
	}
	e := open()
	if n := count(e, ""); n != demoRows {
		t.Fatalf("demo rows = %d, want %d", n, demoRows)
	}
	if n := count(e, " WHERE age NOT BETWEEN 17 AND 90 OR hours_per_week NOT BETWEEN 1 AND 99"); n != 0 {
		t.Fatalf("%d demo rows outside their CHECK bounds", n)
	}
	e.Close()
	e2 := open()
	if n := count(e2, ""); n != demoRows {
		t.Fatalf("after a second start demo rows = %d, want %d (seeded twice?)", n, demoRows)
	}
}
