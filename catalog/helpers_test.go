package catalog

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	sqle "github.com/dolthub/go-mysql-server"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/shopspring/decimal"
	goerrors "gopkg.in/src-d/go-errors.v1"
)

// mustOpen opens a Store in dir (a new temporary directory if dir is empty)
// and registers a cleanup that checks the bbolt file and closes it.
func mustOpen(t testing.TB, dir string) *Store {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	s, err := Open(dir, &Options{Timeout: 50e6})
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { closeChecked(t, s) })
	return s
}

// closeChecked runs the consistency check and closes s; closing twice is
// harmless.
func closeChecked(t testing.TB, s *Store) {
	t.Helper()
	if s.db.Path() == "" { // already closed
		return
	}
	if err := s.Check(); err != nil {
		t.Errorf("check: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}

// harness runs SQL against one Store through go-mysql-server.
type harness struct {
	t   testing.TB
	s   *Store
	eng *sqle.Engine
}

func newHarness(t testing.TB, s *Store) *harness {
	return &harness{t: t, s: s, eng: sqle.NewDefault(s.Provider())}
}

func (h *harness) ctx(db string) *sql.Context {
	sess := sql.NewBaseSession()
	ctx := sql.NewContext(context.Background(), sql.WithSession(sess))
	if db != "" {
		ctx.SetCurrentDatabase(db)
	}
	return ctx
}

// query runs q in database db and returns its rows.
func (h *harness) query(db, q string) ([]sql.Row, error) {
	ctx := h.ctx(db)
	_, iter, _, err := h.eng.Query(ctx, q)
	if err != nil {
		return nil, err
	}
	return sql.RowIterToRows(ctx, iter)
}

func (h *harness) mustExec(db, q string) []sql.Row {
	h.t.Helper()
	rows, err := h.query(db, q)
	if err != nil {
		h.t.Fatalf("%s: %v", q, err)
	}
	return rows
}

// scriptTest is the shape of go-mysql-server's enginetest ScriptTest: setup
// statements, then assertions of rows or error kinds.
type scriptTest struct {
	name       string
	setup      []string
	assertions []assertion
}

type assertion struct {
	query    string
	expected []sql.Row
	err      *goerrors.Kind // expected error kind, checked by kind only
	anyErr   bool           // any error is acceptable
}

func (h *harness) run(db string, st scriptTest) {
	h.t.Helper()
	for _, q := range st.setup {
		h.mustExec(db, q)
	}
	for _, a := range st.assertions {
		rows, err := h.query(db, a.query)
		switch {
		case a.err != nil:
			if !isKind(a.err, err) {
				h.t.Errorf("%s: %s: got error %v, want kind %v", st.name, a.query, err, a.err)
			}
		case a.anyErr:
			if err == nil {
				h.t.Errorf("%s: %s: got no error, want one", st.name, a.query)
			}
		case err != nil:
			h.t.Errorf("%s: %s: %v", st.name, a.query, err)
		default:
			got, want := normRows(rows), normRows(a.expected)
			if !reflect.DeepEqual(got, want) {
				h.t.Errorf("%s: %s:\n got %v\nwant %v", st.name, a.query, got, want)
			}
		}
	}
}

// normRows renders rows in a form that compares equal across Go integer
// widths and wrapper types, so expectations can be written as literals.
func normRows(rows []sql.Row) [][]string {
	out := make([][]string, 0, len(rows))
	for _, r := range rows {
		sr := make([]string, len(r))
		for i, v := range r {
			sr[i] = normValue(v)
		}
		out = append(out, sr)
	}
	return out
}

func normValue(v any) string {
	if w, ok := v.(sql.AnyWrapper); ok {
		u, err := w.UnwrapAny(context.Background())
		if err == nil {
			v = u
		}
	}
	switch x := v.(type) {
	case nil:
		return "NULL"
	case []byte:
		return string(x)
	case decimal.Decimal:
		return x.String()
	case types.OkResult:
		return fmt.Sprintf("ok(%d)", x.RowsAffected)
	}
	return fmt.Sprint(v)
}

// isKind reports whether err, or an error it wraps, is of kind k.
func isKind(k *goerrors.Kind, err error) bool {
	for err != nil {
		if k.Is(err) {
			return true
		}
		if w, ok := err.(sql.WrappedInsertError); ok {
			err = w.Cause
			continue
		}
		if ie, ok := err.(sql.IgnorableError); ok {
			_ = ie
		}
		err = errors.Unwrap(err)
	}
	return false
}
